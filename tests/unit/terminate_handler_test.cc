// lib/terminate_handler.cc, linked into this program: its definition is the
// one the C++ runtime's default terminate handler names, as in libldshim.
// The patterns have no end anchor: under qemu-user the emulator adds a line
// of its own after the abort.
#include <gtest/gtest.h>

#include <csignal>
#include <exception>
#include <stdexcept>

namespace {

[[noreturn]] void escape(auto thrown) {
    try {
        throw thrown;
    } catch (...) {
        std::terminate();  // as when an exception leaves a noexcept function
    }
}

TEST(TerminateHandler, an_escaped_exception_is_named_with_its_what_then_aborts) {
    EXPECT_EXIT(escape(std::runtime_error("the reason")), testing::KilledBySignal(SIGABRT),
                "^ldshim: terminate called after throwing an instance of 'St13runtime_error'\n"
                "  what\\(\\):  the reason\n");
}

TEST(TerminateHandler, an_exception_without_what_is_named_alone) {
    EXPECT_EXIT(escape(42), testing::KilledBySignal(SIGABRT),
                "^ldshim: terminate called after throwing an instance of 'i'\n");
}

TEST(TerminateHandler, a_terminate_without_an_exception_says_so) {
    EXPECT_EXIT(std::terminate(), testing::KilledBySignal(SIGABRT),
                "^ldshim: terminate called without an active exception\n");
}

}  // namespace
