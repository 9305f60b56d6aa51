// The engine over an in-memory filesystem: each test is a scenario named
// after the rule it pins down, checked through the LD_DEBUG lines it emits
// and the objects it loads.
#include "loader/engine.h"
#include "elf_builder.h"
#include "fake_fs.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace ldshim::loader;
using namespace ldshim::testing;

namespace {

LoaderConfig small_config() {
    LoaderConfig c;
    c.system_dirs = {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/", "/usr/lib/"};
    c.subdirs = {"glibc-hwcaps/x86-64-v2/", ""};
    c.hwcaps_active = {"x86-64-v2"};
    c.platform = "x86_64";
    c.dst_lib = "lib/x86_64-linux-gnu";
    return c;
}

struct World {
    FakeFs fs;
    LdCache cache;  // empty: no cache hits
    TraceRecorder rec;
    EngineOptions opts;
    LoaderConfig cfg = small_config();
    std::unique_ptr<Engine> engine;

    World() {
        opts.argv0 = "./prog";
        opts.preload_file.reset();
        fs.file("/lib/x86_64-linux-gnu/libc.so.6", as_string(build_elf({.soname = "libc.so.6"})));
        fs.file("/lib64/ld-linux-x86-64.so.2", as_string(build_elf({.soname = "ld-linux-x86-64.so.2"})));
    }
    void lib(const std::string& path, ElfSpec spec = {}) { fs.file(path, as_string(build_elf(spec))); }
    void prog(ElfSpec spec) {
        spec.type = 3;
        spec.interp = "/lib64/ld-linux-x86-64.so.2";
        fs.file("/t/prog", as_string(build_elf(spec)));
    }
    StartResult start() {
        engine = std::make_unique<Engine>(cfg, fs, cache, &rec, opts);
        return engine->start("/t/prog");
    }
    std::vector<std::string> lines() {
        std::vector<std::string> out;
        for (const auto& e : rec.events)
            if (auto p = ld_debug_payload(e); p && is_search_line(*p)) out.push_back(*p);
        rec.events.clear();
        return out;
    }
    std::string loaded(const MapOutcome& m) const {
        return m.object < 0 ? "" : engine->objects()[static_cast<std::size_t>(m.object)].name;
    }
    MapOutcome dlopen(const std::string& name, int caller = 0) {
        DlopenRequest r;
        r.caller = caller;
        r.name = name;
        return engine->dlopen(r);
    }
};

}  // namespace

TEST(Engine, rpath_over_env_over_runpath) {
    World w;
    w.lib("/rp/libL.so");
    w.lib("/env/libL.so");
    w.lib("/run/libL.so");
    w.opts.library_path = "/env";
    w.prog({.needed = {"libc.so.6"}, .rpath = "/rp"});
    ASSERT_TRUE(w.start().ok);
    EXPECT_EQ(w.loaded(w.dlopen("libL.so")), "/rp/libL.so");

    World v;
    v.lib("/env/libL.so");
    v.lib("/run/libL.so");
    v.opts.library_path = "/env";
    v.prog({.needed = {"libc.so.6"}, .runpath = "/run"});
    ASSERT_TRUE(v.start().ok);
    EXPECT_EQ(v.loaded(v.dlopen("libL.so")), "/env/libL.so");
}

TEST(Engine, loader_runpath_disables_every_rpath) {
    World w;
    w.lib("/mainrp/libM.so");
    w.lib("/h/libhelper.so", {.soname = "libhelper.so", .runpath = "/hrun"});
    w.fs.dir("/hrun");
    w.prog({.needed = {"libhelper.so", "libc.so.6"}, .rpath = "/h:/mainrp"});
    ASSERT_TRUE(w.start().ok);
    int helper = w.engine->find_object("libhelper.so");
    ASSERT_GE(helper, 0);
    w.lines();
    auto m = w.dlopen("libM.so", helper);
    ASSERT_TRUE(m.error);
    EXPECT_EQ(m.error->text(), "libM.so: cannot open shared object file: No such file or directory");
    for (const auto& l : w.lines()) EXPECT_EQ(l.find("mainrp"), std::string::npos) << l;
    EXPECT_EQ(w.loaded(w.dlopen("libM.so")), "/mainrp/libM.so");  // from the program itself
}

TEST(Engine, dlopened_object_searches_own_rpath_then_main_not_callers) {
    World w;
    w.lib("/q/libQ.so", {.needed = {"libR.so"}, .rpath = "/qrp"});
    w.fs.dir("/qrp");
    w.lib("/h2rp/libR.so");
    w.lib("/h2/libhelper.so", {.soname = "libhelper.so", .rpath = "/h2rp"});
    w.prog({.needed = {"libhelper.so", "libc.so.6"}, .rpath = "/h2"});
    ASSERT_TRUE(w.start().ok);
    int helper = w.engine->find_object("libhelper.so");
    w.lines();
    auto m = w.dlopen("/q/libQ.so", helper);
    ASSERT_TRUE(m.error);
    auto l = w.lines();
    ASSERT_GE(l.size(), 3u);
    EXPECT_EQ(l[0], "find library=libR.so [0]; searching");
    EXPECT_EQ(l[1], " search path=/qrp/glibc-hwcaps/x86-64-v2:/qrp\t\t(RPATH from file /q/libQ.so)");
    // /h2/glibc-hwcaps/x86-64-v2 was pruned while libhelper was found at startup.
    EXPECT_EQ(l[4], " search path=/h2\t\t(RPATH from file ./prog)");
    // The failed dlopen unloaded libQ: it can be opened again by name.
    EXPECT_EQ(w.engine->find_object("/q/libQ.so"), -1);
}

TEST(Engine, soname_answers_once_loaded) {
    World w;
    w.lib("/rp/libreal.so", {.soname = "libalias.so.2"});
    w.prog({.needed = {"libc.so.6"}, .rpath = "/rp"});
    ASSERT_TRUE(w.start().ok);
    auto a = w.dlopen("libreal.so");
    w.lines();
    auto b = w.dlopen("libalias.so.2");
    EXPECT_EQ(a.object, b.object);
    EXPECT_TRUE(w.lines().empty());  // already loaded: no search at all
}

TEST(Engine, header_label_belongs_to_list_that_created_the_entry) {
    World w;
    w.fs.dir("/common");
    w.lib("/b/libX.so");
    w.lib("/m/libB.so", {.soname = "libB.so", .needed = {"libX.so"}, .rpath = "/common:/b"});
    w.prog({.needed = {"libB.so", "libc.so.6"}, .rpath = "/common:/m"});
    ASSERT_TRUE(w.start().ok);
    auto l = w.lines();
    auto it = std::find(l.begin(), l.end(), "find library=libX.so [0]; searching");
    ASSERT_NE(it, l.end());
    EXPECT_EQ(*(it + 1), " search path=/common:/b/glibc-hwcaps/x86-64-v2:/b\t\t(RPATH from file ./prog)");
}

TEST(Engine, list_with_only_missing_dirs_is_dropped_for_good) {
    World w;
    w.opts.library_path = "/nonexist3";
    w.prog({.needed = {"libc.so.6"}, .rpath = "/nonexist1:/nonexist2"});
    ASSERT_TRUE(w.start().ok);
    w.lines();
    EXPECT_TRUE(w.dlopen("libnothere.so").error);
    auto l = w.lines();
    ASSERT_GE(l.size(), 2u);
    // The RPATH list is gone; the environment list stays as an empty header.
    EXPECT_EQ(l[1], " search path=\t\t(LD_LIBRARY_PATH)");
}

TEST(Engine, needed_cycle_terminates) {
    World w;
    w.lib("/l/libA.so", {.soname = "libA.so", .needed = {"libB.so"}});
    w.lib("/l/libB.so", {.soname = "libB.so", .needed = {"libA.so"}});
    w.prog({.needed = {"libA.so", "libc.so.6"}, .rpath = "/l"});
    auto r = w.start();
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(w.engine->objects().size(), 6u);  // main, ld.so, vdso, A, B, libc
}

TEST(Engine, deep_dependency_chain) {
    World w;
    const int depth = 2000;
    for (int i = 0; i < depth; ++i) {
        ElfSpec s{.soname = "lib" + std::to_string(i) + ".so"};
        if (i + 1 < depth) s.needed = {"lib" + std::to_string(i + 1) + ".so"};
        w.lib("/chain/lib" + std::to_string(i) + ".so", s);
    }
    w.prog({.needed = {"lib0.so", "libc.so.6"}, .rpath = "/chain"});
    auto r = w.start();
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(w.engine->objects().size(), static_cast<std::size_t>(depth + 4));
}

TEST(Engine, missing_dependency_fails_startup_with_glibc_text) {
    World w;
    w.prog({.needed = {"libgone.so"}});
    auto r = w.start();
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error,
              "./prog: error while loading shared libraries: libgone.so: cannot open shared object file: "
              "No such file or directory");
}

