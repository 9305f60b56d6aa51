#include "program.h"

#include "loader/path_pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace ldsearch {

std::string find_program(const std::string& name, const std::function<bool(const std::string&)>& runnable) {
    if (name.find('/') != std::string::npos) return name;
    const char* env_path = std::getenv("PATH");
    for (auto d : ldshim::loader::split_path(env_path ? env_path : "/usr/bin:/bin", ":")) {
        std::string cand = (d.empty() ? std::string(".") : std::string(d)) + "/" + name;
        if (runnable(cand)) return cand;
    }
    return {};
}

bool starts_secure(const std::string& host_path) {
    struct stat st {};
    if (::stat(host_path.c_str(), &st) != 0) return false;
    return ((st.st_mode & S_ISUID) && st.st_uid != getuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getgid());
}

}  // namespace ldsearch
