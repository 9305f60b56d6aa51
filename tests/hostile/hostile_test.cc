// Hostile input to ldsearch and to the runtime resolver: each gets a clear
// error and a documented exit status -- never a crash, a hang or an
// unbounded allocation.  Every ldsearch run here has a time limit and an
// address-space limit; a crash (status >= 128) or a timeout (124) fails.
#include "../support/test_machine.h"
#include "differential/harness.h"
#include "fixture_cc.h"
#include "loader/elf_facts.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <span>
#include <sstream>

using namespace ldshim::difftest;

namespace {

const std::string kLdsearch = LDSEARCH_PATH;

struct Outcome {
    int status;
    std::string out, err;
};
// ldsearch with 20 s and 1 GiB of address space at most.
Outcome ldsearch(const Tree& t, const std::string& args) {
    Outcome r;
    r.status = sh("cd " + quote(t.root()) + " && (ulimit -v 1048576; timeout 20 " + quote(kLdsearch) + " " + args +
                  ") > out.txt 2> err.txt");
    r.out = read_file(t.abs("out.txt"));
    r.err = read_file(t.abs("err.txt"));
    return r;
}
void sane(const Outcome& r, const std::string& what) {
    EXPECT_NE(r.status, 124) << what << ": timed out";
    EXPECT_LT(r.status, 124) << what << ": died (" << r.status << ")\n" << r.err;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(Hostile, elf_truncated_at_every_offset_is_rejected_not_crashed) {
    // In process, every prefix of a real program and library (the whole
    // reader, bounds checks included) ...
    for (const char* f : {"/bin/true", "/lib/x86_64-linux-gnu/libz.so.1"}) {
        std::string bytes = read_all(f);
        ASSERT_FALSE(bytes.empty()) << f;
        std::size_t ok = 0;
        for (std::size_t n = 0; n <= bytes.size(); ++n) {
            auto r = ldshim::loader::read_facts(
                std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), n));
            ok += r.ok;
        }
        EXPECT_GT(ok, 0u) << f << ": even the whole file was rejected";
    }
    // ... and ldsearch on a sample of truncated programs: exit status 3.
    Tree t;
    std::string prog = read_all("/bin/true");
    for (std::size_t n : {std::size_t{0}, std::size_t{4}, std::size_t{52}, std::size_t{64}, std::size_t{100},
                          std::size_t{500}, prog.size() / 2, prog.size() - 1}) {
        t.write("trunc", prog.substr(0, n));
        chmod(t.abs("trunc").c_str(), 0755);
        Outcome r = ldsearch(t, "./trunc");
        sane(r, "truncated at " + std::to_string(n));
        // Cut inside the headers: not a program (3).  Cut near the end (the
        // section headers, which the loader never reads): still runs (0).
        EXPECT_TRUE(r.status == 3 || r.status == 1 || (r.status == 0 && n > 4096)) << n << ": " << r.status << "\n"
                                                                                   << r.err;
        if (r.status != 0) {
            EXPECT_FALSE(r.err.empty()) << n;
        }
    }
}

TEST(Hostile, huge_phnum_and_a_dynamic_section_outside_the_file) {
    Tree t;
    t.exe("main", {.driver = false});
    std::string bin = read_all(t.abs("main"));
    t.write("phnum", bin);
    std::uint16_t big = 0xffff;
    t.overwrite("phnum", offsetof(Elf64_Ehdr, e_phnum), &big, sizeof big);
    chmod(t.abs("phnum").c_str(), 0755);
    Outcome r = ldsearch(t, "./phnum");
    sane(r, "e_phnum 65535");
    EXPECT_EQ(r.status, 3) << r.err;
    // Point PT_DYNAMIC far beyond the end of the file.
    t.write("dynout", bin);
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(bin.data());
    for (unsigned i = 0; i < eh->e_phnum; ++i) {
        auto off = eh->e_phoff + i * sizeof(Elf64_Phdr);
        const auto* ph = reinterpret_cast<const Elf64_Phdr*>(bin.data() + off);
        if (ph->p_type != PT_DYNAMIC) continue;
        std::uint64_t far = 1ull << 40;
        t.overwrite("dynout", off + offsetof(Elf64_Phdr, p_offset), &far, sizeof far);
    }
    chmod(t.abs("dynout").c_str(), 0755);
    r = ldsearch(t, "./dynout");
    sane(r, "PT_DYNAMIC outside the file");
    EXPECT_EQ(r.status, 3) << r.err;
}

TEST(Hostile, string_offsets_out_of_range_in_a_dependency) {
    Tree t;
    t.lib("d/libS.so", {.soname = "libS.so"});
    t.exe("main", {.needs = {"d/libS.so"}, .rpath = t.abs("d"), .driver = false});
    t.set_dyn("d/libS.so", DT_SONAME, 0xffffffffull);  // after linking: ld refuses such a file
    Outcome r = ldsearch(t, "./main");
    sane(r, "DT_SONAME offset out of range");
    EXPECT_TRUE(r.status == 1 || r.status == 0) << r.err;
    r = ldsearch(t, "tree ./main");
    sane(r, "tree");
    r = ldsearch(t, "why libS.so ./main");
    sane(r, "why");
}

