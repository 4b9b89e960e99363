/* SPDX-License-Identifier: MIT */
/*
 * shard/ API: call/done pairing, for-each and map/reduce, the key hash,
 * per-worker slots, the blocking lane, and bad input.
 *
 * Worker threads never call cmocka asserts: they count failures, and the
 * test thread asserts once pc_runtime_run() returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_shard.h"

static struct pc_runtime *RT;
static _Atomic uint64_t BAD;

static void bad(void)
{
        atomic_fetch_add(&BAD, 1);
}

static struct pc_runtime *make_rt(unsigned workers, unsigned ring, unsigned lane)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        struct pc_runtime *rt;

        pc_test_config(&cfg, workers);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        pc_shard_opts_init(&so);
        so.ring_size = ring;
        so.blocking_threads = lane;
        assert_int_equal(pc_shard_init(rt, &so), 0);
        atomic_store(&BAD, 0);
        return rt;
}

/* ---- call/done pairs ----------------------------------------------------- */

#define CW 4
#define CALLS 500

/* arg packs caller << 24 | callee << 16 | i; the result is a function of
 * it, so each done can tell whether it got its own call's result. */
static _Atomic uint64_t calls_done;

static void *square_ish(void *arg)
{
        uintptr_t a = (uintptr_t)arg;

        if ((unsigned)(a >> 16 & 0xff) != (unsigned)pc_worker_id())
                bad();
        return (void *)(a * 3 + 1);
}

static void call_back(void *result, void *arg)
{
        uintptr_t a = (uintptr_t)arg;

        if ((uintptr_t)result != a * 3 + 1)
                bad();
        if ((unsigned)(a >> 24) != (unsigned)pc_worker_id())
                bad();
        if (atomic_fetch_add(&calls_done, 1) + 1 == (uint64_t)CW * CW * CALLS)
                pc_runtime_stop(RT);
}

static void caller(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        (void)arg;
        for (uintptr_t i = 0; i < CALLS; i++)
                for (unsigned d = 0; d < CW; d++) {
                        uintptr_t a = (uintptr_t)me << 24 | (uintptr_t)d << 16 | i;
                        if (pc_call(d, square_ish, (void *)a, call_back, (void *)a) != 0)
                                bad();
                }
}

static void calls_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < CW; w++)
                pc_spawn_on(w, caller, NULL);
}

