// ldsearch check (check.h): the walk, the shared state and the worker pool.
// Each file gets an engine of its own (a process of its own); what does not
// depend on the process is shared: the filesystem's answers and the ELF
// facts behind them (SharedFs), ld.so.cache, and the loader's configuration,
// asked once per interpreter.
#include "check.h"

#include "arena.h"
#include "check_fs.h"
#include "check_report.h"
#include "host/loader_query.h"
#include "loader/elf_facts.h"
#include "loader/engine.h"
#include "loader/ld_cache.h"
#include "loader/tokens.h"
#include "machine/machine.h"
#include "program.h"
#include "tools/ldsearch/dep_tree.h"
#include "tools/ldsearch/env_record.h"

#include <dirent.h>
#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

using namespace ldshim::loader;

namespace ldsearch {
namespace {

// The loader a library of each modelled machine is checked with (one with
// no PT_INTERP names none); nullptr for another machine or class.
const char* default_rtld(std::uint8_t elf_class, std::uint16_t machine) {
    return elf_class == ELFCLASS64 ? ldshim::machine::loader_path(machine) : nullptr;
}

// The program a library is dlopen'ed from: one that needs nothing and has no
// RPATH, served from memory under a name no file has.
constexpr const char* kHostProgram = "/nonexistent/ldsearch-check-host";

// That program, for the loader `rtld` of `machine`.
std::string host_program_bytes(std::uint16_t machine, const std::string& rtld) {
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = machine;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 1;
    Elf64_Phdr ph{};
    ph.p_type = PT_INTERP;
    ph.p_offset = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
    ph.p_filesz = ph.p_memsz = rtld.size() + 1;
    std::string out(reinterpret_cast<const char*>(&eh), sizeof eh);
    out.append(reinterpret_cast<const char*>(&ph), sizeof ph);
    out.append(rtld.c_str(), rtld.size() + 1);
    return out;
}

// The shared filesystem, plus the empty host program.
class HostedFs final : public Fs {
public:
    HostedFs(Fs& inner, std::uint16_t machine, std::string rtld)
        : inner_(inner), machine_(machine), rtld_(std::move(rtld)) {}
    OpenResult open(const std::string& path) override {
        if (path != kHostProgram) return inner_.open(path);
        return {std::make_shared<MemoryImage>(host_program_bytes(machine_, rtld_), FileId{}, 0100755), 0};
    }
    StatResult stat(const std::string& path) override { return inner_.stat(path); }
    std::string cwd() override { return inner_.cwd(); }
    std::optional<std::string> realpath(const std::string& path) override { return inner_.realpath(path); }

private:
    Fs& inner_;
    std::uint16_t machine_;
    std::string rtld_;
};

// Files the loader skipped for their class or machine.
class SkipSink final : public TraceSink {
public:
    void event(const TraceEvent& e) override {
        if (e.kind == TraceEvent::Kind::rejected && (e.detail == "wrong ELF class" || e.detail == "wrong ELF machine"))
            skipped.emplace(e.text, e.detail);
    }
    std::set<std::pair<std::string, std::string>> skipped;
};

struct Loader {
    std::string path;  // as the files name it (inside --root)
    std::optional<LoaderConfig> cfg;
    std::string error;
    const LdCache* cache = nullptr;
};

// What every worker shares.
struct Shared {
    explicit Shared(std::unique_ptr<ldshim::host::RootFs> root) : fs(std::move(root)) {}
    SharedFs fs;
    std::vector<std::string> roots;  // the checked trees, resolved
    EngineOptions base;              // the modelled environment
    bool no_config_cache = false;
    std::mutex mu;
    std::map<std::pair<std::string, std::uint16_t>, Loader> loaders;  // by interpreter, machine
    std::map<std::string, std::unique_ptr<LdCache>> caches;           // by path
    std::set<std::string> warnings;                                   // said once each

