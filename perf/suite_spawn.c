/* SPDX-License-Identifier: MIT */
/*
 * spawn: local spawn+run throughput. Every worker runs a driver task that
 * spawns a batch of empty-bodied tasks on its own worker and re-spawns
 * itself; the figure is tasks run per second per worker, driver included
 * in the cost (1 in BATCH+1 tasks).
 *
 * Peers, in the same run and on the same workers: OpenMP tasks (libgomp)
 * and oneTBB task_groups, driven by perf/peers/. They get the worker count
 * and CPUs a thread-per-core runtime would use, thread i pinned to worker
 * i's CPU (unpinned when PERCORE_PIN=0). Every side runs once per round,
 * in turn; a peer not built is reported skipped.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "peers/peers.h"

#define BATCH PEER_BATCH

struct per_worker {
        uint64_t ran;
        char pad[56];
};

struct spawn_ctx {
        struct pc_runtime *rt;
        struct pc_timer stop_timer;
        uint64_t duration_ns;
        struct per_worker count[PC_MAX_WORKERS];
};

static struct spawn_ctx C;

/* A task counts on the worker that runs it, not on its spawner's: in
 * elastic mode a thief runs leaves of another worker's batch, and every
 * counter must keep one writer (the OpenMP peer counts the same way). */
static void leaf(void *arg)
{
        (void)arg;
        C.count[pc_worker_id()].ran++;
}

static void driver(void *arg)
{
        (void)arg;
        C.count[pc_worker_id()].ran++;
        if (pc_runtime_stopping(C.rt))
                return;
        for (int i = 0; i < BATCH; i++)
                pc_spawn(leaf, NULL);
        pc_spawn(driver, NULL);
}

static void stop_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        pc_runtime_stop(arg);
}

static void spawn_main(void *arg)
{
        unsigned n = pc_runtime_workers(C.rt);

        (void)arg;
        pc_timer_init(&C.stop_timer, stop_cb, C.rt);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        for (unsigned w = 0; w < n; w++)
                pc_spawn_on(w, driver, NULL);
}

static double spawn_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        struct pc_config cfg;
        uint64_t t0, t1, total = 0;
        int rc;

        (void)ctx;
        memset(&C, 0, sizeof(C));
        bench_config(&cfg, o, mode);
        rc = pc_runtime_create(&cfg, &C.rt);
        if (rc)
                return rc;
        C.duration_ns = (uint64_t)(o->duration * 1e9);
        *workers = pc_runtime_workers(C.rt);
        t0 = pc_now_ns();
        rc = pc_runtime_run(C.rt, spawn_main, NULL);
        t1 = pc_now_ns();
        for (unsigned w = 0; w < *workers; w++)
                total += C.count[w].ran;
        pc_runtime_destroy(C.rt);
        if (rc)
                return rc;
        return (double)total / *workers / ((double)(t1 - t0) / 1e9);
}

typedef double (*peer_fn)(unsigned workers, const int *cpus, double seconds);

struct peer {
        peer_fn fn;       /* NULL when not built */
        const char *why;  /* what is missing then */
};

/* A peer's run: the workers and CPUs percore would take, from a runtime
 * made with the bench's thread-per-core config (and the environment) and
 * dropped before the peer starts. */
static double peer_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *ctx)
{
        const struct peer *p = ctx;
        int cpus[PC_MAX_WORKERS];
        struct pc_runtime *rt;
        struct pc_config cfg;
        bool pin;
        int rc;

        (void)mode;
        if (p->fn == NULL) {
                bench_progress("spawn/local: %s", p->why);
                return -ENOTSUP;
        }
        bench_config(&cfg, o, PC_MODE_TPC);
        rc = pc_runtime_create(&cfg, &rt);
        if (rc)
                return rc;
        *workers = pc_runtime_workers(rt);
        pin = pc_runtime_config(rt)->pin;
        for (unsigned w = 0; w < *workers; w++)
                cpus[w] = pc_runtime_worker_cpu(rt, w);
        pc_runtime_destroy(rt);
        return p->fn(*workers, pin ? cpus : NULL, o->duration);
}

int suite_spawn(const struct bench_opts *o)
{
        static struct peer openmp = {NULL, "peer:openmp not built (no libgomp, or a "
                                           "ThreadSanitizer build)"};
        static struct peer tbb = {NULL, "peer:tbb not built (no libtbb-dev or C++ "
                                        "compiler, or a ThreadSanitizer build)"};
        struct bench_side sides[BENCH_MAX_SIDES];
        unsigned n = 0;

#ifdef PC_BENCH_OPENMP
        openmp.fn = peer_openmp_spawn;
#endif
#ifdef PC_BENCH_TBB
        tbb.fn = peer_tbb_spawn;
#endif
        for (unsigned m = 0; m < o->nmodes; m++)
                sides[n++] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m],
                                                 spawn_run, NULL};
        sides[n++] = (struct bench_side){"peer:openmp", PC_MODE_TPC, peer_run, &openmp};
        sides[n++] = (struct bench_side){"peer:tbb", PC_MODE_TPC, peer_run, &tbb};
        return bench_compare(o, "spawn", "local", "tasks_per_sec_per_worker", "tasks/s",
                             false, sides, n);
}