TEST(Engine, keep_going_continues_past_missing_library) {
    World w;
    w.opts.keep_going = true;
    w.prog({.needed = {"libgone.so", "libc.so.6"}});
    EXPECT_TRUE(w.start().ok);
    EXPECT_GE(w.engine->find_object("libc.so.6"), 0);
}

TEST(Engine, secure_mode_ignores_ld_library_path_and_untrusted_origin) {
    World w;
    w.opts.secure = true;
    w.opts.library_path = "/env";
    w.lib("/env/libL.so");
    w.lib("/t/o1/libL.so");
    w.prog({.needed = {"libc.so.6"}, .rpath = "$ORIGIN/o1"});
    ASSERT_TRUE(w.start().ok);
    w.lines();
    auto m = w.dlopen("libL.so");
    EXPECT_TRUE(m.error);
    for (const auto& l : w.lines()) {
        EXPECT_EQ(l.find("/env"), std::string::npos) << l;
        EXPECT_EQ(l.find("/t/o1"), std::string::npos) << l;
    }
}

TEST(Engine, secure_preload_needs_setuid_bit_and_no_slash) {
    World w;
    w.opts.secure = true;
    w.opts.preload = "libP.so /abs/libQ.so";
    w.lib("/lib/x86_64-linux-gnu/libP.so");  // mode 0755: no set-user-ID bit
    w.fs.file("/abs/libQ.so", as_string(build_elf({})), 0104755);
    w.prog({.needed = {"libc.so.6"}});
    auto r = w.start();
    ASSERT_TRUE(r.ok);
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_EQ(r.warnings[0],
              "ERROR: ld.so: object 'libP.so' from LD_PRELOAD cannot be preloaded (cannot open shared object file): "
              "ignored.");
    EXPECT_EQ(w.engine->find_object("/abs/libQ.so"), -1);
}

