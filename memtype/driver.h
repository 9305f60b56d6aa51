// The optional CUDA-driver fallback for pointers the registry never saw:
// libcuda.so.1 is opened lazily (never at start-up, never where it is
// absent), one cuPointerGetAttributes call classifies the pointer, and for
// driver-owned memory cuMemGetAddressRange gives the whole allocation, which
// is then registered so that the next lookup is a registry hit.
#pragma once

#include "memtype/registry.h"

namespace ldshim::memtype {

enum class Rule : std::uint8_t {
    registry,      // the registry knew the range
    driver,        // the CUDA driver classified it (and it is now registered)
    default_host,  // unknown to both (or no driver): pageable host memory
};

// Registry lookup, then the driver, then "host".  Not wait-free on the slow
// path (the first call loads libcuda; each miss asks the driver).
Info classify(Registry& r, std::uintptr_t p, std::size_t length, Rule* rule, bool* spans);

// Whether a CUDA driver was found (loads it on first use).
bool driver_available();

}  // namespace ldshim::memtype
