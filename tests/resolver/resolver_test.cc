// ldshim_dlopen_from against glibc: for each case the same program runs twice
// in fresh processes, once calling dlopen directly from the object under test
// (libjulia's helper, or the main program) and once calling
// ldshim_dlopen_from with an address inside that object from somewhere else.
// What gets loaded (l_name) and any error text must be identical.
#include "../differential/harness.h"
#include "../support/test_machine.h"
#include "fixture_cc.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <string.h>

#include <algorithm>

using namespace ldshim::difftest;

#ifndef LDSHIM_LIB_PATH
#error "LDSHIM_LIB_PATH must name libldshim.so"
#endif
#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif
#ifndef INTERPOSER_SRC
#error "INTERPOSER_SRC must name tests/resolver/fixtures/interposer.c"
#endif
#ifndef FORWARDER_SRC
#error "FORWARDER_SRC must name tests/resolver/fixtures/forwarder.c"
#endif

namespace {

LibSpec so(std::string soname = {}) { return LibSpec{std::move(soname)}; }

// The interposer is built once per tree, next to the program.
std::string interposer(const Tree& t) {
    std::string so = t.abs("interposer.so");
    if (sh("test -f " + quote(so)) != 0) {
        EXPECT_EQ(sh(FIXTURE_CC " -O0 -shared -fPIC -o " + quote(so) + " " + quote(INTERPOSER_SRC) + " -ldl"), 0);
    }
    return so;
}

// The three kinds of dlopen interposer, each a preloaded library: a
// forwarder through dlsym(RTLD_NEXT) (sanitizers, profilers, tracers), a
// forwarder through a pointer saved from libc, and the ucm-like GOT patcher.
std::vector<std::pair<std::string, std::string>> interposer_kinds(const Tree& t) {
    std::vector<std::pair<std::string, std::string>> kinds;
    for (const char* k : {"NEXT_BY_RTLD_NEXT", "NEXT_SAVED_LIBC"}) {
        std::string so = t.abs(std::string("forwarder_") + k + ".so");
        if (sh("test -f " + quote(so)) != 0) {
            EXPECT_EQ(sh(FIXTURE_CC " -O0 -shared -fPIC -D" + std::string(k) + " -o " + quote(so) + " " +
                         quote(FORWARDER_SRC) + " -ldl"),
                      0);
        }
        kinds.emplace_back(k, so);
    }
    kinds.emplace_back("GOT_PATCHER", interposer(t));
    return kinds;
}

// Runs `direct` ops, then the same program more ways, each in a fresh
// process: through ldshim_dlopen_from (l: -> L:, o: -> M:), with
// libldshim_preload.so, with the ucm-like interposer calling
// ldshim_dlopen_via, with each kind of interposer in front of the preload
// and behind it, and with the GOT patcher alone (glibc's view through an
// interposer, which the caller checks for the bug).  All but the last must
// agree exactly; the last is returned.
struct Outcome {
    Capture glibc, broken;
};
Capture paths_only(Capture c);

// `identity`: compare each object's file identity too; off where the
// operations themselves replace files, so each run makes new inodes.
Outcome compare_all(const Tree& t, const std::string& prog, const std::vector<std::string>& direct, Env env = {},
                    bool identity = true) {
    env.emplace_back("LDSHIM_LIB", LDSHIM_LIB_PATH);
    std::vector<std::string> via;
    for (const auto& op : direct) {
        // l/k/m (direct) become L/K/M (through ldshim); built in place, not with
        // `"L" + op.substr(1)`, which trips GCC 12's -Wrestrict false positive at -O3.
        std::string v = op;
        if (op[0] == 'l' || op[0] == 'k' || op[0] == 'o') v[0] = op[0] == 'l' ? 'L' : op[0] == 'k' ? 'K' : 'M';
        via.push_back(std::move(v));
    }
    Capture a = t.real(prog, direct, env);
    EXPECT_EQ(a.results.size() + a.errors.size(), direct.size()) << "the driver did not run every operation";
    if (!identity) a = paths_only(a);
    auto check = [&](Capture b, const char* how) {
        if (!identity) b = paths_only(b);
        EXPECT_EQ(a.results, b.results) << how << "\n" << unified_diff(a.results, b.results, "direct dlopen", how);
        EXPECT_EQ(a.errors, b.errors) << how << "\n" << unified_diff(a.errors, b.errors, "direct dlopen", how);
    };
    check(t.real(prog, via, env), "ldshim_dlopen_from");
    Env pre = env;
    pre.emplace_back("LD_PRELOAD", PRELOAD_LIB_PATH);
    check(t.real(prog, direct, pre), "LD_PRELOAD=libldshim_preload.so");
    Env fixed = env, bug = env;
    fixed.emplace_back("LD_PRELOAD", interposer(t));
    fixed.emplace_back("INTERPOSER_USE_LDSHIM", "1");
    check(t.real(prog, direct, fixed), "interposer + ldshim_dlopen_via");
    for (const auto& [kind, so] : interposer_kinds(t)) {
        Env front = env, behind_env = env;
        front.emplace_back("LD_PRELOAD", so + ":" + PRELOAD_LIB_PATH);
        behind_env.emplace_back("LD_PRELOAD", std::string(PRELOAD_LIB_PATH) + ":" + so);
        check(t.real(prog, direct, front), (kind + " in front of ldshim").c_str());
        check(t.real(prog, direct, behind_env), (kind + " behind ldshim").c_str());
    }
    bug.emplace_back("LD_PRELOAD", interposer(t));
    return {a, t.real(prog, direct, bug)};
}

// The comparisons above include each object's file identity ("PATH [dev:ino]");
// the cases below assert on the path alone.
Capture paths_only(Capture c) {
    for (auto& r : c.results)
        if (auto sp = r.rfind(" ["); sp != std::string::npos) r.resize(sp);
    return c;
}

Capture same_as_glibc(const Tree& t, const std::string& prog, const std::vector<std::string>& direct, Env env = {}) {
    return paths_only(compare_all(t, prog, direct, std::move(env)).glibc);
}

}  // namespace

