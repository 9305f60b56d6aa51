// The runtime model while the process changes itself between two dlopens:
// the current directory, directories and files that come and go, the cache
// that ldconfig rewrites, dlclose and reopen, two threads at once.  Each
// scenario runs the events driver (fixtures/events.c) three times in fresh
// processes: with glibc alone (the truth), with libldshim_preload.so, and
// with libldshim.so loaded late and every call made through
// ldshim_dlopen_from.  The outcomes must be identical.
#include "../differential/harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace ldshim::difftest;

#ifndef LDSHIM_LIB_PATH
#error "LDSHIM_LIB_PATH must name libldshim.so"
#endif
#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif
#ifndef EVENTS_DRIVER_SRC
#error "EVENTS_DRIVER_SRC must name tests/resolver/fixtures/events.c"
#endif
#ifndef EVENTS_LIB_SRC
#error "EVENTS_LIB_SRC must name tests/resolver/fixtures/events_lib.c"
#endif

namespace {

// A library that says which copy it is (`id`) and when it is loaded.
void evlib(Tree& t, const std::string& rel, int id, LibSpec spec = {}) {
    spec.source = EVENTS_LIB_SRC;
    spec.flags.push_back("-DFIXTURE_ID=" + std::to_string(id));
    t.lib(rel, spec);
}

// bin/prog: the events driver, with libjulia.so.1 (its helper_dlopen is the
// `l:` caller) when `helper` is given.
void driver(Tree& t, std::optional<LibSpec> helper = std::nullopt, ExeSpec exe = {}) {
    exe.source = EVENTS_DRIVER_SRC;
    exe.flags.push_back("-pthread");
    if (helper)
        t.julia(*helper, exe);
    else
        t.exe("bin/prog", exe);
}

// A file put in place as a package update or ldconfig does: a new inode.
std::string put(const std::string& from, const std::string& to) {
    return "mkdir -p $(dirname " + quote(to) + ") && cp " + quote(from) + " " + quote(to) + ".new && mv " + quote(to) +
           ".new " + quote(to);
}

// The operations as the ldshim_dlopen_from run makes them.
std::vector<std::string> through_ldshim(const std::vector<std::string>& ops) {
    std::vector<std::string> via;
    for (std::string op : ops) {
        switch (op[0]) {
            case 'o': op[0] = 'M'; break;
            case 'e': op[0] = 'E'; break;
            case 'n': op[0] = 'N'; break;
            case 'l': op[0] = 'L'; break;
            case 't': op[0] = 'T'; break;
            default: break;
        }
        via.push_back(std::move(op));
    }
    return via;
}

// Every outcome in order (results and errors in one list: an error's place
// matters here).
std::vector<std::string> outcomes(const Tree& t, const std::vector<std::string>& ops, const Env& env,
                                  const std::string& prefix) {
    Capture c = t.real("bin/prog", ops, env, prefix);
    std::vector<std::string> all;
    for (const auto& l : read_lines(t.abs(".out/real.stdout"))) all.push_back(l);
    for (const auto& e : read_lines(t.abs(".out/real.stderr"))) all.push_back("stderr: " + e);
    if (c.status != 0) all.push_back("exit status " + std::to_string(c.status));
    return all;
}

// The outcomes of the three runs.  `reset`, a shell command, puts the files
// back as they were before each run.
struct Runs {
    std::vector<std::string> glibc, preloaded, from;
};
Runs run_three(const Tree& t, const std::vector<std::string>& ops, const Env& env, const std::string& prefix,
               const std::string& reset) {
    auto run = [&](const std::vector<std::string>& o, const Env& e) {
        if (!reset.empty()) {
            EXPECT_EQ(sh("cd " + quote(t.root()) + " && " + reset), 0) << reset;
        }
        return outcomes(t, o, e, prefix);
    };
    Env pre = env, late = env;
    pre.emplace_back("LD_PRELOAD", PRELOAD_LIB_PATH);
    late.emplace_back("LDSHIM_LIB", LDSHIM_LIB_PATH);
    Runs r;
    r.glibc = run(ops, env);
    r.preloaded = run(ops, pre);
    r.from = run(through_ldshim(ops), late);
    return r;
}

// glibc's outcomes, after checking that both ways through ldshim agree.
std::vector<std::string> same_as_glibc(const Tree& t, const std::vector<std::string>& ops, const Env& env = {},
                                       const std::string& prefix = "", const std::string& reset = "") {
    Runs r = run_three(t, ops, env, prefix, reset);
    EXPECT_EQ(r.glibc, r.preloaded) << unified_diff(r.glibc, r.preloaded, "glibc alone",
                                                    "LD_PRELOAD=libldshim_preload.so");
    EXPECT_EQ(r.glibc, r.from) << unified_diff(r.glibc, r.from, "glibc alone", "ldshim_dlopen_from");
    return r.glibc;
}

bool has(const std::vector<std::string>& v, const std::string& line) {
    return std::find(v.begin(), v.end(), line) != v.end();
}

}  // namespace

