/* SPDX-License-Identifier: MIT */
/*
 * pc_runtime_drain(): a module of the test's says how much it still
 * serves (drain_busy) and counts its worker_drain calls; the drain ends
 * when it says 0 everywhere, or at the deadline, and SIGTERM drains under
 * pc_runtime_drain_on_signals().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "pc_test.h"
#include "pc_core_pvt.h"
#include "pc_fiber.h"

#define NW 2
#define LONG_NS (60ull * 1000000000ull) /* a deadline no passing run reaches */

static struct pc_runtime *RT;
static struct pc__module mod;
static _Atomic unsigned drained[NW], busy;
static _Atomic int fiber_rc, early_stop;

static void m_drain(struct pc_worker *w, void *arg)
{
        (void)arg;
        atomic_fetch_add(&drained[w->id], 1);
}

/* Worker 0 serves @busy things, the others none. */
static unsigned m_busy(struct pc_worker *w, void *arg)
{
        (void)arg;
        return w->id == 0 ? atomic_load(&busy) : 0;
}

static struct pc_runtime *make(void)
{
        struct pc_config cfg;
        struct pc_runtime *rt;

        pc_test_config(&cfg, NW);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        memset(&mod, 0, sizeof(mod));
        mod.worker_drain = m_drain;
        mod.drain_busy = m_busy;
        assert_int_equal(pc__module_add(rt, &mod), 0);
        for (unsigned i = 0; i < NW; i++)
                atomic_store(&drained[i], 0);
        atomic_store(&early_stop, 0);
        RT = rt;
        return rt;
}

static bool all_drained(void)
{
        for (unsigned i = 0; i < NW; i++)
                if (atomic_load(&drained[i]) == 0)
                        return false;
        return true;
}

static void wait_drained(void)
{
        while (!all_drained())
                usleep(1000);
}

static void noop(void *arg)
{
        (void)arg;
}

/* From a thread of the test: drain, see every worker begin while worker
 * 0 is busy (the run goes on), then let worker 0 finish. */
static void *drain_then_idle(void *arg)
{
        (void)arg;
        if (pc_runtime_drain(RT, LONG_NS) != 0)
                atomic_store(&early_stop, 1);
        wait_drained();
        usleep(20000); /* a few of the workers' looks, all busy */
        if (pc_runtime_stopping(RT) || !pc_runtime_draining(RT))
                atomic_store(&early_stop, 1);
        atomic_store(&busy, 0);
        return NULL;
}

static void test_ends_when_idle(void **state)
{
        struct pc_runtime *rt = make();
        pthread_t t;
        uint64_t t0 = pc_now_ns();

        (void)state;
        atomic_store(&busy, 1);
        assert_int_equal(pthread_create(&t, NULL, drain_then_idle, NULL), 0);
        assert_int_equal(pc_runtime_run(rt, noop, NULL), 0);
        pthread_join(t, NULL);
        assert_int_equal(atomic_load(&early_stop), 0);
        for (unsigned i = 0; i < NW; i++)
                assert_int_equal(atomic_load(&drained[i]), 1); /* once per worker */
        assert_true(pc_now_ns() - t0 < LONG_NS);
        assert_false(pc_runtime_draining(rt)); /* a drain applies to one run */
        pc_runtime_destroy(rt);
}

static void *sleeper(void *arg)
{
        (void)arg;
        atomic_store(&fiber_rc, pc_fiber_sleep_ns(LONG_NS));
        return NULL;
}

#define DEADLINE_NS 200000000ull

static void drain_from_worker(void *arg)
{
        (void)arg;
        /* Checked by the test's thread after the run (early_stop). */
        if (pc_fiber_spawn(sleeper, NULL, NULL) != 0 || pc_runtime_drain(RT, DEADLINE_NS) != 0 ||
            pc_runtime_drain(RT, DEADLINE_NS) != -ESHUTDOWN || !pc_runtime_draining(RT))
                atomic_store(&early_stop, 1);
}

/* Busy for good: the drain ends at its deadline, and stops the run as
 * pc_runtime_stop() does (a waiting fiber is cancelled). */
