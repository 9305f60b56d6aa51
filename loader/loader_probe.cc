// What a loader says about its search when asked by searching: the
// LD_DEBUG=libs output of one failed lookup of a name that exists nowhere,
// with LD_LIBRARY_PATH set to directories that exist nowhere (kProbe*).
// Every glibc prints this the same way, so it reaches loaders whose --help
// does not exist (before 2.33) or does not say $PLATFORM (2.37 on), and it
// is the only place any loader states $LIB.  Pure: text in, facts out.
#include "loader/loader_config.h"

#include <algorithm>
#include <cstddef>

namespace ldshim::loader {
namespace {

// The probe's names: two libraries and six directories that exist nowhere.
constexpr std::string_view kProbeName = "ldshim-probe-nowhere.so";
constexpr std::string_view kProbeSecondName = "ldshim-probe-nowhere-again.so";
constexpr std::string_view kProbeDir = "/ldshim-probe-nowhere";
constexpr std::string_view kProbePlatformDir = "/ldshim-probe-platform";
constexpr std::string_view kProbeLibDir = "/ldshim-probe-lib";
constexpr std::string_view kProbeAfterDir = "/ldshim-probe-after";

// One "search path=A:B:C\t\t(LABEL)" line: its elements and its label.
struct SearchLine {
    std::vector<std::string_view> elements;
    std::string_view label;
};

std::optional<SearchLine> search_line(std::string_view line) {
    constexpr std::string_view kHead = " search path=";
    if (!line.starts_with(kHead)) return std::nullopt;
    line.remove_prefix(kHead.size());
    SearchLine out;
    auto tab = line.find("\t\t(");
    if (tab == std::string_view::npos || !line.ends_with(')')) return std::nullopt;
    out.label = line.substr(tab + 3, line.size() - tab - 4);
    line = line.substr(0, tab);
    while (!line.empty()) {
        auto colon = line.find(':');
        out.elements.push_back(line.substr(0, colon));
        line.remove_prefix(colon == std::string_view::npos ? line.size() : colon + 1);
    }
    return out;
}

// The elements of `dir` in a search list are DIR/SUBDIR for every subdir and
// DIR itself last; returns the subdirectory prefixes ("" last), or nullopt
// if the run is not there.
std::optional<std::vector<std::string>> subdirs_of(const std::vector<std::string_view>& elements,
                                                   std::string_view dir) {
    std::vector<std::string> out;
    for (auto e : elements) {
        if (e == dir) {
            out.emplace_back();
            return out;
        }
        if (e.size() > dir.size() && e.starts_with(dir) && e[dir.size()] == '/')
            out.emplace_back(std::string(e.substr(dir.size() + 1)) + "/");
    }
    return std::nullopt;
}

// The one element that ends a run starting with `prefix` + '/': the
// directory itself, after its subdirectories.
std::optional<std::string_view> run_end(const std::vector<std::string_view>& elements, std::string_view prefix,
                                        std::size_t run) {
    std::size_t seen = 0;
    for (auto e : elements) {
        if (!e.starts_with(prefix) || e.size() <= prefix.size() || e[prefix.size()] != '/') continue;
        if (++seen == run) return e.substr(prefix.size() + 1);
    }
    return std::nullopt;
}

// The glibc-hwcaps names, ISA levels and searched legacy hwcap bits that a
// subdirectory list implies.  A legacy name that is also the platform
// counts as a hwcap bit only when it is there twice (as "x86_64" is when
// it is both), since the platform string and the hwcap string are separate
// entries of glibc's list.
void read_subdirs(LoaderConfig& cfg) {
    constexpr std::string_view kHwcaps = "glibc-hwcaps/";
    std::vector<std::string_view> legacy;
    for (const auto& s : cfg.subdirs) {
        std::string_view v(s);
        if (v.starts_with(kHwcaps)) {
            std::string name(v.substr(kHwcaps.size(), v.size() - kHwcaps.size() - 1));
            cfg.isa_levels |= isa_level_bit(name);
            cfg.hwcaps_active.push_back(std::move(name));
        } else if (!v.empty() && v.find('/') == v.size() - 1) {
            legacy.push_back(v.substr(0, v.size() - 1));
        }
    }
    for (auto name : legacy) {
        int bit = legacy_hwcap_bit(name);
        bool twice = std::count(legacy.begin(), legacy.end(), name) > 1;
        if (bit >= 0 && (name != cfg.platform.value_or("") || twice)) cfg.hwcap_searched |= std::uint64_t{1} << bit;
    }
}

}  // namespace

std::optional<LoaderConfig> config_from_answers(std::optional<std::string_view> help, std::string_view probe,
                                                std::string* error) {
    auto facts = parse_loader_probe(probe, error);
    if (!facts) return std::nullopt;
    std::optional<LoaderConfig> cfg;
    if (help) {
        cfg = parse_ld_so_help(*help, error);
        if (!cfg) return std::nullopt;
        if (!cfg->platform) cfg->platform = facts->platform;
        // --help names only the legacy hwcap bits of HWCAP_IMPORTANT, while
        // the search takes every named bit of AT_HWCAP & the mask (aarch64
        // under an LD_HWCAP_MASK wider than "atomics"): the probe's own
        // search, made in the same environment, is what the loader does.
        if (!facts->subdirs.empty() && facts->subdirs != cfg->subdirs) {
            cfg->subdirs = std::move(facts->subdirs);
            cfg->hwcaps_active.clear();
            cfg->hwcap_searched = 0;
            read_subdirs(*cfg);
        }
    } else {
        cfg.emplace();
        cfg->system_dirs = std::move(facts->system_dirs);
        cfg->subdirs = std::move(facts->subdirs);
        cfg->platform = facts->platform;
        if (!facts->cache_path.empty()) cfg->cache_path = cfg->cache_label = facts->cache_path;
        read_subdirs(*cfg);
    }
    cfg->dst_lib = facts->dst_lib.value_or(dst_lib_of(cfg->system_dirs));
    cfg->behaviour = facts->behaviour;
    return cfg;
}

ProbeInputs probe_inputs(std::string_view rtld_file_name) {
    ProbeInputs in;
    in.preload = std::string(kProbeName) + " " + std::string(kProbeSecondName);
    // "/" shows whether the root is stat'ed right; the loader's own file,
    // relative, whether a non-directory ends the list (then kProbeAfterDir
    // is never tried).
    in.library_path = std::string(kProbeDir) + ":" + std::string(kProbePlatformDir) +
                      "/$PLATFORM:" + std::string(kProbeLibDir) + "/$LIB:/:./" + std::string(rtld_file_name) + ":" +
                      std::string(kProbeAfterDir);
    return in;
}

namespace {

// What one lookup of the probe printed.
struct ProbeSearch {
    std::optional<SearchLine> env, system;
    bool tried_after = false;  // a file in kProbeAfterDir was tried
    bool notes = false;        // a missing candidate was followed by "(no such file)"
};

// What a loader's debug line says after its "PID:\t" prefix.
std::string_view message_of(std::string_view line) {
    auto p = line.find(":\t");
    return p == std::string_view::npos ? line : line.substr(p + 2);
}

// The probe lines the parser reads, by their start; every other line (most
// are "trying file=") is ignored, and left out of the cached copy.
enum class ProbeLine { other, find, cache, tried_after, search, note };
constexpr std::string_view kFind = "find library=", kCache = " search cache=", kTrying = "  trying file=";

ProbeLine classify(std::string_view message) {
    if (message.starts_with(kFind)) return ProbeLine::find;
    if (message.starts_with(kCache)) return ProbeLine::cache;
    if (message.starts_with(" search path=")) return ProbeLine::search;
    if (message == "    (no such file)") return ProbeLine::note;
    if (!message.starts_with(kTrying)) return ProbeLine::other;
    auto file = message.substr(kTrying.size());
    return file.starts_with(kProbeAfterDir) && file.size() > kProbeAfterDir.size() && file[kProbeAfterDir.size()] == '/'
               ? ProbeLine::tried_after
               : ProbeLine::other;
}

// Calls f(line, message, kind) for each line the parser reads.
template <class F>
void for_each_probe_line(std::string_view text, F&& f) {
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        std::string_view message = message_of(line);
        if (auto kind = classify(message); kind != ProbeLine::other) f(line, message, kind);
    }
}

std::vector<ProbeSearch> probe_searches(std::string_view text, std::string& cache_path) {
    std::vector<ProbeSearch> out;
    for_each_probe_line(text, [&](std::string_view, std::string_view m, ProbeLine kind) {
        if (kind == ProbeLine::find) out.emplace_back();
        if (out.empty()) return;
        if (kind == ProbeLine::tried_after) out.back().tried_after = true;
        if (kind == ProbeLine::note) out.back().notes = true;
        if (kind == ProbeLine::cache && cache_path.empty()) cache_path = std::string(m.substr(kCache.size()));
        if (kind != ProbeLine::search) return;
        auto s = search_line(m);
        if (!s) return;
        if (s->label == "LD_LIBRARY_PATH" && !out.back().env)
            out.back().env = std::move(s);
        else if (s->label == "system search path" && !out.back().system)
            out.back().system = std::move(s);
    });
    return out;
}

// The behaviour the two lookups show; glibc 2.36's where they show nothing.
LoaderBehaviour behaviour_of(const std::vector<ProbeSearch>& searches) {
    LoaderBehaviour b;
    auto has_root = [](const ProbeSearch& s) {
        return s.env && std::find(s.env->elements.begin(), s.env->elements.end(), "/") != s.env->elements.end();
    };
    // The first lookup lists "/" while nothing is known about it; the second
    // lists it only if it was stat'ed as the directory it is.
    if (searches.size() >= 2 && has_root(searches[0])) b.root_dir_stat_bug = !has_root(searches[1]);
    b.non_directory_ends_list = !searches.front().tried_after;
    b.explains_candidates = searches.front().notes;
    return b;
}

}  // namespace

