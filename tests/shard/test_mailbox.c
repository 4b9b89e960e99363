/* SPDX-License-Identifier: MIT */
/*
 * Mailboxes under load: exactly-once FIFO delivery per (src, dst) in a
 * storm from every worker to every worker through rings of 4 (so most
 * messages wait in overflow), in both modes; stopping in the middle of a
 * storm loses nothing; a sender holding overflow sleeps and is woken by the
 * receiver; an idle poll inspects no ring, with 64 workers.
 *
 * Worker threads never call cmocka asserts: they count failures, and the
 * test thread asserts once pc_runtime_run() returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "pc_test.h"
#include "pc_shard.h"
#include "shard_pvt.h"

/* A watchdog for tests whose failure mode is a lost wake-up: after @secs it
 * flags the run and stops it (stopping wakes every worker), so the test
 * fails instead of hanging. */
struct watchdog {
        struct pc_runtime *rt;
        unsigned secs;
        pthread_t th;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool finished;
        bool fired;
};

static void *watchdog_main(void *arg)
{
        struct watchdog *wd = arg;
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wd->secs;
        pthread_mutex_lock(&wd->lock);
        while (!wd->finished)
                if (pthread_cond_timedwait(&wd->cond, &wd->lock, &ts) == ETIMEDOUT)
                        break;
        if (!wd->finished) {
                wd->fired = true;
                pc_runtime_stop(wd->rt);
        }
        pthread_mutex_unlock(&wd->lock);
        return NULL;
}

static void watchdog_start(struct watchdog *wd, struct pc_runtime *rt, unsigned secs)
{
        memset(wd, 0, sizeof(*wd));
        wd->rt = rt;
        wd->secs = secs;
        pthread_mutex_init(&wd->lock, NULL);
        pthread_cond_init(&wd->cond, NULL);
        pthread_create(&wd->th, NULL, watchdog_main, wd);
}

static bool watchdog_end(struct watchdog *wd)
{
        pthread_mutex_lock(&wd->lock);
        wd->finished = true;
        pthread_cond_signal(&wd->cond);
        pthread_mutex_unlock(&wd->lock);
        pthread_join(wd->th, NULL);
        pthread_mutex_destroy(&wd->lock);
        pthread_cond_destroy(&wd->cond);
        return wd->fired;
}

/* ---- storm: every worker to every worker, FIFO, exactly once ------------ */

#define SW 5      /* workers in the storm */
#define MAXW 8    /* most workers a test here uses the storm state with */
#define CHUNK 37  /* messages a driver sends before yielding */

/*
 * A message's argument packs (src, dst, seq); seq counts per (src, dst)
 * from 0, assigned by the sending worker at send time (in elastic mode a
 * driver task may run anywhere, so src is whoever sends).
 */
#define PACK(s, d, q) ((void *)(uintptr_t)((uint64_t)(s) << 56 | (uint64_t)(d) << 48 | (q)))
#define SRC(a) ((unsigned)((uintptr_t)(a) >> 56))
#define DST(a) ((unsigned)((uintptr_t)(a) >> 48 & 0xff))
#define SEQ(a) ((uint64_t)(uintptr_t)(a) & ((1ull << 48) - 1))

struct storm {
        struct pc_runtime *rt;
        unsigned n;
        uint64_t per_driver;
        uint64_t total_msgs;
        uint64_t next_seq[MAXW][MAXW];   /* [src][dst], written by src */
        uint64_t expect[MAXW][MAXW];     /* [dst][src], written by dst */
        uint64_t reply_last[MAXW][MAXW]; /* [src][dst] last reply seq + 1, by src */
        _Atomic uint64_t msgs, replies, calls;
        _Atomic uint64_t bad_order, bad_worker, bad_result, send_err;
        bool stop_when_done;
        unsigned call_every;             /* every call_every-th message is a pc_call() */
        bool bursts;                     /* some sends are pc_submit_burst()s of 1-9 */
        uint64_t left[MAXW];             /* per driver, its own task chain only */
};

static struct storm S;

static void check_msg(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        if (DST(arg) != me)
                atomic_fetch_add(&S.bad_worker, 1);
        else if (SEQ(arg) != S.expect[me][SRC(arg)]++)
                atomic_fetch_add(&S.bad_order, 1);
}

static void maybe_stop(void)
{
        if (S.stop_when_done && atomic_load(&S.msgs) == S.total_msgs &&
            atomic_load(&S.replies) == atomic_load(&S.calls))
                pc_runtime_stop(S.rt);
}

static void on_submit(void *arg)
{
        check_msg(arg);
        atomic_fetch_add(&S.msgs, 1);
        maybe_stop();
}

static void *on_call(void *arg)
{
        check_msg(arg);
        return (void *)((uintptr_t)arg ^ 0x5a5a);
}

/* Replies from dst to src travel on one ring in the order dst ran the
 * calls, which is src's sending order: their seqs must rise. */
static void on_reply(void *result, void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        uint64_t seq = SEQ(arg);

        if (((uintptr_t)result ^ 0x5a5a) != (uintptr_t)arg)
                atomic_fetch_add(&S.bad_result, 1);
        if (SRC(arg) != me)
                atomic_fetch_add(&S.bad_worker, 1);
        else if (seq + 1 <= S.reply_last[me][DST(arg)])
                atomic_fetch_add(&S.bad_order, 1);
        else
                S.reply_last[me][DST(arg)] = seq + 1;
        /* Count the message as delivered only now, so stopping waits for
         * the reply too. */
        atomic_fetch_add(&S.replies, 1);
        atomic_fetch_add(&S.msgs, 1);
        maybe_stop();
}

static int send_one(unsigned dst)
{
        unsigned me = (unsigned)pc_worker_id();
        uint64_t seq = S.next_seq[me][dst]++;
        void *a = PACK(me, dst, seq);

        if (seq % S.call_every == S.call_every - 1) {
                atomic_fetch_add(&S.calls, 1);
                return pc_call(dst, on_call, a, on_reply, a);
        }
        return pc_submit(dst, on_submit, a);
}