static void test_deadline(void **state)
{
        struct pc_runtime *rt = make();
        uint64_t t0 = pc_now_ns();

        (void)state;
        atomic_store(&busy, 1);
        atomic_store(&fiber_rc, 1);
        assert_int_equal(pc_runtime_run(rt, drain_from_worker, NULL), 0);
        assert_int_equal(atomic_load(&early_stop), 0);
        assert_true(pc_now_ns() - t0 >= DEADLINE_NS);
        assert_int_equal(atomic_load(&fiber_rc), -ECANCELED);
        assert_true(all_drained());
        pc_runtime_destroy(rt);
}

static void stop_then_drain(void *arg)
{
        (void)arg;
        pc_runtime_stop(RT);
        if (pc_runtime_drain(RT, LONG_NS) != -ESHUTDOWN)
                atomic_store(&early_stop, 1);
}

static void test_errors(void **state)
{
        struct pc_runtime *rt = make();

        (void)state;
        assert_int_equal(pc_runtime_drain(NULL, 0), -EINVAL);
        assert_false(pc_runtime_draining(NULL));
        assert_int_equal(pc_runtime_drain_on_signals(rt, 0), -EINVAL);
        assert_int_equal(pc_runtime_drain_on_signals(NULL, 1), -EINVAL);
        assert_int_equal(pc_runtime_run(rt, stop_then_drain, NULL), 0);
        assert_int_equal(atomic_load(&early_stop), 0);
        assert_int_equal(atomic_load(&drained[0]), 0);
        /* Asked for before the run, a drain begins with it: nothing is
         * busy, so the run ends by itself. */
        atomic_store(&busy, 0);
        assert_int_equal(pc_runtime_drain(rt, LONG_NS), 0);
        assert_int_equal(pc_runtime_run(rt, noop, NULL), 0);
        assert_true(all_drained());
        pc_runtime_destroy(rt);
}

/* SIGTERM drains, the second one stops although worker 0 is busy. */
static void *signal_twice(void *arg)
{
        (void)arg;
        kill(getpid(), SIGTERM);
        wait_drained();
        if (pc_runtime_stopping(RT))
                atomic_store(&early_stop, 1);
        kill(getpid(), SIGTERM);
        return NULL;
}

static void test_sigterm(void **state)
{
        struct pc_runtime *rt = make();
        pthread_t t;

        (void)state;
        atomic_store(&busy, 1);
        assert_int_equal(pc_runtime_drain_on_signals(rt, LONG_NS), 0);
        assert_int_equal(pthread_create(&t, NULL, signal_twice, NULL), 0);
        assert_int_equal(pc_runtime_run(rt, noop, NULL), 0);
        pthread_join(t, NULL);
        assert_int_equal(atomic_load(&early_stop), 0);
        assert_true(all_drained());
        pc_runtime_destroy(rt); /* puts SIGTERM's handler back */
}

/* From a signal handler: nothing but atomics and the wake-up. */
static void on_usr1(int sig)
{
        (void)sig;
        if (pc_runtime_drain(RT, LONG_NS) != 0)
                atomic_store(&early_stop, 1);
}

static void *raise_usr1(void *arg)
{
        (void)arg;
        pthread_kill(pthread_self(), SIGUSR1);
        return NULL;
}

static void test_from_handler(void **state)
{
        struct pc_runtime *rt = make();
        struct sigaction sa = {.sa_handler = on_usr1}, old;
        pthread_t t;

        (void)state;
        atomic_store(&busy, 0);
        sigemptyset(&sa.sa_mask);
        assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
        assert_int_equal(pthread_create(&t, NULL, raise_usr1, NULL), 0);
        assert_int_equal(pc_runtime_run(rt, noop, NULL), 0);
        pthread_join(t, NULL);
        sigaction(SIGUSR1, &old, NULL);
        assert_int_equal(atomic_load(&early_stop), 0);
        assert_true(all_drained());
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ends_when_idle),
                cmocka_unit_test(test_deadline),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_sigterm),
                cmocka_unit_test(test_from_handler),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
