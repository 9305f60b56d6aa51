// Eight threads dlopen and dlclose their own library 1,000 times each
// through ldshim while another thread keeps asking ldshim_resolve about all
// of them: no crash, and every answer names the right file.
#include "fixture_cc.h"
#include "ldshim.h"

#include <dlfcn.h>
#include <link.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string make_tree() {
    char tmpl[] = "/tmp/ldshim-conc-XXXXXX";
    if (!mkdtemp(tmpl)) return {};
    std::string d = tmpl;
    std::ofstream(d + "/lib.c") << "int fixture_id(void) { return 1; }\n";
    std::ofstream(d + "/caller.c") << "int caller_marker(void) { return 2; }\n";
    std::string cmd = "mkdir -p " + d + "/libs";
    for (int i = 0; i < 8; ++i)
        cmd += " && " FIXTURE_CC " -shared -fPIC -o " + d + "/libs/libconc" + std::to_string(i) + ".so " + d + "/lib.c";
    cmd += " && " FIXTURE_CC " -shared -fPIC -o " + d + "/libcaller.so " + d +
           "/caller.c -Wl,--disable-new-dtags -Wl,-rpath," + d + "/libs";
    return std::system(cmd.c_str()) == 0 ? d : std::string();
}

}  // namespace

TEST(ResolverConcurrency, eight_threads_dlopen_dlclose_while_another_resolves) {
    std::string d = make_tree();
    ASSERT_FALSE(d.empty());
    void* caller_lib = dlopen((d + "/libcaller.so").c_str(), RTLD_NOW);
    ASSERT_NE(caller_lib, nullptr) << dlerror();
    const void* caller = dlsym(caller_lib, "caller_marker");
    ASSERT_NE(caller, nullptr);

    std::atomic<int> wrong{0}, opened{0}, resolved{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < 8; ++t)
        workers.emplace_back([&, t] {
            std::string name = "libconc" + std::to_string(t) + ".so";
            std::string want = d + "/libs/" + name;
            for (int i = 0; i < 1000; ++i) {
                void* h = ldshim_dlopen_from(caller, name.c_str(), RTLD_NOW);
                if (!h) {
                    wrong++;
                    continue;
                }
                link_map* lm = nullptr;
                if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || want != lm->l_name) wrong++;
                dlclose(h);
                opened++;
            }
        });
    std::thread resolver([&] {
        char path[4096];
        for (unsigned k = 0; !stop.load(); ++k) {
            std::string name = "libconc" + std::to_string(k % 8) + ".so";
            int rc = ldshim_resolve(caller, name.c_str(), RTLD_NOW, path, sizeof path);
            if ((rc != LDSHIM_OK && rc != LDSHIM_ALREADY_LOADED) || d + "/libs/" + name != path) wrong++;
            resolved++;
        }
    });
    for (auto& w : workers) w.join();
    stop = true;
    resolver.join();
    dlclose(caller_lib);
    std::system(("rm -rf " + d).c_str());
    std::printf("[ CONCUR   ] %d dlopen/dlclose pairs, %d resolves, %d wrong\n", opened.load(), resolved.load(),
                wrong.load());
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(opened.load(), 8000);
    EXPECT_GT(resolved.load(), 0);
}

namespace {

const char* l_name_of(void* h) { return h ? static_cast<const link_map*>(h)->l_name : ""; }

}  // namespace

