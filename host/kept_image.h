// A file's image kept after its descriptor is gone: what the loader's first
// read returned and every range the facts readers took (the headers, the
// dynamic section, the strings they name).  A range not kept is read by
// opening the path again.  Used where one file is searched for many times:
// `ldsearch check` (thousands of files) and the runtime resolver (a plugin
// loaded and unloaded in a loop).
#pragma once

#include "loader/fs.h"

#include <memory>
#include <string>

namespace ldshim::host {

// Reads the facts of `real` once through it and keeps what was read.
// Thread-safe to use once made.
std::shared_ptr<const loader::FileImage> keep_image(std::string path, const loader::FileImage& real);

}  // namespace ldshim::host
