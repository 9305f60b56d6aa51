// /proc/self/maps as the runtime reads it: which file each mapping is.
#include "host/mapped_files.h"

#include <gtest/gtest.h>

#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using ldshim::host::MappedFiles;

TEST(MappedFiles, a_file_start_names_its_file_by_device_and_inode_even_once_deleted) {
    auto m = MappedFiles::parse(
        "7f0000000000-7f0000001000 r--p 00000000 fe:01 1234                       /usr/lib/libx.so\n"
        "7f0000001000-7f0000003000 r-xp 00001000 fe:01 1234                       /usr/lib/libx.so\n"
        "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
        "7f0000010000-7f0000011000 r--p 00000000 08:11 99 /tmp/t/lib/liby.so (deleted)\n"
        "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
        "garbage line\n");
    const auto* x = m.at(0x7f0000000800);
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->id.dev, static_cast<std::uint64_t>(makedev(0xfe, 0x01)));
    EXPECT_EQ(x->id.ino, 1234u);
    EXPECT_EQ(x->path, "/usr/lib/libx.so");
    EXPECT_FALSE(x->deleted);
    EXPECT_EQ(m.at(0x7f0000001800), nullptr) << "only a file's start is kept";
    EXPECT_EQ(m.at(0x7f0000003800), nullptr) << "an anonymous mapping names no file";
    EXPECT_EQ(m.at(0x7ffc00000010), nullptr);
    EXPECT_EQ(m.at(0x7f0000004000), nullptr) << "past every mapping";
    const auto* y = m.at(0x7f0000010000);
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->path, "/tmp/t/lib/liby.so");
    EXPECT_TRUE(y->deleted);
    EXPECT_EQ(y->id.ino, 99u);
}

// On a kernel; qemu-user emulates the maps file, whose identities then
// differ from stat's (the runtime checks this on the main program and
// falls back to the files: resolver/live_process.cc).
TEST(MappedFiles, this_process_maps_its_own_program_as_stat_sees_it) {
    auto m = MappedFiles::of_this_process();
    ASSERT_FALSE(m.empty());
    const auto* self = m.at(getauxval(AT_PHDR));  // in the first segment
    ASSERT_NE(self, nullptr);
    if (const char* emu = std::getenv("LDSHIM_TEST_EMULATOR"); emu && *emu)
        GTEST_SKIP() << "SKIPPED: under " << emu << " /proc/self/maps is emulated; its identities are not stat's";
    struct stat st {};
    ASSERT_EQ(stat("/proc/self/exe", &st), 0);
    EXPECT_EQ(self->id.ino, st.st_ino);
    EXPECT_EQ(self->id.dev, st.st_dev);
}

// The one parser of a maps line (host/mapped_files.h), which the hooks'
// slot writer reads protections with too.
TEST(MapsLine, every_field_of_a_line_is_read_and_the_path_kept_as_printed) {
    auto m = ldshim::host::parse_maps_line(
        "7f0000001000-7f0000003000 r-xp 00001000 fe:01 1234                       /usr/lib/libx.so (deleted)");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->lo, 0x7f0000001000u);
    EXPECT_EQ(m->hi, 0x7f0000003000u);
    EXPECT_EQ(m->perms, "r-xp");
    EXPECT_EQ(m->offset, 0x1000u);
    EXPECT_EQ(m->major, 0xfeu);
    EXPECT_EQ(m->minor, 0x01u);
    EXPECT_EQ(m->inode, 1234u);
    EXPECT_EQ(m->path, "/usr/lib/libx.so (deleted)");
}

TEST(MapsLine, an_anonymous_mapping_parses_with_or_without_the_space_after_its_inode) {
    auto kernel = ldshim::host::parse_maps_line("7f0000003000-7f0000004000 rw-p 00000000 00:00 0 ");
    ASSERT_TRUE(kernel);
    EXPECT_EQ(kernel->inode, 0u);
    EXPECT_EQ(kernel->path, "");
    // qemu-user prints none.
    auto qemu = ldshim::host::parse_maps_line("7f0000003000-7f0000004000 rw-p 00000000 00:00 0");
    ASSERT_TRUE(qemu);
    EXPECT_EQ(qemu->perms, "rw-p");
    EXPECT_EQ(qemu->path, "");
}

TEST(MapsLine, what_is_no_maps_line_is_refused) {
    EXPECT_FALSE(ldshim::host::parse_maps_line("garbage line"));
    EXPECT_FALSE(ldshim::host::parse_maps_line("7f0000003000-7f0000004000 rw"));
    EXPECT_FALSE(ldshim::host::parse_maps_line("7f0000003000-7f0000004000 rw-p 00000000 00:00 0x"));
    EXPECT_FALSE(ldshim::host::parse_maps_line(""));
}

TEST(MapsLine, this_process_maps_its_stack_writable_and_its_code_executable) {
    int on_stack = 0;
    const auto stack = reinterpret_cast<std::uintptr_t>(&on_stack);
    const auto code = getauxval(AT_ENTRY);
    std::string stack_perms, code_perms;
    std::size_t lines = 0;
    ASSERT_TRUE(ldshim::host::read_own_maps([&](std::string_view line) {
        ++lines;
        auto m = ldshim::host::parse_maps_line(line);
        ASSERT_TRUE(m) << line;
        if (m->lo <= stack && stack < m->hi) stack_perms = m->perms;
        if (m->lo <= code && code < m->hi) code_perms = m->perms;
    }));
    EXPECT_GT(lines, 5u);
    EXPECT_EQ(stack_perms.substr(0, 2), "rw");
    EXPECT_EQ(code_perms.substr(0, 3), "r-x");
}
