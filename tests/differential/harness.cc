#include "harness.h"
#include "../support/test_machine.h"
#include "fixture_cc.h"

#include <dirent.h>
#include <elf.h>
#include <glob.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name tests/differential/fixtures"
#endif

namespace ldshim::difftest {
namespace {

void must(int rc, const std::string& what) {
    if (rc != 0) throw std::runtime_error("fixture step failed (" + std::to_string(rc) + "): " + what);
}

// Every library name this machine could hand out without our trees: the
// ld.so.cache entries and the files of the default directories.  A fixture
// with one of these names would make a test depend on what else is installed
// (R's /usr/lib/libR.so once did).
const std::set<std::string>& installed_library_names() {
    static const std::set<std::string> names = [] {
        std::set<std::string> n;
        if (FILE* p = popen("/sbin/ldconfig -p 2>/dev/null", "r")) {
            char line[4096];
            while (fgets(line, sizeof line, p)) {
                std::string l = line;
                auto start = l.find_first_not_of(" \t");
                auto end = l.find(" (");
                if (start != std::string::npos && end != std::string::npos && end > start)
                    n.insert(l.substr(start, end - start));
            }
            pclose(p);
        }
        for (const std::string& dir :
             {std::string("/lib"), std::string("/usr/lib"), std::string("/lib64"), std::string("/usr/lib64"),
              "/" + testmachine::lib_dir(), "/usr/" + testmachine::lib_dir()}) {
            if (DIR* d = opendir(dir.c_str())) {
                while (dirent* e = readdir(d)) n.insert(e->d_name);
                closedir(d);
            }
        }
        return n;
    }();
    return names;
}

void require_unique_name(const std::string& name) {
    if (!name.empty() && installed_library_names().count(name))
        throw std::runtime_error("fixture name " + name + " is also an installed library; choose another");
}

std::string join_flags(const std::vector<std::string>& v) {
    std::string s;
    // Appended piecewise: `" " + quote(f)` at -O3 trips GCC 12's -Wrestrict
    // false positive (GCC PR 105651).
    for (const auto& f : v) s.append(" ").append(quote(f));
    return s;
}

// -L dir -l:file for each needed library, so DT_NEEDED is its SONAME or file name.
std::string link_args(const std::string& root, const std::vector<std::string>& needs) {
    std::string s = " -Wl,--no-as-needed";
    for (const auto& n : needs) {
        auto slash = n.rfind('/');
        std::string dir = slash == std::string::npos ? "." : n.substr(0, slash);
        std::string file = slash == std::string::npos ? n : n.substr(slash + 1);
        s += " -L" + quote(root + "/" + dir) + " -l:" + quote(file);
    }
    return s;
}

std::string path_args(const std::string& rpath, const std::string& runpath) {
    std::string s;
    if (!rpath.empty()) s += " -Wl,--disable-new-dtags -Wl,-rpath," + quote(rpath);
    if (!runpath.empty()) s += " -Wl,--enable-new-dtags -Wl,-rpath," + quote(runpath);
    return s;
}

std::string env_args(const Env& env) {
    std::string s;
    for (const auto& [k, v] : env) s += " " + quote(k + "=" + v);
    return s;
}

// Variables that change the loader's view of the CPU travel to both runs.
std::string cpu_env() {
    std::string s;
    for (const char* v : {"GLIBC_TUNABLES", "LD_HWCAP_MASK"})
        if (const char* x = getenv(v)) s += " " + quote(std::string(v) + "=" + x);
    return s;
}

}  // namespace

bool is_search_line(const std::string& l) {
    return l.starts_with("find library=") || l.starts_with(" search path=") || l.starts_with("  trying file=") ||
           l.starts_with(" search cache=") || l.starts_with("    (") || l.starts_with("  refusing to load file=");
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        if (c == '\'')
            q += "'\\''";
        else
            q += c;
    }
    return q + "'";
}