static void test_call_done_pairs(void **state)
{
        (void)state;
        RT = make_rt(CW, 8, 0);
        atomic_store(&calls_done, 0);
        assert_int_equal(pc_runtime_run(RT, calls_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        assert_int_equal(atomic_load(&calls_done), (uint64_t)CW * CW * CALLS);
        pc_runtime_destroy(RT);
}

/* ---- for each worker, map/reduce ----------------------------------------- */

#define FW 5
#define ORIGIN 3 /* the caller runs on a worker other than 0 */

static _Atomic unsigned ran_on[FW];
static _Atomic int each_done_calls, mr_done_calls;
static uintptr_t mr_result;

static void each_fn(void *arg)
{
        if (arg != &ran_on)
                bad();
        atomic_fetch_add(&ran_on[pc_worker_id()], 1);
}

static void *mr_map(void *arg)
{
        if (arg != &mr_result)
                bad();
        return (void *)(uintptr_t)(pc_worker_id() + 1);
}

/* Not commutative: the answer spells the order the items were folded in. */
static void *mr_reduce(void *acc, void *item, void *arg)
{
        if (arg != &mr_result || pc_worker_id() != ORIGIN)
                bad();
        return (void *)((uintptr_t)acc * 10 + (uintptr_t)item);
}

static void mr_done(void *acc, void *arg)
{
        if (arg != &mr_done_calls || pc_worker_id() != ORIGIN)
                bad();
        mr_result = (uintptr_t)acc;
        atomic_fetch_add(&mr_done_calls, 1);
        pc_runtime_stop(RT);
}

static void each_done(void *arg)
{
        if (arg != &each_done_calls || pc_worker_id() != ORIGIN)
                bad();
        /* Every worker has run fn before done runs. */
        for (unsigned w = 0; w < FW; w++)
                if (atomic_load(&ran_on[w]) != 1)
                        bad();
        atomic_fetch_add(&each_done_calls, 1);
        if (pc_map_reduce(mr_map, &mr_result, mr_reduce, (void *)(uintptr_t)7, mr_done,
                          &mr_done_calls) != 0)
                bad();
}

static void each_origin(void *arg)
{
        (void)arg;
        if (pc_for_each_worker(each_fn, &ran_on, each_done, &each_done_calls) != 0)
                bad();
}

static void each_main(void *arg)
{
        (void)arg;
        pc_spawn_on(ORIGIN, each_origin, NULL);
}

static void test_for_each_and_map_reduce(void **state)
{
        (void)state;
        /* Rings of 2: the fan-out itself overflows. */
        RT = make_rt(FW, 2, 0);
        assert_int_equal(pc_runtime_run(RT, each_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        for (unsigned w = 0; w < FW; w++)
                assert_int_equal(atomic_load(&ran_on[w]), 1);
        assert_int_equal(atomic_load(&each_done_calls), 1);
        assert_int_equal(atomic_load(&mr_done_calls), 1);
        /* acc0 = 7, then items 1..5 in worker order. */
        assert_int_equal(mr_result, 712345);
        pc_runtime_destroy(RT);
}

/* ---- key hash ------------------------------------------------------------ */

/* The documented hash, written out independently: FNV-1a 64 + fmix64. */
static uint64_t ref_hash(const char *s, size_t len)
{
        uint64_t h = 14695981039346656037ull;

        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)s[i];
                h *= 1099511628211ull;
        }
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return h;
}

static unsigned of_results[3];

static void shard_of_main(void *arg)
{
        (void)arg;
        of_results[0] = pc_shard_of("user:42", 7);
        of_results[1] = pc_shard_of("", 0);
        of_results[2] = pc_shard_of(NULL, 0);
        pc_runtime_stop(RT);
}

static void test_shard_hash(void **state)
{
        static const char *const keys[] = {"", "a", "user:42", "the quick brown fox"};
        unsigned counts[8] = {0};
        char key[32];
        const unsigned nkeys = 80000;

        (void)state;
        for (unsigned i = 0; i < 4; i++)
                assert_true(pc_shard_hash(keys[i], strlen(keys[i])) ==
                            ref_hash(keys[i], strlen(keys[i])));
        assert_true(pc_shard_hash(NULL, 0) == ref_hash("", 0));
        /* Every shard gets its share of sequential keys, within 5%. */
        for (unsigned i = 0; i < nkeys; i++) {
                int len = snprintf(key, sizeof(key), "key-%u", i);
                unsigned s = pc_shard_pick(pc_shard_hash(key, (size_t)len), 8);
                assert_true(s < 8);
                counts[s]++;
        }
        for (unsigned s = 0; s < 8; s++) {
                assert_true(counts[s] > nkeys / 8 * 95 / 100);
                assert_true(counts[s] < nkeys / 8 * 105 / 100);
        }
        assert_int_equal(pc_shard_pick(UINT64_MAX, 5), 4);
        assert_int_equal(pc_shard_pick(0, 5), 0);
        assert_int_equal(pc_shard_pick(12345, 0), 0);

        /* On a worker: the pick for the runtime's N; off-worker: 0. */
        assert_int_equal(pc_shard_of("user:42", 7), 0);
        RT = make_rt(6, 4, 0);
        assert_int_equal(pc_runtime_run(RT, shard_of_main, NULL), 0);
        assert_int_equal(of_results[0], pc_shard_pick(ref_hash("user:42", 7), 6));
        assert_int_equal(of_results[1], pc_shard_pick(ref_hash("", 0), 6));
        assert_int_equal(of_results[2], of_results[1]);
        pc_runtime_destroy(RT);
}

/* ---- per-worker slots ---------------------------------------------------- */

#define SLW 4
static struct pc_slot *SLOT;
static uint64_t slot_obj[SLW];

static void slot_set_here(void)
{
        unsigned me = (unsigned)pc_worker_id();

        if (pc_slot_get(SLOT) != NULL)
                bad();
        if (pc_slot_set(SLOT, &slot_obj[me]) != 0)
                bad();
        if (pc_slot_get(SLOT) != &slot_obj[me])
                bad();
}

static void slot_each(void *arg)
{
        (void)arg;
        slot_set_here();
}

/* Runs on worker 0 after every worker set its slot (for-each's done). */
static void slot_check(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < SLW; w++)
                if (pc_slot_get_on(SLOT, w) != &slot_obj[w])
                        bad();
        pc_runtime_stop(RT);
}

static void slot_main(void *arg)
{
        (void)arg;
        if (pc_for_each_worker(slot_each, NULL, slot_check, NULL) != 0)
                bad();
}

static void test_slots(void **state)
{
        (void)state;
        RT = make_rt(SLW, 4, 0);
        assert_int_equal(pc_slot_create(RT, &SLOT), 0);
        assert_int_equal(pc_slot_set(SLOT, &slot_obj[0]), -EPERM);
        assert_null(pc_slot_get(SLOT));
        assert_int_equal(pc_runtime_run(RT, slot_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        for (unsigned w = 0; w < SLW; w++)
                assert_ptr_equal(pc_slot_get_on(SLOT, w), &slot_obj[w]);
        assert_null(pc_slot_get_on(SLOT, SLW));
        assert_null(pc_slot_get_on(NULL, 0));
        pc_slot_destroy(SLOT);
        pc_runtime_destroy(RT);
}

/* ---- blocking lane ------------------------------------------------------- */

#define LANE_W 1 /* the worker that uses the lane */
#define LANE_JOBS 6

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool open;
        _Atomic int gate_opened_on;  /* worker that opened it, -1 before */
        _Atomic int done_before_open;
        _Atomic unsigned done_calls;
        _Atomic unsigned other_ran;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* Blocks until a task on the caller's own worker opens the gate: it can
 * only return if that worker kept running tasks meanwhile. */
static void *lane_wait(void *arg)
{
        if (pc_worker_id() != -1)
                bad();
        if (pc_submit(0, NULL, NULL) != -EPERM)
                bad();
        pthread_mutex_lock(&L.lock);
        while (!L.open)
                pthread_cond_wait(&L.cond, &L.lock);
        pthread_mutex_unlock(&L.lock);
        return (void *)((uintptr_t)arg + 100);
}

static void lane_done(void *result, void *arg)
{
        if ((uintptr_t)result != (uintptr_t)arg + 100)
                bad();
        if (pc_worker_id() != LANE_W)
                bad();
        if (atomic_load(&L.gate_opened_on) != LANE_W)
                atomic_fetch_add(&L.done_before_open, 1);
        if (atomic_fetch_add(&L.done_calls, 1) + 1 == LANE_JOBS)
                pc_runtime_stop(RT);
}

static void open_gate(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&L.lock);
        L.open = true;
        pthread_cond_broadcast(&L.cond);
        pthread_mutex_unlock(&L.lock);
        atomic_store(&L.gate_opened_on, pc_worker_id());
}

static void other_task(void *arg)
{
        uintptr_t left = (uintptr_t)arg;

        atomic_fetch_add(&L.other_ran, 1);
        if (left > 1)
                pc_spawn(other_task, (void *)(left - 1));
        else
                pc_spawn(open_gate, NULL);
}

static void lane_start(void *arg)
{
        (void)arg;
        /* More jobs than lane threads: some wait in the lane's queue. */
        for (uintptr_t i = 0; i < LANE_JOBS; i++)
                if (pc_spawn_blocking(lane_wait, (void *)i, lane_done, (void *)i) != 0)
                        bad();
        /* Tasks keep running on this worker while the jobs block; the last
         * one opens the gate. */
        pc_spawn(other_task, (void *)(uintptr_t)100);
}

static void lane_main(void *arg)
{
        (void)arg;
        pc_spawn_on(LANE_W, lane_start, NULL);
}

static void test_blocking_lane(void **state)
{
        struct pc_shard_stats st;

        (void)state;
        RT = make_rt(3, 4, 4);
        atomic_store(&L.gate_opened_on, -1);
        assert_int_equal(pc_runtime_run(RT, lane_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        assert_int_equal(atomic_load(&L.done_calls), LANE_JOBS);
        assert_int_equal(atomic_load(&L.done_before_open), 0);
        assert_int_equal(atomic_load(&L.other_ran), 100);
        assert_int_equal(pc_shard_stats(RT, LANE_W, &st), 0);
        assert_int_equal(st.blocking_done, LANE_JOBS);
        pc_runtime_destroy(RT);
}

/* ---- bad input ----------------------------------------------------------- */

static void *nop_call(void *arg)
{
        return arg;
}

static void nop_done(void *r, void *a)
{
        (void)r;
        (void)a;
}

static void nop(void *arg)
{
        (void)arg;
}

static void *nop_reduce(void *acc, void *item, void *arg)
{
        (void)item;
        (void)arg;
        return acc;
}

static int busy_rc;

static void *init_from_thread(void *arg)
{
        busy_rc = pc_shard_init(arg, NULL);
        return NULL;
}

static void bad_main(void *arg)
{
        unsigned n = pc_runtime_workers(RT);
        pthread_t th;

        (void)arg;
        if (pc_submit(n, nop, NULL) != -EINVAL)
                bad();
        if (pc_submit(0, NULL, NULL) != -EINVAL)
                bad();
        if (pc_call(n, nop_call, NULL, nop_done, NULL) != -EINVAL)
                bad();
        if (pc_call(0, NULL, NULL, nop_done, NULL) != -EINVAL)
                bad();
        if (pc_call(0, nop_call, NULL, NULL, NULL) != -EINVAL)
                bad();
        if (pc_for_each_worker(NULL, NULL, NULL, NULL) != -EINVAL)
                bad();
        if (pc_map_reduce(NULL, NULL, nop_reduce, NULL, nop_done, NULL) != -EINVAL)
                bad();
        if (pc_map_reduce(nop_call, NULL, NULL, NULL, nop_done, NULL) != -EINVAL)
                bad();
        if (pc_map_reduce(nop_call, NULL, nop_reduce, NULL, NULL, NULL) != -EINVAL)
                bad();
        if (pc_spawn_blocking(nop_call, NULL, NULL, NULL) != -ENOTSUP)
                bad();
        if (pc_spawn_blocking(NULL, NULL, NULL, NULL) != -EINVAL)
                bad();
        if (pc_shard_init(RT, NULL) != -EPERM)
                bad();
        /* From another thread while the runtime runs. */
        pthread_create(&th, NULL, init_from_thread, RT);
        pthread_join(th, NULL);
        if (busy_rc != -EBUSY)
                bad();
        pc_runtime_stop(RT);
}

static void no_shard_main(void *arg)
{
        (void)arg;
        if (pc_submit(0, nop, NULL) != -ENODEV)
                bad();
        if (pc_call(0, nop_call, NULL, nop_done, NULL) != -ENODEV)
                bad();
        if (pc_for_each_worker(nop, NULL, NULL, NULL) != -ENODEV)
                bad();
        if (pc_map_reduce(nop_call, NULL, nop_reduce, NULL, nop_done, NULL) != -ENODEV)
                bad();
        if (pc_spawn_blocking(nop_call, NULL, NULL, NULL) != -ENODEV)
                bad();
        pc_runtime_stop(RT);
}

static void test_bad_input(void **state)
{
        struct pc_shard_opts so;
        struct pc_shard_stats st;
        struct pc_config cfg;
        struct pc_slot *s;
        static const unsigned bad_rings[] = {0, 1, 3, 6, PC_SHARD_RING_MAX * 2};

        (void)state;
        /* Off-worker. */
        assert_int_equal(pc_submit(0, nop, NULL), -EPERM);
        assert_int_equal(pc_call(0, nop_call, NULL, nop_done, NULL), -EPERM);
        assert_int_equal(pc_for_each_worker(nop, NULL, NULL, NULL), -EPERM);
        assert_int_equal(pc_map_reduce(nop_call, NULL, nop_reduce, NULL, nop_done, NULL),
                         -EPERM);
        assert_int_equal(pc_spawn_blocking(nop_call, NULL, NULL, NULL), -EPERM);

        /* Options. */
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_shard_init(NULL, NULL), -EINVAL);
        pc_shard_opts_init(&so);
        assert_int_equal(so.ring_size, PC_SHARD_RING_DEFAULT);
        assert_int_equal(so.blocking_threads, PC_SHARD_BLOCKING_DEFAULT);
        for (unsigned i = 0; i < sizeof(bad_rings) / sizeof(bad_rings[0]); i++) {
                so.ring_size = bad_rings[i];
                assert_int_equal(pc_shard_init(RT, &so), -EINVAL);
        }
        pc_shard_opts_init(&so);
        so.blocking_threads = PC_SHARD_BLOCKING_MAX + 1;
        assert_int_equal(pc_shard_init(RT, &so), -EINVAL);
        assert_int_equal(pc_shard_stats(RT, 0, &st), -ENODEV);

        /* Without pc_shard_init(). */
        atomic_store(&BAD, 0);
        assert_int_equal(pc_runtime_run(RT, no_shard_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);

        /* Set up, then every misuse. */
        pc_shard_opts_init(&so);
        so.blocking_threads = 0;
        assert_int_equal(pc_shard_init(RT, &so), 0);
        assert_int_equal(pc_shard_init(RT, &so), -EALREADY);
        assert_int_equal(pc_shard_stats(RT, 2, &st), -EINVAL);
        assert_int_equal(pc_shard_stats(RT, 0, NULL), -EINVAL);
        assert_int_equal(pc_shard_stats(NULL, 0, &st), -EINVAL);
        assert_int_equal(pc_slot_create(NULL, &s), -EINVAL);
        assert_int_equal(pc_slot_create(RT, NULL), -EINVAL);
        assert_int_equal(pc_runtime_run(RT, bad_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        pc_runtime_destroy(RT);
}

static void shard_main(void *arg)
{
        (void)arg;
        if (pc_worker_id() != 0 || pc_submit(1, nop, NULL) != 0)
                bad();
        pc_runtime_stop(RT);
}

/* Worker 0 runs on the thread that calls pc_runtime_run(): once a run
 * with a shard layer ended, that thread keeps none of its state into the
 * next runtime's run, which has none. */
static void test_no_shard_after_shard(void **state)
{
        struct pc_config cfg;

        (void)state;
        RT = make_rt(2, 64, 0);
        assert_int_equal(pc_runtime_run(RT, shard_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        pc_runtime_destroy(RT);
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(pc_runtime_run(RT, no_shard_main, NULL), 0);
        assert_int_equal(atomic_load(&BAD), 0);
        pc_runtime_destroy(RT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_call_done_pairs),
                cmocka_unit_test(test_for_each_and_map_reduce),
                cmocka_unit_test(test_shard_hash),
                cmocka_unit_test(test_slots),
                cmocka_unit_test(test_blocking_lane),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_no_shard_after_shard),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
