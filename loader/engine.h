// The search engine: glibc's _dl_map_object (2.28 to 2.43, their
// differences in LoaderBehaviour) and everything it depends on, over a
// model of one process.  No global state and no system calls:
// files come from an injected Fs, events go to an injected TraceSink.
//
// The same engine serves startup emulation (ldsearch PROGRAM), dlopen
// emulation (ldsearch --dlopen, the runtime resolver) and the tests.
#pragma once

#include "loader/elf_facts.h"
#include "loader/fs.h"
#include "loader/ld_cache.h"
#include "loader/loader_config.h"
#include "loader/path_pool.h"
#include "loader/tokens.h"
#include "loader/trace.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ldshim::loader {

struct Object {
    enum class Kind : std::uint8_t { main, rtld, vdso, library, rtld_proxy };
    Kind kind = Kind::library;
    std::string name;                // l_name: the path it was opened under ("" for main)
    std::vector<std::string> names;  // l_libname: every name it answered to
    bool soname_added = false;
    ObjectFacts facts;
    std::optional<std::string> origin;  // $ORIGIN; nullopt = unknown
    int loader = -1;                    // l_loader: who needed it; -1 for dlopen'ed
    unsigned ns = 0;
    FileId id;              // zero for main, ld.so and the vDSO, as in glibc
    bool dlopened = false;  // lt_loaded
    bool removed = false;   // unloaded by a failed dlopen
    Source found_by = Source::none;
    int found_via = -1;  // owner of the list it was found in, if any

    // Lazily built RPATH / RUNPATH lists (glibc's cache_rpath states);
    // `dropped`: every directory turned out missing, so glibc gave it up.
    enum class List : std::uint8_t { unbuilt, none, built, dropped };
    List rpath_state = List::unbuilt, runpath_state = List::unbuilt;
    DirList rpath_dirs, runpath_dirs;
    // The elements that expanded to nothing when the list was built.
    DstDrops rpath_drops, runpath_drops;

    // Whether glibc knows the object by `n`: its l_name, its SONAME, or
    // (`added`) a name a search that reached its file added
    // (_dl_name_match_p, and _dl_map_object's SONAME check).
    bool answers_to(std::string_view n, bool added = true) const {
        if (name == n || (facts.soname && *facts.soname == n)) return true;
        return added && std::find(names.begin(), names.end(), n) != names.end();
    }
};

struct EngineOptions {
    std::string argv0;                        // how the program was invoked
    bool secure = false;                      // AT_SECURE
    std::optional<std::string> library_path;  // LD_LIBRARY_PATH (ignored if secure)
    Label library_path_label = Label::ld_library_path;
    std::optional<std::string> inhibit_rpath;  // ld.so --inhibit-rpath
    std::optional<std::string> origin_path;    // LD_ORIGIN_PATH
    // The main program's $ORIGIN as its loader took it (the runtime: from
    // /proc/self/exe, host::main_program_origin); unset: from its path.
    std::optional<std::string> main_origin;
    std::string preload;  // LD_PRELOAD
    std::optional<std::string> preload_file = "/etc/ld.so.preload";
    bool keep_going = false;  // LD_TRACE_LOADED_OBJECTS: missing libraries are not fatal
    bool has_vdso = true;
};

// Mode bits of one lookup (a subset of glibc's).
enum MapMode : unsigned {
    kModeCallmap = 1u << 0,        // dlopen: the caller only chooses the search
    kModeSecurePreload = 1u << 1,  // __RTLD_SECURE
    kModeNoload = 1u << 2,         // RTLD_NOLOAD
};

// A failed load, in the three parts glibc keeps: dlerror() prints
// "OBJNAME: ERRSTRING: strerror(ERRCODE)", a failed preload only ERRSTRING.
struct LoadError {
    std::string objname;
    std::string errstring;
    int errcode = 0;
    std::string text() const;
    // The same with ld.so's own short strerror, as a failed startup prints it.
    std::string rtld_text() const;
};

struct MapOutcome {
    int object = -1;      // the object, or -1 (not found, NOLOAD miss, faked)
    bool is_new = false;  // a new object was added
    std::optional<LoadError> error;
};

struct DlopenRequest {
    int caller = 0;                   // object index containing the return address; -1: none
    std::optional<std::string> name;  // nullopt = dlopen(NULL)
    bool noload = false;
    enum class Ns : std::uint8_t { caller, new_ns, explicit_ns } ns_mode = Ns::caller;
    unsigned ns = 0;
};

// What a live process's start-up loaded, as its loader holds it (the
// runtime reads it from memory): what the emulated start-up takes in place
// of the files it finds now, which may have been replaced or removed since.
struct ProcessStart {
    struct Loaded {
        std::string name;  // l_name
        ObjectFacts facts;
        FileId id;  // of the file mapped; zero if unknown
    };
    // In the loader's order, without the main program, ld.so and the vDSO.
    std::vector<Loaded> loaded;
    // The directory current at start-up, from which glibc took the $ORIGIN
    // of an object named by a relative path; empty if unknown (then: now).
    std::string cwd;
};

