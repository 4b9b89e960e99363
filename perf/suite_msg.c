/* SPDX-License-Identifier: MIT */
/*
 * msg: cross-core messages between two workers.
 *
 *   submit  one-way pc_submit() throughput from worker 0 to worker 1
 *           (msgs_per_sec); beside it peer:rte_ring, DPDK's SP/SC ring
 *           between two threads pinned to the same two CPUs, bursts of 32.
 *   submit-burst32  the same with pc_submit_burst() of 32, the peer's
 *           own burst, beside the same peer.
 *   call    pc_call() round trip, worker 0 -> 1 -> 0, one call in flight
 *           (call_rtt_ns, mean per run; the table shows the median run);
 *           beside it peer:pingpong, two pinned threads bouncing a counter
 *           on one cache line, each spinning with nothing between two
 *           looks as a user writes it: the hardware's floor for a round
 *           trip (a floor: a call that measures faster gets no ratio to
 *           it), and peer:rte_ring_rtt, a request and a reply rte_ring
 *           between two pinned threads: the best off-the-shelf ring's
 *           round trip.
 *   idle-Nw the cost of an idle loop iteration with N workers (2, 8, 32),
 *           thread-per-core only.
 *
 * The percore modes and the peers of a case run in alternated rounds, all
 * on the two CPUs a 2-worker runtime places its workers on. Every timed
 * thread, the workers and the peers' alike, reads sched_getcpu() before
 * and after its timed part: a run that was not where it was placed, or
 * during which the line probe says the host moved a vCPU, is run again
 * (retried(), up to MSG_TRIES in all) and not used after the last try.
 * The suite says which CPUs those are and whether the topology calls them
 * SMT siblings (table footer, JSON "info").
 *
 * Both sides run the same sink per message. The submit driver keeps at most
 * WINDOW messages in flight (reading the receiver's published count once
 * per batch), so it measures the rings, not the overflow: the peer's
 * producer waits on a full ring, and pc_submit() never fails, so without
 * a window that stays clear of a full ring (the count lags by up to 63,
 * and the receiver frees slots only after running up to 256 in place)
 * most messages would take the overflow path instead.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "msg_runs.h"
#include "pc_shard.h"
#include "peers/msg_peers.h"
#include "suite_msg.h"

#define MSG_RING 1024
#define SUBMIT_BATCH 64
#define WINDOW (MSG_RING / 2)
#define RUN_EXTEND_MAX 100
#define MSG_TRIES 3 /* runs of a side per round while the host moves a vCPU */

/* ---- percore runs -------------------------------------------------------- */

struct msg_ctx {
        struct pc_runtime *rt;
        struct pc_timer stop_timer;
        struct pc_task driver; /* sticky: elastic mode must not move it */
        uint64_t duration_ns;
        uint64_t t0, t1;
        uint64_t sent;    /* worker 0 */
        uint64_t done_at_stop;
        unsigned extended; /* periods added to a run that had done nothing */
        /* call case: on the caller's worker (worker 0, or the one an
         * elastic fiber moved to), read there by the stop timer */
        _Atomic uint64_t rounds;
        /* Where each worker ran, read on it before the clock starts and
         * after it stops; the main thread reads them once the run is over. */
        struct msg_cpu cpu[MSG_WORKERS];
        uint64_t wall0[MSG_WORKERS], cpu0[MSG_WORKERS];
        int mark_rc;
        pc_task_fn timed; /* the case's timed part, on worker 0 */
        struct msg_sink sink; /* worker 1 */
};

static struct msg_ctx C;

/* How many messages a driver run may send: what keeps WINDOW in flight,
 * at most SUBMIT_BATCH. */
static uint64_t window_room(void)
{
        uint64_t inflight =
            C.sent - atomic_load_explicit(&C.sink.pub, memory_order_relaxed);
        uint64_t n = inflight < WINDOW ? WINDOW - inflight : 0;

        return n < SUBMIT_BATCH ? n : SUBMIT_BATCH;
}

