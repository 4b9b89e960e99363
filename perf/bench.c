/* SPDX-License-Identifier: MIT */
/*
 * percore-bench: the main job. Runs the suites in thread-per-core and
 * elastic modes (or the one PERCORE_MODE names) beside their peers, the
 * sides of each case in alternated rounds after a warm-up of each, and
 * prints every percore figure beside each peer's with the ratio; --json
 * writes one record per measurement and one per ratio.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define TABLE_MAX_LINES  1024
#define TABLE_METRIC_MAX 10 /* longer metric names without an abbreviation are cut */

static struct bench_record records[BENCH_MAX_RECORDS];
static unsigned nrecords;
static unsigned ngroups;

#define BENCH_MAX_INFO 16
#define BENCH_STEAL_NOTE 0.05 /* a suite's host steal worth a warning */
static struct {
        const char *suite;
        char *json, *text;
} infos[BENCH_MAX_INFO];
static unsigned ninfos;

/* The side whose measured run is in progress, for bench_extra(); NULL
 * during warm-ups. Its extras are searched from extras_from on. */
static struct bench_record *measuring;
static unsigned measuring_round;
static double measuring_cond[BENCH_MAX_COND];
static unsigned extras_from;

struct suite {
        const char *name;
        int (*run)(const struct bench_opts *o);
        const char *what;
};

static const struct suite suites[] = {
        {"spawn", suite_spawn, "local spawn+run throughput per worker"},
        {"imbalance", suite_imbalance, "makespan of uneven work, skewed and balanced"},
        {"msg", suite_msg, "cross-core submit throughput and call round trip, 2 workers"},
        {"fiber", suite_fiber, "fiber yield, spawn+join and call-await, vs goroutines and Tokio"},
        {"fwd", suite_fwd, "DPDK forwarding Mpps on one core, pc-fwd vs dpdk-testpmd"},
#ifdef PC_HAVE_URING
        {"echo", suite_echo, "TCP echo 64 B requests/s, pc-echo vs Tokio and epoll, 1 and 2 workers"},
        {"kv", suite_kv, "memcached get/set ops/s, pc-kv vs memcached, 32 B and 1 KB values"},
        {"tcp", suite_tcp, "TCP echo 64 B per core: percore's TCP on DPDK vs kernel TCP, Tokio"},
#endif
};
#define NSUITES (sizeof(suites) / sizeof(suites[0]))

/* The share of this machine's CPU time its hypervisor gave to others
 * (steal, in /proc/stat) while each suite ran: a VM's host that is busy
 * elsewhere takes CPU from every side, unevenly, and the figures swing. */
static struct {
        const char *suite;
        double share; /* 0-1; negative when /proc/stat could not be read */
} steals[NSUITES];
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

