/* SPDX-License-Identifier: MIT */
/*
 * Placement: spawn options, agents, the load monitor, a plugged-in policy,
 * and deterministic mode's reproducible order. Liveness checks wait for
 * the event they expect; nothing here measures time.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

static struct pc_runtime *RT;

/* ---- spawn options ------------------------------------------------------ */

struct where {
        _Atomic int ran_on[PC_MAX_WORKERS];
        _Atomic unsigned wrong;
        _Atomic unsigned left;
        int errs[8];
};

static struct where W;

static void record(void *arg)
{
        int expect = (int)(intptr_t)arg;

        atomic_fetch_add(&W.ran_on[pc_worker_id()], 1);
        if (expect >= 0 && expect != pc_worker_id())
                atomic_fetch_add(&W.wrong, 1);
        if (atomic_fetch_sub(&W.left, 1) == 1)
                pc_runtime_stop(RT);
}

static void opts_main(void *arg)
{
        unsigned n = pc_runtime_workers(RT);
        struct pc_spawn_opts o;

        (void)arg;
        memset(&o, 0, sizeof(o));
        /* 1 local + n on each worker + n round-robin + n least-loaded. */
        atomic_store(&W.left, 1 + 3 * n);
        o.place = PC_SPAWN_LOCAL;
        if (pc_spawn_ex(record, (void *)(intptr_t)0, &o) != 0)
                atomic_fetch_add(&W.wrong, 1);
        for (unsigned w = 0; w < n; w++) {
                o.place = PC_SPAWN_WORKER;
                o.worker = w;
                if (pc_spawn_ex(record, (void *)(intptr_t)w, &o) != (int)w)
                        atomic_fetch_add(&W.wrong, 1);
        }
        o.place = PC_SPAWN_ROUND_ROBIN;
        for (unsigned w = 0; w < n; w++)
                pc_spawn_ex(record, (void *)(intptr_t)-1, &o);
        /* Nothing is queued anywhere yet and there are no agents: equal
         * loads, so least-loaded goes round-robin too. */
        o.place = PC_SPAWN_LEAST_LOADED;
        for (unsigned w = 0; w < n; w++)
                pc_spawn_ex(record, (void *)(intptr_t)-1, &o);

        o.place = PC_SPAWN_WORKER;
        o.worker = n;
        W.errs[0] = pc_spawn_ex(record, NULL, &o);
        o.place = PC_SPAWN_LOCAL;
        o.affinity = PC_STICKY | PC_ELASTIC;
        W.errs[1] = pc_spawn_ex(record, NULL, &o);
        o.affinity = 0;
        o.agent = 77;
        W.errs[2] = pc_spawn_ex(record, NULL, &o);
        o.agent = 0;
        W.errs[3] = pc_spawn_ex(NULL, NULL, &o);
        o.place = (enum pc_spawn_place)99;
        W.errs[4] = pc_spawn_ex(record, NULL, &o);
}

static void test_spawn_options(void **state)
{
        struct pc_config cfg;
        struct pc_spawn_opts o = {0};

        (void)state;
        memset(&W, 0, sizeof(W));
        assert_int_equal(pc_spawn_ex(record, NULL, &o), -EPERM);
        pc_test_config(&cfg, 4);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, opts_main, NULL), 0);
        assert_int_equal(atomic_load(&W.wrong), 0);
        /* Each worker: its own PC_SPAWN_WORKER task, one round-robin, one
         * least-loaded; worker 0 also the local one. */
        assert_int_equal(atomic_load(&W.ran_on[0]), 4);
        for (unsigned w = 1; w < 4; w++)
                assert_int_equal(atomic_load(&W.ran_on[w]), 3);
        for (int i = 0; i < 5; i++)
                assert_int_equal(W.errs[i], -EINVAL);
        pc_runtime_destroy(RT);
}

/* ---- agents ------------------------------------------------------------- */

/*
 * A task handle: the spawner stores where pc_spawn_ex() queued the task,
 * and the task (which may already be running elsewhere) waits for that
 * before checking it runs there.
 */
struct slot {
        _Atomic int sent_to; /* -1 until the spawner knows */
        int kind;
};

