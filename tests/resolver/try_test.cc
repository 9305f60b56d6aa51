// ldshim_dlopen_try, the entry for interposers that keep a fallback of their
// own (UCX's ucm): it answers exactly as ldshim_dlopen_via when it can, and
// when it cannot it opens nothing and calls nothing, so the caller's own
// logic runs as it would without ldshim.
#include "ldshim.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int g_calls = 0;
void* counting_dlopen(const char* file, int mode) {
    ++g_calls;
    return dlopen(file, mode);
}

// A `next` that hands ldshim's own forwarded call straight back to it, as a
// wrapper that saved ldshim's entry as its "original" would.
int g_inner = -1;
void* returning_dlopen(const char* file, int mode) {
    void* h = nullptr;
    g_inner = ldshim_dlopen_try(returning_dlopen, reinterpret_cast<const void*>(&counting_dlopen), file, mode, &h);
    return dlopen(file, mode);
}

const void* in_main_program() { return reinterpret_cast<const void*>(&counting_dlopen); }

// The same for dlmopen: a `next` that hands every call to ldshim's dlmopen,
// with itself as next, as a wrapper that saved ldshim's entry as its
// "original" would; it gives up after a few rounds.
int g_rounds = 0;
void* returning_dlmopen(long lmid, const char* file, int mode) {
    if (++g_rounds > 3) return nullptr;
    return ldshim_dlmopen_via(returning_dlmopen, lmid, in_main_program(), file, mode);
}

}  // namespace

TEST(DlopenTry, an_answer_is_carried_out_through_next_and_the_handle_is_what_dlopen_returns) {
    g_calls = 0;
    void* h = reinterpret_cast<void*>(1);
    ASSERT_EQ(ldshim_dlopen_try(counting_dlopen, in_main_program(), "libz.so.1", RTLD_NOW, &h), LDSHIM_OK);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(g_calls, 1) << "opened once, through next";
    EXPECT_EQ(h, dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD)) << "the object glibc would return";
    const link_map* map = static_cast<const link_map*>(h);
    EXPECT_NE(std::strstr(map->l_name, "libz.so.1"), nullptr) << map->l_name;
    dlclose(h);
    dlclose(h);
}

// A guest holds no descriptor the host can see: the model's ld.so.cache is
// kept in memory, its file closed, once ldshim has answered.
TEST(DlopenTry, after_an_answer_no_descriptor_of_ldshim_stays_open) {
    void* h = nullptr;
    ASSERT_EQ(ldshim_dlopen_try(counting_dlopen, in_main_program(), "libm.so.6", RTLD_NOW, &h), LDSHIM_OK);
    ASSERT_NE(h, nullptr);
    std::string open_files;
    for (int fd = 0; fd < 1024; ++fd) {
        char link[64], target[4096];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        open_files += std::string(target) + "\n";
        EXPECT_EQ(std::strstr(target, "ld.so.cache"), nullptr) << "fd " << fd << " -> " << target;
    }
    EXPECT_EQ(open_files.find(".so"), std::string::npos) << open_files;
    dlclose(h);
}

TEST(DlopenTry, a_library_that_exists_nowhere_is_an_answer_too_a_null_handle_and_the_text) {
    void* h = reinterpret_cast<void*>(1);
    ASSERT_EQ(ldshim_dlopen_try(nullptr, in_main_program(), "libldshim-nowhere.so", RTLD_NOW, &h), LDSHIM_OK);
    EXPECT_EQ(h, nullptr);
    const char* why = ldshim_dlerror();
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::strstr(why, "libldshim-nowhere.so: cannot open shared object file"), nullptr) << why;
}

TEST(DlopenTry, bad_arguments_open_nothing) {
    g_calls = 0;
    void* h = reinterpret_cast<void*>(1);
    EXPECT_EQ(ldshim_dlopen_try(counting_dlopen, in_main_program(), nullptr, RTLD_NOW, &h),
              LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_dlopen_try(counting_dlopen, in_main_program(), "libz.so.1", RTLD_NOW, nullptr),
              LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(h, reinterpret_cast<void*>(1)) << "the handle is written only with LDSHIM_OK";
    EXPECT_EQ(g_calls, 0);
}

TEST(DlopenTry, its_own_forwarding_coming_back_is_declined_not_answered_again) {
    void* h = nullptr;
    g_inner = -1;
    ASSERT_EQ(ldshim_dlopen_try(returning_dlopen, in_main_program(), "libbz2.so.1.0", RTLD_NOW, &h), LDSHIM_OK);
    EXPECT_NE(h, nullptr);
    EXPECT_EQ(g_inner, LDSHIM_ERR_UNSUPPORTED) << "the call that came back through next";
    if (h) dlclose(h);
}

TEST(DlmopenVia, its_own_forwarding_coming_back_goes_to_glibc_not_round_again) {
    g_rounds = 0;
    void* h = ldshim_dlmopen_via(returning_dlmopen, LM_ID_BASE, in_main_program(), "libbz2.so.1.0", RTLD_NOW);
    EXPECT_NE(h, nullptr) << "glibc's own dlmopen opened what ldshim forwarded";
    EXPECT_EQ(g_rounds, 1) << "the forwarded call came back once, and went to glibc";
    if (h) dlclose(h);
}

// Switched off, it declines without calling next: checked in a child started
// with LDSHIM_DISABLE=1 (the setting is read once, at start-up).
TEST(DlopenTry, switched_off_it_declines_and_calls_nothing) {
    if (std::getenv("LDSHIM_DISABLE")) {
        g_calls = 0;
        void* h = reinterpret_cast<void*>(1);
        int rc = ldshim_dlopen_try(counting_dlopen, in_main_program(), "libz.so.1", RTLD_NOW, &h);
        std::_Exit(rc == LDSHIM_ERR_UNSUPPORTED && g_calls == 0 && h == reinterpret_cast<void*>(1) ? 0 : 1);
    }
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        setenv("LDSHIM_DISABLE", "1", 1);
        execl("/proc/self/exe", "try_test", "--gtest_filter=DlopenTry.switched_off_it_declines_and_calls_nothing",
              static_cast<char*>(nullptr));
        std::_Exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "LDSHIM_ERR_UNSUPPORTED, next not called, handle untouched";
}

// ldshim_dlopen_decide, the entry for trampolines: an answer is carried out
// and returned in the handle; without one it names the function to go on
// to and touches nothing -- glibc's own dlopen for a NULL `next`, never a
// wrapper of ldshim's, whose frame would become the caller.
TEST(DlopenDecide, an_answer_fills_the_handle_and_no_answer_names_what_to_go_on_to) {
    g_calls = 0;
    void* h = nullptr;
    EXPECT_EQ(ldshim_dlopen_decide(counting_dlopen, in_main_program(), "libz.so.1", RTLD_NOW, &h), nullptr);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(g_calls, 1) << "opened once, through next";
    dlclose(h);
    h = reinterpret_cast<void*>(1);
    // dlopen(NULL) needs no search: ldshim has nothing to answer.
    EXPECT_EQ(ldshim_dlopen_decide(counting_dlopen, in_main_program(), nullptr, RTLD_NOW, &h), &counting_dlopen);
    EXPECT_EQ(ldshim_dlopen_decide(nullptr, in_main_program(), nullptr, RTLD_NOW, &h),
              reinterpret_cast<ldshim_dlopen_fn>(dlsym(RTLD_DEFAULT, "dlopen")));
    EXPECT_EQ(h, reinterpret_cast<void*>(1)) << "the handle is written only with an answer";
}
