#include "loader/verify.h"

#include <elf.h>

#include <cerrno>
#include <cstring>

namespace ldshim::loader {
namespace {

VerifyResult fatal(const char* msg, int err = 0) { return {Verdict::fatal, msg, err}; }

template <typename T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

VerifyResult verify_candidate(const FileImage& image, const HostAbi& host) {
    auto bytes = image.head();
    // The read loop stops at the first short read; a directory fails with EISDIR.
    if (bytes.size() < sizeof(Elf64_Ehdr)) {
        int err = image.read_errno();
        return fatal(err == 0 ? "file too short" : "cannot read file data", err);
    }
    const auto* id = reinterpret_cast<const unsigned char*>(bytes.data());
    bool ident_ok = std::memcmp(id, ELFMAG, SELFMAG) == 0 && id[EI_CLASS] == host.elf_class &&
                    id[EI_DATA] == host.data && id[EI_VERSION] == EV_CURRENT &&
                    (id[EI_OSABI] == ELFOSABI_SYSV || id[EI_OSABI] == ELFOSABI_GNU);
    bool abiver_ok = id[EI_ABIVERSION] == 0 || (id[EI_OSABI] == ELFOSABI_GNU && id[EI_ABIVERSION] < host.libc_abi_max);
    bool pad_ok = true;
    for (int i = EI_PAD; i < EI_NIDENT; ++i) pad_ok = pad_ok && id[i] == 0;
    if (!ident_ok || !abiver_ok || !pad_ok) {
        // Same order of diagnosis as the loader.
        if (std::memcmp(id, ELFMAG, SELFMAG) != 0) return fatal("invalid ELF header");
        if (id[EI_CLASS] != host.elf_class) return {Verdict::skip_class, {}, ENOENT};
        if (id[EI_DATA] != host.data)
            return fatal(host.data == ELFDATA2LSB ? "ELF file data encoding not little-endian"
                                                  : "ELF file data encoding not big-endian");
        if (id[EI_VERSION] != EV_CURRENT) return fatal("ELF file version ident does not match current one");
        if (id[EI_OSABI] != ELFOSABI_SYSV && id[EI_OSABI] != ELFOSABI_GNU) return fatal("ELF file OS ABI invalid");
        if (!abiver_ok) return fatal("ELF file ABI version invalid");
        if (!pad_ok) return fatal("nonzero padding in e_ident");
        return fatal("internal error");
    }
    // From here the header is a native 64-bit one.
    auto eh = load<Elf64_Ehdr>(bytes.data());
    if (eh.e_version != EV_CURRENT) return fatal("ELF file version does not match current one");
    if (eh.e_machine != host.machine) return {Verdict::skip_machine, {}, ENOENT};
    if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC) return fatal("only ET_DYN and ET_EXEC can be loaded");
    if (eh.e_phentsize != sizeof(Elf64_Phdr)) return fatal("ELF file's phentsize not the expected size");
    std::uint64_t maplen = std::uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
    // In the first buffer, or pread() of exactly maplen bytes.
    bool in_buf = eh.e_phoff + maplen <= bytes.size();
    if (!in_buf && (eh.e_phoff > image.size() || maplen > image.size() - eh.e_phoff))
        return fatal("cannot read file data");
    return {};
}

}  // namespace ldshim::loader