// The already-loaded fast path answers without a lock or a walk, so it must
// notice what ldshim never saw: here glibc's own dlclose unloads the object
// it remembered and glibc's own dlopen loads another file with the same
// SONAME -- the count of loaded objects is what it was before (an unload
// and a load), only glibc's add counter moved.  A stale answer would reopen
// the first file; glibc (and ldshim) must give the second.
TEST(ResolverFastPath, a_load_and_an_unload_behind_ldshims_back_are_noticed) {
    char tmpl[] = "/tmp/ldshim-fast-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string d = tmpl;
    std::ofstream(d + "/lib.c") << "int fixture_id(void) { return 1; }\n";
    std::string cmd = "mkdir -p " + d + "/one " + d + "/two";
    for (const char* sub : {"one", "two"})
        cmd += " && " FIXTURE_CC " -shared -fPIC -Wl,-soname,libswap.so.1 -o " + d + "/" + sub + "/libswap.so " + d +
               "/lib.c";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const void* caller = reinterpret_cast<const void*>(&l_name_of);
    std::string one = d + "/one/libswap.so", two = d + "/two/libswap.so";

    void* h1 = dlopen(one.c_str(), RTLD_NOW);  // behind ldshim's back
    ASSERT_NE(h1, nullptr) << dlerror();
    for (int i = 0; i < 3; ++i) {  // the first asks the model; the others take the fast path
        void* h = ldshim_dlopen_from(caller, "libswap.so.1", RTLD_NOW);
        EXPECT_EQ(h, h1) << l_name_of(h);
        if (h) dlclose(h);
    }
    ASSERT_EQ(dlclose(h1), 0);
    void* h2 = dlopen(two.c_str(), RTLD_NOW);  // again behind ldshim's back
    ASSERT_NE(h2, nullptr) << dlerror();
    ASSERT_EQ(dlopen(one.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr) << "the first file is unloaded";
    for (int i = 0; i < 3; ++i) {
        void* h = ldshim_dlopen_from(caller, "libswap.so.1", RTLD_NOW);
        EXPECT_EQ(h, h2) << "got " << l_name_of(h) << ", glibc gives " << two;
        if (h) dlclose(h);
    }
    // An unload alone: the name is no longer loaded, so it is searched for
    // (and not found: neither directory is on any search path).
    ASSERT_EQ(dlclose(h2), 0);
    EXPECT_EQ(ldshim_dlopen_from(caller, "libswap.so.1", RTLD_NOW), nullptr);
    EXPECT_EQ(dlopen(two.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
    std::system(("rm -rf " + d).c_str());
}

// A plugin that ldshim loaded and the program closed again is told apart
// from other unloads without a walk (LiveProcess::opened_went_alone_locked);
// the shortcut must never take another object's unload for the plugin's.
// Here glibc's own dlclose unloads a library the model knows while the
// plugin ldshim loaded stays: a model that forgot the plugin instead would
// still hold the other library and answer "already loaded" for its SONAME,
// where glibc finds nothing.  Then the plugin's own unload: ldshim loads it
// again, as glibc would.
TEST(ResolverFastPath, another_objects_unload_is_not_taken_for_the_plugins) {
    char tmpl[] = "/tmp/ldshim-went-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string d = tmpl;
    std::ofstream(d + "/lib.c") << "int fixture_id(void) { return 1; }\n";
    std::string cmd = FIXTURE_CC " -shared -fPIC -Wl,-soname,libother.so.1 -o " + d + "/libother.so " + d + "/lib.c" +
                      " && " FIXTURE_CC " -shared -fPIC -o " + d + "/libplugin.so " + d + "/lib.c";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const void* caller = reinterpret_cast<const void*>(&l_name_of);
    const std::string other = d + "/libother.so", plugin = d + "/libplugin.so";

    void* h_other = dlopen(other.c_str(), RTLD_NOW);  // behind ldshim's back
    ASSERT_NE(h_other, nullptr) << dlerror();
    void* h = ldshim_dlopen_from(caller, "libother.so.1", RTLD_NOW);  // the model learns it
    EXPECT_EQ(h, h_other);
    if (h) dlclose(h);

    for (int round = 0; round < 3; ++round) {  // loaded and closed: the plugin's own unload
        ASSERT_EQ(dlopen(plugin.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
        void* p = ldshim_dlopen_from(caller, plugin.c_str(), RTLD_NOW);
        ASSERT_NE(p, nullptr) << ldshim_dlerror();
        EXPECT_EQ(l_name_of(p), plugin);
        ASSERT_EQ(dlclose(p), 0);
    }

    void* p = ldshim_dlopen_from(caller, plugin.c_str(), RTLD_NOW);
    ASSERT_NE(p, nullptr) << ldshim_dlerror();
    ASSERT_EQ(dlclose(h_other), 0);  // another object goes; the plugin stays
    ASSERT_EQ(dlopen(other.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
    void* again = ldshim_dlopen_from(caller, "libother.so.1", RTLD_NOW);
    EXPECT_EQ(again, nullptr) << "the model still holds " << l_name_of(again);
    if (again) dlclose(again);
    void* same = ldshim_dlopen_from(caller, plugin.c_str(), RTLD_NOW);  // still loaded: the same object
    EXPECT_EQ(same, p);
    if (same) dlclose(same);
    ASSERT_EQ(dlclose(p), 0);

    // Both go at once: the plugin's unload is not the only one.
    h_other = dlopen(other.c_str(), RTLD_NOW);
    ASSERT_NE(h_other, nullptr) << dlerror();
    h = ldshim_dlopen_from(caller, "libother.so.1", RTLD_NOW);
    EXPECT_EQ(h, h_other);
    if (h) dlclose(h);
    p = ldshim_dlopen_from(caller, plugin.c_str(), RTLD_NOW);
    ASSERT_NE(p, nullptr) << ldshim_dlerror();
    ASSERT_EQ(dlclose(p), 0);
    ASSERT_EQ(dlclose(h_other), 0);
    again = ldshim_dlopen_from(caller, "libother.so.1", RTLD_NOW);
    EXPECT_EQ(again, nullptr) << "the model still holds " << l_name_of(again);
    if (again) dlclose(again);
    std::system(("rm -rf " + d).c_str());
}
