// derive_in_process(): the loader configuration of this very process, read in
// place.  Nothing is spawned and nothing is written: the runtime runs inside
// other people's processes.  Sources (glibc 2.36, x86-64):
//  * system directories: RTLD_DI_SERINFO of ld.so's own link map, whose tail
//    they are (2.36 lists plain directories there: no hwcaps subdirectories,
//    every flag 0);
//  * ISA levels, $PLATFORM, legacy hwcap bits: the loader's own CPU feature
//    state (<sys/platform/x86.h>): CPUID and XCR0 after glibc's usability
//    rules and after GLIBC_TUNABLES=glibc.cpu.hwcaps, as ld.so settled them
//    at startup;
//  * glibc.cpu.hwcap_mask / LD_HWCAP_MASK: the environment.
#include "loader/elf_facts.h"
#include "loader/loader_config.h"
#include "loader/path_pool.h"
#include "loader/tokens.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <cpuid.h>
#if defined(__cplusplus) && defined(__clang__)
// glibc 2.36's header spells C's _Bool, which g++ accepts and clang++ does not.
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#define LDSHIM_X86_FEATURES 1
#else
#define LDSHIM_X86_FEATURES 0
#endif

extern char** environ;

namespace ldshim::loader {
namespace {

constexpr std::uint64_t kHwcapX86_64 = 1u << 1;
constexpr std::uint64_t kHwcapAvx512_1 = 1u << 2;
constexpr std::uint64_t kHwcapImportant = kHwcapX86_64 | kHwcapAvx512_1;

// ld.so's number reader (_dl_strtoul): blanks, a sign, "0x" hex or a leading
// 0 for octal; it stops at the first other character and saturates a little
// early, as ld.so does.
std::uint64_t loader_strtoul(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return 0;
    unsigned base = 10;
    if (s[i] == '0') {
        bool hex = i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X');
        base = hex ? 16 : 8;
        if (hex) i += 2;
    }
    std::uint64_t r = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= (base == 8 ? '7' : '9')) d = static_cast<unsigned>(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
        else break;
        if (r >= (UINT64_MAX - d) / base) return UINT64_MAX;
        r = r * base + d;
    }
    return negative ? ~r + 1 : r;
}

// The last glibc.cpu.hwcap_mask of one GLIBC_TUNABLES value, walked as ld.so
// walks it: NAME=VALUE pairs split on ':'; a piece without '=' is skipped; a
// final name without '=' ends the walk.
std::optional<std::uint64_t> tunable_hwcap_mask(std::string_view s) {
    std::optional<std::uint64_t> out;
    for (;;) {
        std::size_t n = s.find_first_of("=:");
        if (n == std::string_view::npos) break;
        if (s[n] == ':') {
            s.remove_prefix(n + 1);
            continue;
        }
        std::string_view name = s.substr(0, n);
        s.remove_prefix(n + 1);
        std::size_t v = s.find(':');
        if (name == "glibc.cpu.hwcap_mask") out = loader_strtoul(s.substr(0, v));
        if (v == std::string_view::npos) break;
        s.remove_prefix(v + 1);
    }
    return out;
}

// One search list as glibc's fillin_rpath builds it (DSTs expanded, elements
// that expand to nothing dropped, trailing '/' normalised, duplicates
// dropped), spelled as RTLD_DI_SERINFO spells entries: without the final '/',
// and "." for the current directory.
std::vector<std::string> serinfo_list(std::string_view str, std::string_view seps, const DstValues& v,
                                      const DstPolicy& pol) {
    std::vector<std::string> dirs;
    for (auto elem : split_path(str, seps)) {
        std::string dir;
        if (!elem.empty()) {
            std::string x = count_dsts(elem) ? substitute_dsts(elem, v, pol) : std::string(elem);
            if (x.empty()) continue;
            dir = normalize_dir(x);
        }
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
    }
    for (auto& d : dirs) d = d.size() < 2 ? (d.empty() ? "." : "/") : d.substr(0, d.size() - 1);
    return dirs;
}

// The tail of `serinfo` from `from` on as system directories, or nothing if
// one of them is not absolute (then this is not where they start).
std::optional<std::vector<std::string>> tail_dirs(const std::vector<std::string>& serinfo, std::size_t from) {
    std::vector<std::string> out;
    for (std::size_t i = from; i < serinfo.size(); ++i) {
        if (!serinfo[i].starts_with('/')) return std::nullopt;
        out.push_back(serinfo[i].ends_with('/') ? serinfo[i] : serinfo[i] + "/");
    }
    return out;
}

}  // namespace

std::uint64_t hwcap_mask_from_env(const char* const* envp, bool secure) {
    // Both spellings are SXID_ERASE tunables: a set-id process never reads them.
    if (secure || !envp) return kHwcapImportant;
    std::optional<std::uint64_t> tunable, alias;
    for (; *envp; ++envp) {
        std::string_view e(*envp);
        if (e.starts_with("GLIBC_TUNABLES=")) {
            if (auto m = tunable_hwcap_mask(e.substr(15))) tunable = m;
        } else if (e.starts_with("LD_HWCAP_MASK=") && !alias) {
            alias = loader_strtoul(e.substr(14));  // the alias only fills an unset tunable
        }
    }
    return tunable ? *tunable : alias ? *alias : kHwcapImportant;
}

