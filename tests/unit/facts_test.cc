#include "elf_builder.h"
#include "fixture_cc.h"
#include "loader/elf_facts.h"
#include "tests/support/elf_facts_libelf.h"

#include <elf.h>
#include <link.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace ldshim::loader;
using namespace ldshim::testing;

TEST(ElfFacts, decodes_dynamic_strings_and_flags) {
    auto img = build_elf({.soname = "libx.so.1",
                          .needed = {"libc.so.6", "libm.so.6"},
                          .rpath = "$ORIGIN",
                          .runpath = "/r",
                          .interp = "/lib64/ld-linux-x86-64.so.2",
                          .flags_1 = 0x800});
    auto r = read_facts(img);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.facts.needed, (std::vector<std::string>{"libc.so.6", "libm.so.6"}));
    EXPECT_EQ(r.facts.soname, "libx.so.1");
    EXPECT_EQ(r.facts.rpath, "$ORIGIN");
    EXPECT_EQ(r.facts.runpath, "/r");
    EXPECT_EQ(r.facts.interp, "/lib64/ld-linux-x86-64.so.2");
    EXPECT_TRUE(r.facts.nodeflib());
    EXPECT_FALSE(r.facts.effective_rpath().has_value());  // RUNPATH hides RPATH
}

TEST(ElfFacts, object_without_dynamic_section) {
    auto r = read_facts(build_elf({.dynamic = false}));
    ASSERT_TRUE(r.ok);
    EXPECT_FALSE(r.facts.has_dynamic);
}

TEST(ElfFacts, every_truncation_is_rejected_or_decoded_never_a_crash) {
    auto img = build_elf({.soname = "libt.so", .needed = {"libc.so.6"}, .rpath = "/a:/b"});
    std::size_t ok = 0;
    for (std::size_t n = 0; n < img.size(); ++n) {
        auto r = read_facts(std::span(img.data(), n));
        if (r.ok) {
            ++ok;
        } else {
            EXPECT_FALSE(r.error.empty()) << "at " << n;
        }
    }
    EXPECT_TRUE(read_facts(img).ok);
    EXPECT_LT(ok, img.size());
}

TEST(ElfFacts, string_offset_out_of_range_is_an_error) {
    auto img = build_elf({.needed = {"libc.so.6"}});
    // Find the DT_NEEDED entry and point it far away.
    for (std::size_t off = 0; off + 16 <= img.size(); off += 8) {
        std::int64_t tag;
        std::memcpy(&tag, img.data() + off, 8);
        std::uint64_t val;
        std::memcpy(&val, img.data() + off + 8, 8);
        if (tag == 1 && val == 1) {
            val = 1u << 30;
            std::memcpy(img.data() + off + 8, &val, 8);
            break;
        }
    }
    auto r = read_facts(img);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("out of range"), std::string::npos);
}

TEST(ElfFacts, strings_without_a_string_table_are_rejected_by_both_readers) {
    auto img = build_elf({.needed = {"libc.so.6"}});
    // The dynamic section ends the image; retag its DT_STRTAB as DT_DEBUG.
    bool retagged = false;
    for (std::size_t off = img.size() - sizeof(Elf64_Dyn); !retagged && off > 0; off -= sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        std::memcpy(&d, img.data() + off, sizeof d);
        if (d.d_tag == DT_STRTAB) {
            d.d_tag = DT_DEBUG;
            std::memcpy(img.data() + off, &d, sizeof d);
            retagged = true;
        }
    }
    ASSERT_TRUE(retagged);
    for (const auto& r : {read_facts(img), read_facts_libelf(img)}) {
        EXPECT_FALSE(r.ok);
        EXPECT_EQ(r.error, "dynamic section has strings but no DT_STRTAB/DT_STRSZ");
    }
}

TEST(ElfFacts, not_elf) {
    std::string s = "#!/bin/sh\necho hi\n";
    auto r = read_facts(std::span(reinterpret_cast<const std::byte*>(s.data()), s.size()));
    EXPECT_FALSE(r.ok);
}

