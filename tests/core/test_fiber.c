/* SPDX-License-Identifier: MIT */
/*
 * Fibers: switch and join, what a switch keeps (stack alignment, values in
 * registers), yields among sleeps and joins, a lone yielding fiber leaving
 * the worker's other work its turns, many live fibers on one worker, sleep
 * order, misuse, the stop drain cancelling sleeps, and a stack overflow
 * that must end its (child) process with the message.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

static struct pc_runtime *RT;

static void run_on(unsigned workers, pc_task_fn main_fn, void *arg)
{
        struct pc_config cfg;

        pc_test_config(&cfg, workers);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, main_fn, arg), 0);
        pc_runtime_destroy(RT);
        RT = NULL;
}

/* ---- switch and join --------------------------------------------------------------- */

#define STEPS 1000

struct pingpong {
        char log[2 * STEPS + 1];
        _Atomic unsigned n;
        void *res_a, *res_b;
        int rc_a, rc_b;
        bool done;
};

static struct pingpong P;

static void *stepper(void *arg)
{
        char me = (char)(uintptr_t)arg;

        for (int i = 0; i < STEPS; i++) {
                P.log[atomic_fetch_add(&P.n, 1)] = me;
                pc_fiber_yield();
        }
        return (void *)(uintptr_t)(me == 'a' ? 1000 : 2000);
}

static void *joiner(void *arg)
{
        struct pc_fiber *a, *b;

        (void)arg;
        assert_int_equal(pc_fiber_spawn(stepper, (void *)(uintptr_t)'a', &a), 0);
        assert_int_equal(pc_fiber_spawn(stepper, (void *)(uintptr_t)'b', &b), 0);
        /* Misuse: a fiber cannot join itself; a second joiner is refused
         * while the first waits (checked below from another fiber). */
        assert_int_equal(pc_fiber_join(pc_fiber_self(), NULL), -EINVAL);
        assert_int_equal(pc_fiber_join(NULL, NULL), -EINVAL);
        P.rc_a = pc_fiber_join(a, &P.res_a);
        P.rc_b = pc_fiber_join(b, &P.res_b);
        P.done = true;
        pc_runtime_stop(RT);
        return NULL;
}

static void switch_main(void *arg)
{
        (void)arg;
        /* Off-fiber, from a task: refused. */
        assert_int_equal(pc_fiber_join((struct pc_fiber *)&P, NULL), -EPERM);
        assert_int_equal(pc_fiber_sleep_ns(1), -EPERM);
        assert_null(pc_fiber_self());
        pc_fiber_yield(); /* nothing */
        assert_int_equal(pc_fiber_spawn(NULL, NULL, NULL), -EINVAL);
        assert_int_equal(pc_fiber_spawn(joiner, NULL, NULL), 0);
}

static void test_switch_and_join(void **state)
{
        (void)state;
        memset(&P, 0, sizeof(P));
        run_on(1, switch_main, NULL);
        assert_true(P.done);
        assert_int_equal(P.rc_a, 0);
        assert_int_equal(P.rc_b, 0);
        assert_ptr_equal(P.res_a, (void *)1000);
        assert_ptr_equal(P.res_b, (void *)2000);
        /* Yield queues at the tail: the two alternate, a first. */
        assert_int_equal(atomic_load(&P.n), 2 * STEPS);
        for (int i = 0; i < 2 * STEPS; i++)
                assert_int_equal(P.log[i], i % 2 ? 'b' : 'a');
}

static void test_spawn_off_worker(void **state)
{
        struct pc_fiber *f;

        (void)state;
        assert_int_equal(pc_fiber_spawn(stepper, NULL, &f), -EPERM);
        assert_int_equal(pc_fiber_join((struct pc_fiber *)&P, NULL), -EPERM);
        assert_int_equal(pc_fiber_sleep_ns(1), -EPERM);
}

/* ---- what a switch keeps ------------------------------------------------------------- */

/*
 * A fiber starts with the stack a called function gets (16-byte aligned
 * below the return address), and values it keeps in registers across a
 * switch, as the compiler does with callee-saved ones, come back intact
 * while another fiber ran with values of its own in the same registers.
 */
struct kept {
        bool misaligned;
        uint64_t bad;
        unsigned ended;
};

static struct kept K;