TEST(Resolver, rpath_of_the_real_caller) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Outcome o = compare_all(t, "bin/prog", {"l:libopenlibm.so"});
    ASSERT_EQ(o.glibc.results.size(), 1u);
    EXPECT_NE(o.glibc.results[0].find(" ["), std::string::npos) << "no file identity reported";
    EXPECT_EQ(paths_only(o.glibc).results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
    // The original report: through the interposer alone, glibc searches from
    // the interposer and libjulia's RPATH is never used.
    ASSERT_EQ(o.broken.errors.size(), 1u);
    EXPECT_EQ(o.broken.errors[0], "libopenlibm.so: cannot open shared object file: No such file or directory");
}

TEST(Resolver, preload_debug_log_and_disable) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Capture dbg = t.real("bin/prog", {"l:libopenlibm.so", "l:libnothere.so"},
                         {{"LD_PRELOAD", PRELOAD_LIB_PATH}, {"LDSHIM_DEBUG", "1"}});
    auto has = [&](const std::string& needle) {
        return std::any_of(dbg.errors.begin(), dbg.errors.end(),
                           [&](const std::string& l) { return l.find(needle) != std::string::npos; });
    };
    EXPECT_TRUE(
        has("ldshim: dlopen(\"libopenlibm.so\") from " + t.abs("bin") + "/../lib/libjulia.so.1: found via RPATH -> "))
        << ::testing::PrintToString(dbg.errors);
    EXPECT_TRUE(has("ldshim: dlopen(\"libnothere.so\")")) << ::testing::PrintToString(dbg.errors);
    // Disabled, the preload changes nothing: the interposer bug comes back.
    Capture off = t.real("bin/prog", {"l:libopenlibm.so"},
                         {{"LD_PRELOAD", PRELOAD_LIB_PATH + std::string(" ") + interposer(t)},
                          {"LDSHIM_DISABLE", "1"},
                          {"LDSHIM_LIB", LDSHIM_LIB_PATH}});
    EXPECT_TRUE(off.results.empty());
    EXPECT_EQ(off.errors,
              std::vector<std::string>{"libopenlibm.so: cannot open shared object file: No such file or directory"});
}

TEST(Resolver, runpath_of_the_real_caller) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.runpath = "$ORIGIN:$ORIGIN/julia"});
    same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
}

