// UCX master's ucm CUDA hooks with UCS's memtype cache subscribed, timed in a
// worker process on the same stand-ins as ldshim's hooks (hooks_bench.h).
// The worker is forked before ldshim's hooks go in, so that the two hookers
// never see each other's slots; it loads libucs (and through it libucm and
// libucm_cuda) with no UCX header at build time, and answers one round of an
// entry at a time, so that its rounds interleave with the parent's.
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hooks_bench.h"

#ifndef UCX_MASTER_SCRIPT
#error "UCX_MASTER_SCRIPT must name scripts/ucx-master.sh"
#endif

namespace hooks_bench {
namespace {

bool write_all(int fd, const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
        ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);  // a dead worker must not kill the parent with SIGPIPE
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool read_all(int fd, void* p, std::size_t n) {
    char* c = static_cast<char*>(p);
    while (n > 0) {
        ssize_t r = ::read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

bool send_string(int fd, const std::string& s) {
    std::uint32_t n = static_cast<std::uint32_t>(s.size());
    return write_all(fd, &n, sizeof n) && write_all(fd, s.data(), n);
}

bool recv_string(int fd, std::string& s) {
    std::uint32_t n = 0;
    if (!read_all(fd, &n, sizeof n) || n > (1u << 16)) return false;
    s.resize(n);
    return read_all(fd, s.data(), n);
}

// libucs's entry points, looked up in the library loaded.
struct Ucs {
    void (*create)() = nullptr;
    int (*lookup)(const void*, std::size_t, void*) = nullptr;
    void** instance = nullptr;
};

// Whether UCS's memtype cache holds p (ucs_memtype_cache_lookup returns
// UCS_OK, 0).
bool cached(const Ucs& ucs, std::uintptr_t p) {
    alignas(16) unsigned char info[256];  // a ucs_memory_info_t: 32 bytes in master
    return ucs.lookup(reinterpret_cast<const void*>(p), 1, info) == 0;
}

// Loads libucs and starts UCS's memtype cache, which asks ucm for
// MEM_TYPE_ALLOC/FREE events: ucm loads its CUDA module, which installs
// its hooks.  Empty, or why not.
std::string load_ucs(const std::string& prefix, Ucs& ucs) {
    // The mode that patches import slots, as ldshim does; bistro patches the
    // functions themselves, which leaves no direct call to time against.
    setenv("UCX_MEM_CUDA_HOOK_MODE", "reloc", 0);
    std::string lib = prefix + "/lib/libucs.so.0";
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) return std::string("cannot load UCX: ") + dlerror();
    ucs.create = reinterpret_cast<void (*)()>(dlsym(h, "ucs_memtype_cache_global_create"));
    ucs.lookup = reinterpret_cast<int (*)(const void*, std::size_t, void*)>(dlsym(h, "ucs_memtype_cache_lookup"));
    ucs.instance = static_cast<void**>(dlsym(h, "ucs_memtype_cache_global_instance"));
    if (!ucs.create || !ucs.lookup || !ucs.instance)
        return lib + " has no ucs_memtype_cache_global_create, _lookup or _global_instance (not UCX master?)";
    ucs.create();
    if (*ucs.instance == nullptr) return "UCS's memtype cache did not start (UCX_MEMTYPE_CACHE=n?)";
    std::string cuda = prefix + "/lib/ucx/libucm_cuda.so.0";
    if (dlopen(cuda.c_str(), RTLD_NOW | RTLD_NOLOAD) == nullptr)
        return "ucm loaded no CUDA module (" + cuda + "): UCX built without CUDA?";
    return "";
}

// Per entry, its allocation's state then its free's: '-' ucm does not hook
// it, 'y' it does and UCS's cache followed, 'x' hooked but a direct call
// reached ucm too (bistro) or the cache did not follow.
std::string probe(const Ucs& ucs, const Fn* da, const Fn* df, Fn* ha, Fn* hf) {
    std::string states;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        ha[k] = read_slot(e.alloc_slot);
        hf[k] = read_slot(e.free_slot);
        e.do_alloc(da[k], 0);
        bool direct_seen = cached(ucs, g_ptr[0]);
        e.do_free(df[k], 0);
        e.do_alloc(ha[k], 0);
        bool in = cached(ucs, g_ptr[0]);
        e.do_free(hf[k], 0);
        bool out = cached(ucs, g_ptr[0]);
        char a = ha[k] == da[k] ? '-' : direct_seen || in != e.registers ? 'x' : 'y';
        char f = hf[k] == df[k] ? '-' : direct_seen || out ? 'x' : 'y';
        if (a == 'x' || f == 'x')
            std::fprintf(stderr,
                         "hooks_bench: ucm: %s + %s: in UCS's cache after a direct call %d, after ucm's %d, "
                         "after the free %d: not timed\n",
                         e.alloc, e.free, direct_seen, in, out);
        states += a;
        states += f;
    }
    return states;
}

// One round of entry k per request ({k, direct first}; k < 0 ends it):
// direct and ucm-hooked batches, answered as two Times.
[[noreturn]] void serve(int fd, const Fn* da, const Fn* df, const Fn* ha, const Fn* hf) {
    std::int32_t req[2];
    while (read_all(fd, req, sizeof req) && req[0] >= 0 && req[0] < kEntryCount) {
        const int k = req[0];
        const Entry& e = kEntries[k];
        std::array<Times, 2> t{};
        if (req[1] != 0) {
            t[0] = batch(e, da[k], df[k]);
            t[1] = batch(e, ha[k], hf[k]);
        } else {
            t[1] = batch(e, ha[k], hf[k]);
            t[0] = batch(e, da[k], df[k]);
        }
        if (!write_all(fd, t.data(), sizeof t)) break;
    }
    _exit(0);
}

[[noreturn]] void worker_main(int fd, const std::string& prefix, const Fn* da, const Fn* df) {
    dup2(2, 1);  // UCX's messages stay off the parent's table
    Ucs ucs;
    std::string why = load_ucs(prefix, ucs);
    std::int32_t ok = why.empty();
    if (!ok) {
        write_all(fd, &ok, sizeof ok);
        send_string(fd, why);
        _exit(0);
    }
    std::vector<Fn> ha(kEntryCount), hf(kEntryCount);
    std::string states = probe(ucs, da, df, ha.data(), hf.data());
    const char* mode = std::getenv("UCX_MEM_CUDA_HOOK_MODE");
    std::string label = "UCX master " + prefix + ", UCX_MEM_CUDA_HOOK_MODE=" + mode;
    if (write_all(fd, &ok, sizeof ok) && send_string(fd, label) && send_string(fd, states))
        serve(fd, da, df, ha.data(), hf.data());
    _exit(1);
}

std::string exit_text(int pid) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return "lost";
    if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st));
    return "exit status " + std::to_string(WEXITSTATUS(st));
}

}  // namespace

