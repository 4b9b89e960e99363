/* SPDX-License-Identifier: MIT */
/*
 * Elastic mode: the stealable queue on its own (FIFO, steal half, capped,
 * exactly once under concurrent thieves) and in the runtime (idle workers
 * take elastic work, sticky work never moves, tpc mode never steals).
 * Liveness checks block on the event they expect instead of timing it: if
 * stealing broke, the test would hang and meson's timeout would fail it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

static struct pc_stealq *new_q(unsigned cap)
{
        struct pc_stealq *q = aligned_alloc(64, sizeof(*q));

        memset(q, 0, sizeof(*q));
        q->mask = cap - 1;
        q->slots = calloc(cap, sizeof(*q->slots));
        return q;
}

static void free_q(struct pc_stealq *q)
{
        free(q->slots);
        free(q);
}

static void test_queue_fifo_full_and_half(void **state)
{
        enum { N = 100 };
        static struct pc_task t[N];
        struct pc_stealq *q = new_q(8);
        struct pc_task *out[64];
        unsigned next = 0, pushed = 0, got;

        (void)state;
        while (pushed < N && pc__stealq_push(q, &t[pushed]))
                pushed++;
        assert_int_equal(pushed, 8); /* full: the ninth push is refused */
        assert_int_equal(pc__stealq_ring_len(q), 8);
        /* A thief takes the oldest half of the ring, capped. */
        got = pc__stealq_steal(q, out, 3);
        assert_int_equal(got, 3);
        for (unsigned i = 0; i < got; i++)
                assert_ptr_equal(out[i], &t[next++]);
        got = pc__stealq_steal(q, out, 64);
        assert_int_equal(got, 3); /* half of 5, rounded up */
        for (unsigned i = 0; i < got; i++)
                assert_ptr_equal(out[i], &t[next++]);
        /* The owner goes on in order, refilling as room appears. */
        while (next < N) {
                while (pushed < N && pc__stealq_push(q, &t[pushed]))
                        pushed++;
                struct pc_task *x = pc__stealq_pop(q);
                assert_ptr_equal(x, &t[next]);
                next++;
                if (next % 7 == 0) {
                        got = pc__stealq_pop_batch(q, out, 4);
                        for (unsigned i = 0; i < got; i++)
                                assert_ptr_equal(out[i], &t[next++]);
                }
        }
        assert_null(pc__stealq_pop(q));
        assert_int_equal(pc__stealq_steal(q, out, 64), 0);
        free_q(q);
}

/* ---- owner and thieves race; every task is taken exactly once ----------- */

struct race {
        struct pc_stealq *q;
        struct pc_task *tasks;
        uint64_t n;
        _Atomic uint64_t taken;
        _Atomic uint8_t *seen;
        _Atomic uint64_t bad;
        _Atomic int done_pushing;
};

static struct race R;

static void take(struct pc_task *x, uint64_t *last)
{
        uint64_t i = (uint64_t)(x - R.tasks);

        if (atomic_fetch_add(&R.seen[i], 1) != 0)
                atomic_fetch_add(&R.bad, 1);
        /* Each consumer sees the tasks it takes in queue order. */
        if (*last != UINT64_MAX && i <= *last)
                atomic_fetch_add(&R.bad, 1);
        *last = i;
        atomic_fetch_add(&R.taken, 1);
}

static void *thief(void *arg)
{
        struct pc_task *buf[32];
        uint64_t last = UINT64_MAX;

        (void)arg;
        while (atomic_load(&R.taken) < R.n) {
                unsigned got = pc__stealq_steal(R.q, buf, 1 + (unsigned)(last % 32));
                for (unsigned i = 0; i < got; i++)
                        take(buf[i], &last);
        }
        return NULL;
}

