#include "../support/test_machine.h"
#include "host/loader_in_process.h"
#include "host/loader_query.h"
#include "loader/loader_config.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

using namespace ldshim::loader;
using namespace ldshim::host;

namespace {
// The loader of the machine the tests run on (its answers are the oracle).
const std::string kLoader = ldshim::testmachine::loader();
constexpr const char* kHelp236 = R"(
Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/x86_64-linux-gnu (system search path)
  /usr/lib/x86_64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4 (supported, searched)
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)

Legacy HWCAP subdirectories under library search path directories:
  x86_64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1
  x86_64 (supported, searched)
)";
}  // namespace

TEST(LoaderConfig, parses_glibc_236_help) {
    std::string err;
    auto cfg = parse_ld_so_help(kHelp236, &err);
    ASSERT_TRUE(cfg) << err;
    EXPECT_EQ(cfg->system_dirs,
              (std::vector<std::string>{"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/", "/usr/lib/"}));
    EXPECT_EQ(cfg->hwcaps_active, (std::vector<std::string>{"x86-64-v4", "x86-64-v3", "x86-64-v2"}));
    EXPECT_EQ(cfg->platform, "x86_64");
    EXPECT_EQ(cfg->dst_lib, "lib/x86_64-linux-gnu");
    EXPECT_EQ(cfg->hwcap_searched, 0x2u);
    EXPECT_EQ(cfg->isa_levels, 0xFu);
    // 3 glibc-hwcaps + the 8-entry legacy power set of [x86_64, x86_64, tls].
    EXPECT_EQ(cfg->subdirs,
              (std::vector<std::string>{"glibc-hwcaps/x86-64-v4/", "glibc-hwcaps/x86-64-v3/", "glibc-hwcaps/x86-64-v2/",
                                        "tls/x86_64/x86_64/", "tls/x86_64/", "tls/x86_64/", "tls/", "x86_64/x86_64/",
                                        "x86_64/", "x86_64/", ""}));
}

TEST(LoaderConfig, ld_library_path_entry_labelled_system_is_not_a_system_dir) {
    // ld.so prints an LD_LIBRARY_PATH entry with the label of the pooled
    // directory it shares with the system list.
    std::string text = kHelp236;
    text.replace(text.find("  (libraries located"), 0, "  /usr/lib (system search path)\n  /opt/x (LD_LIBRARY_PATH)\n");
    auto cfg = parse_ld_so_help(text, nullptr);
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->system_dirs,
              (std::vector<std::string>{"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/", "/usr/lib/"}));
    EXPECT_EQ(cfg->dst_lib, "lib/x86_64-linux-gnu");
}

TEST(LoaderConfig, unsupported_level_is_not_searched) {
    std::string text = kHelp236;
    text.replace(text.find("x86-64-v4 (supported, searched)"), 31, "x86-64-v4");
    auto cfg = parse_ld_so_help(text, nullptr);
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->hwcaps_active, (std::vector<std::string>{"x86-64-v3", "x86-64-v2"}));
    EXPECT_EQ(cfg->isa_levels, 0x7u);
}

TEST(LoaderConfig, only_isa_level_names_carry_a_level_bit) {
    EXPECT_EQ(isa_level_bit("x86-64-v4"), 8u);
    EXPECT_EQ(isa_level_bit("x86-64-v3"), 4u);
    EXPECT_EQ(isa_level_bit("x86-64-v2"), 2u);
    // A name prepended with --glibc-hwcaps-prepend, and a level glibc lacks.
    EXPECT_EQ(isa_level_bit("x86-64-v5"), 0u);
    EXPECT_EQ(isa_level_bit("power10"), 0u);
    EXPECT_EQ(isa_level_bit(""), 0u);
    LoaderConfig c = assemble_config({"/lib/"}, 8u | 2u, std::nullopt, 0);
    EXPECT_EQ(c.hwcaps_active, (std::vector<std::string>{"x86-64-v4", "x86-64-v2"})) << "best first";
}

// The probe tree (lib/ldshim/probe) is laid out by meson, which cannot read
// the table: held to it here.
TEST(LoaderConfig, the_probe_tree_has_a_target_for_exactly_the_isa_levels) {
    std::vector<std::string> want, have;
    if (ldshim::testmachine::has_hwcaps_names())
        for (const auto& l : kIsaLevels) want.emplace_back(l.name);
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(PROBE_DIR "/glibc-hwcaps", ec)) {
        have.push_back(d.path().filename().string());
        EXPECT_TRUE(std::filesystem::exists(d.path() / "libldshim-probe-hwcaps.so")) << d.path();
    }
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want);
}

