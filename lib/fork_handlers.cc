// The one fork() handler of libldshim.  A child must never inherit a lock
// that another thread of the parent held, so the prepare handler takes every
// lock ldshim holds on a path another thread can be on, in this order (the
// order in which they nest), and parent and child release them in reverse:
//
//   1. the resolver's model        resolver/live_process   (a dlopen being resolved)
//   2. the hooks patcher           hooks/patcher           (a pass), then
//   3. its operation log           hooks/oplog             (taken inside a pass)
//   4. the subscriber list         hooks/events            (subscribe/unsubscribe)
//   5. the memory-type registry    memtype/registry        (its writer lock)
//
// The child then forgets the other threads' epoch reader slots
// (memtype/epoch).  Only instances that exist are locked: a handler must not
// build a model or a registry inside fork().  A lock taken here is never
// taken by the code that runs between prepare and release.
#include "hooks/events.h"
#include "hooks/patcher.h"
#include "memtype/epoch.h"
#include "memtype/registry.h"
#include "resolver/live_process.h"

#include <pthread.h>

namespace {

// What prepare locked, so that release unlocks exactly that even if an
// instance appeared in between (it cannot: its builder would need a lock
// held here, or run in this thread).
struct Held {
    ldshim::resolver::LiveProcess* model = nullptr;
    ldshim::hooks::Patcher* hooks = nullptr;
    ldshim::memtype::Registry* registry = nullptr;
};
Held g_held;

void prepare() {
    g_held.model = ldshim::resolver::LiveProcess::existing();
    if (g_held.model) g_held.model->fork_prepare();
    g_held.hooks = ldshim::hooks::Patcher::existing();
    if (g_held.hooks) g_held.hooks->fork_prepare();
    ldshim::hooks::subscribers_fork_prepare();
    g_held.registry = ldshim::memtype::Registry::existing_global();
    if (g_held.registry) g_held.registry->fork_prepare();
}

void release() {
    if (g_held.registry) g_held.registry->fork_release();
    ldshim::hooks::subscribers_fork_release();
    if (g_held.hooks) g_held.hooks->fork_release();
    if (g_held.model) g_held.model->fork_release();
}

void child() {
    release();
    if (auto* epochs = ldshim::memtype::EpochDomain::existing()) epochs->reset_after_fork();
}

[[gnu::constructor]] void register_fork_handlers() { pthread_atfork(prepare, release, child); }

}  // namespace
