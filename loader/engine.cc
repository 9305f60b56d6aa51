#include "loader/engine.h"

#include "loader/loader_env.h"
#include "loader/paths.h"
#include "loader/tokens.h"
#include "loader/verify.h"

#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ldshim::loader {
namespace {

constexpr std::uint64_t kDf1Pie = 0x08000000;

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// Why the loader will not map an object it found, or nullptr.
const char* refusal_of(const ObjectFacts& f, const LoaderBehaviour& b) {
    if (f.type != ET_DYN) return "cannot dynamically load executable";
    if (!f.has_dynamic) return "object file has no dynamic section";
    if ((f.flags_1 & kDf1Pie) && b.refuses_pie) return "cannot dynamically load position-independent executable";
    return nullptr;
}

// "dir + subdir" as a header shows it: without the final '/', except that
// "/" stays "/" and the empty cwd entry prints as nothing.
std::string header_item(const std::string& dir, const std::string& sub) {
    std::string s = dir + sub;
    if (s.empty() || s == "/") return s;
    s.pop_back();
    return s;
}

}  // namespace

Engine::Engine(LoaderConfig cfg, Fs& fs, const LdCache& cache, TraceSink* sink, EngineOptions opts)
    : cfg_(std::move(cfg)), fs_(fs), cache_(cache), sink_(sink), opts_(std::move(opts)), pool_(cfg_.subdirs.size()) {
    objects_.reserve(128);
    // The system directories are the first pool entries.
    for (const auto& d : cfg_.system_dirs) system_.push_back(pool_.intern(d, Label::system, std::nullopt));
}

std::string Engine::display_name(const std::optional<std::string>& where) const {
    // glibc's DSO_FILENAME: the main program (l_name "") shows as argv[0].
    if (!where) return {};
    return where->empty() ? opts_.argv0 : *where;
}

std::string LoadError::text() const {
    std::string s = objname.empty() ? errstring : objname + ": " + errstring;
    if (errcode != 0) s += std::string(": ") + std::strerror(errcode);
    return s;
}

// ld.so has its own __strerror_r (elf/dl-minimal.c): six messages, and
// "Error N" for every other code.  Startup's fatal message goes through it.
std::string LoadError::rtld_text() const {
    std::string s = objname.empty() ? errstring : objname + ": " + errstring;
    if (errcode == 0) return s;
    switch (errcode) {
        case ENOMEM:
        case EINVAL:
        case ENOENT:
        case EPERM:
        case EIO:
        case EACCES: return s + ": " + std::strerror(errcode);
        default: return s + ": Error " + std::to_string(errcode);
    }
}

DstValues Engine::dst_values(const Object& o) const { return {o.origin, cfg_.platform, cfg_.dst_lib}; }

DstPolicy Engine::dst_policy(const Object& o) const {
    return {opts_.secure, o.kind == Object::Kind::main, &cfg_.system_dirs};
}

std::string Engine::expand(const Object& owner, std::string_view s, DstDrop* why) const {
    if (count_dsts(s) == 0) return std::string(s);
    return substitute_dsts(s, dst_values(owner), dst_policy(owner), why);
}

// glibc's fillin_rpath: the list's directories, each interned.
DirList Engine::fill_list(std::string_view str, std::string_view seps, Label what,
                          const std::optional<std::string>& where, const Object& owner, DstDrops* drops) {
    DirList out;
    for (const auto& dir : expand_search_list(str, seps, dst_values(owner), dst_policy(owner), drops))
        out.push_back(pool_.intern(dir, what, where));
    return out;
}

// glibc's cache_rpath + decompose_rpath: built on first use, then reused;
// "none" is remembered too.
const DirList* Engine::object_list(int idx, bool runpath) {
    Object& o = objects_[static_cast<std::size_t>(idx)];
    auto& state = runpath ? o.runpath_state : o.rpath_state;
    auto& dirs = runpath ? o.runpath_dirs : o.rpath_dirs;
    if (state == Object::List::none || state == Object::List::dropped) return nullptr;
    if (state == Object::List::built) return &dirs;
    state = Object::List::none;
    const auto& str = runpath ? o.facts.runpath : o.facts.effective_rpath();
    if (!str) return nullptr;
    // --inhibit-rpath: exact l_name matches; a trailing empty entry is ignored.
    if (opts_.inhibit_rpath && !opts_.secure) {
        auto names = split_path(*opts_.inhibit_rpath, ":");
        if (names.size() > 1 && names.back().empty()) names.pop_back();
        for (auto n : names)
            if (n == o.name) return nullptr;
    }
    if (str->empty()) return nullptr;
    dirs = fill_list(*str, kObjectListSeparators, runpath ? Label::runpath : Label::rpath, o.name, o,
                     runpath ? &o.runpath_drops : &o.rpath_drops);
    if (dirs.empty()) return nullptr;
    state = Object::List::built;
    return &dirs;
}

