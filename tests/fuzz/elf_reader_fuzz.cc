// libFuzzer target: the fast ELF reader on arbitrary file bytes, both from
// the start of the file (what the loader's first read returns) and through
// the pread path of a FileImage.
#include "loader/elf_facts.h"
#include "loader/fs.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ldshim::loader;
    auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size);
    FactsResult r = read_facts(bytes);
    if (r.ok) {
        // Touch what the engine reads, so a bad string would show.
        std::size_t n = r.facts.needed.size();
        for (const auto& s : r.facts.needed) n += s.size();
        if (r.facts.soname) n += r.facts.soname->size();
        if (r.facts.rpath) n += r.facts.rpath->size();
        if (r.facts.runpath) n += r.facts.runpath->size();
        if (n == static_cast<std::size_t>(-1)) return 1;
    }
    MemoryImage img(std::string(reinterpret_cast<const char*>(data), size), FileId{}, 0100644);
    (void)read_facts(img);
    return 0;
}
