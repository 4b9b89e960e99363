/* SPDX-License-Identifier: MIT */
/*
 * percore-bench --plot: the records drawn as one SVG by gnuplot (plot.c).
 */
#ifndef PC_BENCH_PLOT_H
#define PC_BENCH_PLOT_H

#include <stdbool.h>

#include "bench_ratio.h"

/*
 * Draw @n records as one SVG at @path with gnuplot: the headline, each
 * case's percore side against its strongest peer (bench_headline()), the
 * ratios under 1 in red; with @all, every percore/peer ratio and a grid
 * of charts after it, one per suite/case/metric with a bar per side
 * (median, min-max error bar), and idle_iter_ns as a line over worker
 * counts. Returns 0, or a negative errno after saying why on stderr
 * (gnuplot missing or failing). Main thread only.
 */
int bench_plot(const char *path, const struct bench_record *recs, unsigned n, bool all);

#endif