TEST(Resolver, executable_rpath_reaches_a_library_caller) {
    Tree t;
    t.lib("lib2/libopenlibm.so", so());
    t.julia({}, {.rpath = "$ORIGIN/../lib:$ORIGIN/../lib2"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 1u);
}

TEST(Resolver, loader_chain_rpath) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.lib("lib/libjulia.so.1", {.soname = "libjulia.so.1", .helper = true});
    t.helper_name = "libjulia.so.1";
    t.lib("lib/libjlwrap.so",
          {.soname = "libjlwrap.so", .needs = {"lib/libjulia.so.1"}, .rpath = "$ORIGIN:$ORIGIN/julia"});
    t.exe("bin/prog", {.needs = {"lib/libjlwrap.so"}, .rpath = "$ORIGIN/../lib"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 1u);
}

TEST(Resolver, runpath_is_not_inherited) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({}, {.runpath = "$ORIGIN/../lib:$ORIGIN/../lib/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
    EXPECT_TRUE(r.results.empty());  // glibc does not find it, and neither may ldshim
}

TEST(Resolver, rpath_over_ld_library_path_over_runpath) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.lib("ldlp/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN/julia"});
    same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"}, {{"LD_LIBRARY_PATH", t.abs("ldlp")}});
    Tree u;
    u.lib("lib/julia/libopenlibm.so", so());
    u.lib("ldlp/libopenlibm.so", so());
    u.julia({.runpath = "$ORIGIN/julia"});
    Capture r = same_as_glibc(u, "bin/prog", {"l:libopenlibm.so"}, {{"LD_LIBRARY_PATH", u.abs("ldlp")}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], u.abs("ldlp") + "/libopenlibm.so");
}

TEST(Resolver, lib_token) {
    Tree t;
    t.lib("lib/" + ldshim::testmachine::lib_dir() + "/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN/$LIB"});
    same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
}

TEST(Resolver, hwcaps_only_and_preferred) {
    Tree t;
    t.lib("lib/julia/glibc-hwcaps/x86-64-v2/libopenlibm.so", so());
    t.lib("lib/julia/glibc-hwcaps/x86-64-v2/libother.so", so());
    t.lib("lib/julia/libother.so", so());
    t.julia({.rpath = "$ORIGIN/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so", "l:libother.so"});
    if (::strverscmp(gnu_get_libc_version(), "2.33") < 0 || !ldshim::testmachine::has_hwcaps_names()) {
        // Before glibc-hwcaps (2.33), and on aarch64, whose glibc names no
        // subdirectory, those directories are nothing special.
        ASSERT_EQ(r.results.size(), 1u);
        EXPECT_EQ(r.results[0].find("glibc-hwcaps"), std::string::npos);
        return;
    }
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_NE(r.results[1].find("glibc-hwcaps"), std::string::npos);
}

TEST(Resolver, soname_already_loaded_is_the_same_object) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so("libopenlibm.so.4"));
    t.julia({.rpath = "$ORIGIN/julia"},
            {.needs = {"lib/julia/libopenlibm.so"}, .rpath = "$ORIGIN/../lib:$ORIGIN/../lib/julia"});
    // Loaded at startup under its file name; only the SONAME can match.
    t.patchelf({"--replace-needed", "libopenlibm.so.4", "libopenlibm.so", "bin/prog"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so.4"});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
}

// libjulia finds libopenlibm.so (SONAME libopenlibm.so.4) through its RPATH;
// glibc then knows it by "libopenlibm.so" as well, so the main program,
// whose lists do not reach it, gets it by that name -- once asking the model,
// then from the already-loaded fast path.  ldshim loaded it by its path, so
// glibc itself holds only the path and the SONAME: the fast path must hand
// it one of those (generator seed 104331: the third call failed).
TEST(Resolver, a_name_only_the_model_holds_is_handed_to_glibc_as_the_path) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so("libopenlibm.so.4"));
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"}, {.rpath = "$ORIGIN/../lib"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so", "o:libopenlibm.so", "o:libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 3u) << ::testing::PrintToString(r.errors);
    for (const auto& x : r.results) EXPECT_EQ(x, t.abs("bin") + "/../lib/julia/libopenlibm.so");
}

// What ldshim opens, glibc knows by the name it was asked for, as it would
// had the caller called it: lib/jl/libfoo.so, which libjulia's RPATH finds
// for dlopen("libfoo.so"), has no SONAME or another one, and
// other/libbar.so, which has no search list, needs "libfoo.so": glibc
// binds it to the loaded libfoo by that name.  Opened by its path alone,
// libfoo would be known to glibc by its path and SONAME only, and libbar
// would fail ("libfoo.so: cannot open shared object file").  Every way in
// (the preload, ldshim_dlopen_from, ldshim_dlopen_via from a ucm-like GOT
// patcher, each kind of interposer in front of ldshim and behind it).
namespace {
void a_library_is_known_by_the_name_it_was_opened_by(const std::string& soname, bool bar_from_library) {
    Tree t;
    t.lib("lib/jl/libfoo.so", so(soname));
    t.lib("other/libbar.so", {.needs = {"lib/jl/libfoo.so"}});
    if (!soname.empty()) t.patchelf({"--replace-needed", soname, "libfoo.so", "other/libbar.so"});
    t.julia({.rpath = "$ORIGIN/jl"});
    const std::string bar = t.abs("other/libbar.so");
    Capture r = same_as_glibc(t, "bin/prog", {"l:libfoo.so", (bar_from_library ? "l:" : "o:") + bar, "n:libfoo.so"});
    ASSERT_EQ(r.results.size(), 3u) << ::testing::PrintToString(r.errors);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/jl/libfoo.so");
    EXPECT_EQ(r.results[1], bar);
    EXPECT_EQ(r.results[2], r.results[0]);
}
}  // namespace

