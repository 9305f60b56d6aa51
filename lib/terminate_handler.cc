// The C++ runtime's default terminate handler, defined here instead of
// taken from the static libstdc++.  Its copy (vterminate.o) demangles the
// exception's type name, and so links the demangler, whose tables every
// process the preload is in would relocate at start-up for a message
// printed on the way to abort.  This one prints the type's mangled name (c++filt reads it) and
// what() where there is one.  It serves only libldshim's own copy of the
// runtime: an exception escaping a noexcept function of ldshim's.
#include "host/real_fs.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <typeinfo>

namespace {

// write(2) only: the handler may run with stdio's locks held.
void say(const char* text) { ldshim::host::write_all(STDERR_FILENO, text); }

}  // namespace

namespace __gnu_cxx {

void __verbose_terminate_handler() {
    static bool terminating = false;
    if (terminating) {
        say("ldshim: terminate called recursively\n");
        std::abort();
    }
    terminating = true;
    const std::type_info* type = abi::__cxa_current_exception_type();
    if (!type) {
        say("ldshim: terminate called without an active exception\n");
        std::abort();
    }
    const char* name = type->name();
    say("ldshim: terminate called after throwing an instance of '");
    say(name[0] == '*' ? name + 1 : name);  // '*': a type local to its object
    say("'\n");
    try {
        throw;
    } catch (const std::exception& e) {
        say("  what():  ");
        say(e.what());
        say("\n");
    } catch (...) {
    }
    std::abort();
}

}  // namespace __gnu_cxx