struct StartResult {
    bool ok = true;
    std::string error;                  // "error while loading shared libraries" text
    std::vector<std::string> warnings;  // ld.so's stderr lines (failed preloads)
};

class Engine {
public:
    Engine(LoaderConfig cfg, Fs& fs, const LdCache& cache, TraceSink* sink, EngineOptions opts);

    // Startup: the main program, ld.so, the vDSO, search paths, preloads and
    // the breadth-first DT_NEEDED walk.  `program` is the file to read;
    // `opened`, if the caller already opened it through the same Fs.
    // `process`, if given: what a live process's start-up loaded.  The
    // emulation then takes each new object from it, not from the file it
    // finds now; a search that finds nothing the start-up loaded adds
    // nothing.
    StartResult start(const std::string& program, OpenResult opened = {},
                      std::optional<ProcessStart> process = std::nullopt);

    // dlopen/dlmopen after startup.  On failure the objects it added are
    // removed again, as glibc does; what the search learned is kept.
    MapOutcome dlopen(const DlopenRequest& req);

    // One lookup with an explicit loader, without loading dependencies.
    MapOutcome map_object(int loader, const std::string& name, unsigned ns, unsigned mode);

    const std::vector<Object>& objects() const { return objects_; }
    bool secure() const { return opts_.secure; }
    // The objects LD_PRELOAD and /etc/ld.so.preload loaded at startup, in order.
    const std::vector<int>& preloads() const { return preloads_; }
    int main_object() const { return main_; }
    const LoaderConfig& config() const { return cfg_; }
    // How many times a search has consulted the cache: the moments glibc
    // reads ld.so.cache, if it has not got it (a runtime that follows the
    // file as it changes needs to know).
    std::uint64_t cache_lookups() const { return cache_lookups_; }
    // How many times a search has changed what glibc records of the
    // directories it searched: a status learnt (existing or missing), a
    // list dropped.  A runtime that answers searches for glibc must let
    // glibc learn the same.
    std::uint64_t record_changes() const { return record_changes_; }
    // What the real loader records of an absolute directory the model's
    // lists name (one status per subdirectory index), taken in place of
    // what the model's emulation learnt.  Ignored for a directory no list
    // of the model names, or a record of another shape.
    void take_dir_status(const std::string& dirname, const std::vector<DirStatus>& status);
    // One name or list element with `owner`'s tokens expanded under this
    // process's rules; "" when the loader would drop it (`why` says why).
    std::string expand(const Object& owner, std::string_view s, DstDrop* why = nullptr) const;
    // The object named `what` in namespace 0: by l_name, any loaded name or
    // SONAME, or a path to the same file.  -1 if none.
    int find_object(const std::string& what) const;
    // Every object of namespace 0 that answers to `what` by its l_name, a
    // name it was asked for or its SONAME, in load order (two copies of one
    // library can share a SONAME).
    std::vector<int> objects_named(const std::string& what) const;

    // Keeping the model in step with a live process (resolver/live_process.h): add an
    // object that was loaded without the engine (its loader is unknown, as
    // for anything dlopen'ed), or mark one as gone.
    int adopt(Object o);
    void forget(int idx);
    // Drop forgotten and rolled-back objects, renumbering the rest, once they
    // outnumber the live ones (a process that dlopens and dlcloses in a loop
    // must not grow the model).  Returns true if indices changed; `remap`
    // (if given) then maps each old index to its new one, -1 for dropped.
    bool compact(std::vector<int>* remap = nullptr);
    // Startup under LD_TRACE_LOADED_OBJECTS continues past missing libraries;
    // a live process that got this far has none, and its dlopens fail normally.
    void set_keep_going(bool on) { opts_.keep_going = on; }
    // Called each time a search is about to consult the cache: glibc reads
    // ld.so.cache only then, and a runtime that follows the file refreshes
    // the cache this engine was given there (a search that ends before the
    // cache costs it nothing).
    void set_before_cache_lookup(std::function<void()> f) { before_cache_lookup_ = std::move(f); }

private:
    struct OpenOutcome {
        enum class Status : std::uint8_t { not_found, found, fatal } status = Status::not_found;
        std::string path;
        std::shared_ptr<const FileImage> image;
        LoadError error;
        bool rejected = false;         // not_found: the file exists but verification refused it
        Source source = Source::none;  // found: the rule that found it
        int owner = -1;                // found: the object whose list it was in
    };
    struct Request {
        std::string name;
        unsigned mode = 0;
        bool found_other_class = false;
    };

