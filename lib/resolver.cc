// The C API of the runtime resolver: the thin edge that calls the real
// dlopen with what loader/live.cc decided.
#include "ldshim.h"
#include "loader/live.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

using ldshim::loader::LiveProcess;
using ldshim::loader::Resolution;

namespace {

// The last failure of this thread, with glibc's text.
thread_local std::string t_error;
thread_local bool t_error_set = false;

void set_error(const std::string& e) {
    t_error = e;
    t_error_set = true;
}

void* libc_dlopen(const char* file, int mode) { return dlopen(file, mode); }

}  // namespace

extern "C" {

void* ldshim_dlopen_via(void* (*next)(const char*, int), const void* caller, const char* file, int mode) {
    if (!next) next = libc_dlopen;
    if (!file) return next(nullptr, mode);
    Resolution r;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0);
    } catch (...) {
        return next(file, mode);  // out of memory in the model: let glibc decide
    }
    switch (r.kind) {
        case Resolution::Kind::loaded:
            // By its own name: glibc returns the same object, one more reference.
            return next(r.path.empty() ? nullptr : r.path.c_str(), mode);
        case Resolution::Kind::found: {
            void* h = next(r.path.c_str(), mode);
            LiveProcess::instance().note_changed();
            return h;
        }
        case Resolution::Kind::not_found:
            if (!r.error.empty()) {
                set_error(r.error);
                // Leave glibc's own dlerror() with the same text: the same
                // name with RTLD_NOLOAD fails the same way when glibc, asked
                // from here, finds nothing either -- and loads nothing if it
                // does (then dlerror() says nothing; ldshim_dlerror() still
                // has the text).
                if (void* h = next(file, mode | RTLD_NOLOAD)) dlclose(h);
            }
            return nullptr;
        case Resolution::Kind::failed: break;
    }
    return next(file, mode);
}

void* ldshim_dlopen_from(const void* caller, const char* file, int mode) {
    return ldshim_dlopen_via(libc_dlopen, caller, file, mode);
}

void* ldshim_dlopen(const char* file, int mode) {
    return ldshim_dlopen_via(libc_dlopen, __builtin_return_address(0), file, mode);
}

void* ldshim_dlmopen_from(long lmid, const void* caller, const char* file, int mode) {
    if (lmid == LM_ID_BASE) return ldshim_dlopen_from(caller, file, mode);
    // A fresh namespace is empty, so its search depends only on the caller
    // and the process-wide state: ldshim can answer it.  An existing other
    // namespace is invisible to ldshim: glibc decides.
    if (lmid != LM_ID_NEWLM || !file) return dlmopen(lmid, file, mode);
    Resolution r;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0, false, true);
    } catch (...) {
        return dlmopen(lmid, file, mode);
    }
    if (r.kind == Resolution::Kind::found) return dlmopen(LM_ID_NEWLM, r.path.c_str(), mode);
    if (r.kind == Resolution::Kind::not_found) {
        if (!r.error.empty()) set_error(r.error);
        return nullptr;
    }
    return dlmopen(lmid, file, mode);
}

int ldshim_resolve(const void* caller, const char* file, int mode, char* path, size_t size) {
    if (!path && size) return LDSHIM_ERR_INVALID_ARGUMENT;
    Resolution r;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0);
    } catch (...) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    if (r.kind == Resolution::Kind::failed) {
        set_error(r.error);
        return LDSHIM_ERR_SYSTEM;
    }
    if (r.kind == Resolution::Kind::not_found) {
        if (!r.error.empty()) set_error(r.error);
        return LDSHIM_ERR_NOT_FOUND;
    }
    if (r.path.size() + 1 > size) return LDSHIM_ERR_BUFFER_TOO_SMALL;
    std::memcpy(path, r.path.c_str(), r.path.size() + 1);
    return r.kind == Resolution::Kind::loaded ? LDSHIM_ALREADY_LOADED : LDSHIM_OK;
}

char* ldshim_dlerror(void) {
    if (t_error_set) {
        t_error_set = false;
        static thread_local std::string shown;
        shown = t_error;
        return shown.data();
    }
    return dlerror();
}

}  // extern "C"