static __attribute__((noinline)) void check_aligned(void)
{
        /* The compiler takes the ABI's alignment as given and does not
         * realign for 16 bytes: this lands off a boundary when the stack
         * it was handed is off. Read back through a volatile, so that the
         * compiler cannot fold the test away on the same assumption. */
        _Alignas(16) char v[16];
        char *volatile p = v;

        if ((uintptr_t)p & 15)
                K.misaligned = true;
}

static __attribute__((noinline)) uint64_t mix(uint64_t a, bool yield)
{
        uint64_t b = a * 3, c = a ^ 0x5555, d = a + 7, e = a * a, g = ~a, h = a >> 3;

        if (yield)
                pc_fiber_yield();
        return a + (b ^ c) + d * e + (g | h) + b * h;
}

static void *keeper(void *arg)
{
        uint64_t seed = (uintptr_t)arg;

        check_aligned();
        for (uint64_t i = 0; i < 100; i++)
                if (mix(seed * 1000 + i, true) != mix(seed * 1000 + i, false))
                        K.bad++;
        check_aligned();
        if (++K.ended == 2)
                pc_runtime_stop(RT);
        return NULL;
}

static void kept_main(void *arg)
{
        (void)arg;
        assert_int_equal(pc_fiber_spawn(keeper, (void *)(uintptr_t)1, NULL), 0);
        assert_int_equal(pc_fiber_spawn(keeper, (void *)(uintptr_t)2, NULL), 0);
}

static void test_switch_keeps_state(void **state)
{
        (void)state;
        memset(&K, 0, sizeof(K));
        run_on(1, kept_main, NULL);
        assert_int_equal(K.ended, 2);
        assert_false(K.misaligned);
        assert_int_equal(K.bad, 0);
}

/* ---- yields among waits -------------------------------------------------------------- */

/*
 * Fibers that yield to each other (straight from fiber to fiber) and in
 * between sleep, and spawn and join a child that yields too: each wait
 * begins on a fiber another one switched to, each wake finds it there, and
 * every fiber ends once with every child's result seen.
 */
#define MIXED_FIBERS 8
#define MIXED_STEPS 90

struct mixed {
        unsigned ended, sleeps_ok, joins_ok;
};

static struct mixed X;

static void *mixed_child(void *arg)
{
        pc_fiber_yield();
        return (void *)((uintptr_t)arg + 1);
}

static void *mixed_fiber(void *arg)
{
        for (uintptr_t i = 0; i < MIXED_STEPS; i++) {
                struct pc_fiber *c;
                void *r = NULL;

                switch (i % 3) {
                case 0:
                        pc_fiber_yield();
                        break;
                case 1:
                        X.sleeps_ok += pc_fiber_sleep_ns(1000) == 0;
                        break;
                default:
                        if (pc_fiber_spawn(mixed_child, (void *)i, &c) == 0 &&
                            pc_fiber_join(c, &r) == 0 && r == (void *)(i + 1))
                                X.joins_ok++;
                        break;
                }
        }
        if (++X.ended == MIXED_FIBERS)
                pc_runtime_stop(RT);
        return arg;
}

static void mixed_main(void *arg)
{
        (void)arg;
        for (uintptr_t i = 0; i < MIXED_FIBERS; i++)
                assert_int_equal(pc_fiber_spawn(mixed_fiber, (void *)i, NULL), 0);
}

static void test_yields_among_waits(void **state)
{
        (void)state;
        memset(&X, 0, sizeof(X));
        run_on(1, mixed_main, NULL);
        assert_int_equal(X.ended, MIXED_FIBERS);
        assert_int_equal(X.sleeps_ok, MIXED_FIBERS * MIXED_STEPS / 3);
        assert_int_equal(X.joins_ok, MIXED_FIBERS * MIXED_STEPS / 3);
}

/* ---- a fiber yielding alone ----------------------------------------------------------- */

/*
 * A fiber that yields with nothing queued runs on in place, yet the worker's
 * other duties keep their turns while it does nothing but yield: its
 * poller, a timer, a task from the injector (one worker, so the injected
 * task can only be taken by the yielding fiber's worker), and a task
 * another worker sent it. Each must show up within a second. The pollers
 * keep their cadence too: once per PC_TASK_BUDGET tasks run, yields
 * counted as tasks (half that, for slack).
 */