TEST(Engine, dst_in_needed_is_fatal_in_secure_mode) {
    World w;
    w.opts.secure = true;
    w.prog({.needed = {"$ORIGIN/o1/libO.so"}});
    auto r = w.start();
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error,
              "./prog: error while loading shared libraries: $ORIGIN/o1/libO.so: DST not allowed in "
              "SUID/SGID programs");
}

TEST(Engine, records_how_each_object_was_found) {
    World w;
    w.lib("/rp/libA.so", {.soname = "libA.so"});
    w.prog({.needed = {"libA.so", "libc.so.6"}, .rpath = "/rp"});
    ASSERT_TRUE(w.start().ok);
    const auto& a = w.engine->objects()[static_cast<std::size_t>(w.engine->find_object("libA.so"))];
    EXPECT_EQ(a.found_by, Source::rpath);
    EXPECT_EQ(a.found_via, 0);
    EXPECT_EQ(a.origin, "/rp");
    const auto& c = w.engine->objects()[static_cast<std::size_t>(w.engine->find_object("libc.so.6"))];
    EXPECT_EQ(c.found_by, Source::system);
}

TEST(Engine, rtld_noload_miss_is_null_without_error) {
    World w;
    w.lib("/rp/libA.so");
    w.prog({.needed = {"libc.so.6"}, .rpath = "/rp"});
    ASSERT_TRUE(w.start().ok);
    DlopenRequest r;
    r.name = "libA.so";
    r.noload = true;
    auto m = w.engine->dlopen(r);
    EXPECT_FALSE(m.error);
    EXPECT_EQ(m.object, -1);
    EXPECT_FALSE(w.lines().empty());  // the search still ran and printed
}

