// The LD_DEBUG log parser against every line form glibc 2.31, 2.36 and 2.41
// write (elf/'s _dl_debug_printf calls, in the layout of real captures).
#include "tools/ldsearch/ld_debug_log.h"

#include <gtest/gtest.h>

#include <string>

using ldsearch::parse_ld_debug_log;

namespace {

// Every line as the loader prefixes it: the pid, a colon, a tab.
std::string log(std::initializer_list<const char*> payloads) {
    std::string out;
    for (const char* p : payloads) out += std::string("      9643:\t") + p + "\n";
    return out;
}

}  // namespace

TEST(LdDebugLog, every_line_form_of_the_loader_is_read_without_a_warning) {
    std::string text = log({
        "",
        "file=libc.so.6 [0];  needed by ./m [0]",
        "find library=libc.so.6 [0]; searching",
        " search cache=/etc/ld.so.cache",
        "  trying file=/lib/x86_64-linux-gnu/libc.so.6",
        "",
        "file=libc.so.6 [0];  generating link map",
        "  dynamic: 0x00007fb4a62cdb60  base: 0x00007fb4a60fb000   size: 0x00000000001e1f50",
        "    entry: 0x00007fb4a6122410  phdr: 0x00007fb4a60fb040  phnum:                 14",
        "",
        "relocation processing: /lib/x86_64-linux-gnu/libc.so.6",
        "symbol=malloc;  lookup in file=./m [0]",
        "binding file /lib/x86_64-linux-gnu/libc.so.6 [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol "
        "`malloc'",
        "WARNING: Unsupported flag value(s) of 0x8 in DT_FLAGS_1.",
        "calling init: /lib64/ld-linux-x86-64.so.2",
        "calling preinit: ./m",
        "initialize program: ./m",
        "transferring control: ./m",
        "file=./liba.so [0];  dynamically loaded by ./m [0]",
        "file=./liba.so [0];  generating link map",
        "object=./liba.so [0]",
        " scope 0: ./m /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2",
        "add ./liba.so [0] to global scope",
        "activating NODELETE for ./liba.so [0]",
        "marking ./liba.so [0] as NODELETE",
        "opening file=./liba.so [0]; direct_opencount=1",
        "file=./libb.so [0];  dynamically loaded by ./m [0]",
        "file=./liba.so [0];  needed by ./libb.so [0] (relocation dependency)",
        "load auxiliary object=libaux.so requested by file=./libb.so",
        "audit changed filename ./libb.so -> ./libb2.so",
        "closing file=./libb.so; direct_opencount=0",
        "calling fini: ./libb.so [0]",
        "file=./libb.so [0];  destroying link map",
        "runtime linker statistics:",
        "  total startup time in dynamic loader: 101880 cycles",
        "           final number of relocations: 148",
    });
    auto r = parse_ld_debug_log(text);
    ASSERT_TRUE(r.process) << r.error;
    EXPECT_EQ(r.unread, 0u) << (r.warnings.empty() ? "" : r.warnings[0]);
    ASSERT_EQ(r.process->programs.size(), 1u);
    const auto& prog = r.process->programs[0];
    EXPECT_EQ(prog.argv0, "./m");
    ASSERT_EQ(prog.startup.size(), 1u);
    EXPECT_EQ(prog.startup[0].lines.size(), 3u);
    // liba.so and libb.so dlopen'ed, then libb.so unloaded.
    ASSERT_EQ(prog.later.size(), 3u);
    EXPECT_TRUE(prog.later[0].dynamic);
    EXPECT_EQ(prog.later[1].name, "./libb.so");
    EXPECT_TRUE(prog.later[2].unload);
    EXPECT_EQ(prog.later[2].name, "./libb.so");
}