// Relative elements and relative slash names are opened from the directory
// current at each open; a name glibc knows an object by (also one added when
// another name reached its file) answers that object wherever the process
// now is.
TEST(ResolverEvents, relative_search_elements_and_names_follow_chdir) {
    Tree t;
    evlib(t, "a/lib/libevx.so", 1);
    evlib(t, "b/lib/libevx.so", 2);
    driver(t);
    auto r = same_as_glibc(t,
                           {"d:a", "o:libevx.so", "c:libevx.so", "d:../b", "o:libevx.so", "o:lib/libevx.so",
                            "o:./lib/libevx.so", "d:../a", "o:./lib/libevx.so", "o:.//lib/libevx.so"},
                           {{"LD_LIBRARY_PATH", "lib"}});
    EXPECT_TRUE(has(r, "RESULT lib/libevx.so #1"));
    EXPECT_TRUE(has(r, "RESULT lib/libevx.so #2")) << "the dlopen after chdir did not find b's copy";
    EXPECT_TRUE(has(r, "RESULT .//lib/libevx.so #1")) << "a new relative name after chdir back is a's copy";
}

// An object glibc loaded by a relative name without ldshim, adopted by the
// model after a chdir: the file now at that relative path is not the one
// loaded, so a relative name reaching another file is a new object.
TEST(ResolverEvents, an_object_loaded_by_a_relative_name_before_a_chdir_is_not_the_file_there_now) {
    Tree t;
    evlib(t, "a/lib/libevx.so", 1);
    evlib(t, "b/lib/libevx.so", 2);
    driver(t);
    auto r = same_as_glibc(t, {"d:a", "g:lib/libevx.so", "d:../b", "o:./lib/libevx.so", "o:lib/libevx.so"});
    EXPECT_TRUE(has(r, "RESULT ./lib/libevx.so #2")) << ::testing::PrintToString(r);
    EXPECT_TRUE(has(r, "RESULT lib/libevx.so #1")) << ::testing::PrintToString(r);
}

// An object opened by a relative name takes its $ORIGIN from the directory
// current at its open (glibc asks getcwd for each), not at an earlier one.
TEST(ResolverEvents, the_origin_of_a_relative_name_is_the_directory_current_at_its_open) {
    Tree t;
    evlib(t, "a/lib/libevo.so", 1);
    evlib(t, "b/lib/libevo.so", 2);
    evlib(t, "a/lib/sub/libevs.so", 3);
    evlib(t, "b/lib/sub/libevs.so", 4);
    driver(t);
    auto r = same_as_glibc(
        t, {"d:a", "o:lib/libevo.so", "d:../b", "o:./lib/libevo.so", "s:./lib/libevo.so|$ORIGIN/sub/libevs.so"});
    EXPECT_TRUE(has(r, "RESULT ./lib/libevo.so #2"));
    EXPECT_TRUE(has(r, "RESULT init 4")) << "$ORIGIN was not b/lib";
}