std::optional<ProbeFacts> parse_loader_probe(std::string_view text, std::string* error) {
    ProbeFacts f;
    std::vector<ProbeSearch> searches = probe_searches(text, f.cache_path);
    const ProbeSearch* first = searches.empty() ? nullptr : &searches.front();
    auto sub = first && first->env ? subdirs_of(first->env->elements, kProbeDir) : std::nullopt;
    if (!sub || !first->system) {
        if (error) *error = "the loader's probe search printed no LD_LIBRARY_PATH or system search path";
        return std::nullopt;
    }
    f.subdirs = std::move(*sub);
    const auto& env = first->env->elements;
    // The DST runs end with the expanded directory, after its subdirectories;
    // a DST the loader cannot expand drops its element.
    if (auto p = run_end(env, kProbePlatformDir, f.subdirs.size())) f.platform = std::string(*p);
    if (auto l = run_end(env, kProbeLibDir, f.subdirs.size())) f.dst_lib = std::string(*l);
    std::size_t n = f.subdirs.size();
    const auto& system = first->system->elements;
    if (system.size() % n != 0) {
        if (error) *error = "the loader's system search path does not divide into its subdirectories";
        return std::nullopt;
    }
    for (std::size_t i = n - 1; i < system.size(); i += n) f.system_dirs.push_back(std::string(system[i]) + "/");
    f.behaviour = behaviour_of(searches);
    return f;
}

}  // namespace ldshim::loader