std::unique_ptr<UcmWorker> UcmWorker::start(const std::string& prefix, const Fn* direct_a, const Fn* direct_f,
                                            std::string& why) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        why = std::string("socketpair: ") + std::strerror(errno);
        return nullptr;
    }
    std::fflush(nullptr);
    int pid = fork();
    if (pid == 0) {
        close(sv[0]);
        worker_main(sv[1], prefix, direct_a, direct_f);
    }
    close(sv[1]);
    if (pid < 0) {
        why = std::string("fork: ") + std::strerror(errno);
        close(sv[0]);
        return nullptr;
    }
    std::unique_ptr<UcmWorker> w(new UcmWorker(pid, sv[0]));
    std::int32_t ok = 0;
    std::string text;
    if (!read_all(sv[0], &ok, sizeof ok) || !recv_string(sv[0], text) || (ok && !recv_string(sv[0], w->states_))) {
        w->pid_ = -1;
        why = "the worker loading UCX from " + prefix + " died: " + exit_text(pid);
        return nullptr;
    }
    if (!ok) {
        why = text;
        return nullptr;
    }
    w->label_ = text;
    return w;
}

UcmWorker::~UcmWorker() {
    if (pid_ > 0) {
        std::int32_t quit[2] = {-1, 0};
        write_all(fd_, quit, sizeof quit);
        waitpid(pid_, nullptr, 0);
    }
    close(fd_);
}

bool UcmWorker::pair(int k, bool direct_first, Times& direct, Times& hooked) {
    std::int32_t req[2] = {k, direct_first};
    std::array<Times, 2> t{};
    if (pid_ <= 0 || !write_all(fd_, req, sizeof req) || !read_all(fd_, t.data(), sizeof t)) {
        if (pid_ > 0)
            failure_ = "the worker stopped answering at " + std::string(kEntries[k].alloc) + ": " + exit_text(pid_);
        pid_ = -1;
        return false;
    }
    direct = t[0];
    hooked = t[1];
    return true;
}

std::string find_ucx(const std::string& given, std::string& why) {
    if (!given.empty()) return given;
    std::FILE* f = popen("'" UCX_MASTER_SCRIPT "' --cuda --check 2>/dev/null", "r");
    std::array<char, 4096> line{};
    std::string last;
    while (f && std::fgets(line.data(), line.size(), f)) last = line.data();
    int st = f ? pclose(f) : -1;
    while (!last.empty() && last.back() == '\n') last.pop_back();
    if (st != 0 || last.empty()) {
        why = "no cached UCX master CUDA build (scripts/ucx-master.sh --cuda --build), or --ucx PREFIX";
        return "";
    }
    return last + "/unpatched";
}

}  // namespace hooks_bench
