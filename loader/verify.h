// glibc's open_verify(): is an opened candidate acceptable, silently
// skipped, or fatal for the whole request?
#pragma once

#include "loader/fs.h"
#include "machine/machine.h"

#include <cstdint>
#include <string>

namespace ldshim::loader {

enum class Verdict : std::uint8_t {
    accept,
    skip_class,     // other ELF class: skipped, remembered for "wrong ELF class"
    skip_machine,   // other e_machine: skipped silently
    skip_not_suid,  // secure-mode preload without the set-user-ID bit
    fatal,          // the request ends with `message`
};

struct VerifyResult {
    Verdict verdict = Verdict::accept;
    std::string message;  // glibc's errstring, for fatal
    int error = 0;        // errno that goes with it (0: none)
};

struct HostAbi {
    std::uint8_t elf_class = 2;  // ELFCLASS64
    std::uint8_t data = 1;       // ELFDATA2LSB
    std::uint16_t machine = machine::kX86_64;
    // LIBC_ABI_MAX of glibc 2.36 on x86-64; taken as the same on aarch64
    // (not measured: only a GNU-ABI object with EI_ABIVERSION >= 4 tells).
    std::uint8_t libc_abi_max = 4;
};

VerifyResult verify_candidate(const FileImage& image, const HostAbi& host = {});

}  // namespace ldshim::loader