int sh(const std::string& cmd) {
    int rc = std::system(cmd.c_str());
    if (rc == -1) return -1;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> read_lines_glob(const std::string& pattern) {
    std::vector<std::string> out;
    glob_t g{};
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    return out;
}

namespace {
bool is_native_dynamic_exe(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    Elf64_Ehdr eh{};
    if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return false;
    if (std::string_view(reinterpret_cast<char*>(eh.e_ident), 4) !=
        "\x7f"
        "ELF")
        return false;
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

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::vector<std::string> usr_bin_programs(bool skip_setid) {
    std::vector<std::string> programs;
    if (DIR* d = opendir("/usr/bin")) {
        while (dirent* e = readdir(d)) {
            std::string p = std::string("/usr/bin/") + e->d_name;
            struct stat st {};
            if (stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) continue;
            if (skip_setid && (st.st_mode & (S_ISUID | S_ISGID))) continue;
            if (is_native_dynamic_exe(p)) programs.push_back(p);
        }
        closedir(d);
    }
    std::sort(programs.begin(), programs.end());
    return programs;
}

std::vector<std::string> read_lines(const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

Tree::Tree() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ldshim-diff-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    mkdir(".out");
}

Tree::~Tree() {
    if (!getenv("LDSHIM_KEEP_TREES")) sh("rm -rf " + quote(root_));
}

void Tree::mkdir(const std::string& rel) { must(sh("mkdir -p " + quote(abs(rel))), "mkdir " + rel); }

void Tree::write(const std::string& rel, const std::string& content) {
    auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdir(rel.substr(0, slash));
    std::ofstream(abs(rel), std::ios::binary) << content;
}

void Tree::symlink(const std::string& target, const std::string& rel) {
    auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdir(rel.substr(0, slash));
    must(::symlink(target.c_str(), abs(rel).c_str()), "symlink " + rel);
}

void Tree::lib(const std::string& rel, const LibSpec& spec) {
    auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdir(rel.substr(0, slash));
    require_unique_name(slash == std::string::npos ? rel : rel.substr(slash + 1));
    require_unique_name(spec.soname);
    std::string src =
        !spec.source.empty() ? spec.source : std::string(FIXTURE_DIR) + (spec.helper ? "/helper.c" : "/lib.c");
    std::string cmd = FIXTURE_CC " -O0 -shared -fPIC -o " + quote(abs(rel)) + " " + quote(src);
    if (!spec.soname.empty()) cmd += " -Wl,-soname," + quote(spec.soname);
    cmd += link_args(root_, spec.needs) + path_args(spec.rpath, spec.runpath) + join_flags(spec.flags);
    if (spec.helper || !spec.source.empty()) cmd += " -ldl";
    must(sh(cmd), cmd);
}

void Tree::lib32(const std::string& rel) {
    auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdir(rel.substr(0, slash));
    if (*FIXTURE_CC32) {
        std::string cmd = FIXTURE_CC32 " -shared -nostdlib -fPIC -o " + quote(abs(rel)) + " " +
                          quote(std::string(FIXTURE_DIR) + "/lib.c");
        must(sh(cmd), cmd);
        return;
    }
    // No compiler of 32-bit objects (a native aarch64 build): the loader
    // rejects a candidate on its ELF header's class before anything else, so
    // a 32-bit shared object's header, padded to the loader's first read, is
    // what it sees of one.
    Elf32_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS32;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = EM_ARM;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    std::string bytes(reinterpret_cast<const char*>(&eh), sizeof eh);
    write(rel, bytes + std::string(512 - sizeof eh, '\0'));
}

void Tree::exe(const std::string& rel, const ExeSpec& spec) {
    auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdir(rel.substr(0, slash));
    std::string src =
        !spec.source.empty() ? spec.source : std::string(FIXTURE_DIR) + (spec.driver ? "/dlo.c" : "/main.c");
    std::string cmd = FIXTURE_CC " -O0 -o " + quote(abs(rel)) + " " + quote(src);
    cmd += link_args(root_, spec.needs) + path_args(spec.rpath, spec.runpath) + join_flags(spec.flags) + " -ldl";
    must(sh(cmd), cmd);
}

void Tree::julia(LibSpec libjulia, ExeSpec exe) {
    libjulia.soname = "libjulia.so.1";
    libjulia.helper = true;
    lib("lib/libjulia.so.1", libjulia);
    helper_name = "libjulia.so.1";
    exe.needs.insert(exe.needs.begin(), "lib/libjulia.so.1");
    if (exe.rpath.empty() && exe.runpath.empty()) exe.rpath = "$ORIGIN/../lib";
    this->exe("bin/prog", exe);
}

void Tree::patchelf(const std::vector<std::string>& args) {
    std::string cmd = "cd " + quote(root_) + " && patchelf";
    for (const auto& a : args) cmd.append(" ").append(quote(a));
    must(sh(cmd), cmd);
}

void Tree::set_machine(const std::string& rel, unsigned machine) {
    std::fstream f(abs(rel), std::ios::in | std::ios::out | std::ios::binary);
    std::uint16_t m = static_cast<std::uint16_t>(machine);
    f.seekp(offsetof(Elf64_Ehdr, e_machine));
    f.write(reinterpret_cast<const char*>(&m), sizeof m);
    if (!f) throw std::runtime_error("set_machine failed on " + rel);
}

namespace {
// Calls fn(dyn, offset) for each dynamic entry until it returns true.
template <typename Fn>
bool for_each_dyn(std::fstream& f, Fn fn) {
    Elf64_Ehdr eh{};
    f.read(reinterpret_cast<char*>(&eh), sizeof eh);
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        f.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
        f.read(reinterpret_cast<char*>(&ph), sizeof ph);
        if (ph.p_type != PT_DYNAMIC) continue;
        for (std::uint64_t off = ph.p_offset; off + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz;
             off += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d{};
            f.seekg(static_cast<std::streamoff>(off));
            f.read(reinterpret_cast<char*>(&d), sizeof d);
            if (d.d_tag == DT_NULL) break;
            if (fn(d, off)) return true;
        }
    }
    return false;
}
}  // namespace

void Tree::retag(const std::string& rel, long long from, long long to) {
    std::fstream f(abs(rel), std::ios::in | std::ios::out | std::ios::binary);
    bool done = for_each_dyn(f, [&](Elf64_Dyn& d, std::uint64_t off) {
        if (d.d_tag != from) return false;
        d.d_tag = to;
        f.seekp(static_cast<std::streamoff>(off));
        f.write(reinterpret_cast<const char*>(&d), sizeof d);
        return true;
    });
    if (!done) throw std::runtime_error("no dynamic tag " + std::to_string(from) + " in " + rel);
}

void Tree::set_flags1(const std::string& rel, unsigned long long bits) {
    std::fstream f(abs(rel), std::ios::in | std::ios::out | std::ios::binary);
    bool done = for_each_dyn(f, [&](Elf64_Dyn& d, std::uint64_t off) {
        if (d.d_tag != DT_FLAGS_1) return false;
        d.d_un.d_val |= bits;
        f.seekp(static_cast<std::streamoff>(off));
        f.write(reinterpret_cast<const char*>(&d), sizeof d);
        return true;
    });
    if (!done) throw std::runtime_error("no DT_FLAGS_1 in " + rel + " (link it as PIE)");
}

void Tree::set_dyn(const std::string& rel, long long tag, unsigned long long value) {
    std::fstream f(abs(rel), std::ios::in | std::ios::out | std::ios::binary);
    bool done = for_each_dyn(f, [&](Elf64_Dyn& d, std::uint64_t off) {
        if (d.d_tag != tag) return false;
        d.d_un.d_val = value;
        f.seekp(static_cast<std::streamoff>(off));
        f.write(reinterpret_cast<const char*>(&d), sizeof d);
        return true;
    });
    if (!done) throw std::runtime_error("no dynamic tag " + std::to_string(tag) + " in " + rel);
}

void Tree::overwrite(const std::string& rel, std::uint64_t offset, const void* bytes, std::size_t n) {
    std::fstream f(abs(rel), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
    if (!f) throw std::runtime_error("cannot patch " + rel);
}

Capture Tree::real(const std::string& prog, const std::vector<std::string>& ops, const Env& env,
                   const std::string& prefix) const {
    std::string out = abs(".out/real");
    sh("rm -f " + quote(out) + ".*");
    std::string cmd = "cd " + quote(root_) + " && " + prefix + " env -i PATH=/usr/bin:/bin" + cpu_env() +
                      env_args(env) + " LD_DEBUG=libs LD_DEBUG_OUTPUT=" + quote(out + ".dbg") + " " + quote(prog);
    for (const auto& o : ops) cmd += " " + quote(o);
    cmd += " >" + quote(out + ".stdout") + " 2>" + quote(out + ".stderr") + " </dev/null";
    Capture r;
    r.status = sh(cmd);
    glob_t g{};
    if (glob((out + ".dbg.*").c_str(), 0, nullptr, &g) == 0) {
        for (std::size_t i = 0; i < g.gl_pathc; ++i)
            for (auto& l : read_lines(g.gl_pathv[i])) {
                // Drop the "%10d:\t" PID prefix.
                auto tab = l.find(":\t");
                std::string payload = tab == std::string::npos ? l : l.substr(tab + 2);
                if (is_search_line(payload)) r.search.push_back(payload);
            }
        globfree(&g);
    }
    for (auto& l : read_lines(out + ".stderr")) r.errors.push_back(l);
    for (auto& l : read_lines(out + ".stdout")) {
        if (l.starts_with("RESULT ")) r.results.push_back(l.substr(7));
        if (l.starts_with("ERROR ")) r.errors.push_back(l.substr(6));
    }
    return r;
}

Capture Tree::emulated(const std::string& prog, const std::vector<std::string>& ops, const Env& env,
                       const std::vector<std::string>& extra_args) const {
    std::string out = abs(".out/emu");
    std::string cmd = "cd " + quote(root_) + " && env -i PATH=/usr/bin:/bin" + cpu_env();
    // CPU-view variables reach ldsearch's own environment: it asks ld.so.
    for (const auto& [k, v] : env)
        if (k == "GLIBC_TUNABLES" || k == "LD_HWCAP_MASK") cmd += " " + quote(k + "=" + v);
    cmd += " " + quote(ldsearch_path());
    for (const auto& [k, v] : env) {
        if (k == "LD_LIBRARY_PATH" || k == "LD_PRELOAD" || k == "LD_ORIGIN_PATH") cmd += " --env " + quote(k + "=" + v);
    }
    for (const auto& a : extra_args) cmd += " " + quote(a);
    for (const auto& o : ops) {
        std::string name = o.substr(2);
        switch (o[0]) {
            case 'o': cmd += " --from " + quote(prog) + " --dlopen " + quote(name); break;
            case 'n': cmd += " --from " + quote(prog) + " --dlopen-noload " + quote(name); break;
            case 'm': cmd += " --from " + quote(prog) + " --dlmopen " + quote(name); break;
            case 'l': cmd += " --from " + quote(helper_name) + " --dlopen " + quote(name); break;
            case 'z': cmd += " --from " + quote(prog) + " --dlopen ''"; break;
            default: throw std::runtime_error("bad op " + o);
        }
    }
    cmd += " -- " + quote(prog) + " >" + quote(out + ".stdout") + " 2>" + quote(out + ".stderr") + " </dev/null";
    Capture r;
    r.status = sh(cmd);
    for (auto& l : read_lines(out + ".stdout")) {
        if (is_search_line(l))
            r.search.push_back(l);
        else
            r.results.push_back(l);
    }
    r.errors = read_lines(out + ".stderr");
    return r;
}

std::string unified_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         const std::string& label_a, const std::string& label_b) {
    if (a == b) return {};
    char dir[] = "/tmp/ldshim-udiff-XXXXXX";
    if (!mkdtemp(dir)) return "(cannot create a diff directory)";
    std::string d = dir;
    auto dump = [](const std::string& p, const std::vector<std::string>& v) {
        std::ofstream o(p);
        for (const auto& l : v) o << l << '\n';
    };
    dump(d + "/a", a);
    dump(d + "/b", b);
    sh("diff -u --label " + quote(label_a) + " --label " + quote(label_b) + " " + quote(d + "/a") + " " +
       quote(d + "/b") + " > " + quote(d + "/diff"));
    std::ifstream in(d + "/diff");
    std::stringstream ss;
    ss << in.rdbuf();
    sh("rm -rf " + quote(d));
    return ss.str();
}

}  // namespace ldshim::difftest
