// ldsearch: print the dynamic loader's library search for a program, line for
// line as LD_DEBUG=libs prints it, without running the program.  All the logic
// lives in loader/; this file parses arguments and prints.
#include "ldshim_version.h"
#include "tools/ldsearch/dep_tree.h"
#include "host/loader_query.h"
#include "host/real_fs.h"
#include "loader/engine.h"
#include "tools/ldsearch/why.h"
#include "diff.h"
#include "program.h"
#include "report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace ldshim::loader;
using namespace ldshim::host;
using namespace ldsearch;

namespace {

// Exit statuses (documented in --help and docs/ldsearch.md).
enum Exit : int {
    kOk = 0,
    kLoadFailed = 1,  // the program would not start, or a dlopen would fail
    kUsage = 2,
    kBadInput = 3,    // PROGRAM missing, unreadable, not ELF or not for this loader
    kLoaderQuery = 4, // the loader's configuration could not be read
};

constexpr const char* kHelp = R"(Usage: ldsearch [OPTION]... PROGRAM
       ldsearch tree [OPTION]... PROGRAM
Print the library search that the dynamic loader performs while PROGRAM starts,
exactly as LD_DEBUG=libs prints it (without the "PID:<TAB>" prefix), without
running PROGRAM.  LD_LIBRARY_PATH and LD_PRELOAD are taken from the environment
and applied as the loader would apply them for PROGRAM.

       ldsearch why NAME [--from OBJECT] [OPTION]... PROGRAM
       ldsearch --diff [--keep] [--json] -- COMMAND [ARG]...
       ldsearch --replay [--json] LOG...
Modes (the first argument; "ldsearch -- tree" means a program named tree):
  tree                   the dependency tree instead: every DT_NEEDED entry,
                         the file it resolved to and how it was found (RPATH
                         of X, LD_LIBRARY_PATH, RUNPATH of X, ld.so.cache,
                         system directory, already loaded, already loaded as
                         SONAME); missing libraries are marked, and the walk
                         goes on past them
  why NAME               every place the loader considered for NAME and why
                         each was rejected or not searched (missing
                         directory, wrong ELF class or machine, NODEFLIB,
                         RUNPATH not inherited, RPATH turned off by a
                         RUNPATH, a token dropped in secure mode, a name with
                         a slash), then a one-line verdict.  The lookup is
                         the one startup makes for NAME; with --from OBJECT,
                         or for a name nothing needs, a dlopen from OBJECT
                         (default: PROGRAM).  Exit status 0 if found, 1 if not

Checking ldsearch against the real loader:
  --diff -- COMMAND      run COMMAND with LD_DEBUG=libs,files written through
                         LD_DEBUG_OUTPUT (its own output is untouched; child
                         processes are covered), then replay every search of
                         every process -- startup, and each dlopen from the
                         object the loader attributed it to -- and print a
                         unified diff per differing search, or "N searches in
                         M processes: all identical".  Each process is modelled
                         with ldsearch's environment.  --keep keeps the capture
  --replay LOG...        the same on LD_DEBUG_OUTPUT files captured earlier
                         (with LD_DEBUG=libs,files)

Output:
  --json                 one JSON document instead of text (schema:
                         docs/ldsearch.schema.json)
  --color[=WHEN]         tree colours: auto (default: on a terminal unless
                         NO_COLOR is set), always, never

After startup, dlopen calls can be emulated:
  --dlopen NAME          dlopen(NAME, RTLD_NOW) from the current --from object;
                         prints its search lines, then the l_name of the object
                         it returns (repeatable, in order)
  --dlopen-noload NAME   the same with RTLD_NOLOAD
  --dlmopen NAME         dlmopen(LM_ID_NEWLM, NAME)
  --from OBJECT          the calling object for the following dlopens: PROGRAM
                         (the default) or an object loaded so far, named by
                         path, l_name or SONAME

Modelling the process:
  --keep-going           continue past missing libraries, as the loader does
                         under LD_TRACE_LOADED_OBJECTS=1 (ldd)
  --secure               model a set-user-ID start (AT_SECURE); by default this
                         is derived from PROGRAM's set-id bits and your ids
  --no-secure            never model AT_SECURE
  --library-path PATH    like ld.so --library-path (replaces LD_LIBRARY_PATH)
  --inhibit-rpath LIST   like ld.so --inhibit-rpath
  --inhibit-cache        like ld.so --inhibit-cache
  --cache FILE           read FILE as /etc/ld.so.cache (lines still name
                         /etc/ld.so.cache, as the loader prints it)
  --root DIR             a sysroot: PROGRAM, its libraries, /etc/ld.so.cache,
                         /etc/ld.so.preload and the interpreter are those
                         inside DIR; symlinks, $ORIGIN and ".." are resolved
                         as after chroot(DIR) and never leave it.  Printed
                         paths are the paths inside DIR
  --ld-so PATH           the loader whose configuration is used (default:
                         PROGRAM's PT_INTERP)
  --platform NAME        model another $PLATFORM (and legacy platform
                         subdirectory); default: the running loader's
  --hwcaps LIST          model these glibc-hwcaps subdirectories, highest
                         priority first (e.g. x86-64-v3,x86-64-v2; "none" for
                         none); they also select ld.so.cache entries
  --lib NAME             model another $LIB (e.g. lib64)
  --env NAME=VALUE       model PROGRAM's environment variable NAME (one of
                         LD_LIBRARY_PATH, LD_PRELOAD, LD_ORIGIN_PATH) without
                         setting it for ldsearch itself; "--env NAME" unsets it
  --all-lines            print every LD_DEBUG=libs line of the searches,
                         including the empty lines that close them
  --no-config-cache      ask the loader for its configuration (ld.so --help)
                         instead of reusing the answer cached under
                         $XDG_CACHE_HOME/ldshim (or ~/.cache/ldshim); the cache
                         key covers the loader file, the CPU, GLIBC_TUNABLES,
                         LD_HWCAP_MASK and the boot; LDSHIM_NO_CACHE=1 also
                         disables it

