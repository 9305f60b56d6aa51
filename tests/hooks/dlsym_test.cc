// dlsym and dlvsym under the CUDA hooks answer what glibc answers the
// caller.  A pool of libraries (tests/hooks/fixtures/symlib.c) defines the
// same names in several places, versioned and not, with an IFUNC and the
// hooked CUDA names among them; symgen.c opens them in every way (global,
// local, lazy, deepbind, nodelete, dlmopen namespaces, RTLD_NOLOAD, dlclose)
// and looks names up from the main program and from each library through
// RTLD_DEFAULT, RTLD_NEXT and handles, printing what each answer is (the
// definitions return their own ids) and dlerror()'s text.  The same
// operations run without ldshim and with the preload and
// LDSHIM_CUDA_HOOKS=1 must print the same lines.  The random operations
// come from seeds (LDSHIM_DLSYM_SEED, LDSHIM_DLSYM_RUNS processes of
// LDSHIM_DLSYM_OPS operations each); a difference is shrunk to the fewest
// operations that still show it, printed as a script for a scenario test.
// LDSHIM_TEST_PRELOAD names another preload to check (an installed one).
#include "differential/harness.h"
#include "fixture_cc.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <ctime>
#include <sstream>
#include <string>
#include <vector>

using ldshim::difftest::env_number;
using ldshim::difftest::quote;
using ldshim::difftest::read_file;
using ldshim::difftest::sh;

namespace {

const std::string kFixtures = FIXTURE_DIR;

// The pool: which library needs which, and the ids of what it defines.
struct PoolLib {
    int n;
    const char* needs;
    const char* defs;
};
constexpr PoolLib kPool[] = {
    {3, "", "-DDEF_common=31 -DDEF_ifunc=32 -DDEF_deep=33 -DDEF_common2=34"},
    {4, "", "-DDEF_cudaMalloc=41 -DDEF_cudaFree=42 -DDEF_vsym1=43 -Wl,--version-script=symlib_cudart.map"},
    {6, "", "-DDEF_cudaMalloc=61 -DDEF_cuMemAlloc_v2=62 -DDEF_common=63"},
    {1, "3", "-DDEF_common=11 -DDEF_cudaMalloc=12"},
    {2, "3 4", "-DDEF_vsym1=21 -DDEF_vsym2=22 -DDEF_deep=23 -Wl,--version-script=symlib_vers.map"},
    {5, "4 6", "-DDEF_only=51 -DDEF_common2=52"},
    {7, "3", "-DDEF_cuMemAlloc_v2=71 -DDEF_cuMemFree_v2=72 -DDEF_deep=73 -DDEF_only=74"},
    {0, "1 2", "-DDEF_common=1 -DDEF_only=2"},
};

class DlsymScopes : public ::testing::Test {
protected:
    // The dlsym hooks are written only with the CUDA hooks.
    void SetUp() override {
        if (!HAVE_CUDA_HOOKS)
            GTEST_SKIP() << "SKIPPED: libldshim was built without CUDA headers (option cudatoolkit_include), so it "
                            "has no CUDA hooks";
    }
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/ldshim-dlsym-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = new std::string(tmpl);
        const std::string cc = FIXTURE_CC " -std=gnu11 -O1 -Wall -Werror ";
        for (const PoolLib& lib : kPool) {
            std::string needs;
            std::istringstream in(lib.needs);
            for (std::string n; in >> n;) needs += " -lsg" + n;
            std::string defs = lib.defs;
            for (const char* map : {"symlib_cudart.map", "symlib_vers.map"})
                if (auto at = defs.find(map); at != std::string::npos) defs.replace(at, 0, kFixtures + "/");
            ASSERT_EQ(sh("cd " + quote(*dir_) + " && " + cc + "-shared -fPIC -DLIB=sg" + std::to_string(lib.n) + " " +
                         defs + " -o libsg" + std::to_string(lib.n) + ".so " + quote(kFixtures + "/symlib.c") +
                         " -L. -Wl,--no-as-needed" + needs + " -Wl,-rpath,'$ORIGIN'"),
                      0);
        }
        ASSERT_EQ(sh(cc + "-o " + quote(*dir_ + "/symgen") + " " + quote(kFixtures + "/symgen.c") + " -ldl"), 0);
    }
    static void TearDownTestSuite() {
        if (dir_ && !std::getenv("LDSHIM_KEEP_TEST_DIRS")) sh("rm -rf " + quote(*dir_));
        delete dir_;
        dir_ = nullptr;
    }

