// The C API's status strings.  Nothing here throws.
#include "ldshim.h"

extern "C" {

// Takes any int, not only ldshim_status values (see ldshim.h).
const char* ldshim_strerror(int status) {
    switch (status) {
        case LDSHIM_ALREADY_LOADED: return "already loaded";
        case LDSHIM_OK: return "success";
        case LDSHIM_ERR_INVALID_ARGUMENT: return "invalid argument";
        case LDSHIM_ERR_NOT_FOUND: return "no acceptable file found";
        case LDSHIM_ERR_BAD_OBJECT: return "not a loadable ELF object";  // reserved: never returned
        case LDSHIM_ERR_NO_MEMORY: return "out of memory";
        case LDSHIM_ERR_BUFFER_TOO_SMALL: return "buffer too small";
        case LDSHIM_ERR_SYSTEM: return "system call failed";
        case LDSHIM_ERR_UNSUPPORTED: return "not supported by this build";
        case LDSHIM_ERR_RANGE_SPANS: return "range crosses a boundary between registered ranges";
        default: return "unknown ldshim status";
    }
}

const char* ldshim_version(void) { return LDSHIM_VERSION_STRING; }

}  // extern "C"
