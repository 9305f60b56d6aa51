// ldsearch tree and --json against the real loader: the set of files the
// tree resolves (and the names it marks as missing) must be what the loader
// maps under LD_TRACE_LOADED_OBJECTS=1 -- on layouts where libtree and
// lddtree are known to be wrong, and on every program in /usr/bin.  Every
// JSON document is checked against docs/ldsearch.schema.json.
#include "../support/test_machine.h"
#include "fixture_cc.h"
#include "harness.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <string.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <set>
#include <sstream>

using namespace ldshim::difftest;
namespace testmachine = ldshim::testmachine;
using nlohmann::json;

namespace {

const std::string kLdsearch = LDSEARCH_PATH;
const std::string kSchema = SCHEMA_PATH;

struct Resolved {
    std::set<std::string> paths;
    std::set<std::string> missing;
    bool operator==(const Resolved&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Resolved& r) {
    for (const auto& p : r.paths) os << "  " << p << "\n";
    for (const auto& m : r.missing) os << "  " << m << " => not found\n";
    return os;
}

// What the loader maps: "NAME => PATH (0x..)", "PATH (0x..)", "NAME => not found".
Resolved real_resolved(const std::string& dir, const std::string& prog, const std::string& scratch) {
    std::string out = scratch + "/trace.out";
    sh("cd " + quote(dir) + " && env LD_TRACE_LOADED_OBJECTS=1 " + quote(prog) + " > " + quote(out) + " 2>/dev/null");
    Resolved r;
    for (const auto& line : read_lines(out)) {
        std::string l =
            line.substr(line.find_first_not_of(" \t") == std::string::npos ? 0 : line.find_first_not_of(" \t"));
        auto arrow = l.find(" => ");
        if (arrow != std::string::npos) {
            std::string rest = l.substr(arrow + 4);
            if (rest == "not found")
                r.missing.insert(l.substr(0, arrow));
            else
                r.paths.insert(rest.substr(0, rest.find(" (0x")));
        } else if (!l.empty() && l[0] == '/') {
            r.paths.insert(l.substr(0, l.find(" (0x")));
        }
    }
    return r;
}

void collect(const json& n, Resolved& r, bool root) {
    if (!root) {
        if (n["how"] == "not_found")
            r.missing.insert(n["name"].get<std::string>());
        else if (!n["path"].is_null())
            r.paths.insert(n["path"].get<std::string>());
    }
    for (const auto& c : n["children"]) collect(c, r, false);
}

// Validates a document with python3-jsonschema; returns "" or the complaint.
std::string schema_problem(const std::string& doc_path) {
    std::string out = doc_path + ".schema";
    // Debian's python3 (scripts/setup.sh installs python3-jsonschema for it),
    // whatever else PATH offers first.
    std::string py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    int rc = sh(py +
                " -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                "json.load(open(sys.argv[2])))' " +
                quote(doc_path) + " " + quote(kSchema) + " > " + quote(out) + " 2>&1");
    return rc == 0 ? "" : read_file(out);
}

struct TreeRun {
    int status = 0;
    json doc;
    std::string text;
};
TreeRun tree(const std::string& dir, const std::string& prog, const std::string& scratch,
             const std::string& extra = "") {
    TreeRun t;
    std::string jpath = scratch + "/tree.json";
    t.status = sh("cd " + quote(dir) + " && " + quote(kLdsearch) + " tree --json " + extra + " " + quote(prog) + " > " +
                  quote(jpath) + " 2>/dev/null");
    t.doc = json::parse(read_file(jpath), nullptr, false);
    EXPECT_EQ(schema_problem(jpath), "") << prog;
    sh("cd " + quote(dir) + " && NO_COLOR=1 " + quote(kLdsearch) + " tree " + extra + " " + quote(prog) + " > " +
       quote(scratch + "/tree.txt") + " 2>&1");
    t.text = read_file(scratch + "/tree.txt");
    return t;
}

Resolved tree_resolved(const TreeRun& t) {
    Resolved r;
    if (t.doc.is_object() && t.doc.contains("tree")) collect(t.doc["tree"], r, true);
    r.paths.erase("linux-vdso.so.1");
    return r;
}

void expect_same_as_loader(Tree& t, const std::string& prog, TreeRun* out = nullptr) {
    TreeRun run = tree(t.root(), prog, t.root());
    Resolved real = real_resolved(t.root(), prog, t.root());
    real.paths.erase("linux-vdso.so.1");
    EXPECT_EQ(tree_resolved(run), real) << "tree:\n" << run.text << "loader:\n" << real;
    if (out) *out = run;
}

LibSpec so(const std::string& soname = "") { return {.soname = soname}; }

}  // namespace

TEST(Tree, glibc_hwcaps_subdirectory_is_where_the_library_comes_from) {
    Tree t;
    t.lib("d/glibc-hwcaps/x86-64-v2/libH.so", so("libH.so"));
    t.lib("d/libH.so", so("libH.so"));
    t.exe("main", {.needs = {"d/libH.so"}, .rpath = t.abs("d"), .driver = false});
    TreeRun run;
    expect_same_as_loader(t, "./main", &run);
    // glibc-hwcaps subdirectories arrived in glibc 2.33 (the roots suite runs
    // this under 2.31 too), named for x86-64, never for aarch64.
    bool hwcaps = ::strverscmp(gnu_get_libc_version(), "2.33") >= 0 && testmachine::has_hwcaps_names();
    EXPECT_NE(run.text.find(hwcaps ? "glibc-hwcaps/x86-64-v2/libH.so [RPATH of the program]"
                                   : "d/libH.so [RPATH of "
                                     "the program]"),
              std::string::npos)
        << run.text;
}

