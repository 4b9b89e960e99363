/* SPDX-License-Identifier: MIT */
/*
 * Tasks: exactly-once execution, placement, FIFO order, intrusive tasks,
 * the injector, and task objects going back to their owner. Worker threads
 * never call cmocka asserts (they longjmp); they count failures, and the
 * test thread asserts after the run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

/* ---- exactly once, from workers and from outside threads ---------------- */

struct once {
        struct pc_runtime *rt;
        uint64_t total;        /* tasks in all */
        uint64_t per_producer; /* worker-spawned tasks per worker */
        uint64_t injected;     /* tasks injected by outside threads */
        unsigned nworkers;
        _Atomic uint64_t *bits;
        _Atomic uint64_t ran;
        _Atomic uint64_t dup;
        _Atomic uint64_t wrong_worker;
        _Atomic uint64_t produced[PC_MAX_WORKERS];
};

static struct once O;

static void mark(uint64_t idx)
{
        uint64_t bit = 1ull << (idx % 64);
        uint64_t old = atomic_fetch_or(&O.bits[idx / 64], bit);

        if (old & bit)
                atomic_fetch_add(&O.dup, 1);
        if (atomic_fetch_add(&O.ran, 1) + 1 == O.total)
                pc_runtime_stop(O.rt);
}

/* arg: index << 8 | target worker (or 0xff for "anywhere"). */
static void once_task(void *arg)
{
        uintptr_t v = (uintptr_t)arg;
        unsigned target = v & 0xff;

        if (target != 0xff && (int)target != pc_worker_id())
                atomic_fetch_add(&O.wrong_worker, 1);
        mark(v >> 8);
}

/* Each worker produces its range in slices, re-spawning itself, so the
 * queues stay bounded while 10M tasks go through. Every third task goes
 * to another worker. */
static void producer(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        uint64_t base = (uint64_t)me * O.per_producer;
        uint64_t done = atomic_load(&O.produced[me]);
        uint64_t end = done + 512;

        (void)arg;
        if (end > O.per_producer)
                end = O.per_producer;
        for (uint64_t i = done; i < end; i++) {
                uint64_t idx = base + i;
                unsigned dst = (i % 3 == 0) ? (unsigned)((me + 1 + i) % O.nworkers) : me;
                int rc = pc_spawn_on(dst, once_task, (void *)(uintptr_t)(idx << 8 | dst));
                if (rc)
                        atomic_fetch_add(&O.dup, 1000000);
        }
        atomic_store(&O.produced[me], end);
        if (end < O.per_producer)
                pc_spawn(producer, NULL);
}

static void start_producers(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < O.nworkers; w++)
                pc_spawn_on(w, producer, NULL);
}

static void *injector_thread(void *arg)
{
        uintptr_t t = (uintptr_t)arg;
        uint64_t per = O.injected / 2;
        uint64_t base = O.nworkers * O.per_producer + t * per;

        for (uint64_t i = 0; i < per; i++) {
                int rc;
                while ((rc = pc_runtime_inject(O.rt, once_task,
                                               (void *)(uintptr_t)((base + i) << 8 | 0xff))) ==
                       -ENOMEM)
                        ;
                if (rc)
                        atomic_fetch_add(&O.dup, 1000000);
        }
        return NULL;
}

static void test_every_task_runs_exactly_once(void **state)
{
        struct pc_config cfg;
        pthread_t th[2];
        uint64_t full = pc_test_scaled(10000000);

        (void)state;
        memset(&O, 0, sizeof(O));
        pc_test_config(&cfg, 4);
        assert_int_equal(pc_runtime_create(&cfg, &O.rt), 0);
        O.nworkers = pc_runtime_workers(O.rt);
        O.injected = (full / 10) & ~1ull;
        O.per_producer = (full - O.injected) / O.nworkers;
        O.total = O.per_producer * O.nworkers + O.injected;
        O.bits = calloc((O.total + 63) / 64, sizeof(*O.bits));
        assert_non_null(O.bits);

        for (uintptr_t i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&th[i], NULL, injector_thread, (void *)i), 0);
        assert_int_equal(pc_runtime_run(O.rt, start_producers, NULL), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);

        assert_int_equal(atomic_load(&O.dup), 0);
        assert_int_equal(atomic_load(&O.wrong_worker), 0);
        assert_int_equal(atomic_load(&O.ran), O.total);
        for (uint64_t i = 0; i < O.total; i++)
                if (!(atomic_load(&O.bits[i / 64]) >> (i % 64) & 1))
                        fail_msg("task %llu never ran", (unsigned long long)i);
        free(O.bits);
        pc_runtime_destroy(O.rt);
}

