#include "hooks/object_scan.h"

#include "hooks/marker.h"
#include "host/find_object.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ldshim::hooks {

namespace arch {
const char* slot_kind_name(SlotKind k) {
    switch (k) {
        case SlotKind::jump_slot: return "JUMP_SLOT";
        case SlotKind::glob_dat: return "GLOB_DAT";
        case SlotKind::abs64: return "ABS64";
        case SlotKind::none: break;
    }
    return "none";
}
}  // namespace arch

bool relocated(const dl_phdr_info& info) {
    for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
        if (info.dlpi_phdr[i].p_type != PT_LOAD) continue;
        auto* addr = reinterpret_cast<void*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
        // Objects never overlap, so the one registered at this address is the
        // one being looked at.  (Only the copied range is read: the link_map
        // itself is the loader's to publish.)
        return host::loader_lists_by_address(addr);
    }
    return false;
}

ObjectImports::ObjectImports(const dl_phdr_info& info)
    : info_(info), extent_{info.dlpi_phdr, info.dlpi_phnum, info.dlpi_addr} {
    // One pass over the program headers: everything below checks pointers
    // against the copied PT_LOAD ranges instead of walking them again.
    const ElfW(Phdr)* dynamic = nullptr;
    const ElfW(Phdr) * notes[2] = {};
    std::size_t nnotes = 0;
    for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info.dlpi_phdr[i];
        if (ph.p_type == PT_DYNAMIC) dynamic = &ph;
        if (ph.p_type == PT_NOTE && nnotes < std::size(notes)) notes[nnotes++] = &ph;
        if (ph.p_type != PT_LOAD) continue;
        if (nloads_ < kLoads) loads_[nloads_] = {info.dlpi_addr + ph.p_vaddr, info.dlpi_addr + ph.p_vaddr + ph.p_memsz};
        ++nloads_;
    }
    // ldshim's own objects carry the marker note (more PT_NOTE segments than
    // two: the extent's walk looks at them all).
    if (nnotes == std::size(notes)) {
        marker_ = extent_.note(kMarkerNoteType, {kMarkerNoteName, sizeof kMarkerNoteName}).has_value();
    } else {
        for (std::size_t i = 0; i < nnotes && !marker_; ++i) {
            std::uintptr_t seg = info.dlpi_addr + notes[i]->p_vaddr;
            marker_ = contains(seg, notes[i]->p_memsz) &&
                      loader::LoadedExtent::note_in(seg, notes[i]->p_memsz, kMarkerNoteType,
                                                    {kMarkerNoteName, sizeof kMarkerNoteName});
        }
    }
    if (!dynamic) {
        error_ = "no dynamic section";
        return;
    }
    std::uintptr_t dyn_addr = info.dlpi_addr + dynamic->p_vaddr;
    std::size_t ndyn = dynamic->p_memsz / sizeof(ElfW(Dyn));
    if (!contains(dyn_addr, ndyn * sizeof(ElfW(Dyn)))) {
        error_ = "dynamic section lies outside the object's segments";
        return;
    }
    // Decode once: every tag below DT_ENCODING into a table by number (one
    // store per entry, where a switch cost a dozen instructions), the rest
    // the scan reads by name.  0 is "absent" for each of them.
    std::uint64_t tag[DT_ENCODING] = {};
    std::uint64_t relacount = 0;
    const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(dyn_addr);
    for (std::size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; ++i) {
        const auto t = static_cast<std::uint64_t>(dyn[i].d_tag);
        const std::uint64_t v = dyn[i].d_un.d_val;
        if (t < DT_ENCODING)
            tag[t] = v;
        else if (t == DT_VERSYM)
            versym_ = v;
        else if (t == DT_VERNEED)
            verneed_ = v;
        else if (t == DT_VERNEEDNUM)
            verneednum_ = v;
        else if (t == DT_RELACOUNT)
            relacount = v;
    }
    const std::uint64_t symtab = tag[DT_SYMTAB], strtab = tag[DT_STRTAB], rela = tag[DT_RELA], relasz = tag[DT_RELASZ],
                        jmprel = tag[DT_JMPREL], pltrelsz = tag[DT_PLTRELSZ];
    const std::uint64_t relaent = tag[DT_RELAENT] ? tag[DT_RELAENT] : sizeof(ElfW(Rela));
    const std::uint64_t pltrel = tag[DT_PLTREL] ? tag[DT_PLTREL] : DT_RELA;
    if (tag[DT_SYMENT]) syment_ = tag[DT_SYMENT];
    strsz_ = tag[DT_STRSZ];
    if (!symtab || !strtab || !strsz_) return;  // imports nothing by name
    if (syment_ < sizeof(ElfW(Sym)) || relaent != sizeof(ElfW(Rela))) {
        error_ = "unexpected symbol or relocation entry size";
        return;
    }
    symtab_ = reinterpret_cast<const ElfW(Sym)*>(pointer(symtab, syment_));
    strtab_ = reinterpret_cast<const char*>(pointer(strtab, strsz_));
    if (!symtab_ || !strtab_) {
        error_ = "symbol or string table lies outside the object's segments";
        return;
    }
    names_ = {reinterpret_cast<const char*>(symtab_),
              syment_,
              room_after(reinterpret_cast<std::uintptr_t>(symtab_)) / syment_,
              strtab_,
              strsz_,
              strtab_[strsz_ - 1] == '\0'};
    // x86-64 and aarch64 use RELA only; a REL table (DT_PLTREL == DT_REL)
    // has no slots this code could interpret, so it is not read.
    if (rela && relasz) {
        tables_[0].rela = reinterpret_cast<const ElfW(Rela)*>(pointer(rela, relasz));
        tables_[0].count = tables_[0].rela ? relasz / sizeof(ElfW(Rela)) : 0;
        // The first DT_RELACOUNT entries are relative relocations: glibc
        // applies them as such without reading their type, so none of them
        // is a symbol's slot.
        const std::size_t relative = std::min<std::uint64_t>(relacount, tables_[0].count);
        tables_[0].rela += relative;
        tables_[0].count -= relative;
    }
    if (jmprel && pltrelsz && pltrel == DT_RELA) {
        tables_[1].rela = reinterpret_cast<const ElfW(Rela)*>(pointer(jmprel, pltrelsz));
        tables_[1].count = tables_[1].rela ? pltrelsz / sizeof(ElfW(Rela)) : 0;
    }
}

