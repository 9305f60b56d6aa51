// The environment ld.so read at start-up, for the runtime's model.
//
// ld.so reads LD_LIBRARY_PATH, LD_PRELOAD, LD_ORIGIN_PATH and the tunables
// once, from the strings the kernel placed on the stack, and never again;
// setenv, unsetenv, putenv, clearenv and a new `environ` change the
// program's array (setenv of a set name and unsetenv change it in place),
// never those strings (ld.so itself cuts GLIBC_TUNABLES in them before 2.39:
// loader::startup_entries joins it again).  So the model reads the strings:
//  * /proc/self/environ, the kernel's view of them, whenever it can be read
//    (libldshim loaded at start-up or later, by dlopen);
//  * else the strings in memory from the first one of the array glibc handed
//    libldshim's constructor, when that array was the start-up one (it lies
//    right after argv), up to the program's name the kernel placed after them
//    (AT_EXECFN): a process without /proc, or a set-group-id one.
// Neither sees a program that rewrote those strings in place (a
// setproctitle that borrows their room); the second misses what changed the
// array in place before libldshim's constructor (an unsetenv before a late
// dlopen of libldshim, or in an earlier constructor).
#pragma once

#include "loader/loader_env.h"

#include <optional>
#include <string>
#include <vector>

namespace ldshim::host {

struct StartupEnvironment {
    std::vector<std::string> strings;  // NAME=VALUE, in order
    loader::LoaderEnvironment vars;    // the search's variables among them
    // The strings as a null-terminated array, valid while `strings` is.
    std::vector<const char*> envp() const;
};

// Nullopt, with the reason, when neither way can read them.
std::optional<StartupEnvironment> startup_environment(std::string* error);

}  // namespace ldshim::host
