// Builds trees of tiny programs and libraries at test time, runs the real
// loader on them under LD_DEBUG=libs, runs ldsearch on the same tree, and
// compares the two.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ldshim::difftest {

// The ldsearch binary under test (ldsearch_path.cc: its path comes from the
// build, -DLDSEARCH_PATH).
const char* ldsearch_path();

using Env = std::vector<std::pair<std::string, std::string>>;

struct LibSpec {
    std::string soname;              // -Wl,-soname (empty: none)
    std::vector<std::string> needs;  // tree-relative libraries to link against
    std::string rpath;               // DT_RPATH (--disable-new-dtags)
    std::string runpath;             // DT_RUNPATH (--enable-new-dtags)
    bool helper = false;             // build helper.c (helper_dlopen) instead of lib.c
    std::vector<std::string> flags;  // extra compiler/linker flags
    std::string source;              // another C file to build instead
};

struct ExeSpec {
    std::vector<std::string> needs;
    std::string rpath;
    std::string runpath;
    bool driver = true;  // dlo.c (the dlopen driver) or main.c
    std::vector<std::string> flags;
    std::string source;  // another C file to build instead
};

struct Capture {
    std::vector<std::string> search;   // LD_DEBUG=libs search lines
    std::vector<std::string> results;  // what each dlopen returned
    std::vector<std::string> errors;   // startup/preload/dlopen error texts
    int status = 0;
};

class Tree {
public:
    Tree();
    ~Tree();
    Tree(const Tree&) = delete;
    Tree& operator=(const Tree&) = delete;

    const std::string& root() const { return root_; }
    // The object that defines helper_dlopen, as ldsearch --from names it.
    std::string helper_name = "libhelper.so";
    std::string abs(const std::string& rel) const { return root_ + "/" + rel; }

    void lib(const std::string& rel, const LibSpec& spec);
    void exe(const std::string& rel, const ExeSpec& spec);
    void lib32(const std::string& rel);  // a 32-bit ELF shared object
    void write(const std::string& rel, const std::string& content);
    void mkdir(const std::string& rel);
    void symlink(const std::string& target, const std::string& rel);
    void set_flags1(const std::string& rel, unsigned long long bits);  // OR into DT_FLAGS_1
    void set_machine(const std::string& rel, unsigned machine);        // rewrite e_machine
    // Change the tag of the first dynamic entry tagged `from` (e.g. turn a
    // DT_SONAME string into a DT_RUNPATH one, to get both RPATH and RUNPATH).
    void retag(const std::string& rel, long long from, long long to);
    void patchelf(const std::vector<std::string>& args);
    // Set the value of the first dynamic entry tagged `tag`; write raw bytes.
    void set_dyn(const std::string& rel, long long tag, unsigned long long value);
    void overwrite(const std::string& rel, std::uint64_t offset, const void* bytes, std::size_t n);
    // The Julia-shaped layout of the resolver and repro tests: bin/prog
    // (RPATH $ORIGIN/../lib unless `exe` says otherwise) needs
    // lib/libjulia.so.1, whose helper_dlopen is the dlopen caller.
    void julia(LibSpec libjulia, ExeSpec exe = {});

    // The real loader: `cd root && env -i VARS LD_DEBUG=libs PROG OPS...`.
    // `prefix` is a command put before env (setpriv, unshare ...).
    Capture real(const std::string& prog, const std::vector<std::string>& ops, const Env& env = {},
                 const std::string& prefix = "") const;
    // ldsearch on the same program, with the same ops and environment.
    Capture emulated(const std::string& prog, const std::vector<std::string>& ops, const Env& env = {},
                     const std::vector<std::string>& extra_args = {}) const;

private:
    std::string root_;
};

// Runs a shell command; returns its exit status.  Output goes to the files.
int sh(const std::string& cmd);
std::string quote(const std::string& s);
std::vector<std::string> read_lines(const std::string& path);
std::string read_file(const std::string& path);
// The files matching a glob pattern, sorted.
std::vector<std::string> read_lines_glob(const std::string& pattern);

// The number in environment variable `name`, or `fallback` where it is
// unset or empty.
std::uint64_t env_number(const char* name, std::uint64_t fallback);

// Every regular executable in /usr/bin that is a 64-bit x86-64 program run by
// /lib64/ld-linux-x86-64.so.2, sorted; `skip_setid` leaves set-id ones out.
std::vector<std::string> usr_bin_programs(bool skip_setid);

// A unified diff between two line sequences (empty when equal).
// The LD_DEBUG=libs lines ldsearch reproduces (after the "PID:\t" prefix):
// the four of every glibc, and glibc 2.43's notes on a failed candidate.
bool is_search_line(const std::string& payload);

std::string unified_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         const std::string& label_a, const std::string& label_b);

}  // namespace ldshim::difftest
