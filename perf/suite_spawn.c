/* SPDX-License-Identifier: MIT */
/*
 * spawn: local spawn+run throughput. Every worker runs a driver task that
 * spawns a batch of empty-bodied tasks on its own worker and re-spawns
 * itself; the figure is tasks run per second per worker, driver included
 * in the cost (1 in BATCH+1 tasks).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"

#define BATCH 64

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

static void leaf(void *arg)
{
        struct per_worker *c = arg;

        c->ran++;
}

static void driver(void *arg)
{
        struct per_worker *c = arg;

        c->ran++;
        if (pc_runtime_stopping(C.rt))
                return;
        for (int i = 0; i < BATCH; i++)
                pc_spawn(leaf, c);
        pc_spawn(driver, c);
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
                pc_spawn_on(w, driver, &C.count[w]);
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

int suite_spawn(const struct bench_opts *o)
{
        for (unsigned m = 0; m < o->nmodes; m++) {
                int rc = bench_measure(o, "spawn", "local", pc_mode_name(o->modes[m]),
                                       o->modes[m], "tasks_per_sec_per_worker", "tasks/s",
                                       false, spawn_run, NULL);
                if (rc)
                        return rc;
        }
        return 0;
}
