// The report's Julia-shaped layouts on Debian's Open MPI + UCX: a program
// whose libjulia dlopens libmpi, calls MPI_Init (UCX pml, ucm in reloc mode),
// then dlopens libopenlibm by name.  One table, shared by the repro suite
// (mpi_test.cc: unpatched UCX and the preload) and the patched-UCX suite
// (tests/ucx-patched).  The compiling test defines JULIA_SRC and
// MPI_LOOPBACK_ENV (scripts/mpi-loopback.env).
#pragma once

#include "../differential/harness.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace ldshim::difftest::report {

bool mpi_available();
// scripts/mpi-loopback.env: the settings that keep every MPI and UCX run on
// loopback.  A file that cannot be read fails the test.
Env mpi_loopback_env();
// ucm in reloc mode on the UCX pml, as in the report, on loopback.
Env ucx_env();
// "timeout 120 mpirun ... -np N" with the UCX pml of the report and the
// loopback settings as its own arguments; the caller appends -x options and
// the program.
std::string mpirun_ucx(int np);

// A libopenlibm copy that prints `id` when loaded.
LibSpec openlibm(int id, std::string soname = {});
// bin/julia (RPATH $ORIGIN/../lib unless given) -> lib/libjulia.so.1 (jl_run).
void julia(Tree& t, LibSpec lj, ExeSpec exe = {});

struct Layout {
    std::string name;           // the case, as docs/ucx.md names it
    std::string lib;            // what libjulia dlopens
    bool ldlp = false;          // run with LD_LIBRARY_PATH=<tree>/ldlp
    bool compare_paths = true;  // false: a relative name, whose l_name ldshim cannot keep under ucm
    // What unpatched UCX 1.13.1 gives here (true = the same as glibc), with
    // UCX defaults and with UCX_MEM_DLOPEN_PROCESS_RPATH=n: docs/ucx.md's table.
    bool ucx = false, ucx_norpath = false;
    void (*build)(Tree&) = nullptr;
};
// The fifteen layouts, in the order of docs/ucx.md.
const std::vector<Layout>& layouts();
// The layout called `name`, or null.
const Layout* find_layout(const std::string& name);
// The extra environment of one layout's runs in tree `t`.
Env layout_env(const Layout& l, const Tree& t);
// How GoogleTest shows a layout: by its name.
inline void PrintTo(const Layout& l, std::ostream* os) { *os << l.name; }
// GoogleTest's name for a layout parameter ("exe-rpath" -> "exe_rpath").
std::string layout_name(const ::testing::TestParamInfo<Layout>& info);

}  // namespace ldshim::difftest::report