// glibc 2.43 says why each candidate failed, on a line of its own after it:
// a file that is not there, one of the other class, one for another machine
// (all three skipped), and also a path opened without a search.
// glibc 2.30 (bug 24323) refuses a PIE in dlopen; 2.28 and 2.29 map it.
TEST(Engine, a_pie_is_refused_from_2_30_and_mapped_like_a_library_before) {
    for (bool refuses : {true, false}) {
        World w;
        w.cfg.behaviour.refuses_pie = refuses;
        w.lib("/p/libpie.so", {.flags_1 = 0x08000000});
        w.prog({.needed = {"libc.so.6"}});
        ASSERT_TRUE(w.start().ok);
        MapOutcome m = w.dlopen("/p/libpie.so");
        EXPECT_EQ(w.loaded(m), refuses ? "" : "/p/libpie.so") << refuses;
        if (refuses) {
            ASSERT_TRUE(m.error) << refuses;
            EXPECT_EQ(m.error->errstring, "cannot dynamically load position-independent executable");
        }
    }
}

TEST(Engine, a_loader_that_explains_candidates_gets_a_note_after_each_failed_one) {
    World w;
    w.cfg.behaviour.explains_candidates = true;
    w.lib("/a/libother.so");
    w.lib("/b/libL.so", {.elf_class = 1});
    w.lib("/c/libL.so", {.machine = 183});
    w.lib("/d/libL.so");
    w.prog({.needed = {"libc.so.6"}, .rpath = "/a:/b:/c:/d"});
    ASSERT_TRUE(w.start().ok);
    w.lines();
    EXPECT_EQ(w.loaded(w.dlopen("libL.so")), "/d/libL.so");
    EXPECT_EQ(w.lines(),
              (std::vector<std::string>{"find library=libL.so [0]; searching",
                                        " search path=/a:/b:/c:/d\t\t(RPATH from file ./prog)",
                                        "  trying file=/a/libL.so", "    (no such file)", "  trying file=/b/libL.so",
                                        "    (incompatible ELF class)", "  trying file=/c/libL.so",
                                        "    (incompatible ELF machine)", "  trying file=/d/libL.so"}));
    EXPECT_EQ(w.loaded(w.dlopen("/e/libM.so")), "");
    EXPECT_EQ(w.lines(), (std::vector<std::string>{"    (no such file)"}));
    // Loaders before 2.43 print none of them.
    World v;
    v.lib("/b/libL.so", {.elf_class = 1});
    v.prog({.needed = {"libc.so.6"}, .rpath = "/a:/b"});
    ASSERT_TRUE(v.start().ok);
    v.lines();
    v.dlopen("libL.so");
    for (const auto& l : v.lines()) EXPECT_FALSE(l.starts_with("    (")) << l;
}

// glibc takes an object's $ORIGIN from the directory current when it was
// opened (getcwd in _dl_new_object), for each object named by a relative
// path: after a chdir, a relative name's $ORIGIN is the new directory.
TEST(Engine, a_relative_name_opened_after_chdir_takes_its_origin_from_the_new_directory) {
    World w;
    w.prog({.needed = {"libc.so.6"}});
    w.lib("/a/sub/libx.so");
    w.lib("/b/sub/liby.so", {.needed = {"libdep.so"}, .rpath = "$ORIGIN/deps"});
    w.lib("/b/sub/deps/libdep.so");
    w.fs.set_cwd("/a");
    ASSERT_TRUE(w.start().ok);
    auto x = w.dlopen("sub/libx.so");
    ASSERT_FALSE(x.error);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(x.object)].origin, "/a/sub");
    w.fs.set_cwd("/b");
    auto y = w.dlopen("sub/liby.so");
    ASSERT_FALSE(y.error) << y.error->text();
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(y.object)].origin, "/b/sub");
    EXPECT_GE(w.engine->find_object("libdep.so"), 0);
}