TEST(Tree, dollar_lib_expands_as_the_loader_does) {
    Tree t;
    const std::string triplet(testmachine::kThis.triplet);
    t.lib(triplet + "/libL.so", so("libL.so"));
    t.exe("main", {.needs = {triplet + "/libL.so"}, .rpath = "$ORIGIN/$LIB", .driver = false});
    expect_same_as_loader(t, "./main");
}

TEST(Tree, soname_match_is_already_loaded_not_missing) {
    Tree t;
    // libA is needed by path-less SONAME "libS.so.1" from libB, but was
    // loaded first under its file name through the program's DT_NEEDED.
    t.lib("d/libS.so.1.2", so("libS.so.1"));
    t.lib("d/libB.so", {.soname = "libB.so", .flags = {"-L" + t.abs("d"), "-l:libS.so.1.2"}});
    t.symlink("libS.so.1.2", "d/libS.so.1");
    t.exe("main", {.needs = {"d/libS.so.1.2", "d/libB.so"}, .rpath = t.abs("d"), .driver = false});
    TreeRun run;
    expect_same_as_loader(t, "./main", &run);
    EXPECT_EQ(run.status, 0) << run.text;
}

TEST(Tree, executable_runpath_is_not_inherited_so_the_dependency_is_missing) {
    Tree t;
    t.lib("r/libC.so", so("libC.so"));
    t.lib("r/libB.so", {.soname = "libB.so", .needs = {"r/libC.so"}});
    t.exe("main", {.needs = {"r/libB.so"}, .runpath = t.abs("r"), .driver = false});
    TreeRun run;
    expect_same_as_loader(t, "./main", &run);
    EXPECT_EQ(run.status, 1) << "a missing library is exit status 1";
    EXPECT_NE(run.text.find("libC.so not found"), std::string::npos) << run.text;
    EXPECT_NE(run.text.find("libB.so => " + t.abs("r") + "/libB.so [RUNPATH of the program]"), std::string::npos)
        << run.text;
}

TEST(Tree, ld_library_path_and_the_rpath_of_a_library_are_named) {
    Tree t;
    t.lib("e/libE.so", so("libE.so"));
    t.lib("f/libF.so", so("libF.so"));
    t.lib("d/libD.so", {.soname = "libD.so", .needs = {"f/libF.so"}, .rpath = t.abs("f")});
    t.exe("main", {.needs = {"d/libD.so", "e/libE.so"}, .rpath = t.abs("d"), .driver = false});
    TreeRun run;
    std::string scratch = t.root();
    run = tree(t.root(), "./main", scratch, "--env LD_LIBRARY_PATH=" + t.abs("e"));
    EXPECT_NE(run.text.find("libE.so => " + t.abs("e") + "/libE.so [LD_LIBRARY_PATH]"), std::string::npos) << run.text;
    EXPECT_NE(run.text.find("libF.so => " + t.abs("f") + "/libF.so [RPATH of " + t.abs("d") + "/libD.so]"),
              std::string::npos)
        << run.text;
}

TEST(Tree, colours_only_on_a_terminal_and_never_with_NO_COLOR) {
    Tree t;
    t.exe("main", {.driver = false});
    std::string ld = quote(kLdsearch), root = quote(t.root());
    // script(1) gives the command a terminal.
    sh("cd " + root + " && script -qec '" + kLdsearch + " tree ./main' /dev/null > tty.out 2>&1");
    sh("cd " + root + " && NO_COLOR=1 script -qec '" + kLdsearch + " tree ./main' /dev/null > nocolor.out 2>&1");
    sh("cd " + root + " && " + ld + " tree ./main > pipe.out 2>&1");
    sh("cd " + root + " && " + ld + " tree --color=always ./main > always.out 2>&1");
    EXPECT_NE(read_file(t.abs("tty.out")).find('\033'), std::string::npos) << "colours on a terminal";
    EXPECT_EQ(read_file(t.abs("nocolor.out")).find('\033'), std::string::npos) << "NO_COLOR honoured";
    EXPECT_EQ(read_file(t.abs("pipe.out")).find('\033'), std::string::npos) << "plain text into a pipe";
    EXPECT_NE(read_file(t.abs("always.out")).find('\033'), std::string::npos);
    EXPECT_EQ(sh(ld + " tree --color=sometimes ./main > /dev/null 2>&1"), 2);
}

