#include "loader/tokens.h"

namespace ldshim::loader {
namespace {

bool ident_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// `in` starts just after '$'.  Length of the token (braces included) if it is
// exactly `ref`, else 0.  "$ORIGINX" and "${ORIGIN" are not tokens.
std::size_t is_dst(std::string_view in, std::string_view ref) {
    bool curly = !in.empty() && in[0] == '{';
    std::string_view body = curly ? in.substr(1) : in;
    if (body.substr(0, ref.size()) != ref) return 0;
    char next = body.size() > ref.size() ? body[ref.size()] : '\0';
    if (curly && next != '}') return 0;
    if (ident_char(next)) return 0;
    return curly ? ref.size() + 2 : ref.size();
}

}  // namespace

std::size_t count_dsts(std::string_view s) {
    std::size_t n = 0;
    for (std::size_t i = s.find('$'); i != std::string_view::npos;) {
        auto rest = s.substr(i + 1);
        std::size_t len = 0;
        if ((len = is_dst(rest, "ORIGIN")) || (len = is_dst(rest, "PLATFORM")) || (len = is_dst(rest, "LIB"))) ++n;
        i = s.find('$', i + 1 + len);
    }
    return n;
}

bool is_trusted_path(std::string_view path, const std::vector<std::string>& dirs) {
    if (path.empty()) return false;
    std::string n;
    n.reserve(path.size() + 1);
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '/') {
            auto at = [&](std::size_t k) { return i + k < path.size() ? path[i + k] : '\0'; };
            if (at(1) == '.') {
                if (at(2) == '.' && (at(3) == '/' || at(3) == '\0')) {
                    while (!n.empty()) {
                        char c = n.back();
                        n.pop_back();
                        if (c == '/') break;
                    }
                    i += 3;
                    continue;
                }
                if (at(2) == '/' || at(2) == '\0') {
                    i += 2;
                    continue;
                }
            }
            if (!n.empty() && n.back() == '/') {
                ++i;
                continue;
            }
        }
        n.push_back(path[i++]);
    }
    if (n.empty() || n.back() != '/') n.push_back('/');
    for (const auto& d : dirs)
        if (n.size() >= d.size() && n.compare(0, d.size(), d) == 0) return true;
    return false;
}

std::string substitute_dsts(std::string_view input, const DstValues& values, const DstPolicy& policy, DstDrop* why) {
    std::string out;
    out.reserve(input.size() + 32);
    bool check_trusted = false;
    auto drop = [&](DstDrop d) {
        if (why) *why = d;
        return std::string();
    };
    if (why) *why = DstDrop::none;
    for (std::size_t i = 0; i < input.size();) {
        if (input[i] != '$') {
            out.push_back(input[i++]);
            continue;
        }
        auto rest = input.substr(i + 1);
        const std::string* repl = nullptr;
        std::size_t len = 0;
        bool rejected = false;
        if ((len = is_dst(rest, "ORIGIN"))) {
            // Secure mode: only a leading $ORIGIN followed by '/' or the end.
            char after = len < rest.size() ? rest[len] : '\0';
            if (policy.secure && !(i == 0 && (after == '\0' || after == '/')))
                rejected = true;
            else if (values.origin)
                repl = &*values.origin;
            check_trusted = policy.secure && policy.owner_is_main;
        } else if ((len = is_dst(rest, "PLATFORM"))) {
            if (values.platform) repl = &*values.platform;
        } else if ((len = is_dst(rest, "LIB"))) {
            repl = &values.lib;
        }
        if (repl) {
            out += *repl;
            i += 1 + len;
        } else if (len != 0) {
            return drop(rejected ? DstDrop::secure_position : DstDrop::unknown_value);
        } else {
            out.push_back('$');
            ++i;
        }
    }
    if (check_trusted && !(policy.trusted_dirs && is_trusted_path(out, *policy.trusted_dirs)))
        return drop(DstDrop::untrusted_dir);
    return out;
}

const char* dst_drop_text(DstDrop d) {
    switch (d) {
        case DstDrop::unknown_value:
            return "dropped: a token with no value here ($PLATFORM unknown, or $ORIGIN of an object without a path)";
        case DstDrop::secure_position: return "dropped in secure mode: $ORIGIN is only allowed alone at the start";
        case DstDrop::untrusted_dir:
            return "dropped in secure mode: the expansion is not inside a trusted system directory";
        case DstDrop::none: break;
    }
    return "dropped";
}

}  // namespace ldshim::loader