    // Builds the event only when someone listens: the runtime resolver runs
    // without a sink and must not pay for copying paths into events.
    template <typename... A>
    void emit(TraceEvent::Kind kind, A&&... a) {
        if (sink_) sink_->event(TraceEvent{kind, std::forward<A>(a)...});
    }
    template <typename Make>
    void emit_made(Make&& make) {
        if (sink_) sink_->event(make());
    }
    std::string display_name(const std::optional<std::string>& where) const;
    DstValues dst_values(const Object& o) const;
    DstPolicy dst_policy(const Object& o) const;
    DirList fill_list(std::string_view str, std::string_view seps, Label what, const std::optional<std::string>& where,
                      const Object& owner, DstDrops* drops = nullptr);
    const DirList* object_list(int idx, bool runpath);
    OpenOutcome open_verify(const std::string& path, Request& req);
    OpenOutcome open_path(const DirList& list, Request& req, int owner, Source src);
    // _dl_map_object in two halves: where the file is (a search, or a name
    // with a slash), then whether and how it joins the process.
    OpenOutcome search(int loader, Request& req, unsigned ns);
    OpenOutcome search_rpaths(int loader, Request& req);
    OpenOutcome search_cache(int loader, Request& req);
    MapOutcome admit(int loader, const Request& req, unsigned ns, OpenOutcome found);
    // admit() while emulating a live process's start-up (process_start_).
    MapOutcome admit_loaded(int loader, const Request& req, unsigned ns, OpenOutcome found,
                            const std::string& path_asked);
    const ProcessStart::Loaded* next_loaded_at_start(const std::string& name, const std::string& path_asked,
                                                     const std::string& found_now);
    int loaded_by_path(const std::string& path) const;
    // Trace what a list of `idx` leaves out: dropped elements, or the whole
    // list when glibc gave it up.
    void report_list_gaps(int idx, bool runpath);
    void report_miss(const std::string& path, const OpenOutcome& o, bool dir_missing);
    void explain_candidate(const char* why);
    // The loader chain of `loader`: it, the object that loaded it, ..., up
    // to an object loaded by nobody (the main program or a dlopen'ed one).
    template <typename F>
    void for_each_in_chain(int loader, F&& f) const {
        for (int l = loader; l >= 0; l = objects_[static_cast<std::size_t>(l)].loader)
            if (!f(l)) return;
    }
    void print_header(const DirList& list, std::size_t from);
    int first_in_ns(unsigned ns) const;
    int match_loaded(const std::string& name, unsigned ns);
    void add_name(int idx, const std::string& name);
    int add_object(Object o);
    void index_object(int idx);  // into by_name_, by_soname_, by_id_; forget() takes it out
    // $ORIGIN of an object opened by `path`, a relative one from `cwd` (or
    // the directory current now, if empty).
    std::optional<std::string> origin_of_path(const std::string& path, const std::string& cwd = {});
    std::optional<LoadError> load_deps(std::vector<int> roots);
    std::optional<LoadError> walk_deps(std::vector<int> queue);
    void add_initial_objects(const std::string& program, const ObjectFacts& facts);
    std::vector<int> load_preloads(std::vector<std::string>& warnings);
    unsigned new_namespace() const;

    LoaderConfig cfg_;
    Fs& fs_;
    const LdCache& cache_;
    TraceSink* sink_;
    EngineOptions opts_;
    DirPool pool_;
    DirList system_;
    std::optional<DirList> env_;  // LD_LIBRARY_PATH list; nullopt = none
    std::vector<Object> objects_;
    // Indexes over objects_ for step A: which objects answer to a name, and
    // which SONAMEs have not been matched yet.  Entries are object indices in
    // load order.
    std::unordered_map<std::string, std::vector<int>> by_name_;
    std::unordered_map<std::string, std::vector<int>> by_soname_;
    // Which objects are a file (admit's same-file check), so that check costs
    // the same with 5 or 500 objects loaded.  A forgotten object leaves all
    // three indexes at once.
    struct FileIdHash {
        std::size_t operator()(const FileId& f) const noexcept { return f.ino * 0x9E3779B97F4A7C15ull ^ f.dev; }
    };
    std::unordered_map<FileId, std::vector<int>, FileIdHash> by_id_;
    std::size_t removed_ = 0;  // objects marked removed, not yet compacted away
    int main_ = -1;
    int rtld_ = -1;
    std::vector<int> preloads_;
    // What the live process's start-up loaded, while start() emulates it,
    // and how many of them the emulation has taken.
    std::optional<ProcessStart> process_start_;
    std::size_t taken_at_start_ = 0, next_at_start_ = 0;
    std::vector<std::string> tried_at_start_;           // the candidates of the current lookup
    std::unordered_map<std::string, int> start_paths_;  // what it loaded, by same_file_key of the l_name
    std::unordered_set<std::string> needed_at_start_;   // every DT_NEEDED of what it loaded
    // The loader's errno as it flows between system calls: it decides
    // whether a list is abandoned and what a failure's message says.
    int errno_ = 0;
    std::uint64_t cache_lookups_ = 0;
    std::function<void()> before_cache_lookup_;
    std::uint64_t record_changes_ = 0;
};

}  // namespace ldshim::loader
