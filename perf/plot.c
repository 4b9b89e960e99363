/* SPDX-License-Identifier: MIT */
/*
 * --plot: the results as one SVG, drawn by gnuplot run as a child process.
 * It holds the headline, one screen: for each case, percore against its
 * strongest peer (bench_headline()), a horizontal bar from 1 to the
 * median ratio over the rounds with a min-max error bar, on a log scale
 * with a line at 1; right of it percore is better, left of it (red) the
 * peer. With --plots-all there follow:
 *   - every percore/peer ratio, drawn the same way, a side in its colour;
 *   - a grid of small bar charts, one per suite/case/metric (their units
 *     differ, so they cannot share an axis), a bar per side at the median
 *     with an error bar from the min to the max round;
 *   - in the last cell, idle_iter_ns as a line over the worker counts.
 * A side keeps its colour in every chart after the headline.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot.h"

#define PLOT_WIDTH_PX    1200
#define PLOT_TITLE_PX    40
#define PLOT_COLS        3
#define PLOT_CELL_PX     300
#define PLOT_BAR_PX      22  /* one ratio bar */
#define PLOT_RATIO_PAD   110 /* the ratio chart's title and axis */
#define PLOT_HEAD_PAD    130 /* the headline's, its title on two lines */
#define PLOT_MAX_MODES   16
#define PLOT_LINE_METRIC "idle_iter_ns"
#define PLOT_WIN  1 /* the headline's linetypes: percore better, the peer better */
#define PLOT_LOSE 4

/* Colours by first appearance of a side; more sides than this reuse them. */
static const char *const palette[] = {
        "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
        "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

/* A gnuplot single-quoted string: nothing is special but the quote, which
 * is written twice. */
static void gp_str(FILE *f, const char *s)
{
        fputc('\'', f);
        for (; *s; s++) {
                if (*s == '\'')
                        fputc('\'', f);
                if (*s != '\n')
                        fputc(*s, f);
        }
        fputc('\'', f);
}

static bool same_group(const struct bench_record *a, const struct bench_record *b)
{
        return strcmp(a->suite, b->suite) == 0 && strcmp(a->kase, b->kase) == 0 &&
               strcmp(a->metric, b->metric) == 0;
}

struct plot {
        FILE *gp;
        const struct bench_record *recs;
        unsigned n;
        const char *modes[PLOT_MAX_MODES];
        unsigned nmodes;
        unsigned height; /* px */
        bool all;        /* every ratio and the per-suite charts after the headline */
};

/* The linetype of @mode: 1 + its place among the sides seen so far. */
static unsigned colour(struct plot *p, const char *mode)
{
        unsigned i;

        for (i = 0; i < p->nmodes; i++)
                if (strcmp(p->modes[i], mode) == 0)
                        break;
        if (i == p->nmodes && p->nmodes < PLOT_MAX_MODES)
                p->modes[p->nmodes++] = mode;
        return i % NPALETTE + 1;
}

/* A label inside a double-quoted data field: no quote, no newline. */
static void gp_label(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++)
                fputc(*s == '"' ? '\'' : *s == '\n' ? ' ' : *s, f);
        fputc('"', f);
}

/* Place the next chart at @x_px, @y_px from the top left, @w_px by @h_px,
 * with the axis settings of the last one undone. */
static void panel(struct plot *p, double x_px, double y_px, double w_px, double h_px)
{
        fprintf(p->gp,
                "set origin %.5f,%.5f\nset size %.5f,%.5f\n"
                "unset logscale\nunset arrow\nunset label\nunset grid\nset key off\n"
                "set autoscale\nset tics scale default\n"
                "set xtics autofreq norotate font ',10'\nset ytics autofreq font ',10'\n"
                "set format x '%%g'\nset format y '%%g'\nset xlabel ''\nset ylabel ''\n",
                x_px / PLOT_WIDTH_PX, 1 - (y_px + h_px) / p->height, w_px / PLOT_WIDTH_PX,
                h_px / p->height);
}

/* Tics at powers of two from @lo to @hi, at most about eight of them,
 * one always at 1; below 1 written as fractions ("1/4"). */
