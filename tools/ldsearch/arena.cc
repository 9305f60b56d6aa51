// The process's arena (arena.h) and the replaced operator new and delete that
// use it.  Only `operator new(size_t)` and the two plain deletes are
// replaced: the standard library's array, nothrow and sized forms call
// these, and its over-aligned forms keep to aligned_alloc and free.
#include "arena.h"

#include <cstdlib>
#include <new>

namespace ldsearch {
namespace {

// Zero-filled: pages cost nothing until a run touches them.  16 MiB holds
// the largest search measured (gdb: 150 KB) a hundred times over.  On
// x86-64 in .lbss, which linkers place after .bss, rather than in .bss
// itself: there it would sit between libc's variables and spread the few
// pages of them a run writes 16 MiB apart.  Elsewhere in .bss: gcc knows
// .lbss as zero-filled on x86-64 only, and on aarch64 it wrote the 16 MiB
// of zeros into the program file.
#if defined(__x86_64__)
#define LDSEARCH_ARENA_SECTION __attribute__((section(".lbss")))
#else
#define LDSEARCH_ARENA_SECTION
#endif
alignas(BumpArena::kAlign) LDSEARCH_ARENA_SECTION std::byte region[16 << 20];
constinit BumpArena arena(region, sizeof region);

}  // namespace

void close_process_arena() noexcept { arena.close(); }

}  // namespace ldsearch

#ifdef LDSEARCH_ARENA

void* operator new(std::size_t n) {
    if (void* p = ldsearch::arena.allocate(n)) return p;
    // The replaceable operator's contract: retry through the new-handler.
    for (;;) {
        if (void* p = std::malloc(n ? n : 1)) return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

// Without a size the block cannot be put back in its class.
void operator delete(void* p) noexcept {
    if (!ldsearch::arena.owns(p)) std::free(p);
}

void operator delete(void* p, std::size_t n) noexcept {
    if (!ldsearch::arena.owns(p))
        std::free(p);
    else
        ldsearch::arena.release(p, n);
}

#endif
