// The mapped extent of a loaded object (its PT_LOAD segments, from
// dl_iterate_phdr data or the program's own auxiliary vector), for readers
// of in-memory ELF structures: every pointer is checked against it before
// it is followed.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace ldshim::loader {

// The name GNU notes (the build ID's among them) carry, with its NUL.
inline constexpr std::string_view kGnuNoteName{"GNU", 4};

struct LoadedExtent {
    const ElfW(Phdr) * ph;
    std::size_t n;
    std::uintptr_t base;

    // Does [addr, addr+len) lie inside one PT_LOAD's memory image?
    bool contains(std::uintptr_t addr, std::size_t len = 1) const {
        for (std::size_t i = 0; i < n; ++i) {
            if (ph[i].p_type != PT_LOAD) continue;
            std::uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
            if (addr >= lo && addr <= hi && len <= hi - addr) return true;
        }
        return false;
    }

    // A d_ptr value of the dynamic section as an address of `len` bytes
    // inside the object, or 0.  glibc rewrites d_ptr values to run-time
    // addresses when the dynamic section is writable; a read-only one (the
    // vDSO) still holds link-time values.
    std::uintptr_t pointer(std::uint64_t value, std::size_t len) const {
        auto p = static_cast<std::uintptr_t>(value);
        if (contains(p, len)) return p;
        p += base;
        return contains(p, len) ? p : 0;
    }

    // The descriptor of the first note of `type` named `name` (with its
    // NUL) in the object's PT_NOTE segments, or nullopt.
    std::optional<std::span<const std::byte>> note(std::uint32_t type, std::string_view name) const {
        for (std::size_t i = 0; i < n; ++i) {
            if (ph[i].p_type != PT_NOTE) continue;
            const std::uintptr_t seg = base + ph[i].p_vaddr;
            if (!contains(seg, ph[i].p_memsz)) continue;
            if (auto found = note_in(seg, ph[i].p_memsz, type, name)) return found;
        }
        return std::nullopt;
    }

    // The same in one note segment of `size` bytes at `seg`, which the
    // caller has checked lies inside the object.  Each note is its header,
    // then name and descriptor, each padded to 4 bytes; a note that runs
    // past the segment ends the walk.
    static std::optional<std::span<const std::byte>> note_in(std::uintptr_t seg, std::size_t size, std::uint32_t type,
                                                             std::string_view name) {
        for (std::size_t off = 0; size - off >= sizeof(ElfW(Nhdr));) {
            ElfW(Nhdr) h;
            std::memcpy(&h, reinterpret_cast<const void*>(seg + off), sizeof h);
            const std::size_t name_len = (h.n_namesz + 3u) & ~std::size_t{3};
            const std::size_t desc_len = (h.n_descsz + 3u) & ~std::size_t{3};
            const std::size_t rest = size - off - sizeof h;
            if (name_len > rest || desc_len > rest - name_len) break;
            const auto* body = reinterpret_cast<const char*>(seg + off + sizeof h);
            if (h.n_type == type && h.n_namesz == name.size() && std::memcmp(body, name.data(), name.size()) == 0)
                return std::span(reinterpret_cast<const std::byte*>(body + name_len), h.n_descsz);
            off += sizeof h + name_len + desc_len;
        }
        return std::nullopt;
    }
};

// The GNU hash of a symbol name (DT_GNU_HASH's, as the loader computes it),
// for the readers of loaded objects' hash tables (host/libc.cc,
// hooks/object_scan.h).
constexpr std::uint32_t gnu_hash(const char* name) {
    std::uint32_t h = 5381;
    for (; *name; ++name) h = h * 33 + static_cast<unsigned char>(*name);
    return h;
}

// What a search of one DT_GNU_HASH chain came to.
enum class ChainResult { found, absent, unreadable };

// The loader's search of the chain of `hash`'s bucket, for both readers of
// loaded objects' tables: each brings its own bounds check and its own test
// of a symbol.  `buckets` points at the table's `nbuckets` bucket words (the
// caller checked them); the chain follows them, one word per hashed symbol
// from `symoffset` on.  readable(p, n): whether n bytes at p may be read.
// test(i) is asked about each symbol i whose chain word matches the hash
// (its low bit aside) and answers found, absent (the search goes on) or
// unreadable.  A bucket that points below `symoffset`, or a chain that
// runs off the readable memory, is unreadable.
template <class Readable, class Test>
ChainResult search_gnu_chain(const std::uint32_t* buckets, std::uint32_t nbuckets, std::uint32_t symoffset,
                             std::uint32_t hash, Readable&& readable, Test&& test) {
    const std::uint32_t first = buckets[hash % nbuckets];
    if (first == 0) return ChainResult::absent;  // an empty bucket
    if (first < symoffset) return ChainResult::unreadable;
    const std::uint32_t* chain = buckets + nbuckets;
    for (std::uint32_t i = first;; ++i) {
        const std::uint32_t* word = chain + (i - symoffset);
        if (!readable(word, sizeof *word)) return ChainResult::unreadable;
        if ((*word | 1) == (hash | 1)) {
            const ChainResult r = test(i);
            if (r != ChainResult::absent) return r;
        }
        if (*word & 1) return ChainResult::absent;  // the chain's last symbol
    }
}

}  // namespace ldshim::loader