static void log2_tics(FILE *gp, double lo, double hi)
{
        int kmin = (int)ceil(log2(lo)), kmax = (int)floor(log2(hi));
        int step = (kmax - kmin + 7) / 8;
        const char *sep = "";

        if (step < 1)
                step = 1;
        fprintf(gp, "set xtics (");
        for (int k = kmin; k <= kmax; k++) {
                if (k % step != 0)
                        continue;
                if (k >= 0)
                        fprintf(gp, "%s'%g' %g", sep, ldexp(1, k), ldexp(1, k));
                else
                        fprintf(gp, "%s'1/%g' %g", sep, ldexp(1, -k), ldexp(1, k));
                sep = ", ";
        }
        fprintf(gp, ")\n");
}

/* @nx ratios as bars from 1, each in its side's colour; or, @headline,
 * blue where percore is better and red where the peer is. */
static void ratio_chart(struct plot *p, const struct bench_ratio *x, unsigned nx,
                        double top_px, double h_px, bool headline)
{
        unsigned lose = 0;

        double lo = 1, hi = 1;
        bool medians = false, bars = false, above = false, below = false;

        for (unsigned i = 0; i < nx; i++) {
                double a = x[i].rounds ? x[i].min : x[i].value;
                double b = x[i].rounds ? x[i].max : x[i].value;
                lo = a < lo ? a : lo;
                hi = b > hi ? b : hi;
                medians |= x[i].rounds == 0;
        }
        panel(p, 0, top_px, PLOT_WIDTH_PX, h_px);
        fprintf(p->gp, "$R << EOD\n");
        for (unsigned i = 0; i < nx; i++) {
                const struct bench_record *s = x[i].side;
                char label[256];

                snprintf(label, sizeof(label), "%s/%s %s w%u: %s vs %s%s", s->suite, s->kase,
                         s->metric, s->workers, s->mode, x[i].peer->mode + 5,
                         x[i].rounds ? "" : " *");
                gp_label(p->gp, label);
                lose += x[i].value < 1;
                fprintf(p->gp, " %.6g %.6g %.6g %u %u\n", x[i].value,
                        x[i].rounds ? x[i].min : x[i].value,
                        x[i].rounds ? x[i].max : x[i].value,
                        !headline            ? colour(p, s->mode)
                        : x[i].value < 1 ? PLOT_LOSE
                                         : PLOT_WIN,
                        x[i].rounds);
        }
        fprintf(p->gp, "EOD\n");
        if (headline)
                fprintf(p->gp,
                        "set title \"percore against its strongest peer, per case "
                        "(median of the per-round ratios)\\nright of 1, blue: percore "
                        "better; left, red: the peer better (%u of %u)%s\" "
                        "font ',12'\n",
                        lose, nx, medians ? "; * ratio of medians" : "");
        else
                fprintf(p->gp,
                        "set title 'every percore side / peer (median of the per-round "
                        "ratios); right of 1: percore better%s'\n",
                        medians ? "; * ratio of medians, not alternated" : "");
        lo /= 2.5; /* room for the labels */
        hi *= 2.5;
        fprintf(p->gp,
                "set logscale x 2\nset xrange [%g:%g]\nset yrange [%g:-0.5]\n"
                "set ytics scale 0 font ',10'\nset grid xtics\n"
                "set arrow from 1,graph 0 to 1,graph 1 nohead lw 2 lc rgb '#202020' front\n",
                lo, hi, nx - 0.5);
        log2_tics(p->gp, lo, hi);
        /* x, y, x from 1 to the median, y +-0.35, colour; the error bars
         * of the ratios that have rounds; the median written beyond the
         * bar's far end, right of it above 1 and left of it below. */
        /* Only the elements that have a point: Debian 12's gnuplot 5.4
         * segfaults on a "with labels" element whose every point is NaN
         * (one ratio, below 1, left the right-hand labels empty). */
        for (unsigned i = 0; i < nx; i++) {
                bars |= x[i].rounds > 0;
                above |= x[i].value >= 1;
                below |= x[i].value < 1;
        }
        fprintf(p->gp,
                "plot $R using 2:0:($2<1?$2:1):($2<1?1:$2):($0-0.35):($0+0.35):5:ytic(1) "
                "with boxxyerror fs solid 0.75 border -1 lc variable");
        if (bars)
                fprintf(p->gp, ", \\\n     $R using ($6>0?$2:NaN):0:3:4 with xerrorbars pt 0 "
                               "lc rgb '#202020'");
        if (above)
                fprintf(p->gp, ", \\\n     $R using ($2<1?NaN:$4*1.1):0:(sprintf('%%.3gx',$2)) "
                               "with labels left font ',9'");
        if (below)
                fprintf(p->gp, ", \\\n     $R using ($2<1?$3/1.1:NaN):0:(sprintf('%%.3gx',$2)) "
                               "with labels right font ',9'");
        fprintf(p->gp, "\n");
}

