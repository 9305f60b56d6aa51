#include "tools/ldsearch/env_capture.h"

#include "host/real_fs.h"
#include "machine/machine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ldsearch {

// The module's bytes (env_audit_blob.cc, generated from env_audit.c).
extern const unsigned char kEnvAuditModule[];
extern const std::size_t kEnvAuditModule_size;
#if defined(LDSEARCH_ENV_AUDIT_OTHER_AARCH64) || defined(LDSEARCH_ENV_AUDIT_OTHER_X86_64)
// The same module built for the other machine (env_audit_other_blob.cc).
extern const unsigned char kEnvAuditModuleOther[];
extern const std::size_t kEnvAuditModuleOther_size;
#endif

namespace {

constexpr const char* kRecordsName = "/env";
constexpr const char* kModuleName = "/ldsearch-env-audit.so";

// One build of the module, and the values $PLATFORM takes in a loader of its
// machine: AT_PLATFORM, or on x86-64 before glibc 2.37 the name the loader
// gave a CPU with AVX2 or AVX-512 in its place.
struct AuditBuild {
    const unsigned char* data;
    std::size_t size;
    std::vector<const char*> platforms;
};

const std::vector<const char*> kX86_64Platforms{"x86_64", "haswell", "xeon_phi"};
const std::vector<const char*> kAarch64Platforms{"aarch64"};

std::vector<const char*> platforms_of(std::uint16_t machine) {
    if (machine == ldshim::machine::kX86_64) return kX86_64Platforms;
    if (machine == ldshim::machine::kAarch64) return kAarch64Platforms;
    return {};
}

std::vector<AuditBuild> audit_builds() {
    std::vector<AuditBuild> out{{kEnvAuditModule, kEnvAuditModule_size, platforms_of(ldshim::machine::kOwn)}};
#if defined(LDSEARCH_ENV_AUDIT_OTHER_AARCH64)
    out.push_back({kEnvAuditModuleOther, kEnvAuditModuleOther_size, kAarch64Platforms});
#elif defined(LDSEARCH_ENV_AUDIT_OTHER_X86_64)
    out.push_back({kEnvAuditModuleOther, kEnvAuditModuleOther_size, kX86_64Platforms});
#endif
    return out;
}

bool write_file(const std::string& path, const unsigned char* data, std::size_t size, std::string* error) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        *error = path + ": " + std::strerror(errno);
        return false;
    }
    bool ok = ldshim::host::write_all(fd, {reinterpret_cast<const char*>(data), size});
    if (!ok) *error = path + ": " + std::strerror(errno);
    ::close(fd);
    return ok;
}

}  // namespace

std::optional<EnvRecorder> install_env_recorder(const std::string& dir, std::string* error) {
    auto builds = audit_builds();
    if (builds.size() == 1) {
        EnvRecorder r{dir + kModuleName, dir + kRecordsName};
        if (!write_file(r.module_path, builds[0].data, builds[0].size, error)) return std::nullopt;
        return r;
    }
    // A loader of another machine cannot open this one's module (it prints
    // an error and records nothing), and LD_AUDIT takes no search: each
    // build goes to DIR/PLATFORM/, and $PLATFORM picks the loader's own.
    EnvRecorder r{dir + "/$PLATFORM" + kModuleName, dir + kRecordsName};
    for (const auto& b : builds)
        for (const char* platform : b.platforms) {
            std::string sub = dir + "/" + platform;
            if (::mkdir(sub.c_str(), 0755) != 0) {
                *error = sub + ": " + std::strerror(errno);
                return std::nullopt;
            }
            if (!write_file(sub + kModuleName, b.data, b.size, error)) return std::nullopt;
        }
    return r;
}

void arm_env_recorder(const EnvRecorder& recorder) {
    std::string audit = recorder.module_path;
    if (const char* theirs = std::getenv("LD_AUDIT"); theirs && *theirs) audit += std::string(":") + theirs;
    setenv("LD_AUDIT", audit.c_str(), 1);
    setenv("LDSEARCH_ENV_OUTPUT", recorder.output_prefix.c_str(), 1);
}

EnvRecords read_env_records(const std::string& log, long pid) {
    std::size_t slash = log.rfind('/');
    std::string dir = slash == std::string::npos ? "." : log.substr(0, slash);
    std::string records;
    if (ldshim::host::read_whole_file(dir + kRecordsName + "." + std::to_string(pid), records) != 0) return {};
    return parse_env_records(records);
}

}  // namespace ldsearch