void Engine::print_header(const DirList& list, std::size_t from) {
    if (!sink_) return;
    const DirEntry* first = list[from];
    std::string joined;
    bool any = false;
    for (std::size_t i = from; i < list.size() && list[i]->what == first->what; ++i) {
        for (std::size_t c = 0; c < cfg_.subdirs.size(); ++c) {
            if (list[i]->status[c] == DirStatus::nonexisting) continue;
            if (any) joined += ':';
            joined += header_item(list[i]->dirname, cfg_.subdirs[c]);
            any = true;
        }
    }
    TraceEvent e{TraceEvent::Kind::search_path, std::move(joined)};
    e.label = first->what;
    if (first->where) e.where = display_name(first->where);
    sink_->event(e);
}

// glibc's open_verify on one candidate path.
Engine::OpenOutcome Engine::open_verify(const std::string& path, Request& req) {
    OpenOutcome out;
    if (process_start_) tried_at_start_.push_back(path);
    auto r = fs_.open(path);
    if (!r.image) {
        errno_ = r.error;
        explain_candidate("no such file");
        return out;
    }
    // open_verify clears errno once the file is open: a lookup that tries
    // nothing after an accepted file fails with no strerror text.
    errno_ = 0;
    // The loader's own class and machine: a library of another is skipped.
    HostAbi abi;
    abi.elf_class = cfg_.elf_class;
    abi.data = cfg_.elf_data;
    abi.machine = cfg_.machine;
    auto v = verify_candidate(*r.image, abi);
    switch (v.verdict) {
        case Verdict::accept: break;
        case Verdict::skip_class:
            req.found_other_class = true;
            errno_ = ENOENT;
            out.rejected = true;
            explain_candidate("incompatible ELF class");
            emit_made([&] { return TraceEvent::rejected(path, "wrong ELF class"); });
            return out;
        case Verdict::skip_machine:
        case Verdict::skip_not_suid:
            errno_ = ENOENT;
            out.rejected = true;
            explain_candidate("incompatible ELF machine");
            emit_made([&] { return TraceEvent::rejected(path, "wrong ELF machine"); });
            return out;
        case Verdict::fatal:
            out.status = OpenOutcome::Status::fatal;
            out.error = {path, v.message, v.error};
            return out;
    }
    out.status = OpenOutcome::Status::found;
    out.path = path;
    out.image = std::move(r.image);
    return out;
}

// glibc's open_path: every directory of the list, every subdirectory.
Engine::OpenOutcome Engine::open_path(const DirList& list, Request& req, int owner, Source src) {
    const bool runpath = src == Source::runpath;
    std::optional<Label> current;
    bool any = false;
    // A live process's start-up, emulated now: a directory missing now may
    // have been there then, so its candidates are noted for the match with
    // what the start-up loaded (admit_loaded), though not opened, and no
    // list is given up (glibc's own record replaces the statuses after it).
    const bool prune = !process_start_;
    for (std::size_t i = 0; i < list.size(); ++i) {
        DirEntry& d = *list[i];
        // A header per run of entries that share a label (the pooled one).
        if (current != d.what) {
            current = d.what;
            print_header(list, i);
        }
        if (sink_ &&
            std::all_of(d.status.begin(), d.status.end(), [](DirStatus x) { return x == DirStatus::nonexisting; }))
            emit_made([&] {
                return TraceEvent::skipped(Skip::dir_missing, owner, d.what, d.dirname.empty() ? "." : d.dirname);
            });
        bool here_any = false;
        for (std::size_t c = 0; c < cfg_.subdirs.size(); ++c) {
            if (d.status[c] == DirStatus::nonexisting) {
                if (!prune) tried_at_start_.push_back(d.dirname + cfg_.subdirs[c] + req.name);
                continue;
            }
            std::string cand = d.dirname + cfg_.subdirs[c] + req.name;
            emit(TraceEvent::Kind::trying, cand);
            OpenOutcome o = open_verify(cand, req);
            if (o.status == OpenOutcome::Status::fatal) return o;
            bool ok = o.status == OpenOutcome::Status::found;
            if (d.status[c] == DirStatus::unknown) {
                ++record_changes_;
                if (ok) {
                    d.status[c] = DirStatus::existing;
                } else {
                    // Does the directory exist at all?  Before 2.38 glibc
                    // strips the final character, so "/" is stat'ed as "" and
                    // pruned; later ones stat "DIR/" (as DIR, for a directory).
                    std::string dir = d.dirname + cfg_.subdirs[c];
                    if (cfg_.behaviour.root_dir_stat_bug || dir.size() > 1) dir.pop_back();
                    auto st = fs_.stat(dir);
                    if (st.error != 0) errno_ = st.error;
                    d.status[c] = (st.error == 0 && st.is_dir) ? DirStatus::existing : DirStatus::nonexisting;
                }
            }
            here_any |= d.status[c] != DirStatus::nonexisting;
            // Secure preloads must carry the set-user-ID bit.
            if (ok && (req.mode & kModeSecurePreload) && opts_.secure && !(o.image->mode() & S_ISUID)) {
                ok = false;
                o.rejected = true;
                errno_ = ENOENT;
                if (cfg_.behaviour.explains_candidates) emit(TraceEvent::Kind::refused_not_suid, cand);
                emit_made([&] { return TraceEvent::rejected(cand, "not set-user-ID"); });
            }
            if (ok) {
                o.source = src;
                o.owner = owner;
                return o;
            }
            report_miss(cand, o, d.status[c] == DirStatus::nonexisting);
        }
        // Something other than "missing" or "forbidden" ends this list (and,
        // before 2.39, "not a directory" too).
        bool goes_on =
            errno_ == ENOENT || errno_ == EACCES || (errno_ == ENOTDIR && !cfg_.behaviour.non_directory_ends_list);
        if (here_any && !goes_on) return {};
        any |= here_any;
    }
    // A list whose directories all turned out missing is dropped for good
    // (RPATH/RUNPATH only; the system and environment lists stay).
    if (!any && owner >= 0 && prune) {
        ++record_changes_;
        Object& o = objects_[static_cast<std::size_t>(owner)];
        (runpath ? o.runpath_state : o.rpath_state) = Object::List::dropped;
        (runpath ? o.runpath_dirs : o.rpath_dirs).clear();
    }
    return {};
}

