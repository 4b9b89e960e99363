/* SPDX-License-Identifier: MIT */
/*
 * Pollers: called every iteration on their worker, removable from inside
 * their own poll, able to veto sleep, woken by events from outside
 * threads without a lost wake-up, and asking their worker's idle passes
 * for what they wait on (hints).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

/* ---- basic: counted polls, self-unregister ------------------------------ */

struct counter {
        struct pc_poller *self;
        unsigned polls, limit;
        int worker, wrong_worker;
        int unreg_rc, unreg_again_rc;
};

static struct pc_runtime *RT;

static unsigned count_poll(void *arg)
{
        struct counter *c = arg;

        if (pc_worker_id() != c->worker)
                c->wrong_worker++;
        if (++c->polls == c->limit) {
                c->unreg_rc = pc_poller_unregister(c->self);
                c->unreg_again_rc = pc_poller_unregister(c->self);
                pc_runtime_stop(RT);
        }
        return c->polls < c->limit;
}

static const struct pc_poller_ops count_ops = {.name = "count", .poll = count_poll};

static struct counter C;
static int reg_null_rc, reg_ops_rc;

static void count_main(void *arg)
{
        static const struct pc_poller_ops no_poll = {.name = "bad"};

        (void)arg;
        C.worker = pc_worker_id();
        reg_null_rc = pc_poller_register(NULL, NULL, NULL);
        reg_ops_rc = pc_poller_register(&no_poll, NULL, NULL);
        pc_poller_register(&count_ops, &C, &C.self);
}

static void test_poller_runs_and_unregisters(void **state)
{
        struct pc_config cfg;
        struct pc_poller *p;

        (void)state;
        assert_int_equal(pc_poller_register(&count_ops, &C, &p), -EPERM);
        memset(&C, 0, sizeof(C));
        C.limit = 1000;
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, count_main, NULL), 0);
        assert_int_equal(C.polls, C.limit);
        assert_int_equal(C.wrong_worker, 0);
        assert_int_equal(C.unreg_rc, 0);
        assert_int_equal(C.unreg_again_rc, -EINVAL);
        assert_int_equal(reg_null_rc, -EINVAL);
        assert_int_equal(reg_ops_rc, -EINVAL);
        pc_runtime_destroy(RT);
}

/* ---- external events: wake the worker, lose nothing --------------------- */

struct ext {
        _Atomic uint64_t posted;  /* events an outside thread produced */
        uint64_t consumed;        /* worker-side count */
        uint64_t total;
        unsigned sleeps_allowed, after_sleeps;
        struct pc_poller *p;
};

static struct ext E;

static unsigned ext_poll(void *arg)
{
        uint64_t avail = atomic_load(&E.posted);
        unsigned n = (unsigned)(avail - E.consumed);

        (void)arg;
        E.consumed = avail;
        if (E.consumed == E.total && n) {
                pc_poller_unregister(E.p);
                pc_runtime_stop(RT);
        }
        return n;
}

/* The worker's sleeping flag is already published: any event posted after
 * this load is followed by pc_worker_wake(), which will see the flag. */
static bool ext_prepare(void *arg)
{
        (void)arg;
        if (atomic_load(&E.posted) != E.consumed)
                return false;
        E.sleeps_allowed++;
        return true;
}

static void ext_after(void *arg)
{
        (void)arg;
        E.after_sleeps++;
}

static const struct pc_poller_ops ext_ops = {
        .name = "ext", .poll = ext_poll, .prepare_sleep = ext_prepare, .after_sleep = ext_after};

static _Atomic int ext_ready;

static void ext_main(void *arg)
{
        (void)arg;
        pc_poller_register(&ext_ops, NULL, &E.p);
        atomic_store(&ext_ready, 1);
}

static void *ext_producer(void *arg)
{
        (void)arg;
        while (!atomic_load(&ext_ready))
                ;
        for (uint64_t i = 0; i < E.total; i++) {
                atomic_fetch_add(&E.posted, 1);
                pc_worker_wake(RT, 0);
                /* Every so often let the worker fall asleep again. */
                if (i % 64 == 0)
                        sched_yield();
        }
        return NULL;
}

