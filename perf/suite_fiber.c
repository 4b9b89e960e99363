/* SPDX-License-Identifier: MIT */
/*
 * fiber: what a fiber costs. On one worker:
 *
 *   switch      a yield round trip (yield_rtt_ns): one fiber alone on its
 *               worker calls pc_fiber_yield() in a loop; with nothing
 *               queued before it, a call goes on in place as the worker's
 *               next task, and switches out to the worker's loop where the
 *               loop would look at the injector or timers first or run its
 *               pollers (every PC_TASK_BUDGET tasks);
 *   pingpong    two fibers yielding to each other: ns per round trip, A to
 *               B and back (pingpong_rtt_ns), each yield a switch straight
 *               to the other fiber (through the worker's loop at its
 *               turns);
 *   spawn_join  a parent fiber spawns 64 children, each returning its
 *               index, then joins each: ns per child (ns_per_fiber).
 *
 * Each fiber times itself: a clock read every 1024 operations until the
 * run's length has passed. Beside them, in alternated rounds, the peers
 * time the same shapes the same way, each process on the CPU percore's
 * worker gets (peers/fiber_peers.h): peer:go, goroutines with GOMAXPROCS=1
 * (runtime.Gosched; a round trip over two unbuffered channels, the way Go
 * code hands a value over; go func with a sync.WaitGroup), and peer:tokio,
 * tasks on a current_thread runtime (yield_now; two tasks yielding;
 * tokio::spawn and the await of each JoinHandle). A peer not built is
 * reported skipped.
 *
 * Between two workers:
 *
 *   call_await  a fiber's pc_call_await() round trip to the other worker
 *               (call_rtt_ns), timed by the msg suite's call case on its
 *               runtime and callee; beside it "base:pc_call", that case's
 *               own side, pc_call() with a callback: what the wait costs;
 *   echo-tcp64  pc-echo --fibers ("fibers": a fiber per connection reading
 *               and writing) beside pc-echo's callbacks ("base:callbacks"),
 *               requests/s, one worker, the client on the same CPUs
 *               (echo_styles(), suite_echo.c).
 *
 * With one worker, elastic mode takes the thread-per-core path (nothing to
 * steal from), so the one-worker cases run it only when it is the one mode
 * asked for.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "msg_pair.h"
#include "pc_shard.h"
#include "peers/fiber_peers.h"
#include "suite_msg.h"

#define CHECK 1024 /* operations between clock reads, as in the peers */
#define BATCH 64   /* children per spawn_join batch, as in the peers */

struct fiber_ctx {
        struct pc_runtime *rt;
        uint64_t duration_ns;
        uint64_t ops, ns; /* the timed fiber's count and how long it took */
        int rc;
        bool done; /* the timed fiber ended: pingpong's partner ends too */
};

static struct fiber_ctx F;

/* CHECK more operations done since @t0: whether the run is over. */
static bool lap(uint64_t t0)
{
        uint64_t now = pc_now_ns();

        F.ops += CHECK;
        if (now - t0 < F.duration_ns)
                return false;
        F.ns = now - t0;
        return true;
}

static int yield_loop(void)
{
        uint64_t t0 = pc_now_ns();

        do {
                for (unsigned i = 0; i < CHECK; i++)
                        pc_fiber_yield();
        } while (!lap(t0));
        return 0;
}

static void *partner(void *arg)
{
        (void)arg;
        while (!F.done)
                pc_fiber_yield();
        return NULL;
}

static int pingpong(void)
{
        int rc = pc_fiber_spawn(partner, NULL, NULL);

        return rc ? rc : yield_loop();
}

static void *child(void *arg)
{
        return arg;
}

/* Spawn a batch, then join each; the children's results add to *@sum. */
static int batch(uint64_t *sum)
{
        struct pc_fiber *kids[BATCH];
        unsigned n = 0;
        int rc = 0;

        while (n < BATCH && (rc = pc_fiber_spawn(child, (void *)(uintptr_t)n, &kids[n])) == 0)
                n++;
        for (unsigned i = 0; i < n; i++) {
                void *r;

                if (pc_fiber_join(kids[i], &r) == 0)
                        *sum += (uintptr_t)r;
        }
        return rc;
}

static int spawn_join(void)
{
        uint64_t t0 = pc_now_ns(), sum = 0;
        int rc = 0;

        do {
                for (unsigned b = 0; b < CHECK / BATCH && rc == 0; b++)
                        rc = batch(&sum);
        } while (rc == 0 && !lap(t0));
        /* Every child ran, and its parent got what it returned. */
        if (rc == 0 && sum != F.ops / BATCH * (BATCH * (BATCH - 1) / 2))
                rc = -EIO;
        return rc;
}

struct fiber_case {
        const char *name, *metric;
        int (*fn)(void); /* the timed fiber's body: 0 or -errno */
};

static const struct fiber_case cases[] = {
        {"switch", "yield_rtt_ns", yield_loop},
        {"pingpong", "pingpong_rtt_ns", pingpong},
        {"spawn_join", "ns_per_fiber", spawn_join},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void *timed(void *arg)
{
        const struct fiber_case *c = arg;

        F.rc = c->fn();
        F.done = true;
        pc_runtime_stop(F.rt);
        return NULL;
}

static void fiber_main(void *arg)
{
        F.rc = pc_fiber_spawn(timed, arg, NULL);
        if (F.rc)
                pc_runtime_stop(F.rt);
}

static double fiber_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        struct pc_config cfg;
        int rc;

        memset(&F, 0, sizeof(F));
        bench_config(&cfg, o, mode);
        if (mode != PC_MODE_DETERMINISTIC)
                cfg.workers = 1;
        rc = pc_runtime_create(&cfg, &F.rt);
        if (rc)
                return rc;
        F.duration_ns = (uint64_t)(o->duration * 1e9);
        *workers = pc_runtime_workers(F.rt);
        rc = pc_runtime_run(F.rt, fiber_main, ctx);
        pc_runtime_destroy(F.rt);
        if (rc == 0)
                rc = F.rc;
        if (rc)
                return rc;
        return F.ops ? (double)F.ns / (double)F.ops : -EIO;
}

