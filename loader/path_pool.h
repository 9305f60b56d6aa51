// Search directories as glibc keeps them: every directory string exists once
// in a process-wide pool, with one existence status per subdirectory index.
// Lists (system, LD_LIBRARY_PATH, each object's RPATH/RUNPATH) point into the
// pool, so what one search learns, every later search sees, and a header's
// label is that of the list that first created the entry.
#pragma once

#include "loader/tokens.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ldshim::loader {

enum class Label : std::uint8_t { system, rpath, runpath, ld_library_path, library_path_option };
const char* label_text(Label l);

enum class DirStatus : std::uint8_t { unknown, nonexisting, existing };

struct DirEntry {
    std::string dirname;  // normalised; ends in '/' unless it is "" (the cwd)
    Label what;
    // l_name of the object whose list created it ("" = the main program);
    // nullopt for system and environment entries.
    std::optional<std::string> where;
    std::vector<DirStatus> status;  // one per subdirectory index
};

using DirList = std::vector<DirEntry*>;

class DirPool {
public:
    explicit DirPool(std::size_t nsubdirs) : nsub_(nsubdirs) {}
    // The entry for `dir` (already normalised), created with this label and
    // owner if it is new.
    DirEntry* intern(const std::string& dir, Label what, const std::optional<std::string>& where);
    std::size_t nsubdirs() const { return nsub_; }
    std::size_t size() const { return entries_.size(); }

private:
    std::size_t nsub_;
    std::deque<DirEntry> entries_;
    std::unordered_map<std::string, DirEntry*> index_;
};

// What separates the elements of a list: DT_RPATH/DT_RUNPATH, and
// LD_LIBRARY_PATH (or --library-path), which also takes ';'.
inline constexpr std::string_view kObjectListSeparators = ":";
inline constexpr std::string_view kLibraryPathSeparators = ":;";

// strsep-style split: every separator is a boundary, so "a::b" has an empty
// middle element and ":" is two empty elements.
std::vector<std::string_view> split_path(std::string_view s, std::string_view seps);

// Drop trailing slashes (keeping a lone "/"), then end in exactly one '/'.
// The empty string stays empty.
std::string normalize_dir(std::string_view s);

// glibc's fillin_rpath over one list string: split on `seps`, each element's
// tokens expanded (one that expands to nothing is dropped, and recorded in
// `drops`), normalised (an empty element stays "", the current directory),
// and a directory the list already holds dropped.  The engine interns these;
// the in-process configuration matches them against RTLD_DI_SERINFO.
std::vector<std::string> expand_search_list(std::string_view str, std::string_view seps, const DstValues& values,
                                            const DstPolicy& policy, DstDrops* drops = nullptr);

}  // namespace ldshim::loader
