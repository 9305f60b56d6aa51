#include "loader/live.h"

#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unordered_set>

namespace ldshim::loader {
namespace {

struct LiveObject {
    std::string name;
    std::uintptr_t addr;
    const ElfW(Phdr)* phdr;
    std::size_t phnum;
};

struct Scan {
    std::vector<LiveObject> objects;
    unsigned long long adds = 0, subs = 0;
};

// One pass of dl_iterate_phdr.  Only namespace 0 is reported by it, which is
// the namespace the model covers.
Scan scan() {
    Scan s;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t size, void* data) {
            auto* sc = static_cast<Scan*>(data);
            sc->objects.push_back({info->dlpi_name ? info->dlpi_name : "", info->dlpi_addr, info->dlpi_phdr,
                                   info->dlpi_phnum});
            if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
                sc->adds = info->dlpi_adds;
                sc->subs = info->dlpi_subs;
            }
            return 0;
        },
        &s);
    return s;
}

std::string argv0() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string a;
    std::getline(in, a, '\0');
    return a;
}

}  // namespace

LiveProcess& LiveProcess::instance() {
    // Never destroyed: dlopen may be called from other threads during exit.
    alignas(LiveProcess) static unsigned char storage[sizeof(LiveProcess)];
    static LiveProcess* p = new (storage) LiveProcess();
    return *p;
}

LiveProcess::LiveProcess() {
    std::string exe = "/proc/self/exe";
    auto img = fs_.open(exe);
    if (!img.image) {
        init_error_ = "cannot read /proc/self/exe";
        return;
    }
    auto facts = read_facts(*img.image);
    std::string rtld = (facts.ok && facts.facts.interp) ? *facts.facts.interp : "/lib64/ld-linux-x86-64.so.2";
    std::string err;
    auto cfg = query_loader_cached(rtld, default_cache_dir(), &err);
    if (!cfg) {
        init_error_ = err;
        return;
    }
    cache_ = LdCache::load(fs_, cfg->cache_path);
    EngineOptions o;
    o.argv0 = argv0();
    o.secure = getauxval(AT_SECURE) != 0;
    if (const char* v = std::getenv("LD_LIBRARY_PATH")) o.library_path = std::string(v);
    if (const char* v = std::getenv("LD_PRELOAD")) o.preload = v;
    if (const char* v = std::getenv("LD_ORIGIN_PATH")) o.origin_path = std::string(v);
    o.keep_going = true;  // a library the emulation cannot find is simply not in the model
    engine_ = std::make_unique<Engine>(std::move(*cfg), fs_, cache_, nullptr, o);
    engine_->start(exe);
    engine_->set_keep_going(false);
}

// Bring the model in line with the loaded objects.
void LiveProcess::sync_locked() {
    Scan s = scan();
    if (!dirty_ && s.adds == adds_ && s.subs == subs_) return;
    adds_ = s.adds;
    subs_ = s.subs;
    dirty_ = false;
    std::unordered_set<std::string> live;
    for (const auto& lo : s.objects)
        if (!lo.name.empty()) live.insert(lo.name);
    const auto& objs = engine_->objects();
    std::unordered_set<std::string> modelled;
    for (std::size_t i = 0; i < objs.size(); ++i) {
        const Object& o = objs[i];
        if (o.removed || o.ns != 0 || o.kind == Object::Kind::main) continue;
        if (!live.count(o.name)) {
            engine_->forget(static_cast<int>(i));
            continue;
        }
        modelled.insert(o.name);
    }
    for (const auto& lo : s.objects) {
        if (lo.name.empty() || modelled.count(lo.name)) continue;
        Object o;
        o.kind = Object::Kind::library;
        o.name = lo.name;
        o.names = {lo.name};
        auto f = read_loaded_facts(lo.addr, lo.phdr, lo.phnum);
        if (f.ok) o.facts = std::move(f.facts);
        struct stat st {};
        if (::stat(lo.name.c_str(), &st) == 0) o.id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        o.dlopened = true;
        o.loader = -1;
        engine_->adopt(std::move(o));
    }
}

// The model object whose mapped segments contain addr; the main program when
// none does (as glibc treats a return address in JIT code).
int LiveProcess::object_at(std::uintptr_t addr) {
    std::string found;
    bool any = false;
    for (const auto& lo : scan().objects) {
        for (std::size_t i = 0; i < lo.phnum; ++i) {
            const auto& ph = lo.phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            std::uintptr_t a = lo.addr + ph.p_vaddr;
            if (addr >= a && addr - a < ph.p_memsz) {
                found = lo.name;
                any = true;
                break;
            }
        }
        if (any) break;
    }
    if (!any || found.empty()) return 0;  // the main program is object 0
    const auto& objs = engine_->objects();
    for (std::size_t i = 0; i < objs.size(); ++i)
        if (!objs[i].removed && objs[i].ns == 0 && objs[i].name == found) return static_cast<int>(i);
    return 0;
}

void LiveProcess::note_changed() {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
}

Resolution LiveProcess::resolve(const void* caller, const char* file, bool noload) {
    Resolution r;
    std::lock_guard<std::mutex> lock(mu_);
    if (!engine_) {
        r.kind = Resolution::Kind::failed;
        r.error = init_error_;
        return r;
    }
    sync_locked();
    DlopenRequest req;
    req.caller = object_at(reinterpret_cast<std::uintptr_t>(caller));
    if (file) req.name = std::string(file);
    req.noload = noload;
    MapOutcome m = engine_->dlopen(req);
    // The model may now hold objects that are not loaded (yet): re-check it
    // against the process next time.
    dirty_ = true;
    if (m.error) {
        r.kind = Resolution::Kind::not_found;
        r.error = m.error->text();
        return r;
    }
    if (m.object < 0) {  // RTLD_NOLOAD miss: NULL without an error
        r.kind = Resolution::Kind::not_found;
        return r;
    }
    const Object& o = engine_->objects()[static_cast<std::size_t>(m.object)];
    r.kind = m.is_new ? Resolution::Kind::found : Resolution::Kind::loaded;
    r.path = o.kind == Object::Kind::main ? std::string() : o.name;
    return r;
}

}  // namespace ldshim::loader