TEST(Resolver, a_library_without_soname_is_needed_by_the_name_it_was_opened_by_from_the_program) {
    a_library_is_known_by_the_name_it_was_opened_by("", false);
}
TEST(Resolver, a_library_without_soname_is_needed_by_the_name_it_was_opened_by_from_the_library) {
    a_library_is_known_by_the_name_it_was_opened_by("", true);
}
TEST(Resolver, a_library_with_a_versioned_soname_is_needed_by_its_development_name_from_the_program) {
    a_library_is_known_by_the_name_it_was_opened_by("libfoo.so.1", false);
}
TEST(Resolver, a_library_with_a_versioned_soname_is_needed_by_its_development_name_from_the_library) {
    a_library_is_known_by_the_name_it_was_opened_by("libfoo.so.1", true);
}

// A library that needs itself by the name it was opened by (SONAME
// libqg2.so.1, DT_NEEDED libqg2.so): glibc matches the need to the object
// being loaded, since its search added that name first.  Opened by its path
// the load fails, so glibc opens it as the caller with the name, before any
// interposer in `next` sees the call.
TEST(Resolver, a_library_that_needs_itself_by_the_name_it_was_opened_by_loads) {
    Tree t;
    t.lib("lib/d1/libqg2.so", so("libqg2.so.1"));
    t.patchelf({"--add-needed", "libqg2.so", "lib/d1/libqg2.so"});
    t.julia({.rpath = "$ORIGIN/d1"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libqg2.so", "n:libqg2.so"});
    ASSERT_EQ(r.results.size(), 2u) << ::testing::PrintToString(r.errors);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/d1/libqg2.so");
}

// The same into a new namespace (dlmopen(LM_ID_NEWLM)), which glibc then
// searches from the caller alike.
TEST(Resolver, a_library_that_needs_itself_by_the_name_it_was_opened_by_loads_into_a_new_namespace) {
    Tree t;
    t.lib("lib/d1/libqg2.so", so("libqg2.so.1"));
    t.patchelf({"--add-needed", "libqg2.so", "lib/d1/libqg2.so"});
    t.julia({.rpath = "$ORIGIN/d1"});
    Capture r = same_as_glibc(t, "bin/prog", {"k:libqg2.so"});
    ASSERT_EQ(r.results.size(), 1u) << ::testing::PrintToString(r.errors);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/d1/libqg2.so");
}

// Without a return point (a shadow stack; LDSHIM_RETURN_POINTS=0 asks for
// the same fallback) glibc cannot be called as the caller: the original
// report is still repaired in every way in, by the path, and the debug line
// says what glibc then lacks -- the name asked for, which libbar's need of
// "libfoo.so" would have matched (docs/fidelity.md).
TEST(Resolver, without_return_points_the_path_is_opened_and_the_missing_name_said) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Outcome o = compare_all(t, "bin/prog", {"l:libopenlibm.so"}, {{"LDSHIM_RETURN_POINTS", "0"}});
    ASSERT_EQ(o.glibc.results.size(), 1u);
    EXPECT_EQ(paths_only(o.glibc).results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
    Capture dbg = t.real("bin/prog", {"l:libopenlibm.so"},
                         {{"LD_PRELOAD", PRELOAD_LIB_PATH}, {"LDSHIM_DEBUG", "1"}, {"LDSHIM_RETURN_POINTS", "0"}});
    EXPECT_TRUE(std::any_of(dbg.errors.begin(), dbg.errors.end(), [](const std::string& l) {
        return l.find("no return point") != std::string::npos && l.find("by \"libopenlibm.so\"") != std::string::npos;
    })) << ::testing::PrintToString(dbg.errors);
    // With return points glibc is asked as the caller: nothing to say.
    Capture rp = t.real("bin/prog", {"l:libopenlibm.so"}, {{"LD_PRELOAD", PRELOAD_LIB_PATH}, {"LDSHIM_DEBUG", "1"}});
    EXPECT_TRUE(std::none_of(rp.errors.begin(), rp.errors.end(), [](const std::string& l) {
        return l.find("no return point") != std::string::npos;
    })) << ::testing::PrintToString(rp.errors);
}

TEST(Resolver, foreign_class_file_is_skipped) {
    Tree t;
    t.lib32("lib/libopenlibm.so");
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 1u);
}

// The resolver keeps what it read of each library it found (one stat(2)
// instead of a second open and read when the same file is searched for
// again); a file changed, replaced, made unreadable or removed between two
// dlopens must be searched for afresh, as glibc does.
// A program whose file is deleted while it runs (a package upgrade replaced
// it): the kernel's /proc/self/exe still names it, " (deleted)" appended,
// and glibc takes the program's $ORIGIN from that link's directory.
TEST(Resolver, the_origin_of_a_program_deleted_while_it_runs_is_still_its_directory) {
    Tree t;
    t.lib("lib/extra/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN"}, {.rpath = "$ORIGIN/../lib:$ORIGIN/../lib/extra"});
    const std::string prog = quote(t.abs("bin/prog")), kept = quote(t.abs("bin/prog.kept"));
    // Each run deletes the file it was started from, and puts a copy back
    // for the next run.
    Outcome o = compare_all(
        t, "bin/prog",
        {"x:cp " + prog + " " + kept + " && rm " + prog, "l:libopenlibm.so", "x:mv " + kept + " " + prog}, {}, false);
    ASSERT_EQ(o.glibc.results.size(), 3u);
    EXPECT_NE(o.glibc.results[1].find("/lib/extra/libopenlibm.so"), std::string::npos) << o.glibc.results[1];
}

