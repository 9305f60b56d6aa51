// The already-loaded answers that need no lock (LiveProcess::loaded_fast):
// names glibc answers from its list of loaded objects alone, each stamped
// with the loader's generation it held at.  Written only under the model's
// lock; read by any thread without one, allocating nothing, and trusted
// only while the loader's generation is still the one stamped.
#pragma once

#include "host/libc.h"
#include "loader/engine.h"

#include <string>
#include <unordered_set>

namespace ldshim::resolver {

// The loader's state: objects ever added, and those now in namespace 0.
// Equal generations mean nothing was loaded or unloaded in between (adds
// only grows; with adds unchanged, nloaded only falls).
struct Generation {
    unsigned long long adds = 0;
    unsigned int nloaded = 0;
    bool operator==(const Generation&) const = default;
};

// The loader's generation from its own words, or false when it cannot be
// read consistently now.
bool read_generation(const host::LoaderWords& words, Generation& g) noexcept;

// Whether glibc answers `name` from its list of loaded objects alone: one
// of the object's names is exactly `name`, which has no dynamic string
// token, so neither the caller nor the filesystem can change the answer
// while nothing is loaded or unloaded.
bool by_name_alone(const std::string& name, const loader::Object& o);

class FastAnswers {
public:
    // True when `file` was remembered at generation `now`; `handed` is then
    // the name to hand glibc (immortal text): `file` where glibc knows the
    // object by it (its l_name or SONAME), else its l_name; nullptr for the
    // main program.  Lock-free, allocation-free.
    static bool lookup(const char* file, const Generation& now, const char*& handed) noexcept;
    // Under the model's lock: `name` is the loaded object `o` at `at`.
    void remember(const std::string& name, const loader::Object& o, const Generation& at);

private:
    const char* intern(const std::string& s);
    std::unordered_set<std::string> interned_;  // names and paths the table points to; never shrinks
};

}  // namespace ldshim::resolver