static void submit_driver(void *arg)
{
        uint64_t n;

        (void)arg;
        if (pc_runtime_stopping(C.rt))
                return;
        n = window_room();
        /* Counted in a register and stored once: a store per message to a
         * global (which the calls force) is work the peer's producer does
         * not do. */
        uint64_t sent = 0;
        for (uint64_t i = 0; i < n; i++)
                sent += pc_submit(1, msg_sink_fn, &C.sink) == 0;
        C.sent += sent;
        pc_spawn_task(&C.driver);
}

/* The submit-burst32 case's driver: the same window, in bursts of 32
 * through pc_submit_burst(), as the rte_ring peer enqueues. */
#define SUBMIT_BURST 32

static void submit_burst_driver(void *arg)
{
        void *args[SUBMIT_BURST];
        uint64_t n;

        (void)arg;
        if (pc_runtime_stopping(C.rt))
                return;
        n = window_room();
        for (unsigned j = 0; j < SUBMIT_BURST; j++)
                args[j] = &C.sink;
        while (n >= SUBMIT_BURST) {
                int rc = pc_submit_burst(1, msg_sink_fn, args, SUBMIT_BURST);

                if (rc <= 0)
                        break;
                C.sent += (uint64_t)rc;
                n -= (uint64_t)rc;
        }
        pc_spawn_task(&C.driver);
}

/* What issues the call case's round trips (see msg_call_rtt()). */
static pc_task_fn call_start;

bool msg_call_round(void)
{
        /* One writer at a time; relaxed, so the callback path pays no
         * read-modify-write. */
        atomic_store_explicit(&C.rounds,
                              atomic_load_explicit(&C.rounds, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return !pc_runtime_stopping(C.rt);
}

static void call_back(void *result, void *arg)
{
        (void)result;
        (void)arg;
        if (msg_call_round())
                pc_call(1, msg_echo, NULL, call_back, NULL);
}

static void call_first(void *arg)
{
        (void)arg;
        pc_call(1, msg_echo, NULL, call_back, NULL);
}

static void mark_before(void *arg)
{
        (void)arg;
        int w = pc_worker_id();

        C.cpu[w].before = sched_getcpu();
        C.cpu[w].switches = -msg_thread_preemptions();
        C.wall0[w] = pc_now_ns();
        C.cpu0[w] = msg_thread_cpu_ns();
}

static void mark_after(void *arg)
{
        (void)arg;
        int w = pc_worker_id();
        uint64_t wall = pc_now_ns() - C.wall0[w];

        C.cpu[w].after = sched_getcpu();
        C.cpu[w].switches += msg_thread_preemptions();
        C.cpu[w].oncpu =
            wall ? (double)(msg_thread_cpu_ns() - C.cpu0[w]) / (double)wall : NAN;
}

static void stop_now(void *arg)
{
        (void)arg;
        pc_runtime_stop(C.rt);
}

/* Every worker said where it is: the clock starts. */
static void timed_start(void *arg)
{
        (void)arg;
        C.timed(NULL);
}

/* The case's main: where the workers are first, then the timed part. */
static void case_main(void *arg)
{
        (void)arg;
        C.mark_rc = pc_for_each_worker(mark_before, NULL, timed_start, NULL);
        if (C.mark_rc)
                pc_runtime_stop(C.rt);
}

/* End the run with @done counted, or, where a loaded machine let none
 * finish in its time (a warm-up has a quarter of it), run on another such
 * period, at most RUN_EXTEND_MAX times: the rate stays what was done over
 * the time it took. Then every worker says where it is, and the runtime
 * stops; what runs meanwhile is not counted. */
static void end_run(struct pc_timer *t, uint64_t done)
{
        if (done == 0 && C.extended++ < RUN_EXTEND_MAX &&
            pc_timer_start(t, C.duration_ns, 0) == 0)
                return;
        C.t1 = pc_now_ns();
        C.done_at_stop = done;
        C.mark_rc = pc_for_each_worker(mark_after, NULL, stop_now, NULL);
        if (C.mark_rc)
                pc_runtime_stop(C.rt);
}

static void stop_submit(struct pc_timer *t, void *arg)
{
        (void)arg;
        end_run(t, atomic_load_explicit(&C.sink.pub, memory_order_relaxed));
}

static void stop_call(struct pc_timer *t, void *arg)
{
        (void)arg;
        end_run(t, atomic_load_explicit(&C.rounds, memory_order_relaxed));
}

static void submit_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_submit, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        pc_task_init(&C.driver, submit_driver, NULL, PC_STICKY);
        submit_driver(NULL);
}

static void submit_burst_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_submit, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        pc_task_init(&C.driver, submit_burst_driver, NULL, PC_STICKY);
        submit_burst_driver(NULL);
}

