/* SPDX-License-Identifier: MIT */
/*
 * The statistics of percore-bench: medians of the rounds, and the ratio of
 * every percore side to every peer of its row. Apart from bench.c (which
 * runs the suites and prints) so a test can feed it fixed numbers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ratio.h"

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Median, min and max of the finite values among @n; NAN if none. */
static void stats(const double *values, unsigned n, double *med, double *lo, double *hi)
{
        double v[BENCH_MAX_RUNS];
        unsigned k = 0;

        for (unsigned i = 0; i < n && i < BENCH_MAX_RUNS; i++)
                if (isfinite(values[i]))
                        v[k++] = values[i];
        if (k == 0) {
                *med = *lo = *hi = NAN;
                return;
        }
        qsort(v, k, sizeof(double), cmp_double);
        *med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
        *lo = v[0];
        *hi = v[k - 1];
}

void bench_stats(const struct bench_record *r, double *med, double *lo, double *hi)
{
        stats(r->values, r->nvalues, med, lo, hi);
}

double bench_median(const struct bench_record *r)
{
        double med, lo, hi;

        bench_stats(r, &med, &lo, &hi);
        return med;
}

unsigned bench_finite_count(const struct bench_record *r)
{
        unsigned k = 0;

        for (unsigned i = 0; i < r->nvalues; i++)
                k += isfinite(r->values[i]) != 0;
        return k;
}

bool bench_same_row(const struct bench_record *a, const struct bench_record *b)
{
        return strcmp(a->suite, b->suite) == 0 && strcmp(a->kase, b->kase) == 0 &&
               strcmp(a->metric, b->metric) == 0 && a->workers == b->workers;
}

static bool ratio_ok(double x)
{
        return isfinite(x) && x > 0;
}

/* Above 1 when the percore side @s is better than the peer @p. */
static double oriented(bool lower_is_better, double s, double p)
{
        return lower_is_better ? p / s : s / p;
}

bool bench_cond_match(double a, double b)
{
        if (!(isfinite(a) && isfinite(b) && a > 0 && b > 0))
                return true;
        return fmax(a, b) / fmin(a, b) <= BENCH_COND_MATCH;
}

bool bench_steal_match(double a, double b)
{
        if (!(isfinite(a) && isfinite(b)))
                return true;
        return fabs(a - b) <= BENCH_STEAL_MATCH;
}

bool bench_floor_refuses(bool lower_is_better, double side, double floor)
{
        /* A floor equal to the side, or within the noise of it, is still
         * a floor reached, not beaten. */
        return isfinite(side) && isfinite(floor) &&
               oriented(lower_is_better, side, floor) > BENCH_FLOOR_SLACK;
}

static bool ratio_of(const struct bench_record *s, const struct bench_record *p,
                     struct bench_ratio *out)
{
        double per[BENCH_MAX_RUNS];
        unsigned k = 0;

        out->side = s;
        out->peer = p;
        if (s->group != p->group) {
                /* Measured apart: no rounds to pair. */
                out->value = oriented(s->lower_is_better, bench_median(s), bench_median(p));
                out->min = out->max = NAN;
                out->rounds = 0;
                out->refused = p->floor && bench_floor_refuses(s->lower_is_better,
                                                               bench_median(s), bench_median(p));
                return ratio_ok(out->value);
        }
        for (unsigned i = 0; i < s->nvalues && i < p->nvalues; i++) {
                double x = oriented(s->lower_is_better, s->values[i], p->values[i]);
                bool match = true;

                for (unsigned c = 0; c < BENCH_MAX_COND; c++)
                        match &= bench_cond_match(s->cond[i][c], p->cond[i][c]);
                match &= bench_steal_match(s->steal[i], p->steal[i]);
                if (ratio_ok(x) && match)
                        per[k++] = x;
        }
        out->rounds = k;
        stats(per, k, &out->value, &out->min, &out->max);
        /* A floor is beaten when the ratio says so: the median of the
         * rounds' ratios, each round a side and a peer under matching
         * conditions. Medians of the side's and the floor's values would
         * mix rounds run under different conditions (two placements of the
         * vCPUs), and can put the floor above a side that every like round
         * shows below it. */
        out->refused = p->floor && ratio_ok(out->value) && out->value > BENCH_FLOOR_SLACK;
        return ratio_ok(out->value);
}

unsigned bench_ratios(const struct bench_record *recs, unsigned n, struct bench_ratio *out,
                      unsigned max)
{
        unsigned k = 0;

        for (unsigned i = 0; i < n; i++) {
                if (bench_is_peer(recs[i].mode) || recs[i].info)
                        continue;
                for (unsigned j = 0; j < n && k < max; j++)
                        if (bench_is_peer(recs[j].mode) && !recs[j].info &&
                            bench_same_row(&recs[i], &recs[j]) &&
                            ratio_of(&recs[i], &recs[j], &out[k]))
                                k++;
        }
        return k;
}