/* A burst of up to 9 submits (fewer when @left is smaller) to @dst, in
 * sequence with the pair's other messages. Returns the messages sent. */
static unsigned send_burst(unsigned dst, uint64_t left)
{
        unsigned me = (unsigned)pc_worker_id();
        unsigned b = 1 + (unsigned)(S.next_seq[me][dst] % 9);
        void *args[9];
        int rc;

        if (b > left)
                b = (unsigned)left;
        for (unsigned j = 0; j < b; j++)
                args[j] = PACK(me, dst, S.next_seq[me][dst] + j);
        rc = pc_submit_burst(dst, on_submit, args, b);
        if (rc != (int)b) {
                atomic_fetch_add(&S.send_err, 1);
                return b;
        }
        S.next_seq[me][dst] += b;
        return b;
}

static void driver(void *arg)
{
        uint64_t *left = arg;
        unsigned me = (unsigned)pc_worker_id();

        for (unsigned i = 0; i < CHUNK && *left; i++) {
                unsigned dst = (me + i) % S.n;

                if (S.bursts && i % 3 == 0) {
                        *left -= send_burst(dst, *left);
                        continue;
                }
                if (send_one(dst) != 0)
                        atomic_fetch_add(&S.send_err, 1);
                (*left)--;
        }
        if (*left)
                pc_spawn(driver, left);
}

static void storm_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < S.n; w++)
                pc_spawn_on(w, driver, &S.left[w]);
}

/* Once a run is over every task node is back in its owner's free lists:
 * a call on a request ring travels as a node of its caller's (the call's
 * record), which must come home with the reply, overflow nodes too. */
static void assert_nodes_home(struct pc_runtime *rt)
{
        for (unsigned i = 0; i < pc_runtime_workers(rt); i++) {
                struct pc_worker *w = rt->workers[i];
                uint64_t n = 0;

                for (struct pc_task *t = w->free_list; t; t = t->next)
                        n++;
                for (struct pc_task *t = atomic_load(&w->remote_free); t; t = t->next)
                        n++;
                assert_int_equal(n, (uint64_t)w->nchunks * PC_TASK_CHUNK);
        }
}

/* @call_every 7: mostly submits, so the rings are rarely empty and few
 * calls take a slot; 1: all calls, the first to each worker on a slot
 * (the rings start empty), those past the slots on the ring behind. */
static void run_storm_ring(enum pc_mode mode, unsigned call_every, bool bursts, unsigned ring)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        struct pc_shard_stats st;
        uint64_t sent = 0, recv = 0, ovf = 0, delivered = 0, slotted = 0;
        struct watchdog wd;

        memset(&S, 0, sizeof(S));
        S.call_every = call_every;
        S.bursts = bursts;
        pc_test_config(&cfg, SW);
        cfg.mode = mode;
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        pc_shard_opts_init(&so);
        so.ring_size = ring;
        assert_int_equal(pc_shard_init(S.rt, &so), 0);
        S.n = pc_runtime_workers(S.rt);
        assert_int_equal(S.n, SW);
        /* 1M messages at full scale (calls count once, their replies too). */
        S.per_driver = pc_test_scaled(1000000) / SW;
        S.total_msgs = S.per_driver * SW;
        for (unsigned w = 0; w < SW; w++)
                S.left[w] = S.per_driver;
        S.stop_when_done = true;

        watchdog_start(&wd, S.rt, 120);
        assert_int_equal(pc_runtime_run(S.rt, storm_main, NULL), 0);
        assert_false(watchdog_end(&wd));

        assert_int_equal(atomic_load(&S.send_err), 0);
        assert_int_equal(atomic_load(&S.bad_worker), 0);
        assert_int_equal(atomic_load(&S.bad_order), 0);
        assert_int_equal(atomic_load(&S.bad_result), 0);
        assert_int_equal(atomic_load(&S.msgs), S.total_msgs);
        assert_int_equal(atomic_load(&S.replies), atomic_load(&S.calls));
        assert_true(atomic_load(&S.calls) > 0);
        /* Exactly once per pair: every receiver saw each sender's full run. */
        for (unsigned s = 0; s < SW; s++)
                for (unsigned d = 0; d < SW; d++) {
                        assert_int_equal(S.expect[d][s], S.next_seq[s][d]);
                        delivered += S.expect[d][s];
                }
        assert_int_equal(delivered, S.total_msgs);
        for (unsigned w = 0; w < SW; w++) {
                assert_int_equal(pc_shard_stats(S.rt, w, &st), 0);
                sent += st.sent;
                recv += st.received;
                ovf += st.overflowed;
                slotted += st.slot_calls;
        }
        /* Requests plus replies; rings of 4 must have pushed back. */
        assert_int_equal(sent, S.total_msgs + atomic_load(&S.calls));
        assert_int_equal(recv, sent);
        if (ring == 4)
                assert_true(ovf > 0);
        if (call_every == 1) { /* both paths of pc_call() carried calls */
                assert_true(slotted > 0);
                assert_true(slotted < atomic_load(&S.calls));
        }
        assert_nodes_home(S.rt);
        pc_runtime_destroy(S.rt);
}

static void run_storm_bursts(enum pc_mode mode, unsigned call_every, bool bursts)
{
        run_storm_ring(mode, call_every, bursts, 4);
}

static void run_storm(enum pc_mode mode, unsigned call_every)
{
        run_storm_bursts(mode, call_every, false);
}

/* Bursts of submits mixed with single submits and calls, most of them
 * through overflow: the same exactly-once order per pair. */
static void test_storm_bursts_tpc(void **state)
{
        (void)state;
        run_storm_bursts(PC_MODE_TPC, 7, true);
}

