#include "host/dir_record.h"

#include "host/libc.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace ldshim::host {

namespace {

using loader::DirStatus;

// struct r_search_path_elem, the same from glibc 2.28 to 2.43: next, what,
// where, dirname, dirnamelen, then `enum r_dir_status status[]`.
struct ElemHead {
    std::uintptr_t next, what, where, dirname;
    std::size_t dirnamelen;
};
constexpr std::size_t kMaxElems = 1 << 16;
constexpr std::size_t kMaxDirname = 1 << 12;

// n bytes at `addr` of this process, or false where they cannot be read:
// the kernel checks the address, so a wrong guess costs an error, not a
// fault.
bool peek(std::uintptr_t addr, void* out, std::size_t n) {
    if (addr < 4096) return false;
    iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

// Which list created an element (fillin_rpath's `what`).
bool known_label(std::uintptr_t what, bool* system) {
    char buf[24] = {};
    if (!peek(what, buf, sizeof buf - 1) && !peek(what, buf, 8)) return false;
    std::string_view s(buf, strnlen(buf, sizeof buf));
    *system = s == "system search path";
    return *system || s == "RPATH" || s == "RUNPATH" || s == "LD_LIBRARY_PATH" || s == "--library-path";
}

// One element read and checked; false where it is not one.  `system`: it
// is one of the system search path's (their names are ld.so's own strings).
bool read_elem(std::uintptr_t at, std::size_t nsubdirs, ElemHead& h, RecordedDir& out, bool* system) {
    if (at % alignof(ElemHead) || !peek(at, &h, sizeof h)) return false;
    if (h.dirnamelen > kMaxDirname || !known_label(h.what, system)) return false;
    // A list's element holds its name right after its statuses (fillin_rpath):
    // this checks the number of statuses, hence the subdirectories, too.
    if (!*system && h.dirname != at + sizeof h + nsubdirs * sizeof(int)) return false;
    // An empty list element (the current directory) has an empty name; any
    // other ends in a slash.
    out.dirname.resize(h.dirnamelen);
    if (h.dirnamelen == 0) {
        if (*system) return false;
    } else if (!peek(h.dirname, out.dirname.data(), h.dirnamelen) || out.dirname.back() != '/') {
        return false;
    }
    std::vector<int> raw(nsubdirs);
    if (!peek(at + sizeof h, raw.data(), raw.size() * sizeof(int))) return false;
    out.status.clear();
    for (int s : raw) {
        if (s < 0 || s > 2) return false;
        out.status.push_back(static_cast<DirStatus>(s));  // unknown, nonexisting, existing: glibc's order
    }
    return true;
}

// The chain that starts at `head`, if every element is well formed and its
// last holds a system directory (the search path ld.so set up first).
std::optional<std::vector<RecordedDir>> read_chain(std::uintptr_t head, std::size_t nsubdirs) {
    std::vector<RecordedDir> dirs;
    bool system = false;
    for (std::uintptr_t at = head; at;) {
        if (dirs.size() == kMaxElems) return std::nullopt;  // a cycle, or not the list
        ElemHead h{};
        RecordedDir d;
        if (!read_elem(at, nsubdirs, h, d, &system)) return std::nullopt;
        dirs.push_back(std::move(d));
        at = h.next;
    }
    if (dirs.empty() || !system) return std::nullopt;
    return dirs;
}

// The list, from the word of _rtld_global that leads to it: of the words
// whose chain is well formed, the one with the longest (GL(dl_all_dirs)
// leads to every element).
std::optional<std::vector<RecordedDir>> longest_chain(const unsigned char* g, std::size_t size, std::size_t nsubdirs) {
    std::optional<std::vector<RecordedDir>> best;
    for (std::size_t off = 0; off + sizeof(std::uintptr_t) <= size; off += sizeof(std::uintptr_t)) {
        std::uintptr_t v;
        std::memcpy(&v, g + off, sizeof v);
        if (v < 4096 || v % alignof(ElemHead)) continue;
        auto chain = read_chain(v, nsubdirs);
        if (chain && (!best || chain->size() > best->size())) best = std::move(chain);
    }
    return best;
}

}  // namespace

std::optional<std::vector<RecordedDir>> read_dir_record(std::size_t nsubdirs) {
    std::span<const unsigned char> g = rtld_global();
    if (g.empty() || !nsubdirs) return std::nullopt;
    return longest_chain(g.data(), g.size(), nsubdirs);
}

}  // namespace ldshim::host
