// ldshim's front entry calls what each object's own slot held before it:
// a GOT patcher that took over one library's dlopen slot keeps seeing that
// library's loads -- and no other library's -- in every preload order, also
// when its constructor runs after ldshim's and it forwards straight to
// glibc, and with a dlsym(RTLD_NEXT) forwarder first in line.
#include "fixture_cc.h"
#include "interposers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ldshim::difftest;

TEST(Slots, a_patcher_of_one_library_sees_that_librarys_loads_and_no_other_in_every_order) {
    Tree t;
    // libA and libB each dlopen a library only their own RUNPATH reaches.
    t.write("p.c", "int x(void) { return 1; }\n");
    t.write(
        "l.c",
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "int NAME(void) { void *h = dlopen(LIB, RTLD_NOW); printf(\"%s %s\\n\", LIB, h ? \"loaded\" : \"not loaded\");"
        " return h != 0; }\n");
    t.write("m.c", "int load_a(void); int load_b(void);\nint main(void) { load_a(); load_b(); return 0; }\n");
    std::string d = "cd " + quote(t.abs(".")) + " && ";
    ASSERT_EQ(
        sh(d +
           "mkdir -p lib/a lib/b && " FIXTURE_CC " -shared -fPIC -o lib/a/libslota.so p.c && " FIXTURE_CC
           " -shared -fPIC -o lib/b/libslotb.so p.c && " FIXTURE_CC
           " -O0 -shared -fPIC -DNAME=load_a -DLIB='\"libslota.so\"' -o lib/libA.so l.c "
           "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/a' && " FIXTURE_CC
           " -O0 -shared -fPIC -DNAME=load_b -DLIB='\"libslotb.so\"' -o lib/libB.so l.c "
           "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/b' && " FIXTURE_CC
           " -o prog m.c -Llib -lA -lB -Wl,-rpath,'$ORIGIN/lib' && " FIXTURE_CC " -O0 -shared -fPIC -o partial.so " +
           quote(std::string(FIXTURE_DIR) + "/partial_patcher.c") + " -ldl && " +
           FIXTURE_CC " -O0 -shared -fPIC -DNEXT_BY_RTLD_NEXT -o fw.so " + quote(FORWARDER_SRC) + " -ldl"),
        0);
    const std::string p = PRELOAD_LIB_PATH, patcher = t.abs("partial.so"), fw = t.abs("fw.so");
    const std::vector<std::string> orders = {
        patcher + ":" + p,
        p + ":" + patcher,
        fw + ":" + patcher + ":" + p,
        fw + ":" + p + ":" + patcher,
    };
    for (const auto& order : orders) {
        std::string out = t.abs(".out/prog"), log = t.abs(".out/patcher");
        sh("rm -f " + quote(log));
        sh(d + "env PATCH_ONLY=libA PATCHER_LOG=" + quote(log) + " LD_PRELOAD=" + quote(order) + " ./prog > " +
           quote(out) + " 2>&1");
        std::string printed = read_file(out);
        EXPECT_NE(printed.find("libslota.so loaded"), std::string::npos) << order << "\n" << printed;
        EXPECT_NE(printed.find("libslotb.so loaded"), std::string::npos) << order << "\n" << printed;
        auto seen = read_lines(log);
        ASSERT_EQ(seen.size(), 1u) << order << ": the patcher saw " << ::testing::PrintToString(seen);
        EXPECT_NE(seen[0].find("libslota.so"), std::string::npos) << order << ": " << seen[0];
        std::printf("[ ORDER    ] %s: the patcher saw %s\n", order.c_str(), seen[0].c_str());
    }
}