TEST(Tree, json_of_every_mode_follows_the_schema) {
    Tree t;
    t.lib("d/libD.so", so("libD.so"));
    t.exe("main", {.needs = {"d/libD.so"}, .rpath = t.abs("d")});
    std::string ld = quote(kLdsearch);
    struct Case {
        std::string args;
        int status;
    } cases[] = {
        {"./main", 0},
        {"--dlopen libD.so --dlopen-noload libnope.so --dlopen libnope.so --dlmopen libD.so ./main", 1},
        {"tree ./main", 0},
        {"--env LD_PRELOAD=libnothere.so ./main", 0},
    };
    int k = 0;
    for (const auto& c : cases) {
        std::string args = c.args;
        std::string doc = t.abs("doc" + std::to_string(k++) + ".json");
        bool tree_mode = args.rfind("tree ", 0) == 0;
        std::string cmd =
            "cd " + quote(t.root()) + " && " + ld + (tree_mode ? " tree --json " + args.substr(5) : " --json " + args);
        EXPECT_EQ(sh(cmd + " > " + quote(doc) + " 2>/dev/null"), c.status) << args;
        EXPECT_EQ(schema_problem(doc), "") << args << "\n" << read_file(doc);
        json j = json::parse(read_file(doc), nullptr, false);
        ASSERT_TRUE(j.is_object()) << read_file(doc);
        EXPECT_EQ(j["exit_status"], c.status);
    }
    // The search lines in JSON are the text mode's lines.
    sh("cd " + quote(t.root()) + " && " + ld + " ./main > text.out && " + ld + " --json ./main > j.json");
    json j = json::parse(read_file(t.abs("j.json")));
    std::string lines;
    for (const auto& s : j["searches"])
        for (const auto& l : s["lines"]) lines += l.get<std::string>() + "\n";
    EXPECT_EQ(lines, read_file(t.abs("text.out")));
}

TEST(Tree, every_usr_bin_program_resolves_the_files_the_loader_maps) {
    Tree t;
    // Set-id programs start in secure mode with a different output; the
    // system-programs suite covers them.
    std::vector<std::string> programs = usr_bin_programs(true);
    ASSERT_GT(programs.size(), 50u);
    std::size_t same = 0;
    std::vector<std::string> diffs;
    for (const auto& p : programs) {
        std::string jpath = t.abs("p.json");
        sh(quote(kLdsearch) + " tree --json " + quote(p) + " > " + quote(jpath) + " 2>/dev/null");
        TreeRun run;
        run.doc = json::parse(read_file(jpath), nullptr, false);
        Resolved mine = tree_resolved(run);
        Resolved real = real_resolved("/", p, t.root());
        real.paths.erase("linux-vdso.so.1");
        if (mine == real)
            ++same;
        else if (diffs.size() < 5) {
            std::ostringstream os;
            os << p << "\n tree:\n" << mine << " loader:\n" << real;
            diffs.push_back(os.str());
        }
    }
    std::printf("[ TREE     ] %zu programs in /usr/bin, %zu resolve identically, %zu differ\n", programs.size(), same,
                programs.size() - same);
    EXPECT_EQ(same, programs.size());
    for (const auto& d : diffs) ADD_FAILURE() << d;
}

namespace {

struct WhyRun {
    int status = 0;
    json doc;
    std::string text;
};
// ldsearch why, as text and as JSON (checked against the schema).
WhyRun why(const Tree& t, const std::string& args) {
    WhyRun w;
    std::string base = "cd " + quote(t.root()) + " && " + quote(kLdsearch) + " why ";
    w.status = sh(base + args + " > why.txt 2>&1");
    w.text = read_file(t.abs("why.txt"));
    EXPECT_EQ(sh(base + "--json " + args + " > why.json 2>/dev/null"), w.status);
    EXPECT_EQ(schema_problem(t.abs("why.json")), "") << read_file(t.abs("why.json"));
    w.doc = json::parse(read_file(t.abs("why.json")), nullptr, false);
    return w;
}
bool says(const WhyRun& w, const std::string& where, const std::string& reason) {
    for (const auto& it : w.doc["items"])
        if (it["where"].get<std::string>().find(where) != std::string::npos &&
            it["reason"].get<std::string>().find(reason) != std::string::npos)
            return true;
    return false;
}

}  // namespace

TEST(Why, runpath_of_the_program_is_not_inherited) {
    Tree t;
    t.lib("r/libC.so", so("libC.so"));
    t.lib("r/libB.so", {.soname = "libB.so", .needs = {"r/libC.so"}});
    t.exe("main", {.needs = {"r/libB.so"}, .runpath = t.abs("r"), .driver = false});
    WhyRun w = why(t, "libC.so ./main");
    EXPECT_EQ(w.status, 1) << w.text;
    EXPECT_NE(t.real("./main", {}).status, 0) << "the loader fails too";
    EXPECT_TRUE(says(w, "RUNPATH of ./main", "not inherited")) << w.text;
    EXPECT_NE(w.text.find("needed by " + t.abs("r") + "/libB.so, at startup"), std::string::npos) << w.text;
    EXPECT_NE(w.text.find("verdict: libC.so: not found"), std::string::npos) << w.text;
}

TEST(Why, a_runpath_turns_off_the_rpath_chain) {
    Tree t;
    t.lib("a/libC.so", so("libC.so"));
    t.mkdir("empty");
    t.lib("b/libB.so", {.soname = "libB.so", .needs = {"a/libC.so"}, .runpath = t.abs("empty")});
    t.exe("main", {.needs = {"b/libB.so"}, .rpath = t.abs("a") + ":" + t.abs("b"), .driver = false});
    WhyRun w = why(t, "libC.so ./main");
    EXPECT_EQ(w.status, 1) << w.text;
    EXPECT_NE(t.real("./main", {}).status, 0);
    EXPECT_TRUE(says(w, "RPATH of ./main", "turns off every RPATH")) << w.text;
    EXPECT_TRUE(says(w, t.abs("empty") + "/libC.so", "no such file")) << w.text;
}

