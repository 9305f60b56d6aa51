// Synthesises small ELF64 images in memory (one PT_LOAD, a dynamic section and
// its string table), for unit tests that must not depend on the toolchain and
// for hostile-input tests that need precise corruption.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ldshim::testing {

struct ElfSpec {
    std::uint16_t type = 3;      // ET_DYN
    std::uint16_t machine = 62;  // EM_X86_64
    std::uint8_t elf_class = 2;  // ELFCLASS64
    std::optional<std::string> soname;
    std::vector<std::string> needed;
    std::optional<std::string> rpath, runpath, interp;
    std::uint64_t flags_1 = 0;
    bool dynamic = true;
};

std::vector<std::byte> build_elf(const ElfSpec& spec);
std::string as_string(const std::vector<std::byte>& b);

}  // namespace ldshim::testing