    // The loader `interp` of files of `machine`, asked once; another
    // machine's runs through its emulator (binfmt_misc).
    const Loader& loader(const std::string& interp, std::uint16_t machine) {
        std::lock_guard lock(mu);
        auto [it, fresh] = loaders.try_emplace({interp, machine});
        Loader& l = it->second;
        if (!fresh) return l;
        l.path = interp;
        auto cpu_env = ldshim::host::LoaderCpuEnv::of_this_process();
        cpu_env.emulator = ldshim::host::emulator_identity(machine);
        l.cfg = ldshim::host::query_loader_cached(
            fs.host(interp), no_config_cache ? std::string() : ldshim::host::default_cache_dir(), &l.error, cpu_env);
        if (!l.cfg) return l;
        if (l.cfg->elf_class != ELFCLASS64 || l.cfg->machine != machine) {
            l.error = interp + ": the loader runs ELF machine " + std::to_string(l.cfg->machine) + ", not " +
                      std::to_string(machine);
            l.cfg.reset();
            return l;
        }
        auto& c = caches[l.cfg->cache_path];
        if (!c) c = std::make_unique<LdCache>(LdCache::load(fs, l.cfg->cache_path));
        l.cache = c.get();
        return l;
    }
    bool in_tree(const std::string& dir) const {
        return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
            return dir == r || r == "/" ||
                   (dir.size() > r.size() && dir.compare(0, r.size(), r) == 0 && dir[r.size()] == '/');
        });
    }
};

// Every DT_NEEDED entry of a live object that nothing answers to.
void collect_missing(const Engine& e, const std::string& argv0, std::vector<CheckProblem>& out) {
    const auto& objs = e.objects();
    std::set<std::pair<std::string, std::string>> seen;
    for (std::size_t i = 0; i < objs.size(); ++i) {
        const Object& o = objs[i];
        if (o.removed || o.ns != 0) continue;
        for (const auto& raw : o.facts.needed) {
            std::string name = raw;
            if (count_dsts(raw) != 0) {
                name = e.expand(o, raw);
                if (name.empty()) continue;
            }
            if (e.find_object(name) >= 0) continue;
            std::string by = object_display(e, static_cast<int>(i), argv0);
            if (seen.emplace(name, by).second) out.push_back({"missing", name, "", by});
        }
    }
}

// The checked file's own RPATH or RUNPATH (the one the loader uses): each
// element that names no directory, or one outside the checked trees.
void check_rpath(Shared& sh, const Engine& e, int self, std::vector<CheckProblem>& out) {
    if (self < 0) return;
    const Object& o = e.objects()[static_cast<std::size_t>(self)];
    bool runpath = o.facts.runpath.has_value();
    const auto& list = runpath ? o.facts.runpath : o.facts.rpath;
    if (!list) return;
    const char* label = runpath ? "RUNPATH" : "RPATH";
    for (auto elem : split_path(*list, kObjectListSeparators)) {
        std::string element(elem);
        std::string dir = e.expand(o, elem);
        std::string name = std::string(label) + " " + element;
        if (dir.empty()) {
            out.push_back({"rpath_missing", name, "expands to nothing", ""});
            continue;
        }
        if (dir[0] != '/') dir = sh.fs.cwd() + "/" + dir;
        auto st = sh.fs.stat(dir);
        if (st.error != 0 || !st.is_dir) {
            out.push_back(
                {"rpath_missing", name, dir + ": " + (st.error ? std::strerror(st.error) : "not a directory"), ""});
            continue;
        }
        auto real = sh.fs.realpath(dir);
        if (real && !sh.in_tree(*real)) out.push_back({"rpath_outside", name, *real, ""});
    }
}

struct Run {
    std::unique_ptr<HostedFs> fs;
    SkipSink sink;
    std::unique_ptr<Engine> engine;
    int self = -1;  // the checked file's object
    std::optional<std::string> error;
};

// One process model: PROGRAM's startup, or a dlopen of LIB by its path.
void model(Shared& sh, const Loader& l, const std::string& path, bool program, const EngineOptions& opts, Run& r) {
    r.fs = std::make_unique<HostedFs>(sh.fs, l.cfg->machine, l.path);
    r.engine = std::make_unique<Engine>(*l.cfg, *r.fs, *l.cache, &r.sink, opts);
    StartResult s = r.engine->start(program ? path : std::string(kHostProgram));
    if (!s.ok) r.error = s.error;
    if (program) {
        r.self = r.engine->main_object();
        return;
    }
    DlopenRequest req;
    req.caller = r.engine->main_object();
    req.name = path.find('/') == std::string::npos ? "./" + path : path;
    MapOutcome m = r.engine->dlopen(req);
    if (m.error) r.error = m.error->text();
    r.self = m.object;
}