static void test_storm_bursts_elastic(void **state)
{
        (void)state;
        run_storm_bursts(PC_MODE_ELASTIC, 7, true);
}

/* Rings of 256: the senders' fast path between its stops (a batch of 64
 * published at once, the dirty bit after each publication, the claim of
 * the next lines every 16 requests), with bursts and calls mixed in. */
static void test_storm_big_ring_tpc(void **state)
{
        (void)state;
        run_storm_ring(PC_MODE_TPC, 7, true, 256);
}

static void test_storm_big_ring_elastic(void **state)
{
        (void)state;
        run_storm_ring(PC_MODE_ELASTIC, 7, true, 256);
}

/* What pc_submit_burst() refuses, before anything is queued. */
static _Atomic int burst_rc[4];

static void burst_errors_main(void *arg)
{
        void *args[2] = {NULL, NULL};

        (void)arg;
        atomic_store(&burst_rc[0], pc_submit_burst(0, NULL, args, 2));
        atomic_store(&burst_rc[1], pc_submit_burst(0, on_submit, NULL, 2));
        atomic_store(&burst_rc[2], pc_submit_burst(99, on_submit, args, 2));
        atomic_store(&burst_rc[3], pc_submit_burst(0, on_submit, NULL, 0));
        pc_runtime_stop(S.rt);
}

static void test_burst_errors(void **state)
{
        struct pc_config cfg;
        void *args[1] = {NULL};

        (void)state;
        memset(&S, 0, sizeof(S));
        assert_int_equal(pc_submit_burst(0, on_submit, args, 1), -EPERM);
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        assert_int_equal(pc_shard_init(S.rt, NULL), 0);
        assert_int_equal(pc_runtime_run(S.rt, burst_errors_main, NULL), 0);
        assert_int_equal(atomic_load(&burst_rc[0]), -EINVAL);
        assert_int_equal(atomic_load(&burst_rc[1]), -EINVAL);
        assert_int_equal(atomic_load(&burst_rc[2]), -EINVAL);
        assert_int_equal(atomic_load(&burst_rc[3]), 0);
        pc_runtime_destroy(S.rt);
}

/* ---- a burst into a ring the slow path filled ---------------------------- */

/*
 * Worker 1 is held inside its first message (the gate) while worker 0
 * fills their ring of 4 to the last slot (three fast-path submits, one
 * through the slow path) and then sends a burst: the burst must wait in
 * overflow, not be written over the messages worker 1 has not run. (It
 * was: the burst's room, mask - used, wrapped to 2^32 - 1 on a ring the
 * slow path had filled, and a storm on a loaded machine lost and repeated
 * messages, or crashed.) Whatever worker 1 has drained when the burst
 * comes, it is still inside the gate, so the ring is full: no timing.
 */
#define GATE_MSGS 6

static struct {
        _Atomic int open;
        _Atomic unsigned n;
        uintptr_t seen[GATE_MSGS + 4];
        _Atomic int rc;
} G;

static void gate_record(void *arg)
{
        unsigned i = atomic_load(&G.n);

        if (i < GATE_MSGS + 4)
                G.seen[i] = (uintptr_t)arg;
        atomic_store(&G.n, i + 1);
        if (i + 1 == GATE_MSGS)
                pc_runtime_stop(S.rt);
}

static void gate_hold(void *arg)
{
        gate_record(arg);
        while (!atomic_load(&G.open))
                sched_yield();
}

static void gate_main(void *arg)
{
        void *burst[2] = {(void *)(uintptr_t)5, (void *)(uintptr_t)6};
        int rc = 0;

        (void)arg;
        rc |= pc_submit(1, gate_hold, (void *)(uintptr_t)1);
        for (uintptr_t m = 2; m <= 4; m++)
                rc |= pc_submit(1, gate_record, (void *)m);
        if (pc_submit_burst(1, gate_record, burst, 2) != 2)
                rc = -1;
        atomic_store(&G.rc, rc);
        atomic_store(&G.open, 1);
}

static void test_burst_into_full_ring(void **state)
{
        struct pc_shard_opts so;
        struct pc_config cfg;

        (void)state;
        memset(&S, 0, sizeof(S));
        memset(&G, 0, sizeof(G));
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        pc_shard_opts_init(&so);
        so.ring_size = 4;
        assert_int_equal(pc_shard_init(S.rt, &so), 0);
        assert_int_equal(pc_runtime_run(S.rt, gate_main, NULL), 0);
        assert_int_equal(atomic_load(&G.rc), 0);
        assert_int_equal(atomic_load(&G.n), GATE_MSGS);
        for (unsigned i = 0; i < GATE_MSGS; i++)
                assert_int_equal(G.seen[i], i + 1);
        pc_runtime_destroy(S.rt);
}

static void test_storm_fifo_exactly_once_tpc(void **state)
{
        (void)state;
        run_storm(PC_MODE_TPC, 7);
}

static void test_storm_call_heavy_tpc(void **state)
{
        (void)state;
        run_storm(PC_MODE_TPC, 1);
}

static void test_storm_fifo_exactly_once_elastic(void **state)
{
        (void)state;
        run_storm(PC_MODE_ELASTIC, 7);
}

static void test_storm_call_heavy_elastic(void **state)
{
        (void)state;
        run_storm(PC_MODE_ELASTIC, 1);
}

/* ---- stop right after queueing a storm: nothing is lost ------------------ */

#define DW MAXW

static _Atomic uint64_t blocking_ran, blocking_done_ok;

static void *slow_job(void *arg)
{
        struct timespec ts = {0, 2000000};

        nanosleep(&ts, NULL);
        atomic_fetch_add(&blocking_ran, 1);
        return arg;
}

static void slow_done(void *result, void *arg)
{
        if (result == arg && (uintptr_t)arg == (uintptr_t)pc_worker_id())
                atomic_fetch_add(&blocking_done_ok, 1);
}

