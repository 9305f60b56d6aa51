#include "loader/loader_env.h"

#include "loader/engine.h"
#include "loader/paths.h"

namespace ldshim::loader {

EnvEntries env_entries(std::string_view block) {
    EnvEntries out;
    while (!block.empty()) {
        std::size_t nul = block.find('\0');
        out.push_back(block.substr(0, nul));
        block.remove_prefix(nul == std::string_view::npos ? block.size() : nul + 1);
    }
    return out;
}

EnvEntries env_entries(const char* const* envp) {
    EnvEntries out;
    for (; envp && *envp; ++envp) out.emplace_back(*envp);
    return out;
}

EnvEntries env_entries(const std::vector<std::string>& strings) { return {strings.begin(), strings.end()}; }

std::vector<std::string> startup_entries(std::string_view block) {
    std::vector<std::string> out;
    bool in_tunables = false;
    for (std::string_view e : env_entries(block)) {
        if (in_tunables && e.starts_with("glibc.") && e.find('=') != std::string_view::npos) {
            out.back().append(":").append(e);
            continue;
        }
        in_tunables = e.starts_with("GLIBC_TUNABLES=");
        out.emplace_back(e);
    }
    return out;
}

std::optional<std::string_view> loader_env_value(const EnvEntries& env, std::string_view name) {
    std::optional<std::string_view> value;
    for (std::string_view e : env)
        if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=') value = e.substr(name.size() + 1);
    return value;
}

LoaderEnvironment read_loader_environment(const EnvEntries& env) {
    auto value = [&](std::string_view name) -> std::optional<std::string> {
        auto v = loader_env_value(env, name);
        return v ? std::optional<std::string>(*v) : std::nullopt;
    };
    return {value("LD_LIBRARY_PATH"), value("LD_PRELOAD"), value("LD_ORIGIN_PATH")};
}

void set_environment(EngineOptions& opts, const LoaderEnvironment& env) {
    opts.library_path = env.library_path;
    opts.preload = env.preload.value_or("");
    opts.origin_path = env.origin_path;
}

std::optional<std::string> main_program_origin(const std::optional<std::string>& program_path,
                                               const std::optional<std::string>& origin_path, bool secure) {
    if (program_path && !program_path->empty() && program_path->front() == '/') {
        return std::string(directory_of(*program_path));
    }
    if (!origin_path || secure) return std::nullopt;
    std::string o = *origin_path;
    while (o.size() > 1 && o.back() == '/') o.pop_back();
    return o;
}

}  // namespace ldshim::loader
