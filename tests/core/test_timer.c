/* SPDX-License-Identifier: MIT */
/*
 * Timers: order, never early, periodic, cancel, a million pending, firing
 * on a busy worker, and dropping at stop. No assertion depends on how long
 * anything takes: only on order and on "not before the deadline".
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"

struct rec {
        struct pc_timer t;
        uint64_t deadline; /* absolute, recorded at start */
        uint64_t started;  /* start order */
        uint64_t fired_at;
        int fires;
};

struct order_state {
        struct pc_runtime *rt;
        struct rec *recs;
        unsigned n, fired;
        uint64_t *fire_order;
        _Atomic unsigned early;
};

static struct order_state S;

static void order_cb(struct pc_timer *t, void *arg)
{
        struct rec *r = arg;
        uint64_t now = pc_now_ns();

        (void)t;
        if (now < r->deadline)
                atomic_fetch_add(&S.early, 1);
        r->fired_at = now;
        r->fires++;
        S.fire_order[S.fired++] = (uint64_t)(r - S.recs);
        if (S.fired == S.n)
                pc_runtime_stop(S.rt);
}

static void order_main(void *arg)
{
        uint64_t x = 12345;

        (void)arg;
        for (unsigned i = 0; i < S.n; i++) {
                struct rec *r = &S.recs[i];
                /* Delays 0..20 ms, with many exact repeats to exercise ties. */
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t delay = (x >> 33) % 64 * 312500;
                pc_timer_init(&r->t, order_cb, r);
                r->started = i;
                if (pc_timer_start(&r->t, delay, 0) != 0)
                        atomic_fetch_add(&S.early, 1);
                r->deadline = r->t.deadline_ns;
        }
}

static void test_timers_fire_in_order_not_early(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&S, 0, sizeof(S));
        S.n = (unsigned)pc_test_scaled(20000);
        S.recs = calloc(S.n, sizeof(*S.recs));
        S.fire_order = calloc(S.n, sizeof(*S.fire_order));
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        assert_int_equal(pc_runtime_run(S.rt, order_main, NULL), 0);
        assert_int_equal(S.fired, S.n);
        assert_int_equal(atomic_load(&S.early), 0);
        for (unsigned i = 1; i < S.n; i++) {
                const struct rec *a = &S.recs[S.fire_order[i - 1]];
                const struct rec *b = &S.recs[S.fire_order[i]];
                assert_true(a->deadline <= b->deadline);
                if (a->deadline == b->deadline)
                        assert_true(a->started < b->started);
        }
        for (unsigned i = 0; i < S.n; i++)
                assert_int_equal(S.recs[i].fires, 1);
        pc_runtime_destroy(S.rt);
        free(S.recs);
        free(S.fire_order);
}

/* ---- periodic, cancel, errors ------------------------------------------- */

struct periodic {
        struct pc_runtime *rt;
        struct pc_timer tick, never, guard;
        uint64_t start, period;
        int ticks, never_fired, early;
        int err_cancel_unarmed, err_start_null, err_cancel_other, err_rearm_other;
        int cancel_twice;
        int tick_done, guard_done;
};

static struct periodic P;

static void never_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        P.never_fired++;
}

static void maybe_finish(void)
{
        if (P.tick_done && P.guard_done)
                pc_runtime_stop(P.rt);
}

/* Back on worker 0, after worker 1's checks (the message orders them). */
static void guard_done(void *arg)
{
        (void)arg;
        pc_timer_cancel(&P.guard);
        P.guard_done = 1;
        maybe_finish();
}

static void other_worker_checks(void *arg)
{
        (void)arg;
        /* P.guard is armed on worker 0: worker 1 may not touch it. */
        P.err_cancel_other = pc_timer_cancel(&P.guard);
        P.err_rearm_other = pc_timer_start(&P.guard, 1000, 0);
        pc_spawn_on(0, guard_done, NULL);
}

static void tick_cb(struct pc_timer *t, void *arg)
{
        uint64_t now = pc_now_ns();

        (void)arg;
        P.ticks++;
        if (now < P.start + (uint64_t)P.ticks * P.period)
                P.early++;
        if (P.ticks == 5) {
                if (pc_timer_cancel(t) != 0)
                        P.early++;
                P.cancel_twice = pc_timer_cancel(t);
                P.tick_done = 1;
                maybe_finish();
        }
}

static void periodic_main(void *arg)
{
        (void)arg;
        P.period = 2000000;
        pc_timer_init(&P.tick, tick_cb, NULL);
        pc_timer_init(&P.never, never_cb, NULL);
        pc_timer_init(&P.guard, never_cb, NULL);
        P.err_cancel_unarmed = pc_timer_cancel(&P.never);
        P.err_start_null = pc_timer_start(NULL, 0, 0);
        P.start = pc_now_ns();
        pc_timer_start(&P.tick, P.period, P.period);
        pc_timer_start(&P.never, 1000000, 0);
        pc_timer_cancel(&P.never);
        /* Re-arming reschedules instead of adding a second entry. */
        pc_timer_start(&P.guard, 1000000000ull, 0);
        pc_timer_start(&P.guard, 2000000000ull, 0);
        pc_spawn_on(1, other_worker_checks, NULL);
}