static void drain_burst(void *arg)
{
        uint64_t count = (uint64_t)(uintptr_t)arg;
        unsigned me = (unsigned)pc_worker_id();

        for (uint64_t i = 0; i < count; i++)
                if (send_one((unsigned)((me + i) % S.n)) != 0)
                        atomic_fetch_add(&S.send_err, 1);
        if (pc_spawn_blocking(slow_job, (void *)(uintptr_t)me, slow_done,
                              (void *)(uintptr_t)me) != 0)
                atomic_fetch_add(&S.send_err, 1);
}

/* On worker 0 at the very start: the other workers may not have run yet. */
static void drain_main(void *arg)
{
        uint64_t per = (uint64_t)(uintptr_t)arg;

        drain_burst(arg);
        for (unsigned w = 1; w < S.n; w++)
                pc_submit(w, drain_burst, (void *)(uintptr_t)per);
        pc_runtime_stop(S.rt);
}

static void test_stop_mid_storm_loses_nothing(void **state)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        uint64_t per;

        (void)state;
        memset(&S, 0, sizeof(S));

        pc_test_config(&cfg, DW);
        assert_int_equal(pc_runtime_create(&cfg, &S.rt), 0);
        pc_shard_opts_init(&so);
        so.ring_size = 4;
        so.blocking_threads = 2;
        assert_int_equal(pc_shard_init(S.rt, &so), 0);
        S.n = pc_runtime_workers(S.rt);
        /* Worker 0 sends its burst, then one message per other worker
         * that makes it send a burst too, then stops at once: all of it
         * runs while the runtime drains. */
        per = pc_test_scaled(20000);

        for (int round = 0; round < 2; round++) {
                struct watchdog wd;

                /* Calls in flight on slots and on the rings: all calls
                 * first (the first few to each worker take its slots),
                 * then a mix with submits behind the slots. */
                S.call_every = round == 0 ? 1 : 3;
                atomic_store(&blocking_ran, 0);
                atomic_store(&blocking_done_ok, 0);
                watchdog_start(&wd, S.rt, 60);
                assert_int_equal(pc_runtime_run(S.rt, drain_main, (void *)(uintptr_t)per), 0);
                assert_false(watchdog_end(&wd));
                /* msgs counts checked submits and replies, so every burst
                 * message and every reply arrived, in order. */
                assert_int_equal(atomic_load(&S.send_err), 0);
                assert_int_equal(atomic_load(&S.bad_worker), 0);
                assert_int_equal(atomic_load(&S.bad_order), 0);
                assert_int_equal(atomic_load(&S.bad_result), 0);
                assert_int_equal(atomic_load(&S.msgs), per * S.n * (uint64_t)(round + 1));
                assert_int_equal(atomic_load(&S.replies), atomic_load(&S.calls));
                assert_int_equal(atomic_load(&blocking_ran), S.n);
                assert_int_equal(atomic_load(&blocking_done_ok), S.n);
        }
        {
                uint64_t slotted = 0;
                struct pc_shard_stats st;

                for (unsigned w = 0; w < S.n; w++) {
                        assert_int_equal(pc_shard_stats(S.rt, w, &st), 0);
                        slotted += st.slot_calls;
                }
                assert_true(slotted > 0);
                assert_true(slotted < atomic_load(&S.calls));
        }
        pc_runtime_destroy(S.rt);
}

/* ---- backpressure: a sender with overflow sleeps, the receiver wakes it -- */

#define BP_MSGS 200

static struct {
        struct pc_runtime *rt;
        uint64_t expect;
        _Atomic uint64_t got;
        _Atomic int sender_slept, bad;
} B;

/* Registered on the sender after the mailbox poller: its prepare_sleep()
 * runs only when the mailbox poller's allowed sleep. */
static bool bp_prepare_sleep(void *arg)
{
        (void)arg;
        atomic_store(&B.sender_slept, 1);
        return true;
}

static unsigned bp_poll(void *arg)
{
        (void)arg;
        return 0;
}

static const struct pc_poller_ops bp_ops = {
        .name = "sleep-probe", .poll = bp_poll, .prepare_sleep = bp_prepare_sleep};

/* The first message holds the receiver (and so the full ring) until the
 * sender, holding 196 messages in overflow, has gone to sleep: a sender
 * that refused sleep would spin here. The rest arrive only if the
 * receiver's drain wakes the sleeping sender. */
static void bp_recv(void *arg)
{
        if ((uint64_t)(uintptr_t)arg != B.expect++)
                atomic_fetch_add(&B.bad, 1);
        if (arg == NULL) {
                uint64_t t0 = pc_now_ns();
                while (!atomic_load(&B.sender_slept)) {
                        if (pc_now_ns() - t0 > 30000000000ull) {
                                atomic_fetch_add(&B.bad, 1);
                                break;
                        }
                        sched_yield();
                }
        }
        if (atomic_fetch_add(&B.got, 1) + 1 == BP_MSGS)
                pc_runtime_stop(B.rt);
}

static void bp_main(void *arg)
{
        (void)arg;
        if (pc_poller_register(&bp_ops, NULL, NULL) != 0)
                atomic_fetch_add(&B.bad, 1);
        for (uint64_t i = 0; i < BP_MSGS; i++)
                if (pc_submit(1, bp_recv, (void *)(uintptr_t)i) != 0)
                        atomic_fetch_add(&B.bad, 1);
}

static void test_overflow_sender_sleeps_and_is_woken(void **state)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        struct pc_shard_stats st;
        struct watchdog wd;

        (void)state;
        memset(&B, 0, sizeof(B));
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &B.rt), 0);
        pc_shard_opts_init(&so);
        so.ring_size = 4;
        assert_int_equal(pc_shard_init(B.rt, &so), 0);
        watchdog_start(&wd, B.rt, 60);
        assert_int_equal(pc_runtime_run(B.rt, bp_main, NULL), 0);
        assert_false(watchdog_end(&wd));
        assert_int_equal(atomic_load(&B.bad), 0);
        assert_int_equal(atomic_load(&B.sender_slept), 1);
        assert_int_equal(atomic_load(&B.got), BP_MSGS);
        assert_int_equal(pc_shard_stats(B.rt, 0, &st), 0);
        assert_int_equal(st.overflowed, BP_MSGS - 4);
        assert_true(st.space_waits > 0);
        pc_runtime_destroy(B.rt);
}

