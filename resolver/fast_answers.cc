#include "resolver/fast_answers.h"

#include "machine/machine.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

namespace ldshim::resolver {

using loader::Object;

namespace {

// The already-loaded answers, by name: written only under the model's lock,
// read by any thread without one (a sequence lock per slot: odd while being
// written; a reader that saw it change simply asks the model).  The texts
// are interned and never freed, so a reader may compare them even while the
// slot is being rewritten.
struct FastSlot {
    std::atomic<unsigned> seq{0};
    std::atomic<const char*> name{nullptr};
    // The name glibc is handed (one it knows the object by), nullptr for
    // the main program.
    std::atomic<const char*> handed{nullptr};
    std::atomic<unsigned long long> adds{0};
    std::atomic<unsigned int> nloaded{0};
    // The name's NameKey (below).
    std::atomic<std::size_t> len{0};
    std::atomic<std::uint64_t> head{0}, tail{0};
};
constexpr unsigned kFastSlotBits = 8;
FastSlot g_fast[std::size_t{1} << kFastSlotBits];
constexpr std::size_t kMaxInterned = 4096;  // beyond this, no new fast answers

// A name as the fast path compares it: its length and its first and last
// eight bytes (zero-padded when shorter), which for a name of up to 16
// bytes is the whole name; a longer one compares its middle too.  One
// strlen and two loads, where a hash of every byte is a chain of
// multiplications as long as the name.
struct NameKey {
    std::size_t len = 0;
    std::uint64_t head = 0, tail = 0;

    explicit NameKey(const char* s) noexcept : len(std::strlen(s)) {
        if (len >= 8) {
            std::memcpy(&head, s, 8);
            std::memcpy(&tail, s + len - 8, 8);
        } else {
            for (std::size_t i = 0; i < len; ++i) head |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
        }
    }
    std::size_t slot() const noexcept {
        return ((head ^ std::rotl(tail, 29) ^ len) * 0x9e3779b97f4a7c15ull) >> (64 - kFastSlotBits);
    }
    // Whether `name` (whose key is this one's fields) is `s`, whose key this is.
    bool same(std::size_t n, std::uint64_t h, std::uint64_t t, const char* name, const char* s) const noexcept {
        return n == len && h == head && t == tail && (len <= 16 || std::memcmp(name + 8, s + 8, len - 16) == 0);
    }
};

}  // namespace

// The loader's generation from its own words, or false when it cannot be read
// consistently now.  Why these words: glibc bumps GL(dl_load_adds) for every
// object it adds (to any namespace) and changes _ns_nloaded for every object
// it adds to or removes from namespace 0, both under its write lock -- an
// exact count of what dl_iterate_phdr's dlpi_adds/dlpi_subs report, readable
// in a few loads.  The alternatives are not exact: _r_debug's r_state is not
// a counter (a load and an unload between two calls leave it as it was), and
// the r_map chain's head never changes while its length or tail cannot be
// read without the lock (a dlclose may free a link_map mid-walk) and repeat
// after an unload followed by a load at the same address.
// Reading adds twice around nloaded and the lock word, and accepting only an
// unheld lock with adds unchanged, rules out a pair torn by a change in
// progress (glibc writes both inside one hold of that lock).
bool read_generation(const host::LoaderWords& words, Generation& g) noexcept {
    for (int attempt = 0; attempt < 4; ++attempt) {
        unsigned long long a1 = __atomic_load_n(words.adds, __ATOMIC_ACQUIRE);
        unsigned int n = __atomic_load_n(words.nloaded, __ATOMIC_ACQUIRE);
        int lock = __atomic_load_n(words.write_lock, __ATOMIC_ACQUIRE);
        unsigned long long a2 = __atomic_load_n(words.adds, __ATOMIC_ACQUIRE);
        if (lock == 0 && a1 == a2) {
            g = {a1, n};
            return true;
        }
        machine::cpu_relax();
    }
    return false;
}

bool FastAnswers::lookup(const char* file, const Generation& now, const char*& handed) noexcept {
    const NameKey key(file);
    const FastSlot& s = g_fast[key.slot()];
    unsigned seq = s.seq.load(std::memory_order_acquire);
    if (seq & 1u) return false;
    // Acquire loads (no fences, which ThreadSanitizer cannot follow): a field
    // from a newer write synchronises with its release store, so the
    // sequence read after it has moved; on x86 these are plain loads.
    const char* name = s.name.load(std::memory_order_acquire);
    const char* p = s.handed.load(std::memory_order_acquire);
    Generation at{s.adds.load(std::memory_order_acquire), s.nloaded.load(std::memory_order_acquire)};
    std::size_t len = s.len.load(std::memory_order_acquire);
    std::uint64_t head = s.head.load(std::memory_order_acquire), tail = s.tail.load(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != seq) return false;
    if (!name || !(at == now) || !key.same(len, head, tail, name, file)) return false;
    handed = p == name ? file : p;
    return true;
}

const char* FastAnswers::intern(const std::string& s) {
    auto it = interned_.find(s);
    if (it != interned_.end()) return it->c_str();
    if (interned_.size() >= kMaxInterned) return nullptr;
    return interned_.insert(s).first->c_str();
}

void FastAnswers::remember(const std::string& name, const Object& o, const Generation& at) {
    const bool main = o.kind == Object::Kind::main;
    const char* path = main ? nullptr : intern(o.name);
    const char* n = intern(name);
    if (!n || (!main && !path)) return;
    // glibc knows every object by its l_name and its SONAME.  Another name
    // of the model's may be one only the model holds: the name asked for
    // when ldshim loaded the object by its path without a return point to
    // teach it to glibc (c_api.cc), which glibc, asked from ldshim, would
    // search for and may not find.  Such a name is answered with the path,
    // as the model's own answer is.
    const bool glibc_knows = o.answers_to(name, false);
    const char* handed = main ? nullptr : glibc_knows ? n : path;
    const NameKey key(n);
    FastSlot& s = g_fast[key.slot()];
    unsigned seq = s.seq.load(std::memory_order_relaxed);
    s.seq.store(seq + 1, std::memory_order_relaxed);  // ordered before the fields by their release
    s.name.store(n, std::memory_order_release);
    s.len.store(key.len, std::memory_order_release);
    s.head.store(key.head, std::memory_order_release);
    s.tail.store(key.tail, std::memory_order_release);
    s.handed.store(handed, std::memory_order_release);
    s.adds.store(at.adds, std::memory_order_release);
    s.nloaded.store(at.nloaded, std::memory_order_release);
    s.seq.store(seq + 2, std::memory_order_release);
}

// Whether glibc answers `name` from its list of loaded objects alone: one
// of the object's names (l_name, l_libname, its SONAME) is exactly `name`,
// and `name` has no dynamic string token, so neither the caller nor the
// filesystem can change the answer while nothing is loaded or unloaded.
bool by_name_alone(const std::string& name, const Object& o) {
    return !name.empty() && name.find('$') == std::string::npos && o.answers_to(name);
}

}  // namespace ldshim::resolver
