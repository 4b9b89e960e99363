/* SPDX-License-Identifier: MIT */
/*
 * Elastic mode with thieves that sleep, on fake multi-node machines: one
 * CPU per node (every thief is on another node, so only a cross-node wake
 * can bring one in) and two workers per node of a four-node EPYC.
 *
 * - Bursts: all work of a burst lands on worker 0 while every other worker
 *   is parked, and a task of it must start on every other worker before
 *   worker 0 lets go; twenty bursts in a row. A thief that is not woken
 *   for the second burst (the backlog crossing the remote-steal threshold
 *   went unseen) leaves the burst waiting.
 * - Stale advertisement: thieves empty worker 0's queue while worker 0 is
 *   busy in a long task, so only a thief can see that its advertisement is
 *   stale. Every thief must then park, and while worker 0 sleeps for a
 *   second in that task the runtime uses under 2% of a CPU per worker.
 * - Nothing to do: a runtime waiting on a one-second timer uses under 2% of
 *   a CPU per worker.
 *
 * Every wait is for the event the test expects; a watchdog (far longer
 * than any run takes) only turns a hang into a failure that says which
 * wait it was. The CPU bounds are on CPU time, not on how long anything
 * took.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

#ifndef WATCHDOG_S
#define WATCHDOG_S 120
#endif
#define WATCHDOG_NS (WATCHDOG_S * 1000000000ull)
#define BURSTS 20

struct el {
        struct pc_runtime *rt;
        unsigned n;        /* workers */
        enum pc_idle idle;
        uint64_t burst;    /* tasks per burst */
        uint64_t deadline; /* watchdog */
        _Atomic unsigned phase;
        _Atomic unsigned arrived;                 /* thieves in this burst */
        _Atomic unsigned arrived_in[PC_MAX_WORKERS]; /* phase + 1 once arrived */
        _Atomic uint64_t done;                    /* tasks of this burst run */
        _Atomic uint64_t ran_on[PC_MAX_WORKERS];
        _Atomic uint64_t total;
        _Atomic bool failed;
        char why[2048];
        double cpu_s; /* CPU seconds the process used over the measured second */
        struct pc_task driver;
        struct pc_timer timer;
        struct rusage ru0;
};

static struct el E;

static void record_failure(const char *fmt, ...)
{
        va_list ap;
        size_t n;

        if (atomic_exchange(&E.failed, true))
                return;
        va_start(ap, fmt);
        n = (size_t)vsnprintf(E.why, sizeof(E.why), fmt, ap);
        va_end(ap);
        /* What each worker looked like: whether it sleeps, its stealable
         * backlog and advertisement. */
        n += (size_t)snprintf(E.why + n, sizeof(E.why) - n, "; bits %llx searching %u",
                              (unsigned long long)atomic_load(&E.rt->stealable[0]),
                              atomic_load(&E.rt->searching));
        for (unsigned w = 0; w < E.n && n < sizeof(E.why); w++) {
                struct pc_worker *x = E.rt->workers[w];
                n += (size_t)snprintf(E.why + n, sizeof(E.why) - n,
                                      "; w%u sleeping %d len %llu adv %d", w,
                                      (int)atomic_load(&x->sleeping),
                                      (unsigned long long)pc__stealq_ring_len(&x->sq),
                                      (int)atomic_load(&x->sq.adv));
        }
        pc_runtime_stop(E.rt);
}

/* The watchdog: true (and the test failed) once it expired. */
static bool expired(const char *what)
{
        if (atomic_load(&E.failed))
                return true;
        if (pc_now_ns() < E.deadline)
                return false;
        record_failure("watchdog: %s (phase %u, %u thieves arrived)", what, atomic_load(&E.phase),
             atomic_load(&E.arrived));
        return true;
}

/* Wait until every worker but the caller (worker 0) is parked. */
static bool all_thieves_parked(void)
{
        for (unsigned w = 1; w < E.n; w++)
                while (!atomic_load(&E.rt->workers[w]->sleeping))
                        if (expired("a thief never parked"))
                                return false;
                        else
                                pc__cpu_relax();
        return true;
}

static double cpu_seconds(const struct rusage *a, const struct rusage *b)
{
        double u = (double)(b->ru_utime.tv_sec - a->ru_utime.tv_sec) +
                   (double)(b->ru_utime.tv_usec - a->ru_utime.tv_usec) / 1e6;
        double s = (double)(b->ru_stime.tv_sec - a->ru_stime.tv_sec) +
                   (double)(b->ru_stime.tv_usec - a->ru_stime.tv_usec) / 1e6;
        return u + s;
}

static void config(struct pc_config *cfg, const char *fixture, unsigned workers,
                   enum pc_idle idle, char *root, size_t rootsz)
{
        const char *fx = getenv("PC_FIXTURES");

