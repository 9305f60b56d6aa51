#include "hooks/object_scan.h"

#include "hooks/marker.h"
#include "host/find_object.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ldshim::hooks {

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

namespace {

// A dynamic section decoded once: every tag below DT_ENCODING into a table
// by number, and those of the GNU versioning range (DT_VERSYM to
// DT_VERNEEDNUM, DT_RELACOUNT among them) into another by offset: one store
// per entry instead of a switch.  0 is "absent".
struct DynamicTags {
    static constexpr std::uint64_t kGnuFirst = DT_VERSYM, kGnuCount = DT_VERNEEDNUM - DT_VERSYM + 1;
    std::uint64_t tag[DT_ENCODING] = {};
    std::uint64_t gnu[kGnuCount] = {};
    std::uint64_t gnu_hash = 0;

    DynamicTags(const ElfW(Dyn) * dyn, std::size_t ndyn) {
        for (const ElfW(Dyn)* d = dyn, *end = dyn + ndyn; d != end && d->d_tag != DT_NULL; ++d) {
            const auto t = static_cast<std::uint64_t>(d->d_tag);
            if (t < DT_ENCODING)
                tag[t] = d->d_un.d_val;
            else if (t - kGnuFirst < kGnuCount)
                gnu[t - kGnuFirst] = d->d_un.d_val;
            else if (t == DT_GNU_HASH)
                gnu_hash = d->d_un.d_val;
        }
    }
    std::uint64_t operator[](std::size_t t) const { return t < DT_ENCODING ? tag[t] : gnu[t - kGnuFirst]; }
};

}  // namespace

ObjectImports::ObjectImports(const dl_phdr_info& info)
    : info_(info), extent_{info.dlpi_phdr, info.dlpi_phnum, info.dlpi_addr} {
    const ElfW(Phdr)* dynamic = read_segments();
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
    const DynamicTags tags(reinterpret_cast<const ElfW(Dyn)*>(dyn_addr), ndyn);
    versym_ = tags[DT_VERSYM];
    verneed_ = tags[DT_VERNEED];
    verneednum_ = tags[DT_VERNEEDNUM];
    gnu_hash_ = tags.gnu_hash;
    if (tags[DT_SYMENT]) syment_ = tags[DT_SYMENT];
    strsz_ = tags[DT_STRSZ];
    if (!tags[DT_SYMTAB] || !tags[DT_STRTAB] || !strsz_) return;  // imports nothing by name
    const std::uint64_t relaent = tags[DT_RELAENT] ? tags[DT_RELAENT] : sizeof(ElfW(Rela));
    if (syment_ < sizeof(ElfW(Sym)) || relaent != sizeof(ElfW(Rela))) {
        error_ = "unexpected symbol or relocation entry size";
        return;
    }
    symtab_ = reinterpret_cast<const ElfW(Sym)*>(pointer(tags[DT_SYMTAB], syment_));
    strtab_ = reinterpret_cast<const char*>(pointer(tags[DT_STRTAB], strsz_));
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
    // has no slots this code could interpret, so it is not read.  The first
    // DT_RELACOUNT entries of DT_RELA are relative relocations: glibc applies
    // them as such without reading their type, so none of them is a slot.
    tables_[0] = table(tags[DT_RELA], tags[DT_RELASZ], tags[DT_RELACOUNT]);
    if ((tags[DT_PLTREL] ? tags[DT_PLTREL] : DT_RELA) == DT_RELA)
        tables_[1] = table(tags[DT_JMPREL], tags[DT_PLTRELSZ], 0);
}