TEST(LoaderConfig, hwcap_mask_zero_leaves_platform_and_tls) {
    EXPECT_EQ(make_subdirs({}, {"x86_64", "tls"}), (std::vector<std::string>{"tls/x86_64/", "tls/", "x86_64/", ""}));
}

TEST(LoaderConfig, later_glibc_without_legacy_section) {
    std::string text = kHelp236;
    text.erase(text.find("\nLegacy HWCAP"));
    auto cfg = parse_ld_so_help(text, nullptr);
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->subdirs.size(), 4u);
    EXPECT_EQ(cfg->subdirs.back(), "");
}

TEST(LoaderConfig, garbage_is_an_error_not_a_crash) {
    std::string err;
    EXPECT_FALSE(parse_ld_so_help("hello\n  world (x)\n", &err));
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(parse_ld_so_help("", &err));
}

TEST(LoaderConfig, running_loader_answers) {
    std::string err;
    auto cfg = query_running_loader(kLoader, &err);
    ASSERT_TRUE(cfg) << err;
    EXPECT_FALSE(cfg->system_dirs.empty());
    EXPECT_EQ(cfg->subdirs.back(), "");
    EXPECT_FALSE(query_running_loader("/nonexistent/ld.so", &err));
}

TEST(LoaderConfig, cached_answer_equals_fresh_answer) {
    char tmpl[] = "/tmp/ldshim-cfg-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    std::string dir = std::string(tmpl) + "/sub/ldshim";
    std::string err;
    auto fresh = query_running_loader(kLoader, &err);
    auto first = query_loader_cached(kLoader, dir, &err);   // miss: runs ld.so, writes
    auto second = query_loader_cached(kLoader, dir, &err);  // hit: reads the file
    ASSERT_TRUE(fresh && first && second) << err;
    for (const auto* c : {&*first, &*second}) {
        EXPECT_EQ(c->system_dirs, fresh->system_dirs);
        EXPECT_EQ(c->subdirs, fresh->subdirs);
        EXPECT_EQ(c->platform, fresh->platform);
        EXPECT_EQ(c->hwcap_searched, fresh->hwcap_searched);
        EXPECT_TRUE(*c == *fresh) << "a field differs after the cache";
    }
    EXPECT_EQ(std::system(("test -n \"$(ls " + dir + ")\"").c_str()), 0) << "nothing was cached";
    // A different tunable is a different key, hence a fresh answer.
    setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2", 1);
    auto tuned = query_loader_cached(kLoader, dir, &err);
    auto tuned_fresh = query_running_loader(kLoader, &err);
    unsetenv("GLIBC_TUNABLES");
    ASSERT_TRUE(tuned && tuned_fresh);
    EXPECT_EQ(tuned->subdirs, tuned_fresh->subdirs);
    std::system((std::string("rm -rf ") + tmpl).c_str());
}

// ---- The cache file's form of a configuration (loader_config_codec.cc) ----

namespace {
// A configuration with no field at its default, and names that a separator
// based format would break on.
LoaderConfig unusual_config() {
    LoaderConfig c;
    c.behaviour.root_dir_stat_bug = false;
    c.behaviour.non_directory_ends_list = false;
    c.behaviour.explains_candidates = true;
    c.rtld_path = "/opt/root/lib64/ld linux.so.2";
    c.system_dirs = {"/lib/x86_64-linux-gnu/", "/odd\ndir 7 /", "/usr/lib/"};
    c.subdirs = {"glibc-hwcaps/x86-64-v3/", "haswell/x86_64/", "tls/", ""};
    c.hwcaps_active = {"x86-64-v3", "- 3"};
    c.isa_levels = 7;
    c.platform = "haswell";
    c.dst_lib = "lib64";
    c.hwcap_searched = 6;
    c.cache_path = "/root/etc/ld.so.cache";
    c.cache_label = "/etc/ld.so.cache";
    c.inhibit_cache = true;
    return c;
}
}  // namespace

TEST(LoaderConfigCodec, every_field_survives_the_round_trip) {
    LoaderConfig c = unusual_config();
    auto back = decode_config(encode_config(c));
    ASSERT_TRUE(back);
    EXPECT_TRUE(*back == c);
    c.platform.reset();
    c.hwcaps_active.clear();
    back = decode_config(encode_config(c));
    ASSERT_TRUE(back);
    EXPECT_FALSE(back->platform);
    EXPECT_TRUE(*back == c);
}