static void call_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_call, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        call_start(NULL);
}

static int msg_runtime(const struct bench_opts *o, enum pc_mode mode,
                       struct pc_runtime **rt)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        int rc;

        bench_config(&cfg, o, mode);
        cfg.workers = MSG_WORKERS;
        rc = pc_runtime_create(&cfg, rt);
        if (rc)
                return rc;
        if (pc_runtime_workers(*rt) != MSG_WORKERS) {
                pc_runtime_destroy(*rt);
                return -EINVAL;
        }
        pc_shard_opts_init(&so);
        so.ring_size = MSG_RING;
        so.blocking_threads = 0;
        rc = pc_shard_init(*rt, &so);
        if (rc)
                pc_runtime_destroy(*rt);
        return rc;
}

static double run_case(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       const char *kase, pc_task_fn main_fn)
{
        struct msg_probe before = msg_probe_now(), after;
        double v;
        bool pin;
        int rc;

        memset(&C, 0, sizeof(C));
        rc = msg_runtime(o, mode, &C.rt);
        if (rc)
                return rc;
        pin = pc_runtime_config(C.rt)->pin;
        for (unsigned w = 0; w < MSG_WORKERS; w++)
                C.cpu[w] = (struct msg_cpu){pin ? pc_runtime_worker_cpu(C.rt, w) : -1, -1,
                                            -1, 0, NAN};
        C.duration_ns = (uint64_t)(o->duration * 1e9);
        C.timed = main_fn;
        *workers = MSG_WORKERS;
        rc = pc_runtime_run(C.rt, case_main, NULL);
        if (rc == 0 && main_fn == call_main) {
                struct pc_shard_stats st;

                if (pc_shard_stats(C.rt, 0, &st) == 0) {
                        msg_call_pairs.runs++;
                        msg_call_pairs.near_runs += st.near_pairs != 0;
                        msg_call_pairs.far_runs +=
                            st.near_pairs == 0 && st.far_pairs != 0;
                        msg_call_pairs.slot_calls += st.slot_calls;
                        msg_call_pairs.slot_calls_near += st.slot_calls_near;
                }
        }
        pc_runtime_destroy(C.rt);
        after = msg_probe_now();
        if (rc == 0)
                rc = C.mark_rc;
        if (rc)
                return rc;
        if (C.done_at_stop == 0 || C.t1 <= C.t0)
                return -EIO;
        if (main_fn == submit_main || main_fn == submit_burst_main)
                v = (double)C.done_at_stop / ((double)(C.t1 - C.t0) / 1e9);
        else
                v = (double)(C.t1 - C.t0) / (double)C.done_at_stop;
        return msg_checked(kase, pc_mode_name(mode), C.cpu, v, &before, &after);
}

static double submit_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        (void)ctx;
        return run_case(o, mode, workers, "submit", submit_main);
}

static double submit_burst_run(const struct bench_opts *o, enum pc_mode mode,
                               unsigned *workers, void *ctx)
{
        (void)ctx;
        return run_case(o, mode, workers, "submit-burst32", submit_burst_main);
}

double msg_call_rtt(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    pc_task_fn start)
{
        call_start = start;
        return run_case(o, mode, workers, "call", call_main);
}

double msg_call_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    void *ctx)
{
        (void)ctx;
        return msg_call_rtt(o, mode, workers, call_first);
}