/* ---- FIFO per worker, across the ring's overflow ------------------------ */

struct fifo {
        uint64_t next[PC_MAX_WORKERS];      /* per worker: next local seq */
        uint64_t next_from[PC_MAX_WORKERS][8]; /* per dst, per src */
        _Atomic uint64_t bad;
        _Atomic uint64_t seen;
        uint64_t n;
        unsigned nworkers;
        struct pc_runtime *rt;
};

static struct fifo F;

static void fifo_local(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        if ((uint64_t)(uintptr_t)arg != F.next[me]++)
                atomic_fetch_add(&F.bad, 1);
        if (atomic_fetch_add(&F.seen, 1) + 1 == F.n * F.nworkers * 2)
                pc_runtime_stop(F.rt);
}

/* arg: seq << 8 | src */
static void fifo_remote(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        uintptr_t v = (uintptr_t)arg;
        unsigned src = v & 0xff;

        if ((v >> 8) != F.next_from[me][src]++)
                atomic_fetch_add(&F.bad, 1);
        if (atomic_fetch_add(&F.seen, 1) + 1 == F.n * F.nworkers * 2)
                pc_runtime_stop(F.rt);
}

/* Queue n tasks at once on this worker (far more than the 16-slot ring),
 * and n to the next worker. */
static void fifo_start(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        unsigned dst = (me + 1) % F.nworkers;

        (void)arg;
        for (uint64_t i = 0; i < F.n; i++) {
                pc_spawn(fifo_local, (void *)(uintptr_t)i);
                pc_spawn_on(dst, fifo_remote, (void *)(uintptr_t)(i << 8 | me));
        }
}

static void fifo_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < F.nworkers; w++)
                pc_spawn_on(w, fifo_start, NULL);
}

static void test_fifo_order_per_worker(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&F, 0, sizeof(F));
        pc_test_config(&cfg, 3);
        cfg.runq_size = 16;
        assert_int_equal(pc_runtime_create(&cfg, &F.rt), 0);
        F.nworkers = pc_runtime_workers(F.rt);
        F.n = pc_test_scaled(20000);
        assert_int_equal(pc_runtime_run(F.rt, fifo_main, NULL), 0);
        assert_int_equal(atomic_load(&F.bad), 0);
        assert_int_equal(atomic_load(&F.seen), F.n * F.nworkers * 2);
        pc_runtime_destroy(F.rt);
}

/* ---- intrusive tasks: caller-owned, reusable from their own body -------- */

struct hop {
        struct pc_task task;
        unsigned hops;
        unsigned limit;
        _Atomic unsigned wrong;
        struct pc_runtime *rt;
};

static void hop_fn(void *arg)
{
        struct hop *h = arg;
        unsigned n = pc_runtime_workers(h->rt);

        if ((unsigned)pc_worker_id() != h->hops % n)
                atomic_fetch_add(&h->wrong, 1);
        if (++h->hops == h->limit) {
                pc_runtime_stop(h->rt);
                return;
        }
        /* Re-spawn the very same object from inside its own function. */
        if (pc_spawn_task_on(h->hops % n, &h->task) != 0)
                atomic_fetch_add(&h->wrong, 1);
}

static void hop_main(void *arg)
{
        struct hop *h = arg;

        pc_task_init(&h->task, hop_fn, h, PC_STICKY);
        pc_spawn_task(&h->task);
}

static void test_intrusive_task_reused(void **state)
{
        struct pc_config cfg;
        struct hop h = {.limit = 10000};

        (void)state;
        pc_test_config(&cfg, 3);
        assert_int_equal(pc_runtime_create(&cfg, &h.rt), 0);
        assert_int_equal(pc_runtime_run(h.rt, hop_main, &h), 0);
        assert_int_equal(h.hops, h.limit);
        assert_int_equal(atomic_load(&h.wrong), 0);
        pc_runtime_destroy(h.rt);
}

/* ---- a task freed on another worker goes back to its owner -------------- */

struct pingpong {
        struct pc_runtime *rt;
        uint64_t rounds, done;
        unsigned chunks_after;
};

static struct pingpong P;

static void pp_back(void *arg);

static void pp_there(void *arg)
{
        (void)arg;
        pc_spawn_on(0, pp_back, NULL);
}

/* Worker 0 keeps 64 tasks in flight to worker 1; worker 1 frees them, so
 * they must come back to worker 0's free list or its slabs would grow. */