TEST(LoaderConfigCodec, a_truncated_or_foreign_file_is_a_miss_never_a_wrong_configuration) {
    const std::string bytes = encode_config(unusual_config());
    for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_config(bytes.substr(0, n))) << "cut at " << n;
    EXPECT_FALSE(decode_config(bytes + "x")) << "trailing bytes";
    EXPECT_FALSE(decode_config("ldshim loader answers v4\nhelp none\nprobe 0\n")) << "the older format";
    std::string other_version = bytes;
    other_version[other_version.find('\n') - 1] = '9';
    EXPECT_FALSE(decode_config(other_version));
}

// Random damage to a cache file: it decodes to nothing, or to a
// configuration that is exactly what its bytes say (a second round trip
// changes nothing); never a crash or a huge allocation.
TEST(LoaderConfigCodec, randomly_damaged_files_decode_to_nothing_or_to_what_they_say) {
    const unsigned seed = std::random_device{}();
    std::printf("seed %u\n", seed);
    std::mt19937 rng(seed);
    const std::string good = encode_config(unusual_config());
    const std::string alphabet = "0123456789 -\nnonex";
    for (int round = 0; round < 20000; ++round) {
        std::string bytes = good;
        int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            std::size_t at = rng() % bytes.size();
            switch (rng() % 3) {
                case 0: bytes[at] = alphabet[rng() % alphabet.size()]; break;
                case 1: bytes.erase(at, 1 + rng() % 4); break;
                default: bytes.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
            }
            if (bytes.empty()) bytes.push_back('x');  // (not = "x": a GCC 12 -O3 -Wrestrict false alarm)
        }
        auto cfg = decode_config(bytes);
        if (!cfg) continue;
        auto again = decode_config(encode_config(*cfg));
        ASSERT_TRUE(again && *again == *cfg) << "seed " << seed << " round " << round;
        ASSERT_TRUE(!cfg->subdirs.empty() && cfg->subdirs.back().empty()) << "seed " << seed << " round " << round;
    }
}

// ---- What the loader's own probe search shows (loader_probe.cc) ----

namespace {
// The running loader's debug output for the probe, as host/loader_query.cc
// asks for it, in `env` (VAR=VALUE; its own LD_LIBRARY_PATH replaces any).
std::string probe_text(const std::vector<std::string>& env = {}) {
    const std::size_t slash = kLoader.rfind('/');
    auto in = probe_inputs(kLoader.substr(slash + 1));
    std::string vars;
    for (const auto& v : env)
        if (!v.starts_with("LD_LIBRARY_PATH=")) vars += " '" + v + "'";
    std::string cmd = "cd " + kLoader.substr(0, slash) + " && env -i LD_DEBUG=libs 'LD_PRELOAD=" + in.preload +
                      "' 'LD_LIBRARY_PATH=" + in.library_path + "'" + vars + " " + kLoader + " --list " + kLoader +
                      " 2>&1 >/dev/null";
    std::string out;
    if (FILE* f = popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
        pclose(f);
    }
    return out;
}
}  // namespace

// A loader without --help (glibc before 2.33) is known from the probe
// alone: on this loader that must give what its --help gives.
TEST(LoaderProbe, the_probe_alone_gives_what_the_help_gives) {
    for (std::string mask : {"", "0", "0x6"}) {
        std::string err;
        const auto env = mask.empty() ? std::vector<std::string>{} : std::vector{"LD_HWCAP_MASK=" + mask};
        auto helped = query_running_loader(kLoader, &err, LoaderCpuEnv::of(env));
        ASSERT_TRUE(helped) << err;
        auto probed = config_from_answers(std::nullopt, probe_text(env), &err);
        ASSERT_TRUE(probed) << err;
        EXPECT_EQ(probed->system_dirs, helped->system_dirs) << mask;
        EXPECT_EQ(probed->subdirs, helped->subdirs) << mask;
        EXPECT_EQ(probed->hwcaps_active, helped->hwcaps_active) << mask;
        EXPECT_EQ(probed->platform, helped->platform) << mask;
        EXPECT_EQ(probed->hwcap_searched, helped->hwcap_searched) << mask;
        EXPECT_EQ(probed->dst_lib, ldshim::testmachine::lib_dir());
        EXPECT_EQ(probed->cache_path, "/etc/ld.so.cache");
        // What the search showed is what the runtime takes from the version
        // ("/" stat'ed as "" before 2.38, a non-directory ending a list before
        // 2.39, the candidates' notes from 2.43).
        auto release = glibc_release(gnu_get_libc_version());
        ASSERT_TRUE(release) << gnu_get_libc_version();
        EXPECT_EQ(probed->behaviour, release->behaviour);
    }
}

