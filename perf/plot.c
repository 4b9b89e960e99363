/* SPDX-License-Identifier: MIT */
/*
 * --plot: the results as one SVG, drawn by gnuplot run as a child process.
 * One small bar chart per suite/case/metric (their units differ, so they
 * cannot share an axis), stacked; in each, one bar per mode or peer at the
 * median, with an error bar from the min to the max run. A mode keeps its
 * colour in every chart.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PLOT_ROW_PX    240
#define PLOT_WIDTH_PX  900
#define PLOT_MAX_MODES 16

bool bench_plot_available(void)
{
        const char *path = getenv("PATH");
        char *copy, *save = NULL;
        bool found = false;

        if (path == NULL || (copy = strdup(path)) == NULL)
                return false;
        for (char *dir = strtok_r(copy, ":", &save); dir && !found;
             dir = strtok_r(NULL, ":", &save)) {
                char exe[4096];
                snprintf(exe, sizeof(exe), "%s/gnuplot", *dir ? dir : ".");
                found = access(exe, X_OK) == 0;
        }
        free(copy);
        return found;
}

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

static unsigned mode_colour(const char **modes, unsigned *nmodes, const char *mode)
{
        unsigned i;

        for (i = 0; i < *nmodes; i++)
                if (strcmp(modes[i], mode) == 0)
                        return i + 1;
        if (*nmodes < PLOT_MAX_MODES)
                modes[(*nmodes)++] = mode;
        return i + 1;
}

static void write_script(FILE *gp, const char *path, const struct bench_record *recs,
                         unsigned n, unsigned ngroups)
{
        const char *modes[PLOT_MAX_MODES];
        unsigned nmodes = 0;
        bool done[BENCH_MAX_RECORDS] = {false};

        fprintf(gp,
                "set terminal svg size %u,%u dynamic noenhanced font 'sans,11' "
                "background '#ffffff'\nset output ",
                PLOT_WIDTH_PX, PLOT_ROW_PX * ngroups);
        gp_str(gp, path);
        fprintf(gp,
                "\nset multiplot layout %u,1 title 'percore-bench: median of the "
                "runs, bars from min to max'\n"
                "set style fill solid 0.7 border -1\nset boxwidth 0.6\n"
                "set grid ytics\nset key off\n",
                ngroups);
        for (unsigned i = 0; i < n; i++) {
                char title[256];
                unsigned k = 0;
                double top = 0;

                if (done[i])
                        continue;
                for (unsigned j = i; j < n; j++)
                        if (same_group(&recs[j], &recs[i])) {
                                double med, lo, hi;
                                bench_stats(&recs[j], &med, &lo, &hi);
                                top = hi > top ? hi : top;
                                k++;
                        }
                snprintf(title, sizeof(title), "%s/%s: %s (%s, %s is better)",
                         recs[i].suite, recs[i].kase, recs[i].metric, recs[i].unit,
                         recs[i].lower_is_better ? "lower" : "higher");
                fprintf(gp, "set title ");
                gp_str(gp, title);
                fprintf(gp, "\nset xrange [-0.6:%g]\n", k - 0.4);
                /* An all-zero chart (steals in thread-per-core mode) still
                 * needs a y range. */
                fprintf(gp, top > 0 ? "set yrange [0:*]\n" : "set yrange [0:1]\n");
                /* Millions of tasks read better as 61.2M; ratios as 1.05. */
                fprintf(gp, top >= 1e4 ? "set format y '%%.1s%%c'\n"
                                       : "set format y '%%g'\n");
                /* x, median, min, max, box width, colour. */
                fprintf(gp, "plot '-' using 0:2:3:4:(0.6):5:xtic(1) with boxerrorbars "
                            "lc variable\n");
                for (unsigned j = i; j < n; j++) {
                        double med, lo, hi;
                        if (!same_group(&recs[j], &recs[i]))
                                continue;
                        done[j] = true;
                        bench_stats(&recs[j], &med, &lo, &hi);
                        fprintf(gp, "\"%s\" %.6g %.6g %.6g %u\n", recs[j].mode, med, lo,
                                hi, mode_colour(modes, &nmodes, recs[j].mode));
                }
                fprintf(gp, "e\n");
        }
        fprintf(gp, "unset multiplot\nset output\n");
}

int bench_plot(const char *path, const struct bench_record *recs, unsigned n)
{
        bool seen[BENCH_MAX_RECORDS] = {false};
        void (*old)(int);
        unsigned ngroups = 0;
        struct stat st;
        FILE *gp;
        int status;

        for (unsigned i = 0; i < n; i++) {
                if (seen[i])
                        continue;
                ngroups++;
                for (unsigned j = i; j < n; j++)
                        if (same_group(&recs[j], &recs[i]))
                                seen[j] = true;
        }
        if (ngroups == 0)
                return 0;
        /* A gnuplot that dies early must not take the bench with it. */
        old = signal(SIGPIPE, SIG_IGN);
        gp = popen("gnuplot", "w");
        if (gp == NULL) {
                fprintf(stderr, "percore-bench: cannot run gnuplot: %s\n",
                        strerror(errno));
                signal(SIGPIPE, old);
                return -errno;
        }
        write_script(gp, path, recs, n, ngroups);
        status = pclose(gp);
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
