// Differential scenarios: each builds a tree with exact linker flags, runs the
// real loader under LD_DEBUG=libs and ldsearch on it, and requires identical
// search lines, identical dlopen results and identical error texts.  Each also
// asserts what the scenario is about, so that a tree that silently stopped
// exercising its rule fails.
#include "../support/test_machine.h"
#include "harness.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <string.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

using namespace ldshim::difftest;
namespace testmachine = ldshim::testmachine;

namespace {

struct Expect {
    std::vector<std::string> ops;
    Env env;
    std::vector<std::string> extra;
    std::string prefix;
};

Capture compare(const Tree& t, const std::string& prog, const Expect& x = {}) {
    Capture real = t.real(prog, x.ops, x.env, x.prefix);
    Capture emu = t.emulated(prog, x.ops, x.env, x.extra);
    EXPECT_EQ(real.search, emu.search) << unified_diff(real.search, emu.search, "LD_DEBUG=libs", "ldsearch");
    EXPECT_EQ(real.results, emu.results) << unified_diff(real.results, emu.results, "dlopen", "ldsearch");
    EXPECT_EQ(real.errors, emu.errors) << unified_diff(real.errors, emu.errors, "loader stderr", "ldsearch stderr");
    // ldsearch fails (exit 1) exactly when startup or a dlopen failed; a failed
    // preload is only a warning.
    bool real_failed =
        real.status != 0 || std::any_of(real.errors.begin(), real.errors.end(),
                                        [](const std::string& e) { return !e.starts_with("ERROR: ld.so: object"); });
    EXPECT_EQ(real_failed, emu.status != 0) << "real exit " << real.status << ", ldsearch exit " << emu.status;
    return real;
}

// $PLATFORM as the real loader expands it here (x86_64, or haswell or
// xeon_phi on Intel CPUs; aarch64), from its own --list-diagnostics.
std::string loader_platform() {
    std::string out;
    if (FILE* f = popen((testmachine::loader() + " --list-diagnostics 2>/dev/null").c_str(), "r")) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (std::string_view l = line; l.starts_with("dl_platform=\"")) {
                l.remove_prefix(13);
                out = std::string(l.substr(0, l.find('"')));
            }
        pclose(f);
    }
    return out.empty() ? std::string(testmachine::kThis.platform) : out;
}

bool any_line(const std::vector<std::string>& v, const std::string& needle) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

LibSpec so(std::string soname = {}) { return LibSpec{std::move(soname)}; }

// The roots suite runs these scenarios under glibc 2.31 and 2.41 too, and
// the test runs on the loader's own libc: the expectations that name one
// version's behaviour ask which one this is.
bool glibc_before(const char* version) { return ::strverscmp(gnu_get_libc_version(), version) < 0; }
// glibc-hwcaps subdirectories arrived in glibc 2.33, named for x86-64 (and
// POWER, s390x), not for aarch64: there the fixtures' x86-64-v2 directories
// are never searched.
bool loader_has_glibc_hwcaps() { return !glibc_before("2.33") && testmachine::has_hwcaps_names(); }
// Legacy hwcap subdirectories (tls/, x86_64/ ...) left in glibc 2.37.
bool loader_has_legacy_subdirs() { return glibc_before("2.37"); }

}  // namespace

TEST(Differential, rpath_with_missing_dir_then_cache) {
    Tree t;
    t.lib("rp/libA.so", so("libA.so"));
    t.lib("rp/libB.so", so("libB.so"));
    t.exe("main", {.needs = {"rp/libA.so", "rp/libB.so"}, .rpath = t.abs("rp") + ":/nonexistent/dir", .driver = false});
    Capture r = compare(t, "./main");
    // The first lookup that gets past rp/ tries the missing directory.
    EXPECT_TRUE(any_line(r.search, "trying file=/nonexistent/dir/"));
}

TEST(Differential, rpath_chain_continues_through_runpath_object) {
    Tree t;
    t.lib("b/libC.so", {.soname = "libC.so", .needs = {}});
    t.lib("a/libD.so", so("libD.so"));
    // libC needs libD, found only through the main program's RPATH.
    t.lib("b/libC.so", {.soname = "libC.so", .needs = {"a/libD.so"}});
    t.lib("a/libB.so", {.soname = "libB.so", .needs = {"b/libC.so"}, .runpath = t.abs("b")});
    t.exe("main", {.needs = {"a/libB.so"}, .rpath = t.abs("a"), .driver = false});
    Capture r = compare(t, "./main");
    EXPECT_EQ(r.status, 0);
}