TEST(Resolver, a_library_changed_between_two_dlopens_is_searched_for_afresh) {
    Tree t;
    t.lib("src/libx.so", so("libx.so"));
    t.lib32("src/libx32.so");
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia:$ORIGIN/spare"});
    const std::string lib = t.abs("lib"), libx = t.abs("lib/julia/libx.so"), spare = t.abs("lib/spare/libx.so");
    const std::string src = t.abs("src/libx.so"), x32 = t.abs("src/libx32.so");
    auto put = [](const std::string& from, const std::string& to) {  // a new inode, as a package update makes
        return "mkdir -p $(dirname " + quote(to) + ") && cp " + quote(from) + " " + quote(to) + ".new && mv " +
               quote(to) + ".new " + quote(to);
    };
    // Each change, then the same dlopen again.
    const std::vector<std::string> changes = {
        put(x32, libx),                                                    // another class: skipped, spare/ found
        "cp " + quote(src) + " " + quote(libx),                            // back, rewritten in place
        "chmod 0 " + quote(libx),                                          // unreadable (as root: still read)
        "chmod 644 " + quote(libx) + " && " + put(src, lib + "/libx.so"),  // in an earlier directory
        "rm " + quote(lib + "/libx.so") + " " + quote(libx),               // gone: spare/ again
        "rm " + quote(spare),                                              // nowhere
    };
    // Every run of the program starts from the same files.
    std::vector<std::string> ops = {
        "x:rm -f " + quote(lib + "/libx.so") + " && " + put(src, libx) + " && " + put(src, spare), "l:libx.so", "c:"};
    for (const auto& c : changes) {
        ops.push_back("x:" + c);
        ops.push_back("l:libx.so");
        ops.push_back("c:");
    }
    Capture r = paths_only(compare_all(t, "bin/prog", ops, {}, false).glibc);
    ASSERT_EQ(r.results.size() + r.errors.size(), ops.size());
    EXPECT_EQ(r.errors.size(), 1u) << "only the last dlopen fails";
    auto in_spare = [](const std::string& p) { return p.ends_with("/lib/spare/libx.so"); };
    EXPECT_GE(std::count_if(r.results.begin(), r.results.end(), in_spare), 2)
        << "the other-class file and the removed ones were skipped";
}