TEST(Hostile, dt_needed_cycles_terminate) {
    Tree t;
    t.lib("d/libB.so", {.soname = "libB.so"});
    t.lib("d/libA.so", {.soname = "libA.so", .needs = {"d/libB.so"}});
    t.lib("d/libB.so", {.soname = "libB.so", .needs = {"d/libA.so"}});  // B needs A needs B
    t.exe("main", {.needs = {"d/libA.so"}, .rpath = t.abs("d"), .driver = false});
    for (const char* mode : {"", "tree ", "tree --json ", "why libB.so "}) {
        Outcome r = ldsearch(t, std::string(mode) + "./main");
        sane(r, mode);
        EXPECT_EQ(r.status, 0) << mode << r.err;
    }
}

TEST(Hostile, a_10000_deep_dependency_chain) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << " the loader's own run takes longer than the test's limit";
    Tree t;
    // libx00000 needs libx00001 needs ... libx09999, which needs libx00000
    // again: one small library, copied, its DT_SONAME and DT_NEEDED strings
    // (the same length) rewritten in each copy.
    constexpr int kDepth = 10000;
    t.lib("d/liby00001.so", {.soname = "liby00001.so", .flags = {"-nostdlib", "-s"}});
    t.lib("d/base.so", {.soname = "libx00000.so", .needs = {"d/liby00001.so"}, .flags = {"-nostdlib", "-s"}});
    std::string base = read_all(t.abs("d/base.so"));
    auto name = [](int i) {
        char b[32];
        std::snprintf(b, sizeof b, "libx%05d.so", i % kDepth);
        return std::string(b);
    };
    for (int i = 0; i < kDepth; ++i) {
        std::string img = base;
        auto so = img.find("libx00000.so"), need = img.find("liby00001.so");
        ASSERT_TRUE(so != std::string::npos && need != std::string::npos);
        img.replace(so, 12, name(i));
        img.replace(need, 12, name(i + 1));
        t.write("d/" + name(i), img);
    }
    t.exe("main", {.needs = {"d/base.so"}, .rpath = t.abs("d"), .driver = false});
    // main needs "libx00000.so" (base's SONAME), the head of the chain.
    for (const char* mode : {"", "tree ", "tree --json ", "why libx09999.so "}) {
        Outcome r = ldsearch(t, std::string(mode) + "./main > /dev/null");
        sane(r, std::string("10,000-deep chain, mode ") + mode);
        EXPECT_EQ(r.status, 0) << mode << r.err;
    }
}

TEST(Hostile, symlink_loops_directories_named_like_libraries_and_long_names) {
    Tree t;
    t.mkdir("d");
    t.symlink("libL.so", "d/libL.so");  // a loop of one
    t.symlink("libM2.so", "d/libM1.so");
    t.symlink("libM1.so", "d/libM2.so");
    t.mkdir("d/libDir.so");
    t.exe("main", {.rpath = t.abs("d"), .driver = false});
    for (const char* n : {"libL.so", "libM1.so", "libDir.so"}) {
        Outcome r = ldsearch(t, std::string("--dlopen ") + n + " ./main");
        sane(r, n);
        EXPECT_EQ(r.status, 1) << n << ": a dlopen that fails\n" << r.err;
        EXPECT_FALSE(r.err.empty()) << n;
    }
    std::string longname(4096, 'a');
    Outcome r = ldsearch(t, "--dlopen " + longname + ".so ./main");
    sane(r, "4 KiB name");
    EXPECT_EQ(r.status, 1);
    r = ldsearch(t, "why " + longname + ".so ./main");
    sane(r, "why 4 KiB name");
}

TEST(Hostile, paths_with_newlines_and_percent_signs) {
    Tree t;
    t.lib("we%s\nird/libW.so", {.soname = "libW.so"});
    t.exe("main", {.rpath = t.abs("we%s\nird"), .driver = false});
    Outcome r = ldsearch(t, "--dlopen libW.so ./main");
    sane(r, "newline and %s in a path");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("we%s\nird/libW.so"), std::string::npos) << r.out;
    r = ldsearch(t, "tree --json ./main");
    sane(r, "json");
}