TEST(Differential, exe_runpath_not_inherited_by_dependency) {
    Tree t;
    t.lib("r/libC.so", so("libC.so"));
    t.lib("r/libB.so", {.soname = "libB.so", .needs = {"r/libC.so"}});
    t.exe("main", {.needs = {"r/libB.so"}, .runpath = t.abs("r"), .driver = false});
    Capture r = compare(t, "./main");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(any_line(r.errors, "libC.so: cannot open shared object file"));
}

TEST(Differential, pooled_labels_rpath_and_env_duplicates) {
    Tree t;
    t.mkdir("common");
    t.mkdir("x");
    t.lib("b/libX.so", so("libX.so"));
    t.lib("m/libB.so",
          {.soname = "libB.so", .needs = {"b/libX.so"}, .rpath = "$ORIGIN/../common:$ORIGIN/../b:$ORIGIN/../common"});
    t.exe("main", {.needs = {"m/libB.so"}, .rpath = t.abs("common") + ":" + t.abs("m"), .driver = false});
    Capture r =
        compare(t, "./main", {.env = {{"LD_LIBRARY_PATH", t.abs("x") + ":" + t.abs("common") + ":" + t.abs("x")}}});
    EXPECT_TRUE(any_line(r.search, "(LD_LIBRARY_PATH)"));
}

TEST(Differential, missing_dirs_pruned_across_dlopens) {
    Tree t;
    t.lib("rp/libA.so", so("libA.so"));
    t.exe("dlo", {.rpath = t.abs("rp") + ":/nonexistent/dir"});
    Capture r = compare(t, "./dlo", {.ops = {"o:libA.so", "o:libnotthere.so", "o:libnotthere2.so"}});
    EXPECT_EQ(r.results.size(), 1u);
}

TEST(Differential, dst_forms_and_normalisation_in_rpath) {
    Tree t;
    t.exe("dlo", {});
    t.patchelf({"--force-rpath", "--set-rpath",
                "$ORIGIN/o1:${ORIGIN}/o2:$ORIGINX/o3:$LIB/o4:${LIB}/o4b:$PLATFORM/o5:/abs/$ORIGIN/o6:$/o7:$$ORIGIN/o8:"
                "${ORIGIN/o9:$ORIGIN:$ORIGIN/:$ORIGIN//:rel/o10:./o11:../o12::/o13/:/o14//:/",
                "dlo"});
    Capture r = compare(t, "./dlo", {.ops = {"o:libnothere.so", "o:libnothere2.so"}});
    EXPECT_TRUE(any_line(r.search, testmachine::lib_dir() + "/o4"));
}