TEST(Why, wrong_class_missing_directory_and_the_file_that_was_taken) {
    Tree t;
    t.lib32("d32/libW.so");
    t.lib("dgood/libW.so", so());
    t.exe("dlo", {.rpath = t.abs("gone") + ":" + t.abs("d32") + ":" + t.abs("dgood")});
    WhyRun w = why(t, "libW.so ./dlo");
    EXPECT_EQ(w.status, 0) << w.text;
    EXPECT_TRUE(says(w, t.abs("d32") + "/libW.so", "wrong ELF class")) << w.text;
    EXPECT_TRUE(says(w, t.abs("gone"), "does not exist")) << w.text;
    EXPECT_TRUE(says(w, t.abs("dgood") + "/libW.so", "found")) << w.text;
    Capture real = t.real("./dlo", {"o:libW.so"});
    ASSERT_EQ(real.results.size(), 1u);
    EXPECT_NE(w.doc["verdict"].get<std::string>().find(real.results[0]), std::string::npos) << w.text;
}

TEST(Why, nodeflib_keeps_the_cache_and_system_directories_out) {
    Tree t;
    t.exe("main", {.driver = false, .flags = {"-pie", "-fPIE"}});
    t.set_flags1("main", 0x800);
    WhyRun w = why(t, "libz.so.1 ./main");
    EXPECT_EQ(w.status, 1) << w.text;
    EXPECT_TRUE(says(w, "system directories", "DF_1_NODEFLIB")) << w.text;
}

TEST(Why, secure_mode_drops_an_origin_that_is_not_at_the_start) {
    Tree t;
    t.exe("main", {.rpath = "/opt/$ORIGIN/lib:$ORIGIN/lib", .driver = false});
    WhyRun w = why(t, "--secure libnothere.so ./main");
    EXPECT_EQ(w.status, 1) << w.text;
    EXPECT_TRUE(says(w, "/opt/$ORIGIN/lib", "secure mode")) << w.text;
    EXPECT_TRUE(says(w, "secure mode", "LD_LIBRARY_PATH is ignored")) << w.text;
}

TEST(Why, a_name_with_a_slash_is_not_searched) {
    Tree t;
    t.lib("d/libS.so", so());
    t.exe("main", {.driver = false});
    WhyRun w = why(t, "./d/libS.so ./main");
    EXPECT_EQ(w.status, 0) << w.text;
    EXPECT_TRUE(says(w, "./d/libS.so", "contains a slash")) << w.text;
    EXPECT_EQ(sh(quote(kLdsearch) + " why > /dev/null 2>&1"), 2) << "NAME and PROGRAM are required";
    EXPECT_EQ(
        sh("cd " + quote(t.root()) + " && " + quote(kLdsearch) + " why --dlopen x libS.so ./main > /dev/null 2>&1"), 2);
}

// Two copies of one library under one SONAME, both dlopen'ed by path: the
// loader takes a dlopen's caller from its return address, so a caller named
// by that SONAME could be either; ldsearch refuses the name instead of
// searching the first copy's chain, and a path picks the copy.
TEST(Why, a_caller_named_by_a_soname_two_loaded_copies_share_is_refused_and_a_path_picks_one) {
    Tree t;
    t.lib("c/libC.so", so("libC.so"));
    t.lib("a/libC.so", {.soname = "libC.so", .rpath = "$ORIGIN/../d/e"});
    t.lib("d/e/libZ.so", so("libZ.so"));
    t.exe("main", {.rpath = t.abs("a") + ":" + t.abs("c") + ":" + t.abs("d/e"), .driver = false});
    std::string base =
        "cd " + quote(t.root()) + " && " + quote(kLdsearch) + " --dlopen ./c/libC.so --dlopen ./a/libC.so ";
    EXPECT_EQ(sh(base + "--from libC.so --dlopen libZ.so ./main > soname.out 2>&1"), 2);
    std::string refused = read_file(t.abs("soname.out"));
    EXPECT_NE(refused.find("--from libC.so: 2 loaded objects answer to this name (./c/libC.so, ./a/libC.so)"),
              std::string::npos)
        << refused;
    EXPECT_EQ(sh(base + "--from ./a/libC.so --dlopen libZ.so ./main > path.out 2>&1"), 0);
    std::string picked = read_file(t.abs("path.out"));
    EXPECT_NE(picked.find(t.root() + "/./a/../d/e\t\t(RPATH from file ./a/libC.so)"), std::string::npos) << picked;
    EXPECT_NE(picked.find(t.root() + "/./a/../d/e/libZ.so\n"), std::string::npos)
        << "found through the copy's own RPATH\n"
        << picked;
    EXPECT_EQ(sh("cd " + quote(t.root()) + " && " + quote(kLdsearch) +
                 " why libZ.so --dlopen ./c/libC.so --dlopen ./a/libC.so --from libC.so ./main > /dev/null 2>&1"),
              2);
}

// Modelling another machine: --hwcaps, --platform, --lib.
TEST(Machine, hwcaps_option_replaces_the_glibc_hwcaps_subdirectories) {
    Tree t;
    t.mkdir("d");
    t.exe("main", {.rpath = t.abs("d"), .driver = false});
    std::string base = "cd " + quote(t.root()) + " && " + quote(kLdsearch) + " --dlopen libnothere.so ";
    sh(base + "--hwcaps x86-64-v2 ./main > v2.out 2>&1");
    sh(base + "--hwcaps none ./main > none.out 2>&1");
    std::string v2 = read_file(t.abs("v2.out")), none = read_file(t.abs("none.out"));
    EXPECT_NE(v2.find(t.abs("d") + "/glibc-hwcaps/x86-64-v2:"), std::string::npos) << v2;
    EXPECT_EQ(v2.find("x86-64-v3"), std::string::npos) << v2;
    EXPECT_EQ(none.find("glibc-hwcaps"), std::string::npos) << none;
    EXPECT_EQ(sh(base + "--hwcaps a/b ./main > /dev/null 2>&1"), 2);
}