void Engine::take_dir_status(const std::string& dirname, const std::vector<DirStatus>& status) {
    if (dirname.empty() || dirname[0] != '/') return;  // relative: never pruned, by either
    DirEntry* d = pool_.find(dirname);
    if (d && d->status.size() == status.size()) d->status = status;
}

// glibc 2.43's note on a candidate open_verify could not use.
void Engine::explain_candidate(const char* why) {
    if (cfg_.behaviour.explains_candidates) emit(TraceEvent::Kind::candidate_failed, why);
}

void Engine::report_miss(const std::string& path, const OpenOutcome& o, bool dir_missing) {
    if (!sink_ || o.rejected) return;  // a rejection was reported by open_verify
    emit_made([&] {
        std::string why = dir_missing        ? "the directory does not exist"
                          : errno_ == ENOENT ? "no such file"
                                             : std::string(std::strerror(errno_));
        return TraceEvent::missed(path, std::move(why));
    });
}

void Engine::report_list_gaps(int idx, bool runpath) {
    if (!sink_) return;
    const Object& o = objects_[static_cast<std::size_t>(idx)];
    Label label = runpath ? Label::runpath : Label::rpath;
    if ((runpath ? o.runpath_state : o.rpath_state) == Object::List::dropped) {
        emit_made([&] { return TraceEvent::skipped(Skip::list_dropped, idx, label); });
        return;
    }
    for (const auto& drop : runpath ? o.runpath_drops : o.rpath_drops)
        emit_made([&] {
            return TraceEvent::skipped(Skip::element_dropped, idx, label, drop.first, dst_drop_text(drop.second));
        });
}

int Engine::first_in_ns(unsigned ns) const {
    for (std::size_t i = 0; i < objects_.size(); ++i)
        if (objects_[i].ns == ns && !objects_[i].removed) return static_cast<int>(i);
    return -1;
}

// Step A: the first object of the namespace, in load order, whose real path
// or one of whose names is `name`, or whose SONAME is `name` (that SONAME is
// then added to its names, once).
int Engine::match_loaded(const std::string& name, unsigned ns) {
    auto first = [&](const std::unordered_map<std::string, std::vector<int>>& index) {
        int best = -1;
        if (auto it = index.find(name); it != index.end())
            for (int i : it->second) {
                const Object& o = objects_[static_cast<std::size_t>(i)];
                if (o.ns == ns && !o.removed && (best < 0 || i < best)) best = i;
            }
        return best;
    };
    int by_name = first(by_name_);
    int by_soname = first(by_soname_);
    if (by_soname >= 0 && objects_[static_cast<std::size_t>(by_soname)].soname_added) by_soname = -1;
    if (by_soname >= 0 && (by_name < 0 || by_soname < by_name)) {
        Object& o = objects_[static_cast<std::size_t>(by_soname)];
        o.soname_added = true;
        add_name(by_soname, *o.facts.soname);
        return by_soname;
    }
    return by_name;
}

void Engine::add_name(int idx, const std::string& name) {
    Object& o = objects_[static_cast<std::size_t>(idx)];
    if (contains(o.names, name)) return;
    o.names.push_back(name);
    by_name_[name].push_back(idx);
}

int Engine::add_object(Object o) {
    int idx = static_cast<int>(objects_.size());
    objects_.push_back(std::move(o));
    index_object(idx);
    return idx;
}

void Engine::index_object(int idx) {
    const Object& o = objects_[static_cast<std::size_t>(idx)];
    by_name_[o.name].push_back(idx);
    for (const auto& n : o.names)
        if (n != o.name) by_name_[n].push_back(idx);
    if (o.facts.soname && !o.soname_added) by_soname_[*o.facts.soname].push_back(idx);
    if (o.id.valid()) by_id_[o.id].push_back(idx);
}

std::optional<std::string> Engine::origin_of_path(const std::string& path, const std::string& cwd) {
    // From the path string as opened: no symlink or ".." resolution.
    std::string full;
    if (!path.empty() && path[0] == '/') {
        full = path;
    } else {
        // The directory current at this open, as glibc's _dl_new_object
        // asks getcwd for each object named by a relative path.
        full = cwd.empty() ? fs_.cwd() : cwd;
        if (full.empty()) return std::nullopt;
        if (full.back() != '/') full += '/';
        full += path;
    }
    return std::string(directory_of(full));
}