// One pass over the program headers: the PT_LOAD ranges copied (every
// pointer is checked against them), the marker looked for, the dynamic
// segment returned.
const ElfW(Phdr) * ObjectImports::read_segments() {
    const ElfW(Phdr)* dynamic = nullptr;
    const ElfW(Phdr) * notes[2] = {};
    std::size_t nnotes = 0, nloads = 0;  // counted here, not in the members: they would be stored at each step
    const ElfW(Addr) base = info_.dlpi_addr;
    for (const ElfW(Phdr)* ph = info_.dlpi_phdr, *end = ph + info_.dlpi_phnum; ph != end; ++ph) {
        switch (ph->p_type) {
            case PT_LOAD:
                if (nloads < kLoads) loads_[nloads] = {base + ph->p_vaddr, base + ph->p_vaddr + ph->p_memsz};
                ++nloads;
                break;
            case PT_DYNAMIC: dynamic = ph; break;
            case PT_NOTE:
                if (nnotes < std::size(notes)) notes[nnotes++] = ph;
                break;
            default: break;
        }
    }
    nloads_ = nloads;
    // ldshim's own objects carry the marker note (more PT_NOTE segments than
    // two: the extent's walk looks at them all).
    if (nnotes == std::size(notes)) {
        marker_ = extent_.note(kMarkerNoteType, {kMarkerNoteName, sizeof kMarkerNoteName}).has_value();
        return dynamic;
    }
    for (std::size_t i = 0; i < nnotes && !marker_; ++i) {
        std::uintptr_t seg = info_.dlpi_addr + notes[i]->p_vaddr;
        marker_ = contains(seg, notes[i]->p_memsz) &&
                  loader::LoadedExtent::note_in(seg, notes[i]->p_memsz, kMarkerNoteType,
                                                {kMarkerNoteName, sizeof kMarkerNoteName});
    }
    return dynamic;
}

// The relocation table at d_ptr `addr` of `size` bytes, past its first
// `skip` entries; empty where it lies outside the object.
[[gnu::always_inline]] inline ObjectImports::Table ObjectImports::table(std::uint64_t addr, std::uint64_t size,
                                                                        std::uint64_t skip) const {
    Table t;
    if (!addr || !size) return t;
    t.rela = reinterpret_cast<const ElfW(Rela)*>(pointer(addr, size));
    if (!t.rela) return t;
    t.count = size / sizeof(ElfW(Rela));
    const std::size_t skipped = std::min<std::uint64_t>(skip, t.count);
    t.rela += skipped;
    t.count -= skipped;
    return t;
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

bool ObjectImports::in_chain(const Name& n, const GnuHashTable& t) const {
    auto readable = [this](const void* p, std::size_t len) {
        return contains(reinterpret_cast<std::uintptr_t>(p), len);
    };
    auto test = [&](std::uint32_t i) {
        const auto sp = reinterpret_cast<std::uintptr_t>(symtab_) + std::uintptr_t{i} * syment_;
        if (!symtab_ || !contains(sp, sizeof(ElfW(Sym)))) return loader::ChainResult::unreadable;
        const auto& sym = *reinterpret_cast<const ElfW(Sym)*>(sp);
        std::size_t k = sym.st_name;
        const char* b = n.name;
        while (k < strsz_ && *b && strtab_[k] == *b) ++k, ++b;
        if (k >= strsz_) return loader::ChainResult::unreadable;
        return *b == '\0' && strtab_[k] == '\0' && sym.st_shndx != SHN_UNDEF ? loader::ChainResult::found
                                                                             : loader::ChainResult::absent;
    };
    // A table that cannot be read to the end says "maybe".
    return loader::search_gnu_chain(t.buckets, t.nbuckets, t.symoffset, n.hash, readable, test) !=
           loader::ChainResult::absent;
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

bool ObjectImports::complete(const ElfW(Rela) & r, const char* name, Import& out) const {
    std::uintptr_t slot = info_.dlpi_addr + r.r_offset;
    if (!contains(slot, sizeof(void*)) || slot % alignof(void*) != 0) return false;
    out.slot = slot;
    out.kind = machine::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info)));
    out.name = name;
    out.version = version_name(static_cast<std::uint32_t>(ELF64_R_SYM(r.r_info)));
    out.addend = r.r_addend;
    return true;
}

bool ObjectImports::decode(const ElfW(Rela) & r, Import& out) const {
    machine::SlotKind kind = machine::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info)));
    auto sym = static_cast<std::uint32_t>(ELF64_R_SYM(r.r_info));
    if (kind == machine::SlotKind::none || sym == 0) return false;
    auto sp = reinterpret_cast<std::uintptr_t>(symtab_) + std::uintptr_t{sym} * syment_;
    if (!contains(sp, sizeof(ElfW(Sym)))) return false;
    const auto& s = *reinterpret_cast<const ElfW(Sym)*>(sp);
    if (s.st_name >= strsz_ || !std::memchr(strtab_ + s.st_name, 0, strsz_ - s.st_name)) return false;
    return complete(r, strtab_ + s.st_name, out);
}

}  // namespace ldshim::hooks
