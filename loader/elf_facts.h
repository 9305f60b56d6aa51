// What the search needs to know about one ELF object, decoded once.
//
// Two readers fill the same struct: read_facts() for a file's bytes (every
// access bounds-checked) and, for objects already loaded in a process,
// a reader over the in-memory dynamic section.  Nothing downstream cares
// which one produced the facts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ldshim::loader {

inline constexpr std::uint64_t kDf1Nodeflib = 0x800;  // DF_1_NODEFLIB

struct ObjectFacts {
    std::uint8_t elf_class = 0;  // ELFCLASS32 / ELFCLASS64
    std::uint16_t machine = 0;   // e_machine
    std::uint8_t osabi = 0;
    std::uint16_t type = 0;  // e_type
    bool has_dynamic = false;
    std::vector<std::string> needed;  // DT_NEEDED, in dynamic-section order
    std::optional<std::string> soname;
    // glibc drops DT_RPATH when DT_RUNPATH is present; we keep both raw values
    // and let the search apply that rule, so that `why` can explain it.
    std::optional<std::string> rpath;
    std::optional<std::string> runpath;
    std::optional<std::string> interp;  // PT_INTERP
    std::uint64_t flags_1 = 0;          // DT_FLAGS_1
    bool has_filters = false;           // DT_AUXILIARY / DT_FILTER present (not emulated)

    bool nodeflib() const { return (flags_1 & kDf1Nodeflib) != 0; }
    // The RPATH the loader actually uses: none once RUNPATH exists.
    const std::optional<std::string>& effective_rpath() const {
        static const std::optional<std::string> none;
        return runpath ? none : rpath;
    }
};

struct FactsResult {
    bool ok = false;
    ObjectFacts facts;
    std::string error;  // why the bytes are not a usable ELF object
};

class FileImage;

// Decode the facts of a little-endian ELF file (32- or 64-bit).  Reads the
// header, the program headers, the dynamic section and the string table and
// nothing else, every access bounds-checked against the file: two reads for a
// typical library.  This is the loader's own reading order (musl and glibc do
// the same), and what the search uses.
FactsResult read_facts(const FileImage& image);
FactsResult read_facts(std::span<const std::byte> image);

// The facts of an object already loaded in this process, read from its
// in-memory dynamic section: `base` is its load bias (dlpi_addr / l_addr),
// `phdr`/`phnum` its program headers as dl_iterate_phdr reports them.  Every
// pointer is checked to lie inside one of the object's PT_LOAD segments
// before it is read.  The class, machine and type are those of this process.
FactsResult read_loaded_facts(std::uintptr_t base, const void* phdr, std::size_t phnum);
// The same in two steps, for a caller inside dl_iterate_phdr's callback,
// where nothing may allocate (resolver/loaded_objects.h).
// copy_loaded_facts() copies what the facts need into `out` and returns how
// many bytes that takes: more than out.size() means the copy is incomplete,
// to be made again with that much room.  decode_loaded_facts() reads a
// complete copy, after the walk.
std::size_t copy_loaded_facts(std::uintptr_t base, const void* phdr, std::size_t phnum,
                              std::span<std::byte> out) noexcept;
FactsResult decode_loaded_facts(std::span<const std::byte> copy);

}  // namespace ldshim::loader