// glibc marks a directory nonexisting the first time a search finds it
// missing and never looks in it again, per glibc-hwcaps subdirectory; one
// that existed stays searched, and a file that appears in it is found.
TEST(ResolverEvents, a_directory_found_missing_is_never_searched_again) {
    Tree t;
    evlib(t, "late/libevt.so", 1, {.soname = "libevt.so"});
    evlib(t, "spare/libevt.so", 2, {.soname = "libevt.so"});
    evlib(t, "spare/libevt2.so", 3);
    driver(t);
    const std::string early = t.abs("early"), kept = t.abs("kept"), hw = kept + "/glibc-hwcaps/x86-64-v2";
    auto r = same_as_glibc(
        t,
        {// early/ is missing at start-up and at the first dlopen: never
         // searched, even once it exists.
         "o:libevt.so", "c:libevt.so",
         "x:" + put(t.abs("spare/libevt.so"), early + "/libevt.so") + " && " +
             put(t.abs("spare/libevt2.so"), early + "/libevt2.so"),
         "o:libevt.so", "c:libevt.so", "o:libevt2.so",
         // kept/ exists but its glibc-hwcaps/x86-64-v2/ does not: the same
         // rule, per subdirectory.
         "x:" + put(t.abs("spare/libevt.so"), hw + "/libevt.so"), "o:libevt.so", "c:libevt.so",
         // A file that appears in kept/ itself is found.
         "x:rm -r " + quote(kept + "/glibc-hwcaps") + " && " + put(t.abs("spare/libevt.so"), kept + "/libevt.so"),
         "o:libevt.so", "c:libevt.so",
         // kept/ removed and made again: still searched (marked existing).
         "x:rm -r " + quote(kept) + " && " + put(t.abs("spare/libevt2.so"), kept + "/libevt2.so"), "o:libevt2.so"},
        {{"LD_LIBRARY_PATH", early + ":" + kept + ":" + t.abs("late")}}, "", "rm -rf early kept && mkdir kept");
    EXPECT_TRUE(has(r, "RESULT " + t.abs("late/libevt.so") + " #1"));
    EXPECT_TRUE(has(r, "RESULT " + kept + "/libevt.so #2"));
    EXPECT_TRUE(has(r, "RESULT " + kept + "/libevt2.so #3"));
}

// A directory that a search first reaches in a dlopen from a library (whose
// RPATH start-up never searched), found missing there and then created with
// a dependency in it: glibc never looks in it again, also when another
// list names it (one entry per directory) for the dependencies of what it
// loads next, which it searches itself.
TEST(ResolverEvents, a_directory_found_missing_by_a_dlopen_is_skipped_for_later_dependencies) {
    Tree t;
    const std::string early = t.abs("early"), late = t.abs("late");
    evlib(t, "late/libevtop.so", 1);
    evlib(t, "late/libevdep.so", 2, {.soname = "libevdep.so"});
    evlib(t, "spare/libevdep.so", 3, {.soname = "libevdep.so"});
    evlib(t, "late/libevneed.so", 4, {.needs = {"late/libevdep.so"}, .rpath = early + ":" + late});
    driver(t, LibSpec{.rpath = early + ":" + late});
    Runs r = run_three(
        t, {"l:libevtop.so", "x:" + put(t.abs("spare/libevdep.so"), early + "/libevdep.so"), "l:libevneed.so"}, {}, "",
        "rm -rf early");
    EXPECT_TRUE(has(r.glibc, "RESULT init 2")) << "the dependency did not come from late/\n"
                                               << ::testing::PrintToString(r.glibc);
    // ldshim answered the first search and handed glibc a path; glibc must
    // still have learnt that early/ is missing, or its own search for the
    // dependency finds the new file there.
    EXPECT_EQ(r.glibc, r.preloaded) << unified_diff(r.glibc, r.preloaded, "glibc alone", "LD_PRELOAD");
    EXPECT_EQ(r.glibc, r.from) << unified_diff(r.glibc, r.from, "glibc alone", "ldshim_dlopen_from");
}

// A directory glibc found missing at start-up and that was created before
// the first dlopen: glibc does not look again, whatever is there now.
// libc.so.6 is searched for at start-up through LD_LIBRARY_PATH, which
// starts with `head`.
namespace {
void a_directory_created_after_start_up_stays_skipped(const std::string& head) {
    Tree t;
    const std::string m0 = t.abs("m0"), late = t.abs("late");
    evlib(t, "late/libevtop.so", 1);
    evlib(t, "spare/libevtop.so", 2);
    driver(t);
    auto r = same_as_glibc(t, {"x:" + put(t.abs("spare/libevtop.so"), m0 + "/libevtop.so"), "o:libevtop.so"},
                           {{"LD_LIBRARY_PATH", head + m0 + ":" + late}}, "", "rm -rf m0");
    EXPECT_TRUE(has(r, "RESULT init 1")) << "the library did not come from late/\n" << ::testing::PrintToString(r);
}
}  // namespace