        assert_non_null(fx);
        snprintf(root, rootsz, "%s/%s/sys", fx, fixture);
        pc_test_config(cfg, workers);
        cfg->mode = PC_MODE_ELASTIC;
        cfg->sysfs_root = root;
        cfg->placement = PC_PLACE_SPREAD;
        cfg->idle = idle;
        cfg->idle_spin_us = 20;
}

/* ---- bursts ------------------------------------------------------------------ */

static void driver(void *arg);

/* A thief's first task of a burst waits for the others' first: so each
 * thief takes part in every burst, whichever was woken first. */
static void burst_task(void *arg)
{
        unsigned me = (unsigned)pc_worker_id(), phase = atomic_load(&E.phase);

        (void)arg;
        if (me != 0 && atomic_load(&E.arrived_in[me]) != phase + 1) {
                atomic_store(&E.arrived_in[me], phase + 1);
                atomic_fetch_add(&E.arrived, 1);
                while (atomic_load(&E.arrived) < E.n - 1)
                        if (expired("thieves waiting for each other"))
                                return;
                        else
                                pc__cpu_relax();
        }
        atomic_fetch_add(&E.ran_on[me], 1);
        atomic_fetch_add(&E.total, 1);
        if (atomic_fetch_add(&E.done, 1) + 1 == E.burst) {
                if (phase + 1 == BURSTS) {
                        pc_runtime_stop(E.rt);
                } else {
                        atomic_store(&E.phase, phase + 1);
                        pc_task_init(&E.driver, driver, NULL, PC_STICKY);
                        if (pc_spawn_task_on(0, &E.driver))
                                record_failure("cannot send the next burst's driver");
                }
        }
}

/* On worker 0, sticky: once every thief sleeps, queue a burst here and
 * hold the worker until each thief has started a task of it. */
static void driver(void *arg)
{
        (void)arg;
        if (pc_worker_id() != 0) {
                record_failure("the driver ran on worker %d", pc_worker_id());
                return;
        }
        if (E.idle != PC_IDLE_POLL && !all_thieves_parked())
                return;
        atomic_store(&E.arrived, 0);
        atomic_store(&E.done, 0);
        for (uint64_t i = 0; i < E.burst; i++)
                if (pc_spawn(burst_task, NULL)) {
                        record_failure("pc_spawn failed");
                        return;
                }
        while (atomic_load(&E.arrived) < E.n - 1)
                if (expired("a parked thief was not woken for the burst"))
                        return;
                else
                        pc__cpu_relax();
}

static void bursts_main(void *arg)
{
        (void)arg;
        atomic_store(&E.phase, 0);
        pc_task_init(&E.driver, driver, NULL, PC_STICKY);
        pc_spawn_task(&E.driver);
}

static void run_bursts(const char *fixture, unsigned workers, enum pc_idle idle)
{
        struct pc_config cfg;
        struct pc_worker_stats st[PC_MAX_WORKERS];
        char root[512];
        uint64_t stolen = 0, parks = 0;

        memset(&E, 0, sizeof(E));
        config(&cfg, fixture, workers, idle, root, sizeof(root));
        assert_int_equal(pc_runtime_create(&cfg, &E.rt), 0);
        E.n = pc_runtime_workers(E.rt);
        assert_int_equal(E.n, workers);
        E.idle = idle;
        E.burst = 32ull * E.n;
        E.deadline = pc_now_ns() + WATCHDOG_NS;
        assert_int_equal(pc_runtime_run(E.rt, bursts_main, NULL), 0);
        if (atomic_load(&E.failed))
                fail_msg("%s, %u workers, idle %d: %s", fixture, workers, (int)idle, E.why);
        assert_int_equal(atomic_load(&E.total), E.burst * BURSTS);
        assert_int_equal(pc_stats_snapshot(E.rt, st, PC_MAX_WORKERS), E.n);
        for (unsigned w = 0; w < E.n; w++) {
                stolen += st[w].stolen;
                parks += st[w].parks;
                /* Every thief took part in every burst. */
                if (w)
                        assert_true(atomic_load(&E.ran_on[w]) >= BURSTS);
        }
        assert_true(stolen > 0);
        /* Each burst found the thieves asleep. */
        if (idle != PC_IDLE_POLL)
                assert_true(parks >= (uint64_t)(E.n - 1) * BURSTS);
        pc_runtime_destroy(E.rt);
}

/* Each idle policy in turn. */
static void test_bursts(const char *fixture, unsigned workers)
{
        static const enum pc_idle idles[] = {PC_IDLE_POLL, PC_IDLE_PARK, PC_IDLE_ADAPTIVE};

        for (size_t i = 0; i < sizeof(idles) / sizeof(idles[0]); i++)
                run_bursts(fixture, workers, idles[i]);
}

static void test_bursts_node_per_cpu(void **state)
{
        (void)state;
        test_bursts("node-per-cpu", 4);
}

static void test_bursts_two_per_node(void **state)
{
        (void)state;
        test_bursts("epyc-nps4", 8);
}

/* ---- a stale advertisement, then a second of sleep --------------------------- */

