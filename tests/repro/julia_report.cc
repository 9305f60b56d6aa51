#include "julia_report.h"
#include "../support/test_machine.h"

#include <algorithm>

#ifndef JULIA_SRC
#error "JULIA_SRC must name tests/repro/fixtures/julia_mpi.c"
#endif
#ifndef MPI_LOOPBACK_ENV
#error "MPI_LOOPBACK_ENV must name scripts/mpi-loopback.env"
#endif

namespace ldshim::difftest::report {

bool mpi_available() {
    const std::string dir = "/usr/" + testmachine::lib_dir();
    return sh("test -e " + dir + "/libmpi.so.40 -a -e " + dir + "/libucm.so.0 && command -v mpirun >/dev/null") == 0;
}

Env mpi_loopback_env() {
    Env env;
    for (const auto& line : read_lines(MPI_LOOPBACK_ENV)) {
        auto eq = line.find('=');
        if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
        env.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    }
    if (env.empty()) ADD_FAILURE() << "no MPI loopback settings in " << MPI_LOOPBACK_ENV;
    return env;
}

Env ucx_env() {
    Env env{{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
            {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
            {"OMPI_MCA_pml", "ucx"},
            {"OMPI_MCA_pml_ucx_tls", "any"},
            {"OMPI_MCA_pml_ucx_devices", "any"},
            {"OMPI_MCA_opal_common_ucx_opal_mem_hooks", "0"},
            {"UCX_MEM_MMAP_HOOK_MODE", "reloc"},
            {"UCX_MEM_MALLOC_RELOC", "n"}};
    Env loopback = mpi_loopback_env();
    env.insert(env.end(), loopback.begin(), loopback.end());
    return env;
}

std::string mpirun_ucx(int np) {
    std::string cmd = "timeout 120 mpirun --allow-run-as-root -np " + std::to_string(np) +
                      " --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
                      " --mca opal_common_ucx_opal_mem_hooks 0";
    // An MCA variable becomes mpirun's own --mca; anything else reaches the ranks through -x.
    const std::string mca = "OMPI_MCA_";
    for (const auto& [k, v] : mpi_loopback_env())
        cmd += k.rfind(mca, 0) == 0 ? " --mca " + k.substr(mca.size()) + " " + quote(v) : " -x " + quote(k + "=" + v);
    return cmd;
}

LibSpec openlibm(int id, std::string soname) {
    // Built piecewise: `"-D..." + std::to_string(id)` at -O3 trips GCC 12's
    // -Wrestrict false positive.
    std::string flag = "-DFIXTURE_ID=";
    flag += std::to_string(id);
    return LibSpec{std::move(soname), {}, {}, {}, false, {std::move(flag)}};
}

void julia(Tree& t, LibSpec lj, ExeSpec exe) {
    lj.soname = "libjulia.so.1";
    lj.source = JULIA_SRC;
    lj.flags.push_back("-DNO_MAIN");
    t.lib("lib/libjulia.so.1", lj);
    exe.source = JULIA_SRC;
    exe.needs.insert(exe.needs.begin(), "lib/libjulia.so.1");
    if (exe.rpath.empty() && exe.runpath.empty()) exe.rpath = "$ORIGIN/../lib";
    t.exe("bin/julia", exe);
}

namespace {

void rpath(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

void runpath(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {.runpath = "$ORIGIN:$ORIGIN/julia"});
}

void exe_rpath(Tree& t) {
    t.lib("lib2/libopenlibm.so", openlibm(1));
    julia(t, {}, {.rpath = "$ORIGIN/../lib:$ORIGIN/../lib2"});
}

// The program reaches jl_run through libjlwrap's dependency, so that
// libjulia's loader is libjlwrap: main looks the symbol up at run time.
void loader_rpath(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    LibSpec lj{.soname = "libjulia.so.1", .flags = {"-DNO_MAIN"}, .source = JULIA_SRC};
    t.lib("lib/libjulia.so.1", lj);
    t.lib("lib/libjlwrap.so",
          {.soname = "libjlwrap.so", .needs = {"lib/libjulia.so.1"}, .rpath = "$ORIGIN:$ORIGIN/julia"});
    t.exe("bin/julia",
          {.needs = {"lib/libjlwrap.so"}, .rpath = "$ORIGIN/../lib", .flags = {"-DLOOKUP_JL"}, .source = JULIA_SRC});
}

void runpath_not_inherited(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {}, {.runpath = "$ORIGIN/../lib:$ORIGIN/../lib/julia"});
}

void ldlp_vs_rpath(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    t.lib("ldlp/libopenlibm.so", openlibm(2));
    julia(t, {.rpath = "$ORIGIN/julia"});
}

void ldlp_vs_runpath(Tree& t) {
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    t.lib("ldlp/libopenlibm.so", openlibm(2));
    julia(t, {.runpath = "$ORIGIN/julia"});
}

void lib_token(Tree& t) {
    t.lib("lib/" + testmachine::lib_dir() + "/libopenlibm.so", openlibm(1));
    julia(t, {.rpath = "$ORIGIN/$LIB"});
}

void hwcaps_only(Tree& t) {
    t.lib("lib/julia/glibc-hwcaps/x86-64-v2/libopenlibm.so", openlibm(2));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

void hwcaps_preferred(Tree& t) {
    t.lib("lib/julia/glibc-hwcaps/x86-64-v2/libopenlibm.so", openlibm(2));
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

// Loaded at startup as libopenlibm-4.so (SONAME libopenlibm.so); another
// copy named libopenlibm.so sits on the RPATH.
void soname_loaded(Tree& t) {
    t.lib("lib/julia/libopenlibm-4.so", openlibm(1, "libopenlibm.so"));
    t.lib("lib/julia/libopenlibm.so", openlibm(2));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"},
          {.needs = {"lib/julia/libopenlibm-4.so"}, .rpath = "$ORIGIN/../lib:$ORIGIN/../lib/julia"});
    t.patchelf({"--replace-needed", "libopenlibm.so", "libopenlibm-4.so", "bin/julia"});
}

void skip_unusable(Tree& t) {
    t.lib32("lib/libopenlibm.so");
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

void exe_caller_runpath(Tree& t) {
    t.lib("run/libopenlibm.so", openlibm(1));
    t.exe("bin/julia", {.runpath = t.abs("run"), .flags = {"-DIN_MAIN"}, .source = JULIA_SRC});
}

void slash_relative(Tree& t) {
    t.lib("julia/libopenlibm.so", openlibm(2));
    t.lib("lib/julia/libopenlibm.so", openlibm(1));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

void internal(Tree& t) {
    t.lib("lib/julia/libjulia-internal.so.1", openlibm(1, "libjulia-internal.so.1"));
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
}

}  // namespace

const std::vector<Layout>& layouts() {
    // The reference saw ucm wrongly find the library for a RUNPATH in the
    // loader chain; with RUNPATH on the executable, as here, it does not.
    static const std::vector<Layout> table = {
        {"rpath", "libopenlibm.so", false, true, true, false, rpath},
        {"runpath", "libopenlibm.so", false, true, true, false, runpath},
        {"exe-rpath", "libopenlibm.so", false, true, true, true, exe_rpath},
        {"loader-rpath", "libopenlibm.so", false, true, true, false, loader_rpath},
        {"runpath-noinherit", "libopenlibm.so", false, true, true, true, runpath_not_inherited},
        {"ldlp-vs-rpath", "libopenlibm.so", true, true, true, false, ldlp_vs_rpath},
        {"ldlp-vs-runpath", "libopenlibm.so", true, true, true, true, ldlp_vs_runpath},
        {"dst-lib", "libopenlibm.so", false, true, true, false, lib_token},
        {"hwcaps-only", "libopenlibm.so", false, true, false, false, hwcaps_only},
        {"hwcaps-preferred", "libopenlibm.so", false, true, false, false, hwcaps_preferred},
        {"soname-loaded", "libopenlibm.so", false, true, false, true, soname_loaded},
        {"skip-unusable", "libopenlibm.so", false, true, false, false, skip_unusable},
        {"exe-caller-runpath", "libopenlibm.so", false, true, false, false, exe_caller_runpath},
        {"slash-relative", "julia/libopenlibm.so", false, false, false, true, slash_relative},
        {"internal", "libjulia-internal.so.1", false, true, true, false, internal},
    };
    return table;
}

const Layout* find_layout(const std::string& name) {
    for (const auto& l : layouts())
        if (l.name == name) return &l;
    return nullptr;
}

Env layout_env(const Layout& l, const Tree& t) {
    if (!l.ldlp) return {};
    return {{"LD_LIBRARY_PATH", t.abs("ldlp")}};
}

std::string layout_name(const ::testing::TestParamInfo<Layout>& info) {
    std::string n = info.param.name;
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
}

}  // namespace ldshim::difftest::report