struct alone {
        _Atomic unsigned polls, timer, injected, sent;
        unsigned want_injected, want_sent;
        /* what the yielding fiber saw happen while it yielded */
        bool polled, timed, took_injected, got_sent;
        unsigned cadence_polls; /* polls during ALONE_YIELDS more yields */
        struct pc_timer t;
        pthread_t th;
        bool th_started;
};

static struct alone L;

#define ALONE_YIELDS (64 * PC_TASK_BUDGET)

static unsigned alone_poll(void *arg)
{
        (void)arg;
        atomic_fetch_add(&L.polls, 1);
        return 0;
}

static const struct pc_poller_ops alone_ops = {.name = "alone", .poll = alone_poll};

/* A task, the timer's callback: @arg is the flag it raises. */
static void mark(void *arg)
{
        atomic_store((_Atomic unsigned *)arg, 1);
}

static void alone_timer(struct pc_timer *t, void *arg)
{
        (void)t;
        mark(arg);
}

static void alone_send(void *arg)
{
        assert_int_equal(pc_spawn_on(0, mark, arg), 0);
}

static void *alone_injector(void *arg)
{
        assert_int_equal(pc_runtime_inject(RT, mark, arg), 0);
        return NULL;
}

static void *alone_yielder(void *arg)
{
        uint64_t deadline = pc_now_ns() + 1000000000u;
        unsigned polls0 = atomic_load(&L.polls);

        (void)arg;
        do {
                pc_fiber_yield();
                L.polled = atomic_load(&L.polls) > polls0;
                L.timed = atomic_load(&L.timer) != 0;
                L.took_injected = atomic_load(&L.injected) >= L.want_injected;
                L.got_sent = atomic_load(&L.sent) >= L.want_sent;
        } while (!(L.polled && L.timed && L.took_injected && L.got_sent) &&
                 pc_now_ns() < deadline);
        polls0 = atomic_load(&L.polls);
        for (unsigned i = 0; i < ALONE_YIELDS; i++)
                pc_fiber_yield();
        L.cadence_polls = atomic_load(&L.polls) - polls0;
        pc_runtime_stop(RT);
        return NULL;
}

static void alone_main(void *arg)
{
        struct pc_poller *p;

        (void)arg;
        assert_int_equal(pc_poller_register(&alone_ops, NULL, &p), 0);
        pc_timer_init(&L.t, alone_timer, &L.timer);
        assert_int_equal(pc_timer_start(&L.t, 1000000, 0), 0);
        assert_int_equal(pc_fiber_spawn(alone_yielder, NULL, NULL), 0);
        if (L.want_injected)
                L.th_started = pthread_create(&L.th, NULL, alone_injector, &L.injected) == 0;
        if (L.want_sent)
                assert_int_equal(pc_spawn_on(1, alone_send, &L.sent), 0);
}

static void run_alone(unsigned workers)
{
        struct pc_config cfg;

        memset(&L, 0, sizeof(L));
        L.want_injected = workers == 1;
        L.want_sent = workers > 1;
        pc_test_config(&cfg, workers);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, alone_main, NULL), 0);
        /* The injector may still be on its way out of pc_runtime_inject(). */
        if (L.th_started)
                pthread_join(L.th, NULL);
        pc_runtime_destroy(RT);
        RT = NULL;
        assert_true(L.th_started || !L.want_injected);
        assert_true(L.polled);
        assert_true(L.timed);
        assert_true(L.took_injected);
        assert_true(L.got_sent);
        assert_in_range(L.cadence_polls, ALONE_YIELDS / PC_TASK_BUDGET / 2, ALONE_YIELDS);
}

static void test_yield_alone_lets_others_run(void **state)
{
        (void)state;
        run_alone(1);
        run_alone(2);
}

/* ---- many live fibers ---------------------------------------------------------------- */

struct many {
        uint64_t n;
        _Atomic uint64_t started, finished;
        struct pc_fiber **f;
        uint64_t bad;
};

static struct many M;

/* Every fiber is started before any returns: all live at once. */
static void *live(void *arg)
{
        atomic_fetch_add(&M.started, 1);
        while (atomic_load(&M.started) < M.n)
                pc_fiber_yield();
        atomic_fetch_add(&M.finished, 1);
        return arg;
}

