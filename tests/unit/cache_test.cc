#include "../support/test_machine.h"
#include "fake_fs.h"
#include "fixture_cc.h"
#include "host/loader_query.h"
#include "loader/ld_cache.h"
#include "loader/loader_config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace ldshim::loader;
using namespace ldshim::host;
using namespace ldshim::testing;

namespace {
std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
LdCache cache_of(const std::string& bytes) {
    FakeFs fs;
    fs.file("/c", bytes);
    return LdCache::load(fs, "/c");
}
LoaderConfig running() {
    std::string err;
    auto cfg = query_running_loader(ldshim::testmachine::loader(), &err);
    EXPECT_TRUE(cfg) << err;
    return cfg.value_or(LoaderConfig{});
}
}  // namespace

TEST(CacheLibcmp, digit_runs_compare_numerically) {
    EXPECT_GT(libcmp("libfoo.so.10", "libfoo.so.9"), 0);
    EXPECT_LT(libcmp("libfoo.so.9", "libfoo.so.10"), 0);
    EXPECT_EQ(libcmp("libx.so.01", "libx.so.1"), 0);
    EXPECT_EQ(libcmp("libc.so.6", "libc.so.6"), 0);
    EXPECT_GT(libcmp("liba1", "libab"), 0);  // a digit sorts above a letter
    EXPECT_LT(libcmp("libab", "liba1"), 0);
    EXPECT_LT(libcmp("lib", "libc"), 0);
    EXPECT_GT(libcmp("libc", "lib"), 0);
}

TEST(CacheFile, system_cache_is_sorted_descending_and_complete) {
    auto bytes = slurp("/etc/ld.so.cache");
    if (bytes.empty()) GTEST_SKIP() << "SKIPPED: /etc/ld.so.cache is absent on this machine";
    LdCache c = cache_of(bytes);
    ASSERT_TRUE(c.usable());
    auto entries = c.entries();
    // The count that ldconfig itself reports.
    FILE* p = popen("/sbin/ldconfig -p | head -1", "r");
    ASSERT_NE(p, nullptr);
    unsigned n = 0;
    ASSERT_EQ(fscanf(p, "%u", &n), 1);
    pclose(p);
    EXPECT_EQ(entries.size(), n);
    for (std::size_t i = 1; i < entries.size(); ++i)
        EXPECT_GE(libcmp(entries[i - 1].key.c_str(), entries[i].key.c_str()), 0) << entries[i].key;
}

TEST(CacheFile, system_cache_finds_libc) {
    LdCache c = cache_of(slurp("/etc/ld.so.cache"));
    if (!c.usable()) GTEST_SKIP() << "SKIPPED: no usable /etc/ld.so.cache";
    if (!ldshim::testmachine::for_this_machine("/sbin/ldconfig"))
        GTEST_SKIP() << "SKIPPED: /etc/ld.so.cache is written by another machine's ldconfig (it leaves "
                     << ldshim::testmachine::kThis.triplet << " out)";
    auto hit = c.lookup("libc.so.6", running());
    ASSERT_TRUE(hit);
    // The entry's directory differs between releases (/lib, or /usr/lib in
    // forky's merged-/usr cache); the file is the one libc.
    struct stat a {
    }, b{};
    ASSERT_EQ(stat(hit->c_str(), &a), 0) << *hit;
    ASSERT_EQ(stat(("/" + ldshim::testmachine::lib_dir() + "/libc.so.6").c_str(), &b), 0);
    EXPECT_TRUE(a.st_dev == b.st_dev && a.st_ino == b.st_ino) << *hit;
    EXPECT_FALSE(c.lookup("libdoesnotexist.so.42", running()));
}

TEST(CacheFile, truncated_or_corrupted_caches_never_crash) {
    auto bytes = slurp("/etc/ld.so.cache");
    if (bytes.empty()) GTEST_SKIP() << "SKIPPED: /etc/ld.so.cache is absent";
    auto cfg = running();
    for (std::size_t n = 0; n < bytes.size(); n += 97) {
        LdCache c = cache_of(bytes.substr(0, n));
        (void)c.lookup("libc.so.6", cfg);
    }
    std::string flipped = bytes;
    for (std::size_t i = 48; i < flipped.size(); i += 13) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    LdCache c = cache_of(flipped);
    (void)c.lookup("libc.so.6", cfg);
    (void)c.entries();
    EXPECT_FALSE(cache_of("glibc-ld.so.cache1.1").usable());
    EXPECT_FALSE(cache_of("").usable());
}

