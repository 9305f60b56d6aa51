// The one way libldshim walks the loaded objects.
//
// glibc runs a dl_iterate_phdr visitor with its loader lock held
// (dl_load_write_lock), and every other thread's dl_iterate_phdr -- an
// unwinder's, a profiler's -- waits for it.  So a visitor allocates and frees
// nothing and calls nothing that another tool may wrap or that takes a loader
// lock (malloc, operator new, dlopen, dladdr, dlsym, open): heaptrack's malloc
// unwinds the stack under libunwind's mutex, which heaptrack's other thread
// holds while it waits for this very walk, and the process hangs.
//
// A visitor copies plain data into room reserved before the walk (Scratch,
// ScratchText) and does everything else after it; a walk that ran out of room
// is made again with more (walk_with_room).  Data that must outlive the walk
// but lives in an object's memory is copied, never pointed to: the object may
// be unloaded as soon as the lock is released.
#pragma once

#include "host/libc.h"

#include <link.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace ldshim::host {

// dl_iterate_phdr's add and sub counters as this callback reports them (zero
// where the structure is too old to carry them).
inline LoadCounters counters_of(const dl_phdr_info& info, std::size_t size) {
    if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof(info.dlpi_subs)) return {};
    return {info.dlpi_adds, info.dlpi_subs};
}

// visit(const dl_phdr_info&, const LoadCounters&) -> bool, in load order
// (the main program first); returning false ends the walk.  Uses glibc's own
// dl_iterate_phdr (libc.h).  No allocation of its own.
template <class Visit>
void for_each_loaded(Visit&& visit) {
    using V = std::remove_reference_t<Visit>;
    libc_dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t size, void* data) -> int {
            return (*static_cast<V*>(data))(*info, counters_of(*info, size)) ? 0 : 1;
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(visit))));
}

// One PT_LOAD segment of a walked object, [lo, hi) in this process.
struct Segment {
    std::uintptr_t lo, hi;
};

// Items collected during a walk: push() never allocates.  When the reserved
// room is full the item is dropped and overflowed() says so; the walk is then
// made again with more room.
template <class T>
class Scratch {
    static_assert(std::is_trivially_copyable_v<T>, "copied under the loader lock: plain data only");

public:
    // Room for `room` items, or for all the last walk wanted if that was more.
    void reset(std::size_t room) {
        room = std::max(room, items_.size() + dropped_);
        items_.clear();
        if (items_.capacity() < room) items_.reserve(room);
        dropped_ = 0;
    }
    bool push(const T& item) noexcept {
        if (items_.size() == items_.capacity()) {
            ++dropped_;
            return false;
        }
        items_.push_back(item);  // within capacity: no allocation
        return true;
    }
    bool overflowed() const { return dropped_ != 0; }
    const std::vector<T>& items() const { return items_; }

private:
    std::vector<T> items_;
    std::size_t dropped_ = 0;
};

// Bytes copied during a walk (names, an object's facts), addressed by offset.
class ScratchText {
public:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    // Room for `room` bytes, or for all the last walk wanted if that was more.
    void reset(std::size_t room) {
        room = std::max(room, wanted_);
        if (room_ < room) {
            // Not zeroed: every byte is written before it is read
            // (make_unique_for_overwrite would say so, from GCC 11 only).
            bytes_.reset(new std::byte[room]);
            room_ = room;
        }
        used_ = wanted_ = 0;
    }
    // The free room, for a copier that reports how much it needed; then
    // commit() that many bytes.
    std::span<std::byte> tail() noexcept { return {bytes_.get() + used_, room_ - used_}; }
    // The offset of the n bytes just written at tail(), or npos (and
    // overflowed()) when they did not fit.
    std::size_t commit(std::size_t n) noexcept {
        wanted_ += n;
        if (n > room_ - used_ || wanted_ != used_ + n) return npos;  // after an overflow nothing fits
        used_ += n;
        return used_ - n;
    }
    std::size_t put(const void* p, std::size_t n) noexcept {
        if (n && n <= room_ - used_) std::memcpy(tail().data(), p, n);
        return commit(n);
    }
    // A C string with its terminator.
    std::size_t put_string(const char* s) noexcept { return put(s ? s : "", std::strlen(s ? s : "") + 1); }
    const char* at(std::size_t offset) const { return reinterpret_cast<const char*>(bytes_.get() + offset); }
    std::span<const std::byte> bytes(std::size_t offset, std::size_t n) const { return {bytes_.get() + offset, n}; }
    bool overflowed() const { return wanted_ != used_; }

private:
    std::unique_ptr<std::byte[]> bytes_;
    std::size_t room_ = 0, used_ = 0, wanted_ = 0;
};

// Walks until what the visitor copies fits: room.reset(n) before each walk,
// n doubled after a walk that overflowed.  `n` is updated, so the next walk
// of the same kind starts with room that sufficed.
template <class Room, class Visit>
void walk_with_room(Room& room, std::size_t& n, Visit&& visit) {
    for (;;) {
        room.reset(n);
        for_each_loaded(visit);
        if (!room.overflowed()) return;
        n *= 2;
    }
}

}  // namespace ldshim::host
