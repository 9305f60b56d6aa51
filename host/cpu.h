// What the loader knows about this CPU, for the search's configuration.
// The one place with machine-specific code outside hooks/arch.h: x86-64 reads
// glibc's own feature state (<sys/platform/x86.h>) and CPUID; other machines
// say so, and the callers report it instead of guessing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ldshim::host {

// The loader's view of the CPU after glibc 2.36's rules, as ld.so settled it
// at startup in this process.
struct CpuView {
    std::uint32_t isa_levels = 1;         // bit 1: x86-64-v2, 2: v3, 3: v4 (bit 0: baseline)
    std::optional<std::string> platform;  // $PLATFORM
    std::uint64_t hwcap = 0;              // dl_hwcap
};

// nullopt where this machine's rules are not known (anything but x86-64 with
// glibc's <sys/platform/x86.h>).
std::optional<CpuView> cpu_view();

// Bytes that change whenever the loader's view of the CPU can: the feature
// words the loader reads and the OS-enabled register state (x86-64: CPUID
// leaves and XCR0; aarch64: AT_HWCAP and AT_HWCAP2).  For cache keys.
std::string cpu_identity();

}  // namespace ldshim::host
