// ldsearch check: each kind of problem on a small tree built here, the JSON
// document against docs/ldsearch.schema.json, and the missing libraries it
// reports for every program in /usr/bin and a sample of the libraries in
// /usr/lib/x86_64-linux-gnu against what the real loader says under
// LD_TRACE_LOADED_OBJECTS=1 (programs) and ld.so --list (libraries).
#include "harness.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>

using namespace ldshim::difftest;
using nlohmann::json;

namespace {

const std::string kLdsearch = LDSEARCH_PATH;
const std::string kSchema = SCHEMA_PATH;
const std::string kLib = "/usr/lib/x86_64-linux-gnu";

struct CheckRun {
    int status = 0;
    json doc;
    std::string text;
};

// `ldsearch check` on `paths` (a shell word list), as JSON and as text;
// `env` goes before it (VAR=VALUE ...).
CheckRun check(const std::string& paths, const std::string& scratch, const std::string& env = "") {
    CheckRun r;
    std::string jpath = scratch + "/check.json";
    r.status =
        sh("env " + env + " " + quote(kLdsearch) + " check --json " + paths + " > " + quote(jpath) + " 2>/dev/null");
    r.doc = json::parse(read_file(jpath), nullptr, false);
    std::string py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    EXPECT_EQ(sh(py +
                 " -c 'import json,sys; import jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                 "json.load(open(sys.argv[2])))' " +
                 quote(jpath) + " " + quote(kSchema) + " > " + quote(jpath + ".schema") + " 2>&1"),
              0)
        << read_file(jpath + ".schema");
    sh("env " + env + " " + quote(kLdsearch) + " check " + paths + " > " + quote(scratch + "/check.txt") + " 2>&1");
    r.text = read_file(scratch + "/check.txt");
    return r;
}

// kind -> "FILE|NAME" for every problem of the document.
std::multimap<std::string, std::string> problems(const json& doc) {
    std::multimap<std::string, std::string> out;
    if (!doc.is_object() || !doc.contains("files")) return out;
    for (const auto& f : doc["files"])
        for (const auto& p : f["problems"])
            out.emplace(p["kind"].get<std::string>(),
                        f["path"].get<std::string>() + "|" + p["name"].get<std::string>());
    return out;
}

bool has(const std::multimap<std::string, std::string>& m, const std::string& kind, const std::string& text) {
    auto [b, e] = m.equal_range(kind);
    for (auto it = b; it != e; ++it)
        if (it->second.find(text) != std::string::npos) return true;
    return false;
}

// The names a check reported missing, by file.
std::map<std::string, std::set<std::string>> missing_by_file(const json& doc) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& f : doc["files"])
        for (const auto& p : f["problems"])
            if (p["kind"] == "missing") out[f["path"].get<std::string>()].insert(p["name"].get<std::string>());
    return out;
}

// The "NAME => not found" lines of the loader's listing, run by `cmd`.
std::set<std::string> loader_missing(const std::string& cmd, const std::string& scratch) {
    std::string out = scratch + "/trace.out";
    sh(cmd + " > " + quote(out) + " 2>/dev/null");
    std::set<std::string> names;
    for (const auto& line : read_lines(out)) {
        auto arrow = line.find(" => not found");
        if (arrow == std::string::npos) continue;
        auto start = line.find_first_not_of(" \t");
        names.insert(line.substr(start, arrow - start));
    }
    return names;
}

LibSpec so(const std::string& soname) { return {.soname = soname}; }

}  // namespace