// Private caches written by this machine's ldconfig.
class PrivateCache : public ::testing::Test {
protected:
    void SetUp() override {
        ldconfig_ = ldshim::testmachine::ldconfig();
        if (ldconfig_.empty()) GTEST_SKIP() << "SKIPPED: no ldconfig for this machine (set LDSHIM_TEST_LDCONFIG)";
        char tmpl[] = "/tmp/ldshim-cache-XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir_ = tmpl;
    }
    void TearDown() override {
        if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
    }
    void lib(const std::string& rel, const std::string& soname) {
        std::string path = dir_ + "/" + rel;
        std::string cmd = "mkdir -p \"$(dirname " + path + ")\" && " FIXTURE_CC " -shared -fPIC -o " + path +
                          " " FIXTURE_DIR "/lib.c -Wl,-soname," + soname;
        ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
    LdCache build(const std::vector<std::string>& dirs, const char* format = "new") {
        std::ofstream conf(dir_ + "/ld.so.conf");
        for (const auto& d : dirs) conf << dir_ << "/" << d << "\n";
        conf.close();
        std::string cmd = ldconfig_ + " -X -c " + std::string(format) + " -C " + dir_ + "/cache -f " + dir_ +
                          "/ld.so.conf 2>/dev/null";
        EXPECT_EQ(std::system(cmd.c_str()), 0);
        return cache_of(slurp(dir_ + "/cache"));
    }
    std::string dir_, ldconfig_;
};

TEST_F(PrivateCache, hwcaps_entry_beats_plain_entry_in_earlier_dir) {
    lib("dA/libC.so.1", "libC.so.1");
    lib("dB/libC.so.1", "libC.so.1");
    lib("dA/glibc-hwcaps/x86-64-v2/libC.so.1", "libC.so.1");
    lib("dA/glibc-hwcaps/x86-64-v3/libC.so.1", "libC.so.1");
    lib("dB/glibc-hwcaps/x86-64-v4/libC.so.1", "libC.so.1");
    LdCache c = build({"dA", "dB"});
    ASSERT_TRUE(c.usable());
    EXPECT_STREQ(c.format().data(), "new");
    auto cfg = running();
    auto hit = c.lookup("libC.so.1", cfg);
    ASSERT_TRUE(hit);
    // The best active glibc-hwcaps name wins whatever its directory.
    std::string want = cfg.hwcaps_active.empty()             ? dir_ + "/dA/libC.so.1"
                       : cfg.hwcaps_active[0] == "x86-64-v4" ? dir_ + "/dB/glibc-hwcaps/x86-64-v4/libC.so.1"
                       : cfg.hwcaps_active[0] == "x86-64-v3" ? dir_ + "/dA/glibc-hwcaps/x86-64-v3/libC.so.1"
                                                             : dir_ + "/dA/glibc-hwcaps/x86-64-v2/libC.so.1";
    EXPECT_EQ(*hit, want);
    cfg.hwcaps_active.clear();
    EXPECT_EQ(c.lookup("libC.so.1", cfg), dir_ + "/dA/libC.so.1");  // plain: first directory wins
}

TEST_F(PrivateCache, numeric_versions_and_legacy_tls_entry) {
    lib("dB/libfoo.so.9", "libfoo.so.9");
    lib("dB/libfoo.so.10", "libfoo.so.10");
    lib("dB/libE.so.1", "libE.so.1");
    lib("dB/tls/libE.so.1", "libE.so.1");
    LdCache c = build({"dB", "dB/tls"});
    auto cfg = running();
    EXPECT_EQ(c.lookup("libfoo.so.9", cfg), dir_ + "/dB/libfoo.so.9");
    EXPECT_EQ(c.lookup("libfoo.so.10", cfg), dir_ + "/dB/libfoo.so.10");
    auto e = c.lookup("libE.so.1", cfg);
    ASSERT_TRUE(e);
    bool tls_entry = false;
    for (const auto& en : c.entries())
        if (en.key == "libE.so.1" && en.hwcap == (1ULL << 63)) tls_entry = true;
    // glibc 2.36's ldconfig writes a tls entry, and the 2.36 loader prefers it.
    if (tls_entry) {
        EXPECT_EQ(*e, dir_ + "/dB/tls/libE.so.1");
    }
}

TEST_F(PrivateCache, old_and_compat_formats) {
    lib("dA/libO.so.3", "libO.so.3");
    for (const char* fmt : {"compat", "old"}) {
        LdCache c = build({"dA"}, fmt);
        if (!c.usable()) continue;  // 2.36's ldconfig may write a broken old cache
        EXPECT_EQ(c.lookup("libO.so.3", running()), dir_ + "/dA/libO.so.3") << fmt;
    }
}
