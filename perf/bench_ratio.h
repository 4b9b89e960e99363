/* SPDX-License-Identifier: MIT */
/*
 * The statistics of percore-bench on its records: medians of the rounds,
 * and the ratio of every percore side to every peer of its row. Pure
 * functions of the records (bench_ratio.c), so a test can feed them fixed
 * numbers. Any thread.
 */
#ifndef PC_BENCH_RATIO_H
#define PC_BENCH_RATIO_H

#include <stdbool.h>

#include "bench_record.h"

/* The median, min and max of a record's values, NANs left out (all three
 * NAN when nothing is left). */
void bench_stats(const struct bench_record *r, double *med, double *lo, double *hi);

/*
 * The ratios of every percore side to every peer in the same row of @n
 * records, in record order, at most @max of them into @out; a pair whose
 * ratio is not a positive finite number is left out. Returns the count.
 */
unsigned bench_ratios(const struct bench_record *recs, unsigned n, struct bench_ratio *out,
                      unsigned max);

/* The median of a record's finite values (NAN when none), how many there
 * are, and whether two records are in one row (suite, case, metric,
 * workers). */
double bench_median(const struct bench_record *r);
unsigned bench_finite_count(const struct bench_record *r);
bool bench_same_row(const struct bench_record *a, const struct bench_record *b);

/* Whether conditions @a and @b (one of bench_condition()) let two runs
 * pair. */
bool bench_cond_match(double a, double b);

/* Whether two runs' host steal shares @a and @b (0-1; NAN: not known, which
 * pairs with anything) are within BENCH_STEAL_MATCH of each other. */
bool bench_steal_match(double a, double b);

/*
 * Whether a floor's figure @floor is worse than the side's @side that it
 * bounds (higher for a lower-is-better metric) by more than
 * BENCH_FLOOR_SLACK, which refuses a ratio of medians measured apart;
 * false when either is not a finite number.
 */
bool bench_floor_refuses(bool lower_is_better, double side, double floor);

/* Bars the headline chart holds at most: one screen. */
#define BENCH_HEADLINE_MAX 25

/*
 * The headline of @nx ratios (bench_ratios()): for each row of a compared
 * metric (not a bench_extra() one), its "tpc" side (else its first percore
 * side) against its strongest peer, the "peer:" one that side does worst
 * against; floors, baselines ("base:") and refused ratios are left out.
 * Past @max rows, each suite/case keeps only its worst row; past @max
 * still, the suites take turns giving their worst row left until there
 * are @max. At most @max into @out, in the order of @x. Returns the count.
 */
unsigned bench_headline(const struct bench_ratio *x, unsigned nx, struct bench_ratio *out,
                        unsigned max);

#endif