// What was found through LD_LIBRARY_PATH and would not be found without it.
void check_library_path(Shared& sh, const Loader& l, const CheckedFile& f, const EngineOptions& opts, const Run& r,
                        std::vector<CheckProblem>& out) {
    std::vector<const Object*> via_env;
    for (const auto& o : r.engine->objects())
        if (!o.removed && o.found_by == Source::ld_library_path) via_env.push_back(&o);
    if (via_env.empty()) return;
    EngineOptions without = opts;
    without.library_path.reset();
    Run again;
    model(sh, l, f.path, f.kind == CheckedFile::Kind::program, without, again);
    std::vector<CheckProblem> missing;
    collect_missing(*again.engine, f.path, missing);
    for (const Object* o : via_env) {
        const std::string& name = o->names.empty() ? o->name : o->names.front();
        bool lost = std::any_of(missing.begin(), missing.end(), [&](const CheckProblem& p) { return p.name == name; });
        if (lost) out.push_back({"ld_library_path_only", name, o->name, ""});
    }
}

void analyse(Shared& sh, const Loader& l, CheckedFile& f) {
    bool program = f.kind == CheckedFile::Kind::program;
    EngineOptions opts = sh.base;
    opts.argv0 = f.path;
    opts.keep_going = true;
    opts.secure = program && starts_secure(sh.fs.host(f.path));
    Run r;
    model(sh, l, f.path, program, opts, r);
    if (r.error) f.problems.push_back({"error", f.path, *r.error, ""});
    collect_missing(*r.engine, f.path, f.problems);
    check_library_path(sh, l, f, opts, r, f.problems);
    check_rpath(sh, *r.engine, r.self, f.problems);
    for (const auto& [file, why] : r.sink.skipped) f.problems.push_back({"wrong_class", file, why, ""});
    const auto& objs = r.engine->objects();
    for (std::size_t i = 0; i < objs.size(); ++i) {
        const Object& o = objs[i];
        if (o.removed || o.kind != Object::Kind::library || static_cast<int>(i) == r.self) continue;
        std::string key = o.facts.soname ? *o.facts.soname : o.names.empty() ? o.name : o.names.front();
        f.resolved.push_back({key, o.id, o.name});
    }
}

// Sorts a file into program, library or skipped, then checks it.
void check_file(Shared& sh, CheckedFile& f) {
    auto img = sh.fs.open(f.path);
    if (!img.image) {
        f.kind = CheckedFile::Kind::unreadable;
        return;
    }
    auto facts = read_facts(*img.image);
    if (!facts.ok) {
        f.kind = CheckedFile::Kind::not_elf;
        return;
    }
    const ObjectFacts& ff = facts.facts;
    const char* rtld = default_rtld(ff.elf_class, ff.machine);
    if (!rtld) {
        f.kind = CheckedFile::Kind::foreign;
        return;
    }
    f.machine = ff.machine;
    if (ff.interp)
        f.kind = CheckedFile::Kind::program;
    else if (ff.type == ET_DYN && ff.has_dynamic)
        f.kind = CheckedFile::Kind::library;
    else {
        f.kind = CheckedFile::Kind::not_dynamic;
        return;
    }
    const Loader& l = sh.loader(ff.interp.value_or(rtld), ff.machine);
    // ldsearch's own machine's loader is always at hand, any other's may be
    // missing (no emulator, no multiarch libc).
    if (!l.cfg && ff.machine != ldshim::machine::kOwn) {
        // Another machine's file where its loader cannot run here: skipped,
        // as before aarch64 was modelled, with the reason said once.
        f.kind = CheckedFile::Kind::foreign;
        std::lock_guard lock(sh.mu);
        sh.warnings.insert(l.error + " (files of ELF machine " + std::to_string(ff.machine) + " skipped)");
        return;
    }
    if (!l.cfg) {
        f.problems.push_back({"error", f.path, l.error, ""});
        return;
    }
    analyse(sh, l, f);
}

