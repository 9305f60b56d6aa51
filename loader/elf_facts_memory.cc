// The facts of a loaded object, read from its in-memory dynamic section in
// two steps: a copy that allocates nothing (it may run inside
// dl_iterate_phdr's callback, under the loader's lock), then a decoding of
// the copy through DynamicEntries, the rules the file readers use too.
//
// The copy is a stream of records {tag, value, length} + length bytes:
// dynamic tags for the entries the facts use (a string entry carries its
// string, or kBadString for an offset out of range), and a few tags of our
// own below.
#include "loader/elf_dynamic.h"
#include "loader/elf_facts.h"
#include "loader/loaded_extent.h"
#include "machine/machine.h"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace ldshim::loader {
namespace {

// Tags of our own, outside the ranges ELF assigns.
constexpr std::int64_t kError = -1;        // value: a static const char* (same process)
constexpr std::int64_t kInterp = -2;       // bytes: PT_INTERP's string
constexpr std::int64_t kHasDynamic = -3;   // the object has a dynamic section
constexpr std::int64_t kStringTable = -4;  // DT_STRTAB and DT_STRSZ are present
constexpr std::uint64_t kBadString = ~std::uint64_t{0};

struct Record {
    std::int64_t tag;
    std::uint64_t value;
    std::uint64_t length;
};

// Counts every byte, writes those that fit.
class CopyOut {
public:
    explicit CopyOut(std::span<std::byte> out) : out_(out) {}
    void record(std::int64_t tag, std::uint64_t value, const char* bytes = nullptr, std::size_t n = 0) {
        Record r{tag, value, n};
        put(&r, sizeof r);
        put(bytes, n);
    }
    void error(const char* text) { record(kError, reinterpret_cast<std::uintptr_t>(text)); }
    std::size_t size() const { return need_; }

private:
    void put(const void* p, std::size_t n) {
        if (n && need_ + n <= out_.size()) std::memcpy(out_.data() + need_, p, n);
        need_ += n;
    }
    std::span<std::byte> out_;
    std::size_t need_ = 0;
};

bool names_string(std::int64_t tag) {
    return tag == DT_NEEDED || tag == DT_SONAME || tag == DT_RPATH || tag == DT_RUNPATH;
}

// The dynamic entries the facts use, with their strings.
void copy_dynamic(const ElfW(Dyn) * dyn, std::size_t ndyn, const LoadedExtent& ext, CopyOut& out) {
    std::uint64_t strtab = 0, strsz = 0;
    bool strings = false, has_strtab = false, has_strsz = false;
    for (std::size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; ++i) {
        if (dyn[i].d_tag == DT_STRTAB) {
            has_strtab = true;
            strtab = dyn[i].d_un.d_val;
        } else if (dyn[i].d_tag == DT_STRSZ) {
            has_strsz = true;
            strsz = dyn[i].d_un.d_val;
        }
        strings = strings || names_string(dyn[i].d_tag);
    }
    const char* table = nullptr;
    if (strings && has_strtab && has_strsz) {
        table = reinterpret_cast<const char*>(ext.pointer(strtab, strsz));
        if (!table) return out.error("string table lies outside the object's segments");
        out.record(kStringTable, 0);
    }
    for (std::size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; ++i) {
        std::int64_t tag = dyn[i].d_tag;
        std::uint64_t off = dyn[i].d_un.d_val;
        if (!names_string(tag)) {
            if (tag == DT_FLAGS_1 || tag == DT_FILTER || tag == DT_AUXILIARY) out.record(tag, off);
            continue;
        }
        const void* nul = table && off < strsz ? std::memchr(table + off, '\0', strsz - off) : nullptr;
        if (nul)
            out.record(tag, 0, table + off, static_cast<std::size_t>(static_cast<const char*>(nul) - (table + off)));
        else
            out.record(tag, kBadString);
    }
}

}  // namespace

std::size_t copy_loaded_facts(std::uintptr_t base, const void* phdr_v, std::size_t phnum,
                              std::span<std::byte> out_bytes) noexcept {
    CopyOut out(out_bytes);
    const auto* ph = static_cast<const ElfW(Phdr)*>(phdr_v);
    if (!ph || phnum == 0) {
        out.error("no program headers");
        return out.size();
    }
    LoadedExtent ext{ph, phnum, base};
    const ElfW(Phdr)* dynamic = nullptr;
    bool interp = false;
    for (std::size_t i = 0; i < phnum; ++i) {
        if (ph[i].p_type == PT_DYNAMIC && !dynamic) dynamic = &ph[i];
        if (ph[i].p_type == PT_INTERP && !interp) {
            std::uintptr_t a = base + ph[i].p_vaddr;
            if (ph[i].p_memsz && ext.contains(a, ph[i].p_memsz)) {
                interp = true;
                out.record(kInterp, 0, reinterpret_cast<const char*>(a),
                           strnlen(reinterpret_cast<const char*>(a), ph[i].p_memsz));
            }
        }
    }
    if (!dynamic) return out.size();
    out.record(kHasDynamic, 0);
    std::uintptr_t dyn_addr = base + dynamic->p_vaddr;
    std::size_t ndyn = dynamic->p_memsz / sizeof(ElfW(Dyn));
    if (!ext.contains(dyn_addr, ndyn * sizeof(ElfW(Dyn))))
        out.error("dynamic section lies outside the object's segments");
    else
        copy_dynamic(reinterpret_cast<const ElfW(Dyn)*>(dyn_addr), ndyn, ext, out);
    return out.size();
}

FactsResult decode_loaded_facts(std::span<const std::byte> copy) {
    FactsResult r;
    auto& f = r.facts;
    f.elf_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
    f.machine = machine::kOwn;
    f.type = ET_DYN;
    DynamicEntries de;
    std::string strings;  // the copied strings, as a string table of their own
    bool has_table = false;
    for (std::size_t at = 0; at + sizeof(Record) <= copy.size();) {
        Record rec;
        std::memcpy(&rec, copy.data() + at, sizeof rec);
        at += sizeof rec;
        if (rec.length > copy.size() - at) {
            r.error = "truncated copy of the object's facts";
            return r;
        }
        const auto* bytes = reinterpret_cast<const char*>(copy.data() + at);
        at += rec.length;
        switch (rec.tag) {
            case kError: r.error = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(rec.value)); return r;
            case kInterp: f.interp = std::string(bytes, rec.length); break;
            case kHasDynamic: f.has_dynamic = true; break;
            case kStringTable: has_table = true; break;
            default:
                if (names_string(rec.tag) && rec.value != kBadString) {
                    de.add(rec.tag, strings.size());
                    strings.append(bytes, rec.length).push_back('\0');
                } else {
                    de.add(rec.tag, rec.value);
                }
        }
    }
    if (has_table) {
        de.add(DT_STRTAB, 0);
        de.add(DT_STRSZ, strings.size());
    }
    if (!de.strings_to_read(r)) return r;
    auto get = [&](std::uint64_t off) -> std::optional<std::string> {
        if (off >= strings.size()) return std::nullopt;
        return std::string(strings.c_str() + off);
    };
    if (!de.resolve(f, r.error, get)) return r;
    r.ok = true;
    return r;
}

FactsResult read_loaded_facts(std::uintptr_t base, const void* phdr, std::size_t phnum) {
    std::vector<std::byte> copy(4096);
    std::size_t n = copy_loaded_facts(base, phdr, phnum, copy);
    if (n > copy.size()) {
        copy.resize(n);
        copy_loaded_facts(base, phdr, phnum, copy);
    }
    copy.resize(n);
    return decode_loaded_facts(copy);
}

}  // namespace ldshim::loader