static void pp_back(void *arg)
{
        (void)arg;
        if (++P.done >= P.rounds) {
                if (P.done == P.rounds) {
                        P.chunks_after = P.rt->workers[0]->nchunks;
                        pc_runtime_stop(P.rt);
                }
                return;
        }
        pc_spawn_on(1, pp_there, NULL);
}

static void pp_main(void *arg)
{
        (void)arg;
        for (int i = 0; i < 64; i++)
                pc_spawn_on(1, pp_there, NULL);
}

static void test_remote_free_returns_to_owner(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&P, 0, sizeof(P));
        P.rounds = pc_test_scaled(1000000);
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &P.rt), 0);
        assert_int_equal(pc_runtime_run(P.rt, pp_main, NULL), 0);
        assert_true(P.done >= P.rounds);
        /* 64 in flight each way fit in one 512-task chunk per worker, plus
         * the time tasks spend on the remote-free stack. */
        assert_in_range(P.chunks_after, 1, 2);
        pc_runtime_destroy(P.rt);
}

/* ---- errors ------------------------------------------------------------- */

static void noop(void *arg)
{
        (void)arg;
}

struct errs {
        int spawn_null, spawn_on_bad, spawn_task_null;
        int inject_stopping;
        struct pc_runtime *rt;
};

static void errs_main(void *arg)
{
        struct errs *e = arg;

        e->spawn_null = pc_spawn(NULL, NULL);
        e->spawn_on_bad = pc_spawn_on(pc_runtime_workers(e->rt), noop, NULL);
        e->spawn_task_null = pc_spawn_task(NULL);
        pc_runtime_stop(e->rt);
        e->inject_stopping = pc_runtime_inject(e->rt, noop, NULL);
}

static void test_errors(void **state)
{
        struct pc_config cfg;
        struct errs e = {0};
        struct pc_task t;

        (void)state;
        assert_int_equal(pc_spawn(noop, NULL), -EPERM);
        assert_int_equal(pc_spawn_on(0, noop, NULL), -EPERM);
        pc_task_init(&t, noop, NULL, 0);
        assert_int_equal(pc_spawn_task(&t), -EPERM);
        assert_int_equal(pc_worker_id(), -1);
        assert_null(pc_runtime_current());
        assert_int_equal(pc_runtime_run(NULL, noop, NULL), -EINVAL);

        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &e.rt), 0);
        assert_int_equal(pc_runtime_run(e.rt, NULL, NULL), -EINVAL);
        assert_int_equal(pc_runtime_inject(e.rt, NULL, NULL), -EINVAL);
        assert_int_equal(pc_runtime_run(e.rt, errs_main, &e), 0);
        assert_int_equal(e.spawn_null, -EINVAL);
        assert_int_equal(e.spawn_on_bad, -EINVAL);
        assert_int_equal(e.spawn_task_null, -EINVAL);
        assert_int_equal(e.inject_stopping, -ESHUTDOWN);
        pc_runtime_destroy(e.rt);
}

/* ---- deterministic mode: one worker, same random sequence --------------- */

static uint64_t det_draws[4];

static void det_main(void *arg)
{
        (void)arg;
        for (int i = 0; i < 4; i++)
                det_draws[i] = pc_random();
        pc_runtime_stop(pc_runtime_current());
}

static void test_deterministic_mode(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;
        uint64_t first[4];

        (void)state;
        pc_test_config(&cfg, 0);
        cfg.mode = PC_MODE_DETERMINISTIC;
        cfg.seed = 42;
        for (int run = 0; run < 2; run++) {
                assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
                assert_int_equal(pc_runtime_workers(rt), 1);
                assert_int_equal(pc_runtime_run(rt, det_main, NULL), 0);
                pc_runtime_destroy(rt);
                if (run == 0)
                        memcpy(first, det_draws, sizeof(first));
        }
        assert_memory_equal(first, det_draws, sizeof(first));
        assert_true(first[0] != first[1]);
        cfg.seed = 43;
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_run(rt, det_main, NULL), 0);
        pc_runtime_destroy(rt);
        assert_true(memcmp(first, det_draws, sizeof(first)) != 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_fifo_order_per_worker),
                cmocka_unit_test(test_intrusive_task_reused),
                cmocka_unit_test(test_remote_free_returns_to_owner),
                cmocka_unit_test(test_deterministic_mode),
                cmocka_unit_test(test_every_task_runs_exactly_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