TEST(ResolverEvents, a_directory_missing_at_start_up_and_created_before_the_first_dlopen_stays_skipped) {
    a_directory_created_after_start_up_stays_skipped("");
}

// The same behind an empty list element (the current directory), which
// glibc records under an empty name: its record must still be read whole.
TEST(ResolverEvents, a_directory_missing_at_start_up_behind_an_empty_list_element_stays_skipped) {
    a_directory_created_after_start_up_stays_skipped(":");
}

// What the start-up loaded is what the loader holds, whatever happened to
// its files before ldshim's first dlopen: a library replaced since keeps
// its SONAME (libevq.so's file now holds libevp.so's, which glibc does not
// know loaded).
TEST(ResolverEvents, a_library_loaded_at_start_up_and_replaced_before_the_first_dlopen_keeps_its_soname) {
    Tree t;
    evlib(t, "lib/libevq.so", 1, {.soname = "libevq.so"});
    evlib(t, "spare/libevp.so", 2, {.soname = "libevp.so"});
    driver(t, std::nullopt, {.needs = {"lib/libevq.so"}, .rpath = "$ORIGIN/../lib"});
    ASSERT_EQ(sh("cp " + quote(t.abs("lib/libevq.so")) + " " + quote(t.abs("spare/libevq1.so"))), 0);
    auto r = same_as_glibc(t, {"x:" + put("spare/libevp.so", "lib/libevq.so"), "o:libevp.so", "o:libevq.so"}, {}, "",
                           put("spare/libevq1.so", "lib/libevq.so"));
    EXPECT_TRUE(has(r, "ERROR libevp.so: cannot open shared object file: No such file or directory"))
        << ::testing::PrintToString(r);
    EXPECT_TRUE(has(r, "RESULT " + t.abs("bin/../lib/libevq.so") + " #1")) << ::testing::PrintToString(r);
}

// A library loaded at start-up whose file was removed since is still the
// object its dependent loaded: a dlopen from it searches the RPATH of the
// library that needed it too (deep/ is named there only).
TEST(ResolverEvents, a_library_loaded_at_start_up_from_a_file_removed_since_keeps_its_loader_chain) {
    Tree t;
    evlib(t, "lib/libeva.so", 1, {.soname = "libeva.so"});
    evlib(t, "mid/libevb.so", 2,
          {.soname = "libevb.so", .needs = {"lib/libeva.so"}, .rpath = "$ORIGIN/../lib:$ORIGIN/../deep"});
    evlib(t, "deep/libevz.so", 3);
    driver(t, std::nullopt, {.needs = {"mid/libevb.so"}, .rpath = "$ORIGIN/../mid"});
    ASSERT_EQ(sh("cp " + quote(t.abs("lib/libeva.so")) + " " + quote(t.abs("libeva1.so"))), 0);
    auto r = same_as_glibc(t, {"x:rm lib/libeva.so", "o:libeva.so", "s:libeva.so|libevz.so"}, {}, "",
                           put("libeva1.so", "lib/libeva.so"));
    EXPECT_TRUE(has(r, "RESULT " + t.abs("bin/../mid/../deep/libevz.so") + " #3")) << ::testing::PrintToString(r);
}

// A library the start-up found through a relative RPATH element took its
// $ORIGIN from the directory current then, not from the one current at
// ldshim's first dlopen.
TEST(ResolverEvents, the_origin_of_a_library_loaded_at_start_up_by_a_relative_name_is_the_directory_current_then) {
    Tree t;
    evlib(t, "lib/libevr.so", 1, {.soname = "libevr.so"});
    evlib(t, "lib/sub/libevs.so", 3);
    evlib(t, "other/lib/libevr.so", 2, {.soname = "libevr.so"});
    evlib(t, "other/lib/sub/libevs.so", 4);
    driver(t, std::nullopt, {.needs = {"lib/libevr.so"}, .rpath = "lib"});
    auto r = same_as_glibc(t, {"d:other", "o:libevr.so", "s:libevr.so|$ORIGIN/sub/libevs.so"});
    EXPECT_TRUE(has(r, "RESULT lib/libevr.so #1")) << ::testing::PrintToString(r);
    EXPECT_TRUE(has(r, "RESULT init 3")) << "$ORIGIN was not the start-up's lib/\n" << ::testing::PrintToString(r);
}

