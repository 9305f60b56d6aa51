// The dependency tree of a started process model, for people: every
// DT_NEEDED entry of every object, with the object it resolved to and how
// that object was found (RPATH of X, LD_LIBRARY_PATH, RUNPATH of X,
// ld.so.cache, system directory, a path, or already loaded by name or
// SONAME).  Pure: built from the engine's objects after start().
#pragma once

#include "loader/engine.h"

#include <string>
#include <vector>

namespace ldsearch {

// The engine's model and trace are this tool's vocabulary.
using namespace ldshim::loader;  // NOLINT(google-build-using-namespace)

struct DepNode {
    enum class How : std::uint8_t {
        root,            // the program
        preload,         // LD_PRELOAD or /etc/ld.so.preload
        found,           // this lookup loaded the object
        already_loaded,  // matched an object loaded earlier, by name
        soname_match,    // matched an object loaded earlier, by its SONAME
        not_found,
    };
    std::string name;  // the DT_NEEDED string (the program's path for the root)
    int object = -1;   // engine object index; -1 when not found
    How how = How::not_found;
    bool expanded = false;  // children listed here (an object's first appearance)
    std::vector<DepNode> children;
};

// The tree in depth-first order; each object's dependencies are listed at
// its first appearance only.
DepNode dependency_tree(const Engine& e);

// "RPATH of /usr/bin/x", "LD_LIBRARY_PATH", "RUNPATH of libfoo.so",
// "ld.so.cache", "system directory", "path", "LD_PRELOAD", or for a repeat
// "already loaded" / "already loaded as SONAME".
std::string how_found(const Engine& e, const DepNode& n);
// A short machine name for the same: "rpath", "ld_library_path", "runpath",
// "cache", "system", "path", "preload", "program", "already_loaded",
// "soname_match", "not_found", "loader", "vdso".
const char* how_key(const Engine& e, const DepNode& n);
// The display name of an object: the program as invoked, else its l_name.
std::string object_display(const Engine& e, int idx, const std::string& argv0);

}  // namespace ldsearch