static void test_concurrent_thieves_exactly_once(void **state)
{
        pthread_t th[3];
        uint64_t last = UINT64_MAX, pushed = 0;
        struct pc_task *buf[PC_OWNER_BATCH];

        (void)state;
        memset(&R, 0, sizeof(R));
        R.n = pc_test_scaled(2000000);
        R.q = new_q(256);
        R.tasks = calloc(R.n, sizeof(*R.tasks));
        R.seen = calloc(R.n, 1);
        for (int i = 0; i < 3; i++)
                pthread_create(&th[i], NULL, thief, NULL);
        /* The owner pushes in bursts and pops some itself, through the
         * overflow list and back, like a worker does. */
        while (atomic_load(&R.taken) < R.n) {
                for (int k = 0; k < 300 && pushed < R.n; k++) {
                        if (!pc__stealq_push(R.q, &R.tasks[pushed]))
                                break;
                        pushed++;
                }
                if (pushed % 3 == 0) {
                        struct pc_task *x = pc__stealq_pop(R.q);
                        if (x)
                                take(x, &last);
                } else {
                        unsigned got = pc__stealq_pop_batch(R.q, buf, PC_OWNER_BATCH);
                        for (unsigned i = 0; i < got; i++)
                                take(buf[i], &last);
                }
        }
        for (int i = 0; i < 3; i++)
                pthread_join(th[i], NULL);
        assert_int_equal(atomic_load(&R.bad), 0);
        assert_int_equal(atomic_load(&R.taken), R.n);
        for (uint64_t i = 0; i < R.n; i++)
                assert_int_equal(R.seen[i], 1);
        free(R.tasks);
        free((void *)R.seen);
        free_q(R.q);
}

/* ---- runtime: idle workers steal elastic work --------------------------- */

struct imb {
        struct pc_runtime *rt;
        uint64_t n;
        _Atomic uint64_t ran;
        _Atomic uint64_t off_home;   /* elastic tasks that ran away from worker 0 */
        _Atomic uint64_t sticky_away; /* sticky tasks that moved: must stay 0 */
        _Atomic uint8_t *seen;
        _Atomic uint64_t dup;
        struct pc_task *sticky;
        unsigned nsticky;
        bool wait_for_steal;
};

static struct imb I;

static void count_done(void)
{
        if (atomic_fetch_add(&I.ran, 1) + 1 == I.n + I.nsticky)
                pc_runtime_stop(I.rt);
}

/* Work of 1 to 100 units, the spread of request costs that makes per-core
 * placement go wrong. */
static void burn(uint64_t i)
{
        volatile uint64_t x = i;

        for (uint64_t k = 0, units = 1 + (i * 2654435761u) % 100; k < units * 20; k++)
                x = x * 6364136223846793005ull + k;
}

static void elastic_task(void *arg)
{
        uint64_t i = (uint64_t)(uintptr_t)arg;

        burn(i);
        if (atomic_fetch_add(&I.seen[i], 1) != 0)
                atomic_fetch_add(&I.dup, 1);
        if (pc_worker_id() != 0)
                atomic_fetch_add(&I.off_home, 1);
        count_done();
}

static void sticky_task(void *arg)
{
        (void)arg;
        if (pc_worker_id() != 0)
                atomic_fetch_add(&I.sticky_away, 1);
        count_done();
}

/* Occupies worker 0 until some other worker has run one of its tasks:
 * only a steal can make that happen. */
static void hog(void *arg)
{
        (void)arg;
        while (I.wait_for_steal && atomic_load(&I.off_home) == 0)
                pc__cpu_relax();
}

static void imb_main(void *arg)
{
        (void)arg;
        for (uint64_t i = 0; i < I.n; i++)
                pc_spawn(elastic_task, (void *)(uintptr_t)i);
        for (unsigned i = 0; i < I.nsticky; i++) {
                pc_task_init(&I.sticky[i], sticky_task, NULL, PC_STICKY);
                pc_spawn_task(&I.sticky[i]);
        }
        pc_task_init(&I.sticky[I.nsticky], hog, NULL, PC_STICKY);
        pc_spawn_task(&I.sticky[I.nsticky]);
}