// Regular files under `dir`, depth first; symbolic links are not followed
// (a file reached through one is checked where it lies, if inside a tree).
// Under --root the paths are inside it, read through their host paths.
void walk(const SharedFs& fs, const std::string& dir, std::vector<std::string>& files,
          std::vector<std::string>& warnings) {
    std::vector<std::string> stack{dir};
    while (!stack.empty()) {
        std::string d = std::move(stack.back());
        stack.pop_back();
        std::string host = fs.host(d);
        if (host.empty()) errno = ENOENT;  // unresolvable inside --root
        DIR* dp = host.empty() ? nullptr : ::opendir(host.c_str());
        if (!dp) {
            warnings.push_back(d + ": " + std::strerror(errno));
            continue;
        }
        std::string prefix = d.back() == '/' ? d : d + "/";
        while (const dirent* de = ::readdir(dp)) {
            if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
            std::string p = prefix + de->d_name;
            unsigned char type = de->d_type;
            if (type == DT_UNKNOWN) {
                struct stat st {};
                if (::lstat((host + "/" + de->d_name).c_str(), &st) != 0) continue;
                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
            }
            if (type == DT_DIR) stack.push_back(p);
            if (type == DT_REG) files.push_back(p);
        }
        ::closedir(dp);
    }
}

// The files to check and the trees they make up.  Returns kOk or the exit
// status once the reason is printed.
int gather(const std::vector<std::string>& operands, Shared& sh, std::vector<std::string>& files,
           std::vector<std::string>& warnings) {
    for (const auto& op : operands) {
        struct stat st {};
        std::string host = op.empty() ? op : sh.fs.host(op);
        if (host.empty() || ::stat(host.c_str(), &st) != 0) {
            std::fprintf(stderr, "ldsearch: check: %s: %s\n", op.c_str(),
                         op.empty() ? "empty path" : std::strerror(host.empty() ? ENOENT : errno));
            return kBadInput;
        }
        std::string tree = op;
        if (S_ISDIR(st.st_mode)) {
            walk(sh.fs, op, files, warnings);
        } else if (S_ISREG(st.st_mode)) {
            files.push_back(op);
            auto slash = op.rfind('/');
            tree = slash == std::string::npos ? "." : slash == 0 ? "/" : op.substr(0, slash);
        } else {
            std::fprintf(stderr, "ldsearch: check: %s: not a file or directory\n", op.c_str());
            return kBadInput;
        }
        if (auto r = sh.fs.realpath(tree)) sh.roots.push_back(*r);
    }
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    return kOk;
}

unsigned worker_count(unsigned jobs, std::size_t files) {
    unsigned n = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
    return static_cast<unsigned>(std::min<std::size_t>(n, std::max<std::size_t>(files, 1)));
}

// The filesystem of the check: under --root, the root's, started where the
// host's working directory lies inside it (as `ldsearch --root` does).
std::unique_ptr<ldshim::host::RootFs> open_root(const Options& o) {
    if (!o.root) return nullptr;
    struct stat st {};
    if (::stat(o.root->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return nullptr;
    return std::make_unique<ldshim::host::RootFs>(
        *o.root, ldshim::host::RootFs::cwd_inside(*o.root, ldshim::host::RealFs().cwd()));
}

}  // namespace

int run_check(const Options& o) {
    // Thousands of files: memory must be reused, so malloc from here on.
    close_process_arena();
    auto root = open_root(o);
    if (o.root && !root) {
        std::fprintf(stderr, "ldsearch: check: --root %s: not a directory\n", o.root->c_str());
        return kBadInput;
    }
    Shared sh(std::move(root));
    sh.no_config_cache = o.no_cache;
    set_environment(sh.base, read_loader_environment(own_environment()));
    std::vector<std::string> paths, warnings;
    if (int status = gather(o.operands, sh, paths, warnings); status != kOk) return status;
    std::vector<CheckedFile> files(paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) files[i].path = paths[i];
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < files.size();) check_file(sh, files[i]);
    };
    std::vector<std::thread> pool;
    unsigned n = worker_count(o.jobs, files.size());
    for (unsigned t = 1; t < n; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    warnings.insert(warnings.end(), sh.warnings.begin(), sh.warnings.end());
    return report_check(o, files, warnings);
}

}  // namespace ldsearch