TEST(Machine, lib_and_platform_options_change_the_tokens) {
    Tree t;
    t.lib("lib64/libL.so", so("libL.so"));
    t.lib("myplat/libP.so", so("libP.so"));
    t.exe("main",
          {.needs = {"lib64/libL.so", "myplat/libP.so"}, .rpath = "$ORIGIN/$LIB:$ORIGIN/$PLATFORM", .driver = false});
    std::string base = "cd " + quote(t.root()) + " && " + quote(kLdsearch) + " tree ";
    EXPECT_EQ(sh(base + "./main > default.out 2>&1"), 1) << "the running loader's $LIB and $PLATFORM miss both";
    EXPECT_EQ(sh(base + "--lib lib64 --platform myplat ./main > modelled.out 2>&1"), 0)
        << read_file(t.abs("modelled.out"));
    std::string out = read_file(t.abs("modelled.out"));
    EXPECT_NE(out.find("libL.so => " + t.abs("lib64") + "/libL.so [RPATH of the program]"), std::string::npos) << out;
    EXPECT_NE(out.find("libP.so => " + t.abs("myplat") + "/libP.so [RPATH of the program]"), std::string::npos) << out;
}

// --root against the real loader run in a chroot of the same tree.
TEST(Root, sysroot_search_matches_the_loader_in_a_chroot_and_never_leaves_it) {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: chroot(2) needs root";
    const std::string ldconfig = testmachine::ldconfig();
    if (ldconfig.empty()) GTEST_SKIP() << "SKIPPED: no ldconfig for this machine (set LDSHIM_TEST_LDCONFIG)";
    Tree t;
    std::string R = t.abs("root");
    const std::string loader = testmachine::loader(), libdir = testmachine::lib_dir();
    for (const std::string& d :
         {"root" + loader.substr(0, loader.rfind('/')), "root/" + libdir, std::string("root/usr/bin"),
          std::string("root/usr/lib/app"), std::string("root/opt/cached"), std::string("root/opt/linked"),
          std::string("root/etc"), std::string("root/var/cache/ldconfig"), std::string("root/tmp"),
          std::string("root/proc")})
        t.mkdir(d);
    ASSERT_EQ(sh("cp -L " + loader + " " + quote(R + loader) + " && cp -L /" + libdir + "/libc.so.6 " +
                 quote(R + "/" + libdir + "/")),
              0);
    t.lib("root/opt/cached/libB.so", so("libB.so"));
    t.lib("root/usr/lib/app/libA.so", {.soname = "libA.so", .needs = {"root/opt/cached/libB.so"}});
    t.lib("root/opt/linked/libL.so", so("libL.so"));
    // An absolute link: inside the root it names root/opt/linked.
    t.symlink("/opt/linked/libL.so", "root/usr/lib/app/libL.so");
    // A decoy just above the root, where an escaping "$ORIGIN/../../.." would land.
    t.lib("libE.so", so("libE.so"));
    t.lib("root/" + libdir + "/libE.so", so("libE.so"));
    t.exe("root/usr/bin/prog", {.needs = {"root/usr/lib/app/libA.so", "root/opt/linked/libL.so", "libE.so"},
                                // A file on the way ("ld.so.conf/..") is
                                // ENOTDIR to the kernel, not a step back.
                                .rpath = "/etc/ld.so.conf/../../opt/linked:$ORIGIN/../lib/app:$ORIGIN/../../..",
                                .driver = false});
    t.write("root/etc/ld.so.conf", "/opt/cached\n");
    ASSERT_EQ(sh(ldconfig + " -r " + quote(R) + " 2>/dev/null"), 0) << "ldconfig -r builds the root's own cache";
    std::string helper = t.abs("chroot_run");
    ASSERT_EQ(sh(FIXTURE_CC " -static -o " + quote(helper) + " " + quote(std::string(FIXTURE_DIR) + "/chroot_run.c")),
              0);
    // The loader finds the program's $ORIGIN through /proc/self/exe: give the
    // chroot a /proc, in a private mount namespace that ends with the run.
    int rc = sh("unshare -m sh -c " +
                quote("mount --bind /proc " + quote(R + "/proc") + " && " + quote(helper) + " " + quote(R) +
                      " /tmp/ld /usr/bin/prog") +
                " > " + quote(t.abs("run.out")) + " 2>&1");
    if (rc == 126 || read_file(t.abs("run.out")).find("unshare") != std::string::npos)
        GTEST_SKIP() << "SKIPPED: no mount namespace here: " << read_file(t.abs("run.out"));
    ASSERT_EQ(rc, 0) << read_file(t.abs("run.out"));
    std::vector<std::string> real;
    for (const auto& f : read_lines_glob(R + "/tmp/ld.*"))
        for (auto l : read_lines(f)) {
            auto tab = l.find(":\t");
            if (tab != std::string::npos) l = l.substr(tab + 2);
            if (is_search_line(l)) real.push_back(l);
        }
    ASSERT_FALSE(real.empty());
    ASSERT_EQ(sh(quote(kLdsearch) + " --root " + quote(R) + " /usr/bin/prog > " + quote(t.abs("emu.out")) + " 2>&1"), 0)
        << read_file(t.abs("emu.out"));
    std::vector<std::string> emu = read_lines(t.abs("emu.out"));
    EXPECT_EQ(real, emu) << unified_diff(real, emu, "loader in chroot", "ldsearch --root");
    // Started from a directory inside the root, a relative PROGRAM (and every
    // relative name) starts there, as `chroot R sh -c 'cd /usr && bin/prog'`.
    ASSERT_EQ(sh("cd " + quote(R + "/usr") + " && " + quote(kLdsearch) + " --root " + quote(R) + " ./bin/prog > " +
                 quote(t.abs("rel.out")) + " 2>&1"),
              0)
        << read_file(t.abs("rel.out"));
    std::vector<std::string> relative;
    for (auto l : emu) {
        if (auto at = l.find("from file /usr/bin/prog)"); at != std::string::npos) l.replace(at + 10, 13, "./bin/prog");
        relative.push_back(l);
    }
    auto rel = read_lines(t.abs("rel.out"));
    EXPECT_EQ(relative, rel) << unified_diff(relative, rel, "from /", "from /usr, ./bin/prog");
    sh("cd " + quote(R) + " && NO_COLOR=1 " + quote(kLdsearch) + " tree --root " + quote(R) + " /usr/bin/prog > " +
       quote(t.abs("tree.out")) + " 2>&1");
    std::string tree_text = read_file(t.abs("tree.out"));
    EXPECT_NE(tree_text.find("libE.so => /" + libdir + "/libE.so"), std::string::npos) << tree_text;
    EXPECT_NE(tree_text.find("libB.so => /opt/cached/libB.so [ld.so.cache]"), std::string::npos) << tree_text;
    EXPECT_EQ(tree_text.find(t.root()), std::string::npos) << "paths are the root's own:\n" << tree_text;
}