// glibc reads /etc/ld.so.cache at each dlopen that reaches it (it unmaps it
// at the end of every dlopen), so a cache that ldconfig replaced is read
// afresh; a file it could not use, once read, is never read again, and one
// that no search needed was never read.
class CacheEvents : public ::testing::Test {
protected:
    void SetUp() override {
        if (sh("unshare -m true") != 0 || sh("test -x /sbin/ldconfig") != 0)
            GTEST_SKIP() << "SKIPPED: needs a mount namespace (unshare -m) and /sbin/ldconfig";
        evlib(t, "c1/libevc.so", 1, {.soname = "libevc.so"});
        evlib(t, "c2/libevc.so", 2, {.soname = "libevc.so"});
        evlib(t, "ll/libevl.so", 5);
        driver(t);
        for (const char* n : {"1", "2"}) {
            t.write("etc/conf" + std::string(n), t.abs(std::string("c") + n) + "\n");
            ASSERT_EQ(sh("/sbin/ldconfig -X -C " + quote(t.abs(std::string("etc/cache") + n)) + " -f " +
                         quote(t.abs(std::string("etc/conf") + n))),
                      0);
        }
        t.write("etc/corrupt", "not a cache\n");
    }
    // Each run starts with cache1 as /etc/ld.so.cache.
    static std::string reset() { return put("etc/cache1", "etc/ld.so.cache"); }
    // The process sees the tree's etc/ as /etc (ldconfig replaces the file by
    // renaming a new one onto it, which a mount on the file itself refuses).
    std::string in_namespace() const {
        return "unshare -m sh -c 'mount --bind \"$0\" /etc && exec \"$@\"' " + quote(t.abs("etc"));
    }
    static std::string cache(const std::string& from) { return "x:" + put("/etc/" + from, "/etc/ld.so.cache"); }
    Tree t;
};

TEST_F(CacheEvents, a_cache_replaced_between_dlopens_is_read_again) {
    auto r =
        same_as_glibc(t, {"o:libevc.so", "c:libevc.so", cache("cache2"), "o:libevc.so"}, {}, in_namespace(), reset());
    EXPECT_TRUE(has(r, "RESULT " + t.abs("c1/libevc.so") + " #1"));
    EXPECT_TRUE(has(r, "RESULT " + t.abs("c2/libevc.so") + " #2")) << "the new cache was not read";
}

TEST_F(CacheEvents, a_cache_found_unusable_is_never_read_again) {
    auto r = same_as_glibc(
        t,
        {// Corrupt while no search needs it: not read, so not given up.
         "o:libevl.so", "c:libevl.so", cache("corrupt"), "o:libevl.so", cache("cache2"), "o:libevc.so", "c:libevc.so",
         // Corrupt when a search needs it: given up for good.
         cache("corrupt"), "o:libevc.so", cache("cache1"), "o:libevc.so"},
        {{"LD_LIBRARY_PATH", t.abs("ll")}}, in_namespace(), reset());
    EXPECT_TRUE(has(r, "RESULT " + t.abs("c2/libevc.so") + " #2"));
    EXPECT_FALSE(has(r, "RESULT " + t.abs("c1/libevc.so") + " #1")) << "the cache was read after glibc gave up";
}

// A cache spoilt after start-up, before the first dlopen: glibc read the
// good one at start-up and has not given the cache up.
TEST_F(CacheEvents, a_cache_spoilt_before_the_first_dlopen_was_not_given_up_at_start_up) {
    auto r = same_as_glibc(t, {cache("corrupt"), "o:libevl.so", cache("cache2"), "o:libevc.so"},
                           {{"LD_LIBRARY_PATH", t.abs("ll")}}, in_namespace(), reset());
    EXPECT_TRUE(has(r, "RESULT " + t.abs("c2/libevc.so") + " #2")) << ::testing::PrintToString(r);
}

