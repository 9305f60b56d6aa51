#include "diff.h"

#include "program.h"

#include "host/loader_query.h"
#include "host/real_fs.h"
#include "loader/engine.h"
#include "machine/machine.h"
#include "tools/ldsearch/env_capture.h"
#include "tools/ldsearch/ld_debug_log.h"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

using namespace ldshim::loader;
using namespace ldshim::host;

namespace ldsearch {

namespace {

constexpr int kSame = 0, kDiffer = 1, kBadCapture = 3, kCannotRun = 125;

// The lines of each search, split at its "find library=" line.
std::vector<std::vector<std::string>> split_searches(const std::vector<std::string>& lines) {
    std::vector<std::vector<std::string>> out;
    for (const auto& l : lines) {
        if (l.rfind("find library=", 0) == 0 || out.empty()) out.emplace_back();
        out.back().push_back(l);
    }
    return out;
}

// A unified diff of two short line lists (LCS; searches are a few hundred
// lines at most).
std::string unified(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m; j-- > 0;)
            lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::string out = "@@ -1," + std::to_string(n) + " +1," + std::to_string(m) + " @@\n";
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && a[i] == b[j]) {
            out += " " + a[i++] + "\n";
            ++j;
        } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
            out += "+" + b[j++] + "\n";
        } else {
            out += "-" + a[i++] + "\n";
        }
    }
    return out;
}

std::vector<std::string> search_lines(const std::vector<TraceEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events)
        if (auto p = ld_debug_payload(e); p && is_search_line(*p)) out.push_back(*p);
    return out;
}

struct Totals {
    std::size_t searches = 0, different = 0, processes = 0, skipped = 0;
    std::size_t unread = 0;  // log lines the parser could not place
    bool json = false;
    nlohmann::json differences = nlohmann::json::array();
    std::vector<std::string> notes;    // what was skipped, and why
    std::vector<std::string> remarks;  // what the reader should know that skipped nothing
};

void report(Totals& t, const std::string& what, const std::vector<std::string>& a, const std::vector<std::string>& b) {
    ++t.different;
    if (t.json) {
        t.differences.push_back({{"where", what}, {"loader", a}, {"ldsearch", b}});
        return;
    }
    std::printf("--- loader: %s\n+++ ldsearch\n%s", what.c_str(), unified(a, b).c_str());
}

// Something the reader should know about the comparison, that skips nothing.
void note(Totals& t, const std::string& what) {
    t.remarks.push_back(what);
    if (!t.json) std::fprintf(stderr, "ldsearch: %s\n", what.c_str());
}

void skip(Totals& t, const std::string& why) {
    ++t.skipped;
    t.notes.push_back(why);
    if (!t.json) std::fprintf(stderr, "ldsearch: %s; skipped\n", why.c_str());
}

// Compares the loader's searches with the engine's, search by search.
void compare(const std::string& what, const std::vector<std::string>& real, const std::vector<std::string>& emu,
             Totals& t) {
    auto a = split_searches(real), b = split_searches(emu);
    t.searches += a.size();
    if (a.size() != b.size()) {
        report(t, what, real, emu);
        return;
    }
    for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k] != b[k]) report(t, what + ", search " + std::to_string(k + 1), a[k], b[k]);
}

// What the loader of this program read from its environment: the recorded
// environment when there is one; else ldsearch's own, with the preloads
// taken from the log (the program's lookups its DT_NEEDED does not name:
// LD_PRELOAD, then /etc/ld.so.preload).
EngineOptions program_options(const LoggedProgram& prog, const ObjectFacts& facts, const Environment* env) {
    EngineOptions opts;
    opts.argv0 = prog.argv0;
    if (env) {
        set_environment(opts, read_loader_environment(env_entries(*env)));
        return opts;
    }
    opts.library_path = read_loader_environment(own_environment()).library_path;
    opts.preload_file.reset();
    for (const auto& l : prog.startup) {
        if (l.requester != prog.argv0) continue;
        if (std::find(facts.needed.begin(), facts.needed.end(), l.name) == facts.needed.end())
            opts.preload += (opts.preload.empty() ? "" : ":") + l.name;
    }
    return opts;
}