// glibc's _dl_map_object: a name already loaded, else a file found by the
// search (or opened by its path), admitted into the namespace.
MapOutcome Engine::map_object(int loader, const std::string& name, unsigned ns, unsigned mode) {
    // A. Already loaded in this namespace?  Silent.
    if (int hit = match_loaded(name, ns); hit >= 0) {
        emit_made([&] {
            return TraceEvent::result(objects_[static_cast<std::size_t>(hit)].name, ns, Source::already_loaded, name);
        });
        return {hit};
    }
    Request req{name, mode};
    OpenOutcome found;
    std::string path;  // B: the path asked for
    tried_at_start_.clear();
    if (name.find('/') == std::string::npos) {
        found = search(loader, req, ns);  // C.
    } else {
        // B. A path: opened directly, DSTs expanded with the loader's values.
        path = loader >= 0 ? expand(objects_[static_cast<std::size_t>(loader)], name) : name;
        found = open_verify(path, req);
        found.source = Source::slash_name;
    }
    if (process_start_) return admit_loaded(loader, req, ns, std::move(found), path);
    return admit(loader, req, ns, std::move(found));
}

// C. The search proper, list by list, until a file is found or a list
// fails the whole request.
Engine::OpenOutcome Engine::search(int loader, Request& req, unsigned ns) {
    emit(TraceEvent::Kind::find_library, req.name, ns);
    const Object* ld = loader >= 0 ? &objects_[static_cast<std::size_t>(loader)] : nullptr;
    auto done = [](const OpenOutcome& o) { return o.status != OpenOutcome::Status::not_found; };
    // 1. RPATH: only if the loader has no RUNPATH.
    OpenOutcome found = search_rpaths(loader, req);
    // 2. LD_LIBRARY_PATH.
    if (!done(found) && env_) found = open_path(*env_, req, -1, Source::ld_library_path);
    if (!done(found) && !env_ && opts_.library_path && opts_.secure)
        emit_made([&] { return TraceEvent::skipped(Skip::library_path_secure, -1, Label::ld_library_path); });
    // 3. The loader's own RUNPATH; those of the objects that loaded it serve
    //    only their own dependencies.
    if (ld && sink_) {
        for_each_in_chain(ld->loader, [&](int l) {
            if (objects_[static_cast<std::size_t>(l)].facts.runpath)
                emit_made([&] { return TraceEvent::skipped(Skip::runpath_not_inherited, l, Label::runpath); });
            return true;
        });
    }
    if (!done(found) && ld) {
        const DirList* dl = object_list(loader, true);
        report_list_gaps(loader, true);
        if (dl) found = open_path(*dl, req, loader, Source::runpath);
    }
    // 4. ld.so.cache.
    if (!done(found)) found = search_cache(loader, req);
    // 5. The system directories, unless NODEFLIB.
    if (!done(found)) {
        int nl = ld ? loader : first_in_ns(ns);
        if (nl < 0 || !objects_[static_cast<std::size_t>(nl)].facts.nodeflib())
            found = open_path(system_, req, -1, Source::system);
        else
            emit_made([&] { return TraceEvent::skipped(Skip::nodeflib, nl, Label::system); });
    }
    emit(TraceEvent::Kind::end_search);
    return found;
}

// Step 1: the RPATHs of the loader chain (objects with a RUNPATH contribute
// nothing but do not stop it), then the main program's if the walk did not
// cover it.  A loader with a RUNPATH turns all of them off.
Engine::OpenOutcome Engine::search_rpaths(int loader, Request& req) {
    OpenOutcome found;
    const Object* ld = loader >= 0 ? &objects_[static_cast<std::size_t>(loader)] : nullptr;
    const bool main_counts = main_ >= 0 && !objects_[static_cast<std::size_t>(main_)].dlopened && main_ != loader;
    bool did_main = false;
    if (ld && ld->facts.runpath) {
        if (!sink_) return found;
        auto skip = [&](int l) {
            if (objects_[static_cast<std::size_t>(l)].facts.effective_rpath())
                emit_made([&] { return TraceEvent::skipped(Skip::rpath_under_runpath, l, Label::rpath); });
            did_main |= l == main_;
            return true;
        };
        for_each_in_chain(loader, skip);
        if (!did_main && main_counts) skip(main_);
        return found;
    }
    auto walk = [&](int l) {
        const DirList* dl = object_list(l, false);
        report_list_gaps(l, false);
        if (dl) {
            found = open_path(*dl, req, l, Source::rpath);
            did_main |= l == main_;
        }
        return found.status == OpenOutcome::Status::not_found;
    };
    for_each_in_chain(loader, walk);
    if (found.status == OpenOutcome::Status::not_found && !did_main && main_counts) walk(main_);
    return found;
}

