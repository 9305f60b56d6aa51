// The facts of an ELF file through libelf (elfutils), for any class and
// byte order.  Slower than loader/elf_facts.cc's reader (it builds section
// tables and makes four reads per file); the reference that reader is
// tested against, built into the tests only.
#pragma once

#include "loader/elf_facts.h"

#include <cstddef>
#include <span>

namespace ldshim::loader {

FactsResult read_facts_libelf(std::span<const std::byte> image);

}  // namespace ldshim::loader