/* ---- idle iteration cost against worker count ---------------------------- */

/*
 * Every worker idles in a polling loop with its mailbox poller registered;
 * the cost is the worker thread's CPU time per loop iteration, so workers
 * sharing a CPU (more workers than CPUs) do not inflate it. With doorbells
 * it should not grow with the worker count.
 */
struct idle_ctx {
        struct pc_runtime *rt;
        struct pc_timer stop;
        uint64_t duration_ns;
        uint64_t cpu0[PC_MAX_WORKERS], cpu1[PC_MAX_WORKERS];
        uint64_t it0[PC_MAX_WORKERS], it1[PC_MAX_WORKERS];
};

static struct idle_ctx I;

static uint64_t my_iterations(void)
{
        struct pc_worker_stats st[PC_MAX_WORKERS];
        int n = pc_stats_snapshot(I.rt, st, PC_MAX_WORKERS);
        int me = pc_worker_id();

        return me >= 0 && me < n ? st[me].iterations : 0;
}

static void idle_mark_start(void *arg)
{
        (void)arg;
        I.cpu0[pc_worker_id()] = msg_thread_cpu_ns();
        I.it0[pc_worker_id()] = my_iterations();
}

static void idle_mark_end(void *arg)
{
        (void)arg;
        I.cpu1[pc_worker_id()] = msg_thread_cpu_ns();
        I.it1[pc_worker_id()] = my_iterations();
}

static void idle_stop(void *arg)
{
        (void)arg;
        pc_runtime_stop(I.rt);
}

static void idle_timer(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        pc_for_each_worker(idle_mark_end, NULL, idle_stop, NULL);
}

static void idle_started(void *arg)
{
        (void)arg;
        pc_timer_init(&I.stop, idle_timer, NULL);
        pc_timer_start(&I.stop, I.duration_ns, 0);
}

static void idle_main(void *arg)
{
        (void)arg;
        pc_for_each_worker(idle_mark_start, NULL, idle_started, NULL);
}

static double idle_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *ctx)
{
        unsigned n = *(unsigned *)ctx;
        struct pc_shard_opts so;
        struct pc_config cfg;
        double sum = 0;
        int rc;

        memset(&I, 0, sizeof(I));
        bench_config(&cfg, o, mode);
        cfg.workers = n;
        cfg.pin = n <= 2; /* more workers than this machine's CPUs share them */
        rc = pc_runtime_create(&cfg, &I.rt);
        if (rc)
                return rc;
        pc_shard_opts_init(&so);
        so.blocking_threads = 0;
        rc = pc_shard_init(I.rt, &so);
        if (rc == 0) {
                I.duration_ns = (uint64_t)(o->duration * 1e9);
                rc = pc_runtime_run(I.rt, idle_main, NULL);
        }
        *workers = pc_runtime_workers(I.rt);
        pc_runtime_destroy(I.rt);
        if (rc)
                return rc;
        for (unsigned w = 0; w < n; w++) {
                if (I.it1[w] <= I.it0[w])
                        return -EIO;
                sum += (double)(I.cpu1[w] - I.cpu0[w]) / (double)(I.it1[w] - I.it0[w]);
        }
        return sum / n;
}

/* A peer of a case; a floor bounds what percore can reach. */
struct msg_peer {
        const char *name;
        bench_run_fn fn;
        bool floor;
};

/* A side's run with its retries (retried()). */
struct msg_try {
        bench_run_fn fn;
        void *ctx;
        const char *kase, *name;
};

/*
 * Run a side; a run during which the host moved a vCPU (BENCH_MOVED) is
 * run again, up to MSG_TRIES in all. This host moves them several times a
 * second, so most 1-second runs of a round would otherwise be lost and a
 * case could end with no round in which a side and its peer pair.
 */