/* ---- ping-pong under parking: no lost wake-up ---------------------------- */

/*
 * Pairs of workers bounce one call at a time (a call, then a submit back)
 * with PERCORE_IDLE=park, so nearly every message lands on a worker that
 * is going to sleep or asleep. A lost wake-up leaves a pair stuck, and the
 * watchdog fails the test.
 */
#define PW 4

static struct {
        struct pc_runtime *rt;
        uint64_t rounds;
        _Atomic unsigned pairs_done;
        _Atomic uint64_t bad;
} P;

static void pp_serve(void *arg);

static void pp_back(void *result, void *arg)
{
        uint64_t round = (uint64_t)(uintptr_t)arg;
        unsigned me = (unsigned)pc_worker_id();

        if ((uintptr_t)result != (uintptr_t)arg + 1 || me % 2 != 0)
                atomic_fetch_add(&P.bad, 1);
        /* The next round goes the other way: the peer submits to us. */
        if (pc_submit(me + 1, pp_serve, (void *)(uintptr_t)(round + 1)) != 0)
                atomic_fetch_add(&P.bad, 1);
}

static void *pp_answer(void *arg)
{
        return (void *)((uintptr_t)arg + 1);
}

static void pp_call(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        if (pc_call(me + 1, pp_answer, arg, pp_back, arg) != 0)
                atomic_fetch_add(&P.bad, 1);
}

/* On the odd worker of a pair: bounce back to the even one, or finish. */
static void pp_serve(void *arg)
{
        uint64_t round = (uint64_t)(uintptr_t)arg;
        unsigned me = (unsigned)pc_worker_id();

        if (round == P.rounds) {
                if (atomic_fetch_add(&P.pairs_done, 1) + 1 == PW / 2)
                        pc_runtime_stop(P.rt);
                return;
        }
        if (pc_submit(me - 1, pp_call, arg) != 0)
                atomic_fetch_add(&P.bad, 1);
}

static void pp_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < PW; w += 2)
                pc_submit(w, pp_call, (void *)(uintptr_t)0);
}

static void test_ping_pong_parking(void **state)
{
        struct pc_config cfg;
        struct watchdog wd;

        (void)state;
        memset(&P, 0, sizeof(P));
        pc_test_config(&cfg, PW);
        assert_int_equal(pc_runtime_create(&cfg, &P.rt), 0);
        assert_int_equal(pc_shard_init(P.rt, NULL), 0);
        P.rounds = pc_test_scaled(100000);
        watchdog_start(&wd, P.rt, 120);
        assert_int_equal(pc_runtime_run(P.rt, pp_main, NULL), 0);
        assert_false(watchdog_end(&wd));
        assert_int_equal(atomic_load(&P.bad), 0);
        assert_int_equal(atomic_load(&P.pairs_done), PW / 2);
        pc_runtime_destroy(P.rt);
}

/* ---- call chains on near and far slots ----------------------------------- */

/*
 * Every worker runs a chain of calls to every other: mostly one call at a
 * time, the next posted from the last one's done (the pattern that reuses
 * a near pair's slot), now and then a burst of 2-4 (the slots after it,
 * then the ring), and a submit before every 8th step (the ring again, so
 * the calls behind it wait for it). Calls and submits share each pair's
 * sequence: the callee checks one order for both paths, the caller the
 * order of its dones. Run with the pair forced near, never near, and near
 * by the timing (a threshold no round trip reaches), parking and spinning.
 */
#define NW 3

static struct {
        struct pc_runtime *rt;
        uint64_t steps;                  /* steps per chain */
        uint64_t seq[NW][NW];            /* [src][dst] next seq, by src */
        uint64_t expect[NW][NW];         /* [dst][src] next seq, by dst */
        uint64_t back[NW][NW];           /* [src][dst] dones so far, by src */
        uint64_t step[NW][NW];           /* [src][dst] steps taken, by src */
        unsigned out[NW][NW];            /* [src][dst] calls out, by src */
        uint64_t last_done[NW][NW];      /* [src][dst] seq + 1 of the last done */
        unsigned start_hints;            /* worker 0's poll hints before any call */
        _Atomic uint64_t calls, dones, bad;
        _Atomic unsigned chains_done;
} NC;

static void nc_check(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        if (DST(arg) != me || SEQ(arg) != NC.expect[me][SRC(arg)]++)
                atomic_fetch_add(&NC.bad, 1);
}

static void nc_submit(void *arg)
{
        nc_check(arg);
}

static void *nc_fn(void *arg)
{
        nc_check(arg);
        return (void *)((uintptr_t)arg ^ 0x5a5a);
}

static void nc_step(unsigned me, unsigned dst);

static void nc_done(void *result, void *arg)
{
        unsigned me = (unsigned)pc_worker_id(), dst = DST(arg);

        if (((uintptr_t)result ^ 0x5a5a) != (uintptr_t)arg || SRC(arg) != me ||
            SEQ(arg) + 1 <= NC.last_done[me][dst])
                atomic_fetch_add(&NC.bad, 1);
        NC.last_done[me][dst] = SEQ(arg) + 1;
        NC.back[me][dst]++;
        atomic_fetch_add(&NC.dones, 1);
        if (--NC.out[me][dst] == 0)
                nc_step(me, dst);
}

