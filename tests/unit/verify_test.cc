// glibc's acceptance rules for a candidate file.
#include "loader/verify.h"
#include "elf_builder.h"
#include "fake_fs.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace ldshim::loader;
using namespace ldshim::testing;

namespace {
VerifyResult check(const std::string& bytes, int read_errno = 0) {
    FakeFs fs;
    if (read_errno) {
        fs.dir("/d");
        return verify_candidate(*fs.open("/d").image);
    }
    fs.file("/f", bytes);
    return verify_candidate(*fs.open("/f").image);
}
std::string good() { return as_string(build_elf({})); }
}  // namespace

TEST(Verify, native_shared_object_accepted) { EXPECT_EQ(check(good()).verdict, Verdict::accept); }

TEST(Verify, short_file_is_fatal_without_errno) {
    auto r = check(
        "\x7f"
        "ELF");
    EXPECT_EQ(r.verdict, Verdict::fatal);
    EXPECT_EQ(r.message, "file too short");
    EXPECT_EQ(r.error, 0);
}

TEST(Verify, directory_is_fatal_with_eisdir) {
    auto r = check("", EISDIR);
    EXPECT_EQ(r.message, "cannot read file data");
    EXPECT_EQ(r.error, EISDIR);
}

TEST(Verify, linker_script_is_invalid_elf_header) {
    auto r = check("/* GNU ld script */ GROUP ( libc.so.6 )" + std::string(64, ' '));
    EXPECT_EQ(r.verdict, Verdict::fatal);
    EXPECT_EQ(r.message, "invalid ELF header");
}

TEST(Verify, other_class_is_skipped) {
    std::string b = good();
    b[EI_CLASS] = ELFCLASS32;
    EXPECT_EQ(check(b).verdict, Verdict::skip_class);
}

TEST(Verify, other_machine_is_skipped) {
    EXPECT_EQ(check(as_string(build_elf({.machine = EM_AARCH64}))).verdict, Verdict::skip_machine);
}

TEST(Verify, relocatable_object_is_fatal) {
    auto r = check(as_string(build_elf({.type = ET_REL})));
    EXPECT_EQ(r.message, "only ET_DYN and ET_EXEC can be loaded");
}

TEST(Verify, header_field_errors_in_loader_order) {
    std::string b = good();
    b[EI_DATA] = ELFDATA2MSB;
    EXPECT_EQ(check(b).message, "ELF file data encoding not little-endian");
    b = good();
    b[EI_VERSION] = 0;
    EXPECT_EQ(check(b).message, "ELF file version ident does not match current one");
    b = good();
    b[EI_OSABI] = ELFOSABI_FREEBSD;
    EXPECT_EQ(check(b).message, "ELF file OS ABI invalid");
    b = good();
    b[EI_ABIVERSION] = 1;
    EXPECT_EQ(check(b).message, "ELF file ABI version invalid");
    b[EI_OSABI] = ELFOSABI_GNU;  // GNU ABI versions below LIBC_ABI_MAX are fine
    EXPECT_EQ(check(b).verdict, Verdict::accept);
    b = good();
    b[EI_PAD + 2] = 1;
    EXPECT_EQ(check(b).message, "nonzero padding in e_ident");
}

TEST(Verify, bad_phentsize_is_fatal) {
    std::string b = good();
    b[offsetof(Elf64_Ehdr, e_phentsize)] = 40;
    EXPECT_EQ(check(b).message, "ELF file's phentsize not the expected size");
}

TEST(Verify, program_headers_past_end_are_unreadable) {
    std::string b = good();
    std::uint16_t many = 0xffff;
    std::memcpy(&b[offsetof(Elf64_Ehdr, e_phnum)], &many, 2);
    EXPECT_EQ(check(b).message, "cannot read file data");
}