static void test_external_events_never_lose_a_wakeup(void **state)
{
        struct pc_config cfg;
        pthread_t th;
        struct pc_worker_stats st;

        (void)state;
        memset(&E, 0, sizeof(E));
        atomic_store(&ext_ready, 0);
        E.total = pc_test_scaled(200000);
        pc_test_config(&cfg, 1);
        cfg.idle = PC_IDLE_PARK;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        pthread_create(&th, NULL, ext_producer, NULL);
        /* If a wake-up were lost, the worker would sleep forever with
         * events pending and the test would time out. */
        assert_int_equal(pc_runtime_run(RT, ext_main, NULL), 0);
        pthread_join(th, NULL);
        assert_int_equal(E.consumed, E.total);
        assert_int_equal(E.sleeps_allowed, E.after_sleeps);
        assert_int_equal(pc_stats_snapshot(RT, &st, 1), 1);
        assert_true(st.polls >= E.total);
        pc_runtime_destroy(RT);
}

/* ---- a poller that vetoes sleep keeps the worker awake ------------------ */

static unsigned veto_calls;
static unsigned veto_prepare_calls;

static unsigned veto_poll(void *arg)
{
        (void)arg;
        if (++veto_calls == 100000)
                pc_runtime_stop(RT);
        return 0;
}

static bool veto_prepare(void *arg)
{
        (void)arg;
        veto_prepare_calls++;
        return false;
}

static const struct pc_poller_ops veto_ops = {
        .name = "veto", .poll = veto_poll, .prepare_sleep = veto_prepare};

static void veto_main(void *arg)
{
        (void)arg;
        pc_poller_register(&veto_ops, NULL, NULL);
}

static void test_poller_vetoes_sleep(void **state)
{
        struct pc_config cfg;
        struct pc_worker_stats st;

        (void)state;
        pc_test_config(&cfg, 1);
        cfg.idle = PC_IDLE_PARK;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, veto_main, NULL), 0);
        assert_int_equal(pc_stats_snapshot(RT, &st, 1), 1);
        /* It tried to park on every idle iteration and never slept until
         * the drain at stop. */
        assert_true(veto_prepare_calls > 0);
        assert_true(st.parks <= 1);
        pc_runtime_destroy(RT);
}

/* ---- hints: the worker follows the union of its live pollers' ----------- */

static unsigned idle_poll(void *arg)
{
        (void)arg;
        return 0;
}

static const struct pc_poller_ops idle_ops = {.name = "idle", .poll = idle_poll};
static struct pc_poller *hint_a, *hint_b;
static _Atomic unsigned hint_bad;

static void hint_check(bool ok)
{
        if (!ok)
                atomic_fetch_add(&hint_bad, 1);
}

static void hint_finish(void *arg)
{
        (void)arg;
        hint_check(pc_poller_unregister(hint_a) == 0 && pc__self->poll_hints == 0);
        pc_runtime_stop(RT);
}

static void hint_elsewhere(void *arg)
{
        (void)arg;
        hint_check(pc__poller_hint(hint_a, PC__POLL_PACE) == -EXDEV);
        hint_check(pc__self->poll_hints == 0);
        hint_check(pc_spawn_on(0, hint_finish, NULL) == 0);
}

static void hint_main(void *arg)
{
        struct pc_worker *w = pc__self;

        (void)arg;
        if (pc_poller_register(&idle_ops, NULL, &hint_a) ||
            pc_poller_register(&idle_ops, NULL, &hint_b)) {
                hint_check(false);
                pc_runtime_stop(RT);
                return;
        }
        hint_check(w->poll_hints == 0);
        hint_check(pc__poller_hint(hint_a, PC__POLL_EAGER) == 0);
        hint_check(w->poll_hints == PC__POLL_EAGER);
        hint_check(pc__poller_hint(hint_b, PC__POLL_PACE) == 0);
        hint_check(w->poll_hints == (PC__POLL_EAGER | PC__POLL_PACE));
        hint_check(pc__poller_hint(hint_a, 0) == 0);
        hint_check(w->poll_hints == PC__POLL_PACE);
        hint_check(pc__poller_hint(hint_a, PC__POLL_EAGER) == 0);
        /* An unregistered poller's hint leaves at once, not at the end of
         * the poll pass that frees it. */
        hint_check(pc_poller_unregister(hint_b) == 0);
        hint_check(w->poll_hints == PC__POLL_EAGER);
        hint_check(pc_spawn_on(1, hint_elsewhere, NULL) == 0);
}

static void test_poller_hints(void **state)
{
        struct pc_config cfg;

        (void)state;
        assert_int_equal(pc__poller_hint(NULL, PC__POLL_EAGER), -EPERM);
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, hint_main, NULL), 0);
        assert_int_equal(atomic_load(&hint_bad), 0);
        pc_runtime_destroy(RT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_poller_runs_and_unregisters),
                cmocka_unit_test(test_external_events_never_lose_a_wakeup),
                cmocka_unit_test(test_poller_vetoes_sleep),
                cmocka_unit_test(test_poller_hints),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
