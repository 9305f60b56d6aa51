// aarch64: what the emulated arm64 loader of Debian bookworm
// (glibc 2.36, qemu-user 7.2) says, recorded verbatim, and the rules that
// take its machine from its file: the configuration, the skip of other
// machines' objects, ld.so.cache's aarch64 entries.  The live comparison
// with that loader is tests/arm64 (scripts/arm64-root-ldsearch.sh).
#include "elf_builder.h"
#include "fake_fs.h"
#include "loader/ld_cache.h"
#include "loader/loader_config.h"
#include "loader/verify.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace ldshim::loader;
using namespace ldshim::testing;

namespace {

// The tail of `ld-linux-aarch64.so.1 --help` (from "Shared library search
// path:"), under qemu's default CPU (LSE atomics) and under cortex-a72.
constexpr std::string_view kHelpDefault = R"(Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/aarch64-linux-gnu (system search path)
  /usr/lib/aarch64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

No subdirectories of glibc-hwcaps directories are searched.

Legacy HWCAP subdirectories under library search path directories:
  aarch64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  atomics (supported, searched)
)";
constexpr std::string_view kHelpCortexA72 = R"(Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/aarch64-linux-gnu (system search path)
  /usr/lib/aarch64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

No subdirectories of glibc-hwcaps directories are searched.

Legacy HWCAP subdirectories under library search path directories:
  aarch64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  atomics
)";

