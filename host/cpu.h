// What identifies this CPU to the loader, for the keys of cached loader
// answers: x86-64 reads glibc's own feature words (<sys/platform/x86.h>) or
// CPUID.
#pragma once

#include <string>

namespace ldshim::host {

// Bytes that change whenever the loader's view of the CPU can: the feature
// words the loader reads and the OS-enabled register state (x86-64: CPUID
// leaves and XCR0; aarch64: AT_HWCAP and AT_HWCAP2).  For cache keys.
std::string cpu_identity();

}  // namespace ldshim::host