static void nc_step(unsigned me, unsigned dst)
{
        uint64_t k = NC.step[me][dst]++;
        unsigned calls = k % 16 == 15 ? 2 + (unsigned)(k / 16 % 3) : 1;

        if (k == NC.steps) {
                if (atomic_fetch_add(&NC.chains_done, 1) + 1 == NW * (NW - 1))
                        pc_runtime_stop(NC.rt);
                return;
        }
        if (k % 8 == 7 && pc_submit(dst, nc_submit, PACK(me, dst, NC.seq[me][dst]++)) != 0)
                atomic_fetch_add(&NC.bad, 1);
        NC.out[me][dst] = calls;
        for (unsigned i = 0; i < calls; i++) {
                void *a = PACK(me, dst, NC.seq[me][dst]++);

                atomic_fetch_add(&NC.calls, 1);
                if (pc_call(dst, nc_fn, a, nc_done, a) != 0)
                        atomic_fetch_add(&NC.bad, 1);
        }
}

static void nc_start(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        (void)arg;
        for (unsigned d = 0; d < NW; d++)
                if (d != me)
                        nc_step(me, d);
}

static void nc_main(void *arg)
{
        (void)arg;
        NC.start_hints = pc__self->poll_hints;
        for (unsigned w = 0; w < NW; w++)
                pc_spawn_on(w, nc_start, NULL);
}

/* Returns the slot calls that took a near pair's last line; *@pairs gets
 * the near and the far pairs the workers hold at the end, summed. */
static uint64_t run_call_chains(uint32_t near_ns, enum pc_idle idle, uint64_t pairs[2])
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        struct pc_shard_stats st;
        struct watchdog wd;
        uint64_t slotted = 0, near = 0, sent = 0, recv = 0;

        pairs[0] = pairs[1] = 0;
        memset(&NC, 0, sizeof(NC));
        pc_test_config(&cfg, NW);
        cfg.idle = idle;
        assert_int_equal(pc_runtime_create(&cfg, &NC.rt), 0);
        pc_shard_opts_init(&so);
        assert_int_equal(so.call_near_ns, 200);
        so.call_near_ns = near_ns;
        assert_int_equal(pc_shard_init(NC.rt, &so), 0);
        NC.steps = pc_test_scaled(20000);
        watchdog_start(&wd, NC.rt, 120);
        assert_int_equal(pc_runtime_run(NC.rt, nc_main, NULL), 0);
        assert_false(watchdog_end(&wd));
        assert_int_equal(atomic_load(&NC.bad), 0);
        assert_int_equal(atomic_load(&NC.chains_done), NW * (NW - 1));
        assert_int_equal(atomic_load(&NC.dones), atomic_load(&NC.calls));
        for (unsigned s = 0; s < NW; s++)
                for (unsigned d = 0; d < NW; d++)
                        assert_int_equal(NC.expect[d][s], NC.seq[s][d]);
        for (unsigned w = 0; w < NW; w++) {
                assert_int_equal(pc_shard_stats(NC.rt, w, &st), 0);
                slotted += st.slot_calls;
                near += st.slot_calls_near;
                sent += st.sent;
                recv += st.received;
                assert_true(st.slot_calls_near <= st.slot_calls);
                /* A worker's pairs: each peer as callee and as caller. */
                assert_true(st.near_pairs + st.far_pairs <= 2 * (NW - 1));
                /* Its idle passes look eagerly for a near pair, and pace
                 * their spin for far pairs only. */
                assert_int_equal(NC.rt->workers[w]->poll_hints,
                                 (st.near_pairs ? PC__POLL_EAGER : 0) |
                                         (st.far_pairs && !st.near_pairs ? PC__POLL_PACE : 0));
                pairs[0] += st.near_pairs;
                pairs[1] += st.far_pairs;
        }
        assert_int_equal(recv, sent);
        /* Both paths carried calls: the slots, and the ring behind a submit. */
        assert_true(slotted > 0);
        assert_true(slotted < atomic_load(&NC.calls));
        assert_nodes_home(NC.rt);
        pc_runtime_destroy(NC.rt);
        return near;
}

static void test_call_chains_near(void **state)
{
        uint64_t pairs[2];

        (void)state;
        for (int i = 0; i < 2; i++) {
                assert_true(run_call_chains(UINT32_MAX, i ? PC_IDLE_ADAPTIVE : PC_IDLE_PARK,
                                            pairs) > 0);
                /* Every caller holds all its callees near from the start,
                 * and its idle passes look eagerly before its first call. */
                assert_true(pairs[0] >= NW * (NW - 1));
                assert_int_equal(NC.start_hints, PC__POLL_EAGER);
                assert_int_equal(pairs[1], 0);
        }
}

static void test_call_chains_far(void **state)
{
        uint64_t pairs[2];

        (void)state;
        /* Never timed: no pair is near or far. */
        assert_int_equal(run_call_chains(0, PC_IDLE_PARK, pairs), 0);
        assert_int_equal(pairs[0] + pairs[1], 0);
        assert_int_equal(run_call_chains(0, PC_IDLE_ADAPTIVE, pairs), 0);
        assert_int_equal(pairs[0] + pairs[1], 0);
        /* Timed, against a bound no round trip is under: never near, and
         * the timed pairs are far (their workers pace their idle spin). */
        assert_int_equal(run_call_chains(1, PC_IDLE_PARK, pairs), 0);
        assert_int_equal(pairs[0], 0);
        assert_true(pairs[1] > 0);
}

/* The timing path: every round trip is under the bound, so each pair
 * turns near after its first timed call. */
static void test_call_chains_timed_near(void **state)
{
        uint64_t pairs[2];

        (void)state;
        for (int i = 0; i < 2; i++) {
                assert_true(run_call_chains(UINT32_MAX - 1,
                                            i ? PC_IDLE_ADAPTIVE : PC_IDLE_PARK, pairs) > 0);
                assert_true(pairs[0] > 0);
                assert_int_equal(pairs[1], 0);
        }
}

