// libFuzzer target: path-list splitting, normalisation and dynamic string
// token expansion under every policy.  The first byte picks the policy.
#include "loader/path_pool.h"
#include "loader/tokens.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ldshim::loader;
    if (size == 0) return 0;
    std::uint8_t mode = data[0];
    std::string_view s(reinterpret_cast<const char*>(data + 1), size - 1);
    static const std::vector<std::string> trusted = {"/lib/x86_64-linux-gnu/", "/usr/lib/"};
    DstValues v;
    if (mode & 1) v.origin = "/opt/app/bin";
    if (mode & 2) v.platform = "haswell";
    v.lib = (mode & 4) ? "lib64" : "lib/x86_64-linux-gnu";
    DstPolicy pol{(mode & 8) != 0, (mode & 16) != 0, &trusted};
    (void)count_dsts(s);
    for (auto elem : split_path(s, (mode & 32) ? ":;" : ":")) {
        DstDrop why = DstDrop::none;
        std::string x = substitute_dsts(elem, v, pol, &why);
        if (!x.empty()) (void)normalize_dir(x);
        (void)is_trusted_path(elem, trusted);
    }
    return 0;
}