static void test_periodic_cancel_and_errors(void **state)
{
        struct pc_config cfg;
        struct pc_timer t;

        (void)state;
        memset(&P, 0, sizeof(P));
        pc_timer_init(&t, never_cb, NULL);
        assert_int_equal(pc_timer_start(&t, 0, 0), -EPERM);
        assert_int_equal(pc_timer_cancel(&t), -EPERM);
        assert_false(pc_timer_armed(&t));

        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &P.rt), 0);
        assert_int_equal(pc_runtime_run(P.rt, periodic_main, NULL), 0);
        assert_int_equal(P.ticks, 5);
        assert_int_equal(P.early, 0);
        assert_int_equal(P.never_fired, 0);
        assert_int_equal(P.err_cancel_unarmed, -ENOENT);
        assert_int_equal(P.err_start_null, -EINVAL);
        assert_int_equal(P.err_cancel_other, -EXDEV);
        assert_int_equal(P.err_rearm_other, -EXDEV);
        assert_int_equal(P.cancel_twice, -ENOENT);
        pc_runtime_destroy(P.rt);
}

/* ---- a million pending timers ------------------------------------------- */

struct many {
        struct pc_runtime *rt;
        struct pc_timer *timers;
        uint8_t *fired;
        unsigned n, count, cancelled;
        _Atomic unsigned bad;
};

static struct many M;

static void many_cb(struct pc_timer *t, void *arg)
{
        unsigned i = (unsigned)(t - M.timers);

        (void)arg;
        if (M.fired[i]++ != 0 || i % 10 == 0)
                atomic_fetch_add(&M.bad, 1);
        if (++M.count == M.n - M.cancelled)
                pc_runtime_stop(M.rt);
}

static void many_main(void *arg)
{
        (void)arg;
        for (unsigned i = 0; i < M.n; i++) {
                pc_timer_init(&M.timers[i], many_cb, NULL);
                if (pc_timer_start(&M.timers[i], (uint64_t)(i * 7919u % 50) * 1000000u, 0))
                        atomic_fetch_add(&M.bad, 1);
        }
        /* Cancel every tenth, spread all over the heap. */
        for (unsigned i = 0; i < M.n; i += 10) {
                if (pc_timer_cancel(&M.timers[i]))
                        atomic_fetch_add(&M.bad, 1);
                M.cancelled++;
        }
}

static void test_million_pending_timers(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&M, 0, sizeof(M));
        M.n = (unsigned)pc_test_scaled(1000000);
        M.timers = calloc(M.n, sizeof(*M.timers));
        M.fired = calloc(M.n, 1);
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &M.rt), 0);
        assert_int_equal(pc_runtime_run(M.rt, many_main, NULL), 0);
        assert_int_equal(atomic_load(&M.bad), 0);
        assert_int_equal(M.count, M.n - M.cancelled);
        pc_runtime_destroy(M.rt);
        free(M.timers);
        free(M.fired);
}

/* ---- a busy worker still fires its timers ------------------------------- */

struct busy {
        struct pc_runtime *rt;
        struct pc_timer t;
        _Atomic int fired;
        uint64_t spins, limit;
        struct pc_worker_stats st;
};

static struct busy B;

static void busy_timer(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        atomic_store(&B.fired, 1);
}

/* Re-spawns itself, so the worker never runs out of tasks and its loop
 * never reaches the timer step at the end of an iteration on its own. */
static void busy_task(void *arg)
{
        (void)arg;
        if (atomic_load(&B.fired) || ++B.spins == B.limit) {
                pc_runtime_stop(B.rt);
                return;
        }
        pc_spawn(busy_task, NULL);
}

static void busy_main(void *arg)
{
        (void)arg;
        pc_timer_init(&B.t, busy_timer, NULL);
        pc_timer_start(&B.t, 1000000, 0);
        pc_spawn(busy_task, NULL);
}

static void test_busy_worker_fires_timers(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&B, 0, sizeof(B));
        B.limit = 2000000000ull;
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &B.rt), 0);
        assert_int_equal(pc_runtime_run(B.rt, busy_main, NULL), 0);
        assert_int_equal(atomic_load(&B.fired), 1);
        assert_true(B.spins < B.limit);
        pc_runtime_destroy(B.rt);
}

/* ---- stop drops pending timers ------------------------------------------ */

static struct pc_timer drop_t;
static int drop_fired, drop_restart;

static void drop_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        drop_fired++;
}

static void drop_after_stop(void *arg)
{
        (void)arg;
        drop_restart = pc_timer_start(&drop_t, 0, 0);
}

static void drop_main(void *arg)
{
        struct pc_runtime *rt = pc_runtime_current();

        (void)arg;
        pc_timer_init(&drop_t, drop_cb, NULL);
        pc_timer_start(&drop_t, 3600ull * 1000000000ull, 0);
        pc_runtime_stop(rt);
        pc_spawn(drop_after_stop, NULL);
}

static void test_stop_drops_pending_timers(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;

        (void)state;
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_run(rt, drop_main, NULL), 0);
        assert_int_equal(drop_fired, 0);
        assert_int_equal(drop_restart, -ESHUTDOWN);
        assert_false(pc_timer_armed(&drop_t));
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_timers_fire_in_order_not_early),
                cmocka_unit_test(test_periodic_cancel_and_errors),
                cmocka_unit_test(test_million_pending_timers),
                cmocka_unit_test(test_busy_worker_fires_timers),
                cmocka_unit_test(test_stop_drops_pending_timers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