static void run_imbalance(enum pc_mode mode, unsigned workers)
{
        struct pc_config cfg;
        struct pc_worker_stats st[PC_MAX_WORKERS];
        uint64_t m[(PC_MAX_WORKERS + 1) * PC_MAX_WORKERS];
        uint64_t stolen = 0, matrix = 0;

        memset(&I, 0, sizeof(I));
        I.n = pc_test_scaled(200000);
        I.nsticky = 1000;
        I.wait_for_steal = mode == PC_MODE_ELASTIC;
        I.seen = calloc(I.n, 1);
        I.sticky = calloc(I.nsticky + 1, sizeof(*I.sticky));
        pc_test_config(&cfg, workers);
        cfg.mode = mode;
        cfg.steal_batch = 16;
        assert_int_equal(pc_runtime_create(&cfg, &I.rt), 0);
        assert_int_equal(pc_runtime_run(I.rt, imb_main, NULL), 0);
        assert_int_equal(atomic_load(&I.dup), 0);
        assert_int_equal(atomic_load(&I.ran), I.n + I.nsticky);
        assert_int_equal(atomic_load(&I.sticky_away), 0);
        for (uint64_t i = 0; i < I.n; i++)
                assert_int_equal(I.seen[i], 1);

        assert_int_equal(pc_stats_snapshot(I.rt, st, PC_MAX_WORKERS), workers);
        assert_int_equal(pc_stats_steals(I.rt, m, sizeof(m) / sizeof(m[0])), 0);
        assert_int_equal(pc_stats_steals(I.rt, m, 1), -ENOSPC);
        for (unsigned w = 0; w < workers; w++) {
                stolen += st[w].stolen;
                for (unsigned src = 0; src < workers; src++)
                        matrix += m[src * workers + w];
                assert_int_equal(m[w * workers + w], 0); /* nobody steals from itself */
        }
        assert_int_equal(stolen, matrix);
        if (mode == PC_MODE_ELASTIC) {
                assert_true(stolen > 0);
                assert_true(atomic_load(&I.off_home) > 0);
                /* All elastic work started on worker 0: every steal chain
                 * starts there, so worker 0 lost tasks to someone. */
                uint64_t from0 = 0;
                for (unsigned w = 1; w < workers; w++)
                        from0 += m[0 * workers + w];
                assert_true(from0 > 0);
        } else {
                assert_int_equal(stolen, 0);
                assert_int_equal(atomic_load(&I.off_home), 0);
                for (unsigned w = 0; w < workers; w++)
                        assert_int_equal(st[w].searches, 0);
        }
        pc_runtime_destroy(I.rt);
        free((void *)I.seen);
        free(I.sticky);
}

static void test_elastic_idle_workers_steal(void **state)
{
        (void)state;
        run_imbalance(PC_MODE_ELASTIC, 4);
}

static void test_tpc_never_steals(void **state)
{
        (void)state;
        run_imbalance(PC_MODE_TPC, 4);
}

static void test_elastic_many_workers(void **state)
{
        (void)state;
        run_imbalance(PC_MODE_ELASTIC, 9);
}

/* ---- steal tiers on a two-socket machine --------------------------------- */

struct tiers {
        struct pc_runtime *rt;
        uint64_t n;
        int wait_node;   /* hog waits until a task ran on this node */
        int wait_worker; /* ... or on this worker, if >= 0 */
        _Atomic uint64_t ran_on_node[2];
        _Atomic uint64_t ran_on_worker[4];
        _Atomic uint64_t ran;
};

static struct tiers T;

static void tier_task(void *arg)
{
        int node = pc_runtime_worker_node(T.rt, (unsigned)pc_worker_id());

        (void)arg;
        /* Waiting for the other socket: a task taken by worker 0's node
         * mate holds it too, so the backlog stays until a worker on the
         * other node steals; without this, a fast node mate could run
         * everything first and the test would depend on timing. */
        if (T.wait_worker < 0 && node != T.wait_node)
                while (atomic_load(&T.ran_on_node[T.wait_node]) == 0)
                        pc__cpu_relax();
        atomic_fetch_add(&T.ran_on_node[node], 1);
        atomic_fetch_add(&T.ran_on_worker[pc_worker_id()], 1);
        if (atomic_fetch_add(&T.ran, 1) + 1 == T.n)
                pc_runtime_stop(T.rt);
}

/* Holds worker 0 until a task it queued ran on the awaited node. */
static void tier_hog(void *arg)
{
        (void)arg;
        if (T.wait_worker >= 0)
                while (atomic_load(&T.ran_on_worker[T.wait_worker]) == 0)
                        pc__cpu_relax();
        else
                while (atomic_load(&T.ran_on_node[T.wait_node]) == 0)
                        pc__cpu_relax();
}

static void tier_main(void *arg)
{
        static struct pc_task hog;

        (void)arg;
        for (uint64_t i = 0; i < T.n; i++)
                pc_spawn(tier_task, NULL);
        pc_task_init(&hog, tier_hog, NULL, PC_STICKY);
        pc_spawn_task(&hog);
}