  -h, --help             show this help and exit
  -V, --version          show the version and exit

Exit status: 0 success; 1 PROGRAM would fail to start, or a dlopen would fail,
or (--diff, --replay) a search differs; 125 --diff could not run COMMAND
(glibc's message is printed on stderr); 2 usage error; 3 PROGRAM cannot be read
or is not an ELF program for this loader; 4 the loader's configuration could
not be read.
)";

struct Op {
    enum class Kind { from, dlopen, noload, dlmopen } kind;
    std::string arg;
};

[[noreturn]] void usage_error(const std::string& msg) {
    std::fprintf(stderr, "ldsearch: %s\nTry 'ldsearch --help' for more information.\n", msg.c_str());
    std::exit(kUsage);
}

}  // namespace

// The JSON document of a run (plain or tree mode), printed once at the end.
struct JsonOut {
    bool on = false;
    int indent = 2;  // -1: compact (a very deep tree would be quadratic in indentation)
    nlohmann::json doc;
    int print(int status) {
        doc["exit_status"] = status;
        std::printf("%s\n", doc.dump(indent).c_str());
        return status;
    }
};

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
        if (platform->empty() || platform->find('/') != std::string::npos) return "--platform: not a name: '" + *platform + "'";
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
                if (n.empty() || n.find('/') != std::string_view::npos) return "--hwcaps: bad name in '" + *hwcaps + "'";
                cfg.hwcaps_active.emplace_back(n);
                if (n == "x86-64-v2") cfg.isa_levels |= 2;
                if (n == "x86-64-v3") cfg.isa_levels |= 4;
                if (n == "x86-64-v4") cfg.isa_levels |= 8;
            }
    }
    std::vector<std::string> subdirs;
    for (const auto& h : cfg.hwcaps_active) subdirs.push_back("glibc-hwcaps/" + h + "/");
    subdirs.insert(subdirs.end(), legacy.begin(), legacy.end());
    cfg.subdirs = std::move(subdirs);
    return std::nullopt;
}