// A live process's start-up (ProcessStart): the objects its loader holds
// stand in for the files the emulation finds now.
namespace {

ObjectFacts facts_of(ElfSpec spec) { return read_facts(build_elf(spec)).facts; }

ProcessStart live_start(std::vector<ProcessStart::Loaded> loaded) {
    ProcessStart p;
    p.loaded = std::move(loaded);
    p.loaded.push_back({"/lib/x86_64-linux-gnu/libc.so.6", facts_of({.soname = "libc.so.6"}), {}});
    return p;
}

}  // namespace

TEST(ProcessStart, a_library_replaced_since_start_up_keeps_the_facts_and_identity_it_was_loaded_with) {
    World w;
    w.lib("/rp/libA.so", {.soname = "libB.so"});  // the file now
    w.prog({.needed = {"libA.so", "libc.so.6"}, .rpath = "/rp"});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    ASSERT_TRUE(
        w.engine->start("/t/prog", {}, live_start({{"/rp/libA.so", facts_of({.soname = "libA.so"}), {7, 42}}})).ok);
    int a = w.engine->find_object("libA.so");
    ASSERT_GE(a, 0);
    const Object& o = w.engine->objects()[static_cast<std::size_t>(a)];
    EXPECT_EQ(o.facts.soname, "libA.so");
    EXPECT_EQ(o.id, (FileId{7, 42}));
    EXPECT_EQ(o.found_by, Source::rpath);
    EXPECT_EQ(w.engine->find_object("libB.so"), -1);
}

TEST(ProcessStart, a_library_whose_file_is_gone_is_still_loaded_where_its_loader_needed_it) {
    World w;
    w.lib("/mid/libM.so", {.soname = "libM.so", .needed = {"libA.so"}, .rpath = "/gone"});
    w.prog({.needed = {"libM.so"}, .rpath = "/mid"});  // in breadth-first order: libM, libA, libc
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    ASSERT_TRUE(
        w.engine
            ->start("/t/prog", {},
                    live_start(
                        {{"/mid/libM.so", facts_of({.soname = "libM.so", .needed = {"libA.so"}, .rpath = "/gone"}), {}},
                         {"/gone/libA.so", facts_of({.soname = "libA.so"}), {}}}))
            .ok);
    int a = w.engine->find_object("libA.so"), m = w.engine->find_object("libM.so");
    ASSERT_GE(a, 0);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(a)].loader, m);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(a)].name, "/gone/libA.so");
}

// (Found by another spelling of its path: "/p/libX.so" from the program's
// RPATH, the preload named "/p//./libX.so".)
TEST(ProcessStart, a_dependency_found_as_a_loaded_file_is_that_object_though_the_file_is_gone) {
    World w;
    w.opts.preload = "/p//./libX.so";
    w.prog({.needed = {"libc.so.6"}, .rpath = "/p"});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    StartResult r =
        w.engine->start("/t/prog", {}, live_start({{"/p//./libX.so", facts_of({.needed = {"libX.so"}}), {}}}));
    ASSERT_TRUE(r.ok) << r.error;
    int x = w.engine->find_object("/p//./libX.so");
    ASSERT_GE(x, 0);
    EXPECT_EQ(w.engine->find_object("libX.so"), x) << "the name the start-up's same-file match added";
}