static int wait_sent_to(struct slot *sl)
{
        int w;

        while ((w = atomic_load(&sl->sent_to)) < 0)
                pc__cpu_relax();
        return w;
}

struct agents {
        int a, b;
        struct slot slots[200];
        _Atomic unsigned ran_on[2][PC_MAX_WORKERS];
        _Atomic unsigned wrong;
        _Atomic unsigned left;
};

static struct agents A;

static void agent_task(void *arg)
{
        struct slot *sl = arg;

        if (wait_sent_to(sl) != pc_worker_id())
                atomic_fetch_add(&A.wrong, 1);
        atomic_fetch_add(&A.ran_on[sl->kind][pc_worker_id()], 1);
        if (atomic_fetch_sub(&A.left, 1) == 1)
                pc_runtime_stop(RT);
}

static void agents_main(void *arg)
{
        (void)arg;
        atomic_store(&A.left, 200);
        for (int i = 0; i < 200; i++) {
                struct slot *sl = &A.slots[i];
                struct pc_spawn_opts o = {.agent = i % 2 ? A.b : A.a};
                sl->kind = i % 2;
                atomic_store(&sl->sent_to, -1);
                atomic_store(&sl->sent_to, pc_spawn_ex(agent_task, sl, &o));
        }
}

static void test_agents_share_placement(void **state)
{
        struct pc_config cfg;
        struct pc_runtime_stats rs;
        int ids[PC_MAX_AGENTS], id, n = 0, wa, wb;

        (void)state;
        memset(&A, 0, sizeof(A));
        pc_test_config(&cfg, 3);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_ROUND_ROBIN, 0, &A.a), 0);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_ROUND_ROBIN, PC_STICKY, &A.b), 0);
        assert_true(A.a > 0 && A.b > 0 && A.a != A.b);
        assert_int_equal(pc_agent_worker(RT, A.a), -ENOENT);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_WORKER, 0, &id), -EINVAL);
        assert_int_equal(pc_agent_create(NULL, PC_SPAWN_LOCAL, 0, &id), -EINVAL);
        assert_int_equal(pc_runtime_run(RT, agents_main, NULL), 0);
        assert_int_equal(atomic_load(&A.wrong), 0);
        /* Every task of an agent went to the agent's one worker; the two
         * were placed round-robin, one after the other. */
        wa = pc_agent_worker(RT, A.a);
        wb = pc_agent_worker(RT, A.b);
        assert_true(wa >= 0 && wb >= 0);
        assert_int_equal(atomic_load(&A.ran_on[0][wa]), 100);
        assert_int_equal(atomic_load(&A.ran_on[1][wb]), 100);
        assert_int_equal((wa + 1) % 3, wb);
        assert_int_equal(pc_stats_runtime(RT, &rs), 0);
        assert_int_equal(rs.agents, 2);
        assert_int_equal(atomic_load(&RT->agents_on[wa]) + atomic_load(&RT->agents_on[wb]), 2);

        assert_int_equal(pc_agent_destroy(RT, A.a), 0);
        assert_int_equal(pc_agent_destroy(RT, A.a), -EINVAL);
        assert_int_equal(pc_agent_worker(RT, A.a), -EINVAL);
        assert_int_equal(pc_agent_destroy(RT, A.b), 0);
        /* The table is bounded and says so. */
        while (pc_agent_create(RT, PC_SPAWN_LOCAL, 0, &id) == 0)
                ids[n++] = id;
        assert_int_equal(n, PC_MAX_AGENTS);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_LOCAL, 0, &id), -ENOSPC);
        for (int i = 0; i < n; i++)
                assert_int_equal(pc_agent_destroy(RT, ids[i]), 0);
        pc_runtime_destroy(RT);
}

/* ---- the load monitor --------------------------------------------------- */

/* A policy that places every PC_SPAWN_POLICY agent on worker 1. */
static int on_one(void *ctx, const struct pc_runtime *rt, unsigned from)
{
        (void)ctx;
        (void)rt;
        (void)from;
        return 1;
}

static const struct pc_policy to_one = {.name = "to-one", .place = on_one};

#define MON_CHAINS 1000

