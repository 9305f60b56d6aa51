// Every dynamic executable in /usr/bin: the real loader under
// LD_TRACE_LOADED_OBJECTS=1 (so nothing runs) against ldsearch --keep-going.
#include "harness.h"

#include <dirent.h>
#include <elf.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

using namespace ldshim::difftest;

namespace {

bool is_native_dynamic_exe(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    Elf64_Ehdr eh{};
    if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return false;
    if (std::string_view(reinterpret_cast<char*>(eh.e_ident), 4) != "\x7f" "ELF") return false;
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) return false;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        f.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
        if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return false;
        if (ph.p_type == PT_INTERP) {
            std::string interp(ph.p_filesz, '\0');
            f.seekg(static_cast<std::streamoff>(ph.p_offset));
            f.read(interp.data(), static_cast<std::streamsize>(interp.size()));
            return interp.c_str() == std::string("/lib64/ld-linux-x86-64.so.2");
        }
    }
    return false;
}

}  // namespace

TEST(SystemPrograms, every_usr_bin_program_matches_the_loader) {
    Tree t;  // scratch space for the captures
    std::vector<std::string> programs;
    if (DIR* d = opendir("/usr/bin")) {
        while (dirent* e = readdir(d)) {
            std::string p = std::string("/usr/bin/") + e->d_name;
            struct stat st {};
            if (stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) continue;
            if (is_native_dynamic_exe(p)) programs.push_back(p);
        }
        closedir(d);
    }
    std::sort(programs.begin(), programs.end());
    ASSERT_GT(programs.size(), 50u) << "too few programs to be a meaningful comparison";

    std::size_t same = 0;
    std::vector<std::string> failures;
    for (const auto& p : programs) {
        // A set-gid program started by root with another group is AT_SECURE,
        // and then glibc 2.36 prints no LD_DEBUG output.  Start both sides
        // with the program's group as the real group, which keeps it non-secure.
        struct stat st {};
        stat(p.c_str(), &st);
        std::string prefix;
        if ((st.st_mode & S_ISGID) && st.st_gid != getgid()) prefix = "setpriv --regid=" + std::to_string(st.st_gid) + " --clear-groups";
        if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) prefix = "setpriv --reuid=" + std::to_string(st.st_uid) + " --clear-groups";
        Capture real = t.real(p, {}, {{"LD_TRACE_LOADED_OBJECTS", "1"}}, prefix + " timeout 20");
        std::string out = t.abs(".out/sys");
        sh(prefix + " env -i PATH=/usr/bin:/bin " + quote(LDSEARCH_PATH) + " --keep-going " + quote(p) + " > " +
           quote(out) + " 2>/dev/null");
        auto mine = read_lines(out);
        if (real.search == mine && !mine.empty()) {
            ++same;
        } else {
            failures.push_back(p);
            if (failures.size() <= 5)
                ADD_FAILURE() << p << ":\n" << unified_diff(real.search, mine, "LD_DEBUG=libs " + p, "ldsearch " + p);
        }
    }
    std::printf("[ SYSTEM   ] %zu programs in /usr/bin, %zu identical, %zu different\n", programs.size(), same,
                failures.size());
    EXPECT_TRUE(failures.empty()) << failures.size() << " programs differ";
}