TEST(ProcessStart, a_search_that_loaded_nothing_at_start_up_loads_nothing_though_a_file_is_there_now) {
    World w;
    w.opts.preload = "libnope.so";
    w.lib("/lib/x86_64-linux-gnu/libnope.so");  // appeared since
    w.prog({.needed = {"libc.so.6"}});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    w.engine->set_keep_going(true);
    ASSERT_TRUE(w.engine->start("/t/prog", {}, live_start({})).ok);
    EXPECT_EQ(w.engine->find_object("libnope.so"), -1);
    EXPECT_TRUE(w.engine->preloads().empty());
}

TEST(ProcessStart, a_relative_name_takes_its_origin_from_the_directory_current_at_start_up) {
    World w;
    w.fs.set_cwd("/elsewhere");
    w.prog({.needed = {"libR.so", "libc.so.6"}, .rpath = "lib"});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    ProcessStart p = live_start({{"lib/libR.so", facts_of({.soname = "libR.so"}), {}}});
    p.cwd = "/start";
    ASSERT_TRUE(w.engine->start("/t/prog", {}, std::move(p)).ok);
    int r = w.engine->find_object("libR.so");
    ASSERT_GE(r, 0);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(r)].origin, "/start/lib");
}

// Another tool's environment may load at start-up what the model's does not
// name (valgrind's preloads): that object is left to the process's walk and
// the rest is still taken.
TEST(ProcessStart, an_object_the_emulation_does_not_know_of_holds_up_nothing_after_it) {
    World w;
    w.prog({.needed = {"libA.so"}, .rpath = "/rp"});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    ASSERT_TRUE(w.engine
                    ->start("/t/prog", {},
                            live_start({{"/tool/vgpreload_core.so", facts_of({}), {}},
                                        {"/rp/libA.so", facts_of({.soname = "libA.so"}), {3, 4}}}))
                    .ok);
    int a = w.engine->find_object("libA.so");
    ASSERT_GE(a, 0);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(a)].id, (FileId{3, 4}));
    EXPECT_EQ(w.engine->find_object("/tool/vgpreload_core.so"), -1);
}

// A preload that failed at start-up is not a dependency of the same name
// loaded later (libqg0.so from a library's RPATH; generator seed 20272938).
TEST(ProcessStart, a_failed_preload_is_not_a_later_dependency_of_its_name) {
    World w;
    w.opts.preload = "libP.so";
    w.lib("/deps/libQ.so", {.soname = "libQ.so", .needed = {"libP.so"}, .rpath = "/deps"});
    w.lib("/deps/libP.so", {.soname = "libP.so"});
    w.prog({.needed = {"libQ.so"}, .rpath = "/deps/../nowhere:/deps"});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    w.engine->set_keep_going(true);
    ASSERT_TRUE(w.engine
                    ->start("/t/prog", {},
                            live_start({{"/deps/libQ.so",
                                         facts_of({.soname = "libQ.so", .needed = {"libP.so"}, .rpath = "/deps"}),
                                         {}},
                                        {"/deps/libP.so", facts_of({.soname = "libP.so"}), {}}}))
                    .ok);
    EXPECT_TRUE(w.engine->preloads().empty());
    int q = w.engine->find_object("libQ.so"), p = w.engine->find_object("libP.so");
    ASSERT_GE(p, 0);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(p)].loader, q);
}

// ld.so.cache lists a library by its SONAME, at a file of another name: the
// object the start-up loaded for that name is the one of that SONAME
// (generator seed 20278370).
TEST(ProcessStart, a_library_found_by_its_soname_in_the_cache_is_taken_whatever_its_file_name) {
    World w;
    w.prog({.needed = {"libS.so.1"}});
    w.engine = std::make_unique<Engine>(w.cfg, w.fs, w.cache, &w.rec, w.opts);
    ASSERT_TRUE(
        w.engine->start("/t/prog", {}, live_start({{"/c/libS-1.2.so", facts_of({.soname = "libS.so.1"}), {5, 6}}})).ok);
    int s = w.engine->find_object("libS.so.1");
    ASSERT_GE(s, 0);
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(s)].name, "/c/libS-1.2.so");
    EXPECT_EQ(w.engine->objects()[static_cast<std::size_t>(s)].id, (FileId{5, 6}));
}