// The probe's LD_DEBUG=libs output (host/loader_query.cc), "trying file="
// lines left out, PIDs replaced.
constexpr std::string_view kProbeDefault = R"(     1:	find library=ldshim-probe-nowhere.so [0]; searching
     1:	 search path=/ldshim-probe-nowhere/tls/aarch64/atomics:/ldshim-probe-nowhere/tls/aarch64:/ldshim-probe-nowhere/tls/atomics:/ldshim-probe-nowhere/tls:/ldshim-probe-nowhere/aarch64/atomics:/ldshim-probe-nowhere/aarch64:/ldshim-probe-nowhere/atomics:/ldshim-probe-nowhere:/ldshim-probe-platform/aarch64/tls/aarch64/atomics:/ldshim-probe-platform/aarch64/tls/aarch64:/ldshim-probe-platform/aarch64/tls/atomics:/ldshim-probe-platform/aarch64/tls:/ldshim-probe-platform/aarch64/aarch64/atomics:/ldshim-probe-platform/aarch64/aarch64:/ldshim-probe-platform/aarch64/atomics:/ldshim-probe-platform/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls/aarch64/atomics:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls/atomics:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls:/ldshim-probe-lib/lib/aarch64-linux-gnu/aarch64/atomics:/ldshim-probe-lib/lib/aarch64-linux-gnu/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu/atomics:/ldshim-probe-lib/lib/aarch64-linux-gnu:/tls/aarch64/atomics:/tls/aarch64:/tls/atomics:/tls:/aarch64/atomics:/aarch64:/atomics:/:./ld-linux-aarch64.so.1/tls/aarch64/atomics:./ld-linux-aarch64.so.1/tls/aarch64:./ld-linux-aarch64.so.1/tls/atomics:./ld-linux-aarch64.so.1/tls:./ld-linux-aarch64.so.1/aarch64/atomics:./ld-linux-aarch64.so.1/aarch64:./ld-linux-aarch64.so.1/atomics:./ld-linux-aarch64.so.1:/ldshim-probe-after/tls/aarch64/atomics:/ldshim-probe-after/tls/aarch64:/ldshim-probe-after/tls/atomics:/ldshim-probe-after/tls:/ldshim-probe-after/aarch64/atomics:/ldshim-probe-after/aarch64:/ldshim-probe-after/atomics:/ldshim-probe-after		(LD_LIBRARY_PATH)
     1:	 search cache=/etc/ld.so.cache
     1:	 search path=/lib/aarch64-linux-gnu/tls/aarch64/atomics:/lib/aarch64-linux-gnu/tls/aarch64:/lib/aarch64-linux-gnu/tls/atomics:/lib/aarch64-linux-gnu/tls:/lib/aarch64-linux-gnu/aarch64/atomics:/lib/aarch64-linux-gnu/aarch64:/lib/aarch64-linux-gnu/atomics:/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/tls/aarch64/atomics:/usr/lib/aarch64-linux-gnu/tls/aarch64:/usr/lib/aarch64-linux-gnu/tls/atomics:/usr/lib/aarch64-linux-gnu/tls:/usr/lib/aarch64-linux-gnu/aarch64/atomics:/usr/lib/aarch64-linux-gnu/aarch64:/usr/lib/aarch64-linux-gnu/atomics:/usr/lib/aarch64-linux-gnu:/lib/tls/aarch64/atomics:/lib/tls/aarch64:/lib/tls/atomics:/lib/tls:/lib/aarch64/atomics:/lib/aarch64:/lib/atomics:/lib:/usr/lib/tls/aarch64/atomics:/usr/lib/tls/aarch64:/usr/lib/tls/atomics:/usr/lib/tls:/usr/lib/aarch64/atomics:/usr/lib/aarch64:/usr/lib/atomics:/usr/lib		(system search path)
     1:	
     1:	find library=ldshim-probe-nowhere-again.so [0]; searching
     1:	 search path=./ld-linux-aarch64.so.1/tls/aarch64/atomics:./ld-linux-aarch64.so.1/tls/aarch64:./ld-linux-aarch64.so.1/tls/atomics:./ld-linux-aarch64.so.1/tls:./ld-linux-aarch64.so.1/aarch64/atomics:./ld-linux-aarch64.so.1/aarch64:./ld-linux-aarch64.so.1/atomics:./ld-linux-aarch64.so.1:/ldshim-probe-after/tls/aarch64/atomics:/ldshim-probe-after/tls/aarch64:/ldshim-probe-after/tls/atomics:/ldshim-probe-after/tls:/ldshim-probe-after/aarch64/atomics:/ldshim-probe-after/aarch64:/ldshim-probe-after/atomics:/ldshim-probe-after		(LD_LIBRARY_PATH)
     1:	 search cache=/etc/ld.so.cache
     1:	 search path=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib:/usr/lib		(system search path)
     1:	
)";
constexpr std::string_view kProbeCortexA72 = R"(     1:	find library=ldshim-probe-nowhere.so [0]; searching
     1:	 search path=/ldshim-probe-nowhere/tls/aarch64:/ldshim-probe-nowhere/tls:/ldshim-probe-nowhere/aarch64:/ldshim-probe-nowhere:/ldshim-probe-platform/aarch64/tls/aarch64:/ldshim-probe-platform/aarch64/tls:/ldshim-probe-platform/aarch64/aarch64:/ldshim-probe-platform/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu/tls:/ldshim-probe-lib/lib/aarch64-linux-gnu/aarch64:/ldshim-probe-lib/lib/aarch64-linux-gnu:/tls/aarch64:/tls:/aarch64:/:./ld-linux-aarch64.so.1/tls/aarch64:./ld-linux-aarch64.so.1/tls:./ld-linux-aarch64.so.1/aarch64:./ld-linux-aarch64.so.1:/ldshim-probe-after/tls/aarch64:/ldshim-probe-after/tls:/ldshim-probe-after/aarch64:/ldshim-probe-after		(LD_LIBRARY_PATH)
     1:	 search cache=/etc/ld.so.cache
     1:	 search path=/lib/aarch64-linux-gnu/tls/aarch64:/lib/aarch64-linux-gnu/tls:/lib/aarch64-linux-gnu/aarch64:/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/tls/aarch64:/usr/lib/aarch64-linux-gnu/tls:/usr/lib/aarch64-linux-gnu/aarch64:/usr/lib/aarch64-linux-gnu:/lib/tls/aarch64:/lib/tls:/lib/aarch64:/lib:/usr/lib/tls/aarch64:/usr/lib/tls:/usr/lib/aarch64:/usr/lib		(system search path)
     1:	
     1:	find library=ldshim-probe-nowhere-again.so [0]; searching
     1:	 search path=./ld-linux-aarch64.so.1/tls/aarch64:./ld-linux-aarch64.so.1/tls:./ld-linux-aarch64.so.1/aarch64:./ld-linux-aarch64.so.1:/ldshim-probe-after/tls/aarch64:/ldshim-probe-after/tls:/ldshim-probe-after/aarch64:/ldshim-probe-after		(LD_LIBRARY_PATH)
     1:	 search cache=/etc/ld.so.cache
     1:	 search path=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib:/usr/lib		(system search path)
     1:	
)";

LoaderConfig config_of(std::string_view help, std::string_view probe) {
    std::string err;
    auto cfg = config_from_answers(help, probe, &err);
    EXPECT_TRUE(cfg) << err;
    return cfg.value_or(LoaderConfig{});
}

}  // namespace

TEST(Aarch64Loader, bookworm_loader_under_the_default_cpu) {
    LoaderConfig cfg = config_of(kHelpDefault, kProbeDefault);
    EXPECT_EQ(cfg.system_dirs, (std::vector<std::string>{"/lib/aarch64-linux-gnu/", "/usr/lib/aarch64-linux-gnu/",
                                                         "/lib/", "/usr/lib/"}));
    EXPECT_TRUE(cfg.hwcaps_active.empty());
    // The power set of atomics (hwcap bit 8), the platform and tls, in the
    // order the loader's own search line shows.
    EXPECT_EQ(cfg.subdirs, (std::vector<std::string>{"tls/aarch64/atomics/", "tls/aarch64/", "tls/atomics/", "tls/",
                                                     "aarch64/atomics/", "aarch64/", "atomics/", ""}));
    EXPECT_EQ(cfg.platform, "aarch64");
    EXPECT_EQ(cfg.dst_lib, "lib/aarch64-linux-gnu");
    EXPECT_EQ(cfg.hwcap_searched, std::uint64_t{1} << 8);
    // Without --help the probe's own search line gives the same subdirectories.
    std::string err;
    auto probed = config_from_answers(std::nullopt, kProbeDefault, &err);
    ASSERT_TRUE(probed) << err;
    EXPECT_EQ(probed->subdirs, cfg.subdirs);
    EXPECT_EQ(probed->hwcap_searched, cfg.hwcap_searched);
}

