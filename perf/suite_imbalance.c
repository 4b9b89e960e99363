/* SPDX-License-Identifier: MIT */
/*
 * imbalance: the same bag of CPU-bound tasks, of uneven cost, placed
 *   skewed:   all on worker 0 (one hot shard, one busy connection),
 *   balanced: round-robin over the workers.
 * The metric is the makespan, from the first spawn to the last task's end.
 * Thread-per-core mode can only run the skewed bag on worker 0; elastic
 * mode lets idle workers take it.
 *
 * The peer "ideal" runs no runtime at all: the calling thread, pinned to
 * the CPU worker 0 would take, calls the same task function on the same
 * costs in the same order in a plain loop, and that time divided by the
 * worker count N is the ideal: the serial work split perfectly over N
 * workers with no spawn, queue or steal to pay for. No scheduler reaches
 * it; a makespan at it says the runtime's cost vanished in the noise. Each
 * round runs the ideal first, so each percore run of that round also
 * reports its makespan divided by that round's ideal, and its steals.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "peers/peers.h"

#define NTASKS 4096

struct imb_ctx {
        struct pc_runtime *rt;
        bool skewed;
        unsigned nworkers;
        uint32_t cost[NTASKS]; /* loop iterations per task */
        _Atomic unsigned left;
        uint64_t t_start, t_end;
        _Atomic uint64_t sink;
        double ideal_ms; /* the latest peer:ideal run's, 0 before the first */
};

static struct imb_ctx C;

/* A fixed amount of work: a dependent multiply chain the compiler cannot
 * fold away. */
static uint64_t burn(uint32_t n)
{
        uint64_t x = n | 1;

        for (uint32_t i = 0; i < n; i++)
                x = x * 6364136223846793005ull + i;
        return x;
}

static void work(void *arg)
{
        uint32_t n = (uint32_t)(uintptr_t)arg;

        atomic_fetch_add_explicit(&C.sink, burn(n), memory_order_relaxed);
        if (atomic_fetch_sub(&C.left, 1) == 1) {
                C.t_end = pc_now_ns();
                if (C.rt) /* NULL in the ideal's plain loop */
                        pc_runtime_stop(C.rt);
        }
}

static void imb_main(void *arg)
{
        (void)arg;
        C.t_start = pc_now_ns();
        for (unsigned i = 0; i < NTASKS; i++) {
                unsigned w = C.skewed ? 0 : i % C.nworkers;
                pc_spawn_on(w, work, (void *)(uintptr_t)C.cost[i]);
        }
}

/* Costs from a fixed seed: mostly small, a long tail of large ones, the
 * shape of request costs that makes per-core placement go wrong. Scaled so
 * the bag takes about @budget_ns on one core. */
static void make_costs(uint64_t budget_ns)
{
        uint64_t x = 0x9E3779B97F4A7C15ull, sum = 0, t0, t1;
        double scale;

        for (unsigned i = 0; i < NTASKS; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                unsigned r = (unsigned)(x % 100);
                C.cost[i] = r < 80 ? 200 + (unsigned)(x >> 40) % 800
                                   : 5000 + (unsigned)(x >> 40) % 20000;
                sum += C.cost[i];
        }
        /* Calibrate iterations per ns on this machine. */
        t0 = pc_now_ns();
        atomic_fetch_add(&C.sink, burn(2000000));
        t1 = pc_now_ns();
        scale = (double)budget_ns / ((double)sum * (double)(t1 - t0) / 2000000.0);
        for (unsigned i = 0; i < NTASKS; i++)
                C.cost[i] = (uint32_t)(C.cost[i] * scale) + 1;
}

static double imb_once(const struct bench_opts *o, enum pc_mode mode, bool skewed,
                       unsigned *workers)
{
        struct pc_config cfg;
        int rc;

        bench_config(&cfg, o, mode);
        C.skewed = skewed;
        rc = pc_runtime_create(&cfg, &C.rt);
        if (rc)
                return rc;
        C.nworkers = pc_runtime_workers(C.rt);
        *workers = C.nworkers;
        atomic_store(&C.left, NTASKS);
        rc = pc_runtime_run(C.rt, imb_main, NULL);
        if (rc == 0 && C.ideal_ms > 0) {
                struct pc_worker_stats st[PC_MAX_WORKERS];
                double steals = 0, ms = (double)(C.t_end - C.t_start) / 1e6;
                int n = pc_stats_snapshot(C.rt, st, PC_MAX_WORKERS);
                for (int i = 0; i < n; i++)
                        steals += (double)st[i].stolen;
                bench_extra("makespan_ratio_to_ideal", "x", true, ms / C.ideal_ms);
                bench_extra("steals", "tasks", true, steals);
        }
        pc_runtime_destroy(C.rt);
        C.rt = NULL;
        if (rc)
                return rc;
        return (double)(C.t_end - C.t_start) / 1e6;
}

static double skewed_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w, void *x)
{
        (void)x;
        return imb_once(o, mode, true, w);
}

static double balanced_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w,
                           void *x)
{
        (void)x;
        return imb_once(o, mode, false, w);
}

/* Where a thread-per-core runtime with the bench's config puts worker 0. */
struct ideal_ctx {
        unsigned workers;
        int cpu0;
        bool pin;
};

static double ideal_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w, void *x)
{
        const struct ideal_ctx *ic = x;
        cpu_set_t saved;
        int rc;

        (void)o;
        (void)mode;
        if (ic->pin) {
                rc = peer_affinity_save(&saved);
                if (rc == 0)
                        rc = peer_pin_self(ic->cpu0);
                if (rc)
                        return rc;
        }
        C.rt = NULL;
        atomic_store(&C.left, NTASKS);
        C.t_start = pc_now_ns();
        for (unsigned i = 0; i < NTASKS; i++)
                work((void *)(uintptr_t)C.cost[i]);
        if (ic->pin)
                peer_affinity_restore(&saved);
        *w = ic->workers;
        C.ideal_ms = (double)(C.t_end - C.t_start) / 1e6 / ic->workers;
        return C.ideal_ms;
}

static int imb_case(const struct bench_opts *o, const char *kase, bench_run_fn fn,
                    struct ideal_ctx *ic)
{
        struct bench_side sides[BENCH_MAX_SIDES];
        unsigned n = 0;

        /* The ideal first, so the percore runs after it in the same round
         * divide by it. */
        sides[n++] = (struct bench_side){"peer:ideal", PC_MODE_TPC, ideal_run, ic};
        for (unsigned m = 0; m < o->nmodes; m++)
                sides[n++] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m], fn,
                                                 NULL};
        return bench_compare(o, "imbalance", kase, "makespan_ms", "ms", true, sides, n);
}

int suite_imbalance(const struct bench_opts *o)
{
        static struct ideal_ctx ic;
        struct pc_config probe;
        struct pc_runtime *rt;
        int rc;

        /* The bag takes about half the run duration on one core. */
        memset(&C, 0, sizeof(C));
        make_costs((uint64_t)(o->duration * 0.5e9));
        bench_config(&probe, o, PC_MODE_TPC);
        rc = pc_runtime_create(&probe, &rt);
        if (rc)
                return rc;
        ic.workers = pc_runtime_workers(rt);
        ic.cpu0 = pc_runtime_worker_cpu(rt, 0);
        ic.pin = pc_runtime_config(rt)->pin && ic.cpu0 >= 0;
        pc_runtime_destroy(rt);

        rc = imb_case(o, "skewed", skewed_run, &ic);
        if (rc == 0)
                rc = imb_case(o, "balanced", balanced_run, &ic);
        return rc;
}