static void *many_master(void *arg)
{
        (void)arg;
        for (uint64_t i = 0; i < M.n; i++)
                if (pc_fiber_spawn(live, (void *)(uintptr_t)(i + 1), &M.f[i]) != 0) {
                        M.bad++;
                        M.f[i] = NULL;
                }
        for (uint64_t i = 0; i < M.n; i++) {
                void *r;
                if (M.f[i] && (pc_fiber_join(M.f[i], &r) != 0 || r != (void *)(uintptr_t)(i + 1)))
                        M.bad++;
        }
        pc_runtime_stop(RT);
        return NULL;
}

static void many_main(void *arg)
{
        (void)arg;
        assert_int_equal(pc_fiber_spawn(many_master, NULL, NULL), 0);
}

/* Two mappings a fiber (stack, guard page): raise vm.max_map_count where
 * we may, else fewer fibers (said in the output). */
static uint64_t fit_map_count(uint64_t want)
{
        FILE *fp = fopen("/proc/sys/vm/max_map_count", "r+");
        unsigned long cur = 0;

        if (fp == NULL)
                return want;
        if (fscanf(fp, "%lu", &cur) == 1 && cur < 2 * want + 10000) {
                rewind(fp);
                if (fprintf(fp, "%lu\n", (unsigned long)(2 * want + 10000)) < 0 ||
                    fflush(fp) != 0) {
                        want = (cur - 10000) / 2;
                        printf("vm.max_map_count %lu: %llu fibers\n", cur,
                               (unsigned long long)want);
                }
        }
        fclose(fp);
        return want;
}

static void test_many_live_fibers(void **state)
{
        (void)state;
        memset(&M, 0, sizeof(M));
        M.n = fit_map_count(pc_test_scaled(100000));
#if defined(__SANITIZE_THREAD__)
        /* ThreadSanitizer counts each fiber as a thread, at most 8128
         * live. */
        if (M.n > 4000)
                M.n = 4000;
#endif
        M.f = calloc(M.n, sizeof(*M.f));
        assert_non_null(M.f);
        run_on(1, many_main, NULL);
        assert_int_equal(M.bad, 0);
        assert_int_equal(atomic_load(&M.started), M.n);
        assert_int_equal(atomic_load(&M.finished), M.n);
        free(M.f);
}

/* ---- sleep order ------------------------------------------------------------------------ */

#define SLEEPERS 16

struct sleeps {
        int order[SLEEPERS];
        _Atomic int n;
        int rc[SLEEPERS];
};

static struct sleeps S;

static void *sleeper(void *arg)
{
        int i = (int)(uintptr_t)arg;

        /* Deadlines a millisecond apart, spawned in reverse: they must
         * wake in deadline order however late the worker gets to them. */
        S.rc[i] = pc_fiber_sleep_ns((uint64_t)(i + 1) * 1000000u);
        S.order[atomic_fetch_add(&S.n, 1)] = i;
        if (atomic_load(&S.n) == SLEEPERS)
                pc_runtime_stop(RT);
        return NULL;
}

static void sleep_main(void *arg)
{
        (void)arg;
        for (int i = SLEEPERS - 1; i >= 0; i--)
                assert_int_equal(pc_fiber_spawn(sleeper, (void *)(uintptr_t)i, NULL), 0);
}

static void test_sleep_order(void **state)
{
        (void)state;
        memset(&S, 0, sizeof(S));
        run_on(1, sleep_main, NULL);
        assert_int_equal(atomic_load(&S.n), SLEEPERS);
        for (int i = 0; i < SLEEPERS; i++) {
                assert_int_equal(S.order[i], i);
                assert_int_equal(S.rc[i], 0);
        }
}

/* ---- stopping ------------------------------------------------------------------------------ */

struct stopping {
        _Atomic unsigned asleep, ended, cancelled, shut_first, shut;
        int other_rc; /* a first sleep's result that is neither: reported */
        unsigned n;
};

static struct stopping T;

static void *long_sleeper(void *arg)
{
        (void)arg;
        atomic_fetch_add(&T.asleep, 1);
        if (atomic_load(&T.asleep) == T.n)
                pc_runtime_stop(RT);
        int rc = pc_fiber_sleep_ns(3600ull * 1000000000u);

        switch (rc) {
        case -ECANCELED: /* asleep when the stop came */
                atomic_fetch_add(&T.cancelled, 1);
                break;
        case -ESHUTDOWN: /* the stop came first */
                atomic_fetch_add(&T.shut_first, 1);
                break;
        default:
                T.other_rc = rc ? rc : 1000;
                break;
        }
        /* Stopping: a new sleep is refused at once. */
        if (pc_fiber_sleep_ns(1000000000u) == -ESHUTDOWN)
                atomic_fetch_add(&T.shut, 1);
        atomic_fetch_add(&T.ended, 1);
        return NULL;
}

