#include "loader/path_pool.h"

#include <algorithm>

namespace ldshim::loader {

const char* label_text(Label l) {
    switch (l) {
        case Label::system: return "system search path";
        case Label::rpath: return "RPATH";
        case Label::runpath: return "RUNPATH";
        case Label::ld_library_path: return "LD_LIBRARY_PATH";
        case Label::library_path_option: return "--library-path";
    }
    return "?";
}

DirEntry* DirPool::intern(const std::string& dir, Label what, const std::optional<std::string>& where) {
    if (auto it = index_.find(dir); it != index_.end()) return it->second;
    // Relative entries are never pruned: the cwd may change.
    DirStatus init = (!dir.empty() && dir[0] == '/') ? DirStatus::unknown : DirStatus::existing;
    entries_.push_back(DirEntry{dir, what, where, std::vector<DirStatus>(nsub_, init)});
    DirEntry* e = &entries_.back();
    index_.emplace(dir, e);
    return e;
}

std::vector<std::string_view> split_path(std::string_view s, std::string_view seps) {
    std::vector<std::string_view> out;
    for (;;) {
        auto p = s.find_first_of(seps);
        out.push_back(s.substr(0, p));
        if (p == std::string_view::npos) break;
        s.remove_prefix(p + 1);
    }
    return out;
}

std::string normalize_dir(std::string_view s) {
    if (s.empty()) return {};
    while (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
    std::string out(s);
    if (out.back() != '/') out.push_back('/');
    return out;
}

std::vector<std::string> expand_search_list(std::string_view str, std::string_view seps, const DstValues& values,
                                            const DstPolicy& policy, DstDrops* drops) {
    std::vector<std::string> dirs;
    for (auto elem : split_path(str, seps)) {
        std::string dir;
        if (!elem.empty()) {
            DstDrop why = DstDrop::none;
            std::string x = count_dsts(elem) ? substitute_dsts(elem, values, policy, &why) : std::string(elem);
            if (x.empty()) {
                if (drops) drops->emplace_back(std::string(elem), why);
                continue;
            }
            dir = normalize_dir(x);
        }
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
    }
    return dirs;
}

}  // namespace ldshim::loader
