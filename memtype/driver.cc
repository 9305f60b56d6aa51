#include "memtype/driver.h"

#include <dlfcn.h>

#include <cstdint>

namespace ldshim::memtype {
namespace {

// The few driver-API values used (stable ABI, cuda.h): no CUDA headers are
// needed to build ldshim.
constexpr int kCudaSuccess = 0;
constexpr unsigned kAttrMemoryType = 2, kAttrIsManaged = 8, kAttrDeviceOrdinal = 9;
constexpr unsigned kMemHost = 1, kMemDevice = 2, kMemUnified = 4;

using GetAttributes = int (*)(unsigned, unsigned*, void**, unsigned long long);
using GetAddressRange = int (*)(unsigned long long*, std::size_t*, unsigned long long);

struct Driver {
    GetAttributes attributes = nullptr;
    GetAddressRange range = nullptr;
};

const Driver& driver() {
    // A function-local static, not std::call_once: that one keeps its callable
    // in a thread-local reached through ld.so's __tls_get_addr, an import that
    // makes libldshim.so need ld-linux-x86-64.so.2 (lib/eh_globals.cc).
    static const Driver d = [] {
        Driver found;
        // RTLD_NOLOAD first: a process that uses CUDA has the driver loaded
        // already; one that does not should not start loading it here.
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (!h) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) return found;
        found.attributes = reinterpret_cast<GetAttributes>(dlsym(h, "cuPointerGetAttributes"));
        found.range = reinterpret_cast<GetAddressRange>(dlsym(h, "cuMemGetAddressRange_v2"));
        return found.attributes && found.range ? found : Driver{};
    }();
    return d;
}

}  // namespace

bool driver_available() { return driver().attributes != nullptr; }

Info classify(Registry& r, std::uintptr_t p, std::size_t length, Rule* rule, bool* spans) {
    Info i = r.lookup(p, length, spans);
    if (i.type != Type::unregistered) {
        if (rule) *rule = Rule::registry;
        return i;
    }
    const Driver& d = driver();
    if (d.attributes) {
        unsigned mem_type = 0, is_managed = 0;
        int ordinal = -1;
        unsigned attrs[] = {kAttrMemoryType, kAttrIsManaged, kAttrDeviceOrdinal};
        void* data[] = {&mem_type, &is_managed, &ordinal};
        // Not initialised, or not a driver allocation: an error, hence host.
        if (d.attributes(3, attrs, data, p) == kCudaSuccess && mem_type != 0) {
            Type t = is_managed || mem_type == kMemUnified ? Type::cuda_managed
                     : mem_type == kMemDevice              ? Type::cuda
                     : mem_type == kMemHost                ? Type::host_pinned
                                                           : Type::unregistered;
            unsigned long long base = 0;
            std::size_t size = 0;
            if (t != Type::unregistered && d.range(&base, &size, p) == kCudaSuccess && size) {
                r.insert(static_cast<std::uintptr_t>(base), size, t, ordinal);
                if (rule) *rule = Rule::driver;
                return r.lookup(p, length, spans);
            }
        }
    }
    if (rule) *rule = Rule::default_host;
    i.type = Type::host;
    return i;
}

}  // namespace ldshim::memtype
