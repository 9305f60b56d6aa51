// The machine the tests run on, in the loader's own names: what a test
// builds, places or expects that differs between x86-64 and aarch64.  One
// table, so that no test spells a machine's names itself.  Under qemu-user
// (a cross build's tests) these are the emulated machine's.
#pragma once

// By its path from here: the black-box suites that include this file have
// no include path into the sources.
#include "../../machine/machine.h"

#include <elf.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <string_view>

namespace ldshim::testmachine {

struct Names {
    std::string_view loader;    // PT_INTERP of the machine's programs
    std::string_view triplet;   // Debian's multiarch directory: $LIB is lib/<triplet>
    std::string_view platform;  // the default $PLATFORM (x86-64 may say haswell or xeon_phi)
    unsigned machine;           // e_machine
    unsigned foreign_machine;   // a 64-bit machine the loader skips silently
    // Whether glibc names glibc-hwcaps subdirectories (2.33 and later) on
    // this machine: x86-64's ISA levels (loader::kIsaLevels); none for aarch64.
    bool hwcaps_names;
    std::string_view clang_rt_arch;  // compiler-rt's runtime suffix: libclang_rt.asan-<arch>.so
};

#if defined(__x86_64__)
inline constexpr Names kThis{machine::loader_path(machine::kOwn),
                             "x86_64-linux-gnu",
                             "x86_64",
                             machine::kOwn,
                             machine::kAarch64,
                             true,
                             "x86_64"};
#elif defined(__aarch64__)
inline constexpr Names kThis{machine::loader_path(machine::kOwn),
                             "aarch64-linux-gnu",
                             "aarch64",
                             machine::kOwn,
                             machine::kX86_64,
                             false,
                             "aarch64"};
#else
#error "the tests know x86-64 and aarch64"
#endif

inline bool has_hwcaps_names() { return kThis.hwcaps_names; }
// "lib/x86_64-linux-gnu": $LIB as Debian's loader expands it.
inline std::string lib_dir() { return "lib/" + std::string(kThis.triplet); }
inline std::string loader() { return std::string(kThis.loader); }

// The emulator the tests run under (a cross build's, from meson's test
// setup: "qemu-user"), or null on the machine itself.
inline const char* emulator() { return ::getenv("LDSHIM_TEST_EMULATOR"); }

// Whether the ELF file at `path` is for this machine.
inline bool for_this_machine(const std::string& path) {
    Elf64_Ehdr eh{};
    std::ifstream f(path, std::ios::binary);
    return f.read(reinterpret_cast<char*>(&eh), sizeof eh) && eh.e_machine == kThis.machine;
}

// This machine's ldconfig, which writes the cache flags its loader accepts:
// /sbin/ldconfig when it is a program for this machine, else
// $LDSHIM_TEST_LDCONFIG (a cross build's tests under qemu-user are given an
// arm64 root's static one); empty when there is neither.
inline std::string ldconfig() {
    if (for_this_machine("/sbin/ldconfig")) return "/sbin/ldconfig";
    const char* given = ::getenv("LDSHIM_TEST_LDCONFIG");
    return given && for_this_machine(given) ? given : "";
}

}  // namespace ldshim::testmachine
