/* SPDX-License-Identifier: MIT */
/*
 * What a suite calls to have its sides measured: the sides of each case
 * in alternated rounds after a warm-up of each, one record per side and
 * metric, the suites' notes; main.c hands them to the writers.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_report.h"

static struct bench_record records[BENCH_MAX_RECORDS];
static unsigned nrecords;
static unsigned ngroups;

#define BENCH_MAX_INFO 16
static struct bench_note infos[BENCH_MAX_INFO];
static unsigned ninfos;

/* The side whose measured run is in progress, for bench_extra(); NULL
 * during warm-ups. Its extras are searched from extras_from on. */
static struct bench_record *measuring;
static unsigned measuring_round;
static double measuring_cond[BENCH_MAX_COND];
static unsigned extras_from;

/* The share of this machine's CPU time its hypervisor gave to others
 * (steal, in /proc/stat) while each suite ran: a VM's host that is busy
 * elsewhere takes CPU from every side, unevenly, and the figures swing. */
static struct bench_steal steals[BENCH_MAX_SUITES];
static unsigned nsteals;

/* The fewest ticks (of every CPU together) a run's steal is judged on:
 * half a second of 2 CPUs at the usual 100 ticks a second. */
#define STEAL_MIN_TICKS 100

/* The all-CPU line's steal and total ticks; false when unreadable. */
static bool cpu_ticks(uint64_t *steal, uint64_t *total)
{
        unsigned long long v[8] = {0};
        FILE *f = fopen("/proc/stat", "r");
        int n;

        if (f == NULL)
                return false;
        n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]);
        fclose(f);
        if (n != 8)
                return false;
        *steal = v[7];
        *total = 0;
        for (int i = 0; i < 8; i++)
                *total += v[i];
        return true;
}

int bench_run_suite(const char *name, int (*run)(const struct bench_opts *o),
                    const struct bench_opts *o)
{
        uint64_t s0, t0, s1, t1;
        bool ok = cpu_ticks(&s0, &t0);
        int rc = run(o);

        ok = ok && cpu_ticks(&s1, &t1) && t1 > t0;
        steals[nsteals].suite = name;
        steals[nsteals++].share = ok ? (double)(s1 - s0) / (double)(t1 - t0) : -1;
        return rc;
}

void bench_condition(unsigned k, double c)
{
        if (measuring && k < BENCH_MAX_COND)
                measuring_cond[k] = c;
}

static void extra(const char *metric, const char *unit, bool lower_is_better, bool info,
                  double v);

void bench_extra(const char *metric, const char *unit, bool lower_is_better, double v)
{
        extra(metric, unit, lower_is_better, false, v);
}

void bench_extra_info(const char *metric, const char *unit, double v)
{
        extra(metric, unit, false, true, v);
}

static void extra(const char *metric, const char *unit, bool lower_is_better, bool info,
                  double v)
{
        struct bench_record *r;
        unsigned i;

        if (measuring == NULL)
                return;
        for (i = extras_from; i < nrecords; i++)
                if (strcmp(records[i].mode, measuring->mode) == 0 &&
                    strcmp(records[i].metric, metric) == 0)
                        break;
        if (i == nrecords) {
                if (nrecords == BENCH_MAX_RECORDS)
                        return;
                r = &records[nrecords++];
                *r = *measuring;
                r->metric = metric;
                r->unit = unit;
                r->lower_is_better = lower_is_better;
                r->info = info;
                r->extra = true;
                r->nvalues = 0;
        }
        r = &records[i];
        /* Rounds in which this side reported none stay NAN, so value i is
         * still round i's. */
        while (r->nvalues <= measuring_round)
                r->values[r->nvalues++] = NAN;
        r->values[measuring_round] = v;
}

void bench_info(const char *suite, const char *json, const char *text)
{
        unsigned i;

        for (i = 0; i < ninfos; i++)
                if (strcmp(infos[i].suite, suite) == 0)
                        break;
        if (i == BENCH_MAX_INFO)
                return;
        if (i == ninfos)
                ninfos++;
        free(infos[i].json);
        free(infos[i].text);
        infos[i].suite = suite;
        infos[i].json = strdup(json);
        infos[i].text = text ? strdup(text) : NULL;
}

