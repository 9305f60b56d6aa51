#include "host/libc.h"

#include "host/find_object.h"
#include "host/loaded_objects.h"
#include "loader/loaded_extent.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <gnu/libc-version.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <new>

namespace ldshim::host {

namespace {

// glibc's own functions, from libc's handle: a plain call to dlopen from
// here would bind to the first definition in the process (the preload's),
// and RTLD_NEXT finds nothing when libc comes before libldshim in scope.
// The handle itself comes from whatever "dlopen" binds to (the preload's,
// which asks ldshim, which may ask here again): that nested lookup answers
// null instead of recursing, and the outer one fills the cache.
[[gnu::tls_model("initial-exec")]] thread_local bool t_finding_libc = false;

// Whether `s` (with `room` readable bytes) spells `name` and ends there.  A
// loop of its own: ldshim's start calls no libc string function it would
// have to bind.
bool spells(const char* s, std::size_t room, const char* name) {
    for (std::size_t i = 0; i < room; ++i) {
        if (s[i] != name[i]) return false;
        if (s[i] == '\0') return true;
    }
    return false;
}

// A loaded object's exported symbols, through its DT_GNU_HASH table, as the
// loader looks them up; every pointer checked against the object's extent.
class GnuHash {
public:
    GnuHash(const link_map& map, const ObjectExtent& x) : base_(map.l_addr), x_(x) {
        std::uintptr_t hash = 0;
        for (auto* d = map.l_ld; at(reinterpret_cast<std::uintptr_t>(d), sizeof *d) && d->d_tag != DT_NULL; ++d) {
            std::uintptr_t v = d->d_un.d_ptr;
            if (d->d_tag == DT_GNU_HASH) hash = v;
            if (d->d_tag == DT_SYMTAB) symtab_ = v;
            if (d->d_tag == DT_STRTAB) strtab_ = v;
            if (d->d_tag == DT_STRSZ) strsz_ = v;
            if (d->d_tag == DT_VERSYM) versym_ = v;
        }
        h_ = reinterpret_cast<const std::uint32_t*>(at(hash, 16));
        strtab_ = at(strtab_, strsz_);
        if (!h_ || !strtab_ || h_[0] == 0) return;
        buckets_ = h_ + 4 + std::size_t{h_[2]} * (sizeof(ElfW(Addr)) / 4);  // after the Bloom filter
        if (!at(reinterpret_cast<std::uintptr_t>(buckets_), std::size_t{h_[0]} * 4)) buckets_ = nullptr;
    }

    // The first defined function named `name` that passes
    // accept(const ElfW(Sym)&, ElfW(Half) version index: 0 where the object
    // has no versions), or nullptr.
    template <class Accept>
        const ElfW(Sym) * find(const char* name, Accept&& accept) const {
        if (!buckets_) return nullptr;
        const ElfW(Sym)* hit = nullptr;
        auto readable = [this](const void* p, std::size_t len) {
            return at(reinterpret_cast<std::uintptr_t>(p), len) != 0;
        };
        auto test = [&](std::uint32_t i) {
            auto* sym = reinterpret_cast<const ElfW(Sym)*>(
                at(symtab_ + std::uintptr_t{i} * sizeof(ElfW(Sym)), sizeof(ElfW(Sym))));
            if (!sym) return loader::ChainResult::unreadable;
            if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_name >= strsz_ ||
                !spells(reinterpret_cast<const char*>(strtab_) + sym->st_name, strsz_ - sym->st_name, name) ||
                !accept(*sym, version_index(i)))
                return loader::ChainResult::absent;
            hit = sym;
            return loader::ChainResult::found;
        };
        loader::search_gnu_chain(buckets_, h_[0], h_[1], loader::gnu_hash(name), readable, test);
        return hit;
    }
    std::uintptr_t address(const ElfW(Sym) & sym) const { return base_ + sym.st_value; }
    std::uintptr_t base() const { return base_; }

private:
    // d_ptr values: run-time addresses once glibc has relocated them.
    std::uintptr_t at(std::uintptr_t v, std::size_t len) const {
        if (v < x_.lo || v >= x_.hi) v += base_;
        return v >= x_.lo && v <= x_.hi && len <= x_.hi - v ? v : 0;
    }
    ElfW(Half) version_index(std::uint32_t i) const {
        auto* v = reinterpret_cast<const ElfW(Half)*>(versym_ ? at(versym_ + std::uintptr_t{i} * 2, 2) : 0);
        return v ? *v : 0;
    }