struct mon {
        int hot, pinned;            /* elastic agent; sticky agent */
        struct slot slots[MON_CHAINS];
        _Atomic int moved;          /* a hot task ran away from worker 1 */
        _Atomic unsigned misplaced; /* a task ran where it was not queued */
        _Atomic unsigned live;
};

static struct mon M;

/* Each chain re-spawns itself through its agent, so worker 1 keeps a deep
 * queue until the monitor points the hot agent's future spawns elsewhere;
 * then the chains end. */
static void mon_task(void *arg)
{
        struct slot *sl = arg;
        int agent = sl->kind ? M.hot : M.pinned;
        struct pc_spawn_opts o = {.agent = agent};

        if (wait_sent_to(sl) != pc_worker_id())
                atomic_fetch_add(&M.misplaced, 1);
        if (sl->kind && pc_worker_id() != 1)
                atomic_store(&M.moved, 1);
        if (atomic_load(&M.moved)) {
                if (atomic_fetch_sub(&M.live, 1) == 1)
                        pc_runtime_stop(RT);
                return;
        }
        atomic_store(&sl->sent_to, -1);
        atomic_store(&sl->sent_to, pc_spawn_ex(mon_task, sl, &o));
}

static void mon_main(void *arg)
{
        (void)arg;
        atomic_store(&M.live, MON_CHAINS);
        for (int i = 0; i < MON_CHAINS; i++) {
                struct slot *sl = &M.slots[i];
                struct pc_spawn_opts o = {.agent = i % 2 ? M.hot : M.pinned};
                sl->kind = i % 2;
                atomic_store(&sl->sent_to, -1);
                atomic_store(&sl->sent_to, pc_spawn_ex(mon_task, sl, &o));
        }
}

static void test_monitor_retargets_future_spawns(void **state)
{
        struct pc_config cfg;
        struct pc_runtime_stats rs;

        (void)state;
        memset(&M, 0, sizeof(M));
        pc_test_config(&cfg, 3);
        cfg.monitor_ms = 1;
        cfg.policy = &to_one;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_POLICY, PC_ELASTIC, &M.hot), 0);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_POLICY, PC_STICKY, &M.pinned), 0);
        /* Ends only once the monitor moved the hot agent: if it never did,
         * the run would go on until meson's timeout. */
        assert_int_equal(pc_runtime_run(RT, mon_main, NULL), 0);
        assert_int_equal(pc_stats_runtime(RT, &rs), 0);
        assert_true(rs.monitor_retargets >= 1);
        assert_true(rs.monitor_samples >= 1);
        /* Queued work never moved: every task ran where it was queued. */
        assert_int_equal(atomic_load(&M.misplaced), 0);
        /* The sticky agent stayed. */
        assert_int_equal(pc_agent_worker(RT, M.pinned), 1);
        /* A hot task ran off worker 1. Where the hot agent points now is
         * not asserted: once the chains end, its new worker holds the deep
         * queue and a later sample may rightly move it again, back to 1. */
        assert_int_equal(atomic_load(&M.moved), 1);
        pc_runtime_destroy(RT);
}

/* The decision itself, on published queue depths the test writes. */
static void test_monitor_rule(void **state)
{
        struct pc_config cfg;
        struct pc_runtime_stats rs;
        int a;

        (void)state;
        pc_test_config(&cfg, 3);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_agent_create(RT, PC_SPAWN_LOCAL, 0, &a), 0);
        atomic_store(&RT->agents[a].target, 2);
        atomic_store(&RT->agents_on[2], 1);
        /* 3 deep: under the threshold of 4, nothing happens. */
        atomic_store(&RT->workers[2]->stats.queue_depth, 3);
        pc__monitor_sample(RT);
        assert_int_equal(pc_agent_worker(RT, a), 2);
        /* 8 vs a lightest of 2: not past 4 x 2. */
        atomic_store(&RT->workers[2]->stats.queue_depth, 8);
        atomic_store(&RT->workers[0]->stats.queue_depth, 2);
        atomic_store(&RT->workers[1]->stats.queue_depth, 5);
        pc__monitor_sample(RT);
        assert_int_equal(pc_agent_worker(RT, a), 2);
        /* 9 vs 2: moved to the lightest, worker 0. */
        atomic_store(&RT->workers[2]->stats.queue_depth, 9);
        pc__monitor_sample(RT);
        assert_int_equal(pc_agent_worker(RT, a), 0);
        assert_int_equal(atomic_load(&RT->agents_on[0]), 1);
        assert_int_equal(atomic_load(&RT->agents_on[2]), 0);
        assert_int_equal(pc_stats_runtime(RT, &rs), 0);
        assert_int_equal(rs.monitor_samples, 3);
        assert_int_equal(rs.monitor_retargets, 1);
        pc_runtime_destroy(RT);
}

