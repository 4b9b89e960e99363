/* SPDX-License-Identifier: MIT */
/*
 * The msg suite's floor (perf/peers/msg_pingpong.c): a plain cache-line
 * ping-pong between two pinned threads runs, returns a positive number of
 * ns per round trip, and ran where it was pinned; its errors are errors.
 * Nothing asserts on how fast it ran.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "peers/msg_peers.h"

/* The first two CPUs this process may use; false when it has one. */
static bool two_cpus(int cpu[2])
{
        cpu_set_t set;
        unsigned k = 0;

        if (sched_getaffinity(0, sizeof(set), &set))
                return false;
        for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
                if (CPU_ISSET(c, &set))
                        cpu[k++] = c;
        return k == 2;
}

static void test_floor_pinned(void **state)
{
        struct msg_cpu seen[2];
        int cpu[2];
        double ns;

        (void)state;
        if (!two_cpus(cpu))
                skip();
        ns = msg_peer_pingpong(true, cpu[0], cpu[1], 0.02, seen);
        assert_true(isfinite(ns));
        assert_true(ns > 0);
        for (unsigned i = 0; i < 2; i++) {
                assert_int_equal(seen[i].want, cpu[i]);
                assert_false(msg_cpu_moved(&seen[i]));
        }
}

static void test_floor_errors(void **state)
{
        int bad = CPU_SETSIZE - 1, cpu[2];

        (void)state;
        assert_true(msg_peer_pingpong(false, 0, 0, 0, NULL) == -EINVAL);
        assert_true(msg_peer_pingpong(false, 0, 0, -1, NULL) == -EINVAL);
        /* A CPU the process may not use is the pin's error, not a run:
         * for the first thread, and for the second once the first waits. */
        assert_true(msg_peer_pingpong(true, bad, bad, 0.01, NULL) < 0);
        if (two_cpus(cpu))
                assert_true(msg_peer_pingpong(true, cpu[0], bad, 0.01, NULL) < 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_floor_pinned),
                cmocka_unit_test(test_floor_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
