// libFuzzer target: /etc/ld.so.cache parsing and lookups on arbitrary bytes.
#include "loader/fs.h"
#include "loader/ld_cache.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ldshim::loader;
    auto img = std::make_shared<MemoryImage>(std::string(reinterpret_cast<const char*>(data), size), FileId{}, 0100644);
    LdCache c = LdCache::parse(img);
    if (!c.usable()) return 0;
    LoaderConfig cfg;
    cfg.hwcaps_active = {"x86-64-v3", "x86-64-v2"};
    cfg.isa_levels = 7;
    cfg.platform = "haswell";
    // A few keys of the file itself (all of them would make each run
    // quadratic in the size of a real cache).
    auto entries = c.entries();
    for (std::size_t i = 0; i < entries.size(); i += 1 + entries.size() / 8)
        (void)c.lookup(entries[i].key.c_str(), cfg);
    for (const char* n : {"libc.so.6", "libz.so.1", "", "lib"}) (void)c.lookup(n, cfg);
    return 0;
}