// Step 4: ld.so.cache, except for preloads in secure mode.  NODEFLIB
// discards a hit below a system directory after it was printed.
Engine::OpenOutcome Engine::search_cache(int loader, Request& req) {
    OpenOutcome found;
    if (opts_.secure && (req.mode & kModeSecurePreload)) {
        emit_made([&] { return TraceEvent::skipped(Skip::cache_secure_preload, -1); });
        return found;
    }
    if (cfg_.inhibit_cache) {
        emit_made([&] { return TraceEvent::skipped(Skip::cache_inhibited, -1); });
        return found;
    }
    emit(TraceEvent::Kind::search_cache, cfg_.cache_label);
    ++cache_lookups_;
    if (before_cache_lookup_) before_cache_lookup_();
    auto hit = cache_.lookup(req.name.c_str(), cfg_);
    if (!hit) return found;
    emit(TraceEvent::Kind::trying, *hit);
    int nl = loader >= 0 ? loader : (main_ >= 0 ? main_ : rtld_);
    if (nl >= 0 && objects_[static_cast<std::size_t>(nl)].facts.nodeflib()) {
        for (const auto& d : cfg_.system_dirs)
            if (hit->compare(0, d.size(), d) == 0) {
                emit_made([&] { return TraceEvent::rejected(*hit, "DF_1_NODEFLIB"); });
                return found;
            }
    }
    found = open_verify(*hit, req);
    if (found.status == OpenOutcome::Status::found)
        found.source = Source::cache;
    else
        report_miss(*hit, found, false);
    return found;
}

// Whether the file found joins the namespace: an error, the same file as a
// loaded object, ld.so's proxy in another namespace, an RTLD_NOLOAD miss, an
// object the loader refuses, or a new object.
MapOutcome Engine::admit(int loader, const Request& req, unsigned ns, OpenOutcome found) {
    MapOutcome out;
    const std::string& name = req.name;
    if (found.status == OpenOutcome::Status::fatal) {
        out.error = found.error;
        return out;
    }
    if (found.status == OpenOutcome::Status::not_found) {
        if (opts_.keep_going) return out;  // a faked entry: never matched, no deps
        out.error = req.found_other_class ? LoadError{name, "wrong ELF class: ELFCLASS32", 0}
                                          : LoadError{name, "cannot open shared object file", errno_};
        return out;
    }
    // The same file already loaded in this namespace?
    FileId id = found.image->id();
    if (auto it = id.valid() ? by_id_.find(id) : by_id_.end(); it != by_id_.end())
        for (int i : it->second) {
            Object& o = objects_[static_cast<std::size_t>(i)];
            if (o.ns != ns || o.removed) continue;
            add_name(i, name);
            emit_made([&] { return TraceEvent::result(o.name, ns, Source::same_file, name); });
            return {i};
        }
    int owner = (req.mode & kModeCallmap) ? -1 : loader;
    // Only one ld.so, ever: other namespaces get a proxy.
    if (ns != 0 && rtld_ >= 0) {
        const Object& r = objects_[static_cast<std::size_t>(rtld_)];
        if (name == r.name || contains(r.names, name)) {
            Object p;
            p.kind = Object::Kind::rtld_proxy;
            p.name = found.path;
            p.names = {name};
            p.facts = r.facts;
            p.ns = ns;
            p.loader = owner;
            return {add_object(std::move(p)), true};
        }
    }
    if (req.mode & kModeNoload) return out;
    auto facts = read_facts(*found.image);
    const char* refusal = facts.ok ? refusal_of(facts.facts, cfg_.behaviour) : nullptr;
    if (!facts.ok || refusal) {
        out.error = LoadError{name, facts.ok ? refusal : facts.error, 0};
        return out;
    }
    Object o;
    o.kind = Object::Kind::library;
    o.name = found.path;
    o.names = {name};
    o.facts = std::move(facts.facts);
    o.origin = origin_of_path(found.path);
    o.loader = owner;
    o.dlopened = (req.mode & kModeCallmap) != 0;
    o.ns = ns;
    o.id = id;
    o.found_by = found.source;
    o.found_via = found.owner;
    emit_made([&] { return TraceEvent::result(o.name, ns, o.found_by, name); });
    return {add_object(std::move(o)), true};
}

// The start-up of a live process, emulated now: what its loader loaded for
// this request, if anything.  A search answered with a new object when the
// next object the start-up loaded is named by it (its l_name is a
// directory's candidate for the name, or the path asked for); that object is
// taken as the loader holds it, wherever the search finds a file now.  It
// answered with a loaded object's file when one of the candidates it tried
// before that one (or any, when none is new) is a loaded object's name.
// Otherwise it found nothing (a preload that failed).
MapOutcome Engine::admit_loaded(int loader, const Request& req, unsigned ns, OpenOutcome found,
                                const std::string& path_asked) {
    // A file the process holds already: the same-file answer, as then.
    if (found.status == OpenOutcome::Status::found && found.image->id().valid() && by_id_.contains(found.image->id()))
        return admit(loader, req, ns, std::move(found));
    const ProcessStart::Loaded* next = next_loaded_at_start(
        req.name, path_asked, found.status == OpenOutcome::Status::found ? found.path : std::string());
    const auto tried_next =
        next ? std::find(tried_at_start_.begin(), tried_at_start_.end(), next->name) : tried_at_start_.end();
    for (auto cand = tried_at_start_.begin(); cand != tried_next; ++cand)
        if (int i = loaded_by_path(*cand); i >= 0) {
            add_name(i, req.name);
            emit_made([&] { return TraceEvent::result(*cand, ns, Source::same_file, req.name); });
            return {i};
        }
    if (!next) {
        if (found.status == OpenOutcome::Status::fatal) return admit(loader, req, ns, std::move(found));
        return admit(loader, req, ns, OpenOutcome{});
    }
    taken_at_start_ = next_at_start_ + 1;
    Object o;
    o.kind = Object::Kind::library;
    o.name = next->name;
    o.names = {req.name};
    o.facts = next->facts;
    o.origin = origin_of_path(next->name, process_start_->cwd);
    o.loader = (req.mode & kModeCallmap) ? -1 : loader;
    o.ns = ns;
    o.id = next->id;
    // The rule that found it, where the emulation found the same path.
    if (found.status == OpenOutcome::Status::found && found.path == next->name) {
        o.found_by = found.source;
        o.found_via = found.owner;
    }
    emit_made([&] { return TraceEvent::result(o.name, ns, o.found_by, req.name); });
    const int idx = add_object(std::move(o));
    start_paths_.emplace(same_file_key(next->name), idx);
    return {idx, true};
}

