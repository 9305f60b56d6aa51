// ldsearch's setup before a mode runs (session.h).
#include "session.h"

#include "host/loader_query.h"
#include "loader/elf_facts.h"
#include "loader/path_pool.h"
#include "machine/machine.h"
#include "program.h"
#include "tools/ldsearch/env_record.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

using namespace ldshim::loader;
using namespace ldshim::host;

namespace ldsearch {
namespace {

// --platform, --hwcaps, --lib: another machine's values in place of the
// running loader's.  Returns an error text for a bad value.
std::optional<std::string> model_machine(LoaderConfig& cfg, const std::optional<std::string>& platform,
                                         const std::optional<std::string>& hwcaps,
                                         const std::optional<std::string>& lib) {
    if (lib) {
        if (lib->empty()) return "--lib: empty value";
        cfg.dst_lib = *lib;
    }
    // Legacy subdirectories: glibc-hwcaps entries first, then the power set
    // that contains the platform name as a component.
    std::vector<std::string> legacy;
    for (const auto& s : cfg.subdirs)
        if (s.rfind("glibc-hwcaps/", 0) != 0) legacy.push_back(s);
    if (platform) {
        if (platform->empty() || platform->find('/') != std::string::npos)
            return "--platform: not a name: '" + *platform + "'";
        for (auto& s : legacy) {
            std::string out;
            for (auto part : split_path(s, "/")) {
                if (part.empty()) continue;
                out += (cfg.platform && part == *cfg.platform ? *platform : std::string(part)) + "/";
            }
            s = out;
        }
        cfg.platform = *platform;
    }
    if (hwcaps) {
        cfg.hwcaps_active.clear();
        cfg.isa_levels = 1;
        if (*hwcaps != "none")
            for (auto n : split_path(*hwcaps, ",")) {
                if (n.empty() || n.find('/') != std::string_view::npos)
                    return "--hwcaps: bad name in '" + *hwcaps + "'";
                cfg.hwcaps_active.emplace_back(n);
                cfg.isa_levels |= isa_level_bit(n);
            }
    }
    std::vector<std::string> subdirs;
    for (const auto& h : cfg.hwcaps_active) subdirs.push_back("glibc-hwcaps/" + h + "/");
    subdirs.insert(subdirs.end(), legacy.begin(), legacy.end());
    cfg.subdirs = std::move(subdirs);
    return std::nullopt;
}

int open_fs(const Options& o, Session& s) {
    if (!o.root) {
        s.fs = std::make_unique<RealFs>();
        return kOk;
    }
    struct stat st {};
    if (::stat(o.root->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        std::fprintf(stderr, "ldsearch: --root %s: not a directory\n", o.root->c_str());
        return kBadInput;
    }
    // Started from a directory inside the root, relative names start there.
    auto r = std::make_unique<RootFs>(*o.root, RootFs::cwd_inside(*o.root, RealFs().cwd()));
    s.rootfs = r.get();
    s.root = *o.root;
    s.fs = std::move(r);
    return kOk;
}

// Finds PROGRAM and checks that this loader would run it; sets s.path,
// `interp` (its PT_INTERP) and `opened` (for the engine: read once).
int open_program(const Options& o, Session& s, std::string& interp, OpenResult& opened) {
    const std::string& program = o.program;
    // PROGRAM without a slash is looked up in PATH, as a shell would; argv[0]
    // (and so every "from file" label) stays as typed.
    s.path = find_program(program, [&](const std::string& c) { return access(s.host(c).c_str(), X_OK) == 0; });
    if (s.path.empty()) {
        std::fprintf(stderr, "ldsearch: %s: command not found in PATH\n", program.c_str());
        return kBadInput;
    }

    auto img = s.fs->open(s.path);
    if (!img.image) {
        std::fprintf(stderr, "ldsearch: %s: %s\n", program.c_str(), std::strerror(img.error));
        return kBadInput;
    }
    auto facts = read_facts(*img.image);
    if (!facts.ok) {
        std::fprintf(stderr, "ldsearch: %s: %s\n", program.c_str(),
                     img.image->read_errno() ? std::strerror(img.image->read_errno()) : facts.error.c_str());
        return kBadInput;
    }
    // The machines modelled; which one applies, its loader's file says.
    bool modelled = ldshim::machine::modelled(facts.facts.machine);
    if (facts.facts.elf_class != 2 || !modelled) {
        std::fprintf(stderr, "ldsearch: %s: not an x86-64 or aarch64 ELF program (class %u, machine %u)\n",
                     program.c_str(), facts.facts.elf_class, facts.facts.machine);
        return kBadInput;
    }
    if (!facts.facts.interp) {
        std::fprintf(stderr, "ldsearch: %s: not a dynamic executable (no PT_INTERP)\n", program.c_str());
        return kBadInput;
    }
    interp = *facts.facts.interp;
    s.machine = facts.facts.machine;
    opened = std::move(img);
    return kOk;
}

// The loader's configuration, as modelled, into `cfg`; ld.so.cache into s.cache.
int load_config(const Options& o, Session& s, const std::string& interp, std::optional<LoaderConfig>& cfg) {
    std::string err;
    // Inside --root, the root's own loader describes its directories.
    std::string rtld = o.ld_so.value_or(s.host(interp));
    LoaderCpuEnv cpu_env = LoaderCpuEnv::of_this_process();
    // The program's machine is its loader's (checked below), so the
    // emulator that runs a foreign loader is known before it is asked.
    cpu_env.emulator = emulator_identity(s.machine);
    cfg = query_loader_cached(rtld, o.no_cache ? std::string() : default_cache_dir(), &err, cpu_env);
    if (!cfg) {
        std::fprintf(stderr, "ldsearch: %s\n", err.c_str());
        return kLoaderQuery;
    }
    // An aarch64 program with an x86-64 loader (--ld-so) or the reverse:
    // that loader would refuse it.
    if (cfg->elf_class != 2 || cfg->machine != s.machine) {
        std::fprintf(stderr, "ldsearch: %s: ELF machine %u, but the loader %s runs class %u machine %u\n",
                     o.program.c_str(), s.machine, rtld.c_str(), cfg->elf_class, cfg->machine);
        return kBadInput;
    }
    if (auto bad = model_machine(*cfg, o.platform, o.hwcaps, o.dst_lib)) return usage_error(*bad);
    cfg->inhibit_cache = o.inhibit_cache;
    if (o.cache_file) cfg->cache_path = *o.cache_file;
    // --cache names a host file even with --root.
    RealFs host_fs;
    s.cache = LdCache::load(o.cache_file ? static_cast<Fs&>(host_fs) : *s.fs, cfg->cache_path);
    return kOk;
}

EngineOptions engine_options(const Options& o, const Session& s) {
    EngineOptions opts;
    opts.argv0 = o.program;
    opts.keep_going = o.keep_going;
    opts.secure = o.secure ? *o.secure : starts_secure(s.host(s.path));
    // The modelled environment: ours, with --env overrides, each replacing
    // every assignment of its name.
    EnvEntries env = own_environment();
    std::vector<std::string> set;
    set.reserve(o.env_over.size());  // `env` points into it
    for (const auto& over : o.env_over) {
        std::string prefix = over.first + "=";
        std::erase_if(env, [&](std::string_view e) { return e.starts_with(prefix); });
        if (over.second) env.push_back(set.emplace_back(prefix + *over.second));
    }
    set_environment(opts, read_loader_environment(env));
    if (o.library_path) {
        opts.library_path = o.library_path;
        opts.library_path_label = Label::library_path_option;
    }
    opts.inhibit_rpath = o.inhibit_rpath;

    // The tree and why show everything, missing libraries included.
    if (o.mode != Mode::search) opts.keep_going = true;
    return opts;
}

}  // namespace

std::string Session::host(const std::string& p) const {
    if (!rootfs) return p;
    auto h = rootfs->host_path(p, nullptr);
    return h ? *h : root + "/" + p;
}

int start_session(const Options& o, Session& s) {
    std::string interp;
    OpenResult program;
    std::optional<LoaderConfig> cfg;
    if (int status = open_fs(o, s); status != kOk) return status;
    if (int status = open_program(o, s, interp, program); status != kOk) return status;
    if (int status = load_config(o, s, interp, cfg); status != kOk) return status;
    s.engine_options = engine_options(o, s);
    s.printer.emplace(stdout, !o.all_lines);
    TraceSink* sink = o.json || o.mode == Mode::why ? static_cast<TraceSink*>(&s.recorder)
                      : o.mode == Mode::tree        ? nullptr
                                                    : &*s.printer;
    s.engine = std::make_unique<Engine>(std::move(*cfg), *s.fs, s.cache, sink, s.engine_options);
    s.start = s.engine->start(s.path, std::move(program));
    return kOk;
}

}  // namespace ldsearch