/* ---- peers ------------------------------------------------------------------ */

struct peer_side {
        enum fiber_peer peer;
        const struct fiber_case *c;
};

/* The CPU the worker of a one-worker runtime is pinned to (the bench's
 * config and the environment), or -1 when nothing is pinned. */
static int worker_cpu(const struct bench_opts *o, int *cpu)
{
        struct pc_runtime *rt;
        struct pc_config cfg;
        int rc;

        bench_config(&cfg, o, PC_MODE_TPC);
        cfg.workers = 1;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc)
                return rc;
        *cpu = pc_runtime_config(rt)->pin ? pc_runtime_worker_cpu(rt, 0) : -1;
        pc_runtime_destroy(rt);
        return 0;
}

static double peer_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *ctx)
{
        const struct peer_side *s = ctx;
        const char *what;
        int cpu, rc;

        (void)mode;
        if (!fiber_peer_available(s->peer, &what)) {
                bench_progress("fiber/%s: %s not built: %s", s->c->name,
                               fiber_peer_name(s->peer), what);
                return -ENOTSUP;
        }
        rc = worker_cpu(o, &cpu);
        if (rc)
                return rc;
        *workers = 1;
        return fiber_peer_run(s->peer, s->c->name, cpu, o->duration);
}

/* The percore sides of a case: every mode asked for but @skip. */
static unsigned mode_sides(const struct bench_opts *o, enum pc_mode skip, bench_run_fn fn,
                           const void *ctx, struct bench_side *sides)
{
        unsigned n = 0;

        for (unsigned m = 0; m < o->nmodes; m++)
                if (o->modes[m] != skip)
                        sides[n++] = (struct bench_side){pc_mode_name(o->modes[m]),
                                                         o->modes[m], fn, (void *)ctx};
        return n;
}

/* ---- call_await ------------------------------------------------------------- */

static void *await_loop(void *arg)
{
        void *r = NULL;
        int rc;

        (void)arg;
        do {
                /* The other worker from wherever the fiber runs now: an
                 * elastic one may have been taken by the callee's worker. */
                rc = pc_call_await(pc_worker_id() == 0 ? 1 : 0, msg_echo, &F, &r);
                if (rc == 0 && r != &F)
                        rc = -EIO;
                if (rc) {
                        F.rc = rc;
                        pc_runtime_stop(pc_runtime_current());
                        break;
                }
        } while (msg_call_round());
        return NULL;
}

static void await_start(void *arg)
{
        (void)arg;
        F.rc = pc_fiber_spawn(await_loop, NULL, NULL);
        if (F.rc)
                pc_runtime_stop(pc_runtime_current());
}

static double await_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        double v;

        (void)ctx;
        memset(&F, 0, sizeof(F));
        v = msg_call_rtt(o, mode, workers, await_start);
        return F.rc ? F.rc : v;
}

static int call_await(const struct bench_opts *o)
{
        struct bench_side sides[BENCH_MAX_SIDES];
        unsigned n = mode_sides(o, PC_MODE_DETERMINISTIC, await_run, NULL, sides);

        if (n == 0) {
                bench_progress("fiber/call_await: skipped in deterministic mode (one worker)");
                return 0;
        }
        sides[n++] = (struct bench_side){"base:pc_call", PC_MODE_TPC, msg_call_run, NULL};
        return bench_compare(o, "fiber", "call_await", "call_rtt_ns", "ns", true, sides, n);
}

/* ---- the suite ---------------------------------------------------------------- */

int suite_fiber(const struct bench_opts *o)
{
        static const enum fiber_peer peers[] = {FIBER_PEER_GO, FIBER_PEER_TOKIO};
        static struct peer_side ps[NCASES][2];
        struct bench_side sides[BENCH_MAX_SIDES];
        /* Elastic is left out where thread-per-core runs (see the top); a
         * skip of tpc then skips nothing, tpc not being asked for. */
        enum pc_mode skip = PC_MODE_TPC;
        const char *what;
        int rc = 0;

        for (unsigned p = 0; p < 2; p++)
                if (fiber_peer_available(peers[p], &what))
                        bench_progress("fiber: %s is %s", fiber_peer_name(peers[p]), what);
        for (unsigned m = 0; m < o->nmodes; m++)
                if (o->modes[m] == PC_MODE_TPC)
                        skip = PC_MODE_ELASTIC;
        for (unsigned c = 0; c < NCASES && rc == 0; c++) {
                unsigned n = mode_sides(o, skip, fiber_run, &cases[c], sides);

                for (unsigned p = 0; p < 2; p++) {
                        ps[c][p] = (struct peer_side){peers[p], &cases[c]};
                        sides[n++] = (struct bench_side){fiber_peer_name(peers[p]),
                                                         PC_MODE_TPC, peer_run, &ps[c][p]};
                }
                rc = bench_compare(o, "fiber", cases[c].name, cases[c].metric, "ns", true,
                                   sides, n);
        }
        if (rc == 0)
                rc = call_await(o);
#ifdef PC_HAVE_URING
        return rc ? rc : echo_styles(o, "fiber", "echo-tcp64");
#else
        /* The echo case serves TCP on the kernel backend (liburing). */
        if (rc == 0)
                bench_progress("fiber/echo-tcp64: skipped (built without liburing)");
        return rc;
#endif
}