// ldsearch --diff and --replay.
namespace {
// "N searches in M process(es): all identical" for a program whose own
// searches are `n`: before glibc 2.34 every one of the M processes also
// looks up libdl.so.2 (the fixtures link -ldl).
std::string identical(int n, int processes) {
    if (::strverscmp(gnu_get_libc_version(), "2.34") < 0) n += processes;
    return std::to_string(n) + " searches in " + std::to_string(processes) +
           (processes == 1 ? " process" : " processes") + ": all identical";
}

struct DiffRun {
    int status;
    std::string out;
};
DiffRun diff_run(const Tree& t, const std::string& args) {
    DiffRun d;
    d.status = sh("cd " + quote(t.root()) + " && " + quote(kLdsearch) + " " + args + " > diff.out 2>&1");
    d.out = read_file(t.abs("diff.out"));
    return d;
}
}  // namespace

TEST(Diff, a_dlopen_through_an_interposer_is_replayed_from_the_caller_the_loader_saw) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so("libopenlibm.so"));
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    std::string ip = t.abs("interposer.so");
    ASSERT_EQ(sh(FIXTURE_CC " -O0 -shared -fPIC -o " + quote(ip) + " " + quote(INTERPOSER_SRC) + " -ldl"), 0);
    // Through the interposer the loader attributes the dlopen to it and the
    // search fails; ldsearch must replay exactly that.
    DiffRun d = diff_run(t, "--diff -- env LD_PRELOAD=" + ip + " ./bin/prog l:libopenlibm.so o:libz.so.1");
    EXPECT_EQ(d.status, 0) << d.out;
    EXPECT_NE(d.out.find(identical(5, 1)), std::string::npos) << d.out;
    EXPECT_EQ(d.out.find("skipped"), std::string::npos) << "the dlopens attributed to the interposer are replayed\n"
                                                        << d.out;
    // The program's own output is not mixed into the capture.
    DiffRun plain = diff_run(t, "--diff -- ./bin/prog l:libopenlibm.so");
    EXPECT_EQ(plain.status, 0) << plain.out;
    EXPECT_NE(plain.out.find("RESULT " + t.abs("bin/../lib/julia/libopenlibm.so")), std::string::npos)
        << "the program's own output is untouched\n"
        << plain.out;
}

TEST(Diff, several_processes_and_a_difference_is_a_unified_diff) {
    Tree t;
    t.lib("d/libD.so", so("libD.so"));
    t.exe("dlo", {.rpath = t.abs("d")});
    DiffRun d = diff_run(t, "--diff -- sh -c './dlo o:libD.so; ./dlo o:libnothere.so; ls > /dev/null'");
    EXPECT_EQ(d.status, 0) << d.out;
    EXPECT_NE(d.out.find("in 4 processes: all identical"), std::string::npos) << d.out;

    // Keep a capture, then make ldsearch see a different world: the replay
    // runs with another LD_LIBRARY_PATH, so the startup searches differ.
    DiffRun k = diff_run(t, "--diff --keep -- ./dlo o:libD.so");
    auto at = k.out.find("capture kept in ");
    ASSERT_NE(at, std::string::npos) << k.out;
    std::string dir = k.out.substr(at + 16, k.out.find('\n', at) - at - 16);
    DiffRun r = diff_run(t, "--replay " + dir + "/ld.*");
    EXPECT_EQ(r.status, 0) << r.out;
    // Without the recorded environments (a log captured by hand), the replay
    // models the process with ldsearch's own.
    t.mkdir("other");
    t.mkdir("logs");
    sh("cp " + dir + "/ld.* " + quote(t.abs("logs")));
    dir = t.abs("logs");
    sh("cd " + quote(t.root()) + " && LD_LIBRARY_PATH=" + quote(t.abs("other")) + " " + quote(kLdsearch) +
       " --replay " + dir + "/ld.* > changed.out 2>&1; echo $? >> changed.out");
    std::string changed = read_file(t.abs("changed.out"));
    EXPECT_NE(changed.find("--- loader: process "), std::string::npos) << changed;
    EXPECT_NE(changed.find("+++ ldsearch"), std::string::npos) << changed;
    EXPECT_NE(changed.find("+ search path=" + t.abs("other")), std::string::npos) << changed;
    EXPECT_NE(changed.find("differ"), std::string::npos) << changed;
    EXPECT_EQ(changed.substr(changed.size() - 2), "1\n") << "exit status 1 on a difference";
    // The same as JSON, checked against the schema.
    sh("cd " + quote(t.root()) + " && LD_LIBRARY_PATH=" + quote(t.abs("other")) + " " + quote(kLdsearch) +
       " --replay --json " + dir + "/ld.* > changed.json 2>/dev/null");
    EXPECT_EQ(schema_problem(t.abs("changed.json")), "") << read_file(t.abs("changed.json"));
    json j = json::parse(read_file(t.abs("changed.json")), nullptr, false);
    ASSERT_TRUE(j.is_object());
    EXPECT_GE(j["different"].get<int>(), 1);
    EXPECT_EQ(j["exit_status"], 1);
    sh("rm -rf " + quote(dir));
}

