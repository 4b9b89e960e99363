/* SPDX-License-Identifier: MIT */
/*
 * Per-worker stats: each worker publishes its own counters once per
 * reactor iteration (relaxed stores to its own cache lines); readers copy
 * them without stopping anyone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "pc_core_pvt.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

int pc_stats_snapshot(const struct pc_runtime *rt, struct pc_worker_stats *out, unsigned n)
{
        unsigned i;

        if (rt == NULL || (out == NULL && n > 0))
                return -EINVAL;
        for (i = 0; i < n && i < rt->nworkers; i++) {
                struct pc_worker *w = rt->workers[i];
                const struct pc_pub_stats *s = &w->stats;
                out[i] = (struct pc_worker_stats){
                        .worker = i,
                        .cpu = w->cpu,
                        .tasks_run = LD(s->tasks_run),
                        .tasks_remote = LD(s->tasks_remote),
                        .tasks_inject = LD(s->tasks_inject),
                        .timers_fired = LD(s->timers_fired),
                        .polls = LD(s->polls),
                        .iterations = LD(s->iterations),
                        .parks = LD(s->parks),
                        .wakeups = LD(s->wakeups),
                        .queue_depth = LD(s->queue_depth),
                        .busy_ns = LD(s->busy_ns),
                        .idle_ns = LD(s->idle_ns),
                        .spin_ns = LD(s->spin_ns),
                        .stolen = LD(s->stolen),
                        .steal_attempts = LD(s->steal_attempts),
                        .steal_failures = LD(s->steal_failures),
                        .searches = LD(s->searches),
                        .stalls = LD(s->stalls),
                        .spin_pause = w->spin_pause,
                        .roams = LD(s->roams),
                        .roaming = LD(s->roaming) != 0,
                        .packed = LD(s->packed) != 0,
                        .yields = LD(s->yields),
                };
        }
        return (int)i;
}

int pc_stats_steals(const struct pc_runtime *rt, uint64_t *m, size_t len)
{
        unsigned n;

        if (rt == NULL || m == NULL)
                return -EINVAL;
        n = rt->nworkers;
        if (len < (size_t)(n + 1) * n)
                return -ENOSPC;
        for (unsigned dst = 0; dst < n; dst++) {
                const struct pc_pub_stats *s = &rt->workers[dst]->stats;
                for (unsigned src = 0; src < n; src++)
                        m[src * n + dst] = LD(s->steals_from[src]);
                m[n * n + dst] = LD(s->tasks_inject);
        }
        return 0;
}

void pc_stats_print(const struct pc_runtime *rt, FILE *f)
{
        struct pc_worker_stats st[PC_MAX_WORKERS];
        int n = pc_stats_snapshot(rt, st, PC_MAX_WORKERS);

        fprintf(f, "%-6s %4s %12s %10s %10s %10s %8s %10s %10s %8s %8s %6s %7s %6s %5s\n",
                "worker", "cpu", "tasks", "remote", "injected", "stolen", "timers", "polled",
                "iters", "parks", "wakeups", "queue", "busy%", "stalls", "roams");
        for (int i = 0; i < n; i++) {
                const struct pc_worker_stats *s = &st[i];
                uint64_t total = s->busy_ns + s->idle_ns;
                fprintf(f,
                        "%-6u %4d %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
                        " %8" PRIu64
                        " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %6" PRIu64
                        " %6.1f%% %6" PRIu64 " %5" PRIu64 "\n",
                        s->worker, s->cpu, s->tasks_run, s->tasks_remote, s->tasks_inject,
                        s->stolen, s->timers_fired, s->polls, s->iterations, s->parks, s->wakeups,
                        s->queue_depth, total ? 100.0 * (double)s->busy_ns / (double)total : 0.0,
                        s->stalls, s->roams);
        }
}