std::optional<std::vector<std::string>> system_dirs_from_serinfo(const std::vector<std::string>& serinfo,
                                                                 const SerinfoPrefix& p, std::string* error) {
    const std::size_t total = serinfo.size();
    // With the RPATH list first: only when that reading fails can it have been
    // dropped (glibc removes an RPATH list whose directories all turned out
    // missing, for good).
    for (bool with_rpath : {true, false}) {
        if (with_rpath && (!p.main_rpath || p.main_rpath->empty())) continue;
        for (std::size_t n = 1; n <= total; ++n) {
            auto dirs = tail_dirs(serinfo, total - n);
            if (!dirs) continue;
            // $LIB and the trusted directories depend on the candidate itself.
            DstValues v{p.origin, p.platform, dst_lib_of(*dirs)};
            DstPolicy pol{p.secure, true, &*dirs};
            std::vector<std::string> expect;
            if (with_rpath) expect = serinfo_list(*p.main_rpath, ":", v, pol);
            if (p.library_path && !p.library_path->empty() && !p.secure) {
                auto l = serinfo_list(*p.library_path, ":;", v, pol);
                expect.insert(expect.end(), l.begin(), l.end());
            }
            if (expect.size() == total - n && std::equal(expect.begin(), expect.end(), serinfo.begin())) return dirs;
        }
    }
    if (error) *error = "the loader's search list (RTLD_DI_SERINFO) does not end in system directories after the "
                        "main program's RPATH and LD_LIBRARY_PATH";
    return std::nullopt;
}

#if LDSHIM_X86_FEATURES
namespace {

struct CpuView {
    std::uint32_t isa_levels = 1;  // bit 1: v2, 2: v3, 3: v4
    std::optional<std::string> platform;
    std::uint64_t hwcap = kHwcapX86_64;  // dl_hwcap
};

bool cpu_is_intel() {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "GenuineIntel"
}

// glibc 2.36's x86 rules (get-isa-level.h; the platform and dl_hwcap part of
// cpu-features.c) over the loader's own "active" bits, which already carry
// the XCR0 checks (AVX family only with YMM state, AVX-512 only with opmask
// and ZMM state, neither without OSXSAVE/XSAVE) and GLIBC_TUNABLES masking --
// including ld.so's own way of parsing that variable.  FPU counts when
// present: glibc never marks it active.
CpuView cpu_view() {
#define LDSHIM_A(f) CPU_FEATURE_ACTIVE(f)
    CpuView c;
    bool base = LDSHIM_A(CMOV) && LDSHIM_A(CX8) && CPU_FEATURE_PRESENT(FPU) && LDSHIM_A(FXSR) && LDSHIM_A(MMX) &&
                LDSHIM_A(SSE) && LDSHIM_A(SSE2);
    bool v2 = base && LDSHIM_A(CMPXCHG16B) && LDSHIM_A(LAHF64_SAHF64) && LDSHIM_A(POPCNT) && LDSHIM_A(SSE3) &&
              LDSHIM_A(SSSE3) && LDSHIM_A(SSE4_1) && LDSHIM_A(SSE4_2);
    bool v3 = v2 && LDSHIM_A(AVX) && LDSHIM_A(AVX2) && LDSHIM_A(BMI1) && LDSHIM_A(BMI2) && LDSHIM_A(F16C) &&
              LDSHIM_A(FMA) && LDSHIM_A(LZCNT) && LDSHIM_A(MOVBE);
    bool v4 = v3 && LDSHIM_A(AVX512F) && LDSHIM_A(AVX512BW) && LDSHIM_A(AVX512CD) && LDSHIM_A(AVX512DQ) &&
              LDSHIM_A(AVX512VL);
    c.isa_levels = 1u | (v2 ? 2u : 0u) | (v3 ? 4u : 0u) | (v4 ? 8u : 0u);
    if (auto at = getauxval(AT_PLATFORM)) c.platform = reinterpret_cast<const char*>(at);
    // Only on Intel does glibc override AT_PLATFORM and set avx512_1.
    if (cpu_is_intel()) {
        const char* over = nullptr;
        if (LDSHIM_A(AVX512CD)) {
            if (LDSHIM_A(AVX512ER)) {
                if (LDSHIM_A(AVX512PF)) over = "xeon_phi";
            } else if (LDSHIM_A(AVX512BW) && LDSHIM_A(AVX512DQ) && LDSHIM_A(AVX512VL)) {
                c.hwcap |= kHwcapAvx512_1;
            }
        }
        if (!over && LDSHIM_A(AVX2) && LDSHIM_A(FMA) && LDSHIM_A(BMI1) && LDSHIM_A(BMI2) && LDSHIM_A(LZCNT) &&
            LDSHIM_A(MOVBE) && LDSHIM_A(POPCNT))
            over = "haswell";
        if (over) c.platform = over;
    }
#undef LDSHIM_A
    return c;
}

// ld.so's own link map: the object mapped at AT_BASE.  A link map is what a
// dlopen handle points to in glibc, so dlinfo accepts it.
link_map* rtld_link_map() {
    auto base = getauxval(AT_BASE);
    Dl_info info{};
    void* extra = nullptr;
    if (!base || !dladdr1(reinterpret_cast<void*>(base), &info, &extra, RTLD_DL_LINKMAP)) return nullptr;
    return static_cast<link_map*>(extra);
}

std::optional<std::vector<std::string>> read_serinfo(link_map* map) {
    Dl_serinfo size{};
    if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) return std::nullopt;
    auto buf = std::make_unique<std::max_align_t[]>(size.dls_size / sizeof(std::max_align_t) + 1);
    auto* si = reinterpret_cast<Dl_serinfo*>(buf.get());
    si->dls_size = size.dls_size;
    si->dls_cnt = size.dls_cnt;
    if (dlinfo(map, RTLD_DI_SERINFO, si) != 0) return std::nullopt;
    std::vector<std::string> out;
    const Dl_serpath* paths = &si->dls_serpath[0];
    for (unsigned i = 0; i < si->dls_cnt; ++i) out.emplace_back(paths[i].dls_name);
    return out;
}

