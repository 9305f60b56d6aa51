// The part of a dynamic section that ObjectFacts needs, decoded into string
// offsets once; shared by the file, libelf and in-memory readers.
#pragma once

#include "loader/elf_facts.h"

#include <elf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ldshim::loader {

struct DynamicEntries {
    std::vector<std::uint64_t> needed;
    std::optional<std::uint64_t> soname, rpath, runpath, strtab, strsz;
    std::uint64_t flags_1 = 0;
    bool filters = false;

    // Takes one entry; false at DT_NULL, where the section ends.
    bool add(std::int64_t tag, std::uint64_t val) {
        switch (tag) {
            case DT_NULL: return false;
            case DT_NEEDED: needed.push_back(val); break;
            case DT_SONAME: soname = val; break;
            case DT_RPATH: rpath = val; break;
            case DT_RUNPATH: runpath = val; break;
            case DT_STRTAB: strtab = val; break;
            case DT_STRSZ: strsz = val; break;
            case DT_FLAGS_1: flags_1 = val; break;
            case DT_AUXILIARY:
            case DT_FILTER: filters = true; break;
            default: break;
        }
        return true;
    }
    bool has_strings() const { return !needed.empty() || soname || rpath || runpath; }
    // Why the strings cannot be located, or nullptr when they can (or when
    // there are none): every reader rejects the same malformed table alike.
    const char* strtab_problem() const {
        return has_strings() && (!strtab || !strsz) ? "dynamic section has strings but no DT_STRTAB/DT_STRSZ" : nullptr;
    }

    // The step every reader takes before it reads the string table: the
    // flags go into r.facts; false when there is nothing more to read (no
    // strings: r.ok) or the table cannot be located (r.error).
    bool strings_to_read(FactsResult& r) const {
        r.facts.flags_1 = flags_1;
        if (!has_strings()) {
            r.ok = true;
            return false;
        }
        if (const char* why = strtab_problem()) {
            r.error = why;
            return false;
        }
        return true;
    }

    // Fill `f` from the string table through get(offset) -> optional<string>
    // (nullopt when the offset or its terminator is out of bounds).  On
    // failure sets `error` and returns false.
    template <typename Get>
    bool resolve(ObjectFacts& f, std::string& error, Get get) const {
        f.flags_1 = flags_1;
        f.has_filters = filters;
        auto one = [&](std::uint64_t off, const char* what, std::optional<std::string>& out) {
            out = get(off);
            if (!out) error = std::string(what) + " string offset is out of range";
            return out.has_value();
        };
        for (auto off : needed) {
            std::optional<std::string> s;
            if (!one(off, "DT_NEEDED", s)) return false;
            f.needed.push_back(std::move(*s));
        }
        if (soname && !one(*soname, "DT_SONAME", f.soname)) return false;
        if (rpath && !one(*rpath, "DT_RPATH", f.rpath)) return false;
        if (runpath && !one(*runpath, "DT_RUNPATH", f.runpath)) return false;
        return true;
    }
};

}  // namespace ldshim::loader