// A search ldshim answered found the cache unusable: glibc, handed a path,
// must give it up all the same, or it reads the next cache for the
// dependencies of a later dlopen (here a copy of libresolv that only the
// new cache lists, where glibc alone takes the system's).
TEST_F(CacheEvents, a_cache_given_up_in_a_dlopen_ldshim_answered_stays_given_up_for_dependencies) {
    // Built by hand: the fixture builder refuses a system library's name.
    ASSERT_EQ(sh("cc -shared -fPIC -DFIXTURE_ID=7 -Wl,-soname,libresolv.so.2 -o " + quote(t.abs("c2/libevfake.so")) +
                 " " + quote(EVENTS_LIB_SRC) + " && ln -s libevfake.so " + quote(t.abs("c2/libresolv.so.2"))),
              0);
    evlib(t, "ll/libevneedc.so", 6, {.needs = {"c2/libevfake.so"}});
    ASSERT_EQ(sh("/sbin/ldconfig -X -C " + quote(t.abs("etc/cache2")) + " -f " + quote(t.abs("etc/conf2"))), 0);
    // The model is built first (libevl.so needs no cache); libutil.so.1 is
    // found past the cache, in a system directory.
    auto r = same_as_glibc(t, {"o:libevl.so", cache("corrupt"), "o:libutil.so.1", cache("cache2"), "o:libevneedc.so"},
                           {{"LD_LIBRARY_PATH", t.abs("ll")}}, in_namespace(), reset());
    EXPECT_TRUE(has(r, "RESULT " + t.abs("ll/libevneedc.so") + " #6")) << ::testing::PrintToString(r);
    EXPECT_FALSE(has(r, "init 7")) << "the dependency came through a cache glibc had given up";
}

// dlclose unloads an object and its dependencies unless RTLD_NODELETE or
// another reference keeps them; a reopen searches again, and another name
// of a loaded object's file is that object.
TEST(ResolverEvents, dlclose_and_reopen_top_level_and_dependencies) {
    Tree t;
    const std::string lib = t.abs("lib");
    evlib(t, "lib/libevdep.so", 1, {.soname = "libevdep.so"});
    evlib(t, "lib/libevneed.so", 2, {.needs = {"lib/libevdep.so"}});
    evlib(t, "lib/libevnd.so", 3);
    evlib(t, "lib/libevdep2.so", 5, {.soname = "libevdep2.so"});
    evlib(t, "lib/libevnd2.so", 6, {.needs = {"lib/libevdep2.so"}});
    evlib(t, "spare/libevdep.so", 4, {.soname = "libevdep.so"});
    driver(t);
    ASSERT_EQ(sh("cp " + quote(lib + "/libevdep.so") + " " + quote(t.abs("spare/libevdep1.so"))), 0);
    auto r = same_as_glibc(
        t,
        {// A dependency opened by its own name too outlives the object that
         // needed it; RTLD_NOLOAD takes a reference as well.
         "o:libevneed.so", "o:libevdep.so", "c:libevneed.so", "n:libevneed.so", "n:libevdep.so", "c:libevdep.so",
         "n:libevdep.so", "c:libevdep.so", "c:libevdep.so", "n:libevdep.so", "o:libevneed.so", "c:libevneed.so",
         // The dependency replaced on disk while unloaded: loaded afresh.
         "x:" + put(t.abs("spare/libevdep.so"), lib + "/libevdep.so"), "o:libevneed.so", "o:" + lib + "/libevneed.so",
         "o:" + lib + "/../lib/libevneed.so", "c:libevneed.so", "c:" + lib + "/libevneed.so",
         "c:" + lib + "/../lib/libevneed.so", "n:libevneed.so",
         // RTLD_NODELETE: closed, still loaded, reopened without a search;
         // its dependencies stay with it.
         "e:libevnd.so", "c:libevnd.so", "n:libevnd.so", "o:" + lib + "/libevnd.so", "o:libevnd.so",
         "x:" + put(t.abs("spare/libevdep1.so"), lib + "/libevdep.so"), "e:libevneed.so", "c:libevneed.so",
         "n:libevneed.so", "n:libevdep.so",
         // RTLD_NODELETE given to an object loaded as a dependency.
         "o:libevnd2.so", "e:libevdep2.so", "c:libevnd2.so", "n:libevnd2.so", "c:libevdep2.so", "n:libevdep2.so"},
        {{"LD_LIBRARY_PATH", lib}}, "", put("spare/libevdep1.so", "lib/libevdep.so"));
    EXPECT_TRUE(has(r, "RESULT init 4")) << "the replaced dependency was not loaded\n" << ::testing::PrintToString(r);
    ASSERT_GE(r.size(), 4u);
    const std::vector<std::string> tail(r.end() - 4, r.end());
    EXPECT_EQ(tail, (std::vector<std::string>{"RESULT closed", "RESULT (not loaded)", "RESULT closed",
                                              "RESULT " + lib + "/libevdep2.so #5"}))
        << "libevnd2.so went, its RTLD_NODELETE dependency stayed";
}