TEST(Differential, ld_library_path_empty_elements_are_cwd) {
    Tree t;
    t.mkdir("a");
    t.mkdir("b");
    t.exe("dlo", {});
    Capture r = compare(
        t, "./dlo", {.ops = {"o:libnothere.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("a") + "::" + t.abs("b") + ":"}}});
    EXPECT_TRUE(any_line(r.search, "  trying file=libnothere.so"));
}

TEST(Differential, ld_library_path_semicolon_separates) {
    Tree t;
    t.lib("b/libS.so", so());
    t.mkdir("a");
    t.exe("dlo", {});
    Capture r =
        compare(t, "./dlo", {.ops = {"o:libS.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("a") + ";" + t.abs("b")}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("b") + "/libS.so");
}

TEST(Differential, ld_library_path_trailing_slashes_collapse) {
    Tree t;
    t.mkdir("a");
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libnothere.so"},
                         .env = {{"LD_LIBRARY_PATH", t.abs("a") + "/:" + t.abs("a") + "//:" + t.abs(".") + "/a"}}});
    EXPECT_TRUE(any_line(r.search, "/./a"));
}

TEST(Differential, dlopen_from_library_uses_its_runpath_only) {
    Tree t;
    t.lib("hrun/libT.so", so());
    t.lib("mainrp/libM.so", so());
    t.lib("h/libhelper.so", {.soname = "libhelper.so", .runpath = t.abs("hrun"), .helper = true});
    t.exe("dlo", {.needs = {"h/libhelper.so"}, .rpath = t.abs("h") + ":" + t.abs("mainrp")});
    Capture r = compare(t, "./dlo", {.ops = {"l:libT.so", "l:libM.so", "o:libM.so"}});
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_EQ(r.results[1], t.abs("mainrp") + "/libM.so");
}

TEST(Differential, dlopened_object_does_not_inherit_caller_rpath) {
    Tree t;
    t.lib("h2rp/libRq.so", so("libRq.so"));
    t.lib("q/libQ.so", {.soname = "libQ.so", .needs = {"h2rp/libRq.so"}, .rpath = t.abs("qrp")});
    t.mkdir("qrp");
    t.lib("h2/libhelper.so", {.soname = "libhelper.so", .rpath = t.abs("h2rp"), .helper = true});
    t.exe("dlo", {.needs = {"h2/libhelper.so"}, .rpath = t.abs("h2") + ":" + t.abs("mainrp")});
    Capture r = compare(t, "./dlo", {.ops = {"l:" + t.abs("q/libQ.so"), "l:libRq.so", "l:" + t.abs("q/libQ.so")}});
    EXPECT_TRUE(any_line(r.errors, "libRq.so: cannot open shared object file"));
}

TEST(Differential, nodeflib_executable_cannot_use_cache_or_system_dirs) {
    Tree t;
    t.exe("dlo", {.flags = {"-pie", "-fPIE"}});
    t.set_flags1("dlo", 0x800);
    Capture r = compare(t, "./dlo");
    EXPECT_NE(r.status, 0);
}

TEST(Differential, nodeflib_executable_with_system_dir_in_env) {
    Tree t;
    t.exe("dlo", {.flags = {"-pie", "-fPIE"}});
    t.set_flags1("dlo", 0x800);
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libz.so.1", "o:libnothere.so"},
                         .env = {{"LD_LIBRARY_PATH", "/tmp:/" + testmachine::lib_dir() + "/"}}});
    EXPECT_TRUE(any_line(r.search, "(system search path)"));
}

TEST(Differential, nodeflib_library_discards_cache_hit) {
    Tree t;
    // GNU ld ignores -z nodeflib; -z nodelete gives a DT_FLAGS_1 to OR it into.
    t.lib("h/libhelper.so", {.soname = "libhelper.so", .helper = true, .flags = {"-Wl,-z,nodelete"}});
    t.set_flags1("h/libhelper.so", 0x800);
    t.exe("dlo", {.needs = {"h/libhelper.so"}, .rpath = t.abs("h")});
    Capture r = compare(t, "./dlo", {.ops = {"l:libz.so.1", "o:libz.so.1"}});
    EXPECT_TRUE(any_line(r.errors, "libz.so.1: cannot open shared object file"));
}

TEST(Differential, rtld_noload_searches_but_loads_nothing) {
    Tree t;
    t.lib("rp/libA.so", so("libA.so.1"));
    t.symlink("libA.so", "rp/libA.so.1");
    t.exe("dlo", {.rpath = t.abs("rp")});
    Capture r = compare(t, "./dlo",
                        {.ops = {"n:libA.so", "n:libA.so.1", "o:" + t.abs("rp/libA.so"), "n:libA.so.1", "n:libA.so",
                                 "n:" + t.abs("rp/../rp/libA.so"), "o:libA.so.1"}});
    EXPECT_EQ(r.results[0], "(not loaded)");
}

TEST(Differential, dlmopen_new_namespace_searches_again) {
    Tree t;
    t.lib("rp/libA.so.1", so("libA.so.1"));
    t.lib("rp/libB.so", {.soname = "libB.so", .needs = {"rp/libA.so.1"}});
    t.exe("dlo", {.rpath = t.abs("rp")});
    Capture r = compare(t, "./dlo", {.ops = {"m:libA.so.1", "m:libB.so"}});
    EXPECT_TRUE(any_line(r.search, "find library=libc.so.6 [2]"));
}

TEST(Differential, dst_in_dt_needed) {
    const std::string lib = "lib" + loader_platform() + ".so";
    Tree t;
    t.lib("sub/libO.so", so("$ORIGIN/sub/libO.so"));
    t.lib("rp/" + lib, so("lib$PLATFORM.so"));
    t.exe("dlo", {.needs = {"sub/libO.so", "rp/" + lib}, .rpath = t.abs("rp")});
    Capture r = compare(t, "./dlo");
    EXPECT_TRUE(any_line(r.search, "find library=" + lib));
}

TEST(Differential, dst_in_dlopen_names) {
    const std::string lib = "lib" + loader_platform() + ".so";
    Tree t;
    t.lib("sub/libO.so", so());
    t.lib("rp/" + lib, so());
    t.exe("dlo", {.rpath = t.abs("rp")});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:lib$PLATFORM.so", "o:$ORIGIN/sub/libO.so", "o:${ORIGIN}/rp/lib$PLATFORM.so",
                                 "o:$LIB/nothere.so", "z:"}});
    EXPECT_TRUE(any_line(r.results, "/rp/" + lib));
}

TEST(Differential, dlopen_null_and_empty_name_return_main) {
    Tree t;
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"z:", "o:"}});
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_EQ(r.results[0], "./dlo");
}

TEST(Differential, wrong_class_skipped_then_found) {
    Tree t;
    t.lib32("d32/libW.so");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r =
        compare(t, "./dlo", {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("d32") + ":" + t.abs("dgood")}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("dgood") + "/libW.so");
}

