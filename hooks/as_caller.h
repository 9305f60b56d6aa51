// Calling a glibc function as if another object had called it.
//
// glibc's dlsym and dlvsym take their caller from their return address: it
// decides the scope of RTLD_DEFAULT (and of RTLD_NEXT), the object named in
// dlerror()'s text, and the binder an auditor's la_symbind sees.  A hook that
// calls dlsym from libldshim's code would make libldshim the caller.  So the
// call is made with a return address inside the caller's own object: a few
// bytes of its code that return again (a "return point"), into ldshim.  The
// loader then answers exactly as it answers the caller.
//
// A return point is looked for only in the caller's executable segment, so
// the address is inside the object by glibc's own test.  None is used where
// the hardware checks returns against a shadow stack (x86-64 CET shadow
// stacks, aarch64 GCS): the return into ldshim would fault there.  Without
// one the caller must be served otherwise (the dlsym hooks then jump to
// glibc and hand out glibc's answer unhooked).
#pragma once

#include <cstdint>
#include <optional>

namespace ldshim::hooks {

struct ReturnPoint {
    std::uintptr_t address = 0;  // code in the caller's object that returns
    std::uintptr_t frame = 0;    // aarch64: the bytes it pops before returning; x86-64: 0
};

// A return point in the object whose code holds `caller`, or nullopt (no
// object holds it, no such code in its segment, a shadow stack is on, or
// LDSHIM_RETURN_POINTS=0 asks for the shadow stack's fallbacks).
// Walks the loaded objects once (host/loaded_objects.h); allocates nothing.
std::optional<ReturnPoint> return_point_in(const void* caller) noexcept;

// Calls fn(a0, a1, a2) with `rp` as its return address; returns its result.
void* call_from(const ReturnPoint& rp, void* fn, void* a0, const void* a1, const void* a2) noexcept;

}  // namespace ldshim::hooks
