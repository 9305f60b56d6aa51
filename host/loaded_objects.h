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
// ScratchText, in one ScratchBlock) and does everything else after it; a
// walk that ran out of room is made again with more (walk_with_room).  Data
// that must outlive the walk but lives in an object's memory is copied,
// never pointed to: the object may be unloaded as soon as the lock is
// released.
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

// visit(Segment) for each PT_LOAD segment of a walked object, in program
// header order: its memory image, [load bias + p_vaddr, + p_memsz).  The one
// rule for where an object is mapped: the patcher's list of ldshim's own
// segments, the live model's address ranges and find_object before glibc
// 2.35 (which rounds it out to pages) all read it here.
template <class Visit>
void for_each_segment(const dl_phdr_info& info, Visit&& visit) {
    for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info.dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        const std::uintptr_t lo = info.dlpi_addr + ph.p_vaddr;
        visit(Segment{lo, lo + ph.p_memsz});
    }
}

// The name dl_iterate_phdr reports (l_name), "" where it reports none.
inline const char* name_of(const dl_phdr_info& info) { return info.dlpi_name ? info.dlpi_name : ""; }

// Matches each object of a walk to the record the walk before kept of it.
// dl_iterate_phdr lists the objects in load order; an object that stays
// keeps its place among those that stay, and new ones come after them.  So
// each object is looked for first right after the record matched last --
// nearly always there: one comparison -- and only then searched for.  Start
// one per walk.  Allocates nothing: for use inside the walk.
//
// What a record is, what makes it an object's, and what a caller does with
// a new object or a record no step matched stays the caller's: the patcher
// matches by load address and forgets everything once any object went
// (another may be mapped at its base); the live model matches by address,
// program headers and name, and drops the records no step of the walk
// matched (resolver/loaded_sync.cc).
class InOrderMatch {
public:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    // The index, among the last walk's `count` records, of the one `is(i)`
    // holds for: the expected one if it does, else what `search()` answers
    // (an index, or npos: none -- the object is new).  The record after it
    // is expected next.
    template <class Is, class Search>
    std::size_t operator()(std::size_t count, Is&& is, Search&& search) {
        const std::size_t i = next_ < count && is(next_) ? next_ : search();
        if (i != npos) next_ = i + 1;
        return i;
    }
    // The same, searching every record in turn.
    template <class Is>
    std::size_t operator()(std::size_t count, Is&& is) {
        return (*this)(count, is, [&] {
            for (std::size_t i = 0; i < count; ++i)
                if (is(i)) return i;
            return npos;
        });
    }

private:
    std::size_t next_ = 0;
};

// A walk's list and the room it should have (ScratchBlock::lay_out).
template <class List>
struct ListRoom {
    List& list;
    std::size_t count;
};
template <class List>
ListRoom(List&, std::size_t) -> ListRoom<List>;

// Room for a walk's lists (Scratch, ScratchText), reserved before it, in
// one allocation: a list the walk leaves empty then costs no page, where a
// block of its own would cost the page its malloc header is written to.
// Kept for the next walk while large enough.
class ScratchBlock {
public:
    // Lays the lists out one after another in the order given, each with
    // room for its count or for all its last walk wanted if that was more,
    // and starts each empty.
    template <class... List>
    void lay_out(ListRoom<List>... lists) {
        size_ = 0;
        (lists.list.place(*this, lists.count), ...);
        allocate();
        (lists.list.reset(*this), ...);
    }
    // Room for `count` items of T after what is laid out so far: its offset.
    template <class T>
    std::size_t reserve(std::size_t count) noexcept {
        size_ = (size_ + alignof(T) - 1) / alignof(T) * alignof(T);
        size_ += count * sizeof(T);
        return size_ - count * sizeof(T);
    }
    template <class T>
    std::span<T> at(std::size_t offset, std::size_t count) noexcept {
        return {reinterpret_cast<T*>(bytes_.get() + offset), count};
    }

private:
    // The block for the layout (operator new's alignment suits every list).
    void allocate() {
        if (capacity_ >= size_) return;
        // Not zeroed: every item is written before it is read.
        bytes_.reset(new std::byte[size_]);
        capacity_ = size_;
    }

    std::unique_ptr<std::byte[]> bytes_;
    std::size_t size_ = 0, capacity_ = 0;
};

// Items collected during a walk into room a ScratchBlock laid out before
// it.  push() never allocates.  When the room is full the item is dropped and
// overflowed() says so; the walk is then made again with more room.
template <class T>
class Scratch {
    static_assert(std::is_trivially_copyable_v<T>, "copied under the loader lock: plain data only");

public:
    bool push(const T& item) noexcept {
        if (size_ == room_.size()) {
            ++dropped_;
            return false;
        }
        room_[size_++] = item;
        return true;
    }
    bool overflowed() const { return dropped_ != 0; }
    std::span<const T> items() const { return room_.first(size_); }

private:
    friend class ScratchBlock;
    // Room for `room` items in `block`, or for all the last walk wanted if
    // that was more.
    void place(ScratchBlock& block, std::size_t room) noexcept {
        count_ = std::max(room, size_ + dropped_);
        offset_ = block.reserve<T>(count_);
    }
    // Empty, in the room placed, of the block allocated since.
    void reset(ScratchBlock& block) noexcept {
        room_ = block.at<T>(offset_, count_);
        size_ = dropped_ = 0;
    }

    std::span<T> room_;
    std::size_t size_ = 0, dropped_ = 0;
    std::size_t offset_ = 0, count_ = 0;  // as placed
};

// Bytes copied during a walk (names, an object's facts), addressed by
// offset, in room laid out as a Scratch's is.
class ScratchText {
public:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    // The free room, for a copier that reports how much it needed; then
    // commit() that many bytes.
    std::span<std::byte> tail() noexcept { return room_.subspan(used_); }
    // The offset of the n bytes just written at tail(), or npos (and
    // overflowed()) when they did not fit.
    std::size_t commit(std::size_t n) noexcept {
        wanted_ += n;
        if (n > room_.size() - used_ || wanted_ != used_ + n) return npos;  // after an overflow nothing fits
        used_ += n;
        return used_ - n;
    }
    std::size_t put(const void* p, std::size_t n) noexcept {
        if (n && n <= room_.size() - used_) std::memcpy(tail().data(), p, n);
        return commit(n);
    }
    // A C string with its terminator.
    std::size_t put_string(const char* s) noexcept { return put(s ? s : "", std::strlen(s ? s : "") + 1); }
    const char* at(std::size_t offset) const { return reinterpret_cast<const char*>(room_.data() + offset); }
    std::span<const std::byte> bytes(std::size_t offset, std::size_t n) const { return room_.subspan(offset, n); }
    bool overflowed() const { return wanted_ != used_; }

private:
    friend class ScratchBlock;
    // Room for `room` bytes in `block`, or for all the last walk wanted if
    // that was more.
    void place(ScratchBlock& block, std::size_t room) noexcept {
        count_ = std::max(room, wanted_);
        offset_ = block.reserve<std::byte>(count_);
    }
    // Empty, in the room placed, of the block allocated since.
    void reset(ScratchBlock& block) noexcept {
        room_ = block.at<std::byte>(offset_, count_);
        used_ = wanted_ = 0;
    }

    std::span<std::byte> room_;
    std::size_t used_ = 0, wanted_ = 0;
    std::size_t offset_ = 0, count_ = 0;  // as placed
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