static void stop_main(void *arg)
{
        (void)arg;
        /* Each worker spawns its share (fibers stay where spawned). */
        for (unsigned i = 0; i < T.n / pc_runtime_workers(RT); i++)
                assert_int_equal(pc_fiber_spawn(long_sleeper, NULL, NULL), 0);
}

static void spread_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < pc_runtime_workers(RT); w++)
                assert_int_equal(pc_spawn_on(w, stop_main, NULL), 0);
}

static void test_stop_cancels_sleeps(void **state)
{
        (void)state;
        memset(&T, 0, sizeof(T));
        T.n = 3 * 64;
        run_on(3, spread_main, NULL);
        /* Every fiber ran to its end in the drain: the hour-long sleeps of
         * those asleep at the stop were cancelled (at least those the
         * stopping fiber's worker ran before it), the rest were refused. */
        assert_int_equal(atomic_load(&T.ended), T.n);
        assert_int_equal(T.other_rc, 0);
        assert_int_equal(atomic_load(&T.cancelled) + atomic_load(&T.shut_first), T.n);
        assert_true(atomic_load(&T.cancelled) > 0);
        assert_int_equal(atomic_load(&T.shut), T.n);
}

/* ---- awaits ------------------------------------------------------------------------------ */

#define AW_WORKERS 3
#define AW_FIBERS 32

struct awaits {
        unsigned rounds;
        bool steps; /* test_await_resumes_in_place: await_step() after each call */
        _Atomic uint64_t matched, bad, fibers_done;
        _Atomic unsigned ticks;
        _Atomic unsigned lane_done;
        unsigned lane_jobs;
};

static struct awaits A;

static void *triple_here(void *arg)
{
        /* The worker it runs on, tagged into the answer. */
        return (void *)(((uintptr_t)arg * 3) << 8 | (uintptr_t)pc_worker_id());
}

static void *step_child(void *arg)
{
        return (void *)((uintptr_t)arg + 7);
}

static void *step_lane(void *arg)
{
        return (void *)((uintptr_t)arg ^ 0x55);
}

static bool await_step(uintptr_t x, unsigned r)
{
        struct pc_fiber *child;
        void *res = NULL;
        unsigned me = pc_worker_id(); /* an elastic fiber may move during a wait */

        switch (r % 5) {
        case 0:
                pc_fiber_yield();
                return true;
        case 1:
                return pc_fiber_spawn(step_child, (void *)x, &child) == 0 &&
                       pc_fiber_join(child, &res) == 0 && res == (void *)(x + 7);
        case 2:
                return pc_fiber_sleep_ns(1000) == 0;
        case 3:
                return pc_blocking_await(step_lane, (void *)x, &res) == 0 &&
                       res == (void *)(x ^ 0x55);
        default:
                return pc_call_await(me, triple_here, (void *)x, &res) == 0 &&
                       (uintptr_t)res == ((x * 3) << 8 | me);
        }
}

static void *caller(void *arg)
{
        uintptr_t id = (uintptr_t)arg;

        for (unsigned r = 0; r < A.rounds; r++) {
                unsigned dst = (unsigned)((id + r) % AW_WORKERS);
                uintptr_t x = id * 100000 + r;
                void *res = NULL;

                if (pc_call_await(dst, triple_here, (void *)x, &res) == 0 &&
                    (uintptr_t)res == ((x * 3) << 8 | dst) && (!A.steps || await_step(x, r)))
                        atomic_fetch_add(&A.matched, 1);
                else
                        atomic_fetch_add(&A.bad, 1);
        }
        if (atomic_fetch_add(&A.fibers_done, 1) + 1 == AW_WORKERS * AW_FIBERS)
                pc_runtime_stop(RT);
        return NULL;
}

static void spawn_callers(void *arg)
{
        (void)arg;
        for (unsigned i = 0; i < AW_FIBERS; i++)
                if (pc_fiber_spawn(caller,
                                   (void *)(uintptr_t)(pc_worker_id() * AW_FIBERS + i), NULL))
                        atomic_fetch_add(&A.bad, 1);
}

