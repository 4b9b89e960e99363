/* SPDX-License-Identifier: MIT */
/*
 * Parking under message storms. Workers park as soon as they are idle
 * (PERCORE_IDLE=park), so nearly every message finds its target asleep or
 * falling asleep: a lost wake-up would leave a worker sleeping with work
 * queued, and the test would hang until meson's timeout fails it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "pc_test.h"

struct storm {
        struct pc_runtime *rt;
        unsigned nworkers;
        uint64_t rounds;          /* ping-pong rounds per pair */
        _Atomic uint64_t pongs;   /* completed rounds, all pairs */
        uint64_t expect_pongs;
        uint64_t inject_total;
        _Atomic uint64_t injected_ran;
        _Atomic uint64_t bad;
        /* A poller that sleeps the worker itself (its sleep op): 0 none,
         * SLEEP_POLL in poll(2) on the wake fd, SLEEP_REFUSE refuses. */
        int sleeper;
        _Atomic uint64_t sleeps;
        _Atomic unsigned sleepers; /* added so far; injectors wait for all */
};

enum { SLEEP_POLL = 1, SLEEP_REFUSE = 2 };

static struct storm S;

static void maybe_stop(void)
{
        if (atomic_load(&S.pongs) == S.expect_pongs &&
            atomic_load(&S.injected_ran) == S.inject_total)
                pc_runtime_stop(S.rt);
}

static void ping(void *arg);

/* arg: round << 8 | origin worker. */
static void pong(void *arg)
{
        uintptr_t v = (uintptr_t)arg;
        unsigned origin = v & 0xff;
        uint64_t round = v >> 8;

        if ((unsigned)pc_worker_id() != origin)
                atomic_fetch_add(&S.bad, 1);
        atomic_fetch_add(&S.pongs, 1);
        if (round + 1 < S.rounds)
                pc_spawn(ping, (void *)(uintptr_t)((round + 1) << 8 | origin));
        else
                maybe_stop();
}

static void echo(void *arg)
{
        uintptr_t v = (uintptr_t)arg;

        if (pc_spawn_on(v & 0xff, pong, arg) != 0)
                atomic_fetch_add(&S.bad, 1);
}

/* Bounce to the next worker, which answers back: one message in flight per
 * origin, so each hop lands on a worker that has just gone idle. */
static void ping(void *arg)
{
        uintptr_t v = (uintptr_t)arg;
        unsigned origin = v & 0xff;

        if (pc_spawn_on((origin + 1) % S.nworkers, echo, arg) != 0)
                atomic_fetch_add(&S.bad, 1);
}

static void injected(void *arg)
{
        (void)arg;
        atomic_fetch_add(&S.injected_ran, 1);
        maybe_stop();
}

static unsigned idle_poll(void *arg)
{
        (void)arg;
        return 0;
}

/* Sleeps the way an event loop a poller wraps would: until the wake fd is
 * readable or the deadline. */
static int own_sleep(void *arg, int wake_fd, uint64_t deadline)
{
        struct pollfd pfd = {.fd = wake_fd, .events = POLLIN};
        int ms = -1;
        uint64_t v;

        (void)arg;
        atomic_fetch_add(&S.sleeps, 1);
        if (S.sleeper == SLEEP_REFUSE)
                return -EOPNOTSUPP;
        if (deadline) {
                uint64_t now = pc_now_ns();
                ms = deadline > now ? (int)((deadline - now + 999999) / 1000000) : 0;
        }
        if (poll(&pfd, 1, ms) <= 0)
                return 0;
        return read(wake_fd, &v, sizeof(v)) == sizeof(v);
}

static const struct pc_poller_ops sleeper_ops = {
        .name = "test-sleeper",
        .poll = idle_poll,
        .sleep = own_sleep,
};

static void add_sleeper(void *arg)
{
        (void)arg;
        if (pc_poller_register(&sleeper_ops, NULL, NULL) != 0)
                atomic_fetch_add(&S.bad, 1);
        atomic_fetch_add(&S.sleepers, 1);
}