/* ---- a plugged-in policy ------------------------------------------------ */

struct custom {
        _Atomic unsigned idle_calls;
        _Atomic unsigned on_last;
        _Atomic unsigned left;
};

static struct custom CU;

static int last_worker(void *ctx, const struct pc_runtime *rt, unsigned from)
{
        (void)ctx;
        (void)from;
        return (int)pc_runtime_workers(rt) - 1;
}

/* Victims in descending id, one tier. */
static int reversed(void *ctx, const struct pc_runtime *rt, unsigned w,
                    struct pc_steal_order *o)
{
        unsigned n = pc_runtime_workers(rt), k = 0;

        (void)ctx;
        memset(o, 0, sizeof(*o));
        for (unsigned v = n; v-- > 0;)
                if (v != w)
                        o->victims[k++] = (uint16_t)v;
        o->ntiers = 1;
        o->nvictims = k;
        o->tier_start[1] = k;
        o->tier_kind[0] = PC_TIER_CACHE;
        return 0;
}

static bool count_idle(void *ctx, unsigned w)
{
        (void)ctx;
        (void)w;
        atomic_fetch_add(&CU.idle_calls, 1);
        return true;
}

static const struct pc_policy custom = {
        .name = "custom", .stealing = true, .place = last_worker,
        .steal_order = reversed, .on_idle = count_idle};

static void custom_task(void *arg)
{
        (void)arg;
        if ((unsigned)pc_worker_id() == pc_runtime_workers(RT) - 1)
                atomic_fetch_add(&CU.on_last, 1);
        if (atomic_fetch_sub(&CU.left, 1) == 1)
                pc_runtime_stop(RT);
}

static void custom_main(void *arg)
{
        struct pc_spawn_opts o = {.place = PC_SPAWN_POLICY, .affinity = PC_STICKY};

        (void)arg;
        atomic_store(&CU.left, 100);
        for (int i = 0; i < 100; i++)
                pc_spawn_ex(custom_task, NULL, &o);
}

static void test_custom_policy(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&CU, 0, sizeof(CU));
        pc_test_config(&cfg, 4);
        cfg.policy = &custom;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        /* Its steal order replaced the numa tiers. */
        assert_int_equal(RT->workers[0]->order.victims[0], 3);
        assert_int_equal(RT->workers[0]->order.victims[2], 1);
        assert_int_equal(RT->workers[2]->order.victims[0], 3);
        assert_int_equal(RT->workers[2]->order.victims[1], 1);
        assert_true(RT->workers[0]->elastic);
        assert_int_equal(pc_runtime_run(RT, custom_main, NULL), 0);
        /* Its placement put every sticky task on the last worker, and its
         * idle hook was asked. */
        assert_int_equal(atomic_load(&CU.on_last), 100);
        assert_true(atomic_load(&CU.idle_calls) > 0);
        pc_runtime_destroy(RT);

        /* The built-in modes are policies too. */
        assert_string_equal(pc_policy_builtin(PC_MODE_TPC)->name, "tpc");
        assert_false(pc_policy_builtin(PC_MODE_TPC)->stealing);
        assert_true(pc_policy_builtin(PC_MODE_ELASTIC)->stealing);
        assert_false(pc_policy_builtin(PC_MODE_DETERMINISTIC)->stealing);
        assert_null(pc_policy_builtin((enum pc_mode)9));
}

/* ---- deterministic mode: same seed, same execution order ---------------- */