/* The bars of one chart in order: by workers, percore sides before peers. */
static unsigned group_members(const struct plot *p, unsigned first, unsigned *out)
{
        unsigned k = 0;

        for (unsigned j = first; j < p->n; j++)
                if (same_group(&p->recs[j], &p->recs[first]))
                        out[k++] = j;
        for (unsigned i = 1; i < k; i++)
                for (unsigned j = i; j > 0; j--) {
                        const struct bench_record *a = &p->recs[out[j - 1]];
                        const struct bench_record *b = &p->recs[out[j]];
                        unsigned t;
                        if (a->workers < b->workers ||
                            (a->workers == b->workers &&
                             bench_is_peer(a->mode) <= bench_is_peer(b->mode)))
                                break;
                        t = out[j - 1];
                        out[j - 1] = out[j];
                        out[j] = t;
                }
        return k;
}

static void bar_chart(struct plot *p, unsigned first, double x_px, double y_px, double w_px,
                      double h_px)
{
        static unsigned idx[BENCH_MAX_RECORDS];
        const struct bench_record *r0 = &p->recs[first];
        unsigned k = group_members(p, first, idx);
        bool several = false;
        double top = 0;
        char title[256];

        for (unsigned i = 0; i < k; i++) {
                double med, lo, hi;
                bench_stats(&p->recs[idx[i]], &med, &lo, &hi);
                top = hi > top ? hi : top; /* false for NAN */
                several |= p->recs[idx[i]].workers != r0->workers;
        }
        panel(p, x_px, y_px, w_px, h_px);
        fprintf(p->gp, "$G << EOD\n");
        for (unsigned i = 0; i < k; i++) {
                const struct bench_record *r = &p->recs[idx[i]];
                double med, lo, hi;
                char label[64];

                bench_stats(r, &med, &lo, &hi);
                if (several)
                        snprintf(label, sizeof(label), "%s w%u", r->mode, r->workers);
                else
                        snprintf(label, sizeof(label), "%s", r->mode);
                gp_label(p->gp, label);
                /* A side that reported this metric in no round has no bar. */
                if (isfinite(med))
                        fprintf(p->gp, " %.6g %.6g %.6g", med, lo, hi);
                else
                        fprintf(p->gp, " NaN NaN NaN");
                fprintf(p->gp, " %u\n", colour(p, r->mode));
        }
        fprintf(p->gp, "EOD\n");
        if (several)
                snprintf(title, sizeof(title), "%s/%s", r0->suite, r0->kase);
        else
                snprintf(title, sizeof(title), "%s/%s, %u worker%s", r0->suite, r0->kase,
                         r0->workers, r0->workers == 1 ? "" : "s");
        fprintf(p->gp, "set title ");
        gp_str(p->gp, title);
        snprintf(title, sizeof(title), "%s (%s, %s is better)", r0->metric, r0->unit,
                 r0->lower_is_better ? "lower" : "higher");
        fprintf(p->gp, ".\"\\n\".");
        gp_str(p->gp, title);
        fprintf(p->gp, " font ',11'\nset xrange [-0.6:%g]\n", k - 0.4);
        /* An all-zero chart (steals in thread-per-core mode) still needs a
         * y range. */
        fprintf(p->gp, top > 0 ? "set yrange [0:*]\n" : "set yrange [0:1]\n");
        /* Millions of tasks read better as 61.2M; ratios as 1.05. */
        if (top >= 1e4)
                fprintf(p->gp, "set format y '%%.1s%%c'\n");
        if (k > 4)
                fprintf(p->gp, "set xtics rotate by -30 font ',9'\n");
        fprintf(p->gp, "set grid ytics\n");
        /* x, median, min, max, box width, colour. */
        fprintf(p->gp, "plot $G using 0:2:3:4:(0.6):5:xtic(1) with boxerrorbars "
                       "fs solid 0.75 border -1 lc variable\n");
}

/* PLOT_LINE_METRIC over the worker counts: a line per suite and side,
 * points at the medians with min-max error bars. */
