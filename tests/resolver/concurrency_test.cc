// Eight threads dlopen and dlclose their own library 1,000 times each
// through ldshim while another thread keeps asking ldshim_resolve about all
// of them: no crash, and every answer names the right file.
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
        cmd += " && cc -shared -fPIC -o " + d + "/libs/libconc" + std::to_string(i) + ".so " + d + "/lib.c";
    cmd += " && cc -shared -fPIC -o " + d + "/libcaller.so " + d + "/caller.c -Wl,--disable-new-dtags -Wl,-rpath," + d +
           "/libs";
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