/* ---- near or far: the choice by timed calls ------------------------------ */

/* A pair in the state a worker starts it in (mbox_setup.c, alloc_worker()). */
static struct pc__call_out fresh_pair(void)
{
        struct pc__call_out co;

        memset(&co, 0, sizeof(co));
        pc__call_explore_reset(&co);
        return co;
}

/* Feed @n timed calls that take @near_ns while the pair runs near and
 * @far_ns while it runs far, against the bound @bound; returns how many
 * ran near. */
static unsigned feed_by(struct pc__call_out *co, unsigned n, uint64_t near_ns, uint64_t far_ns,
                        uint32_t bound)
{
        unsigned near = 0;

        for (unsigned i = 0; i < n; i++) {
                near += co->near;
                pc__call_choose(co, co->near ? near_ns : far_ns, bound);
        }
        return near;
}

/* The same against the default bound. */
static unsigned feed(struct pc__call_out *co, unsigned n, uint64_t near_ns, uint64_t far_ns)
{
        return feed_by(co, n, near_ns, far_ns, 200);
}

static void test_call_choice_by_bounds(void **state)
{
        struct pc__call_out co = fresh_pair();

        (void)state;
        /* Under the bound: near at once, whatever the other way costs. */
        pc__call_choose(&co, 90, 200);
        assert_true(co.near);
        assert_int_equal(co.rtt_ns, 90);
        assert_int_equal(feed(&co, 1000, 90, 50), 1000);
        /* A parked callee (ms): far, the average clamped, no trial. */
        co = fresh_pair();
        assert_int_equal(feed(&co, 100, 5000000, 5000000), 0);
        assert_false(co.near);
        assert_int_equal(co.trial, 0);
        assert_true(co.rtt_ns <= 2 * PC_CALL_SLOW * 200);
        /* Back under the bound: near again. */
        pc__call_choose(&co, 50, 200);
        for (int i = 0; i < 40 && !co.near; i++)
                pc__call_choose(&co, 50, 200);
        assert_true(co.near);
        /* The tests' bounds: UINT32_MAX - 1 is never left, 1 never met. */
        co = fresh_pair();
        assert_int_equal(feed_by(&co, 1000, 400, 300, UINT32_MAX - 1), 999);
        assert_true(co.near);
        co = fresh_pair();
        assert_int_equal(feed_by(&co, 1000, 60, 400, 1), 0);
        /* The clamp keeps a bound near UINT32_MAX from overflowing. */
        co = fresh_pair();
        pc__call_choose(&co, UINT64_MAX, UINT32_MAX - 1);
        assert_int_equal(co.rtt_ns, UINT32_MAX);
}

static void test_call_choice_tries_both(void **state)
{
        struct pc__call_out co = fresh_pair();
        unsigned near;

        (void)state;
        /* Between the bound and PC_CALL_SLOW times it, the faster way
         * wins, whichever the first timing picked; the other is tried
         * ever more rarely (the trials' share stays under 3 %). */
        near = feed(&co, 10000, 320, 400); /* this Zen 4 guest's far placement */
        assert_true(co.near || co.trial);
        assert_true(near > 9700);
        co = fresh_pair();
        near = feed(&co, 10000, 430, 320); /* a Zen 5 guest's */
        assert_true(!co.near || co.trial);
        assert_true(near < 300);
        /* The machine changes under the pair: it follows within the
         * longest gap between trials and one trial. */
        near = feed(&co, 2 * (PC_CALL_EXPLORE_MAX + PC_CALL_TRIAL), 300, 420);
        assert_true(co.near || co.trial);
        near = feed(&co, 1000, 300, 420);
        assert_true(near > 950);
        /* Equal ways: the kept one stays (a trial must win by a
         * sixteenth), and the trials back off. */
        co = fresh_pair();
        pc__call_choose(&co, 350, 200);
        assert_false(co.near);
        near = feed(&co, 10000, 350, 350);
        assert_true(near < 300);
        assert_int_equal(co.explore_gap, PC_CALL_EXPLORE_MAX);
}

/* ---- near or far: the choice by topology --------------------------------- */

static struct pc_topo *fixture_topo(const char *name)
{
        const char *fx = getenv("PC_FIXTURES");
        char root[4096];
        struct pc_topo *t = NULL;

        snprintf(root, sizeof(root), "%s/%s/sys", fx ? fx : "tests/fixtures", name);
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        return t;
}

static void test_call_choice_by_topology(void **state)
{
        struct pc_topo *t;

        (void)state;
        /* EPYC in NPS4: 32 cores, 4 per L3, 2 L3s per node; CPU c + 32 is
         * core c's second thread. */
        t = fixture_topo("epyc-nps4");
        assert_true(pc__call_topo_near(t, 0, 32, true, false));  /* SMT siblings */
        assert_true(pc__call_topo_near(t, 0, 1, true, false));   /* one L3 */
        assert_true(pc__call_topo_near(t, 0, 4, true, false));   /* one node */
        assert_false(pc__call_topo_near(t, 0, 8, true, false));  /* nodes apart */
        assert_false(pc__call_topo_near(t, 0, 1, false, false)); /* unpinned */
        assert_false(pc__call_topo_near(t, 0, 1, true, true));   /* a guest */
        assert_false(pc__call_topo_near(t, 0, -1, true, false));
        assert_false(pc__call_topo_near(t, 0, (int)t->ncpus, true, false));
        pc_topo_free(t);
        /* Two sockets: CPUs 0-3 and 4-7, their siblings 8-15. */
        t = fixture_topo("intel-2s-smt");
        assert_true(pc__call_topo_near(t, 1, 9, true, false));
        assert_true(pc__call_topo_near(t, 0, 3, true, false));
        assert_false(pc__call_topo_near(t, 0, 4, true, false));
        pc_topo_free(t);
        /* An offline CPU, and a topology the loader gave up on. */
        t = fixture_topo("offline-cpus");
        assert_true(pc__call_topo_near(t, 0, 5, true, false));
        assert_false(pc__call_topo_near(t, 0, 6, true, false));
        pc_topo_free(t);
        t = fixture_topo("broken");
        assert_true(t->flat_fallback);
        assert_false(pc__call_topo_near(t, 0, 1, true, false));
        pc_topo_free(t);
        assert_false(pc__call_topo_near(NULL, 0, 1, true, false));
}

