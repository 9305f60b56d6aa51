// The loader's environment is what ld.so read at start-up: a program that
// changes LD_LIBRARY_PATH (or LD_PRELOAD) before or after its first dlopen
// changes nothing of glibc's search, so nothing of ldshim's either.  Each
// scenario runs in fresh processes: glibc alone, under libldshim_preload.so,
// and with libldshim dlopen'ed late by path and asked through
// ldshim_dlopen_from; all must print the same, and ldshim must have answered.
#include "../differential/harness.h"
#include "fixture_cc.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#ifndef LDSHIM_LIB_PATH
#error "LDSHIM_LIB_PATH must name libldshim.so"
#endif
#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif
#ifndef LDSEARCH_PATH
#error "LDSEARCH_PATH must name ldsearch"
#endif
#ifndef ENV_PROG_SRC
#error "ENV_PROG_SRC must name tests/resolver/fixtures/env_prog.c"
#endif

using namespace ldshim::difftest;

namespace {

// A/ holds libenv_a.so and libenv_both.so, B/ libenv_b.so and another
// libenv_both.so; the program starts with LD_LIBRARY_PATH=A unless a
// scenario says otherwise.
class Environment : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        tree_ = new Tree;
        tree_->lib("A/libenv_a.so", LibSpec{"libenv_a.so"});
        tree_->lib("A/libenv_both.so", LibSpec{"libenv_both.so"});
        tree_->lib("B/libenv_b.so", LibSpec{"libenv_b.so"});
        ASSERT_EQ(sh("cp " + quote(tree_->abs("A/libenv_both.so")) + " " + quote(tree_->abs("B/libenv_both.so"))), 0);
        std::string cmd = FIXTURE_CC " -O0 -o " + quote(tree_->abs("prog")) + " " + quote(ENV_PROG_SRC) + " -ldl";
        ASSERT_EQ(sh(cmd), 0) << cmd;
    }
    static void TearDownTestSuite() {
        delete tree_;
        tree_ = nullptr;
    }

    static std::string a() { return "LD_LIBRARY_PATH=" + tree_->abs("A"); }
    static std::string b() { return "LD_LIBRARY_PATH=" + tree_->abs("B"); }

    struct Run {
        std::string out, err;
    };
    // The program with exactly `env` (duplicates kept) and `ops`; or
    // another program, with `ops` its arguments.
    static Run run(std::vector<std::string> env, const std::vector<std::string>& ops, std::string program = {}) {
        std::string out = tree_->abs("out.txt"), err = tree_->abs("err.txt");
        std::vector<std::string> args{program.empty() ? tree_->abs("prog") : program};
        args.insert(args.end(), ops.begin(), ops.end());
        std::vector<char*> argv, envp;
        for (auto& s : args) argv.push_back(s.data());
        argv.push_back(nullptr);
        for (auto& s : env) envp.push_back(s.data());
        envp.push_back(nullptr);
        pid_t pid = fork();
        if (pid == 0) {
            int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(o, 1);
            dup2(e, 2);
            execve(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        return {read_file(out), read_file(err)};
    }

    // glibc alone, the preload, and libldshim loaded late (just before the
    // first dlopen, so after a change made before it): the same lines, and
    // ldshim answered each call.  The preload's run is returned.
    static Run compare(const std::vector<std::string>& env, const std::vector<std::string>& ops) {
        Run glibc = run(env, ops);
        std::vector<std::string> with_preload = env;
        with_preload.push_back(std::string("LD_PRELOAD=") + PRELOAD_LIB_PATH);
        with_preload.push_back("LDSHIM_DEBUG=1");
        Run preload = run(with_preload, ops);
        std::vector<std::string> late;
        for (const auto& op : ops) {
            if (op.starts_with("o:") && late.end() == std::find(late.begin(), late.end(), kLoad)) late.push_back(kLoad);
            late.push_back(op.starts_with("o:") ? "L:" + op.substr(2) : op);
        }
        Run late_run = run(env, late);
        EXPECT_EQ(std::count(glibc.out.begin(), glibc.out.end(), '\n'),
                  std::count_if(ops.begin(), ops.end(), [](const std::string& op) { return op.starts_with("o:"); }))
            << glibc.out << glibc.err;
        EXPECT_EQ(preload.out, glibc.out) << "under the preload\n" << preload.err;
        EXPECT_EQ(late_run.out, glibc.out) << "libldshim loaded late\n" << late_run.err;
        return preload;
    }
    static inline const std::string kLoad = std::string("D:") + LDSHIM_LIB_PATH;

    // Names whose answer depends on LD_LIBRARY_PATH.
    static std::vector<std::string> names(std::vector<std::string> before) {
        for (const char* n : {"o:libenv_both.so", "o:libenv_b.so", "o:libenv_a.so"}) before.push_back(n);
        return before;
    }
    static inline Tree* tree_ = nullptr;
};

const std::string kFirst = "o:libm.so.6";  // a first dlopen that no change affects

TEST_F(Environment, setenv_of_a_set_name_before_the_first_dlopen) { compare({a()}, names({"s:" + b()})); }
TEST_F(Environment, setenv_of_a_set_name_after_the_first_dlopen) { compare({a()}, names({kFirst, "s:" + b()})); }
TEST_F(Environment, setenv_of_a_new_name_before_the_first_dlopen) { compare({"HOME=/"}, names({"s:" + b()})); }
TEST_F(Environment, setenv_of_a_new_name_after_the_first_dlopen) { compare({"HOME=/"}, names({kFirst, "s:" + b()})); }
TEST_F(Environment, unsetenv_before_the_first_dlopen) { compare({a()}, names({"u:LD_LIBRARY_PATH"})); }
TEST_F(Environment, unsetenv_after_the_first_dlopen) { compare({a()}, names({kFirst, "u:LD_LIBRARY_PATH"})); }
TEST_F(Environment, putenv_before_the_first_dlopen) { compare({a()}, names({"p:" + b()})); }
TEST_F(Environment, putenv_after_the_first_dlopen) { compare({a()}, names({kFirst, "p:" + b()})); }
TEST_F(Environment, clearenv_before_the_first_dlopen) { compare({a()}, names({"C:"})); }
TEST_F(Environment, clearenv_after_the_first_dlopen) { compare({a()}, names({kFirst, "C:"})); }
TEST_F(Environment, a_new_environ_before_the_first_dlopen) { compare({a()}, names({"E:" + b()})); }
TEST_F(Environment, a_new_environ_after_the_first_dlopen) { compare({a()}, names({kFirst, "E:" + b()})); }
TEST_F(Environment, setenv_of_ld_preload_before_the_first_dlopen) {
    compare({a()}, names({"s:LD_PRELOAD=" + tree_->abs("B/libenv_b.so")}));
}
// ld.so takes the last of a name given twice; getenv would take the first.
TEST_F(Environment, ld_library_path_given_twice_at_start_up_is_the_last) { compare({a(), b()}, names({})); }

// ldsearch models the program it would start with its own environment: a
// name given twice is the last, as ld.so takes it.
TEST_F(Environment, ldsearch_takes_the_last_ld_library_path_given_twice) {
    Run glibc = run({a(), b()}, {"o:libenv_both.so"});
    Run ldsearch = run({a(), b()}, {"--dlopen", "libenv_both.so", tree_->abs("prog")}, LDSEARCH_PATH);
    EXPECT_NE(glibc.out.find("RESULT " + tree_->abs("B/libenv_both.so")), std::string::npos) << glibc.out;
    EXPECT_NE(ldsearch.out.find(tree_->abs("B/libenv_both.so")), std::string::npos) << ldsearch.out << ldsearch.err;
    EXPECT_EQ(ldsearch.out.find(tree_->abs("A/libenv_both.so")), std::string::npos) << ldsearch.out;
}

// LDSHIM_DEBUG names the list the engine found the file in: after an
// unsetenv, still LD_LIBRARY_PATH, as ld.so read it.
TEST_F(Environment, ldshim_debug_names_ld_library_path_after_an_unsetenv) {
    Run r = compare({a()}, {"u:LD_LIBRARY_PATH", "o:libenv_a.so"});
    std::string want = "dlopen(\"libenv_a.so\") from ";
    auto at = r.err.find(want);
    ASSERT_NE(at, std::string::npos) << r.err;
    std::string line = r.err.substr(at, r.err.find('\n', at) - at);
    EXPECT_NE(line.find(": found via LD_LIBRARY_PATH -> " + tree_->abs("A/libenv_a.so")), std::string::npos) << line;
}

}  // namespace