// ldsearch why: pick the lookup to explain, then print the explanation.
int explain(Engine& engine, Fs& fs, TraceRecorder& recorder, const std::vector<Op>& ops, const std::string& name,
            const std::string& program, JsonOut& json) {
    using K = TraceEvent::Kind;
    int requester = -1;
    for (const auto& op : ops) {
        requester = op.arg == program ? engine.main_object() : engine.find_object(op.arg);
        if (requester < 0) {
            std::fprintf(stderr, "ldsearch: --from %s: no such object is loaded\n", op.arg.c_str());
            return kUsage;
        }
    }
    std::vector<TraceEvent> events;
    std::string context;
    if (requester < 0) {
        // The startup lookup of NAME: asked by the first object (load order)
        // that needs it, or by the program for a preload.
        const auto& objs = engine.objects();
        for (std::size_t i = 0; i < objs.size() && requester < 0; ++i)
            for (const auto& n : objs[i].facts.needed)
                if (n == name) requester = static_cast<int>(i);
        auto& ev = recorder.events;
        std::size_t at = ev.size();
        for (std::size_t i = 0; i < ev.size(); ++i)
            if (ev[i].kind == K::find_library && ev[i].text == name) {
                at = i;
                break;
            }
        if (requester >= 0 && at < ev.size()) {
            // The search ends with end_search; a result right after it is
            // this search's (a failed one has none).
            std::size_t end = at + 1;
            while (end < ev.size() && ev[end].kind != K::end_search) ++end;
            if (end < ev.size()) ++end;
            if (end < ev.size() && ev[end].kind == K::result && ev[end].detail == name) ++end;
            events.assign(ev.begin() + static_cast<long>(at), ev.begin() + static_cast<long>(end));
            context = "needed by " + object_display(engine, requester, program) + ", at startup";
        } else if (requester >= 0) {
            // Matched silently (already loaded, or a path): ask again.
            recorder.events.clear();
            engine.map_object(requester, name, 0, 0);
            events = recorder.events;
            context = "needed by " + object_display(engine, requester, program) + ", at startup";
        }
    }
    if (events.empty()) {
        if (requester < 0) requester = engine.main_object();
        recorder.events.clear();
        DlopenRequest req;
        req.caller = requester;
        req.name = name;
        engine.dlopen(req);
        events = recorder.events;
        context = "dlopen from " + object_display(engine, requester, program);
    }
    WhyReport r = explain_lookup(engine, fs, requester, name, events, program);
    int status = r.found ? kOk : kLoadFailed;
    auto kind = [](WhyItem::Kind k) {
        return k == WhyItem::Kind::searched ? "searched" : k == WhyItem::Kind::skipped ? "skipped" : "note";
    };
    if (json.on) {
        json.doc["name"] = name;
        json.doc["lookup"] = context;
        json.doc["items"] = nlohmann::json::array();
        for (const auto& it : r.items)
            json.doc["items"].push_back({{"kind", kind(it.kind)}, {"where", it.where}, {"reason", it.reason}});
        json.doc["verdict"] = r.verdict;
        json.doc["found"] = r.found;
        return json.print(status);
    }
    std::printf("%s (%s):\n", name.c_str(), context.c_str());
    for (const auto& it : r.items) std::printf("  %-9s %s: %s\n", kind(it.kind), it.where.c_str(), it.reason.c_str());
    std::printf("verdict: %s\n", r.verdict.c_str());
    return status;
}