// The next object the start-up loaded, if a lookup of `name` (opened as
// `path_asked`, for a name with a slash; the emulation found `found_now`)
// names it; nullptr if not.  An
// object that nothing loaded at start-up needs by name is passed over on
// the way (a preload that another tool's environment added, which the
// environment the model reads does not name): it is left to the process's
// walk, as anything dlopen'ed.  One that is needed stops the way, for it
// is some later lookup's answer.
const ProcessStart::Loaded* Engine::next_loaded_at_start(const std::string& name, const std::string& path_asked,
                                                         const std::string& found_now) {
    const auto& all = process_start_->loaded;
    // A directory's candidate ends in the name; the cache's is the file of
    // that SONAME (ldconfig lists a library by its SONAME).
    auto named = [&](const ProcessStart::Loaded& o) {
        if (!path_asked.empty()) return o.name == path_asked;
        return o.name == found_now || (o.facts.soname && *o.facts.soname == name) || ends_in_component(o.name, name);
    };
    for (std::size_t i = taken_at_start_; i < all.size(); ++i) {
        const ProcessStart::Loaded& o = all[i];
        if (by_name_.contains(o.name)) continue;  // ld.so and the vDSO are there from the start
        if (named(o)) {
            next_at_start_ = i;
            return &o;
        }
        const std::string_view base = base_name(o.name);
        if (needed_at_start_.contains(std::string(base)) ||
            (o.facts.soname && needed_at_start_.contains(*o.facts.soname)))
            return nullptr;
    }
    return nullptr;
}

// The object loaded at start-up so far whose l_name names the file at
// `path` (by same_file_key), or -1.
int Engine::loaded_by_path(const std::string& path) const {
    auto it = start_paths_.find(same_file_key(path));
    return it == start_paths_.end() ? -1 : it->second;
}

// glibc's _dl_map_object_deps: the walk starts with errno cleared, and puts
// the caller's value back if nothing set it.
std::optional<LoadError> Engine::load_deps(std::vector<int> roots) {
    int saved = errno_;
    errno_ = 0;
    auto err = walk_deps(std::move(roots));
    if (errno_ == 0 && saved != 0) errno_ = saved;
    return err;
}

// Breadth-first over DT_NEEDED; each new object is appended once.  Returns
// the first error.
std::optional<LoadError> Engine::walk_deps(std::vector<int> queue) {
    std::vector<bool> listed(objects_.size() + 1024, false);
    auto mark = [&](int i) {
        if (static_cast<std::size_t>(i) >= listed.size()) listed.resize(static_cast<std::size_t>(i) * 2 + 1, false);
        listed[static_cast<std::size_t>(i)] = true;
    };
    for (int i : queue) mark(i);
    for (std::size_t q = 0; q < queue.size(); ++q) {
        int l = queue[q];
        // Copy: map_object appends to objects_.
        std::vector<std::string> needed = objects_[static_cast<std::size_t>(l)].facts.needed;
        unsigned ns = objects_[static_cast<std::size_t>(l)].ns;
        for (const auto& raw : needed) {
            std::string name = raw;
            if (count_dsts(raw) != 0) {
                if (opts_.secure) return LoadError{raw, "DST not allowed in SUID/SGID programs", 0};
                name = expand(objects_[static_cast<std::size_t>(l)], raw);
                if (name.empty()) {
                    emit(TraceEvent::Kind::aux_empty_dst, raw);
                    continue;
                }
            }
            MapOutcome m = map_object(l, name, ns, 0);
            if (m.error) return m.error;
            if (m.object < 0) continue;  // faked (keep_going)
            if (static_cast<std::size_t>(m.object) >= listed.size() || !listed[static_cast<std::size_t>(m.object)]) {
                mark(m.object);
                queue.push_back(m.object);
            }
        }
    }
    return std::nullopt;
}