static void line_chart(struct plot *p, double x_px, double y_px, double w_px, double h_px)
{
        bool done[BENCH_MAX_RECORDS] = {false};
        const struct bench_record *series[PLOT_MAX_MODES];
        const struct bench_record *any = NULL;
        unsigned wlo = 0, whi = 0, ns = 0;
        char title[256];

        for (unsigned i = 0; i < p->n; i++) {
                const struct bench_record *r = &p->recs[i];
                if (strcmp(r->metric, PLOT_LINE_METRIC) != 0)
                        continue;
                any = r;
                wlo = wlo == 0 || r->workers < wlo ? r->workers : wlo;
                whi = r->workers > whi ? r->workers : whi;
        }
        if (any == NULL)
                return;
        panel(p, x_px, y_px, w_px, h_px);
        for (unsigned i = 0; i < p->n && ns < PLOT_MAX_MODES; i++) {
                const struct bench_record *r = &p->recs[i];
                unsigned last = 0;

                if (done[i] || strcmp(r->metric, PLOT_LINE_METRIC) != 0)
                        continue;
                /* This suite and side's points, by workers. */
                fprintf(p->gp, "$L%u << EOD\n", ns);
                for (;;) {
                        unsigned best = p->n;
                        double med, lo, hi;

                        for (unsigned j = i; j < p->n; j++) {
                                const struct bench_record *q = &p->recs[j];
                                if (!done[j] && strcmp(q->metric, r->metric) == 0 &&
                                    strcmp(q->suite, r->suite) == 0 &&
                                    strcmp(q->mode, r->mode) == 0 && q->workers >= last &&
                                    (best == p->n || q->workers < p->recs[best].workers))
                                        best = j;
                        }
                        if (best == p->n)
                                break;
                        done[best] = true;
                        last = p->recs[best].workers;
                        bench_stats(&p->recs[best], &med, &lo, &hi);
                        fprintf(p->gp, "%u %.6g %.6g %.6g\n", last, med, lo, hi);
                }
                fprintf(p->gp, "EOD\n");
                series[ns++] = r;
        }
        snprintf(title, sizeof(title), "%s over workers (%s, %s is better)", any->metric,
                 any->unit, any->lower_is_better ? "lower" : "higher");
        fprintf(p->gp, "set title ");
        gp_str(p->gp, title);
        fprintf(p->gp,
                " font ',11'\nset logscale x 2\nset xrange [%g:%g]\nset yrange [0:*]\n"
                "set xlabel 'workers'\nset grid ytics\nset key bottom right\n",
                wlo / 1.5, whi * 1.5);
        fprintf(p->gp, "plot");
        for (unsigned i = 0; i < ns; i++) {
                char name[128];

                snprintf(name, sizeof(name), "%s %s", series[i]->suite, series[i]->mode);
                fprintf(p->gp, "%s $L%u using 1:2:3:4 with yerrorlines lw 2 pt 7 lt %u "
                               "title ",
                        i ? ", \\\n    " : "", i, colour(p, series[i]->mode));
                gp_str(p->gp, name);
        }
        fprintf(p->gp, "\n");
}

/* The charts of the grid: the first record of each suite/case/metric
 * that is not drawn as a line. */
static unsigned grid_groups(const struct plot *p, unsigned *first)
{
        bool seen[BENCH_MAX_RECORDS] = {false};
        unsigned k = 0;

        for (unsigned i = 0; i < p->n; i++) {
                if (seen[i] || strcmp(p->recs[i].metric, PLOT_LINE_METRIC) == 0)
                        continue;
                first[k++] = i;
                for (unsigned j = i; j < p->n; j++)
                        if (same_group(&p->recs[j], &p->recs[i]))
                                seen[j] = true;
        }
        return k;
}

/* A panel that says there is nothing to draw. */
static void empty_chart(struct plot *p, double top_px, double h_px, const char *why)
{
        panel(p, 0, top_px, PLOT_WIDTH_PX, h_px);
        fprintf(p->gp, "unset border\nunset xtics\nunset ytics\nset title ");
        gp_str(p->gp, why);
        fprintf(p->gp, "\nplot [0:1] [0:1] NaN notitle\nset border\n");
}