TEST(ElfFacts, compiler_built_library_matches_readelf) {
    char dir[] = "/tmp/ldshim-facts-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    std::string d = dir;
    std::string cmd = FIXTURE_CC " -shared -fPIC -o " + d +
                      "/libf.so " FIXTURE_DIR
                      "/lib.c -Wl,-soname,libf.so.7 "
                      "-Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' -Wl,-z,now -Wl,--no-as-needed -lm";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(d + "/libf.so", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string bytes = ss.str();
    auto r = read_facts(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    std::system(("rm -rf " + d).c_str());
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.facts.soname, "libf.so.7");
    EXPECT_EQ(r.facts.rpath, "$ORIGIN/../lib");
    EXPECT_TRUE(r.facts.flags_1 & 1u);  // DF_1_NOW
    EXPECT_FALSE(r.facts.nodeflib());
    EXPECT_NE(std::find(r.facts.needed.begin(), r.facts.needed.end(), "libm.so.6"), r.facts.needed.end());
}

// The fast reader against libelf, on every ELF file in the system library
// directories and /usr/bin.
TEST(ElfFacts, fast_reader_agrees_with_libelf_on_system_files) {
    std::size_t compared = 0;
    for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/bin"}) {
        std::string cmd = std::string("find ") + dir + " -maxdepth 1 -type f -size -64M";
        FILE* p = popen(cmd.c_str(), "r");
        ASSERT_NE(p, nullptr);
        char line[4096];
        while (fgets(line, sizeof line, p)) {
            std::string path(line);
            path.pop_back();
            std::ifstream in(path, std::ios::binary);
            std::stringstream ss;
            ss << in.rdbuf();
            std::string bytes = ss.str();
            if (bytes.size() < 64 || bytes.compare(0, 4,
                                                   "\x7f"
                                                   "ELF") != 0)
                continue;
            std::span<const std::byte> img(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
            auto fast = read_facts(img);
            auto ref = read_facts_libelf(img);
            ASSERT_EQ(fast.ok, ref.ok) << path << ": " << fast.error << " / " << ref.error;
            if (!fast.ok) continue;
            EXPECT_EQ(fast.facts.needed, ref.facts.needed) << path;
            EXPECT_EQ(fast.facts.soname, ref.facts.soname) << path;
            EXPECT_EQ(fast.facts.rpath, ref.facts.rpath) << path;
            EXPECT_EQ(fast.facts.runpath, ref.facts.runpath) << path;
            EXPECT_EQ(fast.facts.interp, ref.facts.interp) << path;
            EXPECT_EQ(fast.facts.flags_1, ref.facts.flags_1) << path;
            EXPECT_EQ(fast.facts.machine, ref.facts.machine) << path;
            ++compared;
        }
        pclose(p);
    }
    // A minimal Debian root (scripts/roots.sh) holds a few hundred; any
    // system holds far more than this.
    EXPECT_GT(compared, 200u);
    std::printf("[ COMPARED ] %zu ELF files: fast reader == libelf\n", compared);
}

TEST(ElfFacts, truncations_agree_with_libelf_about_failure) {
    auto img = build_elf({.soname = "libt.so", .needed = {"libc.so.6"}, .rpath = "/a:/b"});
    for (std::size_t n = 0; n <= img.size(); ++n) {
        auto part = std::span(img.data(), n);
        auto fast = read_facts(part);
        auto ref = read_facts_libelf(part);
        if (fast.ok && ref.ok) {
            EXPECT_EQ(fast.facts.needed, ref.facts.needed) << n;
        }
        if (!fast.ok) {
            EXPECT_FALSE(fast.error.empty());
        }
    }
}

// Every object loaded in this test process: the facts read from memory equal
// the facts read from its file.
TEST(ElfFacts, loaded_objects_match_their_files) {
    struct Seen {
        std::string name;
        ldshim::loader::FactsResult mem;
    };
    std::vector<Seen> seen;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* v = static_cast<std::vector<Seen>*>(data);
            v->push_back({info->dlpi_name, read_loaded_facts(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum)});
            return 0;
        },
        &seen);
    std::size_t compared = 0;
    for (const auto& s : seen) {
        ASSERT_TRUE(s.mem.ok) << s.name << ": " << s.mem.error;
        std::string path = s.name.empty() ? "/proc/self/exe" : s.name;
        if (s.name.find('/') == std::string::npos && !s.name.empty()) {
            // The vDSO has no file; its SONAME is all we can check.
            EXPECT_EQ(s.mem.facts.soname, "linux-vdso.so.1");
            continue;
        }
        std::ifstream in(path, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        std::string bytes = ss.str();
        auto file = read_facts(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
        ASSERT_TRUE(file.ok) << path;
        EXPECT_EQ(s.mem.facts.needed, file.facts.needed) << path;
        EXPECT_EQ(s.mem.facts.soname, file.facts.soname) << path;
        EXPECT_EQ(s.mem.facts.rpath, file.facts.rpath) << path;
        EXPECT_EQ(s.mem.facts.runpath, file.facts.runpath) << path;
        EXPECT_EQ(s.mem.facts.flags_1, file.facts.flags_1) << path;
        EXPECT_EQ(s.mem.facts.interp, file.facts.interp) << path;
        ++compared;
    }
    EXPECT_GE(compared, 4u);  // the test program, libstdc++, libc, ld.so at least
}

// The copy that runs under the loader's lock (copy_loaded_facts) writes only
// what fits and says how much it needs; a copy made with that much room
// decodes to what the one-step reader returns.  For every loaded object.
TEST(ElfFacts, a_copy_made_in_too_little_room_says_how_much_room_it_needs) {
    struct Where {
        std::string name;
        std::uintptr_t base;
        const void* phdr;
        std::size_t phnum;
    };
    std::vector<Where> objects;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            static_cast<std::vector<Where>*>(data)->push_back(
                {info->dlpi_name, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum});
            return 0;
        },
        &objects);
    ASSERT_GE(objects.size(), 4u);
    for (const auto& o : objects) {
        std::vector<std::byte> small(16, std::byte{0x5a});
        std::size_t need = ldshim::loader::copy_loaded_facts(o.base, o.phdr, o.phnum, small);
        ASSERT_GT(need, small.size()) << o.name;
        std::vector<std::byte> exact(need), canary(need + 8, std::byte{0x5a});
        EXPECT_EQ(ldshim::loader::copy_loaded_facts(o.base, o.phdr, o.phnum, exact), need) << o.name;
        ldshim::loader::copy_loaded_facts(o.base, o.phdr, o.phnum, std::span(canary).first(need));
        for (std::size_t i = need; i < canary.size(); ++i)
            ASSERT_EQ(canary[i], std::byte{0x5a}) << o.name << " wrote past its room";
        auto copied = ldshim::loader::decode_loaded_facts(exact);
        auto direct = read_loaded_facts(o.base, o.phdr, o.phnum);
        ASSERT_TRUE(copied.ok) << o.name << ": " << copied.error;
        EXPECT_EQ(copied.facts.needed, direct.facts.needed) << o.name;
        EXPECT_EQ(copied.facts.soname, direct.facts.soname) << o.name;
        EXPECT_EQ(copied.facts.rpath, direct.facts.rpath) << o.name;
        EXPECT_EQ(copied.facts.runpath, direct.facts.runpath) << o.name;
        EXPECT_EQ(copied.facts.interp, direct.facts.interp) << o.name;
        EXPECT_EQ(copied.facts.flags_1, direct.facts.flags_1) << o.name;
        EXPECT_EQ(copied.facts.has_dynamic, direct.facts.has_dynamic) << o.name;
    }
}

TEST(ElfFacts, loaded_reader_rejects_headers_pointing_outside_segments) {
    // A PT_DYNAMIC beyond the only PT_LOAD.
    Elf64_Phdr ph[2] = {};
    ph[0].p_type = PT_LOAD;
    ph[0].p_vaddr = 0;
    ph[0].p_memsz = 64;
    ph[1].p_type = PT_DYNAMIC;
    ph[1].p_vaddr = 4096;
    ph[1].p_memsz = 64;
    static char arena[64];
    auto r = read_loaded_facts(reinterpret_cast<std::uintptr_t>(arena), ph, 2);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("outside"), std::string::npos);
    EXPECT_FALSE(read_loaded_facts(0, nullptr, 0).ok);
}