TEST(Differential, wrong_class_only_reports_elfclass32) {
    Tree t;
    t.lib32("d32/libW.so");
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("d32")}}});
    EXPECT_TRUE(any_line(r.errors, "wrong ELF class: ELFCLASS32"));
}

TEST(Differential, foreign_machine_skipped_silently) {
    Tree t;
    t.lib("dmach/libW.so", so());
    t.set_machine("dmach/libW.so", testmachine::kThis.foreign_machine);
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("dmach") + ":" + t.abs("dgood")}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("dgood") + "/libW.so");
}

TEST(Differential, not_elf_candidate_is_fatal) {
    Tree t;
    t.write("dnotelf/libW.so",
            "/* GNU ld script */\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n" + std::string(64, ' '));
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("dnotelf") + ":" + t.abs("dgood")}}});
    EXPECT_TRUE(any_line(r.errors, "invalid ELF header"));
}

TEST(Differential, short_candidate_is_fatal) {
    Tree t;
    t.write("dshort/libW.so",
            "\x7f"
            "ELF");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("dshort") + ":" + t.abs("dgood")}}});
    EXPECT_TRUE(any_line(r.errors, "file too short"));
}

TEST(Differential, directory_named_like_library_is_fatal) {
    Tree t;
    t.mkdir("ddir/libW.so");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r =
        compare(t, "./dlo", {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("ddir") + ":" + t.abs("dgood")}}});
    EXPECT_TRUE(any_line(r.errors, "cannot read file data: Is a directory"));
}

TEST(Differential, relative_file_in_path_abandons_list) {
    Tree t;
    t.write("afile", "not a directory");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", "./afile:" + t.abs("dgood")}}});
    // From glibc 2.39 (bug 31035) ENOTDIR no longer ends the list.
    EXPECT_EQ(any_line(r.search, "dgood/libW.so"), !glibc_before("2.39"));
}

TEST(Differential, absolute_file_in_path_is_pruned) {
    Tree t;
    t.write("afile", "not a directory");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libW.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("afile") + ":" + t.abs("dgood")}}});
    ASSERT_EQ(r.results.size(), 1u);
}

TEST(Differential, glibc_hwcaps_subdir_preferred) {
    Tree t;
    t.lib("d/glibc-hwcaps/x86-64-v2/libH.so", so());
    t.lib("d/glibc-hwcaps/x86-64-v3/libH.so", so());
    t.lib("d/libH.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libH.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].find("glibc-hwcaps") != std::string::npos, loader_has_glibc_hwcaps()) << r.results[0];
}

TEST(Differential, legacy_tls_subdir_found) {
    Tree t;
    t.lib("d/tls/libH2.so", so());
    t.lib("d/libH2.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libH2.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("d") + (loader_has_legacy_subdirs() ? "/tls/libH2.so" : "/libH2.so"));
}

TEST(Differential, hwcaps_only_copy_found) {
    Tree t;
    t.lib("d/glibc-hwcaps/x86-64-v2/libV.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libV.so", "o:libnothere.so"}});
    ASSERT_EQ(r.results.size(), loader_has_glibc_hwcaps() ? 1u : 0u);
}

TEST(Differential, symlinked_program_origin_is_resolved) {
    Tree t;
    t.lib("orp/libA.so", so());
    t.exe("dlo", {.rpath = "$ORIGIN/orp:" + t.abs("rp")});
    t.symlink("../dlo", "sub/dlo_link");
    Capture r = compare(t, "sub/dlo_link", {.ops = {"o:libA.so"}});
    EXPECT_TRUE(any_line(r.search, "(RPATH from file sub/dlo_link)"));
}

TEST(Differential, ld_preload_names_and_failures) {
    Tree t;
    t.lib("orp/libA.so", so());
    t.lib("rp/libA.so", so());
    t.exe("dlo", {.rpath = "$ORIGIN/orp:" + t.abs("rp")});
    Capture r = compare(t, "./dlo", {.env = {{"LD_PRELOAD", "libA.so libnothere.so:" + t.abs("rp/libA.so")}}});
    EXPECT_TRUE(any_line(r.errors, "cannot be preloaded"));
}

TEST(Differential, system_dir_in_rpath_keeps_system_label) {
    Tree t;
    t.mkdir("x");
    t.exe("dlo", {.rpath = "/usr/" + testmachine::lib_dir() + ":" + t.abs("x") + ":/nonexist1"});
    Capture r = compare(t, "./dlo", {.ops = {"o:libnothere.so"}});
    EXPECT_TRUE(any_line(r.search, "(system search path)"));
}