static void await_main(void *arg)
{
        (void)arg;
        /* Off-fiber: refused. */
        assert_int_equal(pc_call_await(0, triple_here, NULL, NULL), -EPERM);
        assert_int_equal(pc_blocking_await(triple_here, NULL, NULL), -EPERM);
        for (unsigned w = 0; w < AW_WORKERS; w++)
                assert_int_equal(pc_spawn_on(w, spawn_callers, NULL), 0);
}

/* @mode < 0: the configuration's default. */
static void run_shard_mode(int mode, unsigned workers, unsigned lane, pc_task_fn main_fn)
{
        struct pc_config cfg;
        struct pc_shard_opts so;

        pc_test_config(&cfg, workers);
        if (mode >= 0)
                cfg.mode = (enum pc_mode)mode;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        pc_shard_opts_init(&so);
        so.blocking_threads = lane;
        assert_int_equal(pc_shard_init(RT, &so), 0);
        assert_int_equal(pc_runtime_run(RT, main_fn, NULL), 0);
        pc_runtime_destroy(RT);
        RT = NULL;
}

static void run_shard(unsigned workers, unsigned lane, pc_task_fn main_fn)
{
        run_shard_mode(-1, workers, lane, main_fn);
}

/* Every worker's fibers call every worker, themselves included. */
static void test_call_await_storm(void **state)
{
        (void)state;
        memset(&A, 0, sizeof(A));
        A.rounds = (unsigned)pc_test_scaled(300);
        run_shard(AW_WORKERS, 0, await_main);
        assert_int_equal(atomic_load(&A.bad), 0);
        assert_int_equal(atomic_load(&A.matched), (uint64_t)AW_WORKERS * AW_FIBERS * A.rounds);
}

/* The lane job waits until a fiber of the worker has run meanwhile: so the
 * worker kept running fibers while others waited on the lane. */
static void *lane_job(void *arg)
{
        while (atomic_load(&A.ticks) == 0)
                sched_yield();
        return (void *)((uintptr_t)arg + 1);
}

static void *lane_user(void *arg)
{
        void *res = NULL;

        if (pc_blocking_await(lane_job, arg, &res) == 0 && res == (void *)((uintptr_t)arg + 1))
                atomic_fetch_add(&A.matched, 1);
        else
                atomic_fetch_add(&A.bad, 1);
        if (atomic_fetch_add(&A.lane_done, 1) + 1 == A.lane_jobs)
                pc_runtime_stop(RT);
        return NULL;
}

static void *ticker(void *arg)
{
        (void)arg;
        while (atomic_load(&A.lane_done) < A.lane_jobs) {
                atomic_fetch_add(&A.ticks, 1);
                pc_fiber_yield();
        }
        return NULL;
}

static void lane_main(void *arg)
{
        (void)arg;
        for (unsigned i = 0; i < A.lane_jobs; i++)
                assert_int_equal(pc_fiber_spawn(lane_user, (void *)(uintptr_t)(i * 10), NULL), 0);
        assert_int_equal(pc_fiber_spawn(ticker, NULL, NULL), 0);
}

static void test_blocking_await(void **state)
{
        (void)state;
        memset(&A, 0, sizeof(A));
        A.lane_jobs = 16;
        run_shard(1, 2, lane_main);
        assert_int_equal(atomic_load(&A.bad), 0);
        assert_int_equal(atomic_load(&A.matched), A.lane_jobs);
        assert_true(atomic_load(&A.ticks) > 0);
}

static void *no_lane_user(void *arg)
{
        (void)arg;
        A.bad = (uint64_t)-pc_blocking_await(lane_job, NULL, NULL);
        pc_runtime_stop(RT);
        return NULL;
}

static void no_lane_main(void *arg)
{
        (void)arg;
        assert_int_equal(pc_fiber_spawn(no_lane_user, NULL, NULL), 0);
}

static void test_blocking_await_no_lane(void **state)
{
        (void)state;
        memset(&A, 0, sizeof(A));
        run_shard(1, 0, no_lane_main);
        assert_int_equal(A.bad, ENOTSUP);
}

/*
 * A fiber the reply of its await resumes in place, inside the mailbox's
 * poll (pc__fiber_wake_here()), then at once: yields while other fibers
 * wait in the queue, spawns and joins a fiber, sleeps, awaits the lane,
 * awaits its own worker, and at last ends there. Every answer checked, in
 * thread-per-core mode (sticky: in place) and elastic (queued as before).
 */