TEST(Check, reports_every_kind_of_problem) {
    Tree t;
    t.lib("t/lib/libA.so", so("libA.so"));
    t.lib("t/lib/libW.so", so("libW.so"));
    t.lib32("t/lib32/libW.so");
    t.lib("out/libO.so", so("libO.so"));
    t.lib("gone/libG.so", so("libG.so"));
    t.lib("env/libE.so", so("libE.so"));
    t.lib("t/d1/libD.so", so("libD.so"));
    t.lib("t/d2/libD.so", so("libD.so"));
    t.exe("t/bin/app1",
          {.needs = {"t/lib/libA.so", "t/lib/libW.so", "out/libO.so", "gone/libG.so", "env/libE.so", "t/d1/libD.so"},
           .rpath = "$ORIGIN/../lib32:$ORIGIN/../lib:$ORIGIN/../d1:" + t.abs("out") + ":/nonexistent/ldsearch-check",
           .driver = false});
    t.exe("t/bin/app2", {.needs = {"t/d2/libD.so"}, .rpath = "$ORIGIN/../d2", .driver = false});
    t.write("t/README", "not an ELF file\n");
    ASSERT_EQ(::unlink(t.abs("gone/libG.so").c_str()), 0);

    CheckRun r = check(quote(t.abs("t")), t.root(), "LD_LIBRARY_PATH=" + quote(t.abs("env")));
    EXPECT_EQ(r.status, 1) << r.text;
    auto p = problems(r.doc);
    std::string app1 = t.abs("t/bin/app1");
    EXPECT_TRUE(has(p, "missing", app1 + "|libG.so")) << r.text;
    EXPECT_TRUE(has(p, "ld_library_path_only", app1 + "|libE.so")) << r.text;
    EXPECT_TRUE(has(p, "rpath_missing", app1 + "|RPATH /nonexistent/ldsearch-check")) << r.text;
    EXPECT_TRUE(has(p, "rpath_outside", app1 + "|RPATH " + t.abs("out"))) << r.text;
    EXPECT_TRUE(has(p, "wrong_class", "lib32/libW.so")) << r.text;
    EXPECT_FALSE(has(p, "rpath_outside", "$ORIGIN")) << r.text;  // inside the tree
    ASSERT_TRUE(r.doc.contains("duplicates"));
    ASSERT_EQ(r.doc["duplicates"].size(), 1u) << r.text;
    EXPECT_EQ(r.doc["duplicates"][0]["soname"], "libD.so");
    EXPECT_EQ(r.doc["duplicates"][0]["files"].size(), 2u);
    EXPECT_EQ(r.doc["summary"]["programs"], 2);
    EXPECT_EQ(r.doc["summary"]["libraries"], 4);  // libA, libW, and the two libD in t/
    EXPECT_EQ(r.doc["summary"]["foreign"], 1);
    EXPECT_EQ(r.doc["summary"]["not_elf"], 1);
    EXPECT_NE(r.text.find("libG.so not found (needed by " + app1 + ")"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("ldsearch check: 6 files checked"), std::string::npos) << r.text;

    // With the library found through the RPATH, LD_LIBRARY_PATH is no longer the only way.
    CheckRun plain = check(quote(t.abs("t")), t.root(), "-u LD_LIBRARY_PATH");
    auto q = problems(plain.doc);
    EXPECT_TRUE(has(q, "missing", app1 + "|libE.so")) << plain.text;
    EXPECT_FALSE(has(q, "ld_library_path_only", "libE.so")) << plain.text;
}

TEST(Check, clean_tree_exits_zero_and_usage_errors_exit_two) {
    Tree t;
    t.lib("lib/libA.so", so("libA.so"));
    t.exe("bin/app", {.needs = {"lib/libA.so"}, .rpath = "$ORIGIN/../lib", .driver = false});
    CheckRun r = check(quote(t.root()), t.root());
    EXPECT_EQ(r.status, 0) << r.text;
    EXPECT_EQ(r.doc["exit_status"], 0);
    EXPECT_EQ(sh(quote(kLdsearch) + " check > /dev/null 2>&1"), 2);
    EXPECT_EQ(sh(quote(kLdsearch) + " check --bogus " + quote(t.root()) + " > /dev/null 2>&1"), 2);
    EXPECT_EQ(sh(quote(kLdsearch) + " check --jobs 0 " + quote(t.root()) + " > /dev/null 2>&1"), 2);
    EXPECT_EQ(sh(quote(kLdsearch) + " check " + quote(t.abs("no-such-dir")) + " > /dev/null 2>&1"), 3);
    // A symbolic link loop inside the tree is not followed.
    t.symlink(".", "lib/loop");
    EXPECT_EQ(sh("timeout 60 " + quote(kLdsearch) + " check " + quote(t.root()) + " > /dev/null 2>&1"), 0);
}

TEST(Check, missing_libraries_match_the_loader_on_the_system) {
    Tree scratch;
    CheckRun r = check("/usr/bin " + kLib, scratch.root());
    ASSERT_TRUE(r.doc.is_object()) << r.text;
    auto missing = missing_by_file(r.doc);
    std::size_t compared = 0;
    for (const auto& prog : usr_bin_programs(false)) {
        auto real = loader_missing("env LD_TRACE_LOADED_OBJECTS=1 " + quote(prog), scratch.root());
        EXPECT_EQ(missing[prog], real) << prog;
        ++compared;
    }
    EXPECT_GT(compared, 100u);
    // Every third regular *.so* file at the top of the library directory.
    std::size_t n = 0, libs = 0;
    for (const auto& lib : read_lines_glob(kLib + "/*.so*")) {
        struct stat st {};
        if (::lstat(lib.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || n++ % 3 != 0) continue;
        auto real = loader_missing("/lib64/ld-linux-x86-64.so.2 --list " + quote(lib), scratch.root());
        EXPECT_EQ(missing[lib], real) << lib;
        ++libs;
    }
    EXPECT_GT(libs, 25u);  // a minimal root (scripts/roots.sh) has about 100 such files
}