    // symgen's output and exit status for ARGS, without ldshim or with the
    // preload and the hooks.
    static std::string preload() {
        const char* other = std::getenv("LDSHIM_TEST_PRELOAD");
        return other && *other ? other : PRELOAD_LIB_PATH;
    }
    static std::string run(const std::string& args, bool hooks) {
        const std::string out = *dir_ + (hooks ? "/hooks.out" : "/plain.out");
        const std::string env = hooks ? "LD_PRELOAD=" + quote(preload()) + " LDSHIM_CUDA_HOOKS=1 " : "";
        // The variables reach symgen alone, not timeout (under qemu-user a
        // program of another machine, whose loader would warn of the preload).
        const int rc = sh("timeout 60 env " + env + quote(*dir_ + "/symgen") + " " + quote(*dir_) + " " + args + " > " +
                          quote(out) + " 2>&1");
        return read_file(out) + "exit " + std::to_string(rc) + "\n";
    }
    static std::string script(const std::vector<std::string>& ops) {
        std::string s;
        for (const auto& op : ops) s += op + ";";
        return "script " + quote(s);
    }
    static bool differs(const std::vector<std::string>& ops) {
        return run(script(ops), false) != run(script(ops), true);
    }
    // The seed's operations, cut after the first one whose line differs,
    // then without each earlier one whose removal keeps a difference.
    static std::vector<std::string> shrink(std::uint64_t seed, int count) {
        std::vector<std::string> ops;
        std::istringstream in(run("print " + std::to_string(seed) + " " + std::to_string(count), false));
        for (std::string op; std::getline(in, op, ';');)
            if (op.find('\n') == std::string::npos) ops.push_back(op);
        std::size_t keep = 1;
        while (keep < ops.size() && !differs({ops.begin(), ops.begin() + static_cast<long>(keep)})) ++keep;
        ops.resize(keep);
        for (std::size_t i = ops.size() - 1; i-- > 0;) {
            auto fewer = ops;
            fewer.erase(fewer.begin() + static_cast<long>(i));
            if (differs(fewer)) ops = fewer;
        }
        return ops;
    }
    // The scenario's lines with and without the hooks, which must agree;
    // returns them.
    static std::string same_with_and_without_hooks(const std::vector<std::string>& ops) {
        const std::string plain = run(script(ops), false), hooked = run(script(ops), true);
        EXPECT_EQ(plain, hooked);
        EXPECT_NE(plain.find("exit 0\n"), std::string::npos) << plain;
        return hooked;
    }

    static std::string* dir_;
};
std::string* DlsymScopes::dir_ = nullptr;

TEST_F(DlsymScopes, random_lookups_answer_as_without_the_hooks) {
    const std::uint64_t seed = env_number("LDSHIM_DLSYM_SEED", static_cast<std::uint64_t>(std::time(nullptr)) / 86400);
    // Under an emulator (LDSHIM_TEST_EMULATOR: the aarch64 build's runs) a
    // process costs about twenty times as much.
    const std::uint64_t runs = env_number("LDSHIM_DLSYM_RUNS", std::getenv("LDSHIM_TEST_EMULATOR") ? 30 : 150);
    const int ops = static_cast<int>(env_number("LDSHIM_DLSYM_OPS", 200));
    std::cout << "base seed " << seed << ", " << runs << " processes of " << ops
              << " operations (LDSHIM_DLSYM_SEED, LDSHIM_DLSYM_RUNS, LDSHIM_DLSYM_OPS)\n";
    std::uint64_t lookups = 0, different = 0;
    for (std::uint64_t i = 0; i < runs && different < 3; ++i) {
        const std::string args = "seed " + std::to_string(seed * 1000003 + i) + " " + std::to_string(ops);
        const std::string plain = run(args, false), hooked = run(args, true);
        for (std::size_t at = 0; (at = plain.find(" ask ", at)) != std::string::npos; ++at) ++lookups;
        if (plain == hooked) continue;
        ++different;
        const auto small = shrink(seed * 1000003 + i, ops);
        ADD_FAILURE() << "seed " << seed * 1000003 + i << " differs; shrunk to " << small.size()
                      << " operations:\n  symgen DIR " << script(small) << "\nwithout hooks:\n"
                      << run(script(small), false) << "with hooks:\n"
                      << run(script(small), true);
    }
    std::cout << lookups << " lookups in " << runs << " processes, " << different << " processes different\n";
    EXPECT_GT(lookups, runs * static_cast<std::uint64_t>(ops) / 2);
}

