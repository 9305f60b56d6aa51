// ldsearch check's report (check_report.h).
#include "check_report.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <utility>

using nlohmann::json;

namespace ldsearch {
namespace {

// One file a SONAME resolved to, and the checked files that resolved it.
struct Target {
    std::string path;
    std::vector<std::string> users;
};
using Duplicates = std::map<std::string, std::vector<Target>>;

// SONAMEs that resolved to more than one file (by device and inode), each
// machine's apart: an x86-64 and an aarch64 libc.so.6 are no duplicate.
Duplicates duplicates(const std::vector<CheckedFile>& files) {
    using Key = std::pair<std::string, std::uint16_t>;
    std::map<Key, std::map<std::pair<std::uint64_t, std::uint64_t>, Target>> by_name;
    for (const auto& f : files)
        for (const auto& r : f.resolved) {
            Target& t = by_name[{r.soname, f.machine}][{r.id.dev, r.id.ino}];
            if (t.path.empty()) t.path = r.path;
            if (t.users.empty() || t.users.back() != f.path) t.users.push_back(f.path);
        }
    Duplicates out;
    for (auto& [key, targets] : by_name) {
        if (targets.size() < 2) continue;
        auto& v = out[key.first];
        for (auto& [id, t] : targets) v.push_back(std::move(t));
    }
    return out;
}

struct Summary {
    std::size_t programs = 0, libraries = 0, not_elf = 0, foreign = 0, not_dynamic = 0, unreadable = 0;
    std::size_t problems = 0, with_problems = 0;
};

Summary summarise(const std::vector<CheckedFile>& files) {
    Summary s;
    for (const auto& f : files) {
        switch (f.kind) {
            case CheckedFile::Kind::program: ++s.programs; break;
            case CheckedFile::Kind::library: ++s.libraries; break;
            case CheckedFile::Kind::not_elf: ++s.not_elf; break;
            case CheckedFile::Kind::foreign: ++s.foreign; break;
            case CheckedFile::Kind::not_dynamic: ++s.not_dynamic; break;
            case CheckedFile::Kind::unreadable: ++s.unreadable; break;
        }
        s.problems += f.problems.size();
        s.with_problems += !f.problems.empty();
    }
    return s;
}

std::string problem_text(const CheckProblem& p) {
    if (p.kind == "missing") return p.name + " not found (needed by " + p.needed_by + ")";
    if (p.kind == "ld_library_path_only") return p.name + " found only through LD_LIBRARY_PATH (" + p.detail + ")";
    if (p.kind == "rpath_missing") return p.name + ": no such directory (" + p.detail + ")";
    if (p.kind == "rpath_outside") return p.name + ": outside the checked tree (" + p.detail + ")";
    if (p.kind == "wrong_class") return "skipped " + p.name + " (" + p.detail + ")";
    return "error: " + p.detail;
}

std::string summary_text(const Summary& s, std::size_t dups) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%zu files checked (%zu programs, %zu libraries), %zu skipped (%zu not ELF, %zu other class or "
                  "machine, %zu not dynamic, %zu unreadable): %zu problems in %zu files, %zu SONAMEs resolved to "
                  "different files",
                  s.programs + s.libraries, s.programs, s.libraries,
                  s.not_elf + s.foreign + s.not_dynamic + s.unreadable, s.not_elf, s.foreign, s.not_dynamic,
                  s.unreadable, s.problems, s.with_problems, dups);
    return buf;
}

int print_text(const std::vector<CheckedFile>& files, const Duplicates& dups, const Summary& s, int status) {
    for (const auto& f : files)
        for (const auto& p : f.problems) std::printf("%s: %s\n", f.path.c_str(), problem_text(p).c_str());
    for (const auto& [name, targets] : dups) {
        std::printf("%s: resolved to %zu different files:\n", name.c_str(), targets.size());
        for (const auto& t : targets) {
            std::string more = t.users.size() > 1 ? " and " + std::to_string(t.users.size() - 1) + " more" : "";
            std::printf("  %s (by %s%s)\n", t.path.c_str(), t.users.front().c_str(), more.c_str());
        }
    }
    std::printf("ldsearch check: %s\n", summary_text(s, dups.size()).c_str());
    return status;
}

json problem_json(const CheckProblem& p) {
    json j{{"kind", p.kind}, {"name", p.name}, {"text", problem_text(p)}};
    if (!p.detail.empty()) j["detail"] = p.detail;
    if (!p.needed_by.empty()) j["needed_by"] = p.needed_by;
    return j;
}

int print_json(const Options& o, const std::vector<CheckedFile>& files, const Duplicates& dups, const Summary& s,
               const std::vector<std::string>& warnings, int status) {
    json doc;
    doc["mode"] = "check";
    doc["paths"] = o.operands;
    doc["warnings"] = warnings;
    json jf = json::array();
    for (const auto& f : files) {
        if (f.problems.empty()) continue;
        json ps = json::array();
        for (const auto& p : f.problems) ps.push_back(problem_json(p));
        jf.push_back({{"path", f.path},
                      {"kind", f.kind == CheckedFile::Kind::program ? "program" : "library"},
                      {"problems", std::move(ps)}});
    }
    doc["files"] = std::move(jf);
    json jd = json::array();
    for (const auto& [name, targets] : dups) {
        json ts = json::array();
        for (const auto& t : targets) ts.push_back({{"path", t.path}, {"used_by", t.users}});
        jd.push_back({{"soname", name}, {"files", std::move(ts)}});
    }
    doc["duplicates"] = std::move(jd);
    doc["summary"] = {{"programs", s.programs},       {"libraries", s.libraries},
                      {"not_elf", s.not_elf},         {"foreign", s.foreign},
                      {"not_dynamic", s.not_dynamic}, {"unreadable", s.unreadable},
                      {"problems", s.problems},       {"files_with_problems", s.with_problems},
                      {"duplicates", dups.size()},    {"text", summary_text(s, dups.size())}};
    doc["exit_status"] = status;
    std::printf("%s\n", doc.dump(2).c_str());
    return status;
}

}  // namespace

int report_check(const Options& o, const std::vector<CheckedFile>& files, const std::vector<std::string>& warnings) {
    Duplicates dups = duplicates(files);
    Summary s = summarise(files);
    int status = s.problems || !dups.empty() ? kLoadFailed : kOk;
    if (o.json) return print_json(o, files, dups, s, warnings, status);
    for (const auto& w : warnings) std::fprintf(stderr, "ldsearch: check: %s\n", w.c_str());
    return print_text(files, dups, s, status);
}

}  // namespace ldsearch