static void stale_task(void *arg)
{
        (void)arg;
        atomic_fetch_add(&E.ran_on[pc_worker_id()], 1);
        atomic_fetch_add(&E.done, 1);
}

/* Worker 0, sticky: queue work and stay busy while thieves take it all,
 * so the queue empties without worker 0 ever looking at it; then sleep a
 * second inside the task while the thieves should be parked. */
static void stale_main(void *arg)
{
        struct rusage r0, r1;
        struct timespec sec = {.tv_sec = 1};

        (void)arg;
        for (uint64_t i = 0; i < E.burst; i++)
                if (pc_spawn(stale_task, NULL)) {
                        record_failure("pc_spawn failed");
                        return;
                }
        while (atomic_load(&E.done) < E.burst)
                if (expired("the thieves did not take the queue"))
                        return;
                else
                        pc__cpu_relax();
        if (!all_thieves_parked())
                return;
        getrusage(RUSAGE_SELF, &r0);
        while (nanosleep(&sec, &sec) != 0 && errno == EINTR)
                ;
        getrusage(RUSAGE_SELF, &r1);
        E.cpu_s = cpu_seconds(&r0, &r1);
        pc_runtime_stop(E.rt);
}

static void run_stale(const char *fixture, unsigned workers, enum pc_idle idle)
{
        struct pc_config cfg;
        char root[512];

        memset(&E, 0, sizeof(E));
        config(&cfg, fixture, workers, idle, root, sizeof(root));
        /* Thieves on other nodes may take the queue's last tasks too (past
         * the threshold they would stay for worker 0, which never looks). */
        cfg.remote_steal_min = 1;
        assert_int_equal(pc_runtime_create(&cfg, &E.rt), 0);
        E.n = pc_runtime_workers(E.rt);
        E.idle = idle;
        E.burst = 64ull * E.n;
        E.deadline = pc_now_ns() + WATCHDOG_NS;
        assert_int_equal(pc_runtime_run(E.rt, stale_main, NULL), 0);
        if (atomic_load(&E.failed))
                fail_msg("%s, idle %d: %s", fixture, (int)idle, E.why);
        assert_int_equal(atomic_load(&E.ran_on[0]), 0);
        if (E.cpu_s >= 0.02 * E.n)
                fail_msg("%s, idle %d: %.3f CPU-s in a second with nothing to do (%u workers)",
                         fixture, (int)idle, E.cpu_s, E.n);
        pc_runtime_destroy(E.rt);
}

static void test_stale_advert_parks(void **state)
{
        (void)state;
        run_stale("node-per-cpu", 4, PC_IDLE_PARK);
        run_stale("node-per-cpu", 4, PC_IDLE_ADAPTIVE);
        run_stale("epyc-nps4", 8, PC_IDLE_PARK);
        run_stale("epyc-nps4", 8, PC_IDLE_ADAPTIVE);
}

/* ---- nothing to do ----------------------------------------------------------- */

static void idle_timer(struct pc_timer *t, void *arg)
{
        struct rusage r1;

        (void)t;
        (void)arg;
        getrusage(RUSAGE_SELF, &r1);
        E.cpu_s = cpu_seconds(&E.ru0, &r1);
        pc_runtime_stop(E.rt);
}

static void idle_main(void *arg)
{
        (void)arg;
        getrusage(RUSAGE_SELF, &E.ru0);
        pc_timer_init(&E.timer, idle_timer, NULL);
        if (pc_timer_start(&E.timer, 1000000000ull, 0))
                record_failure("pc_timer_start failed");
}

static void run_idle(const char *fixture, unsigned workers, enum pc_idle idle)
{
        struct pc_config cfg;
        char root[512];

        memset(&E, 0, sizeof(E));
        config(&cfg, fixture, workers, idle, root, sizeof(root));
        assert_int_equal(pc_runtime_create(&cfg, &E.rt), 0);
        E.n = pc_runtime_workers(E.rt);
        assert_int_equal(pc_runtime_run(E.rt, idle_main, NULL), 0);
        assert_false(atomic_load(&E.failed));
        if (E.cpu_s >= 0.02 * E.n)
                fail_msg("%s, idle %d: %.3f CPU-s in an idle second (%u workers)", fixture,
                         (int)idle, E.cpu_s, E.n);
        pc_runtime_destroy(E.rt);
}

static void test_nothing_to_do_parks(void **state)
{
        (void)state;
        run_idle("node-per-cpu", 4, PC_IDLE_PARK);
        run_idle("node-per-cpu", 4, PC_IDLE_ADAPTIVE);
        run_idle("epyc-nps4", 8, PC_IDLE_PARK);
        run_idle("epyc-nps4", 8, PC_IDLE_ADAPTIVE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bursts_node_per_cpu),
                cmocka_unit_test(test_bursts_two_per_node),
                cmocka_unit_test(test_stale_advert_parks),
                cmocka_unit_test(test_nothing_to_do_parks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
