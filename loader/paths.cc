#include "loader/paths.h"

namespace ldshim::loader {

std::string_view directory_of(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string_view::npos) return ".";
    return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string_view base_name(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool ends_in_component(std::string_view path, std::string_view name) {
    return path.size() > name.size() && path.ends_with(name) && path[path.size() - name.size() - 1] == '/';
}

std::string same_file_key(std::string_view path) {
    if (path.find("//") == std::string_view::npos && path.find("/./") == std::string_view::npos &&
        !path.starts_with("./") && !path.ends_with("/."))
        return std::string(path);
    std::string out;
    out.reserve(path.size());
    std::size_t i = 0;
    if (!path.empty() && path[0] == '/') out.push_back('/');
    while (i < path.size()) {
        std::size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        std::string_view step = path.substr(i, j - i);
        if (!step.empty() && step != ".") {
            // Appended piecewise: `out += step` here trips GCC 12's -Wrestrict
            // false positive.
            if (!out.empty() && out.back() != '/') out.push_back('/');
            out.append(step.data(), step.size());
        }
        i = j + 1;
    }
    return out;
}

}  // namespace ldshim::loader