static void run_in_place(enum pc_mode mode)
{
        memset(&A, 0, sizeof(A));
        A.rounds = (unsigned)pc_test_scaled(150);
        A.steps = true;
        run_shard_mode(mode, AW_WORKERS, 1, await_main);
        assert_int_equal(atomic_load(&A.bad), 0);
        assert_int_equal(atomic_load(&A.matched), (uint64_t)AW_WORKERS * AW_FIBERS * A.rounds);
}

static void test_await_resumes_in_place(void **state)
{
        (void)state;
        run_in_place(PC_MODE_TPC);
        run_in_place(PC_MODE_ELASTIC);
}

/* ---- elastic migration -------------------------------------------------------------------- */

#define MIG_FIBERS 2000
#define MIG_STEPS 8

struct migration {
        _Atomic uint8_t ran[MIG_FIBERS];
        _Atomic uint64_t moved; /* a suspended fiber resumed on another worker */
        _Atomic uint64_t ended;
        _Atomic uint64_t first_runs; /* fibers past their first run */
        _Atomic unsigned gated;      /* workers 1-3 held in gate() */
        struct pc_task hog;
        bool elastic;
        bool sticky; /* spawned with PC_FIBER_STICKY */
};

static struct migration G;

static void *mover(void *arg)
{
        uintptr_t i = (uintptr_t)arg;
        int last = pc_worker_id();

        atomic_fetch_add(&G.first_runs, 1);
        for (int k = 0; k < MIG_STEPS; k++) {
                pc_fiber_yield();
                if (pc_worker_id() != last)
                        atomic_fetch_add(&G.moved, 1);
                last = pc_worker_id();
        }
        atomic_fetch_add(&G.ran[i], 1);
        if (atomic_fetch_add(&G.ended, 1) + 1 == MIG_FIBERS)
                pc_runtime_stop(RT);
        return NULL;
}

/* Holds worker 0, where every fiber was queued after its first run, until
 * one of them resumed elsewhere: only a steal of a suspended fiber can do
 * that. In thread-per-core mode nothing may move, so it holds nothing. */
static void hog(void *arg)
{
        /* Sticky fibers never move: hold the worker a while for thieves
         * to try (they take nothing), then let it run them. */
        uint64_t spins = G.sticky ? pc_test_scaled(20000000) : UINT64_MAX;

        (void)arg;
        /* Not before every fiber ran once here and is suspended (the loop
         * takes the sticky and the stealable queue in turn). */
        if (atomic_load(&G.first_runs) < MIG_FIBERS) {
                if (pc_spawn_task(&G.hog) != 0)
                        abort();
                return;
        }
        while (G.elastic && atomic_load(&G.moved) == 0 && atomic_load(&G.ended) < MIG_FIBERS &&
               spins--)
                pc__cpu_relax();
}

/* On worker 0 once workers 1-3 are held: every fiber, then the hog,
 * which holds worker 0 only after every fiber's first run there. */
static void mig_spawn(void *arg)
{
        (void)arg;
        for (uintptr_t i = 0; i < MIG_FIBERS; i++)
                assert_int_equal(pc_fiber_spawn_flags(mover, (void *)i,
                                                      G.sticky ? PC_FIBER_STICKY : 0, NULL),
                                 0);
        pc_task_init(&G.hog, hog, NULL, PC_STICKY);
        assert_int_equal(pc_spawn_task(&G.hog), 0);
}

/* Workers 1-3: busy (so no thief) until every fiber has run once on
 * worker 0 and is suspended there. Without the gate, thieves could take
 * fibers before their first run, end them where they started, and leave
 * none suspended on worker 0 to move: an ASan run on a slow machine took
 * all 2000 while worker 0 was spawning them, and the hog waited for a move
 * that could not come. The last worker held sends worker 0 its fibers. */
static void gate(void *arg)
{
        (void)arg;
        if (atomic_fetch_add(&G.gated, 1) + 1 == 3 && pc_spawn_on(0, mig_spawn, NULL) != 0)
                abort();
        while (atomic_load(&G.first_runs) < MIG_FIBERS)
                sched_yield();
}

static void mig_main(void *arg)
{
        (void)arg;
        for (unsigned w = 1; w < 4; w++)
                if (pc_spawn_on(w, gate, NULL) != 0)
                        abort();
}