TEST(Diff, a_line_it_cannot_place_is_named_and_skipped_and_a_text_that_is_no_log_is_an_error) {
    Tree t;
    t.write("bad.1", "     123:\tfind library=libx.so [0]; searching\nthis is not a loader line\n");
    t.write("bad.2", "     123:\t  trying file=/x/libx.so\n     123:\tfile=libx.so [0];  weighed by y [0]\n");
    for (const char* f : {"bad.1", "bad.2"}) {
        DiffRun d = diff_run(t, std::string("--replay ") + f);
        EXPECT_EQ(d.status, 0) << f << "\n" << d.out;
        EXPECT_NE(d.out.find(std::string(f) + ": line "), std::string::npos) << d.out;
        EXPECT_NE(d.out.find(", skipped"), std::string::npos) << d.out;
        EXPECT_NE(d.out.find("2 log lines not understood"), std::string::npos) << d.out;
    }
    t.write("bad.3", std::string("\x7f"
                                 "ELF\x02\x01\x01\0\0\0\0",
                                 11));
    DiffRun d = diff_run(t, "--replay bad.3");
    EXPECT_EQ(d.status, 3) << d.out;
    EXPECT_NE(d.out.find("bad.3: no line of the loader's debug output"), std::string::npos) << d.out;
    EXPECT_NE(d.out.find("not a capture of LD_DEBUG=libs,files"), std::string::npos) << d.out;
    EXPECT_EQ(diff_run(t, "--replay nothere.log").status, 3);
    EXPECT_EQ(diff_run(t, "--diff").status, 2) << "no command";
    EXPECT_EQ(diff_run(t, "--diff -- /nonexistent/program").status, 125);
}

// dlclose writes "destroying link map" (and a symbol binding a
// "(relocation dependency)" line); an object that was unloaded is searched
// again by the next dlopen of its name, in the loader and in the replay.
TEST(Diff, dlclose_and_relocation_dependencies_are_read_and_replayed) {
    Tree t;
    t.write("a.c", "int a_value(void) { return 7; }\n");
    t.write("b.c", "extern int a_value(void);\nint b_value(void) { return a_value() + 1; }\n");
    t.write("m.c",
            "#include <dlfcn.h>\n#include <stdio.h>\n"
            "int main(void) {\n"
            "  void* a = dlopen(\"liba.so\", RTLD_NOW | RTLD_GLOBAL);\n"
            "  void* b = dlopen(\"libb.so\", RTLD_NOW);\n"
            "  if (!a || !b) return 1;\n"
            "  printf(\"%d\\n\", ((int (*)(void))dlsym(b, \"b_value\"))());\n"
            "  dlclose(b);\n  dlclose(a);\n"
            "  a = dlopen(\"liba.so\", RTLD_NOW);\n"
            "  return a ? 0 : 1;\n}\n");
    t.mkdir("d");
    ASSERT_EQ(sh("cd " + quote(t.root()) +
                 " && " FIXTURE_CC " -shared -fPIC -o d/liba.so a.c && " FIXTURE_CC
                 " -shared -fPIC -o d/libb.so b.c && " FIXTURE_CC " -o m m.c -ldl -Wl,--disable-new-dtags -Wl,-rpath," +
                 quote(t.abs("d"))),
              0);
    DiffRun k = diff_run(t, "--diff --keep -- ./m");
    EXPECT_EQ(k.status, 0) << k.out;
    // liba.so is searched twice: before and after the dlclose that unloaded it.
    EXPECT_NE(k.out.find(identical(4, 1)), std::string::npos) << k.out;
    EXPECT_EQ(k.out.find("skipped"), std::string::npos) << k.out;
    auto at = k.out.find("capture kept in ");
    ASSERT_NE(at, std::string::npos) << k.out;
    std::string dir = k.out.substr(at + 16, k.out.find('\n', at) - at - 16);
    std::string log;
    for (const auto& f : read_lines_glob(dir + "/ld.*")) log += read_file(f);
    EXPECT_NE(log.find("destroying link map"), std::string::npos) << log;
    EXPECT_NE(log.find("(relocation dependency)"), std::string::npos) << log;
    sh("rm -rf " + quote(dir));
}

