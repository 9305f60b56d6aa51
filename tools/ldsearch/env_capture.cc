#include "tools/ldsearch/env_capture.h"

#include "host/real_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ldsearch {

// The module's bytes (env_audit_blob.cc, generated from env_audit.c).
extern const unsigned char kEnvAuditModule[];
extern const std::size_t kEnvAuditModule_size;

namespace {

constexpr const char* kRecordsName = "/env";

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
    EnvRecorder r{dir + "/ldsearch-env-audit.so", dir + kRecordsName};
    if (!write_file(r.module_path, kEnvAuditModule, kEnvAuditModule_size, error)) return std::nullopt;
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