static int run_suite(const struct suite *s, const struct bench_opts *o)
{
        uint64_t s0, t0, s1, t1;
        bool ok = cpu_ticks(&s0, &t0);
        int rc = s->run(o);

        ok = ok && cpu_ticks(&s1, &t1) && t1 > t0;
        steals[nsteals].suite = s->name;
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

/* ---- the table ----------------------------------------------------------- */

/* Short names for the metric column; the legend under the table spells
 * each out with its unit. */
static const struct {
        const char *metric, *abbrev;
} abbrevs[] = {
        {"tasks_per_sec_per_worker", "tasks/s"},
        {"makespan_ms", "makespan"},
        {"makespan_ratio_to_ideal", "x_ideal"},
        {"msgs_per_sec", "msgs/s"},
        {"call_rtt_ns", "rtt_ns"},
        {"yield_rtt_ns", "yield_ns"},
        {"pingpong_rtt_ns", "pp_rtt_ns"},
        {"ns_per_fiber", "ns/fiber"},
        {"idle_iter_ns", "idle_ns"},
        {"mpps_per_core", "Mpps"},
        {"requests_per_sec", "req/s"},
        {"requests_per_sec_per_worker", "req/s"},
        {"ops_per_sec", "ops/s"},
        {"ops_per_sec_per_worker", "ops/s"},
        {"ops_per_server_cpu_sec", "ops/cpus"},
        {"requests_per_server_cpu_sec", "req/cpus"},
        {"client_cpu_per_sec", "client"},
        {"get_misses_per_get", "misses"},
};

/* The metric column's name for @metric: its abbreviation, or the name
 * itself cut to TABLE_METRIC_MAX characters with a '~'. */
static void metric_abbrev(const char *metric, char *buf, size_t len)
{
        for (size_t i = 0; i < sizeof(abbrevs) / sizeof(abbrevs[0]); i++)
                if (strcmp(abbrevs[i].metric, metric) == 0) {
                        snprintf(buf, len, "%s", abbrevs[i].abbrev);
                        return;
                }
        if (strlen(metric) <= TABLE_METRIC_MAX)
                snprintf(buf, len, "%s", metric);
        else
                snprintf(buf, len, "%.*s~", TABLE_METRIC_MAX - 1, metric);
}

static const char *const sfx[] = {"", "k", "M", "G", "T"};

/* The power of 1000 that human() divides @v by. */
static int scale_of(double v)
{
        int i = 0;

        /* 999.6 would print as "1e+03" at three digits. */
        while (fabs(v) >= 999.5 && i < 4) {
                v /= 1000;
                i++;
        }
        return i;
}

/* 61234567 -> "61.2M" */
static void human(double v, char *buf, size_t len)
{
        int i = scale_of(v);

        snprintf(buf, len, "%.3g%s", v / pow(1000, i), sfx[i]);
}

/* Three digits, or the integer part when that has more. */
static void digits3(double v, char *buf, size_t len)
{
        snprintf(buf, len, fabs(v) >= 999.5 ? "%.0f" : "%.3g", v);
}

/* "78.3M (76-80.1)": the range in the median's unit, unless an end is
 * far from it ("837k (834k-1.96M)"); one run, or no spread, prints alone. */
static void value_cell(const struct bench_record *r, char *buf, size_t len)
{
        double med, lo, hi, unit;
        char m[16], a[16], b[16];

        bench_stats(r, &med, &lo, &hi);
        if (!isfinite(med)) {
                snprintf(buf, len, "-");
                return;
        }
        human(med, m, sizeof(m));
        if (bench_finite_count(r) < 2 || lo == hi) {
                snprintf(buf, len, "%s", m);
                return;
        }
        unit = pow(1000, scale_of(med));
        if ((lo != 0 && fabs(lo / unit) < 0.01) || fabs(hi / unit) >= 999.5) {
                human(lo, a, sizeof(a));
                human(hi, b, sizeof(b));
        } else {
                digits3(lo / unit, a, sizeof(a));
                digits3(hi / unit, b, sizeof(b));
        }
        if (strcmp(a, b) == 0) /* a spread below three digits */
                snprintf(buf, len, "%s", m);
        else
                snprintf(buf, len, "%s (%s-%s)", m, a, b);
}

static void ratio_num(double x, char *buf, size_t len)
{
        snprintf(buf, len, x < 10 ? "%.2f" : x < 100 ? "%.1f" : "%.0f", x);
}

/* The ratio cell of a floor slower than the side it bounds; the legend
 * spells it out. */
#define REFUSED_CELL "floor slower: no ratio"

static void ratio_cell(const struct bench_ratio *x, char *buf, size_t len)
{
        char v[16], a[16], b[16];

        if (x == NULL) {
                snprintf(buf, len, "-");
                return;
        }
        if (x->refused) {
                snprintf(buf, len, REFUSED_CELL);
                return;
        }
        ratio_num(x->value, v, sizeof(v));
        if (x->rounds == 0) {
                snprintf(buf, len, "%sx (medians)", v);
                return;
        }
        if (x->rounds == 1) {
                snprintf(buf, len, "%sx", v);
                return;
        }
        ratio_num(x->min, a, sizeof(a));
        ratio_num(x->max, b, sizeof(b));
        snprintf(buf, len, "%sx (%s-%s)", v, a, b);
}

/* One line: a percore side and a peer of one row (either may be NULL). */
struct line {
        const struct bench_record *row, *side, *peer;
        const struct bench_ratio *ratio;
};

static const struct bench_ratio *find_ratio(const struct bench_ratio *x, unsigned n,
                                            const struct bench_record *s,
                                            const struct bench_record *p)
{
        for (unsigned i = 0; i < n; i++)
                if (x[i].side == s && x[i].peer == p)
                        return &x[i];
        return NULL;
}

/* The lines of the row @row starts: each percore side beside each peer,
 * or alone when the row has none; a peer with no side stands alone. */
static unsigned row_lines(const struct bench_record *row, const struct bench_ratio *x,
                          unsigned nx, struct line *out, unsigned max)
{
        const struct bench_record *peers[BENCH_MAX_RECORDS];
        unsigned np = 0, k = 0, nsides = 0;

        for (unsigned j = 0; j < nrecords; j++)
                if (bench_same_row(&records[j], row) && bench_is_peer(records[j].mode))
                        peers[np++] = &records[j];
        for (unsigned j = 0; j < nrecords; j++) {
                const struct bench_record *s = &records[j];
                if (!bench_same_row(s, row) || bench_is_peer(s->mode))
                        continue;
                nsides++;
                for (unsigned p = 0; p < np && k < max; p++)
                        out[k++] = (struct line){row, s, peers[p],
                                                 find_ratio(x, nx, s, peers[p])};
                if (np == 0 && k < max)
                        out[k++] = (struct line){row, s, NULL, NULL};
        }
        for (unsigned p = 0; nsides == 0 && p < np && k < max; p++)
                out[k++] = (struct line){row, NULL, peers[p], NULL};
        return k;
}

/* Every line, rows in order of first record, rows of one suite/case
 * together. */
static unsigned table_lines(const struct bench_ratio *x, unsigned nx, struct line *out,
                            unsigned max)
{
        bool done_row[BENCH_MAX_RECORDS] = {false}, done_case[BENCH_MAX_RECORDS] = {false};
        unsigned k = 0;

        for (unsigned i = 0; i < nrecords; i++) {
                if (done_case[i])
                        continue;
                for (unsigned j = i; j < nrecords; j++) {
                        const struct bench_record *r = &records[j];
                        if (strcmp(r->suite, records[i].suite) != 0 ||
                            strcmp(r->kase, records[i].kase) != 0)
                                continue;
                        done_case[j] = true;
                        if (done_row[j])
                                continue;
                        for (unsigned m = j; m < nrecords; m++)
                                if (bench_same_row(&records[m], r))
                                        done_row[m] = true;
                        k += row_lines(r, x, nx, out + k, max - k);
                }
        }
        return k;
}

static int width(int w, const char *s)
{
        int n = (int)strlen(s);

        return n > w ? n : w;
}

struct cells {
        char metric[64], w[16], side[40], sidev[64], peer[40], peerv[64], ratio[64];
};

static void line_cells(const struct line *l, struct cells *c)
{
        metric_abbrev(l->row->metric, c->metric, sizeof(c->metric));
        snprintf(c->w, sizeof(c->w), "%u", l->row->workers);
        snprintf(c->side, sizeof(c->side), "%s", l->side ? l->side->mode : "");
        c->sidev[0] = c->peer[0] = c->peerv[0] = c->ratio[0] = '\0';
        if (l->side)
                value_cell(l->side, c->sidev, sizeof(c->sidev));
        if (l->peer) {
                snprintf(c->peer, sizeof(c->peer), "%s", l->peer->mode + 5);
                value_cell(l->peer, c->peerv, sizeof(c->peerv));
                if (l->side)
                        ratio_cell(l->ratio, c->ratio, sizeof(c->ratio));
        }
}

/*
 * Per suite/case a heading, then one line per percore side and peer of
 * each row (metric, workers): the side's median (min-max), the peer's, and
 * the ratio with its range over rounds. Column widths follow the data.
 */
static void print_steal(void)
{
        double most = 0;
        bool any = false;

        for (unsigned i = 0; i < nsteals; i++) {
                any |= steals[i].share >= 0;
                if (steals[i].share > most)
                        most = steals[i].share;
        }
        if (!any)
                return;
        printf("host steal (CPU time this VM's host gave elsewhere, /proc/stat):\n ");
        for (unsigned i = 0, col = 1; i < nsteals; i++) {
                char cell[64];
                int n;

                if (steals[i].share < 0)
                        continue;
                n = snprintf(cell, sizeof(cell), " %s %.1f%%", steals[i].suite,
                             100 * steals[i].share);
                if (col + (unsigned)n > 96) {
                        printf("\n ");
                        col = 1;
                }
                fputs(cell, stdout);
                col += (unsigned)n;
        }
        printf("\n");
        if (most >= BENCH_STEAL_NOTE)
                printf("  the host took over %.0f%% of the CPUs during a suite: its figures "
                       "swing more than\n  the ranges say; rerun them on a quieter host\n",
                       100 * BENCH_STEAL_NOTE);
}

static void print_table(const struct bench_opts *o)
{
        static struct bench_ratio x[BENCH_MAX_RATIOS];
        static struct line lines[TABLE_MAX_LINES];
        unsigned nx = bench_ratios(records, nrecords, x, BENCH_MAX_RATIOS);
        unsigned nl = table_lines(x, nx, lines, TABLE_MAX_LINES);
        int wm = 6, ww = 1, ws = 4, wsv = 1, wp = 4, wpv = 1;
        bool medians = false, any_peer = false, refused = false, conditioned = false,
             stolen = false;
        struct cells c;

        for (unsigned i = 0; i < nl; i++) {
                line_cells(&lines[i], &c);
                wm = width(wm, c.metric);
                ww = width(ww, c.w);
                ws = width(ws, c.side);
                wsv = width(wsv, c.sidev);
                wp = width(wp, c.peer);
                wpv = width(wpv, c.peerv);
                medians |= lines[i].ratio && lines[i].ratio->rounds == 0;
                refused |= lines[i].ratio && lines[i].ratio->refused;
                any_peer |= lines[i].peer != NULL;
        }
        printf("\n%u round%s of %.2f s after a warm-up of each side, the sides of a case "
               "in turn\nin each round; median (min-max) of the rounds, the range in the "
               "median's unit;\nratio: percore side against peer per round, above 1 when "
               "percore is better\n\n",
               o->runs, o->runs == 1 ? "" : "s", o->duration);
        if (any_peer)
                printf("  %-*s  %*s  %-*s  %-*s  ratio\n", wm, "metric", ww, "w",
                       ws + 1 + wsv, "side", wp + 1 + wpv, "peer");
        else
                printf("  %-*s  %*s  side\n", wm, "metric", ww, "w");
        for (unsigned i = 0; i < nl; i++) {
                const struct bench_record *row = lines[i].row;
                char buf[256];
                int n;

                if (i == 0 || strcmp(row->suite, lines[i - 1].row->suite) != 0 ||
                    strcmp(row->kase, lines[i - 1].row->kase) != 0)
                        printf("%s/%s\n", row->suite, row->kase);
                line_cells(&lines[i], &c);
                n = snprintf(buf, sizeof(buf), "  %-*s  %*s  %-*s %-*s  %-*s %-*s  %s", wm,
                             c.metric, ww, c.w, ws, c.side, wsv, c.sidev, wp, c.peer, wpv,
                             c.peerv, c.ratio);
                while (n > 0 && buf[n - 1] == ' ')
                        buf[--n] = '\0';
                puts(buf);
        }
        printf("\nmetrics:\n");
        for (unsigned i = 0; i < nrecords; i++) {
                const struct bench_record *r = &records[i];
                bool seen = false;

                for (unsigned j = 0; j < i && !seen; j++)
                        seen = strcmp(records[j].metric, r->metric) == 0;
                if (seen)
                        continue;
                metric_abbrev(r->metric, c.metric, sizeof(c.metric));
                if (r->info)
                        printf("  %-*s  %s (%s, a diagnostic: no ratio)\n", wm, c.metric,
                               r->metric, r->unit);
                else
                        printf("  %-*s  %s (%s, %s is better)\n", wm, c.metric, r->metric,
                               r->unit, r->lower_is_better ? "lower" : "higher");
        }
        if (medians)
                printf("(medians): a ratio of medians measured apart, not in rounds\n");
        for (unsigned i = 0; i < nrecords; i++)
                for (unsigned r = 0; r < records[i].nvalues; r++) {
                        for (unsigned k = 0; k < BENCH_MAX_COND; k++)
                                conditioned |= isfinite(records[i].cond[r][k]);
                        stolen |= isfinite(records[i].steal[r]);
                }
        if (conditioned || stolen) {
                char steal[64] = "";

                if (stolen)
                        snprintf(steal, sizeof(steal), "host steal within %.0f points of each other",
                                 BENCH_STEAL_MATCH * 100);
                printf("ratios pair only the rounds whose side and peer ran under matching "
                       "conditions\n  (%s%s%s)\n",
                       steal, stolen && conditioned ? "; " : "",
                       conditioned ? "what a suite probes is in its note below" : "");
        }
        if (refused)
                printf(REFUSED_CELL ": floor slower than percore: no ratio (the floor measured "
                       "worse\n  than the side in the rounds that pair, so it did not measure "
                       "the floor)\n");
        for (unsigned i = 0; i < ninfos; i++)
                if (infos[i].text)
                        printf("%s: %s\n", infos[i].suite, infos[i].text);
        print_steal();
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fprintf(f, "\\%c", *s);
                else if ((unsigned char)*s < 0x20)
                        fprintf(f, "\\u%04x", *s);
                else
                        fputc(*s, f);
        }
        fputc('"', f);
}