int main(int argc, char** argv) {
    std::vector<Op> ops;
    enum class Mode { search, tree, why } mode = Mode::search;
    std::string why_name;
    JsonOut json;
    std::string color = "auto";
    int first = 1;
    if (argc > 1 && (std::strcmp(argv[1], "--diff") == 0 || std::strcmp(argv[1], "--replay") == 0)) {
        bool diff = std::strcmp(argv[1], "--diff") == 0, keep = false, as_json = false;
        std::vector<std::string> rest;
        int i = 2;
        for (; i < argc; ++i) {
            if (std::strcmp(argv[i], "--json") == 0) {
                as_json = true;
                continue;
            }
            if (!diff) break;
            if (std::strcmp(argv[i], "--") == 0) {
                ++i;
                break;
            }
            if (std::strcmp(argv[i], "--keep") == 0) keep = true;
            else usage_error(std::string("--diff: unexpected '") + argv[i] + "' (use --diff [--keep] [--json] -- COMMAND)");
        }
        for (; i < argc; ++i) rest.emplace_back(argv[i]);
        if (rest.empty()) usage_error(diff ? "--diff: missing COMMAND after --" : "--replay: missing LOG");
        return diff ? ldsearch::diff_command(rest, keep, as_json) : ldsearch::replay_logs(rest, as_json);
    }
    if (argc > 1 && std::strcmp(argv[1], "tree") == 0) {
        mode = Mode::tree;
        first = 2;
    } else if (argc > 1 && std::strcmp(argv[1], "why") == 0) {
        mode = Mode::why;
        first = 2;
    }
    std::optional<std::string> cache_file, ld_so, library_path, inhibit_rpath, platform, hwcaps, dst_lib, root;
    std::optional<bool> secure;
    bool keep_going = false, inhibit_cache = false, all_lines = false, no_cache = false;
    std::string program;
    std::vector<std::pair<std::string, std::optional<std::string>>> env_over;

    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* opt) -> std::string {
            if (i + 1 >= argc) usage_error(std::string("option '") + opt + "' requires an argument");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::fputs(kHelp, stdout);
            return kOk;
        } else if (a == "-V" || a == "--version") {
            std::printf("ldsearch (ldshim) %s\n", LDSHIM_VERSION_STRING);
            return kOk;
        } else if (a == "--dlopen") {
            ops.push_back({Op::Kind::dlopen, value("--dlopen")});
        } else if (a == "--dlopen-noload") {
            ops.push_back({Op::Kind::noload, value("--dlopen-noload")});
        } else if (a == "--dlmopen") {
            ops.push_back({Op::Kind::dlmopen, value("--dlmopen")});
        } else if (a == "--from") {
            ops.push_back({Op::Kind::from, value("--from")});
        } else if (a == "--keep-going") {
            keep_going = true;
        } else if (a == "--secure") {
            secure = true;
        } else if (a == "--no-secure") {
            secure = false;
        } else if (a == "--library-path") {
            library_path = value("--library-path");
        } else if (a == "--inhibit-rpath") {
            inhibit_rpath = value("--inhibit-rpath");
        } else if (a == "--inhibit-cache") {
            inhibit_cache = true;
        } else if (a == "--cache") {
            cache_file = value("--cache");
        } else if (a == "--ld-so") {
            ld_so = value("--ld-so");
        } else if (a == "--root") {
            root = value("--root");
        } else if (a == "--platform") {
            platform = value("--platform");
        } else if (a == "--hwcaps") {
            hwcaps = value("--hwcaps");
        } else if (a == "--lib") {
            dst_lib = value("--lib");
        } else if (a == "--env") {
            std::string kv = value("--env");
            auto eq = kv.find('=');
            std::string name = kv.substr(0, eq);
            if (name != "LD_LIBRARY_PATH" && name != "LD_PRELOAD" && name != "LD_ORIGIN_PATH")
                usage_error("--env: unsupported variable '" + name + "'");
            env_over.emplace_back(name, eq == std::string::npos ? std::nullopt
                                                                : std::optional<std::string>(kv.substr(eq + 1)));
        } else if (a == "--no-config-cache") {
            no_cache = true;
        } else if (a == "--all-lines") {
            all_lines = true;
        } else if (a == "--json") {
            json.on = true;
        } else if (a == "--color" || a.rfind("--color=", 0) == 0) {
            color = a.size() > 8 ? a.substr(8) : "always";
            if (color != "auto" && color != "always" && color != "never")
                usage_error("--color: expected auto, always or never, not '" + color + "'");
        } else if (a == "--") {
            if (i + 1 < argc) program = argv[++i];
            if (i + 1 < argc) usage_error("too many arguments");
        } else if (a.size() > 1 && a[0] == '-') {
            usage_error("unrecognized option '" + a + "'");
        } else if (mode == Mode::why && why_name.empty()) {
            why_name = a;
        } else if (program.empty()) {
            program = a;
        } else {
            usage_error("too many arguments");
        }
    }
    if (mode == Mode::why && why_name.empty()) usage_error("why: missing NAME");
    if (program.empty()) usage_error("missing PROGRAM");
    if (mode == Mode::why)
        for (const auto& op : ops)
            if (op.kind != Op::Kind::from) usage_error("why: --dlopen and friends do not apply; use --from");

    std::unique_ptr<Fs> fs_owner;
    RootFs* rootfs = nullptr;
    if (root) {
        struct stat st {};
        if (::stat(root->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            std::fprintf(stderr, "ldsearch: --root %s: not a directory\n", root->c_str());
            return kBadInput;
        }
        auto r = std::make_unique<RootFs>(*root);
        rootfs = r.get();
        fs_owner = std::move(r);
    } else {
        fs_owner = std::make_unique<RealFs>();
    }
    Fs& fs = *fs_owner;
    // A path inside --root as a host path (for the few calls made outside Fs).
    auto host = [&](const std::string& p) -> std::string {
        if (!rootfs) return p;
        auto h = rootfs->host_path(p, nullptr);
        return h ? *h : *root + "/" + p;
    };

    // PROGRAM without a slash is looked up in PATH, as a shell would; argv[0]
    // (and so every "from file" label) stays as typed.
    std::string path = ldsearch::find_program(program, [&](const std::string& c) { return access(host(c).c_str(), X_OK) == 0; });
    if (path.empty()) {
        std::fprintf(stderr, "ldsearch: %s: command not found in PATH\n", program.c_str());
        return kBadInput;
    }

    auto img = fs.open(path);
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
    if (facts.facts.elf_class != 2 || facts.facts.machine != 62) {
        std::fprintf(stderr, "ldsearch: %s: not an x86-64 ELF program (class %u, machine %u)\n", program.c_str(),
                     facts.facts.elf_class, facts.facts.machine);
        return kBadInput;
    }
    if (!facts.facts.interp) {
        std::fprintf(stderr, "ldsearch: %s: not a dynamic executable (no PT_INTERP)\n", program.c_str());
        return kBadInput;
    }

    std::string err;
    // Inside --root, the root's own loader describes its directories.
    std::string rtld = ld_so.value_or(host(*facts.facts.interp));
    auto cfg = query_loader_cached(rtld, no_cache ? std::string() : default_cache_dir(), &err);
    if (!cfg) {
        std::fprintf(stderr, "ldsearch: %s\n", err.c_str());
        return kLoaderQuery;
    }
    if (auto bad = model_machine(*cfg, platform, hwcaps, dst_lib)) usage_error(*bad);
    cfg->inhibit_cache = inhibit_cache;
    if (cache_file) cfg->cache_path = *cache_file;
    // --cache names a host file even with --root.
    RealFs host_fs;
    LdCache cache = LdCache::load(cache_file ? static_cast<Fs&>(host_fs) : fs, cfg->cache_path);

    EngineOptions opts;
    opts.argv0 = program;
    opts.keep_going = keep_going;
    opts.secure = secure ? *secure : ldsearch::starts_secure(host(path));
    // The modelled environment: ours, with --env overrides.
    auto modelled = [&](const std::string& name) -> std::optional<std::string> {
        std::optional<std::string> v;
        if (const char* e = std::getenv(name.c_str())) v = std::string(e);
        for (const auto& [n, val] : env_over)
            if (n == name) v = val;
        return v;
    };
    if (library_path) {
        opts.library_path = library_path;
        opts.library_path_label = Label::library_path_option;
    } else {
        opts.library_path = modelled("LD_LIBRARY_PATH");
    }
    opts.inhibit_rpath = inhibit_rpath;
    opts.preload = modelled("LD_PRELOAD").value_or("");
    opts.origin_path = modelled("LD_ORIGIN_PATH");

    // The tree and why show everything, missing libraries included.
    if (mode != Mode::search) opts.keep_going = true;
    LdDebugPrinter printer(stdout, !all_lines);
    TraceRecorder recorder;
    TraceSink* sink = json.on || mode == Mode::why ? static_cast<TraceSink*>(&recorder)
                      : mode == Mode::tree        ? nullptr
                                                  : &printer;
    Engine engine(std::move(*cfg), fs, cache, sink, opts);
    StartResult sr = engine.start(path);
    if (json.on) {
        json.doc["mode"] = mode == Mode::tree ? "tree" : mode == Mode::why ? "why" : "search";
        json.doc["program"] = program;
        json.doc["secure"] = opts.secure;
        json.doc["warnings"] = sr.warnings;
        if (!sr.ok) json.doc["error"] = sr.error;
    }
    for (const auto& w : sr.warnings) {
        if (json.on) break;
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", w.c_str());
    }
    if (mode == Mode::why) return explain(engine, fs, recorder, ops, why_name, program, json);
    if (mode == Mode::tree) {
        DepNode top = dependency_tree(engine);
        bool missing = false;
        std::size_t deepest = 0;
        std::vector<std::pair<const DepNode*, std::size_t>> stack{{&top, 0}};
        while (!stack.empty()) {
            auto [n, depth] = stack.back();
            stack.pop_back();
            missing = missing || n->how == DepNode::How::not_found;
            deepest = std::max(deepest, depth);
            for (const auto& c : n->children) stack.emplace_back(&c, depth + 1);
        }
        if (deepest > 64) json.indent = -1;
        if (json.on) {
            json.doc["tree"] = ldsearch::tree_json(engine, top, program);
            return json.print(missing ? kLoadFailed : kOk);
        }
        ldsearch::Colors colors{ldsearch::want_colors(color, stdout)};
        ldsearch::print_tree(stdout, engine, top, program, colors);
        return missing ? kLoadFailed : kOk;
    }
    if (!sr.ok) {
        if (json.on) {
            json.doc["searches"] = ldsearch::searches_json(recorder.events);
            return json.print(kLoadFailed);
        }
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", sr.error.c_str());
        return kLoadFailed;
    }
    if (json.on) {
        json.doc["searches"] = ldsearch::searches_json(recorder.events);
        recorder.events.clear();
        json.doc["dlopens"] = nlohmann::json::array();
    }

    int status = kOk;
    int caller = 0;
    for (const auto& op : ops) {
        if (op.kind == Op::Kind::from) {
            caller = op.arg == program ? 0 : engine.find_object(op.arg);
            if (caller < 0) {
                std::fprintf(stderr, "ldsearch: --from %s: no such object is loaded\n", op.arg.c_str());
                return kUsage;
            }
            continue;
        }
        DlopenRequest req;
        req.caller = caller;
        req.name = op.arg;
        req.noload = op.kind == Op::Kind::noload;
        if (op.kind == Op::Kind::dlmopen) req.ns_mode = DlopenRequest::Ns::new_ns;
        MapOutcome r = engine.dlopen(req);
        if (json.on) {
            nlohmann::json d;
            d["name"] = op.arg;
            d["mode"] = op.kind == Op::Kind::noload ? "noload" : op.kind == Op::Kind::dlmopen ? "dlmopen" : "dlopen";
            d["from"] = caller == 0 ? program : engine.objects()[static_cast<std::size_t>(caller)].name;
            d["searches"] = ldsearch::searches_json(recorder.events);
            recorder.events.clear();
            if (r.error) {
                d["error"] = r.error->text();
                status = kLoadFailed;
            }
            d["result"] = r.object < 0 ? nlohmann::json(nullptr)
                                       : nlohmann::json(object_display(engine, r.object, program));
            json.doc["dlopens"].push_back(std::move(d));
            continue;
        }
        if (r.error) {
            std::fflush(stdout);
            std::fprintf(stderr, "%s\n", r.error->text().c_str());
            status = kLoadFailed;
        } else if (r.object < 0) {
            std::printf("(not loaded)\n");  // RTLD_NOLOAD miss: dlopen returns NULL without an error
        } else {
            const auto& o = engine.objects()[static_cast<std::size_t>(r.object)];
            std::printf("%s\n", o.kind == Object::Kind::main ? program.c_str() : o.name.c_str());
        }
    }
    return json.on ? json.print(status) : status;
}