TEST(Differential, all_missing_rpath_dropped_env_kept_root_pruned) {
    Tree t;
    t.exe("dlo", {.rpath = "/nonexist1:/nonexist2"});
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libnothere.so", "o:libnothere2.so"}, .env = {{"LD_LIBRARY_PATH", "/nonexist3:/"}}});
    // Before glibc 2.38 (bug 30435) "/" is stat'ed as "" and pruned too.
    EXPECT_EQ(any_line(r.search, " search path=\t\t(LD_LIBRARY_PATH)"), glibc_before("2.38"));
}

TEST(Differential, env_entry_inside_library_rpath_prints_env_label) {
    Tree t;
    t.mkdir("a");
    t.lib("m/libB.so", {.soname = "libB.so", .rpath = t.abs("a") + ":/nonexist_llp", .helper = true});
    t.helper_name = "libB.so";
    t.exe("dlo", {.needs = {"m/libB.so"}, .rpath = t.abs("m")});
    Capture r = compare(t, "./dlo", {.ops = {"l:libq2.so"}, .env = {{"LD_LIBRARY_PATH", "/nonexist_llp"}}});
    EXPECT_TRUE(any_line(r.search, "(LD_LIBRARY_PATH)"));
}

TEST(Differential, soname_match_returns_loaded_object) {
    Tree t;
    t.lib("rp/libreal.so", so("libalias.so.2"));
    t.exe("dlo", {.rpath = t.abs("rp")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libreal.so", "o:libalias.so.2", "n:libalias.so.2"}});
    ASSERT_EQ(r.results.size(), 3u);
    EXPECT_EQ(r.results[1], r.results[0]);
}

TEST(Differential, same_file_under_another_path_is_not_reloaded) {
    Tree t;
    t.lib("rp/libA.so", so());
    t.symlink("rp", "alias");
    t.exe("dlo", {.rpath = t.abs("rp")});
    Capture r =
        compare(t, "./dlo", {.ops = {"o:libA.so", "o:" + t.abs("alias/libA.so"), "o:" + t.abs("rp/../rp/libA.so")}});
    ASSERT_EQ(r.results.size(), 3u);
    EXPECT_EQ(r.results[1], r.results[0]);
}

TEST(Differential, runpath_wins_over_rpath_in_same_object) {
    Tree t;
    t.lib("rpdir/libP.so", so("libP.so"));
    t.lib("rundir/libP.so", so("libP.so"));
    // Both tags in one executable (a DT_SONAME string retagged as DT_RUNPATH):
    // the loader deletes DT_RPATH.
    t.exe("both", {.needs = {"rpdir/libP.so"},
                   .rpath = t.abs("rpdir"),
                   .driver = false,
                   .flags = {"-Wl,-soname," + t.abs("rundir")}});
    t.retag("both", 14 /* DT_SONAME */, 29 /* DT_RUNPATH */);
    Capture r = compare(t, "./both");
    EXPECT_TRUE(any_line(r.search, "(RUNPATH from file ./both)"));
}

TEST(Differential, rpath_over_env_over_runpath) {
    Tree t;
    t.lib("rp/libL.so", so());
    t.lib("env/libL.so", so());
    t.lib("run/libL.so", so());
    t.exe("dlo_rpath", {.rpath = t.abs("rp")});
    t.exe("dlo_runpath", {.runpath = t.abs("run")});
    Expect x{.ops = {"o:libL.so"}, .env = {{"LD_LIBRARY_PATH", t.abs("env")}}};
    Capture a = compare(t, "./dlo_rpath", x);
    Capture b = compare(t, "./dlo_runpath", x);
    ASSERT_EQ(a.results.size(), 1u);
    ASSERT_EQ(b.results.size(), 1u);
    EXPECT_EQ(a.results[0], t.abs("rp") + "/libL.so");
    EXPECT_EQ(b.results[0], t.abs("env") + "/libL.so");
}

TEST(Differential, origin_dotdot_in_library_rpath) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.lib("lib/libjulia.so.1", {.soname = "libjulia.so.1", .rpath = "$ORIGIN:$ORIGIN/julia", .helper = true});
    t.helper_name = "libjulia.so.1";
    t.exe("bin/prog", {.needs = {"lib/libjulia.so.1"}, .rpath = "$ORIGIN/../lib"});
    Capture r = compare(t, "bin/prog", {.ops = {"l:libopenlibm.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
}

TEST(Differential, dlopen_relative_slash_name_is_cwd_relative) {
    Tree t;
    t.lib("julia/libopenlibm.so", so());
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:julia/libopenlibm.so", "o:./julia/libopenlibm.so"}});
    ASSERT_EQ(r.results.size(), 2u);
    EXPECT_EQ(r.results[0], "julia/libopenlibm.so");
}

TEST(Differential, dependency_walk_is_breadth_first_with_dedup) {
    Tree t;
    t.lib("l/libD.so", so("libD.so"));
    t.lib("l/libC.so", {.soname = "libC.so", .needs = {"l/libD.so"}});
    t.lib("l/libA.so", {.soname = "libA.so", .needs = {"l/libC.so"}});
    t.lib("l/libB.so", {.soname = "libB.so", .needs = {"l/libC.so", "l/libD.so"}});
    t.exe("main", {.needs = {"l/libA.so", "l/libB.so"}, .rpath = t.abs("l"), .driver = false});
    Capture r = compare(t, "./main");
    EXPECT_EQ(std::count_if(r.search.begin(), r.search.end(),
                            [](const std::string& l) { return l.starts_with("find library=libC.so"); }),
              1);
}

TEST(Differential, failed_dlopen_rolls_back_but_keeps_what_it_learned) {
    Tree t;
    t.lib("dep/libRq.so", so("libRq.so"));
    t.lib("q/libQ.so", {.soname = "libQ.so", .needs = {"dep/libRq.so"}, .rpath = "/nonexistent/qrp"});
    t.exe("dlo", {.rpath = t.abs("q")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libQ.so", "o:libQ.so", "o:" + t.abs("dep/libRq.so"), "o:libQ.so"}});
    EXPECT_EQ(r.errors.size(), 2u);
}

TEST(Differential, system_library_from_cache_then_already_loaded) {
    Tree t;
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:libz.so.1", "o:libz.so.1", "o:libc.so.6", "o:libm.so.6"}});
    EXPECT_TRUE(any_line(r.search, " search cache=/etc/ld.so.cache"));
}

TEST(Differential, startup_missing_dependency_message) {
    Tree t;
    t.lib("rp/libgone.so", so("libgone.so"));
    t.exe("main", {.needs = {"rp/libgone.so"}, .driver = false});
    Capture r = compare(t, "./main");
    EXPECT_TRUE(any_line(r.errors, "error while loading shared libraries: libgone.so"));
}

TEST(Differential, hwcap_mask_zero_shrinks_legacy_subdirs) {
    Tree t;
    t.lib("d/tls/libH2.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libH2.so", "o:libnothere.so"}, .env = {{"LD_HWCAP_MASK", "0"}}});
    EXPECT_EQ(r.results.size(), loader_has_legacy_subdirs() ? 1u : 0u);
}

// An LD_HWCAP_MASK wider than the default: before 2.37 the loader searches a
// subdirectory for every named AT_HWCAP bit the mask lets through (on
// aarch64 asimd, evtstrm ..., which its --help does not list).
TEST(Differential, a_wider_hwcap_mask_searches_a_subdirectory_per_named_bit) {
    const std::string bit = testmachine::kThis.machine == EM_AARCH64 ? "asimd" : "x86_64";
    Tree t;
    t.lib("d/" + bit + "/libM.so", so());
    t.lib("d/libM.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libM.so"}, .env = {{"LD_HWCAP_MASK", "0x6"}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("d") + (loader_has_legacy_subdirs() ? "/" + bit : "") + "/libM.so");
}

TEST(Differential, tunable_disables_hwcaps_level) {
    Tree t;
    t.lib("d/glibc-hwcaps/x86-64-v2/libH.so", so());
    t.lib("d/glibc-hwcaps/x86-64-v3/libH.so", so());
    t.exe("dlo", {.rpath = t.abs("d")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libH.so"}, .env = {{"GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2"}}});
    if (!loader_has_glibc_hwcaps()) {
        EXPECT_TRUE(r.results.empty());
        return;
    }
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("d") + "/glibc-hwcaps/x86-64-v2/libH.so");
}

TEST(Differential, ld_library_path_from_plain_environment) {
    // The contract: ldsearch reads LD_LIBRARY_PATH from its own environment.
    Tree t;
    t.lib("env/libE.so", so());
    t.exe("dlo", {});
    Capture real = t.real("./dlo", {"o:libE.so"}, {{"LD_LIBRARY_PATH", t.abs("env")}});
    ASSERT_EQ(sh("cd " + quote(t.root()) + " && env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH=" + quote(t.abs("env")) +
                 " " + quote(LDSEARCH_PATH) + " --dlopen libE.so ./dlo > .out/plain 2>&1"),
              0);
    auto lines = read_lines(t.abs(".out/plain"));
    std::vector<std::string> search;
    for (auto& l : lines)
        if (is_search_line(l)) search.push_back(l);
    EXPECT_EQ(real.search, search) << unified_diff(real.search, search, "LD_DEBUG=libs", "ldsearch");
    EXPECT_EQ(lines.back(), t.abs("env") + "/libE.so");
}

TEST(Differential, private_cache_hwcaps_entry_and_duplicates) {
    if (sh("unshare -m true 2>/dev/null") != 0) GTEST_SKIP() << "SKIPPED: no mount namespaces here (unshare -m failed)";
    const std::string ldconfig = testmachine::ldconfig();
    if (ldconfig.empty()) GTEST_SKIP() << "SKIPPED: no ldconfig for this machine (set LDSHIM_TEST_LDCONFIG)";
    Tree t;
    for (const char* p : {"dA/libC.so.1", "dB/libC.so.1", "dA/glibc-hwcaps/x86-64-v2/libC.so.1",
                          "dA/glibc-hwcaps/x86-64-v3/libC.so.1", "dB/glibc-hwcaps/x86-64-v4/libC.so.1"})
        t.lib(p, so("libC.so.1"));
    t.lib("dB/libfoo.so.9", so("libfoo.so.9"));
    t.lib("dB/libfoo.so.10", so("libfoo.so.10"));
    t.lib("dA/libD.so.1", so("libD.so.1"));
    t.lib("dB/libD.so.1", so("libD.so.1"));
    t.write("ld.so.conf", t.abs("dA") + "\n" + t.abs("dB") + "\n");
    ASSERT_EQ(sh(ldconfig + " -X -C " + quote(t.abs("cache")) + " -f " + quote(t.abs("ld.so.conf")) + " 2>/dev/null"),
              0);
    t.exe("dlo", {});
    std::string bind =
        "unshare -m sh -c 'mount --bind \"$0\" /etc/ld.so.cache && exec \"$@\"' " + quote(t.abs("cache"));
    Capture r = compare(t, "./dlo",
                        {.ops = {"o:libC.so.1", "o:libfoo.so.9", "o:libfoo.so.10", "o:libD.so.1", "o:libc.so.6"},
                         .extra = {"--cache", t.abs("cache")},
                         .prefix = bind});
    ASSERT_EQ(r.results.size(), 5u);  // libc.so.6 is already loaded: no search
    EXPECT_EQ(r.results[0].find("glibc-hwcaps") != std::string::npos, loader_has_glibc_hwcaps()) << r.results[0];
    EXPECT_EQ(r.results[3], t.abs("dA") + "/libD.so.1");
}

TEST(Differential, lib_and_platform_tokens_from_the_linker) {
    Tree t;
    t.lib(testmachine::lib_dir() + "/libT.so", so());
    t.exe("dlo", {.rpath = "$ORIGIN/$PLATFORM:$ORIGIN/$LIB"});
    Capture r = compare(t, "./dlo", {.ops = {"o:libT.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_NE(r.results[0].find("/" + testmachine::lib_dir() + "/libT.so"), std::string::npos);
}

TEST(Differential, ld_library_path_origin_is_the_programs) {
    Tree t;
    t.lib("bin/env/libE.so", so());
    t.exe("bin/dlo", {});
    Capture r = compare(t, "bin/dlo", {.ops = {"o:libE.so"}, .env = {{"LD_LIBRARY_PATH", "$ORIGIN/env"}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/env/libE.so");
}

TEST(Differential, absolute_needed_path_is_opened_directly) {
    Tree t;
    t.lib("x/libabs.so", so());
    t.exe("main", {.driver = false, .flags = {t.abs("x/libabs.so")}});
    Capture r = compare(t, "./main");
    EXPECT_FALSE(any_line(r.search, "find library=libabs.so"));
}

TEST(Differential, preload_dependencies_use_their_own_runpath) {
    Tree t;
    t.lib("q/libQ.so", so("libQ.so"));
    t.lib("p/libP.so", {.soname = "libP.so", .needs = {"q/libQ.so"}, .runpath = t.abs("q")});
    t.exe("dlo", {.rpath = t.abs("p")});
    Capture r = compare(t, "./dlo", {.ops = {"n:libQ.so"}, .env = {{"LD_PRELOAD", "libP.so"}}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("q") + "/libQ.so");
}

TEST(Differential, julia_shaped_runpath_dlopen_from_library) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.lib("lib/libjulia.so.1", {.soname = "libjulia.so.1", .runpath = "$ORIGIN:$ORIGIN/julia", .helper = true});
    t.helper_name = "libjulia.so.1";
    t.exe("bin/prog", {.needs = {"lib/libjulia.so.1"}, .runpath = "$ORIGIN/../lib"});
    Capture r = compare(t, "bin/prog", {.ops = {"l:libopenlibm.so", "o:libnothere.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("bin") + "/../lib/julia/libopenlibm.so");
}

TEST(Differential, executable_runpath_applies_to_its_own_dlopen) {
    Tree t;
    t.lib("run/libRq.so", so());
    t.exe("dlo", {.runpath = t.abs("run")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libRq.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], t.abs("run") + "/libRq.so");
}

TEST(Differential, dependency_of_dlopened_object_walks_its_loader_chain) {
    Tree t;
    t.lib("z/libZ.so", so("libZ.so"));
    t.lib("y/libY.so", {.soname = "libY.so", .needs = {"z/libZ.so"}});
    t.lib("x/libX.so", {.soname = "libX.so", .needs = {"y/libY.so"}, .rpath = t.abs("y") + ":" + t.abs("z")});
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:" + t.abs("x/libX.so")}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_TRUE(any_line(r.search, "find library=libZ.so"));
}

TEST(Differential, second_file_with_same_soname_is_a_new_object) {
    Tree t;
    t.lib("a/libS.so", so("libsame.so.1"));
    t.lib("b/libS.so", so("libsame.so.1"));
    t.exe("dlo", {});
    Capture r = compare(t, "./dlo", {.ops = {"o:" + t.abs("a/libS.so"), "o:" + t.abs("b/libS.so"), "o:libsame.so.1"}});
    ASSERT_EQ(r.results.size(), 3u);
    EXPECT_NE(r.results[0], r.results[1]);
    EXPECT_EQ(r.results[2], r.results[0]);
}

TEST(Differential, empty_and_relative_rpath_elements_from_the_linker) {
    Tree t;
    t.lib("rel/libRel.so", so());
    t.exe("dlo", {.rpath = ":rel:./rel:" + t.abs("missing")});
    Capture r = compare(t, "./dlo", {.ops = {"o:libRel.so", "o:libnothere.so"}});
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0], "rel/libRel.so");
}

// Found by the generator (tests/differential/generator.cc).  ld.so formats a
// failed startup with its own __strerror_r (elf/dl-minimal.c), which knows
// six codes and prints "Error N" for the rest: here ENOTDIR, left by the
// RUNPATH element that is a file, with NODEFLIB keeping the system
// directories from setting ENOENT again.
TEST(Differential, startup_error_uses_ld_so_own_strerror) {
    Tree t;
    t.write("afile", "not a directory");
    t.exe("main", {.runpath = t.abs("afile"), .driver = false, .flags = {"-Wl,-z,nodefaultlib"}});
    Capture r = compare(t, "./main");
    // (libc.so.6, or libdl.so.2 where glibc before 2.34 has it needed first)
    EXPECT_TRUE(any_line(r.errors, ": cannot open shared object file: Error 20"));
}

// Found by the generator.  open_verify sets errno to 0 once a candidate is
// open, so a later lookup that tries no file at all (no list, a cache miss,
// NODEFLIB) fails with errno 0: no strerror text after the message.
TEST(Differential, errno_cleared_when_a_file_is_accepted) {
    Tree t;
    t.lib("gone/libgone.so", so("libgone.so"));
    t.lib("d0/libB.so", {.soname = "libB.so", .needs = {"gone/libgone.so"}, .flags = {"-Wl,-z,nodefaultlib"}});
    t.lib("d0/libA.so", {.soname = "libA.so", .needs = {"d0/libB.so"}, .runpath = "$ORIGIN"});
    ASSERT_EQ(sh("rm " + quote(t.abs("gone/libgone.so"))), 0);
    t.exe("main", {.needs = {"d0/libA.so"}, .runpath = t.abs("d0"), .driver = false});
    Capture r = compare(t, "./main");
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_TRUE(r.errors[0].ends_with("libgone.so: cannot open shared object file")) << r.errors[0];
}

// Found by the generator.  ld.so's errno outlives startup: rtld's
// access("/etc/ld.so.preload") fails with ENOENT before the dependency walk,
// which puts that value back when it ends with errno 0.  A later dlopen that
// tries no file (a NODEFLIB caller without lists, a cache miss) reports it.
TEST(Differential, startup_errno_reaches_a_dlopen_that_tries_nothing) {
    Tree t;
    t.lib("h/libhelper.so", {.soname = "libhelper.so", .helper = true, .flags = {"-Wl,-z,nodefaultlib"}});
    t.exe("dlo", {.needs = {"h/libhelper.so"}, .runpath = t.abs("h")});
    Capture r = compare(t, "./dlo", {.ops = {"l:libnothere.so"}});
    EXPECT_TRUE(any_line(r.errors, "libnothere.so: cannot open shared object file: No such file or directory"));
}