// Startup, as rtld's dl_main: the program, ld.so and the vDSO, the search
// lists, the preloads, then the dependencies breadth first.
StartResult Engine::start(const std::string& program, OpenResult opened, std::optional<ProcessStart> process) {
    StartResult res;
    auto img = opened.image ? std::move(opened) : fs_.open(program);
    if (!img.image) {
        res.ok = false;
        res.error = LoadError{program, "cannot open", img.error}.text();
        return res;
    }
    auto facts = read_facts(*img.image);
    if (!facts.ok) {
        res.ok = false;
        res.error = program + ": " + facts.error;
        return res;
    }
    add_initial_objects(program, facts.facts);
    process_start_ = std::move(process);
    taken_at_start_ = 0;
    start_paths_.clear();
    needed_at_start_.clear();
    if (process_start_) {
        needed_at_start_.insert(facts.facts.needed.begin(), facts.facts.needed.end());
        for (const auto& o : process_start_->loaded)
            needed_at_start_.insert(o.facts.needed.begin(), o.facts.needed.end());
    }
    if (rtld_ >= 0) start_paths_.emplace(same_file_key(objects_[static_cast<std::size_t>(rtld_)].name), rtld_);

    // Search paths: the main program's RUNPATH (or else RPATH), then
    // LD_LIBRARY_PATH, each created now so that they own their pool entries.
    object_list(main_, true);
    object_list(main_, false);
    if (opts_.library_path && !opts_.secure && !opts_.library_path->empty()) {
        DirList l =
            fill_list(*opts_.library_path, kLibraryPathSeparators, opts_.library_path_label, std::nullopt, objects_[0]);
        if (!l.empty()) env_ = std::move(l);
    }

    preloads_ = load_preloads(res.warnings);
    std::vector<int> roots{main_};
    roots.insert(roots.end(), preloads_.begin(), preloads_.end());
    if (auto err = load_deps(std::move(roots))) {
        res.ok = false;
        res.error = opts_.argv0 + ": error while loading shared libraries: " + err->rtld_text();
    }
    process_start_.reset();
    start_paths_.clear();
    needed_at_start_.clear();
    return res;
}

// The objects there before any search: the main program, ld.so and the vDSO.
void Engine::add_initial_objects(const std::string& program, const ObjectFacts& facts) {
    // The main program: l_name "", known as "" (so dlopen(NULL) finds it).
    Object m;
    m.kind = Object::Kind::main;
    m.names = {""};
    m.facts = facts;
    // $ORIGIN: the kernel's /proc/self/exe, i.e. the resolved path.
    m.origin = opts_.main_origin ? opts_.main_origin
                                 : main_program_origin(fs_.realpath(program), opts_.origin_path, opts_.secure);
    main_ = add_object(std::move(m));

    // ld.so, known by its PT_INTERP string and its SONAME.
    Object r;
    r.kind = Object::Kind::rtld;
    r.name = facts.interp.value_or(cfg_.rtld_path);
    r.names = {r.name};
    if (auto ri = fs_.open(r.name); ri.image) {
        auto rf = read_facts(*ri.image);
        if (rf.ok) r.facts = rf.facts;
    }
    if (r.facts.soname && *r.facts.soname != r.name) r.names.push_back(*r.facts.soname);
    rtld_ = add_object(std::move(r));

    if (opts_.has_vdso) {
        Object v;
        v.kind = Object::Kind::vdso;
        v.name = "linux-vdso.so.1";
        v.names = {v.name};
        v.facts.soname = v.name;
        add_object(std::move(v));
    }
}

// LD_PRELOAD (split on spaces and colons), then /etc/ld.so.preload; a
// preload that fails is a warning, as in ld.so.  Returns the new objects.
std::vector<int> Engine::load_preloads(std::vector<std::string>& warnings) {
    std::vector<int> preloads;
    auto preload_one = [&](const std::string& n, const char* where) {
        if (opts_.secure && n.find('/') != std::string::npos) return;
        std::size_t before = objects_.size();
        MapOutcome mo = map_object(main_, n, 0, kModeSecurePreload);
        if (mo.error) {
            // ld.so prints only glibc's errstring here.
            warnings.push_back("ERROR: ld.so: object '" + n + "' from " + where + " cannot be preloaded (" +
                               mo.error->errstring + "): ignored.");
        } else if (mo.is_new && objects_.size() != before) {
            preloads.push_back(mo.object);
        }
    };
    for (auto p : split_path(opts_.preload, " :")) preload_one(std::string(p), "LD_PRELOAD");
    if (opts_.preload_file) {
        auto pf = fs_.open(*opts_.preload_file);
        // rtld asks access(R_OK) first: a missing file leaves ENOENT in ld.so's
        // errno, which the dependency walk puts back when it ends with 0 and
        // which a later dlopen that tries no file at all then reports.
        if (!pf.image) errno_ = pf.error;
        if (pf.image) {
            auto b = pf.image->bytes();
            std::string text(reinterpret_cast<const char*>(b.data()), b.size());
            // '#' starts a comment up to the end of the line.
            for (std::size_t c = text.find('#'); c != std::string::npos; c = text.find('#', c))
                for (; c < text.size() && text[c] != '\n'; ++c) text[c] = ' ';
            for (auto p : split_path(text, ": \t\n"))
                if (!p.empty()) preload_one(std::string(p), opts_.preload_file->c_str());
        }
    }
    return preloads;
}

unsigned Engine::new_namespace() const {
    for (unsigned ns = 1;; ++ns) {
        bool used =
            std::any_of(objects_.begin(), objects_.end(), [&](const Object& o) { return o.ns == ns && !o.removed; });
        if (!used) return ns;
    }
}