void bench_info_of(const char *suite, const char *members, const char *title,
                   const char *lines)
{
        size_t jn = strlen(members) + 3, tn = strlen(title) + strlen(lines) + 4;
        char *json = malloc(jn), *text = malloc(tn);

        if (json && text) {
                snprintf(json, jn, "{%s}", members);
                snprintf(text, tn, "%s\n  %s", title, lines);
                bench_info(suite, json, text);
        }
        free(json);
        free(text);
}

void bench_set_floor(const char *suite, const char *kase, const char *mode)
{
        for (unsigned i = 0; i < nrecords; i++)
                if (strcmp(records[i].suite, suite) == 0 && strcmp(records[i].kase, kase) == 0 &&
                    strcmp(records[i].mode, mode) == 0)
                        records[i].floor = true;
}

bool bench_on_path(const char *name)
{
        const char *path = getenv("PATH");
        char *copy, *save = NULL;
        bool found = false;

        if (strchr(name, '/'))
                return access(name, X_OK) == 0;
        if (path == NULL || (copy = strdup(path)) == NULL)
                return false;
        for (char *dir = strtok_r(copy, ":", &save); dir && !found;
             dir = strtok_r(NULL, ":", &save)) {
                char exe[4096];

                snprintf(exe, sizeof(exe), "%s/%s", *dir ? dir : ".", name);
                found = access(exe, X_OK) == 0;
        }
        free(copy);
        return found;
}