TEST(LdDebugLog, a_line_it_cannot_place_is_a_numbered_warning_and_the_rest_is_read) {
    std::string text =
        log({"file=libc.so.6 [0];  needed by ./m [0]"}) + "garbage\n" +
        log({"  trying file=/x", "file=libz.so.1 [0];  weighed by ./m [0]", "transferring control: ./m"});
    auto r = parse_ld_debug_log(text);
    ASSERT_TRUE(r.process) << r.error;
    EXPECT_EQ(r.unread, 3u);
    ASSERT_EQ(r.warnings.size(), 3u);
    EXPECT_EQ(r.warnings[0], "line 2: not a loader debug line (\"PID:<TAB>...\"), skipped");
    EXPECT_EQ(r.warnings[1], "line 3: search line outside a search, skipped");
    EXPECT_EQ(r.warnings[2], "line 4: a file= line of an unknown form, skipped");
    EXPECT_EQ(r.process->programs.size(), 1u);
}

TEST(LdDebugLog, a_text_without_any_loader_line_is_an_error_and_an_empty_one_is_no_process) {
    EXPECT_FALSE(parse_ld_debug_log("hello\nworld\n").process);
    EXPECT_NE(parse_ld_debug_log("hello\n").error, "");
    auto empty = parse_ld_debug_log("");
    ASSERT_TRUE(empty.process);
    EXPECT_TRUE(empty.process->programs.empty());
}

// glibc 2.43's notes on failed candidates belong to the search they follow,
// also to the lookup of a path, which has no other search line.
TEST(LdDebugLog, glibc_2_43_notes_on_failed_candidates_are_search_lines) {
    std::string text = log({
        "",
        "file=libc.so.6 [0];  needed by ./m [0]",
        "find library=libc.so.6 [0]; searching",
        " search path=/opt/x\t\t(LD_LIBRARY_PATH)",
        "  trying file=/opt/x/libc.so.6",
        "    (no such file)",
        " search cache=/etc/ld.so.cache",
        "  trying file=/lib/x86_64-linux-gnu/libc.so.6",
        "",
        "transferring control: ./m",
        "file=/opt/x/liba.so [0];  dynamically loaded by ./m [0]",
        "    (no such file)",
    });
    auto r = parse_ld_debug_log(text);
    ASSERT_TRUE(r.process) << r.error;
    EXPECT_EQ(r.unread, 0u) << (r.warnings.empty() ? "" : r.warnings[0]);
    const auto& prog = r.process->programs.at(0);
    ASSERT_EQ(prog.startup.size(), 1u);
    EXPECT_EQ(prog.startup[0].lines.at(3), "    (no such file)");
    ASSERT_EQ(prog.later.size(), 1u);
    EXPECT_EQ(prog.later[0].lines, std::vector<std::string>{"    (no such file)"});
}

// An LD_AUDIT module named with a DST (--diff's, DIR/$PLATFORM/...) is
// announced before the program, in namespace 1, "dynamically loaded by" the
// loader: it names neither the program nor a lookup of it.
TEST(LdDebugLog, an_audit_module_loaded_before_the_program_is_not_the_program) {
    std::string text = log({
        "",
        "file=/tmp/c/$PLATFORM/ldsearch-env-audit.so [1];  dynamically loaded by /lib/ld-linux-aarch64.so.1 [0]",
        "file=/tmp/c/$PLATFORM/ldsearch-env-audit.so [1];  generating link map",
        "calling init: /tmp/c/aarch64/ldsearch-env-audit.so",
        "opening file=/tmp/c/aarch64/ldsearch-env-audit.so [1]; direct_opencount=1",
        "",
        "file=libc.so.6 [0];  needed by ./m [0]",
        "find library=libc.so.6 [0]; searching",
        " search cache=/etc/ld.so.cache",
        "  trying file=/lib/aarch64-linux-gnu/libc.so.6",
        "",
        "transferring control: ./m",
    });
    auto r = parse_ld_debug_log(text);
    ASSERT_TRUE(r.process) << r.error;
    EXPECT_EQ(r.unread, 0u) << (r.warnings.empty() ? "" : r.warnings[0]);
    ASSERT_EQ(r.process->programs.size(), 1u);
    const auto& prog = r.process->programs[0];
    EXPECT_EQ(prog.argv0, "./m");
    ASSERT_EQ(prog.startup.size(), 1u);
    EXPECT_EQ(prog.startup[0].name, "libc.so.6");
    EXPECT_TRUE(prog.later.empty());
}