static void run_migration(enum pc_mode mode, bool sticky)
{
        struct pc_config cfg;

        memset(&G, 0, sizeof(G));
        G.elastic = mode == PC_MODE_ELASTIC;
        G.sticky = sticky;
        pc_test_config(&cfg, 4);
        cfg.mode = mode;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, mig_main, NULL), 0);
        pc_runtime_destroy(RT);
        RT = NULL;
        assert_int_equal(atomic_load(&G.ended), MIG_FIBERS);
        for (int i = 0; i < MIG_FIBERS; i++)
                assert_int_equal(atomic_load(&G.ran[i]), 1); /* each exactly once */
        if (G.elastic && !sticky)
                assert_true(atomic_load(&G.moved) > 0);
        else
                assert_int_equal(atomic_load(&G.moved), 0);
}

static void test_elastic_fibers_migrate(void **state)
{
        (void)state;
        run_migration(PC_MODE_ELASTIC, false);
}

static void test_tpc_fibers_stay(void **state)
{
        (void)state;
        run_migration(PC_MODE_TPC, false);
}

static void test_sticky_fibers_stay(void **state)
{
        (void)state;
        run_migration(PC_MODE_ELASTIC, true);
}

/* ---- node-local stacks ----------------------------------------------------------------------- */

#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1
#endif
#ifndef MPOL_F_ADDR
#define MPOL_F_ADDR (1 << 1)
#endif

static _Atomic long stack_policy = -1;

static void *policy_probe(void *arg)
{
        volatile char here = 0;
        int mode = -1;
        unsigned long mask[16] = {0};

        (void)arg;
        if (syscall(SYS_get_mempolicy, &mode, mask, sizeof(mask) * 8, (void *)&here,
                    MPOL_F_ADDR) == 0)
                atomic_store(&stack_policy, mode);
        pc_runtime_stop(RT);
        return NULL;
}

static void policy_main(void *arg)
{
        (void)arg;
        assert_int_equal(pc_fiber_spawn(policy_probe, NULL, NULL), 0);
}

/* A fiber's stack prefers its worker's node, like the worker's queues. */
static void test_stack_node_local(void **state)
{
        (void)state;
        if (!pc_numa_available())
                skip();
        run_on(1, policy_main, NULL);
        assert_int_equal(atomic_load(&stack_policy), MPOL_PREFERRED);
}

/* ---- overflow ------------------------------------------------------------------------------ */

static void overflow_main(void *arg)
{
        (void)arg;
        pc_fiber_spawn(pc_test_overflow, NULL, NULL);
}

static void test_stack_overflow_message(void **state)
{
        int fds[2], status;
        char buf[4096];
        ssize_t n, got = 0;
        pid_t pid;

        (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        /* The sanitizers keep SIGSEGV for themselves (and report the
         * overflow their own way). */
        skip();
#endif
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct pc_config cfg;
                struct pc_runtime *rt;

                dup2(fds[1], 2);
                close(fds[0]);
                pc_test_config(&cfg, 1);
                if (pc_runtime_create(&cfg, &rt))
                        _exit(3);
                pc_runtime_run(rt, overflow_main, NULL);
                _exit(4); /* must not get here */
        }
        close(fds[1]);
        while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
                got += n;
        buf[got] = '\0';
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSEGV);
        assert_non_null(strstr(buf, "percore: fiber stack overflow on worker 0"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_switch_and_join),
                cmocka_unit_test(test_spawn_off_worker),
                cmocka_unit_test(test_switch_keeps_state),
                cmocka_unit_test(test_yield_alone_lets_others_run),
                cmocka_unit_test(test_yields_among_waits),
                cmocka_unit_test(test_many_live_fibers),
                cmocka_unit_test(test_sleep_order),
                cmocka_unit_test(test_stop_cancels_sleeps),
                cmocka_unit_test(test_call_await_storm),
                cmocka_unit_test(test_blocking_await),
                cmocka_unit_test(test_blocking_await_no_lane),
                cmocka_unit_test(test_await_resumes_in_place),
                cmocka_unit_test(test_elastic_fibers_migrate),
                cmocka_unit_test(test_tpc_fibers_stay),
                cmocka_unit_test(test_sticky_fibers_stay),
                cmocka_unit_test(test_stack_node_local),
                cmocka_unit_test(test_stack_overflow_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
