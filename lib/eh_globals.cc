// The C++ runtime's per-thread exception state (the Itanium C++ ABI's
// __cxa_get_globals), defined here instead of taken from the static
// libstdc++.  Its copy reaches its thread-local through __tls_get_addr,
// which only the dynamic loader defines: that one import made libldshim.so
// need ld-linux-x86-64.so.2, two more walks of every loaded object by name
// at every start-up.  This one is initial-exec like libldshim's other
// thread-locals (libldshim's TLS block is static already: DF_STATIC_TLS).
namespace {

// libsupc++'s __cxa_eh_globals: the caught exceptions, the count of
// uncaught ones, and (ARM EHABI only) the propagating ones.
struct EhGlobals {
    void* caught;
    unsigned int uncaught;
    void* propagating;
};

[[gnu::tls_model("initial-exec")]] constinit thread_local EhGlobals t_eh_globals{};

}  // namespace

extern "C" {

// No declarations from <cxxabi.h>: there they return the runtime's own
// (incomplete) struct type.
[[gnu::visibility("hidden")]] void* __cxa_get_globals_fast() noexcept { return &t_eh_globals; }
[[gnu::visibility("hidden")]] void* __cxa_get_globals() noexcept { return &t_eh_globals; }

}  // extern "C"