// The configuration of the loader that ran `program` (its PT_INTERP), as
// the process's environment made it see the CPU; nullopt once skipped.  An
// aarch64 program ran through qemu-user, which joins the cache key.
std::optional<LoaderConfig> program_loader(long pid, const std::string& program, const ObjectFacts& facts,
                                           const Environment* env, Totals& t) {
    std::string head = "process " + std::to_string(pid) + ": ";
    bool modelled = ldshim::machine::modelled(facts.machine);
    if (facts.elf_class != 2 || !modelled) {
        skip(t, head + program + ": ELF class " + std::to_string(facts.elf_class) + " machine " +
                    std::to_string(facts.machine) + " is not modelled");
        return std::nullopt;
    }
    std::string err;
    auto cpu_env = env ? LoaderCpuEnv::of(*env) : LoaderCpuEnv::of_this_process();
    cpu_env.emulator = emulator_identity(facts.machine);
    auto cfg = query_loader_cached(*facts.interp, default_cache_dir(), &err, cpu_env);
    if (!cfg) {
        skip(t, head + err);
        return std::nullopt;
    }
    // The loader ran the program, so their machines agree unless the file
    // changed since; a mismatch would model nothing the loader did.
    if (cfg->elf_class != facts.elf_class || cfg->machine != facts.machine) {
        skip(t, head + program + ": ELF machine " + std::to_string(facts.machine) + ", but its loader " +
                    *facts.interp + " runs machine " + std::to_string(cfg->machine));
        return std::nullopt;
    }
    return cfg;
}

// Replays one program of one process, started with `env` (null: unknown).
void replay_program(long pid, const LoggedProgram& prog, const Environment* env, Totals& t) {
    std::string path = find_program(prog.argv0, [](const std::string& c) { return access(c.c_str(), X_OK) == 0; });
    RealFs fs;
    auto img = path.empty() ? OpenResult{} : fs.open(path);
    FactsResult facts;
    if (img.image) facts = read_facts(*img.image);
    if (!img.image || !facts.ok || !facts.facts.interp) {
        skip(t, "process " + std::to_string(pid) + ": cannot find program '" + prog.argv0 + "' to replay it");
        return;
    }
    auto cfg = program_loader(pid, path, facts.facts, env, t);
    if (!cfg) return;
    LdCache cache = LdCache::load(fs, cfg->cache_path);
    EngineOptions opts = program_options(prog, facts.facts, env);
    opts.secure = starts_secure(path);
    TraceRecorder rec;
    Engine engine(std::move(*cfg), fs, cache, &rec, opts);
    engine.start(path);
    std::vector<std::string> real;
    for (const auto& l : prog.startup) real.insert(real.end(), l.lines.begin(), l.lines.end());
    std::string head = "process " + std::to_string(pid) + " (" + prog.argv0 + ")";
    compare(head + ", startup", real, search_lines(rec.events), t);
    // Each dlopen with the lookups of its dependencies.
    for (std::size_t i = 0; i < prog.later.size();) {
        const LoggedLookup& d = prog.later[i];
        if (d.unload) {  // dlclose: a later dlopen of it searches again
            if (int idx = d.ns == 0 ? engine.find_object(d.name) : -1; idx >= 0) engine.forget(idx);
            ++i;
            continue;
        }
        std::vector<std::string> lines = d.lines;
        std::size_t j = i + 1;
        for (; j < prog.later.size() && !prog.later[j].dynamic && !prog.later[j].unload; ++j)
            lines.insert(lines.end(), prog.later[j].lines.begin(), prog.later[j].lines.end());
        std::string what = head + ", dlopen(\"" + d.name + "\") from " + d.requester;
        if (!d.dynamic || d.ns != 0) {
            if (!lines.empty()) skip(t, what + ": " + (d.ns != 0 ? "another namespace" : "not attributed to a dlopen"));
            i = j;
            continue;
        }
        int caller = d.requester == prog.argv0 ? engine.main_object() : engine.find_object(d.requester);
        if (caller < 0) {
            skip(t, what + ": the caller is not an object ldsearch knows");
            i = j;
            continue;
        }
        rec.events.clear();
        DlopenRequest req;
        req.caller = caller;
        req.name = d.name;
        // The log does not state the mode, only whether a new object was
        // mapped; where none was, RTLD_NOLOAD searches and answers alike.
        req.noload = !d.mapped;
        engine.dlopen(req);
        compare(what, lines, search_lines(rec.events), t);
        i = j;
    }
}

int replay_files(const std::vector<std::string>& files, bool expect_envs, Totals& t) {
    for (const auto& f : files) {
        std::string log;
        if (int error = ldshim::host::read_whole_file(f, log); error != 0) {
            std::fprintf(stderr, "ldsearch: %s: %s\n", f.c_str(), std::strerror(error));
            return kBadCapture;
        }
        LogParse p = parse_ld_debug_log(log);
        if (!p.process) {
            std::fprintf(stderr, "ldsearch: %s: %s: not a capture of LD_DEBUG=libs,files\n", f.c_str(),
                         p.error.c_str());
            return kBadCapture;
        }
        for (const auto& w : p.warnings) std::fprintf(stderr, "ldsearch: %s: %s\n", f.c_str(), w.c_str());
        if (p.unread > p.warnings.size())
            std::fprintf(stderr, "ldsearch: %s: %zu more lines skipped\n", f.c_str(), p.unread - p.warnings.size());
        t.unread += p.unread;
        t.processes += 1 + p.process->forked.size();
        const auto& programs = p.process->programs;
        EnvRecords envs = read_env_records(f, p.process->pid);
        bool have_envs = envs.execs.size() == programs.size() && !envs.truncated;
        if (!have_envs && (expect_envs || !envs.execs.empty() || envs.truncated))
            note(t, "process " + std::to_string(p.process->pid) + ": " + std::to_string(envs.execs.size()) +
                        " environments recorded for " + std::to_string(programs.size()) +
                        " programs; modelled with ldsearch's own environment");
        for (std::size_t k = 0; k < programs.size(); ++k)
            replay_program(p.process->pid, programs[k], have_envs ? &envs.execs[k] : nullptr, t);
    }
    return kSame;
}

