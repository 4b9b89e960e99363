/* SPDX-License-Identifier: MIT */
/*
 * pc_runtime_set_mode() while a skewed load runs: batches of elastic tasks
 * all queued on worker 0 of three, the mode switched back and forth
 * between batches from a thread that is no worker, and once from a task
 * in the middle of a batch. Steals happen only while elastic (none from
 * the moment every worker applied tpc), a tpc batch runs on worker 0
 * alone, and every task runs exactly once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

#define NW 3
#define MAXTASKS 2000

static struct pc_runtime *RT;
static unsigned batch; /* tasks per batch */
static _Atomic unsigned runs[MAXTASKS];
static _Atomic int ran_on[MAXTASKS];
static _Atomic unsigned done;
static _Atomic unsigned switch_at; /* 0, or the count at which a task switches to tpc */
/* What went wrong, found off the test's thread (cmocka asserts on it only). */
static char failure[256];
static _Atomic bool failed;

#define FAIL(...)                                                                        \
        do {                                                                             \
                if (!atomic_exchange(&failed, true))                                     \
                        snprintf(failure, sizeof(failure), __VA_ARGS__);                 \
        } while (0)

static void spin_us(unsigned us)
{
        uint64_t end = pc_now_ns() + us * 1000ull;

        while (pc_now_ns() < end)
                ;
}

static void work(void *arg)
{
        unsigned id = (unsigned)(uintptr_t)arg;

        spin_us(20);
        atomic_fetch_add(&runs[id], 1);
        atomic_store(&ran_on[id], pc_worker_id());
        if (atomic_fetch_add(&done, 1) + 1 == atomic_load(&switch_at) &&
            pc_runtime_set_mode(RT, PC_MODE_TPC) != 0)
                FAIL("set_mode from a worker failed");
}

/* Injected, so it runs on any worker: queues the batch on worker 0. */
static void spawner(void *arg)
{
        struct pc_spawn_opts o = {
                .affinity = PC_ELASTIC,
                .place = PC_SPAWN_WORKER,
                .worker = 0,
        };

        (void)arg;
        for (unsigned i = 0; i < batch; i++)
                if (pc_spawn_ex(work, (void *)(uintptr_t)i, &o) != 0)
                        FAIL("spawn %u failed", i);
}

static void nothing(void *arg)
{
        (void)arg;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};

        nanosleep(&ts, NULL);
}

/* Every worker applied @mode. */
static void wait_applied(enum pc_mode mode)
{
        for (unsigned i = 0; i < NW; i++)
                while (atomic_load_explicit(&RT->workers[i]->mode,
                                            memory_order_acquire) != (int)mode)
                        sleep_ms(1);
}

static uint64_t steals(void)
{
        uint64_t m[(NW + 1) * NW], n = 0;

        if (pc_stats_steals(RT, m, (NW + 1) * NW) != 0)
                FAIL("pc_stats_steals failed");
        for (unsigned i = 0; i < NW * NW; i++) /* not the injector's row */
                n += m[i];
        return n;
}

static uint64_t elastic_steals;

/* One batch; with @switch_mid, a task switches to tpc halfway through. */
static void run_batch(enum pc_mode mode, bool switch_mid)
{
        uint64_t before, after_switch = 0;

        if (pc_runtime_set_mode(RT, mode) != 0 || pc_runtime_mode(RT) != mode)
                FAIL("set_mode(%s)", pc_mode_name(mode));
        wait_applied(mode);
        memset(runs, 0, sizeof(runs));
        atomic_store(&done, 0);
        atomic_store(&switch_at, switch_mid ? batch / 2 : 0);
        before = steals();
        if (pc_runtime_inject(RT, spawner, NULL) != 0)
                FAIL("inject failed");
        if (switch_mid) {
                while (atomic_load(&done) < batch / 2)
                        sleep_ms(1);
                wait_applied(PC_MODE_TPC);
                after_switch = steals();
                elastic_steals += after_switch - before;
        }
        while (atomic_load(&done) < batch)
                sleep_ms(1);
        for (unsigned i = 0; i < batch; i++)
                if (atomic_load(&runs[i]) != 1)
                        FAIL("task %u ran %u times", i, atomic_load(&runs[i]));
        if (switch_mid) {
                if (steals() != after_switch)
                        FAIL("%llu steals after the switch to tpc",
                                 (unsigned long long)(steals() - after_switch));
        } else if (mode == PC_MODE_TPC) {
                if (steals() != before)
                        FAIL("%llu steals in tpc mode",
                                 (unsigned long long)(steals() - before));
                for (unsigned i = 0; i < batch; i++)
                        if (atomic_load(&ran_on[i]) != 0)
                                FAIL("task %u ran on worker %d in tpc mode", i,
                                         atomic_load(&ran_on[i]));
        } else {
                elastic_steals += steals() - before;
        }
}

static void *controller(void *arg)
{
        (void)arg;
        for (int round = 0; round < 3; round++) {
                run_batch(PC_MODE_TPC, false);
                run_batch(PC_MODE_ELASTIC, false);
        }
        run_batch(PC_MODE_TPC, false);
        run_batch(PC_MODE_ELASTIC, true);
        run_batch(PC_MODE_TPC, false);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_switch_under_skew(void **state)
{
        struct pc_config cfg;
        pthread_t t;

        (void)state;
        batch = (unsigned)pc_test_scaled(MAXTASKS);
        if (batch < 100)
                batch = 100;
        pc_test_config(&cfg, NW);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_mode(RT), PC_MODE_TPC);
        assert_int_equal(pthread_create(&t, NULL, controller, NULL), 0);
        assert_int_equal(pc_runtime_run(RT, nothing, NULL), 0);
        pthread_join(t, NULL);
        if (atomic_load(&failed))
                fail_msg("%s", failure);
        /* Idle thieves had skewed batches to take: some moved. */
        print_message("steals while elastic: %llu\n", (unsigned long long)elastic_steals);
        assert_true(elastic_steals > 0);
        pc_runtime_destroy(RT);
}

static void test_errors(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;

        (void)state;
        assert_int_equal(pc_runtime_set_mode(NULL, PC_MODE_TPC), -EINVAL);
        assert_int_equal(pc_runtime_mode(NULL), PC_MODE_TPC);
        pc_test_config(&cfg, 2);
        cfg.mode = PC_MODE_ELASTIC;
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_mode(rt), PC_MODE_ELASTIC);
        assert_int_equal(pc_runtime_set_mode(rt, PC_MODE_DETERMINISTIC), -EINVAL);
        assert_int_equal(pc_runtime_set_mode(rt, (enum pc_mode)7), -EINVAL);
        assert_int_equal(pc_runtime_set_mode(rt, PC_MODE_TPC), 0);
        assert_int_equal(pc_runtime_mode(rt), PC_MODE_TPC);
        pc_runtime_destroy(rt);

        pc_test_config(&cfg, 1);
        cfg.mode = PC_MODE_DETERMINISTIC;
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_set_mode(rt, PC_MODE_ELASTIC), -ENOTSUP);
        assert_int_equal(pc_runtime_mode(rt), PC_MODE_DETERMINISTIC);
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_switch_under_skew),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