    std::uintptr_t base_;
    ObjectExtent x_;
    const std::uint32_t *h_ = nullptr, *buckets_ = nullptr;
    std::uintptr_t symtab_ = 0, strtab_ = 0, strsz_ = 0, versym_ = 0;
};

// The loaded object holding `addr` and its link map, with glibc 2.35 and
// later (one lock-free lookup; before, find_object walks the objects
// through a dl_iterate_phdr that may not be found yet).
const link_map* object_at(const void* addr, ObjectExtent& x) {
    if (!find_object_is_lock_free()) return nullptr;
    auto found = find_object(addr);
    const auto* map = found ? static_cast<const link_map*>(found->link_map) : nullptr;
    if (!map || !map->l_ld) return nullptr;
    x = *found;
    return map;
}

// Whether `map` is the object named `so` (LIBC_SO, LIBDL_SO).
bool named(const link_map* map, const char* so, std::size_t size) {
    if (!map || !map->l_name) return false;
    const char* base = map->l_name;
    for (const char* c = map->l_name; *c; ++c)
        if (*c == '/') base = c + 1;
    return spells(base, size, so);
}

// libc's own, found through find_object's anchor (object_at answers from
// glibc 2.35), and checked by its name.
const link_map* libc_map(ObjectExtent& x) {
    const link_map* map = object_at(dl_functions_anchor(), x);
    return named(map, LIBC_SO, sizeof LIBC_SO) ? map : nullptr;
}

const ElfW(Sym) * unhidden(const GnuHash& table, const char* name) {
    // What dlsym finds without a version: a definition that is not hidden.
    return table.find(name, [](const ElfW(Sym)&, ElfW(Half) v) { return (v & 0x8000) == 0; });
}

// glibc's own dl* function `name` on any glibc, without calling dlopen
// (which binds to the first definition in the process: an interposer's,
// perhaps not ready while its own constructor runs): looked up in the
// object that defines dladdr1 -- libdl before 2.34, libc from then on --
// once its name says it is one of those.  Before 2.35 finding that object
// walks the loaded objects.
void* glibc_dl_function(const char* name) {
    auto found = find_object(dl_functions_anchor());
    const auto* map = found ? static_cast<const link_map*>(found->link_map) : nullptr;
    if (!map || !map->l_ld || !(named(map, LIBC_SO, sizeof LIBC_SO) || named(map, LIBDL_SO, sizeof LIBDL_SO)))
        return nullptr;
    GnuHash table(*map, *found);
    const ElfW(Sym)* sym = unhidden(table, name);
    return sym ? reinterpret_cast<void*>(table.address(*sym)) : nullptr;
}

}  // namespace

namespace {

// libc's table, found and decoded by the first lookup that gets that far
// (libc stays loaded): the others search it straight away.  Until the first
// one has published it, a concurrent lookup decodes its own copy.
struct LibcTable {
    std::atomic<int> state{0};  // 0: none, 1: being written, 2: ready
    alignas(GnuHash) unsigned char bytes[sizeof(GnuHash)];
};
LibcTable g_libc_table;

template <class Fn>
void* with_libc_table(Fn&& fn) {
    if (g_libc_table.state.load(std::memory_order_acquire) == 2)
        return fn(*reinterpret_cast<const GnuHash*>(g_libc_table.bytes));
    ObjectExtent x;
    const link_map* map = libc_map(x);
    if (!map) return nullptr;
    GnuHash table(*map, x);
    int none = 0;
    if (g_libc_table.state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) {
        new (g_libc_table.bytes) GnuHash(table);
        g_libc_table.state.store(2, std::memory_order_release);
    }
    return fn(table);
}

}  // namespace

void* libc_symbol(const char* name) {
    return with_libc_table([name](const GnuHash& table) -> void* {
        const ElfW(Sym)* sym = unhidden(table, name);
        return sym ? reinterpret_cast<void*>(table.address(*sym)) : nullptr;
    });
}

std::uintptr_t libc_load_address() {
    return reinterpret_cast<std::uintptr_t>(
        with_libc_table([](const GnuHash& table) { return reinterpret_cast<void*>(table.base()); }));
}

bool exported_at(const void* addr, const char* name) {
    ObjectExtent x;
    const link_map* map = object_at(addr, x);
    if (!map) return false;
    GnuHash table(*map, x);
    auto a = reinterpret_cast<std::uintptr_t>(addr);
    // Any version of the name: a compat one has the same address.
    return table.find(name, [&](const ElfW(Sym) & s, ElfW(Half)) { return table.address(s) == a; }) != nullptr;
}

