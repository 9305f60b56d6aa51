#include "host/start_capture.h"

#include "host/real_fs.h"
#include "loader/loaded_extent.h"
#include "loader/paths.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ldshim::host {

using loader::FileId;
using loader::FileImage;
using loader::LoadedExtent;
using loader::OpenResult;

namespace {

// The GNU build ID of the ELF file `img` (its PT_NOTE segments, as the
// linker wrote them), or empty.
std::string file_build_id(const FileImage& img) {
    ElfW(Ehdr) eh;
    if (!img.read_at(0, sizeof eh, reinterpret_cast<std::byte*>(&eh)) || eh.e_phentsize != sizeof(ElfW(Phdr)))
        return {};
    for (std::size_t i = 0; i < eh.e_phnum; ++i) {
        ElfW(Phdr) ph;
        if (!img.read_at(eh.e_phoff + i * sizeof ph, sizeof ph, reinterpret_cast<std::byte*>(&ph))) return {};
        if (ph.p_type != PT_NOTE || ph.p_filesz > 4096) continue;  // the linker's notes are a few dozen bytes
        std::string seg(ph.p_filesz, '\0');
        if (!img.read_at(ph.p_offset, seg.size(), reinterpret_cast<std::byte*>(seg.data()))) continue;
        if (auto id = LoadedExtent::note_in(reinterpret_cast<std::uintptr_t>(seg.data()), seg.size(), NT_GNU_BUILD_ID,
                                            loader::kGnuNoteName))
            return {reinterpret_cast<const char*>(id->data()), id->size()};
    }
    return {};
}

}  // namespace

bool maps_name_files_as_stat(const MappedFiles& maps) {
    const auto* file = maps.at(getauxval(AT_PHDR));
    std::optional<FileVersion> exe = RealFs::version("/proc/self/exe");
    return file && exe && exe->id == file->id;
}

std::string directory_it_was_named_from(std::string_view name, const MappedFiles::File& mapped) {
    while (name.starts_with("./")) name.remove_prefix(2);
    // Built piecewise: `"/" + std::string(name) + "/"` trips GCC 12's
    // -Wrestrict false positive at -O3 (the release build).
    std::string path(1, '/');
    path.append(name.data(), name.size());
    path.push_back('/');
    if (mapped.deleted || name.empty() || path.find("/./") != std::string::npos ||
        path.find("/../") != std::string::npos || path.find("//") != std::string::npos)
        return {};
    if (!loader::ends_in_component(mapped.path, name)) return {};
    return std::string(loader::directory_of(std::string_view(mapped.path).substr(0, mapped.path.size() - name.size())));
}

// No identity is better than another file's: the model then hands glibc
// the path it found, and glibc tells the same file itself.
FileId file_identity_of(const std::string& name, std::uintptr_t first_segment, const std::string& build_id,
                        const MappedFiles* maps) {
    if (maps) {
        const auto* file = maps->at(first_segment);
        return file ? file->id : FileId{};
    }
    if (name.empty() || name[0] != '/') return {};  // a relative name may name another file now
    FileVersion v;
    OpenResult r = RealFs::open_versioned(name, &v);
    if (r.image && (build_id.empty() || file_build_id(*r.image) == build_id)) return v.id;
    return {};
}

// Read with plain system calls: a std::ifstream here linked the whole of libstdc++'s locale and stream
// machinery into libldshim, thousands of relocations that every process
// that preloads ldshim paid for at start-up.
std::string argv0() {
    std::string a;
    int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return a;
    char buf[512];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        const char* end = static_cast<const char*>(std::memchr(buf, '\0', static_cast<std::size_t>(n)));
        a.append(buf, end ? static_cast<std::size_t>(end - buf) : static_cast<std::size_t>(n));
        if (end) break;
    }
    ::close(fd);
    return a;
}

}  // namespace ldshim::host