/* ---- idle polls inspect no ring, with 64 workers ------------------------- */

#define IW 64
#define IDLE_ITERS 50

struct idle_w {
        struct pc_poller *p;
        unsigned iters;
        uint64_t polls0, inspected0, idle0;
        uint64_t inspected_end;
} __attribute__((aligned(64)));

static struct {
        struct pc_runtime *rt;
        struct idle_w w[IW];
        _Atomic unsigned idle_finished, got;
        _Atomic uint64_t bad_idle, bad_busy, errors;
} I;

static void idle_recv(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        struct pc_shard_stats st;

        (void)arg;
        /* This message is the only traffic since the idle window: exactly
         * one ring was inspected to find it. */
        pc_shard_stats(I.rt, me, &st);
        if (st.rings_inspected - I.w[me].inspected_end != 1)
                atomic_fetch_add(&I.bad_busy, 1);
        if (atomic_fetch_add(&I.got, 1) + 1 == IW)
                pc_runtime_stop(I.rt);
}

static void send_to_next(void *arg)
{
        (void)arg;
        if (pc_submit(((unsigned)pc_worker_id() + 1) % IW, idle_recv, NULL) != 0)
                atomic_fetch_add(&I.errors, 1);
}

/* Registered after the mailbox poller, so each call of this poll follows
 * one mailbox poll in the same iteration. Returning 1 keeps the worker
 * iterating (no parking) for IDLE_ITERS iterations with no traffic. */
static unsigned idle_poll(void *arg)
{
        struct idle_w *iw = arg;
        unsigned me = (unsigned)pc_worker_id();
        struct pc_shard_stats st;

        if (++iw->iters < IDLE_ITERS)
                return 1;
        pc_shard_stats(I.rt, me, &st);
        if (st.rings_inspected != iw->inspected0 || st.polls - iw->polls0 < IDLE_ITERS - 1 ||
            st.idle_polls - iw->idle0 < IDLE_ITERS - 1)
                atomic_fetch_add(&I.bad_idle, 1);
        iw->inspected_end = st.rings_inspected;
        pc_poller_unregister(iw->p);
        /* The last worker out of its idle window starts the traffic. */
        if (atomic_fetch_add(&I.idle_finished, 1) + 1 == IW)
                for (unsigned w = 0; w < IW; w++)
                        pc_spawn_on(w, send_to_next, NULL);
        return 0;
}

static const struct pc_poller_ops idle_ops = {.name = "idle-probe", .poll = idle_poll};

static void idle_probe(void *arg)
{
        struct idle_w *iw = arg;
        struct pc_shard_stats st;

        pc_shard_stats(I.rt, (unsigned)pc_worker_id(), &st);
        iw->polls0 = st.polls;
        iw->inspected0 = st.rings_inspected;
        iw->idle0 = st.idle_polls;
        if (pc_poller_register(&idle_ops, iw, &iw->p) != 0)
                atomic_fetch_add(&I.errors, 1);
}

/* Task spawns use the core's inboxes, not the mailboxes. */
static void idle_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < IW; w++)
                pc_spawn_on(w, idle_probe, &I.w[w]);
}

static void test_idle_poll_inspects_no_ring(void **state)
{
        struct pc_shard_opts so;
        struct pc_config cfg;

        (void)state;
        memset(&I, 0, sizeof(I));
        pc_test_config(&cfg, IW);
        assert_int_equal(pc_runtime_create(&cfg, &I.rt), 0);
        assert_int_equal(pc_runtime_workers(I.rt), IW);
        pc_shard_opts_init(&so);
        so.ring_size = 4;
        so.blocking_threads = 0;
        assert_int_equal(pc_shard_init(I.rt, &so), 0);
        assert_int_equal(pc_runtime_run(I.rt, idle_main, NULL), 0);
        assert_int_equal(atomic_load(&I.errors), 0);
        assert_int_equal(atomic_load(&I.idle_finished), IW);
        assert_int_equal(atomic_load(&I.bad_idle), 0);
        assert_int_equal(atomic_load(&I.got), IW);
        assert_int_equal(atomic_load(&I.bad_busy), 0);
        pc_runtime_destroy(I.rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_storm_fifo_exactly_once_tpc),
                cmocka_unit_test(test_storm_fifo_exactly_once_elastic),
                cmocka_unit_test(test_storm_call_heavy_tpc),
                cmocka_unit_test(test_storm_call_heavy_elastic),
                cmocka_unit_test(test_storm_bursts_tpc),
                cmocka_unit_test(test_storm_bursts_elastic),
                cmocka_unit_test(test_storm_big_ring_tpc),
                cmocka_unit_test(test_storm_big_ring_elastic),
                cmocka_unit_test(test_burst_errors),
                cmocka_unit_test(test_burst_into_full_ring),
                cmocka_unit_test(test_stop_mid_storm_loses_nothing),
                cmocka_unit_test(test_call_chains_near),
                cmocka_unit_test(test_call_chains_far),
                cmocka_unit_test(test_call_chains_timed_near),
                cmocka_unit_test(test_call_choice_by_bounds),
                cmocka_unit_test(test_call_choice_tries_both),
                cmocka_unit_test(test_call_choice_by_topology),
                cmocka_unit_test(test_overflow_sender_sleeps_and_is_woken),
                cmocka_unit_test(test_ping_pong_parking),
                cmocka_unit_test(test_idle_poll_inspects_no_ring),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