int summary(const Totals& t) {
    if (t.json) {
        nlohmann::json doc = {
            {"mode", "diff"},           {"processes", t.processes},     {"compared", t.searches},
            {"different", t.different}, {"skipped", t.notes},           {"notes", t.remarks},
            {"unread_lines", t.unread}, {"differences", t.differences}, {"exit_status", t.different ? kDiffer : kSame}};
        std::printf("%s\n", doc.dump(2).c_str());
        return t.different ? kDiffer : kSame;
    }
    std::string skipped = t.skipped ? " (" + std::to_string(t.skipped) + " skipped, see above)" : "";
    if (t.unread) skipped += " (" + std::to_string(t.unread) + " log lines not understood, see above)";
    const char* procs = t.processes == 1 ? "process" : "processes";
    if (t.different == 0) {
        std::printf("%zu searches in %zu %s: all identical%s\n", t.searches, t.processes, procs, skipped.c_str());
        return kSame;
    }
    std::printf("%zu of %zu searches in %zu %s differ%s\n", t.different, t.searches, t.processes, procs,
                skipped.c_str());
    return kDiffer;
}

// The capture directory and what ldsearch and the command wrote into it
// (the logs, the environment records, the audit modules, one directory deep
// when there are several); nothing else is ever there, since ldsearch made
// it with mkdtemp.
void remove_capture(const std::string& dir, bool nested = true) {
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
            if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR && nested)
                remove_capture(dir + "/" + e->d_name, false);
        }
        closedir(d);
    }
    rmdir(dir.c_str());
}

// Runs COMMAND with the loader's debug output going to DIR and waits for it.
// Returns 0 once it ran -- whatever its exit status, since a program the
// loader cannot start is just what a user brings to --diff -- or the errno of
// the failed exec, which a close-on-exec pipe carries back.
int run_captured(const std::vector<std::string>& command, const std::string& dir,
                 const std::optional<EnvRecorder>& recorder) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return error;
    }
    if (pid == 0) {
        close(pipefd[0]);
        setenv("LD_DEBUG", "libs,files", 1);
        setenv("LD_DEBUG_OUTPUT", (dir + "/ld").c_str(), 1);
        if (recorder) arm_env_recorder(*recorder);
        std::vector<char*> argv;
        for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        int error = errno;
        ssize_t ignored = write(pipefd[1], &error, sizeof error);
        (void)ignored;
        _exit(127);
    }
    close(pipefd[1]);
    int exec_error = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return n == static_cast<ssize_t>(sizeof exec_error) ? exec_error : 0;
}

}  // namespace

int replay_logs(const std::vector<std::string>& logs, bool json) {
    Totals t;
    t.json = json;
    if (int rc = replay_files(logs, false, t)) return rc;
    return summary(t);
}

int diff_command(const std::vector<std::string>& command, bool keep, bool json) {
    char tmpl[] = "/tmp/ldsearch-diff-XXXXXX";
    if (!mkdtemp(tmpl)) {
        std::fprintf(stderr, "ldsearch: cannot create a capture directory: %s\n", std::strerror(errno));
        return kCannotRun;
    }
    std::string dir = tmpl;
    std::string why;
    auto recorder = install_env_recorder(dir, &why);
    if (!recorder)
        std::fprintf(stderr, "ldsearch: %s: each process is modelled with ldsearch's own environment\n", why.c_str());
    if (int error = run_captured(command, dir, recorder); error != 0) {
        std::fprintf(stderr, "ldsearch: cannot run %s: %s\n", command[0].c_str(), std::strerror(error));
        remove_capture(dir);
        return kCannotRun;
    }
    std::vector<std::string> logs;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (std::strncmp(e->d_name, "ld.", 3) == 0) logs.push_back(dir + "/" + e->d_name);
        closedir(d);
    }
    std::sort(logs.begin(), logs.end());
    Totals t;
    t.json = json;
    int rc = replay_files(logs, recorder.has_value(), t);
    if (rc == kSame) rc = summary(t);
    if (keep)
        std::fprintf(stderr, "ldsearch: capture kept in %s\n", dir.c_str());
    else
        remove_capture(dir);
    return rc;
}

}  // namespace ldsearch
