// libFuzzer target: the LD_DEBUG log parser behind ldsearch --diff/--replay.
#include "tools/ldsearch/ld_debug_log.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto r = ldsearch::parse_ld_debug_log(std::string_view(reinterpret_cast<const char*>(data), size));
    if (r.process) {
        std::size_t n = 0;
        for (const auto& p : r.process->programs) {
            n += p.argv0.size();
            for (const auto& l : p.startup) n += l.lines.size() + l.name.size() + l.requester.size();
            for (const auto& l : p.later) n += l.lines.size() + l.name.size() + l.requester.size();
        }
        if (n == static_cast<std::size_t>(-1)) return 1;
    } else if (r.error.empty()) {
        return 1;  // neither a result nor an error: a bug
    }
    return 0;
}
