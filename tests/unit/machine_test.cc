#include "machine/machine.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <fstream>

using namespace ldshim;

namespace {

// e_machine of this test program's own file.
std::uint16_t own_file_machine() {
    Elf64_Ehdr eh{};
    std::ifstream f("/proc/self/exe", std::ios::binary);
    f.read(reinterpret_cast<char*>(&eh), sizeof eh);
    return eh.e_machine;
}

}  // namespace

TEST(Machine, the_build_machine_is_the_one_this_program_was_built_for) {
    EXPECT_EQ(machine::kOwn, own_file_machine());
    EXPECT_TRUE(machine::modelled(machine::kOwn));
    EXPECT_TRUE(machine::kSlotsKnown);
}

TEST(Machine, each_modelled_machine_has_its_loader) {
    EXPECT_STREQ(machine::loader_path(machine::kX86_64), "/lib64/ld-linux-x86-64.so.2");
    EXPECT_STREQ(machine::loader_path(machine::kAarch64), "/lib/ld-linux-aarch64.so.1");
    EXPECT_EQ(machine::loader_path(EM_RISCV), nullptr);
    EXPECT_FALSE(machine::modelled(EM_RISCV));
}

TEST(Machine, only_address_storing_relocations_are_slots) {
    using machine::SlotKind;
    if (machine::kOwn == machine::kX86_64) {
        EXPECT_EQ(machine::slot_kind(R_X86_64_JUMP_SLOT), SlotKind::jump_slot);
        EXPECT_EQ(machine::slot_kind(R_X86_64_GLOB_DAT), SlotKind::glob_dat);
        EXPECT_EQ(machine::slot_kind(R_X86_64_64), SlotKind::abs64);
        EXPECT_EQ(machine::slot_kind(R_X86_64_RELATIVE), SlotKind::none);
        EXPECT_EQ(machine::slot_kind(R_X86_64_IRELATIVE), SlotKind::none);
    } else {
        EXPECT_EQ(machine::slot_kind(R_AARCH64_JUMP_SLOT), SlotKind::jump_slot);
        EXPECT_EQ(machine::slot_kind(R_AARCH64_GLOB_DAT), SlotKind::glob_dat);
        EXPECT_EQ(machine::slot_kind(R_AARCH64_ABS64), SlotKind::abs64);
        EXPECT_EQ(machine::slot_kind(R_AARCH64_RELATIVE), SlotKind::none);
        EXPECT_EQ(machine::slot_kind(R_AARCH64_IRELATIVE), SlotKind::none);
    }
}