// glibc 2.31's legacy list on a Haswell: the platform is a string of its
// own, so "x86_64" once is the hwcap bit, and "haswell" is only the platform.
TEST(LoaderProbe, a_glibc_2_31_search_gives_its_subdirectories_platform_and_lib) {
    auto path = [](const std::string& d) {
        std::string out;
        for (const char* s :
             {"tls/haswell/x86_64", "tls/haswell", "tls/x86_64", "tls", "haswell/x86_64", "haswell", "x86_64"})
            out += d + "/" + s + ":";
        return out + d;
    };
    std::string text = std::string("     7:\tfind library=ldshim-probe-nowhere.so") +
                       " [0]; searching\n     7:\t search path=" + path("/ldshim-probe-nowhere") + ":" +
                       path("/ldshim-probe-platform/haswell") + ":" + path("/ldshim-probe-lib/lib64") +
                       "\t\t(LD_LIBRARY_PATH)\n" +
                       "     7:\t  trying file=/ldshim-probe-nowhere/tls/haswell/x86_64/x.so\n" +
                       "     7:\t search cache=/etc/ld.so.cache\n     7:\t search path=" + path("/lib64") + ":" +
                       path("/usr/lib64") + "\t\t(system search path)\n";
    std::string err;
    auto cfg = config_from_answers(std::nullopt, text, &err);
    ASSERT_TRUE(cfg) << err;
    EXPECT_EQ(cfg->system_dirs, (std::vector<std::string>{"/lib64/", "/usr/lib64/"}));
    EXPECT_EQ(cfg->subdirs.front(), "tls/haswell/x86_64/");
    EXPECT_EQ(cfg->subdirs.size(), 8u);
    EXPECT_EQ(cfg->subdirs.back(), "");
    EXPECT_EQ(cfg->platform, "haswell");
    EXPECT_EQ(cfg->dst_lib, "lib64");
    EXPECT_EQ(cfg->hwcap_searched, kHwcapX86_64);
    EXPECT_TRUE(cfg->hwcaps_active.empty());
    // A probe that shows no search is no configuration.
    EXPECT_FALSE(config_from_answers(std::nullopt, "     7:\tfind library=x [0]; searching\n", &err));
    EXPECT_NE(err.find("probe"), std::string::npos) << err;
}

// The behaviour a loader shows by searching: glibc 2.41 keeps "/" for the
// second lookup (2.38 stats it right) and goes on past a relative element
// that is a file (2.39); 2.36 does neither.
TEST(LoaderProbe, a_glibc_2_41_search_shows_the_root_kept_and_the_list_going_on_past_a_file) {
    auto lookup = [](const char* name, const std::string& env_list, const std::string& tried) {
        return std::string("     7:\tfind library=") + name + " [0]; searching\n     7:\t search path=" + env_list +
               "\t\t(LD_LIBRARY_PATH)\n" + tried + "     7:\t search cache=/etc/ld.so.cache\n" +
               "     7:\t search path=/lib64\t\t(system search path)\n";
    };
    std::string first =
        "/ldshim-probe-nowhere:/ldshim-probe-platform/x86_64:/ldshim-probe-lib/lib64:/:./ld.so:"
        "/ldshim-probe-after";
    std::string after = "     7:\t  trying file=/ldshim-probe-after/ldshim-probe-nowhere.so\n";
    std::string err;
    auto v241 = config_from_answers(
        std::nullopt,
        lookup("ldshim-probe-nowhere.so", first, after) + lookup("ldshim-probe-nowhere-again.so", "/:./ld.so", ""),
        &err);
    ASSERT_TRUE(v241) << err;
    EXPECT_FALSE(v241->behaviour.root_dir_stat_bug);
    EXPECT_FALSE(v241->behaviour.non_directory_ends_list);
    auto v236 = config_from_answers(
        std::nullopt,
        lookup("ldshim-probe-nowhere.so", first, "") + lookup("ldshim-probe-nowhere-again.so", "./ld.so", ""), &err);
    ASSERT_TRUE(v236) << err;
    EXPECT_TRUE(v236->behaviour.root_dir_stat_bug);
    EXPECT_TRUE(v236->behaviour.non_directory_ends_list);
    EXPECT_FALSE(v236->behaviour.explains_candidates);
}