static double retried(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                      void *ctx)
{
        const struct msg_try *t = ctx;
        double v = BENCH_MOVED;

        for (unsigned a = 0; a < MSG_TRIES && v == BENCH_MOVED; a++) {
                if (a) {
                        bench_progress(
                            "msg/%s %s: the host moved a vCPU: run again (try %u "
                            "of %u)",
                            t->kase, t->name, a + 1, MSG_TRIES);
                        msg_drop_last_note(t->kase, t->name);
                }
                v = t->fn(o, mode, workers, t->ctx);
        }
        return v;
}

/* One case: the percore modes that run two workers, then @np peers. */
static int msg_case(const struct bench_opts *o, const char *kase, const char *metric,
                    const char *unit, bool lower_is_better, bench_run_fn fn,
                    const struct msg_peer *peers, unsigned np)
{
        struct bench_side sides[BENCH_MAX_SIDES];
        struct msg_try tries[BENCH_MAX_SIDES];
        unsigned n = 0;
        int rc;

        for (unsigned m = 0; m < o->nmodes && n < BENCH_MAX_SIDES; m++)
                if (o->modes[m] != PC_MODE_DETERMINISTIC) {
                        tries[n] =
                            (struct msg_try){fn, NULL, kase, pc_mode_name(o->modes[m])};
                        sides[n] = (struct bench_side){pc_mode_name(o->modes[m]),
                                                       o->modes[m], retried, &tries[n]};
                        n++;
                }
        for (unsigned p = 0; p < np && n < BENCH_MAX_SIDES; p++) {
                tries[n] =
                    (struct msg_try){peers[p].fn, (void *)kase, kase, peers[p].name};
                sides[n] =
                    (struct bench_side){peers[p].name, PC_MODE_TPC, retried, &tries[n]};
                n++;
        }
        rc = bench_compare(o, "msg", kase, metric, unit, lower_is_better, sides, n);
        for (unsigned p = 0; p < np && rc == 0; p++)
                if (peers[p].floor)
                        bench_set_floor("msg", kase, peers[p].name);
        return rc;
}

int suite_msg(const struct bench_opts *o)
{
        static unsigned counts[] = {2, 8, 32};
        static const char *cases[] = {"idle-2w", "idle-8w", "idle-32w"};
        struct pc_runtime *rt;
        int rc;

        /* PERCORE_MODE=deterministic makes every runtime of the process one
         * worker, the peers' CPU probe included. */
        if (o->nmodes == 1 && o->modes[0] == PC_MODE_DETERMINISTIC) {
                bench_progress("msg: skipped in deterministic mode (one worker)");
                return 0;
        }
        static const struct msg_peer submit_peers[] = {
                {"peer:rte_ring", msg_side_rte_ring, false},
        };
        /* A call can beat the ring pair (one line each way against a slot
         * and a tail each way), never the bounced line. */
        static const struct msg_peer call_peers[MSG_MAX_PEERS] = {
                {"peer:pingpong", msg_side_pingpong, true},
                {"peer:rte_ring_rtt", msg_side_rte_ring_rtt, false},
        };

        rc = msg_runtime(o, PC_MODE_TPC, &rt);
        if (rc)
                return rc;
        msg_find_placement(rt, &msg_where);
        pc_runtime_destroy(rt);
        msg_runs_reset();
        rc = msg_case(o, "submit", "msgs_per_sec", "msgs/s", false, submit_run,
                      submit_peers, 1);
        if (rc == 0)
                rc = msg_case(o, "submit-burst32", "msgs_per_sec", "msgs/s", false,
                              submit_burst_run, submit_peers, 1);
        if (rc == 0)
                rc = msg_case(o, "call", "call_rtt_ns", "ns", true, msg_call_run,
                              call_peers, MSG_MAX_PEERS);
        msg_placement_info();
        /* The fiber suite borrows the call case: it runs without probes
         * or conditions, its sides paired as any suite's. */
        msg_where.known = false;
        for (unsigned i = 0; i < 3 && rc == 0; i++) {
                const struct bench_side idle = {"tpc", PC_MODE_TPC, idle_run, &counts[i]};

                rc = bench_compare(o, "msg", cases[i], "idle_iter_ns", "ns", true, &idle,
                                   1);
        }
        return rc;
}
