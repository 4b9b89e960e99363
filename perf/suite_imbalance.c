/* SPDX-License-Identifier: MIT */
/*
 * imbalance: the same bag of CPU-bound tasks, of uneven cost, placed
 *   skewed:   all on worker 0 (one hot shard, one busy connection),
 *   balanced: round-robin over the workers.
 * The metric is the makespan, from the first spawn to the last task's end.
 * Thread-per-core mode can only run the skewed bag on worker 0; elastic
 * mode lets idle workers take it. The peer "ideal" is the serial time of
 * the same bag measured in the same run on one worker, divided by N; each
 * run also reports its makespan divided by that ideal and its steals.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"

#define NTASKS 4096

struct imb_ctx {
        struct pc_runtime *rt;
        bool skewed;
        unsigned nworkers;
        uint32_t cost[NTASKS]; /* loop iterations per task */
        _Atomic unsigned left;
        uint64_t t_start, t_end;
        _Atomic uint64_t sink;
        double ideal_ms; /* serial time / N, measured before the runs */
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
                       unsigned workers_override, unsigned *workers)
{
        struct pc_config cfg;
        struct bench_opts oo = *o;
        int rc;

        if (workers_override)
                oo.workers = workers_override;
        bench_config(&cfg, &oo, mode);
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
        if (rc)
                return rc;
        return (double)(C.t_end - C.t_start) / 1e6;
}

static double skewed_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w, void *x)
{
        (void)x;
        return imb_once(o, mode, true, 0, w);
}

static double balanced_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w,
                           void *x)
{
        (void)x;
        return imb_once(o, mode, false, 0, w);
}

/* The ideal: the same bag on one worker, divided by the worker count the
 * other runs use. */
static double ideal_run(const struct bench_opts *o, enum pc_mode mode, unsigned *w, void *x)
{
        unsigned *n = x, one;
        double saved = C.ideal_ms, serial;

        C.ideal_ms = 0; /* a serial run reports no ratio of its own */
        serial = imb_once(o, PC_MODE_TPC, true, 1, &one);
        C.ideal_ms = saved;

        (void)mode;
        if (serial < 0)
                return serial;
        *w = *n;
        return serial / *n;
}

int suite_imbalance(const struct bench_opts *o)
{
        struct pc_config probe;
        struct pc_runtime *rt;
        unsigned n;
        int rc;

        /* The bag takes about half the run duration on one core. */
        memset(&C, 0, sizeof(C));
        make_costs((uint64_t)(o->duration * 0.5e9));
        bench_config(&probe, o, PC_MODE_TPC);
        rc = pc_runtime_create(&probe, &rt);
        if (rc)
                return rc;
        n = pc_runtime_workers(rt);
        pc_runtime_destroy(rt);

        /* The ideal first, median of three serial runs, so every measured
         * run can be divided by it. */
        {
                double v[3];
                unsigned one;
                for (int i = 0; i < 3; i++) {
                        v[i] = imb_once(o, PC_MODE_TPC, true, 1, &one);
                        if (v[i] < 0)
                                return (int)v[i];
                }
                if (v[0] > v[1]) { double x = v[0]; v[0] = v[1]; v[1] = x; }
                if (v[1] > v[2]) { double x = v[1]; v[1] = v[2]; v[2] = x; }
                if (v[0] > v[1]) { double x = v[0]; v[0] = v[1]; v[1] = x; }
                C.ideal_ms = v[1] / n;
        }

        for (unsigned m = 0; m < o->nmodes; m++) {
                rc = bench_measure(o, "imbalance", "skewed", pc_mode_name(o->modes[m]),
                                   o->modes[m], "makespan_ms", "ms", true, skewed_run, NULL);
                if (rc)
                        return rc;
        }
        rc = bench_measure(o, "imbalance", "skewed", "peer:ideal", PC_MODE_TPC, "makespan_ms",
                           "ms", true, ideal_run, &n);
        if (rc)
                return rc;
        for (unsigned m = 0; m < o->nmodes; m++) {
                rc = bench_measure(o, "imbalance", "balanced", pc_mode_name(o->modes[m]),
                                   o->modes[m], "makespan_ms", "ms", true, balanced_run, NULL);
                if (rc)
                        return rc;
        }
        return bench_measure(o, "imbalance", "balanced", "peer:ideal", PC_MODE_TPC,
                             "makespan_ms", "ms", true, ideal_run, &n);
}