bool ObjectImports::plainly_writable(std::uintptr_t addr) const {
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    bool writable = false;
    for (std::size_t i = 0; i < info_.dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info_.dlpi_phdr[i];
        std::uintptr_t lo = info_.dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (ph.p_type == PT_GNU_RELRO) {
            // _dl_protect_relro rounds both ends down to a page.
            if (addr >= (lo & ~(page - 1)) && addr < (hi & ~(page - 1))) return false;
        } else if (ph.p_type == PT_LOAD && addr >= lo && addr < hi) {
            writable = (ph.p_flags & PF_W) != 0;
        }
    }
    return writable;
}

const char* ObjectImports::version_name(std::uint32_t sym) const {
    auto versym = reinterpret_cast<const ElfW(Half)*>(versym_ ? pointer(versym_, sizeof(ElfW(Half))) : 0);
    auto verneed = verneed_ && verneednum_ ? pointer(verneed_, sizeof(ElfW(Verneed))) : 0;
    if (!versym) return nullptr;
    auto vs = reinterpret_cast<std::uintptr_t>(versym + sym);
    if (!contains(vs, sizeof(ElfW(Half)))) return nullptr;
    unsigned index = versym[sym] & 0x7fff;
    if (index < 2 || !verneed) return nullptr;  // local or global: no version named
    auto p = verneed;
    for (std::size_t n = 0; n < verneednum_ && contains(p, sizeof(ElfW(Verneed))); ++n) {
        const auto* vn = reinterpret_cast<const ElfW(Verneed)*>(p);
        auto a = p + vn->vn_aux;
        for (unsigned k = 0; k < vn->vn_cnt && contains(a, sizeof(ElfW(Vernaux))); ++k) {
            const auto* aux = reinterpret_cast<const ElfW(Vernaux)*>(a);
            if (aux->vna_other == index)
                return aux->vna_name < strsz_ && std::memchr(strtab_ + aux->vna_name, 0, strsz_ - aux->vna_name)
                           ? strtab_ + aux->vna_name
                           : nullptr;
            if (!aux->vna_next) break;
            a += aux->vna_next;
        }
        if (!vn->vn_next) break;
        p += vn->vn_next;
    }
    return nullptr;
}

std::size_t ObjectImports::room_after(std::uintptr_t addr) const {
    if (nloads_ <= kLoads) {
        for (std::size_t i = 0; i < nloads_; ++i)
            if (addr >= loads_[i].lo && addr < loads_[i].hi) return loads_[i].hi - addr;
        return 0;
    }
    for (std::size_t i = 0; i < info_.dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info_.dlpi_phdr[i];
        std::uintptr_t lo = info_.dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (ph.p_type == PT_LOAD && addr >= lo && addr < hi) return hi - addr;
    }
    return 0;
}

bool ObjectImports::complete(const ElfW(Rela) & r, const char* name, Import& out) const {
    std::uintptr_t slot = info_.dlpi_addr + r.r_offset;
    if (!contains(slot, sizeof(void*)) || slot % alignof(void*) != 0) return false;
    out.slot = slot;
    out.kind = arch::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info)));
    out.name = name;
    out.version = version_name(static_cast<std::uint32_t>(ELF64_R_SYM(r.r_info)));
    out.addend = r.r_addend;
    return true;
}

bool ObjectImports::decode(const ElfW(Rela) & r, Import& out) const {
    arch::SlotKind kind = arch::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info)));
    auto sym = static_cast<std::uint32_t>(ELF64_R_SYM(r.r_info));
    if (kind == arch::SlotKind::none || sym == 0) return false;
    auto sp = reinterpret_cast<std::uintptr_t>(symtab_) + std::uintptr_t{sym} * syment_;
    if (!contains(sp, sizeof(ElfW(Sym)))) return false;
    const auto& s = *reinterpret_cast<const ElfW(Sym)*>(sp);
    if (s.st_name >= strsz_ || !std::memchr(strtab_ + s.st_name, 0, strsz_ - s.st_name)) return false;
    return complete(r, strtab_ + s.st_name, out);
}

}  // namespace ldshim::hooks
