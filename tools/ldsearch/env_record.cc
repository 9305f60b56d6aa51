#include "tools/ldsearch/env_record.h"

#include <unistd.h>

#include <charconv>
#include <cstddef>

namespace ldsearch {

EnvRecords parse_env_records(std::string_view text) {
    constexpr std::string_view kHead = "ldsearch-env ";
    EnvRecords out;
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::size_t length = 0;
        if (!text.starts_with(kHead) || eol == std::string_view::npos) {
            out.truncated = true;
            break;
        }
        const char* first = text.data() + kHead.size();
        const char* last = text.data() + eol;
        auto [end, ec] = std::from_chars(first, last, length);
        // The body and its closing newline must be all there.
        if (ec != std::errc() || end != last || length > text.size() - eol - 1 || text.size() - eol - 1 - length < 1 ||
            text[eol + 1 + length] != '\n') {
            out.truncated = true;
            break;
        }
        std::string_view body = text.substr(eol + 1, length);
        Environment env;
        while (!body.empty()) {
            std::size_t nul = body.find('\0');
            env.emplace_back(body.substr(0, nul));
            body.remove_prefix(nul == std::string_view::npos ? body.size() : nul + 1);
        }
        out.execs.push_back(std::move(env));
        text.remove_prefix(eol + 1 + length + 1);
    }
    return out;
}

ldshim::loader::EnvEntries own_environment() { return ldshim::loader::env_entries(environ); }

}  // namespace ldsearch
