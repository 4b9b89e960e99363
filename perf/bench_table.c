/* SPDX-License-Identifier: MIT */
/*
 * percore-bench's table (bench_report.h): per suite/case a heading, a line
 * per percore side beside each peer of its row with the ratio, then the
 * legend, the suites' notes and the host's steal.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_report.h"

#define TABLE_MAX_LINES  1024
#define TABLE_METRIC_MAX 10 /* longer metric names without an abbreviation are cut */
#define BENCH_STEAL_NOTE 0.05 /* a suite's host steal worth a warning */

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
static unsigned row_lines(const struct bench_results *res, const struct bench_record *row,
                          const struct bench_ratio *x, unsigned nx, struct line *out,
                          unsigned max)
{
        const struct bench_record *peers[BENCH_MAX_RECORDS];
        unsigned np = 0, k = 0, nsides = 0;

        for (unsigned j = 0; j < res->n; j++)
                if (bench_same_row(&res->recs[j], row) &&
                    bench_is_peer(res->recs[j].mode))
                        peers[np++] = &res->recs[j];
        for (unsigned j = 0; j < res->n; j++) {
                const struct bench_record *s = &res->recs[j];
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
static unsigned table_lines(const struct bench_results *res, const struct bench_ratio *x,
                            unsigned nx, struct line *out, unsigned max)
{
        bool done_row[BENCH_MAX_RECORDS] = {false},
             done_case[BENCH_MAX_RECORDS] = {false};
        unsigned k = 0;

        for (unsigned i = 0; i < res->n; i++) {
                if (done_case[i])
                        continue;
                for (unsigned j = i; j < res->n; j++) {
                        const struct bench_record *r = &res->recs[j];
                        if (strcmp(r->suite, res->recs[i].suite) != 0 ||
                            strcmp(r->kase, res->recs[i].kase) != 0)
                                continue;
                        done_case[j] = true;
                        if (done_row[j])
                                continue;
                        for (unsigned m = j; m < res->n; m++)
                                if (bench_same_row(&res->recs[m], r))
                                        done_row[m] = true;
                        k += row_lines(res, r, x, nx, out + k, max - k);
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

static void print_steal(const struct bench_results *res)
{
        double most = 0;
        bool any = false;

        for (unsigned i = 0; i < res->nsteals; i++) {
                any |= res->steals[i].share >= 0;
                if (res->steals[i].share > most)
                        most = res->steals[i].share;
        }
        if (!any)
                return;
        printf("host steal (CPU time this VM's host gave elsewhere, /proc/stat):\n ");
        for (unsigned i = 0, col = 1; i < res->nsteals; i++) {
                char cell[64];
                int n;

                if (res->steals[i].share < 0)
                        continue;
                n = snprintf(cell, sizeof(cell), " %s %.1f%%", res->steals[i].suite,
                             100 * res->steals[i].share);
                if (col + (unsigned)n > 96) {
                        printf("\n ");
                        col = 1;
                }
                fputs(cell, stdout);
                col += (unsigned)n;
        }
        printf("\n");
        if (most >= BENCH_STEAL_NOTE)
                printf(
                    "  the host took over %.0f%% of the CPUs during a suite: its figures "
                    "swing more than\n  the ranges say; rerun them on a quieter host\n",
                    100 * BENCH_STEAL_NOTE);
}

/*
 * Per suite/case a heading, then one line per percore side and peer of
 * each row (metric, workers): the side's median (min-max), the peer's, and
 * the ratio with its range over rounds. Column widths follow the data.
 */
void bench_table_print(const struct bench_results *res)
{
        static struct bench_ratio x[BENCH_MAX_RATIOS];
        static struct line lines[TABLE_MAX_LINES];
        unsigned nx = bench_ratios(res->recs, res->n, x, BENCH_MAX_RATIOS);
        unsigned nl = table_lines(res, x, nx, lines, TABLE_MAX_LINES);
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
               res->runs, res->runs == 1 ? "" : "s", res->duration);
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
                n = snprintf(buf, sizeof(buf), "  %-*s  %*s  %-*s %-*s  %-*s %-*s  %s",
                             wm, c.metric, ww, c.w, ws, c.side, wsv, c.sidev, wp, c.peer,
                             wpv, c.peerv, c.ratio);
                while (n > 0 && buf[n - 1] == ' ')
                        buf[--n] = '\0';
                puts(buf);
        }
        printf("\nmetrics:\n");
        for (unsigned i = 0; i < res->n; i++) {
                const struct bench_record *r = &res->recs[i];
                bool seen = false;

                for (unsigned j = 0; j < i && !seen; j++)
                        seen = strcmp(res->recs[j].metric, r->metric) == 0;
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
        for (unsigned i = 0; i < res->n; i++)
                for (unsigned r = 0; r < res->recs[i].nvalues; r++) {
                        for (unsigned k = 0; k < BENCH_MAX_COND; k++)
                                conditioned |= isfinite(res->recs[i].cond[r][k]);
                        stolen |= isfinite(res->recs[i].steal[r]);
                }
        if (conditioned || stolen) {
                char steal[64] = "";

                if (stolen)
                        snprintf(steal, sizeof(steal),
                                 "host steal within %.0f points of each other",
                                 BENCH_STEAL_MATCH * 100);
                printf(
                    "ratios pair only the rounds whose side and peer ran under matching "
                    "conditions\n  (%s%s%s)\n",
                    steal, stolen && conditioned ? "; " : "",
                    conditioned ? "what a suite probes is in its note below" : "");
        }
        if (refused)
                printf(REFUSED_CELL
                       ": floor slower than percore: no ratio (the floor measured "
                       "worse\n  than the side in the rounds that pair, so it did not "
                       "measure "
                       "the floor)\n");
        for (unsigned i = 0; i < res->nnotes; i++)
                if (res->notes[i].text)
                        printf("%s: %s\n", res->notes[i].suite, res->notes[i].text);
        print_steal(res);
}