TEST(Aarch64Loader, cortex_a72_has_no_atomics_subdirectory) {
    LoaderConfig cfg = config_of(kHelpCortexA72, kProbeCortexA72);
    EXPECT_EQ(cfg.subdirs, (std::vector<std::string>{"tls/aarch64/", "tls/", "aarch64/", ""}));
    EXPECT_EQ(cfg.hwcap_searched, 0u);
}

TEST(Aarch64Loader, machine_comes_from_the_loader_file) {
    LoaderConfig cfg;
    ASSERT_TRUE(read_loader_machine(as_string(build_elf({.machine = EM_AARCH64})), cfg));
    EXPECT_EQ(cfg.machine, ldshim::machine::kAarch64);
    EXPECT_EQ(cfg.elf_class, ELFCLASS64);
    EXPECT_EQ(cfg.elf_data, ELFDATA2LSB);
    ASSERT_TRUE(read_loader_machine(as_string(build_elf({})), cfg));
    EXPECT_EQ(cfg.machine, ldshim::machine::kX86_64);
    EXPECT_FALSE(read_loader_machine("#!/bin/sh\necho ld.so\n", cfg));
    EXPECT_FALSE(
        read_loader_machine("\x7f"
                            "ELF",
                            cfg));
}

TEST(Aarch64Loader, machine_survives_the_config_cache) {
    LoaderConfig cfg = config_of(kHelpDefault, kProbeDefault);
    cfg.machine = ldshim::machine::kAarch64;
    auto back = decode_config(encode_config(cfg));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, cfg);
}

TEST(Aarch64Loader, objects_of_another_machine_are_skipped) {
    FakeFs fs;
    fs.file("/arm", as_string(build_elf({.machine = EM_AARCH64})));
    fs.file("/x86", as_string(build_elf({})));
    HostAbi arm;
    arm.machine = ldshim::machine::kAarch64;
    EXPECT_EQ(verify_candidate(*fs.open("/arm").image, arm).verdict, Verdict::accept);
    EXPECT_EQ(verify_candidate(*fs.open("/x86").image, arm).verdict, Verdict::skip_machine);
    EXPECT_EQ(verify_candidate(*fs.open("/arm").image).verdict, Verdict::skip_machine);
}

namespace {

// A new-format ld.so.cache: one name, an x86-64 entry and an aarch64 one
// (ldconfig writes whatever machines it finds into one file).
std::string two_machine_cache() {
    const std::string strings = std::string("libm2.so") + '\0' + "/x86/libm2.so" + '\0' + "/arm/libm2.so" + '\0';
    constexpr std::size_t kHeader = 48, kEntry = 24;
    std::string out(kHeader + 2 * kEntry, '\0');
    std::memcpy(out.data(), "glibc-ld.so.cache1.1", 20);
    auto put32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(out.data() + at, &v, 4); };
    put32(20, 2);                                                       // nlibs
    put32(24, static_cast<std::uint32_t>(strings.size()));              // len_strings
    const std::uint32_t base = static_cast<std::uint32_t>(out.size());  // string offsets: from the file's start
    std::uint32_t x86_value = base + 9, arm_value = base + 9 + 14;
    put32(kHeader + 0, static_cast<std::uint32_t>(kCacheFlagsX8664Libc6));
    put32(kHeader + 4, base);
    put32(kHeader + 8, x86_value);
    put32(kHeader + kEntry + 0, static_cast<std::uint32_t>(kCacheFlagsAarch64Libc6));
    put32(kHeader + kEntry + 4, base);
    put32(kHeader + kEntry + 8, arm_value);
    return out + strings;
}

}  // namespace

TEST(Aarch64Loader, cache_entries_of_the_loaders_machine) {
    FakeFs fs;
    fs.file("/c", two_machine_cache());
    LdCache cache = LdCache::load(fs, "/c");
    ASSERT_TRUE(cache.usable());
    LoaderConfig arm = config_of(kHelpDefault, kProbeDefault);
    arm.machine = ldshim::machine::kAarch64;
    EXPECT_EQ(cache.lookup("libm2.so", arm), "/arm/libm2.so");
    EXPECT_EQ(cache.lookup("libm2.so", LoaderConfig{}), "/x86/libm2.so");
}