static void cpu_model(char *buf, size_t len)
{
        char line[512];
        FILE *f = fopen("/proc/cpuinfo", "r");

        snprintf(buf, len, "unknown");
        if (f == NULL)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');
                if (strncmp(line, "model name", 10) == 0 && colon) {
                        snprintf(buf, len, "%s", colon + 2);
                        buf[strcspn(buf, "\n")] = '\0';
                        break;
                }
        }
        fclose(f);
}

static int count_nodes(void)
{
        int n = 0;
        char path[64];

        for (int i = 0; i < 1024; i++) {
                snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", i);
                if (access(path, F_OK) == 0)
                        n++;
        }
        return n ? n : 1;
}


/* JSON has no NaN: a number that is not finite is written as null. */
static void json_num(FILE *f, double v)
{
        if (isfinite(v))
                fprintf(f, "%.6g", v);
        else
                fputs("null", f);
}

static void json_row(FILE *f, const struct bench_record *r)
{
        fprintf(f, "{\"suite\": ");
        json_str(f, r->suite);
        fprintf(f, ", \"case\": ");
        json_str(f, r->kase);
}

static int write_json(const struct bench_opts *o, const char *path)
{
        static struct bench_ratio x[BENCH_MAX_RATIOS];
        unsigned nx = bench_ratios(records, nrecords, x, BENCH_MAX_RATIOS);
        struct pc_config cfg;
        char line[1024], model[256];
        FILE *f = fopen(path, "w");

        if (f == NULL) {
                fprintf(stderr, "percore-bench: cannot write %s: %s\n", path, strerror(errno));
                return -errno;
        }
        /* The configuration the runs used: the bench's settings, then the
         * environment on top, as pc_runtime_create() applies them. */
        bench_config(&cfg, o, o->modes[0]);
        pc_config_from_env(&cfg, NULL, 0);
        pc_config_format(&cfg, line, sizeof(line));
        cpu_model(model, sizeof(model));
        fprintf(f, "{\n  \"config\": ");
        json_str(f, line);
        fprintf(f, ",\n  \"duration_s\": %g,\n  \"machine\": {\"cpu_model\": ", o->duration);
        json_str(f, model);
        fprintf(f, ", \"cpus\": %ld, \"nodes\": %d, \"host_steal\": {",
                sysconf(_SC_NPROCESSORS_ONLN), count_nodes());
        for (unsigned i = 0; i < nsteals; i++) {
                fprintf(f, "%s", i ? ", " : "");
                json_str(f, steals[i].suite);
                fprintf(f, ": ");
                json_num(f, steals[i].share >= 0 ? steals[i].share : NAN);
        }
        fprintf(f, "}},\n  \"records\": [\n");
        for (unsigned i = 0; i < nrecords; i++) {
                const struct bench_record *r = &records[i];
                double med, lo, hi;

                bench_stats(r, &med, &lo, &hi);
                fprintf(f, "    ");
                json_row(f, r);
                fprintf(f, ", \"mode\": ");
                json_str(f, r->mode);
                fprintf(f, ", \"workers\": %u, \"metric\": ", r->workers);
                json_str(f, r->metric);
                fprintf(f, ", \"value\": ");
                json_num(f, med);
                fprintf(f, ", \"unit\": ");
                json_str(f, r->unit);
                fprintf(f, ", \"min\": ");
                json_num(f, lo);
                fprintf(f, ", \"max\": ");
                json_num(f, hi);
                fprintf(f, ", \"runs\": %u, \"info\": %s, \"steal\": [", bench_finite_count(r),
                        r->info ? "true" : "false");
                for (unsigned k = 0; k < r->nvalues; k++) {
                        fprintf(f, "%s", k ? ", " : "");
                        json_num(f, r->steal[k]);
                }
                fprintf(f, "]}%s\n", i + 1 < nrecords ? "," : "");
        }
        fprintf(f, "  ],\n  \"ratios\": [\n");
        for (unsigned i = 0; i < nx; i++) {
                fprintf(f, "    ");
                json_row(f, x[i].side);
                fprintf(f, ", \"workers\": %u, \"metric\": ", x[i].side->workers);
                json_str(f, x[i].side->metric);
                fprintf(f, ", \"side\": ");
                json_str(f, x[i].side->mode);
                fprintf(f, ", \"peer\": ");
                json_str(f, x[i].peer->mode);
                /* A refused ratio is recorded as refused, with no number a
                 * reader could take for one. */
                fprintf(f, ", \"floor\": %s, \"refused\": ", x[i].peer->floor ? "true" : "false");
                if (x[i].refused)
                        json_str(f, "floor slower than percore");
                else
                        fputs("null", f);
                fprintf(f, ", \"value\": ");
                json_num(f, x[i].refused ? NAN : x[i].value);
                fprintf(f, ", \"min\": ");
                json_num(f, x[i].refused ? NAN : x[i].min);
                fprintf(f, ", \"max\": ");
                json_num(f, x[i].refused ? NAN : x[i].max);
                fprintf(f, ", \"rounds\": %u}%s\n", x[i].rounds, i + 1 < nx ? "," : "");
        }
        fprintf(f, "  ],\n  \"info\": {");
        for (unsigned i = 0; i < ninfos; i++) {
                fprintf(f, "%s\n    ", i ? "," : "");
                json_str(f, infos[i].suite);
                fprintf(f, ": %s", infos[i].json);
        }
        fprintf(f, "%s}\n}\n", ninfos ? "\n  " : "");
        if (fclose(f) != 0)
                return -errno;
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: percore-bench [--suite a,b,...] [--duration S] [--workers N]\n"
                "                     [--runs N] [--json FILE] [--plot FILE.svg] [--quick]\n"
                "                     [--help]\n"
                "\n"
                "Measures percore's per-core throughput. Without PERCORE_MODE in the\n"
                "environment every mode runs side by side; with it, only that mode.\n"
                "\n"
                "  --suite LIST     suites to run (default: all)\n"
                "  --duration S     seconds per measured run (default 1, quick 0.2)\n"
                "  --workers N      workers (default: one per usable CPU)\n"
                "  --runs N         measured rounds per case, each running every side once,\n"
                "                   after a warm-up of each (default 5, quick 3)\n"
                "  --json FILE      write one record per measurement and one per ratio\n"
                "  --plot FILE.svg  draw the results with gnuplot (Debian: gnuplot-nox)\n"
                "  --quick          short runs, for CI smoke tests\n"
                "\nsuites:\n");
        for (size_t i = 0; i < NSUITES; i++)
                fprintf(f, "  %-10s %s\n", suites[i].name, suites[i].what);
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= lo && v <= hi))
                return -EINVAL;
        *out = v;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"suite", required_argument, NULL, 's'},
                {"duration", required_argument, NULL, 'd'},
                {"workers", required_argument, NULL, 'w'},
                {"runs", required_argument, NULL, 'r'},
                {"json", required_argument, NULL, 'j'},
                {"plot", required_argument, NULL, 'p'},
                {"quick", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct bench_opts o = {.duration = 0, .runs = 0};
        bool want[NSUITES];
        const char *suite_arg = NULL;
        struct pc_config env;
        char err[256];
        double d;
        int c, rc = 0;

        while ((c = getopt_long(argc, argv, "s:d:w:r:j:p:qh", longopts, NULL)) != -1) {
                switch (c) {
                case 's':
                        suite_arg = optarg;
                        break;
                case 'd':
                        if (parse_double(optarg, 0.01, 600, &o.duration)) {
                                fprintf(stderr, "percore-bench: --duration '%s': expected "
                                                "seconds from 0.01 to 600\n", optarg);
                                return 2;
                        }
                        break;
                case 'w':
                        if (parse_double(optarg, 1, PC_MAX_WORKERS, &d) || d != (unsigned)d) {
                                fprintf(stderr, "percore-bench: --workers '%s': expected an "
                                                "integer from 1 to %d\n", optarg,
                                        PC_MAX_WORKERS);
                                return 2;
                        }
                        o.workers = (unsigned)d;
                        break;
                case 'r':
                        if (parse_double(optarg, 1, BENCH_MAX_RUNS, &d) || d != (unsigned)d) {
                                fprintf(stderr, "percore-bench: --runs '%s': expected an "
                                                "integer from 1 to %d\n", optarg,
                                        BENCH_MAX_RUNS);
                                return 2;
                        }
                        o.runs = (unsigned)d;
                        break;
                case 'j':
                        o.json = optarg;
                        break;
                case 'p':
                        o.plot = optarg;
                        break;
                case 'q':
                        o.quick = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "percore-bench: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        if (o.duration == 0)
                o.duration = o.quick ? 0.2 : 1.0;
        if (o.runs == 0)
                o.runs = o.quick ? 3 : 5;

        for (size_t i = 0; i < NSUITES; i++)
                want[i] = suite_arg == NULL;
        if (suite_arg) {
                char *copy = strdup(suite_arg), *save = NULL;
                for (char *tok = strtok_r(copy, ",", &save); tok;
                     tok = strtok_r(NULL, ",", &save)) {
                        size_t i;
                        for (i = 0; i < NSUITES; i++)
                                if (strcmp(tok, suites[i].name) == 0)
                                        break;
                        if (i == NSUITES) {
                                fprintf(stderr, "percore-bench: unknown suite '%s'\n", tok);
                                usage(stderr);
                                free(copy);
                                return 2;
                        }
                        want[i] = true;
                }
                free(copy);
        }

        if (o.plot && !bench_plot_available()) {
                fprintf(stderr, "percore-bench: --plot needs gnuplot, which is not on PATH "
                                "(Debian: apt-get install gnuplot-nox, or .ci/deps.sh)\n");
                return 1;
        }

        /* The environment decides the modes: one if PERCORE_MODE is set. */
        pc_config_init(&env);
        if (pc_config_from_env(&env, err, sizeof(err)) != 0) {
                fprintf(stderr, "percore-bench: %s\n", err);
                return 2;
        }
        if (getenv("PERCORE_MODE")) {
                o.modes[o.nmodes++] = env.mode;
        } else {
                o.modes[o.nmodes++] = PC_MODE_TPC;
                o.modes[o.nmodes++] = PC_MODE_ELASTIC;
        }

        for (size_t i = 0; i < NSUITES && rc == 0; i++)
                if (want[i])
                        rc = run_suite(&suites[i], &o);
        if (nrecords)
                print_table(&o);
        if (o.json && nrecords) {
                int jrc = write_json(&o, o.json);
                if (jrc && rc == 0)
                        rc = jrc;
        }
        if (o.plot && nrecords) {
                int prc = bench_plot(o.plot, records, nrecords);
                if (prc && rc == 0)
                        rc = prc;
        }
        return rc ? 1 : 0;
}
