#include "hooks/slot_writer.h"

#include "hooks/object_scan.h"
#include "host/libc.h"
#include "host/loaded_objects.h"
#include "host/mapped_files.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string_view>

namespace ldshim::hooks {

namespace {

std::uintptr_t page_size() {
    static const auto ps = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return ps;
}

std::uintptr_t page_of(std::uintptr_t addr) { return addr & ~(page_size() - 1); }

struct Mapping {
    std::uintptr_t lo, hi;
    int prot;
};

// Every mapping's protection, from /proc/self/maps (host/mapped_files.h: a
// line per mapping, so slow with many libraries).  Read before the walk; the
// writer's own changes are undone before it returns, so the copy stays true
// for the walk.
std::vector<Mapping> read_protections() {
    std::vector<Mapping> maps;
    host::read_own_maps([&](std::string_view line) {
        const std::optional<host::MapsLine> m = host::parse_maps_line(line);
        if (!m) return;
        const int prot = (m->perms[0] == 'r' ? PROT_READ : 0) | (m->perms[1] == 'w' ? PROT_WRITE : 0) |
                         (m->perms[2] == 'x' ? PROT_EXEC : 0);
        maps.push_back({m->lo, m->hi, prot});
    });
    return maps;
}

int protection(const std::vector<Mapping>& maps, std::uintptr_t page) {  // -1: not mapped
    auto it =
        std::upper_bound(maps.begin(), maps.end(), page, [](std::uintptr_t p, const Mapping& m) { return p < m.lo; });
    if (it == maps.begin()) return -1;
    --it;
    return page < it->hi ? it->prot : -1;
}

// The writes of one object that fall on one page.
struct PageGroup {
    std::uintptr_t base;
    std::size_t first, count;  // in the sorted order
    bool plainly_writable;     // every one of them
};

void compare_and_swap(SlotWrite& w) {
    std::uintptr_t seen = w.expected;
    w.result = __atomic_compare_exchange_n(reinterpret_cast<std::uintptr_t*>(w.slot), &seen, w.value, false,
                                           __ATOMIC_RELEASE, __ATOMIC_RELAXED)
                   ? WriteResult::written
                   : WriteResult::changed;
}

// Under the loader's lock: no allocation.
void write_page(const std::vector<Mapping>& maps, SlotWrite* const* items, std::size_t n, bool plainly_writable) {
    if (plainly_writable) {
        for (std::size_t i = 0; i < n; ++i) compare_and_swap(*items[i]);
        return;
    }
    std::uintptr_t page = page_of(items[0]->slot);
    int prot = protection(maps, page);
    bool need_write = prot >= 0 && (prot & PROT_WRITE) == 0;
    if (prot < 0 || (need_write && mprotect(reinterpret_cast<void*>(page), page_size(), prot | PROT_WRITE) != 0)) {
        for (std::size_t i = 0; i < n; ++i)
            items[i]->result = prot < 0 ? WriteResult::unmapped : WriteResult::protect_failed;
        return;
    }
    for (std::size_t i = 0; i < n; ++i) compare_and_swap(*items[i]);
    // Put the previous protection back even where an exchange failed.
    if (need_write) mprotect(reinterpret_cast<void*>(page), page_size(), prot);
}

std::vector<PageGroup> group_by_page(const std::vector<SlotWrite*>& order) {
    std::vector<PageGroup> groups;
    for (std::size_t a = 0; a < order.size();) {
        PageGroup g{order[a]->base, a, 0, true};
        std::uintptr_t page = page_of(order[a]->slot);
        for (; a < order.size() && order[a]->base == g.base && page_of(order[a]->slot) == page; ++a, ++g.count)
            g.plainly_writable = g.plainly_writable && order[a]->plainly_writable;
        groups.push_back(g);
    }
    return groups;
}

}  // namespace

void write_slots(std::vector<SlotWrite>& writes) {
    if (writes.empty()) return;
    std::vector<SlotWrite*> order;
    order.reserve(writes.size());
    for (SlotWrite& w : writes) {
        w.result = WriteResult::unmapped;  // until its object is met in the walk
        order.push_back(&w);
    }
    std::sort(order.begin(), order.end(), [](const SlotWrite* a, const SlotWrite* b) {
        return a->base != b->base ? a->base < b->base : a->slot < b->slot;
    });
    const std::vector<PageGroup> groups = group_by_page(order);
    bool need_maps = std::any_of(groups.begin(), groups.end(), [](const PageGroup& g) { return !g.plainly_writable; });
    // The protections read before the walk hold for it unless an object is
    // unloaded in between (another could be mapped at its place): then read
    // them again.  A few tries; after that the writes wait for the next pass.
    for (int attempt = 0; attempt < 4; ++attempt) {
        host::LoadCounters before = host::load_counters();
        std::vector<Mapping> maps;
        if (need_maps) maps = read_protections();
        bool stale = false;
        host::for_each_loaded([&](const dl_phdr_info& info, const host::LoadCounters& now) {
            if (now.subs != before.subs) {
                stale = true;  // the same for every object of a walk: nothing was written yet
                return false;
            }
            auto g = std::lower_bound(groups.begin(), groups.end(), info.dlpi_addr,
                                      [](const PageGroup& x, std::uintptr_t b) { return x.base < b; });
            if (g == groups.end() || g->base != info.dlpi_addr) return true;
            bool ready = relocated(info);
            for (; g != groups.end() && g->base == info.dlpi_addr; ++g) {
                if (ready) {
                    write_page(maps, &order[g->first], g->count, g->plainly_writable);
                } else {
                    for (std::size_t i = 0; i < g->count; ++i) order[g->first + i]->result = WriteResult::unloading;
                }
            }
            return true;
        });
        if (!stale) return;
    }
    for (SlotWrite& w : writes) w.result = WriteResult::unloading;
}

const char* describe(WriteResult r) {
    switch (r) {
        case WriteResult::written: return "";
        case WriteResult::changed: return "the slot changed while it was being written";
        case WriteResult::protect_failed: return "mprotect refused to make the page writable";
        case WriteResult::unmapped: return "the slot's object or page is no longer mapped";
        case WriteResult::unloading: return "objects were being loaded or unloaded; left for the next pass";
    }
    return "";
}

}  // namespace ldshim::hooks
