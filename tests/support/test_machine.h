// The machine the tests run on, in the loader's own names: what a test
// builds, places or expects that differs between x86-64 and aarch64.  One
// table, so that no test spells a machine's names itself.  Under qemu-user
// (a cross build's tests) these are the emulated machine's.
#pragma once

#include <elf.h>
#include <stdlib.h>

#include <array>
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
    // glibc-hwcaps subdirectories (2.33 and later), lowest level first;
    // glibc names none for aarch64.
    std::array<std::string_view, 3> hwcaps;
    std::string_view clang_rt_arch;  // compiler-rt's runtime suffix: libclang_rt.asan-<arch>.so
};

#if defined(__x86_64__)
inline constexpr Names kThis{"/lib64/ld-linux-x86-64.so.2",
                             "x86_64-linux-gnu",
                             "x86_64",
                             EM_X86_64,
                             EM_AARCH64,
                             {"x86-64-v2", "x86-64-v3", "x86-64-v4"},
                             "x86_64"};
#elif defined(__aarch64__)
inline constexpr Names kThis{
    "/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu", "aarch64", EM_AARCH64, EM_X86_64, {}, "aarch64"};
#else
#error "the tests know x86-64 and aarch64"
#endif

inline bool has_hwcaps_names() { return !kThis.hwcaps[0].empty(); }
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