static void storm_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; S.sleeper && w < S.nworkers; w++)
                pc_spawn_on(w, add_sleeper, NULL);
        for (unsigned w = 0; w < S.nworkers; w++)
                pc_spawn_on(w, ping, (void *)(uintptr_t)w);
}

/* Outside threads inject in small bursts, yielding between them so the
 * workers go back to sleep in between. */
static void *injector(void *arg)
{
        (void)arg;
        while (S.sleeper && atomic_load(&S.sleepers) < S.nworkers)
                sched_yield();
        for (uint64_t i = 0; i < S.inject_total / 2; i++) {
                while (pc_runtime_inject(S.rt, injected, NULL) != 0)
                        sched_yield();
                if (i % 8 == 0)
                        sched_yield();
        }
        return NULL;
}

static void run_storm(enum pc_idle idle, unsigned workers, int sleeper)
{
        struct pc_config cfg;
        pthread_t th[2];
        struct pc_worker_stats st[PC_MAX_WORKERS];
        uint64_t parks = 0;

        memset(&S, 0, sizeof(S));
        S.sleeper = sleeper;
        pc_test_config(&cfg, workers);
        cfg.idle = idle;
        cfg.idle_spin_us = 5;
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        S.nworkers = pc_runtime_workers(S.rt);
        S.rounds = pc_test_scaled(20000);
        S.expect_pongs = S.rounds * S.nworkers;
        S.inject_total = pc_test_scaled(100000) & ~1ull;
        for (int i = 0; i < 2; i++)
                pthread_create(&th[i], NULL, injector, NULL);
        assert_int_equal(pc_runtime_run(S.rt, storm_main, NULL), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        assert_int_equal(atomic_load(&S.bad), 0);
        assert_int_equal(atomic_load(&S.pongs), S.expect_pongs);
        assert_int_equal(atomic_load(&S.injected_ran), S.inject_total);
        assert_int_equal(pc_stats_snapshot(S.rt, st, PC_MAX_WORKERS), S.nworkers);
        for (unsigned w = 0; w < S.nworkers; w++)
                parks += st[w].parks;
        /* The storm really exercised sleeping, in the poller's sleep op
         * when there is one: every park went there (refused or not) but a
         * worker's first, which may come before its poller was added (the
         * injectors wait for every poller). */
        assert_true(parks > 0);
        if (sleeper) {
                assert_true(atomic_load(&S.sleeps) <= parks);
                assert_true(atomic_load(&S.sleeps) + S.nworkers >= parks);
        }
        pc_runtime_destroy(S.rt);
}

static void test_park_storm_2(void **state)
{
        (void)state;
        run_storm(PC_IDLE_PARK, 2, 0);
}

static void test_park_storm_oversubscribed(void **state)
{
        (void)state;
        run_storm(PC_IDLE_PARK, 6, 0);
}

static void test_adaptive_storm(void **state)
{
        (void)state;
        run_storm(PC_IDLE_ADAPTIVE, 3, 0);
}

/* A poller that sleeps the worker in its own wait (the op knet uses to
 * sleep in io_uring_enter) loses no wake-up either. */
static void test_park_storm_poller_sleeps(void **state)
{
        (void)state;
        run_storm(PC_IDLE_PARK, 3, SLEEP_POLL);
}

/* One that refuses sends the worker to its eventfd, losing nothing. */
static void test_park_storm_poller_refuses(void **state)
{
        (void)state;
        run_storm(PC_IDLE_PARK, 2, SLEEP_REFUSE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_park_storm_2),
                cmocka_unit_test(test_park_storm_oversubscribed),
                cmocka_unit_test(test_adaptive_storm),
                cmocka_unit_test(test_park_storm_poller_sleeps),
                cmocka_unit_test(test_park_storm_poller_refuses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