// glibc 2.43 follows each candidate it could not open with "    (no such
// file)"; the probe's missing files show whether this loader does.
TEST(LoaderProbe, a_glibc_2_43_search_shows_its_notes_on_missing_candidates) {
    std::string text =
        "     7:\tfind library=ldshim-probe-nowhere.so [0]; searching\n"
        "     7:\t search path=/ldshim-probe-nowhere:/ldshim-probe-after\t\t(LD_LIBRARY_PATH)\n"
        "     7:\t  trying file=/ldshim-probe-nowhere/ldshim-probe-nowhere.so\n"
        "     7:\t    (no such file)\n"
        "     7:\t search cache=/etc/ld.so.cache\n"
        "     7:\t search path=/lib64\t\t(system search path)\n";
    std::string err;
    auto v243 = config_from_answers(std::nullopt, text, &err);
    ASSERT_TRUE(v243) << err;
    EXPECT_TRUE(v243->behaviour.explains_candidates);
}

// ---- The in-process derivation (loader_config_native.cc) ----

TEST(LoaderConfig, assembled_from_parts_equals_the_parsed_help) {
    auto parsed = parse_ld_so_help(kHelp236, nullptr);
    ASSERT_TRUE(parsed);
    LoaderConfig a = assemble_config(parsed->system_dirs, 0xF, "x86_64", 0x2);
    EXPECT_EQ(a.system_dirs, parsed->system_dirs);
    EXPECT_EQ(a.subdirs, parsed->subdirs);
    EXPECT_EQ(a.hwcaps_active, parsed->hwcaps_active);
    EXPECT_EQ(a.isa_levels, parsed->isa_levels);
    EXPECT_EQ(a.platform, parsed->platform);
    EXPECT_EQ(a.dst_lib, parsed->dst_lib);
    EXPECT_EQ(a.hwcap_searched, parsed->hwcap_searched);
}

TEST(LoaderConfig, intel_avx512_machine_has_sixteen_legacy_subdirectories) {
    // T = [x86_64, avx512_1, haswell, tls]: 3 glibc-hwcaps + 2^4 legacy entries.
    LoaderConfig c = assemble_config({"/lib64/"}, 0xF, "haswell", 0x6);
    ASSERT_EQ(c.subdirs.size(), 3u + 16u);
    EXPECT_EQ(c.subdirs[3], "tls/haswell/avx512_1/x86_64/");
    EXPECT_EQ(c.subdirs.back(), "");
    EXPECT_EQ(c.dst_lib, "lib64");
    // Only v2 usable; no platform at all.
    LoaderConfig d = assemble_config({"/lib/"}, 0x3, std::nullopt, 0);
    EXPECT_EQ(d.hwcaps_active, std::vector<std::string>{"x86-64-v2"});
    EXPECT_EQ(d.subdirs, (std::vector<std::string>{"glibc-hwcaps/x86-64-v2/", "tls/", ""}));
}

TEST(InProcessConfig, hwcap_mask_follows_ld_so_precedence_and_number_syntax) {
    auto mask = [](std::vector<const char*> env, bool secure = false) {
        env.push_back(nullptr);
        return hwcap_mask_from_env(env.data(), secure);
    };
    EXPECT_EQ(mask({}), 6u);  // HWCAP_IMPORTANT
    EXPECT_EQ(mask({"LD_HWCAP_MASK=0"}), 0u);
    EXPECT_EQ(mask({"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=0"}), 0u);
    // The tunable wins over its alias in either order; the first alias counts.
    EXPECT_EQ(mask({"LD_HWCAP_MASK=0", "GLIBC_TUNABLES=glibc.cpu.hwcap_mask=2"}), 2u);
    EXPECT_EQ(mask({"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=2", "LD_HWCAP_MASK=0"}), 2u);
    EXPECT_EQ(mask({"LD_HWCAP_MASK=4", "LD_HWCAP_MASK=0"}), 4u);
    EXPECT_EQ(mask({"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=1:glibc.cpu.hwcap_mask=0x4"}), 4u);
    EXPECT_EQ(mask({"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2:glibc.cpu.hwcap_mask=0"}), 0u);
    EXPECT_EQ(mask({"GLIBC_TUNABLES=junk:glibc.cpu.hwcap_mask=0"}), 0u);  // a piece without '=' is skipped
    EXPECT_EQ(mask({"GLIBC_TUNABLES=glibc.cpu.hwcap_mask"}), 6u);         // no value: unset
    EXPECT_EQ(mask({"LD_HWCAP_MASK=010"}), 8u);                           // octal
    EXPECT_EQ(mask({"LD_HWCAP_MASK=0x2zz"}), 2u);                         // stops at junk
    EXPECT_EQ(mask({"LD_HWCAP_MASK=abc"}), 0u);
    EXPECT_EQ(mask({"LD_HWCAP_MASK= -1"}), ~std::uint64_t{0});
    EXPECT_EQ(mask({"LD_HWCAP_MASK=99999999999999999999"}), ~std::uint64_t{0});
    // Set-id processes read neither.
    EXPECT_EQ(mask({"LD_HWCAP_MASK=0", "GLIBC_TUNABLES=glibc.cpu.hwcap_mask=0"}, true), 6u);
}

