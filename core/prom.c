/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text format (0.0.4) a scrape of PERCORE_METRICS returns,
 * and the core's own families in it. Each family is a "# HELP" and a
 * "# TYPE" line, then its samples, together; label values and help text
 * are escaped as the format says. Everything here runs on the metrics
 * thread and reads what the workers already publish (relaxed atomics),
 * so no worker waits for a scrape. Modules add their families through
 * pc__module.metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_core_pvt.h"

static void put(struct pc__prom *p, const char *s, size_t n)
{
        if (p->failed)
                return;
        if (p->len + n > p->cap) {
                size_t cap = p->cap ? p->cap : 16384;
                char *b;

                while (cap < p->len + n)
                        cap *= 2;
                b = realloc(p->buf, cap);
                if (b == NULL) {
                        p->failed = true;
                        return;
                }
                p->buf = b;
                p->cap = cap;
        }
        memcpy(p->buf + p->len, s, n);
        p->len += n;
}

static void puts_(struct pc__prom *p, const char *s)
{
        put(p, s, strlen(s));
}

/* @s with backslash and newline escaped, and the double quote too when
 * @quote (label values; help text keeps its quotes). */
static void put_escaped(struct pc__prom *p, const char *s, bool quote)
{
        for (; *s; s++) {
                if (*s == '\\')
                        puts_(p, "\\\\");
                else if (*s == '\n')
                        puts_(p, "\\n");
                else if (*s == '"' && quote)
                        puts_(p, "\\\"");
                else
                        put(p, s, 1);
        }
}

void pc__prom_family(struct pc__prom *p, const char *name, const char *type,
                     const char *help)
{
        puts_(p, "# HELP ");
        puts_(p, name);
        puts_(p, " ");
        put_escaped(p, help, false);
        puts_(p, "\n# TYPE ");
        puts_(p, name);
        puts_(p, " ");
        puts_(p, type);
        puts_(p, "\n");
}

static void sample_start(struct pc__prom *p, const char *name, const char *const *labels,
                         unsigned nlabels)
{
        puts_(p, name);
        for (unsigned i = 0; i < nlabels; i++) {
                puts_(p, i ? "," : "{");
                puts_(p, labels[2 * i]);
                puts_(p, "=\"");
                put_escaped(p, labels[2 * i + 1], true);
                puts_(p, "\"");
        }
        if (nlabels)
                puts_(p, "}");
}

void pc__prom_u64(struct pc__prom *p, const char *name, const char *const *labels,
                  unsigned nlabels, uint64_t v)
{
        char num[32];

        sample_start(p, name, labels, nlabels);
        snprintf(num, sizeof(num), " %" PRIu64 "\n", v);
        puts_(p, num);
}

void pc__prom_f64(struct pc__prom *p, const char *name, const char *const *labels,
                  unsigned nlabels, double v)
{
        char num[48];

        sample_start(p, name, labels, nlabels);
        snprintf(num, sizeof(num), " %.9g\n", v);
        puts_(p, num);
}

void pc__prom_worker_u64(struct pc__prom *p, const char *name, unsigned w, uint64_t v)
{
        char id[12];
        const char *l[] = {"worker", id};

        snprintf(id, sizeof(id), "%u", w);
        pc__prom_u64(p, name, l, 1, v);
}

/* ---- the core's families ---------------------------------------------------- */

#define NS 1e-9

/* Share of the time since the previous scrape worker @w spent in
 * iterations that found work. A worker that published nothing meanwhile
 * is either asleep (0) or inside one long task (1). */
static double busy_ratio(struct pc__metrics_prev *prev, const struct pc_worker_stats *s,
                         const struct pc_worker *w)
{
        uint64_t db = s->busy_ns - prev->busy_ns, di = s->idle_ns - prev->idle_ns;

        prev->busy_ns = s->busy_ns;
        prev->idle_ns = s->idle_ns;
        if (db + di == 0)
                return atomic_load_explicit(&w->sleeping, memory_order_relaxed) ? 0.0
                                                                                 : 1.0;
        return (double)db / (double)(db + di);
}

struct counter {
        const char *name, *help;
        size_t off; /* in struct pc_worker_stats */
};

#define C(n, f, h) {"percore_worker_" n, h, offsetof(struct pc_worker_stats, f)}
static const struct counter counters[] = {
        C("tasks_total", tasks_run, "Tasks the worker ran."),
        C("tasks_remote_total", tasks_remote, "Tasks other workers sent it."),
        C("tasks_injected_total", tasks_inject,
          "Tasks it took from the global injector."),
        C("timers_fired_total", timers_fired, "Timer callbacks it ran."),
        C("poll_items_total", polls, "Items its pollers handled."),
        C("iterations_total", iterations, "Reactor loop iterations."),
        C("parks_total", parks, "Times the worker went to sleep."),
        C("wakeups_total", wakeups, "Wake-up system calls other threads made for it."),
        C("stolen_total", stolen, "Tasks it stole from other workers (elastic mode)."),
        C("steal_attempts_total", steal_attempts, "Victims it tried (elastic mode)."),
        C("steal_failures_total", steal_failures,
          "Tries that took nothing (elastic mode)."),
        C("roams_total", roams,
          "Times the pinned worker, waiting for its CPU, was let run on its node's CPUs "
          "(PERCORE_OVERPROVISIONED)."),
        C("yields_total", yields,
          "Busy turns it ended to let a worker packed on the same CPUs run "
          "(PERCORE_OVERPROVISIONED)."),
};
#undef C

static void worker_families(struct pc_runtime *rt, struct pc__prom *p,
                            struct pc__metrics_prev *prev)
{
        struct pc_worker_stats st[PC_MAX_WORKERS];
        int n = pc_stats_snapshot(rt, st, PC_MAX_WORKERS);

