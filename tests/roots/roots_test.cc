// Other glibc versions: Debian's own releases as roots (scripts/roots.sh
// debootstraps bullseye, glibc 2.31, trixie, glibc 2.41, and forky, glibc
// 2.43).  Every
// dynamic program in a root's /usr/bin, run in the root by that root's own
// loader under LD_TRACE_LOADED_OBJECTS=1 (nothing runs) with LD_DEBUG=libs,
// against `ldsearch --root ROOT --keep-going PROGRAM` run here.  The bullseye
// loader has no --help: ldsearch learns it from its own probe search.
#include "../differential/harness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

using namespace ldshim::difftest;

namespace {

std::string roots_dir() {
    const char* d = std::getenv("LDSHIM_ROOTS_DIR");
    return d && *d ? d : "/var/cache/ldshim/roots";
}

// A 64-bit x86-64 ELF program whose PT_INTERP is the x86-64 loader.
bool runs_on_x86_64_loader(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char eh[64] = {};
    if (!in.read(reinterpret_cast<char*>(eh), sizeof eh)) return false;
    if (std::memcmp(eh,
                    "\x7f"
                    "ELF\x02\x01",
                    6) != 0 ||
        eh[18] != 62)
        return false;
    std::uint64_t phoff;
    std::uint16_t phentsize, phnum;
    std::memcpy(&phoff, eh + 32, 8);
    std::memcpy(&phentsize, eh + 54, 2);
    std::memcpy(&phnum, eh + 56, 2);
    for (unsigned i = 0; i < phnum && phentsize >= 56; ++i) {
        unsigned char ph[56];
        in.seekg(static_cast<std::streamoff>(phoff + i * phentsize));
        if (!in.read(reinterpret_cast<char*>(ph), sizeof ph)) return false;
        std::uint32_t type;
        std::uint64_t off, size;
        std::memcpy(&type, ph, 4);
        std::memcpy(&off, ph + 8, 8);
        std::memcpy(&size, ph + 32, 8);
        if (type != 3) continue;  // PT_INTERP
        std::string interp(std::min<std::uint64_t>(size, 256), '\0');
        in.seekg(static_cast<std::streamoff>(off));
        in.read(interp.data(), static_cast<std::streamsize>(interp.size()));
        return interp.c_str() == std::string("/lib64/ld-linux-x86-64.so.2");
    }
    return false;
}

// The root's programs, by their path inside the root (links left out: the
// file they name is in the list, or is not the root's).
std::vector<std::string> programs_of(const std::string& root) {
    std::vector<std::string> out;
    if (DIR* d = opendir((root + "/usr/bin").c_str())) {
        while (dirent* e = readdir(d)) {
            std::string inside = std::string("/usr/bin/") + e->d_name;
            struct stat st {};
            if (lstat((root + inside).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) continue;
            if (runs_on_x86_64_loader(root + inside)) out.push_back(inside);
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The search lines of an LD_DEBUG=libs capture.
std::vector<std::string> search_lines(const std::string& file) {
    std::vector<std::string> out;
    for (auto l : read_lines(file)) {
        auto tab = l.find(":\t");
        if (tab != std::string::npos) l = l.substr(tab + 2);
        if (is_search_line(l)) out.push_back(l);
    }
    return out;
}

// A set-id program started with another real id is AT_SECURE, and its
// loader then prints nothing: start both sides with the file's ids.
std::string identity_of(const std::string& file) {
    struct stat st {};
    stat(file.c_str(), &st);
    if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
        return "setpriv --reuid=" + std::to_string(st.st_uid) + " --clear-groups ";
    if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
        return "setpriv --regid=" + std::to_string(st.st_gid) + " --clear-groups ";
    return "";
}

// LD_LIBRARY_PATH makes every lookup walk the loader's subdirectories
// (legacy hwcaps in 2.31, glibc-hwcaps in both) and expand $PLATFORM and
// $LIB before the cache; without it most lookups are one cache hit.  "/"
// is dropped after the first lookup before glibc 2.38 and kept after.
constexpr const char* kLibraryPath = "LD_LIBRARY_PATH=/opt/none:/usr/lib/\\$PLATFORM:/usr/\\$LIB/none:/";

void every_program_matches(const std::string& suite, const std::string& env) {
    std::string root = roots_dir() + "/" + suite;
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: running the root's loader in it needs chroot(2), root only";
    if (access((root + "/usr/bin/env").c_str(), X_OK) != 0)
        GTEST_SKIP() << "SKIPPED: no " << suite << " root at " << root << " (scripts/roots.sh makes it)";
    Tree t;
    auto programs = programs_of(root);
    ASSERT_GT(programs.size(), 30u) << "too few programs in " << root;
    std::size_t same = 0;
    std::vector<std::string> failures;
    for (const auto& p : programs) {
        std::string id = identity_of(root + p);
        std::string real = t.abs(".out/real"), mine = t.abs(".out/mine");
        sh(id + "chroot " + quote(root) + " /usr/bin/env -i " + env + " LD_TRACE_LOADED_OBJECTS=1 LD_DEBUG=libs " +
           quote(p) + " > /dev/null 2> " + quote(real) + " < /dev/null");
        sh(id + "env -i " + env + " PATH=/usr/bin:/bin " + quote(LDSEARCH_PATH) + " --root " + quote(root) +
           " --keep-going " + quote(p) + " > " + quote(mine) + " 2>&1");
        auto a = search_lines(real), b = read_lines(mine);
        if (a == b && !a.empty()) {
            ++same;
            continue;
        }
        failures.push_back(p);
        if (failures.size() <= 3)
            ADD_FAILURE() << p << ":\n" << unified_diff(a, b, suite + " loader", "ldsearch --root");
    }
    std::printf("[ ROOT     ] %s%s: %zu programs in /usr/bin, %zu identical, %zu different\n", suite.c_str(),
                env.empty() ? "" : (", " + env).c_str(), programs.size(), same, failures.size());
    EXPECT_TRUE(failures.empty()) << failures.size() << " programs differ";
}

}  // namespace

TEST(Roots, every_bullseye_program_matches_the_glibc_2_31_loader_without_its_help) {
    every_program_matches("bullseye", "");
}

TEST(Roots, every_bullseye_program_with_library_path_and_dsts_matches_the_glibc_2_31_loader) {
    every_program_matches("bullseye", kLibraryPath);
}

TEST(Roots, every_trixie_program_matches_the_glibc_2_41_loader) { every_program_matches("trixie", ""); }

TEST(Roots, every_trixie_program_with_library_path_and_dsts_matches_the_glibc_2_41_loader) {
    every_program_matches("trixie", kLibraryPath);
}

// glibc 2.43 says after each candidate why it failed ("    (no such file)").
TEST(Roots, every_forky_program_matches_the_glibc_2_43_loader) { every_program_matches("forky", ""); }

TEST(Roots, every_forky_program_with_library_path_and_dsts_matches_the_glibc_2_43_loader) {
    every_program_matches("forky", kLibraryPath);
}
