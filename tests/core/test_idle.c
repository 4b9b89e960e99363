/* SPDX-License-Identifier: MIT */
/*
 * Adaptive idle's spin: it halves after each spin that ends in a park, down
 * to 1/64 of idle_spin_us, and starts each run in full. The test waits for
 * each park before handing the worker its next task, so every idle period
 * ends in a park and nothing depends on timing.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <time.h>

#include "pc_test.h"

#define SPIN_US 640 /* floor: 10 us */
#define ROUNDS 12

struct idle_run {
        struct pc_runtime *rt;
        _Atomic unsigned ran;
        uint64_t parks0;        /* parks before the run (they count across runs) */
        uint64_t spins[ROUNDS]; /* spin_ns seen after each park */
        bool ok;
};

static void task(void *arg)
{
        struct idle_run *r = arg;

        atomic_fetch_add(&r->ran, 1);
}

static struct pc_worker_stats snap(struct pc_runtime *rt)
{
        struct pc_worker_stats st;

        pc_stats_snapshot(rt, &st, 1);
        return st;
}

/* Wait (polling the stats) until worker 0 has parked more than @parks
 * times, at most 20 s. */
static bool wait_park(struct pc_runtime *rt, uint64_t parks)
{
        struct timespec ts = {0, 200000};

        for (int i = 0; i < 100000; i++) {
                if (snap(rt).parks > parks)
                        return true;
                nanosleep(&ts, NULL);
        }
        return false;
}

/* Each round: the worker parks, then gets a task, runs it, spins its
 * (shorter) spin and parks again. No cmocka asserts off the test thread. */
static void *driver(void *arg)
{
        struct idle_run *r = arg;
        uint64_t parks = r->parks0;

        r->ok = true;
        for (unsigned i = 0; i < ROUNDS && r->ok; i++) {
                struct pc_worker_stats st;

                r->ok = wait_park(r->rt, parks);
                st = snap(r->rt);
                parks = st.parks;
                r->spins[i] = st.spin_ns;
                if (pc_runtime_inject(r->rt, task, r) != 0)
                        r->ok = false;
                /* Woken by the task, the worker runs it, spins and parks
                 * again: park number parks + 1 ends the next idle period
                 * (it may come before this thread looks again). */
                while (r->ok && atomic_load(&r->ran) < i + 1)
                        sched_yield();
        }
        pc_runtime_stop(r->rt);
        return NULL;
}

static void noop(void *arg)
{
        (void)arg;
}

static void run_once(struct idle_run *r)
{
        pthread_t t;

        atomic_store(&r->ran, 0);
        r->parks0 = snap(r->rt).parks; /* before the worker can park again */
        assert_int_equal(pthread_create(&t, NULL, driver, r), 0);
        assert_int_equal(pc_runtime_run(r->rt, noop, NULL), 0);
        pthread_join(t, NULL);
        assert_true(r->ok);
}

static void test_spin_backs_off(void **state)
{
        struct idle_run r = {.ok = false};
        struct pc_config cfg;
        uint64_t max = SPIN_US * 1000u, floor = max / 64;

        (void)state;
        pc_test_config(&cfg, 1);
        cfg.idle = PC_IDLE_ADAPTIVE;
        cfg.idle_spin_us = SPIN_US;
        assert_int_equal(pc_runtime_create(&cfg, &r.rt), 0);
        for (unsigned run = 0; run < 2; run++) {
                run_once(&r);
                /* The first idle period spun in full, then parked. */
                assert_int_equal(r.spins[0], max / 2);
                for (unsigned i = 1; i < ROUNDS; i++) {
                        uint64_t want = r.spins[i - 1] / 2 > floor ? r.spins[i - 1] / 2 : floor;

                        assert_int_equal(r.spins[i], want);
                }
                assert_int_equal(r.spins[ROUNDS - 1], floor);
        }
        pc_runtime_destroy(r.rt);
}

/* Polling and parking keep no spin to adapt. */
static void test_poll_keeps_spin(void **state)
{
        struct idle_run r = {.ok = false};
        struct pc_config cfg;

        (void)state;
        pc_test_config(&cfg, 1);
        cfg.idle = PC_IDLE_PARK;
        cfg.idle_spin_us = SPIN_US;
        assert_int_equal(pc_runtime_create(&cfg, &r.rt), 0);
        run_once(&r);
        for (unsigned i = 0; i < ROUNDS; i++)
                assert_int_equal(r.spins[i], SPIN_US * 1000u);
        pc_runtime_destroy(r.rt);
}

/* Whether 2 workers pinned to CPUs 0-1 of fixture @name (or unpinned)
 * pause in their idle spin. -1: this machine cannot pin to CPUs 0 and 1. */
static int pauses(const char *name, bool pin)
{
        const char *fixtures = getenv("PC_FIXTURES");
        struct pc_worker_stats st[2];
        struct pc_runtime *rt;
        struct pc_config cfg;
        char root[512];
        cpu_set_t set;

        assert_non_null(fixtures);
        if (sched_getaffinity(0, sizeof(set), &set) || !CPU_ISSET(0, &set) || !CPU_ISSET(1, &set))
                return -1;
        snprintf(root, sizeof(root), "%s/%s/sys", fixtures, name);
        pc_test_config(&cfg, 2);
        cfg.sysfs_root = root;
        cfg.pin = pin;
        cfg.cpus = "0-1";
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_stats_snapshot(rt, st, 2), 2);
        pc_runtime_destroy(rt);
        assert_int_equal(st[0].spin_pause, st[1].spin_pause);
        return st[0].spin_pause;
}

/* A worker alone on its core spins without a pause; one whose core has
 * another online hardware thread, or that is not pinned, pauses. */
static void test_spin_pause(void **state)
{
        (void)state;
        if (pauses("node-per-cpu", true) < 0)
                skip();
        assert_int_equal(pauses("node-per-cpu", true), 0);  /* one thread a core */
        assert_int_equal(pauses("laptop", true), 1);        /* 0 and 1 are siblings */
        assert_int_equal(pauses("offline-cpus", true), 1);  /* 0's sibling is 4 */
        assert_int_equal(pauses("node-per-cpu", false), 1); /* not pinned */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spin_backs_off),
                cmocka_unit_test(test_poll_keeps_spin),
                cmocka_unit_test(test_spin_pause),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