#define DET_MAX 20000

struct det {
        uint32_t order[DET_MAX];
        unsigned n;
        uint32_t next_id;
        unsigned live;
        int threads; /* the process's threads while the run's first task ran */
};

static struct det D;

/* The process's threads now: a thread the runtime started shows here from
 * the moment pthread_create() returned, whether or not it ran yet. */
static int count_threads(void)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        int n = 0;

        if (d == NULL)
                return -1;
        while ((e = readdir(d)) != NULL)
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

static void det_task(void *arg)
{
        uint32_t id = (uint32_t)(uintptr_t)arg;

        uint64_t kids = pc_random() % 4;

        /* Record who ran and how many children it drew: ids alone come
         * out in FIFO order whatever the draws are. */
        if (D.n < DET_MAX)
                D.order[D.n++] = id << 2 | (uint32_t)kids;
        D.live--;
        for (; kids > 0 && D.next_id < DET_MAX / 2; kids--) {
                pc_spawn(det_task, (void *)(uintptr_t)D.next_id++);
                D.live++;
        }
        /* The tree may die out early; either way the run ends. */
        if (D.live == 0)
                pc_runtime_stop(pc_runtime_current());
}

static void det_main(void *arg)
{
        (void)arg;
        /* Any monitor thread was started before the run's first task. */
        D.threads = count_threads();
        D.next_id = 1;
        D.live = 1;
        pc_spawn(det_task, (void *)(uintptr_t)0);
}

/* A run of @mode with one worker and the load monitor asked for: returns
 * how many threads the process gained for it. */
static int det_run_mode(enum pc_mode mode, uint64_t seed, struct det *out)
{
        struct pc_runtime_stats rs;
        struct pc_config cfg;
        struct pc_runtime *rt;
        int before;

        memset(&D, 0, sizeof(D));
        pc_test_config(&cfg, mode == PC_MODE_DETERMINISTIC ? 0 : 1);
        cfg.mode = mode;
        cfg.seed = seed;
        cfg.monitor_ms = 5;
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), 1);
        before = count_threads();
        assert_true(before >= 1);
        assert_int_equal(pc_runtime_run(rt, det_main, NULL), 0);
        assert_int_equal(pc_stats_runtime(rt, &rs), 0);
        if (mode == PC_MODE_DETERMINISTIC) {
                /* The monitor would look at queue depths on a clock and
                 * retarget spawns: not reproducible, so it never looked. */
                assert_int_equal(rs.monitor_samples, 0);
                assert_int_equal(rs.monitor_retargets, 0);
        }
        pc_runtime_destroy(rt);
        *out = D;
        return D.threads - before;
}

/* Deterministic mode starts no thread besides the caller's, even with the
 * load monitor asked for; the same run in tpc mode starts the monitor's,
 * so the count does see it. */
static void test_deterministic_no_monitor(void **state)
{
        static struct det r;

        (void)state;
        assert_int_equal(det_run_mode(PC_MODE_DETERMINISTIC, 3, &r), 0);
        assert_int_equal(det_run_mode(PC_MODE_TPC, 3, &r), 1);
}

static void det_run(uint64_t seed, struct det *out)
{
        det_run_mode(PC_MODE_DETERMINISTIC, seed, out);
}

static void test_deterministic_order(void **state)
{
        static struct det a, b, c;

        (void)state;
        /* Seeds whose trees grow to the cap (seed 7's dies out at 4). */
        det_run(3, &a);
        det_run(3, &b);
        det_run(4, &c);
        assert_true(a.n > 1000);
        assert_int_equal(a.n, b.n);
        assert_memory_equal(a.order, b.order, a.n * sizeof(a.order[0]));
        assert_true(a.n != c.n || memcmp(a.order, c.order, a.n * sizeof(a.order[0])) != 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_options),
                cmocka_unit_test(test_agents_share_placement),
                cmocka_unit_test(test_monitor_rule),
                cmocka_unit_test(test_monitor_retargets_future_spawns),
                cmocka_unit_test(test_custom_policy),
                cmocka_unit_test(test_deterministic_order),
                cmocka_unit_test(test_deterministic_no_monitor),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
