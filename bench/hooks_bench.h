// What bench/hooks_bench.cc shares with its UCX worker (hooks_bench_ucm.cc)
// and its thread rows (hooks_bench_threads.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hooks_bench {

using Fn = void*;
// One allocation (call i of a batch) or free through fn; returns the
// function's result.
using AllocCall = int (*)(Fn fn, int i);
using FreeCall = int (*)(Fn fn, int i);

struct Entry {
    const char* alloc;
    const char* free;
    Fn (*alloc_slot)();  // the program's import slot, read now
    Fn (*free_slot)();
    AllocCall do_alloc;
    FreeCall do_free;
    bool registers;  // whether the allocation is in the registry afterwards
};

extern const Entry kEntries[];
extern const int kEntryCount;
extern std::uintptr_t g_ptr[];  // what the allocations of a batch returned

struct Times {
    double alloc, free;  // ns per call
};
// A batch of allocations through a, then their frees through f.
Times batch(const Entry& e, Fn a, Fn f);
Fn read_slot(Fn (*f)());
double now_ns();
double median(std::vector<double> v);

// A process forked before ldshim's hooks are installed, with UCX master's
// libucs loaded and UCS's memtype cache subscribed to ucm's memory-type
// events (so ucm's CUDA module has installed its hooks): what a CUDA-aware
// UCX process pays, timed on the same stand-ins in the same rounds.
class UcmWorker {
public:
    // direct_a/direct_f: every entry's import slots before any hook.  Null,
    // with `why`, when UCX cannot be loaded or its hooks are not there.
    static std::unique_ptr<UcmWorker> start(const std::string& prefix, const Fn* direct_a, const Fn* direct_f,
                                            std::string& why);
    ~UcmWorker();
    UcmWorker(const UcmWorker&) = delete;
    UcmWorker& operator=(const UcmWorker&) = delete;
    // Entry k's allocation / free: '-' ucm does not hook it, 'y' it does (and
    // UCS's cache followed), 'x' it could not be timed (said on stderr).
    char alloc_state(int k) const { return states_[2 * k]; }
    char free_state(int k) const { return states_[2 * k + 1]; }
    // One round of entry k in the worker: direct and through ucm's hooks.
    bool pair(int k, bool direct_first, Times& direct, Times& hooked);
    const std::string& label() const { return label_; }
    // Why the worker stopped answering; empty while it answers.
    const std::string& failure() const { return failure_; }

private:
    UcmWorker(int pid, int fd) : pid_(pid), fd_(fd) {}
    int pid_, fd_;  // fd_: a socket to the worker
    std::string states_, label_, failure_;
};

// Where UCX master built --with-cuda is installed: `given`, or the
// unpatched prefix of scripts/ucx-master.sh --cuda's cache.  Empty, with
// `why`, when there is none.
std::string find_ucx(const std::string& given, std::string& why);

// The thread rows: cudaMalloc + cudaFree on 1, 2 and 4 threads, against the
// stand-in and through ldshim's hooks, with one more thread querying the
// registry.
void thread_rows(Fn direct_alloc, Fn direct_free, Fn hooked_alloc, Fn hooked_free, int rounds, bool quick);

}  // namespace hooks_bench