TEST(InProcessConfig, system_directories_are_what_follows_rpath_and_ld_library_path) {
    const std::vector<std::string> sys = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
    const std::vector<std::string> want = {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/",
                                           "/usr/lib/"};
    auto with = [&](std::vector<std::string> head) {
        head.insert(head.end(), sys.begin(), sys.end());
        return head;
    };
    SerinfoPrefix none;
    std::string err;
    EXPECT_EQ(system_dirs_from_serinfo(sys, none, &err), want) << err;

    // LD_LIBRARY_PATH naming system directories, an empty element, ';', duplicates, DSTs.
    SerinfoPrefix p;
    p.origin = "/opt/app/bin";
    p.platform = "x86_64";
    p.library_path = "/usr/lib::/lib/x86_64-linux-gnu/;rel//:$ORIGIN/../lib:$LIB/x:$PLATFORM:/usr/lib/";
    auto serinfo = with(
        {"/usr/lib", ".", "/lib/x86_64-linux-gnu", "rel", "/opt/app/bin/../lib", "lib/x86_64-linux-gnu/x", "x86_64"});
    EXPECT_EQ(system_dirs_from_serinfo(serinfo, p, &err), want) << err;

    // The main program's RPATH comes first ...
    p.main_rpath = "/missing:$ORIGIN";
    serinfo.insert(serinfo.begin(), {"/missing", "/opt/app/bin"});
    EXPECT_EQ(system_dirs_from_serinfo(serinfo, p, &err), want) << err;
    // ... unless glibc dropped it, all its directories missing.
    p.main_rpath = "/missing";
    EXPECT_EQ(system_dirs_from_serinfo(with({"/usr/lib", ".", "/lib/x86_64-linux-gnu", "rel", "/opt/app/bin/../lib",
                                             "lib/x86_64-linux-gnu/x", "x86_64"}),
                                       p, &err),
              want)
        << err;

    // Set-id: no LD_LIBRARY_PATH; $ORIGIN only inside trusted directories.
    SerinfoPrefix s;
    s.secure = true;
    s.origin = "/usr/lib/x86_64-linux-gnu/app";
    s.library_path = "/tmp";
    s.main_rpath = "$ORIGIN:/abs/$ORIGIN";
    EXPECT_EQ(system_dirs_from_serinfo(with({"/usr/lib/x86_64-linux-gnu/app"}), s, &err), want) << err;

    // Without a prefix the whole list is the system list ...
    EXPECT_EQ(system_dirs_from_serinfo({"/opt/glibc/lib"}, none, &err), std::vector<std::string>{"/opt/glibc/lib/"});
    // ... and a list the prefix does not account for is an error, not a guess.
    SerinfoPrefix q;
    q.library_path = "/a";
    EXPECT_FALSE(system_dirs_from_serinfo(sys, q, &err));
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(system_dirs_from_serinfo(with({"/b"}), q, &err));
    EXPECT_FALSE(system_dirs_from_serinfo({}, none, &err));
    EXPECT_FALSE(system_dirs_from_serinfo({"relative"}, none, &err));
}

