// What every test of the interposers suite is built with (tests/meson.build).
#pragma once

#include "../differential/harness.h"

#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif
#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name tests/interposers/fixtures"
#endif
#ifndef FORWARDER_SRC
#error "FORWARDER_SRC must name tests/resolver/fixtures/forwarder.c"
#endif
