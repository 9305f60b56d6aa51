#include "hooks/slot_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace ldshim::hooks {

namespace {

std::uintptr_t page_size() {
    static const auto ps = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return ps;
}

}  // namespace

bool SlotWriter::load() {
    loaded_ = true;
    maps_.clear();
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::string text;
    char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    // "lo-hi rwxp offset dev inode path": only the range and "rwx" matter.
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const char* line = text.c_str() + pos;
        char* end = nullptr;
        std::uintptr_t lo = std::strtoull(line, &end, 16);
        if (end && *end == '-') {
            std::uintptr_t hi = std::strtoull(end + 1, &end, 16);
            if (end && *end == ' ' && end + 4 <= text.c_str() + eol) {
                int prot = (end[1] == 'r' ? PROT_READ : 0) | (end[2] == 'w' ? PROT_WRITE : 0) |
                           (end[3] == 'x' ? PROT_EXEC : 0);
                maps_.push_back({lo, hi, prot});
            }
        }
        pos = eol + 1;
    }
    return !maps_.empty();
}

int SlotWriter::protection(std::uintptr_t page) {
    if (!loaded_) load();
    auto it = std::upper_bound(maps_.begin(), maps_.end(), page,
                               [](std::uintptr_t p, const Mapping& m) { return p < m.lo; });
    if (it == maps_.begin()) return -1;
    --it;
    return page < it->hi ? it->prot : -1;
}

SlotWriter::Result SlotWriter::write(std::uintptr_t slot, std::uintptr_t expected, std::uintptr_t value,
                                     bool plainly_writable) {
    if (plainly_writable) {
        std::uintptr_t seen = expected;
        return __atomic_compare_exchange_n(reinterpret_cast<std::uintptr_t*>(slot), &seen, value, false,
                                           __ATOMIC_RELEASE, __ATOMIC_RELAXED)
                   ? Result::written
                   : Result::changed;
    }
    std::uintptr_t page = slot & ~(page_size() - 1);
    int prot = protection(page);
    if (prot < 0) return Result::unmapped;
    auto* p = reinterpret_cast<std::uintptr_t*>(slot);
    bool need_write = (prot & PROT_WRITE) == 0;
    if (need_write && mprotect(reinterpret_cast<void*>(page), page_size(), prot | PROT_WRITE) != 0)
        return Result::protect_failed;
    std::uintptr_t seen = expected;
    bool ok = __atomic_compare_exchange_n(p, &seen, value, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    // Put the previous protection back even when the exchange failed.
    if (need_write) mprotect(reinterpret_cast<void*>(page), page_size(), prot);
    return ok ? Result::written : Result::changed;
}

void SlotWriter::write_page(Item* items, std::size_t n, bool plainly_writable) {
    auto cas = [](Item& it) {
        std::uintptr_t seen = it.expected;
        it.result = __atomic_compare_exchange_n(reinterpret_cast<std::uintptr_t*>(it.slot), &seen, it.value, false,
                                                __ATOMIC_RELEASE, __ATOMIC_RELAXED)
                        ? Result::written
                        : Result::changed;
    };
    if (n == 0) return;
    if (plainly_writable) {
        for (std::size_t i = 0; i < n; ++i) cas(items[i]);
        return;
    }
    std::uintptr_t page = items[0].slot & ~(page_size() - 1);
    int prot = protection(page);
    Result fail = prot < 0 ? Result::unmapped : Result::protect_failed;
    bool need_write = prot >= 0 && (prot & PROT_WRITE) == 0;
    if (prot < 0 || (need_write && mprotect(reinterpret_cast<void*>(page), page_size(), prot | PROT_WRITE) != 0)) {
        for (std::size_t i = 0; i < n; ++i) items[i].result = fail;
        return;
    }
    for (std::size_t i = 0; i < n; ++i) cas(items[i]);
    if (need_write) mprotect(reinterpret_cast<void*>(page), page_size(), prot);
}

std::uintptr_t SlotWriter::page_of(std::uintptr_t addr) { return addr & ~(page_size() - 1); }

const char* SlotWriter::describe(Result r) {
    switch (r) {
        case Result::written: return "";
        case Result::changed: return "the slot changed while it was being written";
        case Result::protect_failed: return "mprotect refused to make the page writable";
        case Result::unmapped: return "the slot's page is not mapped";
    }
    return "";
}

}  // namespace ldshim::hooks