namespace {

// Before glibc 2.34 the dl* functions live in libdl, not libc.
template <class Fn>
Fn libc_function(std::atomic<Fn>& cache, const char* name) {
    Fn f = cache.load(std::memory_order_acquire);
    if (f || t_finding_libc) return f;
    t_finding_libc = true;
    f = reinterpret_cast<Fn>(libc_symbol(name));
    if (!f) f = reinterpret_cast<Fn>(glibc_dl_function(name));
    for (const char* object : {LIBC_SO, LIBDL_SO}) {
        if (f) break;
        if (void* h = dlopen(object, RTLD_LAZY | RTLD_NOLOAD)) {
            f = reinterpret_cast<Fn>(dlsym(h, name));
            dlclose(h);
        }
    }
    t_finding_libc = false;
    if (f) cache.store(f, std::memory_order_release);
    return f;
}
std::atomic<dlopen_fn> g_libc_dlopen{nullptr};
std::atomic<dlmopen_fn> g_libc_dlmopen{nullptr};
std::atomic<dlerror_fn> g_libc_dlerror{nullptr};
using iterate_fn = int (*)(int (*)(dl_phdr_info*, std::size_t, void*), void*);
std::atomic<iterate_fn> g_libc_iterate{nullptr};
std::atomic<dlsym_fn> g_libc_dlsym{nullptr};
std::atomic<dlvsym_fn> g_libc_dlvsym{nullptr};

}  // namespace

void find_libc_functions() {
    libc_function(g_libc_dlopen, "dlopen");
    libc_function(g_libc_dlmopen, "dlmopen");
    libc_function(g_libc_dlerror, "dlerror");
    libc_function(g_libc_iterate, "dl_iterate_phdr");
}

void* libc_dlopen(const char* file, int mode) {
    dlopen_fn f = libc_function(g_libc_dlopen, "dlopen");
    return f ? f(file, mode) : nullptr;
}

int libc_dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data) {
    iterate_fn f = libc_function(g_libc_iterate, "dl_iterate_phdr");
    return f ? f(callback, data) : dl_iterate_phdr(callback, data);
}

dlopen_fn libc_dlopen_function() { return libc_function(g_libc_dlopen, "dlopen"); }
dlmopen_fn libc_dlmopen_function() { return libc_function(g_libc_dlmopen, "dlmopen"); }
dlerror_fn libc_dlerror_function() { return libc_function(g_libc_dlerror, "dlerror"); }
dlsym_fn libc_dlsym_function() { return libc_function(g_libc_dlsym, "dlsym"); }
dlvsym_fn libc_dlvsym_function() { return libc_function(g_libc_dlvsym, "dlvsym"); }

namespace {

// struct rtld_global of glibc 2.36 on x86-64: 16 link_namespaces of 160
// bytes, then _dl_nns, then three recursive locks (pthread_mutex_t) --
// _dl_load_lock, _dl_load_write_lock, _dl_load_tls_lock -- then
// _dl_load_adds.  _ns_nloaded follows _ns_loaded in each namespace.
constexpr std::size_t kNamespaces = 16, kNamespaceSize = 160;
constexpr std::size_t kNnsOffset = kNamespaces * kNamespaceSize;
constexpr std::size_t kWriteLockOffset = kNnsOffset + sizeof(std::size_t) + sizeof(pthread_mutex_t);
constexpr std::size_t kAddsOffset = kNnsOffset + sizeof(std::size_t) + 3 * sizeof(pthread_mutex_t);
constexpr std::size_t kNloadedOffset = sizeof(void*);

}  // namespace

std::span<const unsigned char> rtld_global() {
    void* g = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");
    Dl_info info;
    void* entry = nullptr;
    if (!g || !dladdr1(g, &info, &entry, RTLD_DL_SYMENT) || !entry) return {};
    return {static_cast<const unsigned char*>(g),
            static_cast<std::size_t>(static_cast<const ElfW(Sym)*>(entry)->st_size)};
}

LoaderWords loader_words() {
    LoaderWords w;
    std::span<const unsigned char> g = rtld_global();
    if (g.size() < kAddsOffset + sizeof(unsigned long long)) return w;
    const unsigned char* base = g.data();
    w.adds = reinterpret_cast<const unsigned long long*>(base + kAddsOffset);
    w.nloaded = reinterpret_cast<const unsigned int*>(base + kNloadedOffset);
    w.write_lock = reinterpret_cast<const int*>(base + kWriteLockOffset);
    w.nns = reinterpret_cast<const std::size_t*>(base + kNnsOffset);
    return w;
}

LoadCounters load_counters() {
    LoadCounters c;
    for_each_loaded([&](const dl_phdr_info&, const LoadCounters& now) {
        c = now;
        return false;  // the first object is enough
    });
    return c;
}

}  // namespace ldshim::host