// The main program's dynamic section, in memory (the first object
// dl_iterate_phdr reports).  Read after the walk: nothing may allocate inside
// it, and the main program is never unloaded.
std::optional<ObjectFacts> main_program_facts() {
    struct Where {
        std::uintptr_t base = 0;
        const void* phdr = nullptr;
        std::size_t phnum = 0;
    } main;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            *static_cast<Where*>(data) = {info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum};
            return 1;
        },
        &main);
    auto r = read_loaded_facts(main.base, main.phdr, main.phnum);
    if (!r.ok) return std::nullopt;
    return std::move(r.facts);
}

// The main program's $ORIGIN as ld.so finds it: /proc/self/exe, else
// LD_ORIGIN_PATH (not for set-id processes) without trailing slashes.
std::optional<std::string> main_origin(bool secure) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
    if (n > 0 && buf[0] == '/') {
        std::string path(buf, static_cast<std::size_t>(n));
        auto slash = path.rfind('/');
        return slash == 0 ? std::string("/") : path.substr(0, slash);
    }
    const char* o = secure ? nullptr : std::getenv("LD_ORIGIN_PATH");
    if (!o) return std::nullopt;
    std::string s(o);
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

// LD_LIBRARY_PATH as ld.so read it at startup: the last occurrence wins;
// set-id processes ignore it.
std::optional<std::string> startup_library_path(bool secure) {
    std::optional<std::string> out;
    if (secure) return out;
    for (char** e = environ; e && *e; ++e)
        if (std::string_view(*e).starts_with("LD_LIBRARY_PATH=")) out = std::string(*e + 16);
    return out;
}

}  // namespace
#endif

std::optional<LoaderConfig> derive_in_process(std::string* error) {
    auto fail = [&](std::string why) -> std::optional<LoaderConfig> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
#if !LDSHIM_X86_FEATURES
    return fail("the in-process derivation knows glibc 2.36 on x86-64 only");
#else
    std::string_view version = gnu_get_libc_version();
    if (version != "2.36")
        return fail("glibc " + std::string(version) + ": the in-process derivation knows glibc 2.36 only");
    link_map* rtld = rtld_link_map();
    if (!rtld)
        return fail("no interpreter mapped (AT_BASE): started as `ld.so PROGRAM`, whose options are not "
                    "visible in process, or not dynamically linked");
    auto serinfo = read_serinfo(rtld);
    if (!serinfo) return fail("dlinfo(RTLD_DI_SERINFO) failed on the loader's link map");
    auto facts = main_program_facts();
    if (!facts) return fail("cannot read the main program's dynamic section");
    const bool secure = getauxval(AT_SECURE) != 0;
    CpuView cpu = cpu_view();
    SerinfoPrefix p;
    p.main_rpath = facts->effective_rpath();
    p.library_path = startup_library_path(secure);
    p.origin = main_origin(secure);
    p.platform = cpu.platform;
    p.secure = secure;
    std::string why;
    auto dirs = system_dirs_from_serinfo(*serinfo, p, &why);
    if (!dirs) return fail(why);
    std::uint64_t searched = cpu.hwcap & hwcap_mask_from_env(environ, secure);
    LoaderConfig cfg = assemble_config(std::move(*dirs), cpu.isa_levels, cpu.platform, searched);
    if (rtld->l_name && *rtld->l_name) cfg.rtld_path = rtld->l_name;
    return cfg;
#endif
}

}  // namespace ldshim::loader
