// Other glibc versions: Debian's own releases as roots (scripts/roots.sh
// debootstraps bullseye, glibc 2.31, trixie, glibc 2.41, and forky, glibc
// 2.43).  Every
// dynamic program in a root's /usr/bin, run in the root by that root's own
// loader under LD_TRACE_LOADED_OBJECTS=1 (nothing runs) with LD_DEBUG=libs,
// against `ldsearch --root ROOT --keep-going PROGRAM` run here.  The bullseye
// loader has no --help: ldsearch learns it from its own probe search.
// And glibc built from source into the upstream lib64 layout
// (scripts/glibc-roots.sh: RHEL 8's and 9's, 2.28, 2.34, 2.35, 2.39): the
// programs glibc itself installs, run by a static busybox env.
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

std::string glibc_roots_dir() {
    const char* d = std::getenv("LDSHIM_GLIBC_ROOTS_DIR");
    return d && *d ? d : "/var/cache/ldshim/glibc-roots";
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

// The root's programs in `dirs`, by their path inside the root (links left
// out: the file they name is in the list, or is not the root's).
std::vector<std::string> programs_of(const std::string& root, const std::vector<std::string>& dirs) {
    std::vector<std::string> out;
    for (const auto& dir : dirs)
        if (DIR* d = opendir((root + dir).c_str())) {
            while (dirent* e = readdir(d)) {
                std::string inside = dir + "/" + e->d_name;
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

// Where a root's programs are and how it is run: a Debian root's own
// /usr/bin and env, or a glibc root's tools and busybox env.
struct RootKind {
    std::string dir, made_by, env_program;
    std::vector<std::string> program_dirs;
    std::size_t min_programs;
};
const RootKind kDebian{roots_dir(), "scripts/roots.sh", "/usr/bin/env", {"/usr/bin"}, 30};
const RootKind kGlibc{glibc_roots_dir(), "scripts/glibc-roots.sh", "/bin/env", {"/usr/bin", "/usr/sbin", "/sbin"}, 8};

void every_program_matches(const std::string& suite, const std::string& env, const RootKind& kind = kDebian) {
    std::string root = kind.dir + "/" + suite;
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: running the root's loader in it needs chroot(2), root only";
    struct stat env_st {};  // lstat: busybox's links name /bin/busybox inside the root
    if (lstat((root + kind.env_program).c_str(), &env_st) != 0)
        GTEST_SKIP() << "SKIPPED: no " << suite << " root at " << root << " (" << kind.made_by << " makes it)";
    Tree t;
    auto programs = programs_of(root, kind.program_dirs);
    ASSERT_GE(programs.size(), kind.min_programs) << "too few programs in " << root;
    std::size_t same = 0;
    std::vector<std::string> failures;
    for (const auto& p : programs) {
        std::string id = identity_of(root + p);
        std::string real = t.abs(".out/real"), mine = t.abs(".out/mine");
        sh(id + "chroot " + quote(root) + " " + kind.env_program + " -i " + env +
           " LD_TRACE_LOADED_OBJECTS=1 LD_DEBUG=libs " + quote(p) + " > /dev/null 2> " + quote(real) + " < /dev/null");
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
    std::printf("[ ROOT     ] %s%s: %zu programs, %zu identical, %zu different\n", suite.c_str(),
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

// glibc from source, upstream lib64 layout (scripts/glibc-roots.sh).  RHEL 8:
// 2.28 with 2.33's glibc-hwcaps and the legacy subdirectories both searched.
TEST(Roots, every_rhel8_glibc_program_matches_its_loader) { every_program_matches("rhel8", kLibraryPath, kGlibc); }
TEST(Roots, every_rhel9_glibc_program_matches_its_loader) { every_program_matches("rhel9", kLibraryPath, kGlibc); }
TEST(Roots, every_glibc_2_28_program_matches_its_loader) { every_program_matches("2.28", kLibraryPath, kGlibc); }
TEST(Roots, every_glibc_2_34_program_matches_its_loader) { every_program_matches("2.34", kLibraryPath, kGlibc); }
TEST(Roots, every_glibc_2_35_program_matches_its_loader) { every_program_matches("2.35", kLibraryPath, kGlibc); }
TEST(Roots, every_glibc_2_39_program_matches_its_loader) { every_program_matches("2.39", kLibraryPath, kGlibc); }
