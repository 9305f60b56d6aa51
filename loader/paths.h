// The rules over path strings that the engine, the host edges and the
// runtime share, each written once.  Pure: no file is looked at.
#pragma once

#include <string>
#include <string_view>

namespace ldshim::loader {

// The directory of `path`, as glibc takes a file's $ORIGIN from its name:
// everything before the last '/', "/" for a file in the root directory,
// "." for a name without '/'.
std::string_view directory_of(std::string_view path);

// The last component of `path`: what follows its last '/' (all of it
// without one).
std::string_view base_name(std::string_view path);

// Whether `path` is `name` under some directory: it ends in "/" + name.
bool ends_in_component(std::string_view path, std::string_view name);

// `path` with the steps that cannot lead elsewhere taken out: repeated
// slashes and "." steps (a ".." step can, through a symbolic link).  Two
// paths with the same key name the same file.
std::string same_file_key(std::string_view path);

}  // namespace ldshim::loader