// An object loaded without ldshim whose file was replaced since (a package
// update): another path to the new file is a new object, as glibc tells by
// the file's identity at its load.
TEST(ResolverEvents, an_adopted_object_whose_file_was_replaced_is_not_the_new_file) {
    Tree t;
    const std::string lib = t.abs("lib");
    evlib(t, "lib/libevr.so", 1);
    evlib(t, "spare/libevr.so", 2);
    driver(t);
    ASSERT_EQ(sh("cp " + quote(lib + "/libevr.so") + " " + quote(t.abs("spare/libevr1.so"))), 0);
    auto r = same_as_glibc(t,
                           {"g:" + lib + "/libevr.so", "x:" + put(t.abs("spare/libevr.so"), lib + "/libevr.so"),
                            "o:" + lib + "/libevr.so", "o:" + lib + "/../lib/libevr.so"},
                           {}, "", put("spare/libevr1.so", "lib/libevr.so"));
    EXPECT_TRUE(has(r, "RESULT " + lib + "/../lib/libevr.so #2")) << ::testing::PrintToString(r);
}

// A library replaced under a loaded one's path: a dlopen that reaches the
// new file by that path through a token (glibc matches names before it
// expands them) loads it as a new object under the same l_name, which a
// later relative name reaches too (generator seed 20281121).
TEST(ResolverEvents, a_file_replaced_under_a_loaded_path_is_a_new_object_under_the_same_name) {
    Tree t;
    evlib(t, "lib/libevw.so", 1);
    evlib(t, "spare/libevw.so", 2);
    driver(t, std::nullopt, {.rpath = "$ORIGIN/../lib"});
    ASSERT_EQ(sh("cp " + quote(t.abs("lib/libevw.so")) + " " + quote(t.abs("spare/libevw1.so"))), 0);
    const std::string l_name = t.abs("bin/../lib/libevw.so");
    auto r = same_as_glibc(t,
                           {"o:libevw.so", "x:" + put("spare/libevw.so", "lib/libevw.so"), "o:$ORIGIN/../lib/libevw.so",
                            "d:lib", "o:../lib/libevw.so"},
                           {}, "", put("spare/libevw1.so", "lib/libevw.so"));
    EXPECT_TRUE(has(r, "RESULT " + l_name + " #1")) << ::testing::PrintToString(r);
    EXPECT_TRUE(has(r, "RESULT " + l_name + " #2")) << ::testing::PrintToString(r);
    EXPECT_FALSE(has(r, "RESULT ../lib/libevw.so #2")) << ::testing::PrintToString(r);
}

// Two threads dlopen at once, one of them a library whose constructor
// dlopens again: no deadlock, and each gets glibc's answer.
TEST(ResolverEvents, two_threads_dlopen_at_once) {
    Tree t;
    const std::string lib = t.abs("lib");
    evlib(t, "lib/libeva.so", 1, {.flags = {"-DNO_INIT"}});
    evlib(t, "lib/libevb.so", 2, {.flags = {"-DNO_INIT"}});
    evlib(t, "lib/libevctor.so", 3, {.flags = {"-DNO_INIT", "-DCTOR_OPENS=\"libevb.so\""}});
    driver(t);
    std::vector<std::string> ops;
    for (int i = 0; i < 20; ++i) {
        ops.push_back("t:libeva.so|libevb.so");
        ops.push_back("c:libeva.so");
        ops.push_back("c:libevb.so");
        ops.push_back("t:libevb.so|libevmissing.so");
        ops.push_back("c:libevb.so");
        ops.push_back("t:libevctor.so|libevb.so");
        ops.push_back("c:libevctor.so");
        ops.push_back("c:libevb.so");
    }
    auto r = same_as_glibc(t, ops, {{"LD_LIBRARY_PATH", lib}});
    EXPECT_TRUE(has(r, "RESULT " + lib + "/libeva.so #1"));
}