TEST(Resolver, executable_caller_with_runpath) {
    Tree t;
    t.lib("run/libopenlibm.so", so());
    t.exe("bin/prog", {.runpath = t.abs("run")});
    Capture r = same_as_glibc(t, "bin/prog", {"o:libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 1u);
}

TEST(Resolver, relative_slash_name_is_cwd_relative) {
    Tree t;
    t.lib("julia/libopenlibm.so", so());
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:julia/libopenlibm.so"});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], "julia/libopenlibm.so");
}

TEST(Resolver, internal_library_and_missing_one) {
    Tree t;
    t.lib("lib/julia/libjulia-internal.so.1", so("libjulia-internal.so.1"));
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"l:libjulia-internal.so.1", "l:libnothere.so", "o:libnothere.so"});
    ASSERT_EQ(r.errors.size(), 2u);
    EXPECT_EQ(r.errors[0], "libnothere.so: cannot open shared object file: No such file or directory");
}

TEST(Resolver, already_loaded_system_library_and_null) {
    Tree t;
    t.julia({});
    same_as_glibc(t, "bin/prog", {"l:libc.so.6", "l:libz.so.1", "o:libz.so.1"});
}

TEST(Resolver, dlmopen_new_namespace_from_a_library) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Capture r = same_as_glibc(t, "bin/prog", {"k:libopenlibm.so", "k:libnothere.so"});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
}

// The runtime reads its loader's configuration in process: a dlopen through
// libldshim, or through the preload, starts no process (no `ld.so --help`:
// seccomp sandboxes forbid execve, MPI daemons reap every child) and writes
// nothing (no cache file under a shared HOME).
TEST(Resolver, runtime_spawns_nothing_and_writes_nothing) {
    if (sh("command -v strace >/dev/null 2>&1") != 0) GTEST_SKIP() << "strace is not installed";
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << ", strace sees the emulator's own threads";
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    t.mkdir("home");
    for (bool preload : {false, true}) {
        SCOPED_TRACE(preload ? "LD_PRELOAD=libldshim_preload.so" : "ldshim_dlopen_from");
        Env env = {{"HOME", t.abs("home")}, {"XDG_CACHE_HOME", t.abs("home/.cache")}, {"LDSHIM_LIB", LDSHIM_LIB_PATH}};
        if (preload) env.emplace_back("LD_PRELOAD", PRELOAD_LIB_PATH);
        std::string log = t.abs(preload ? "strace-preload.log" : "strace.log");
        Capture c = t.real("bin/prog", {preload ? "l:libopenlibm.so" : "L:libopenlibm.so"}, env,
                           "strace -f -qq -o " + quote(log) + " -e trace=execve,execveat,clone,clone3,fork,vfork");
        // Found through libjulia's RPATH: ldshim's model answered, not a
        // fallback to glibc from the wrong caller.
        ASSERT_EQ(c.results.size(), 1u) << ::testing::PrintToString(c.errors);
        std::vector<std::string> calls = read_lines(log);
        ASSERT_FALSE(calls.empty()) << "strace wrote nothing";
        std::vector<std::string> execs, others;
        for (const auto& l : calls) {
            if (l.find("execve(") != std::string::npos)
                execs.push_back(l);
            else if (l.find("(") != std::string::npos)
                others.push_back(l);
        }
        // `env` and the program itself, nothing else.
        ASSERT_EQ(execs.size(), 2u) << ::testing::PrintToString(calls);
        EXPECT_NE(execs[1].find("bin/prog"), std::string::npos) << execs[1];
        EXPECT_TRUE(others.empty()) << ::testing::PrintToString(others);
        EXPECT_EQ(sh("test -z \"$(find " + quote(t.abs("home")) + " -mindepth 1 -print -quit)\""), 0)
            << "files appeared under HOME";
    }
}

// Where the configuration cannot be derived in process (here: the program
// was started as `ld.so PROGRAM`), ldshim builds no model and passes every
// call on to glibc, saying why under LDSHIM_DEBUG -- and still spawns nothing.
TEST(Resolver, underivable_loader_configuration_is_passed_on_with_a_reason) {
    Tree t;
    t.julia({});
    Capture c = t.real(ldshim::testmachine::loader(), {"bin/prog", "l:libz.so.1"},
                       {{"LD_PRELOAD", PRELOAD_LIB_PATH}, {"LDSHIM_DEBUG", "1"}});
    ASSERT_EQ(c.results.size(), 1u) << ::testing::PrintToString(c.errors);  // glibc answered
    auto reason = std::find_if(c.errors.begin(), c.errors.end(), [](const std::string& l) {
        return l.find("cannot model this process's loader") != std::string::npos;
    });
    EXPECT_NE(reason, c.errors.end()) << ::testing::PrintToString(c.errors);
}