static void write_script(struct plot *p, const char *path)
{
        static struct bench_ratio x[BENCH_MAX_RATIOS], head[BENCH_HEADLINE_MAX];
        static unsigned first[BENCH_MAX_RECORDS];
        unsigned nx = bench_ratios(p->recs, p->n, x, BENCH_MAX_RATIOS), kept = 0;
        unsigned nh = bench_headline(x, nx, head, BENCH_HEADLINE_MAX);
        unsigned ng = p->all ? grid_groups(p, first) : 0, ncells = ng, cols, rows;
        double head_px = PLOT_HEAD_PAD + PLOT_BAR_PX * (nh ? nh : 1), ratio_px, cell_w;
        bool line = false;

        /* A refused ratio (a floor slower than the side) has no bar, nor
         * one that no round paired. */
        for (unsigned i = 0; i < nx; i++)
                if (!x[i].refused && isfinite(x[i].value))
                        x[kept++] = x[i];
        nx = p->all ? kept : 0;
        ratio_px = nx ? PLOT_RATIO_PAD + PLOT_BAR_PX * nx : 0;
        for (unsigned i = 0; i < p->n && !line && p->all; i++)
                line = strcmp(p->recs[i].metric, PLOT_LINE_METRIC) == 0;
        ncells += line;
        cols = ncells < PLOT_COLS ? (ncells ? ncells : 1) : PLOT_COLS;
        rows = (ncells + cols - 1) / cols;
        cell_w = (double)PLOT_WIDTH_PX / cols;
        p->height = PLOT_TITLE_PX + (unsigned)(head_px + ratio_px) + rows * PLOT_CELL_PX;

        fprintf(p->gp,
                "set terminal svg size %u,%u dynamic noenhanced font 'sans,11' "
                "background '#ffffff'\nset output ",
                PLOT_WIDTH_PX, p->height);
        gp_str(p->gp, path);
        fprintf(p->gp, "\n");
        for (unsigned i = 0; i < NPALETTE; i++)
                fprintf(p->gp, "set linetype %u lc rgb '%s' lw 1.5\n", i + 1, palette[i]);
        fprintf(p->gp,
                "set style fill solid 0.75 border -1\nset bars small\n"
                "set multiplot title 'percore-bench: medians of the rounds, error bars from "
                "the min to the max round' font ',14'\n");
        if (nh)
                ratio_chart(p, head, nh, PLOT_TITLE_PX, head_px, true);
        else
                empty_chart(p, PLOT_TITLE_PX, head_px,
                            "no percore side measured beside a peer: no headline");
        if (nx)
                ratio_chart(p, x, nx, PLOT_TITLE_PX + head_px, ratio_px, false);
        for (unsigned c = 0; c < ncells; c++) {
                double cx = (c % cols) * cell_w;
                double cy =
                        PLOT_TITLE_PX + head_px + ratio_px + (double)(c / cols) * PLOT_CELL_PX;
                if (c < ng)
                        bar_chart(p, first[c], cx, cy, cell_w, PLOT_CELL_PX);
                else
                        line_chart(p, cx, cy, cell_w, PLOT_CELL_PX);
        }
        fprintf(p->gp, "unset multiplot\nset output\n");
}

int bench_plot(const char *path, const struct bench_record *recs, unsigned n, bool all)
{
        struct plot p = {.recs = recs, .n = n, .all = all};
        void (*old)(int);
        struct stat st;
        int status, sig;

        if (n == 0)
                return 0;
        /* A gnuplot that dies early must not take the bench with it. */
        old = signal(SIGPIPE, SIG_IGN);
        for (int tries = 0;; tries++) {
                p.gp = popen("gnuplot", "w");
                if (p.gp == NULL) {
                        fprintf(stderr, "percore-bench: cannot run gnuplot: %s\n",
                                strerror(errno));
                        signal(SIGPIPE, old);
                        return -errno;
                }
                write_script(&p, path);
                status = pclose(p.gp);
                /* Debian 12's gnuplot 5.4 crashed once on a script that
                 * ran clean when fed again (a CI run; not reproduced):
                 * one more try, said aloud. popen's shell reports the
                 * crash as status 128 + the signal. */
                sig = status == -1 ? 0
                      : WIFSIGNALED(status) ? WTERMSIG(status)
                      : WIFEXITED(status) && WEXITSTATUS(status) > 128 ? WEXITSTATUS(status) - 128
                      : 0;
                if (tries > 0 || sig == 0)
                        break;
                fprintf(stderr, "percore-bench: gnuplot died of signal %d writing %s; "
                                "running it once more\n",
                        sig, path);
        }
        signal(SIGPIPE, old);
        if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
                        fprintf(stderr, "percore-bench: --plot needs gnuplot (Debian: "
                                        "gnuplot-nox); it could not be run\n");
                else
                        fprintf(stderr,
                                "percore-bench: gnuplot failed (status %d) "
                                "writing %s\n",
                                status, path);
                return -EIO;
        }
        if (stat(path, &st) != 0 || st.st_size == 0) {
                fprintf(stderr, "percore-bench: gnuplot wrote no plot to %s\n", path);
                return -EIO;
        }
        return 0;
}