void bench_progress(const char *fmt, ...)
{
        va_list ap;

        fputs("percore-bench: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

void bench_config(struct pc_config *cfg, const struct bench_opts *o, enum pc_mode mode)
{
        pc_config_init(cfg);
        cfg->mode = mode;
        cfg->workers = mode == PC_MODE_DETERMINISTIC ? 0 : o->workers;
        cfg->idle = PC_IDLE_POLL;
        /* The in-process suites time pinned workers against pinned peers
         * (the msg suite checks the CPUs each thread ran on): a worker that
         * roamed would measure something else. */
        cfg->overprovisioned = false;
        cfg->log_level = PC_LOG_WARN;
}

static void run_failed(const char *suite, const char *kase, const char *name, double v)
{
        fprintf(stderr, "percore-bench: %s/%s %s: %s\n", suite, kase, name,
                pc_strerror((int)v));
}

int bench_compare(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *metric, const char *unit, bool lower_is_better,
                  const struct bench_side *sides, unsigned n)
{
        struct bench_record *rec[BENCH_MAX_SIDES];
        const struct bench_side *live[BENCH_MAX_SIDES];
        struct bench_opts warm = *o;
        unsigned first = nrecords, nlive = 0;
        double v;

        if (n > BENCH_MAX_SIDES || o->runs > BENCH_MAX_RUNS)
                return -EINVAL;
        ngroups++;
        warm.duration = o->duration / 4;
        for (unsigned s = 0; s < n; s++) {
                struct bench_record *r;
                unsigned workers = 0;

                bench_progress("%s/%s %s: warm-up", suite, kase, sides[s].name);
                v = sides[s].fn(&warm, sides[s].mode, &workers, sides[s].ctx);
                if (v == BENCH_MOVED) /* said why; a warm-up's value is not used */
                        v = 0;
                if (v == -ENOTSUP) {
                        fprintf(stderr, "percore-bench: %s/%s %s: skipped\n", suite, kase,
                                sides[s].name);
                        continue;
                }
                if (v < 0) {
                        run_failed(suite, kase, sides[s].name, v);
                        nrecords = first;
                        return (int)v;
                }
                if (nrecords == BENCH_MAX_RECORDS) {
                        nrecords = first;
                        return -ENOSPC;
                }
                r = &records[nrecords++];
                memset(r, 0, sizeof(*r));
                r->suite = suite;
                r->kase = kase;
                snprintf(r->mode, sizeof(r->mode), "%s", sides[s].name);
                r->workers = workers;
                r->metric = metric;
                r->unit = unit;
                r->lower_is_better = lower_is_better;
                r->group = ngroups;
                for (unsigned i = 0; i < BENCH_MAX_RUNS; i++) {
                        for (unsigned k = 0; k < BENCH_MAX_COND; k++)
                                r->cond[i][k] = NAN;
                        r->steal[i] = NAN;
                }
                rec[nlive] = r;
                live[nlive++] = &sides[s];
        }
        extras_from = nrecords;
        for (unsigned i = 0; i < o->runs && nlive; i++) {
                if (o->runs > 1 && nlive > 1)
                        bench_progress("%s/%s: round %u of %u", suite, kase, i + 1,
                                       o->runs);
                for (unsigned s = 0; s < nlive; s++) {
                        unsigned workers = 0;
                        uint64_t s0, t0, s1, t1;
                        bool ticks = cpu_ticks(&s0, &t0);
                        double steal;

                        measuring = rec[s];
                        measuring_round = i;
                        for (unsigned k = 0; k < BENCH_MAX_COND; k++)
                                measuring_cond[k] = NAN;
                        v = live[s]->fn(o, live[s]->mode, &workers, live[s]->ctx);
                        measuring = NULL;
                        /* Less one tick, the counter's grain; and not
                         * known for a run of under STEAL_MIN_TICKS (a
                         * --quick run on 2 CPUs is a few dozen): the host
                         * takes its steal in bursts of ticks, and so short
                         * a run says nothing of how busy it was. */
                        ticks = ticks && cpu_ticks(&s1, &t1) && t1 - t0 >= STEAL_MIN_TICKS;
                        steal = ticks ? (double)(s1 - s0 > 1 ? s1 - s0 - 1 : 0) /
                                                (double)(t1 - t0)
                                      : NAN;
                        for (unsigned j = first; j < nrecords; j++)
                                if (strcmp(records[j].mode, rec[s]->mode) == 0) {
                                        memcpy(records[j].cond[i], measuring_cond,
                                               sizeof(measuring_cond));
                                        records[j].steal[i] = steal;
                                }
                        if (v == BENCH_MOVED) {
                                /* The run said which thread moved. */
                                bench_progress("%s/%s %s: round %u not used", suite, kase,
                                               live[s]->name, i + 1);
                                v = NAN;
                        } else if (v < 0) {
                                run_failed(suite, kase, live[s]->name, v);
                                nrecords = first;
                                return (int)v;
                        }
                        rec[s]->values[rec[s]->nvalues++] = v;
                }
        }
        /* Extras end at the last round too, so they align with the sides. */
        for (unsigned i = extras_from; i < nrecords; i++)
                while (records[i].nvalues < o->runs)
                        records[i].values[records[i].nvalues++] = NAN;
        for (unsigned s = 0; s < nlive; s++)
                bench_progress("%s/%s %s: %s median %.4g %s", suite, kase, rec[s]->mode,
                               metric, bench_median(rec[s]), unit);
        return 0;
}

int bench_measure(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *mode_name, enum pc_mode mode, const char *metric,
                  const char *unit, bool lower_is_better, bench_run_fn fn, void *ctx)
{
        const struct bench_side side = {mode_name, mode, fn, ctx};

        return bench_compare(o, suite, kase, metric, unit, lower_is_better, &side, 1);
}

void bench_results(const struct bench_opts *o, struct bench_results *r, char *config,
                   size_t len)
{
        struct pc_config cfg;

        bench_config(&cfg, o, o->modes[0]);
        pc_config_from_env(&cfg, NULL, 0);
        pc_config_format(&cfg, config, len);
        *r = (struct bench_results){.recs = records,
                                    .n = nrecords,
                                    .notes = infos,
                                    .nnotes = ninfos,
                                    .steals = steals,
                                    .nsteals = nsteals,
                                    .runs = o->runs,
                                    .duration = o->duration,
                                    .config = config};
}