MapOutcome Engine::dlopen(const DlopenRequest& req) {
    MapOutcome out;
    std::string name = req.name.value_or("");
    if (!req.name && req.ns_mode != DlopenRequest::Ns::caller) {
        out.error = LoadError{"", "invalid namespace", EINVAL};  // dlmopen(ns != 0, NULL)
        return out;
    }
    // The caller matters for names with '$', without '/', or for "caller's
    // namespace"; an unknown address counts as the main program.
    int caller = -1;
    bool need_caller = name.find('$') != std::string::npos || name.find('/') == std::string::npos ||
                       req.ns_mode == DlopenRequest::Ns::caller;
    if (need_caller) caller = req.caller >= 0 ? req.caller : main_;
    unsigned ns = 0;
    switch (req.ns_mode) {
        case DlopenRequest::Ns::caller: ns = caller >= 0 ? objects_[static_cast<std::size_t>(caller)].ns : 0; break;
        case DlopenRequest::Ns::new_ns: ns = new_namespace(); break;
        case DlopenRequest::Ns::explicit_ns: ns = req.ns; break;
    }
    if (!req.name) ns = 0;
    std::size_t before = objects_.size();
    unsigned mode = kModeCallmap | (req.noload ? kModeNoload : 0u);
    out = map_object(caller, name, ns, mode);
    if (!out.error && out.is_new) {
        if (auto err = load_deps({out.object})) {
            out.error = err;
            out.object = -1;
        }
    }
    if (out.error) {
        // A failed dlopen unloads what it loaded; the directory pool keeps
        // everything it learned.
        for (std::size_t i = before; i < objects_.size(); ++i) forget(static_cast<int>(i));
    }
    return out;
}

int Engine::adopt(Object o) {
    if (!o.origin && !o.name.empty()) o.origin = origin_of_path(o.name);
    return add_object(std::move(o));
}

void Engine::forget(int idx) {
    if (idx < 0 || static_cast<std::size_t>(idx) >= objects_.size()) return;
    Object& o = objects_[static_cast<std::size_t>(idx)];
    if (o.removed) return;
    o.removed = true;
    ++removed_;
    // Out of the indexes now: a plugin loaded and unloaded in a loop would
    // otherwise leave one stale entry per round under its name and file.
    auto unlist = [idx](auto& index, const auto& key) {
        if (auto it = index.find(key); it != index.end()) {
            std::erase(it->second, idx);
            if (it->second.empty()) index.erase(it);
        }
    };
    unlist(by_name_, o.name);
    for (const auto& n : o.names) unlist(by_name_, n);
    if (o.facts.soname) unlist(by_soname_, *o.facts.soname);
    if (o.id.valid()) unlist(by_id_, o.id);
}

bool Engine::compact(std::vector<int>* remap_out) {
    const std::size_t removed = removed_;
    if (removed == 0 || removed * 2 < objects_.size()) return false;
    removed_ = 0;
    std::vector<int> remap(objects_.size(), -1);
    std::vector<Object> kept;
    kept.reserve(objects_.size() - removed);
    for (std::size_t i = 0; i < objects_.size(); ++i) {
        if (objects_[i].removed) continue;
        remap[i] = static_cast<int>(kept.size());
        kept.push_back(std::move(objects_[i]));
    }
    auto fix = [&](int i) { return i < 0 ? -1 : remap[static_cast<std::size_t>(i)]; };
    for (auto& o : kept) {
        o.loader = fix(o.loader);  // a loader that went away leaves the chain there, as in glibc
        o.found_via = fix(o.found_via);
    }
    objects_ = std::move(kept);
    main_ = fix(main_);
    rtld_ = fix(rtld_);
    for (int& p : preloads_) p = fix(p);
    std::erase(preloads_, -1);
    if (remap_out) *remap_out = std::move(remap);
    by_name_.clear();
    by_soname_.clear();
    by_id_.clear();
    for (std::size_t i = 0; i < objects_.size(); ++i) index_object(static_cast<int>(i));
    return true;
}

// From the indexes step A keeps (by_name_: l_name and every name asked
// for; by_soname_: a SONAME not yet added as a name), so a lookup costs the
// same with 5 or 500 objects loaded.
std::vector<int> Engine::objects_named(const std::string& what) const {
    std::vector<int> named;
    if (what.empty()) return named;  // the main program's "" is no name to ask by
    for (const auto* index : {&by_name_, &by_soname_})
        if (auto it = index->find(what); it != index->end())
            for (int i : it->second) {
                const Object& o = objects_[static_cast<std::size_t>(i)];
                if (o.ns == 0 && !o.removed) named.push_back(i);
            }
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    return named;
}

int Engine::find_object(const std::string& what) const {
    if (auto named = objects_named(what); !named.empty()) return named.front();
    // A path to the same file (e.g. the program itself, or a symlink).
    auto r = fs_.open(what);
    if (r.image) {
        for (std::size_t i = 0; i < objects_.size(); ++i)
            if (!objects_[i].removed && objects_[i].ns == 0 && objects_[i].id.valid() &&
                objects_[i].id == r.image->id())
                return static_cast<int>(i);
    }
    return -1;
}

}  // namespace ldshim::loader