// The report's crash: libc10, a dependency of an extension module Python
// loaded RTLD_LOCAL, asks RTLD_DEFAULT for a name nobody defines.
TEST_F(DlsymScopes, a_dependency_of_a_local_group_asks_the_default_scope_for_a_name_defined_nowhere) {
    const std::string out = same_with_and_without_hooks({"open 0 -", "ask h0:3 default missing"});
    EXPECT_NE(out.find("-> null err=" + *dir_ + "/libsg3.so: undefined symbol: missing"), std::string::npos) << out;
}

// RTLD_DEFAULT from a dependency of a local group: the global scope, then
// the whole group from its root (sg0 before sg1 before sg3).
TEST_F(DlsymScopes, a_dependency_of_a_local_group_finds_its_roots_definition) {
    const std::string out = same_with_and_without_hooks({"open 0 -", "ask h0:3 default common"});
    EXPECT_NE(out.find("common  -> 1 err=none"), std::string::npos) << out;
}

// Two libraries define cudaMalloc; each caller reaches its own, hooked or not.
TEST_F(DlsymScopes, two_libraries_define_a_hooked_name_and_each_caller_reaches_its_own) {
    const std::string out = same_with_and_without_hooks(
        {"open 1 -", "open 6 -", "ask h0:1 default cudaMalloc", "ask h1:6 default cudaMalloc"});
    EXPECT_NE(out.find("cudaMalloc  -> 12 "), std::string::npos) << out;
    EXPECT_NE(out.find("cudaMalloc  -> 61 "), std::string::npos) << out;
}

// A hooked name found in a library that was then unloaded, and again after
// another library took its place: the hook must not call the old address.
TEST_F(DlsymScopes, a_hooked_name_is_looked_up_again_after_its_library_was_unloaded) {
    const std::string out = same_with_and_without_hooks(
        {"open 4 -", "ask h0:4 h0 cudaFree", "close h0", "open 7 -", "open 4 -", "ask h2:4 default cudaFree"});
    EXPECT_NE(out.find("#5 ask h2:sg4 default cudaFree  -> 42"), std::string::npos) << out;
}

// dlvsym: the runtime's version, an older version, a version nobody has.
TEST_F(DlsymScopes, versioned_lookups_find_the_version_asked_for) {
    const std::string out =
        same_with_and_without_hooks({"open 2 g", "ask main default cudaMalloc libcudart.so.13", "ask main default vsym",
                                     "ask main h0 vsym VERS_1", "ask h0:2 next vsym VERS_1", "ask main h0 vsym NOPE"});
    EXPECT_NE(out.find("cudaMalloc libcudart.so.13 -> 41"), std::string::npos) << out;
    EXPECT_NE(out.find("ask main default vsym  -> 22"), std::string::npos) << out;
    EXPECT_NE(out.find("ask main h0 vsym VERS_1 -> 21"), std::string::npos) << out;
    EXPECT_NE(out.find("ask h0:sg2 next vsym VERS_1 -> 43"), std::string::npos) << out;
    EXPECT_NE(out.find("undefined symbol: vsym, version NOPE"), std::string::npos) << out;
}

// The caller in another namespace, and a deepbind library that finds its own
// group first.
TEST_F(DlsymScopes, callers_in_a_dlmopen_namespace_and_a_deepbind_library_see_their_own_scopes) {
    const std::string out =
        same_with_and_without_hooks({"open 6 g", "mopen 1 new", "ask h1:1 default cudaMalloc", "open 0 d",
                                     "ask h2:0 default common", "ask main default cudaMalloc"});
    EXPECT_NE(out.find("ask h1:sg1 default cudaMalloc  -> 12"), std::string::npos) << out;
    EXPECT_NE(out.find("ask h2:sg0 default common  -> 1"), std::string::npos) << out;
    EXPECT_NE(out.find("ask main default cudaMalloc  -> 61"), std::string::npos) << out;
}

// The hooks are in place in the hooked runs: the pool's dlsym slots are
// written, so the scenarios above went through them.
TEST_F(DlsymScopes, the_hooked_runs_go_through_ldshims_dlsym) {
    const std::string log = *dir_ + "/hooks.log";
    ASSERT_EQ(sh("LDSHIM_HOOKS_LOG=" + quote(log) + " LD_PRELOAD=" + quote(preload()) + " LDSHIM_CUDA_HOOKS=1 " +
                 quote(*dir_ + "/symgen") + " " + quote(*dir_) + " " +
                 script({"open 0 -", "ask h0:3 default cudaMalloc"}) + " > /dev/null"),
              0);
    const std::string text = read_file(log);
    EXPECT_NE(text.find("patched\t<main program>\tdlsym"), std::string::npos) << text;
    EXPECT_NE(text.find("/libsg3.so\tdlsym"), std::string::npos) << text;
}

}  // namespace