namespace {

// The fields of a LoaderConfig as text, one "key value" line each, so that a
// child process can hand its derivation to the test.
std::string config_lines(const LoaderConfig& c) {
    std::string s;
    for (const auto& d : c.system_dirs) s += "CFG system_dir " + d + "\n";
    for (const auto& d : c.subdirs) s += "CFG subdir " + d + "\n";
    for (const auto& h : c.hwcaps_active) s += "CFG hwcaps_active " + h + "\n";
    s += "CFG isa_levels " + std::to_string(c.isa_levels) + "\n";
    s += c.platform ? "CFG platform " + *c.platform + "\n" : std::string("CFG no_platform -\n");
    s += "CFG dst_lib " + c.dst_lib + "\n";
    s += "CFG hwcap_searched " + std::to_string(c.hwcap_searched) + "\n";
    return s;
}

// stdout of `argv` run with exactly `env` (nothing else inherited).
std::string run_capture(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return {};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> a = argv, e = env;
    std::vector<char*> av, ev;
    for (auto& s : a) av.push_back(s.data());
    for (auto& s : e) ev.push_back(s.data());
    av.push_back(nullptr);
    ev.push_back(nullptr);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, av[0], &fa, nullptr, av.data(), ev.data());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while (rc == 0 && ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    return out;
}

std::string self_exe() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

// The PIE refusal: read from the loader's mapped segments in process, from
// its file by ldsearch, and on a Debian release both say what its version
// says (RHEL 8's 2.28 is the release that differs: the generator runs there).
TEST(InProcessConfig, the_pie_refusal_is_what_the_loader_itself_holds) {
    setenv("LDSHIM_PROBE_DIR", PROBE_DIR, 1);  // ldshim is linked in statically here
    std::string err;
    auto env = startup_environment(&err);
    ASSERT_TRUE(env) << err;
    auto cfg = derive_in_process(*env, &err);
    ASSERT_TRUE(cfg) << err;
    std::ifstream in(cfg->rtld_path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 4096u) << cfg->rtld_path;
    EXPECT_EQ(cfg->behaviour.refuses_pie, loader_refuses_pie(bytes));
    EXPECT_EQ(cfg->behaviour.refuses_pie, glibc_release(gnu_get_libc_version())->behaviour.refuses_pie);
    EXPECT_FALSE(loader_refuses_pie("cannot dynamically load executable"));
}

// Run only as a child of the test below (it reads the child's own loader).
TEST(InProcessConfigChild, DISABLED_print_derived_config) {
    std::string err;
    auto env = startup_environment(&err);
    auto cfg = env ? derive_in_process(*env, &err) : std::nullopt;
    std::printf("%s", cfg ? config_lines(*cfg).c_str() : ("CFG error " + err + "\n").c_str());
    std::fflush(stdout);
}

// Each setting runs in a fresh process: the unit test binary itself (the
// child above) and the real loader's --help, with the same environment in
// the same order.  The derivation must equal the parsed --help field by field.
TEST(InProcessConfig, equals_the_real_loader_help_across_tunables) {
    const std::string self = self_exe();
    ASSERT_FALSE(self.empty());
    const std::vector<std::vector<std::string>> settings = {
        {},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512VL,-BMI2"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-SSE4_2"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-SSE2"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-XSAVE,-XSAVEC"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-OSXSAVE"},
        {"LD_HWCAP_MASK=0"},
        // Every bit: on aarch64 (about 28 named bits of AT_HWCAP) the loader
        // itself cannot start a program under it, so aarch64 takes 0xff.
        {ldshim::testmachine::kThis.machine == EM_AARCH64 ? "LD_HWCAP_MASK=0xff" : "LD_HWCAP_MASK=0xffffffff"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=0"},
        {"LD_HWCAP_MASK=0", "GLIBC_TUNABLES=glibc.cpu.hwcap_mask=6"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=2", "LD_HWCAP_MASK=0"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2:glibc.cpu.hwcap_mask=0"},
        {"GLIBC_TUNABLES=glibc.cpu.hwcap_mask=0:glibc.cpu.hwcaps=-AVX512F,-SSE4_2", "LD_HWCAP_MASK=6"},
        // ld.so 2.36 reads the hwcaps list on past the end of its value, into
        // the variables that follow it: -AVX2 here counts too.
        {"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F", "FOO=x,-AVX2"},
        // System directories found behind an LD_LIBRARY_PATH list.
        {"LD_LIBRARY_PATH=/usr/lib::/nonexistent;$ORIGIN/x:$PLATFORM:$LIB", "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2"},
    };
    for (const auto& env : settings) {
        std::string label;
        for (const auto& v : env) label += v + " ";
        SCOPED_TRACE("env: " + label);
        std::vector<std::string> child_env = env;
        child_env.emplace_back("LDSHIM_PROBE_DIR=" PROBE_DIR);
        std::string child = run_capture({self, "--gtest_filter=InProcessConfigChild.DISABLED_print_derived_config",
                                         "--gtest_also_run_disabled_tests"},
                                        child_env);
        std::string got;
        for (std::size_t pos = 0; (pos = child.find("CFG ", pos)) != std::string::npos;) {
            auto nl = child.find('\n', pos);
            got += child.substr(pos, nl - pos) + "\n";
            pos = nl;
        }
        std::string err;
        // --help, with the legacy subdirectories its search shows (--help
        // names only the mask's HWCAP_IMPORTANT bits: loader_probe.cc).
        auto want = config_from_answers(run_capture({kLoader, "--help"}, env), probe_text(env), &err);
        ASSERT_TRUE(want) << err;
        // --help does not print $LIB; --list-diagnostics does, and $PLATFORM,
        // which --help states only in its legacy section (before 2.37).
        std::string diag = "\n" + run_capture({kLoader, "--list-diagnostics"}, env);
        if (!want->platform) {
            auto at = diag.find("\ndl_platform=\"");
            if (at != std::string::npos) {
                at += 14;
                std::string p = diag.substr(at, diag.find('"', at) - at);
                if (!p.empty()) want->platform = p;
            }
        }
        EXPECT_EQ(got, config_lines(*want));
        EXPECT_NE(diag.find("\ndl_dst_lib=\"" + want->dst_lib + "\"\n"), std::string::npos) << diag;
        EXPECT_NE(diag.find("\ndl_platform=\"" + want->platform.value_or("") + "\"\n"), std::string::npos) << diag;
    }
}

// A program started as `ld.so PROGRAM` may carry loader options the process
// cannot see (--glibc-hwcaps-prepend, --library-path ...): reported, not guessed.
TEST(InProcessConfig, program_started_through_ld_so_is_reported_not_guessed) {
    std::string out =
        run_capture({kLoader, self_exe(), "--gtest_filter=InProcessConfigChild.DISABLED_print_derived_config",
                     "--gtest_also_run_disabled_tests"},
                    {});
    EXPECT_NE(out.find("CFG error no interpreter mapped"), std::string::npos) << out;
    EXPECT_EQ(out.find("CFG system_dir"), std::string::npos) << out;
}

TEST(GlibcRelease, each_rule_is_the_one_of_the_release_that_changed_it) {
    auto r228 = glibc_release("2.28"), r237 = glibc_release("2.37"), r238 = glibc_release("2.38"),
         r239 = glibc_release("2.39"), r243 = glibc_release("2.43");
    ASSERT_TRUE(r228 && r237 && r238 && r239 && r243);
    EXPECT_EQ(r228->minor, 28);
    EXPECT_TRUE(r228->legacy_subdirs && r228->behaviour.root_dir_stat_bug && r228->behaviour.non_directory_ends_list);
    EXPECT_FALSE(r228->behaviour.explains_candidates);
    EXPECT_FALSE(r237->legacy_subdirs);
    EXPECT_TRUE(r237->behaviour.root_dir_stat_bug);
    EXPECT_FALSE(r238->behaviour.root_dir_stat_bug);
    EXPECT_TRUE(r238->behaviour.non_directory_ends_list);
    EXPECT_FALSE(r239->behaviour.non_directory_ends_list);
    EXPECT_FALSE(r239->behaviour.explains_candidates);
    EXPECT_TRUE(r243->behaviour.explains_candidates);
    EXPECT_TRUE(r228->behaviour.refuses_pie == false && glibc_release("2.29")->behaviour.refuses_pie == false);
    EXPECT_TRUE(glibc_release("2.30")->behaviour.refuses_pie);
    EXPECT_TRUE(glibc_release("2.39")->legacy_cache_entries);
    EXPECT_FALSE(glibc_release("2.40")->legacy_cache_entries);
    for (const char* v : {"2.27", "2.44", "2.36.1", "3.0", "2.", "2.x", "", "2.036x"})
        EXPECT_FALSE(glibc_release(v)) << v;
}

// The probe files ship next to libldshim.so; without them nothing is guessed.
TEST(InProcessConfig, without_its_probe_files_it_declines_and_says_so) {
    std::string out = run_capture({self_exe(), "--gtest_filter=InProcessConfigChild.DISABLED_print_derived_config",
                                   "--gtest_also_run_disabled_tests"},
                                  {"LDSHIM_PROBE_DIR=/nonexistent-ldshim-probe"});
    EXPECT_NE(out.find("CFG error the loader probe cannot be opened (/nonexistent-ldshim-probe/libldshim-probe.so"),
              std::string::npos)
        << out;
}

// A probe tree whose hwcaps target is missing: the loader finds it nowhere
// the layout explains, and the derivation says so instead of guessing.
TEST(InProcessConfig, a_probe_tree_without_its_hwcaps_target_is_reported) {
    char dir[] = "/tmp/ldshim-probe-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string d = dir;
    std::string cp = "cp " PROBE_DIR "/libldshim-probe.so " PROBE_DIR "/libldshim-probe-legacy.so " + d;
    ASSERT_EQ(std::system(cp.c_str()), 0);
    std::string out = run_capture({self_exe(), "--gtest_filter=InProcessConfigChild.DISABLED_print_derived_config",
                                   "--gtest_also_run_disabled_tests"},
                                  {"LDSHIM_PROBE_DIR=" + d});
    std::system(("rm -rf " + d).c_str());
    EXPECT_NE(out.find("CFG error the loader probe's glibc-hwcaps target was not found in " + d), std::string::npos)
        << out;
}