TEST(Hostile, unreadable_files_as_an_unprivileged_user) {
    if (geteuid() != 0 || sh("command -v setpriv > /dev/null") != 0)
        GTEST_SKIP() << "SKIPPED: needs root (to become nobody with setpriv)";
    Tree t;
    chmod(t.root().c_str(), 0755);
    t.lib("d/libU.so", {.soname = "libU.so"});
    t.lib("e/libU.so", {.soname = "libU.so"});
    chmod(t.abs("d").c_str(), 0755);
    chmod(t.abs("e").c_str(), 0755);
    chmod(t.abs("d/libU.so").c_str(), 0);  // unreadable: the search goes on to e/
    t.exe("main", {.rpath = t.abs("d") + ":" + t.abs("e"), .driver = false});
    chmod(t.abs("main").c_str(), 0755);
    int rc = sh("cd " + quote(t.root()) + " && setpriv --reuid=65534 --regid=65534 --clear-groups " + quote(kLdsearch) +
                " --dlopen libU.so ./main > out.txt 2> err.txt");
    EXPECT_EQ(rc, 0) << read_file(t.abs("err.txt"));
    EXPECT_NE(read_file(t.abs("out.txt")).find(t.abs("e") + "/libU.so"), std::string::npos)
        << read_file(t.abs("out.txt"));
}

TEST(Hostile, corrupted_ld_so_cache_through_cache_and_root) {
    Tree t;
    t.exe("main", {.driver = false});
    std::string cache = read_all("/etc/ld.so.cache");
    // Garbage, a truncated header, a cut-off cache, and offsets pointing away.
    std::string bad_offsets = cache;
    for (std::size_t i = 64; i + 4 < bad_offsets.size() && i < 4096; i += 7) bad_offsets[i] = '\xff';
    int k = 0;
    for (const std::string& c :
         {std::string("not a cache at all"), cache.substr(0, 10), cache.substr(0, cache.size() / 3), bad_offsets}) {
        std::string f = "cache" + std::to_string(k++);
        t.write(f, c);
        Outcome r = ldsearch(t, "--cache " + f + " --dlopen libz.so.1 ./main");
        sane(r, f);
        EXPECT_TRUE(r.status == 0 || r.status == 1) << f << ": " << r.err;
    }
    // The same through a sysroot.
    t.mkdir("root/etc");
    t.mkdir("root/bin");
    t.write("root/etc/ld.so.cache", bad_offsets);
    sh("cp " + quote(t.abs("main")) + " " + quote(t.abs("root/bin/main")));
    Outcome r = ldsearch(t, "--root root /bin/main");
    sane(r, "--root with a corrupted cache");
}

// The same kind of files through the runtime resolver, in process:
// ldshim_resolve must answer what the real dlopen does, without crashing.
TEST(Hostile, the_runtime_resolver_agrees_with_dlopen_on_bad_files) {
    Tree t;
    t.mkdir("d%s%n");
    std::string d = "d%s%n/";
    t.symlink("libL.so", d + "libL.so");
    t.mkdir(d + "libDir.so");
    t.lib(d + "libOK.so", {.soname = "libOK.so"});
    std::string ok = read_all(t.abs(d + "libOK.so"));
    t.write(d + "libT.so", ok.substr(0, 100));        // truncated
    t.write(d + "libE.so", std::string(64, '\x7f'));  // not ELF
    t.lib(d + "libS.so", {.soname = "libS.so"});
    t.set_dyn(d + "libS.so", DT_SONAME, 0xffffffffull);  // string offset out of range
    std::string probe = t.abs("probe");
    ASSERT_EQ(sh(FIXTURE_CC " -o " + quote(probe) + " " + quote(PROBE_SRC) + " -I" + quote(LDSHIM_INCLUDE) + " -I" +
                 quote(LDSHIM_GEN_INCLUDE) + " -L" + quote(LDSHIM_LIBDIR) + " -lldshim -ldl -Wl,-rpath," +
                 quote(t.abs(d) + ":" + LDSHIM_LIBDIR)),
              0);
    std::string longname(4000, 'q');
    int rc =
        sh("cd " + quote(t.root()) + " && (ulimit -v 2097152; timeout 60 " + quote(probe) +
           " libL.so libDir.so libT.so libE.so ?libS.so libOK.so " + longname + ".so libnothere.so) > out.txt 2>&1");
    std::string out = read_file(t.abs("out.txt"));
    ASSERT_EQ(rc, 0) << out;
    std::map<std::string, std::string> mine, real;
    std::istringstream in(out);
    for (std::string who, name, what; in >> who;) {
        if ((who == "ldshim" || who == "loader") && in >> name >> what) (who == "ldshim" ? mine : real)[name] = what;
    }
    // A DT_SONAME outside the string table: glibc maps the library and
    // then crashes in the next dlopen that compares names (strcmp in
    // _dl_map_object); ldshim refuses it.  Asked of ldshim only.
    EXPECT_EQ(mine["libS.so"], "not-found") << out;
    mine.erase("libS.so");
    EXPECT_EQ(mine.size(), 7u) << out;
    EXPECT_EQ(mine, real) << out;
    EXPECT_EQ(real["libOK.so"], t.abs(d + "libOK.so")) << out;
}