/* Workers placed spread over the fixture's two sockets: 0 and 2 on node 0,
 * 1 and 3 on node 1. All work starts on worker 0. */
static void run_tiers(unsigned remote_min, int wait_node, int wait_worker, uint64_t *m,
                      unsigned *nw)
{
        struct pc_config cfg;
        char root[512];
        const char *fx = getenv("PC_FIXTURES");

        assert_non_null(fx);
        snprintf(root, sizeof(root), "%s/intel-2s-smt/sys", fx);
        memset(&T, 0, sizeof(T));
        /* Fewer than the stealable ring holds: a full ring spills to the
         * global injector, which any node's workers may take from, and
         * this test is about steals alone. */
        T.n = 3000;
        T.wait_node = wait_node;
        T.wait_worker = wait_worker;
        pc_test_config(&cfg, 4);
        cfg.mode = PC_MODE_ELASTIC;
        cfg.sysfs_root = root;
        cfg.placement = PC_PLACE_SPREAD;
        cfg.remote_steal_min = remote_min;
        /* Polling thieves: which tier they steal from is the question
         * here, not how parked ones are woken (test_park and the imbalance
         * tests above cover that). */
        cfg.idle = PC_IDLE_POLL;
        assert_int_equal(pc_runtime_create(&cfg, &T.rt), 0);
        *nw = pc_runtime_workers(T.rt);
        assert_int_equal(*nw, 4);
        assert_int_equal(pc_runtime_worker_node(T.rt, 0), 0);
        assert_int_equal(pc_runtime_worker_node(T.rt, 1), 1);
        assert_int_equal(pc_runtime_worker_node(T.rt, 2), 0);
        assert_int_equal(pc_runtime_worker_node(T.rt, 3), 1);
        assert_int_equal(pc_runtime_run(T.rt, tier_main, NULL), 0);
        assert_int_equal(atomic_load(&T.ran), T.n);
        assert_int_equal(pc_stats_steals(T.rt, m, (PC_MAX_WORKERS + 1) * PC_MAX_WORKERS), 0);
        pc_runtime_destroy(T.rt);
}

static bool same_node(unsigned a, unsigned b)
{
        return a % 2 == b % 2;
}

static void test_tiers_keep_steals_on_node(void **state)
{
        static uint64_t m[(PC_MAX_WORKERS + 1) * PC_MAX_WORKERS];
        uint64_t local = 0;
        unsigned n;

        (void)state;
        /* A backlog can never reach the remote threshold: only worker 2,
         * worker 0's node mate, may take its work. */
        run_tiers(1000000, 0, 2, m, &n);
        for (unsigned src = 0; src < n; src++)
                for (unsigned dst = 0; dst < n; dst++) {
                        if (same_node(src, dst))
                                local += m[src * n + dst];
                        else
                                assert_int_equal(m[src * n + dst], 0);
                }
        assert_true(m[0 * n + 2] > 0);
        assert_true(local > 0);
        assert_int_equal(atomic_load(&T.ran_on_node[1]), 0);
}

static void test_tiers_go_remote_when_it_pays(void **state)
{
        static uint64_t m[(PC_MAX_WORKERS + 1) * PC_MAX_WORKERS];
        uint64_t remote = 0;
        unsigned n;

        (void)state;
        /* The hog waits for a task to run on the other socket: only a
         * cross-node steal can get it there. */
        run_tiers(1, 1, -1, m, &n);
        for (unsigned src = 0; src < n; src++)
                for (unsigned dst = 0; dst < n; dst++)
                        if (!same_node(src, dst))
                                remote += m[src * n + dst];
        assert_true(remote > 0);
        assert_true(atomic_load(&T.ran_on_node[1]) > 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_queue_fifo_full_and_half),
                cmocka_unit_test(test_concurrent_thieves_exactly_once),
                cmocka_unit_test(test_elastic_idle_workers_steal),
                cmocka_unit_test(test_tpc_never_steals),
                cmocka_unit_test(test_elastic_many_workers),
                cmocka_unit_test(test_tiers_keep_steals_on_node),
                cmocka_unit_test(test_tiers_go_remote_when_it_pays),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