        for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
                pc__prom_family(p, counters[c].name, "counter", counters[c].help);
                for (int i = 0; i < n; i++)
                        pc__prom_worker_u64(p, counters[c].name, (unsigned)i,
                                            *(const uint64_t *)((const char *)&st[i] +
                                                                counters[c].off));
        }
        pc__prom_family(p, "percore_stalls_total", "counter",
                        "Tasks, pollers, timers or fibers that kept the worker longer "
                        "than PERCORE_STALL_MS.");
        for (int i = 0; i < n; i++)
                pc__prom_worker_u64(p, "percore_stalls_total", (unsigned)i, st[i].stalls);
        pc__prom_family(p, "percore_worker_queue_depth", "gauge",
                        "Tasks queued on the worker when it last looked.");
        for (int i = 0; i < n; i++)
                pc__prom_worker_u64(p, "percore_worker_queue_depth", (unsigned)i,
                                    st[i].queue_depth);
        pc__prom_family(p, "percore_worker_roaming", "gauge",
                        "1 while the pinned worker may run on its node's CPUs, because it "
                        "waited for its own (PERCORE_OVERPROVISIONED).");
        for (int i = 0; i < n; i++)
                pc__prom_worker_u64(p, "percore_worker_roaming", (unsigned)i, st[i].roaming);
        pc__prom_family(p, "percore_worker_packed", "gauge",
                        "1 while the roaming worker runs on fewer of its node's CPUs, the "
                        "rest left to other threads that use them "
                        "(PERCORE_OVERPROVISIONED).");
        for (int i = 0; i < n; i++)
                pc__prom_worker_u64(p, "percore_worker_packed", (unsigned)i, st[i].packed);
        pc__prom_family(p, "percore_worker_busy_seconds_total", "counter",
                        "Time in iterations that found work.");
        for (int i = 0; i < n; i++) {
                char id[12];
                const char *l[] = {"worker", id};

                snprintf(id, sizeof(id), "%d", i);
                pc__prom_f64(p, "percore_worker_busy_seconds_total", l, 1,
                             (double)st[i].busy_ns * NS);
        }
        pc__prom_family(p, "percore_worker_idle_seconds_total", "counter",
                        "Time idle: spinning or asleep.");
        for (int i = 0; i < n; i++) {
                char id[12];
                const char *l[] = {"worker", id};

                snprintf(id, sizeof(id), "%d", i);
                pc__prom_f64(p, "percore_worker_idle_seconds_total", l, 1,
                             (double)st[i].idle_ns * NS);
        }
        pc__prom_family(p, "percore_worker_busy_ratio", "gauge",
                        "Share of the time since the previous scrape the worker was "
                        "busy.");
        for (int i = 0; i < n; i++) {
                char id[12];
                const char *l[] = {"worker", id};

                snprintf(id, sizeof(id), "%d", i);
                pc__prom_f64(p, "percore_worker_busy_ratio", l, 1,
                             busy_ratio(&prev[i], &st[i], rt->workers[i]));
        }
}

/* steals[src][dst]: tasks worker dst took from src, src "injector" for
 * the global injector. */
static void steal_family(struct pc_runtime *rt, struct pc__prom *p)
{
        unsigned n = rt->nworkers;
        uint64_t *m = calloc((size_t)(n + 1) * n, sizeof(*m));

        if (m == NULL) {
                p->failed = true;
                return;
        }
        pc_stats_steals(rt, m, (size_t)(n + 1) * n);
        pc__prom_family(p, "percore_steals_total", "counter",
                        "Tasks worker dst took from src (src injector: the global "
                        "injector).");
        for (unsigned src = 0; src <= n; src++) {
                for (unsigned dst = 0; dst < n; dst++) {
                        char s[12], d[12];
                        const char *l[] = {"src", s, "dst", d};

                        if (src == dst)
                                continue;
                        if (src == n)
                                snprintf(s, sizeof(s), "injector");
                        else
                                snprintf(s, sizeof(s), "%u", src);
                        snprintf(d, sizeof(d), "%u", dst);
                        pc__prom_u64(p, "percore_steals_total", l, 2, m[src * n + dst]);
                }
        }
        free(m);
}

static void runtime_families(struct pc_runtime *rt, struct pc__prom *p)
{
        struct pc_runtime_stats rs;
        const char *l[] = {"mode", pc_mode_name(pc_runtime_mode(rt))};

        pc__prom_family(p, "percore_workers", "gauge", "Workers of the runtime.");
        pc__prom_u64(p, "percore_workers", NULL, 0, rt->nworkers);
        pc__prom_family(p, "percore_mode", "gauge",
                        "1 for the mode the runtime schedules in (pc_runtime_set_mode() "
                        "switches it).");
        pc__prom_u64(p, "percore_mode", l, 1, 1);
        if (pc_stats_runtime(rt, &rs))
                return;
        pc__prom_family(p, "percore_monitor_retargets_total", "counter",
                        "Agents the load monitor moved (future spawns only).");
        pc__prom_u64(p, "percore_monitor_retargets_total", NULL, 0, rs.monitor_retargets);
        pc__prom_family(p, "percore_agents", "gauge", "Agents alive.");
        pc__prom_u64(p, "percore_agents", NULL, 0, rs.agents);
}

void pc__prom_runtime(struct pc_runtime *rt, struct pc__prom *p,
                      struct pc__metrics_prev *prev)
{
        runtime_families(rt, p);
        worker_families(rt, p, prev);
        steal_family(rt, p);
        /* The list is fixed while the runtime runs, which is when this
         * thread serves. */
        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->metrics)
                        m->metrics(rt, p, m->arg);
}
