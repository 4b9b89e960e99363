/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka tests. */
#ifndef PC_TEST_H
#define PC_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "percore.h"

/* Sanitizer builds run the same tests with smaller counts: PC_TEST_SCALE is
 * the percentage of the full count (meson option test_scale). */
#ifndef PC_TEST_SCALE
#define PC_TEST_SCALE 100
#endif

static inline uint64_t pc_test_scaled(uint64_t full)
{
        const char *e = getenv("PC_TEST_SCALE");
        uint64_t pct = e ? strtoull(e, NULL, 10) : PC_TEST_SCALE;
        uint64_t n;

        if (pct == 0 || pct > 100)
                pct = 100;
        n = full * pct / 100;
        return n ? n : 1;
}

/* A config for tests: unpinned (tests may run more workers than CPUs),
 * quiet logs, parking idle so oversubscribed workers do not burn CPU. */
static inline void pc_test_config(struct pc_config *cfg, unsigned workers)
{
        pc_config_init(cfg);
        cfg->workers = workers;
        cfg->pin = false;
        cfg->log_level = PC_LOG_WARN;
        cfg->idle = PC_IDLE_PARK;
}

/* A fiber body that overflows its stack: deep recursion, 512 bytes a
 * frame, the volatile frames kept by the compiler. For the tests of the
 * overflow message (test_fiber, test_crash). */
static inline unsigned pc_test_recurse(unsigned n)
{
        volatile char pad[512];

        pad[0] = (char)n;
        return n ? pc_test_recurse(n - 1) + (unsigned)pad[0] : 0;
}

static inline void *pc_test_overflow(void *arg)
{
        (void)arg;
        pc_test_recurse(1u << 20);
        return NULL;
}

#endif