// Launchers (R's, mpirun's daemons, module systems) set LD_LIBRARY_PATH,
// LD_PRELOAD or GLIBC_TUNABLES just before they exec: each process is
// replayed with the environment it started with, not ldsearch's.
TEST(Diff, each_process_is_modelled_with_the_environment_it_started_with) {
    Tree t;
    t.lib("d/libD.so", so("libD.so"));
    t.lib("p/libP.so", so("libP.so"));
    t.exe("dlo", {});
    std::string d = t.abs("d"), p = t.abs("p");
    std::string script = "LD_LIBRARY_PATH=" + d +
                         " ./dlo o:libD.so; LD_PRELOAD='libP.so libmissing.so' LD_LIBRARY_PATH=" + p + ":" + d +
                         " ./dlo o:libnothere.so; exec env GLIBC_TUNABLES=glibc.cpu.hwcap_mask=0 " +
                         "LD_LIBRARY_PATH=" + d + ":" + d + " ./dlo o:libD.so";
    DiffRun k = diff_run(t, "--diff --keep -- sh -c " + quote(script));
    EXPECT_EQ(k.status, 0) << k.out;
    EXPECT_NE(k.out.find(identical(10, 3)), std::string::npos) << k.out;
    EXPECT_EQ(k.out.find("own environment"), std::string::npos) << k.out;
    EXPECT_EQ(k.out.find("skipped"), std::string::npos) << k.out;
    auto at = k.out.find("capture kept in ");
    ASSERT_NE(at, std::string::npos) << k.out;
    std::string dir = k.out.substr(at + 16, k.out.find('\n', at) - at - 16);
    // The same capture without its environment records differs: the
    // environments are what made it identical.
    t.mkdir("logs");
    sh("cp " + dir + "/ld.* " + quote(t.abs("logs")));
    DiffRun bare = diff_run(t, "--replay " + t.abs("logs") + "/ld.*");
    EXPECT_EQ(bare.status, 1) << bare.out;
    EXPECT_NE(bare.out.find("- search path=" + d + "/"), std::string::npos) << bare.out;
    // A record that does not match the log's programs is not used, and says so.
    sh("cp " + dir + "/ld.* " + dir + "/env.* " + quote(t.abs("logs")) + " && for f in " + quote(t.abs("logs")) +
       "/env.*; do head -c 20 $f > $f.cut && mv $f.cut $f; done");
    DiffRun cut = diff_run(t, "--replay --json " + t.abs("logs") + "/ld.*");
    EXPECT_NE(cut.out.find("modelled with ldsearch's own environment"), std::string::npos) << cut.out;
    sh("rm -rf " + quote(dir));
}

// A program the loader cannot start is what people bring to --diff: its
// startup search is compared, and only a failed exec is exit status 125.
TEST(Diff, a_program_the_loader_cannot_start_is_compared_not_refused) {
    Tree t;
    t.lib("d/libgone.so", so("libgone.so"));
    t.exe("dlo", {.needs = {"d/libgone.so"}, .rpath = t.abs("d")});
    sh("rm " + quote(t.abs("d/libgone.so")));
    DiffRun d = diff_run(t, "--diff -- ./dlo");
    EXPECT_EQ(d.status, 0) << d.out;
    EXPECT_NE(d.out.find("libgone.so: cannot open shared object file"), std::string::npos) << d.out;
    EXPECT_NE(d.out.find(identical(1, 1)), std::string::npos) << d.out;
}

// The log does not say that a dlopen was RTLD_NOLOAD; it says that no new
// object was mapped.  Replayed as a plain dlopen, the NOLOAD probe would load
// libA.so and search for its dependency, which the loader did not do, and
// the later real dlopen would then find libA.so loaded and search nothing.
TEST(Diff, an_rtld_noload_dlopen_is_replayed_as_one) {
    Tree t;
    t.lib("d/libB.so", so("libB.so"));
    t.lib("d/libA.so", {.soname = "libA.so", .needs = {"d/libB.so"}});
    t.exe("dlo", {.rpath = t.abs("d")});
    DiffRun d = diff_run(t, "--diff -- ./dlo n:libA.so o:libA.so n:libB.so");
    EXPECT_EQ(d.status, 0) << d.out;
    EXPECT_NE(d.out.find(identical(4, 1)), std::string::npos) << d.out;
}

// The loader names an object dlopen'ed as "$ORIGIN/..." by the expansion,
// which the log states first in its dependencies' "needed by" lines; those
// are the dlopen's, not the start of a program exec'd in the process.
TEST(Diff, the_dependencies_of_an_object_dlopened_by_an_origin_path_are_not_an_exec) {
    Tree t;
    t.lib("d/libB.so", so("libB.so"));
    t.lib("d/libA.so", {.soname = "libA.so", .needs = {"d/libB.so"}, .runpath = "$ORIGIN"});
    t.lib("e/libC.so", so("libC.so"));
    t.exe("dlo", {.rpath = t.abs("e")});
    DiffRun d = diff_run(t, "--diff -- ./dlo 'o:$ORIGIN/d/libA.so' o:libC.so");
    EXPECT_EQ(d.status, 0) << d.out;
    EXPECT_NE(d.out.find(identical(3, 1)), std::string::npos) << d.out;
    EXPECT_EQ(d.out.find("skipped"), std::string::npos) << d.out;
}
