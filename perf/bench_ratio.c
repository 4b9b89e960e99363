/* SPDX-License-Identifier: MIT */
/*
 * The statistics of percore-bench: medians of the rounds, the ratio of
 * every percore side to every peer of its row, and the headline among
 * them. Apart from bench.c (which runs the suites and prints) so a test
 * can feed it fixed numbers.
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

/* ---- the headline -------------------------------------------------------- */

/* A ratio the headline may show: to a peer a user would pick instead. */
static bool headline_candidate(const struct bench_ratio *r)
{
        return !r->refused && ratio_ok(r->value) && !r->side->extra && !r->side->info &&
               !r->peer->floor && strncmp(r->peer->mode, "peer:", 5) == 0;
}

static bool is_tpc(const struct bench_record *r)
{
        return strcmp(r->mode, "tpc") == 0;
}

static bool same_case(const struct bench_record *a, const struct bench_record *b)
{
        return strcmp(a->suite, b->suite) == 0 && strcmp(a->kase, b->kase) == 0;
}

/* Keep of @pick[0..n) (flags @keep) only the lowest ratio of each case. */
static void worst_of_each_case(const struct bench_ratio **pick, unsigned n, bool *keep)
{
        for (unsigned i = 0; i < n; i++)
                for (unsigned j = 0; j < n && keep[i]; j++)
                        if (j != i && keep[j] &&
                            same_case(pick[i]->side, pick[j]->side) &&
                            (pick[j]->value < pick[i]->value ||
                             (pick[j]->value == pick[i]->value && j < i)))
                                keep[i] = false;
}

/* Keep of those @keep says at most @max: the suites in turn (in order of
 * first appearance) give their lowest ratio left. */
static void suites_in_turn(const struct bench_ratio **pick, unsigned n, bool *keep,
                           unsigned max)
{
        const char *suites[BENCH_MAX_RATIOS];
        bool left[BENCH_MAX_RATIOS], took = true;
        unsigned ns = 0, kept = 0;

        for (unsigned i = 0; i < n; i++) {
                unsigned s = 0;

                left[i] = keep[i];
                keep[i] = false;
                while (s < ns && strcmp(suites[s], pick[i]->side->suite) != 0)
                        s++;
                if (s == ns)
                        suites[ns++] = pick[i]->side->suite;
        }
        while (kept < max && took) {
                took = false;
                for (unsigned s = 0; s < ns && kept < max; s++) {
                        unsigned best = n;

                        for (unsigned i = 0; i < n; i++)
                                if (left[i] &&
                                    strcmp(pick[i]->side->suite, suites[s]) == 0 &&
                                    (best == n || pick[i]->value < pick[best]->value))
                                        best = i;
                        if (best == n)
                                continue;
                        left[best] = false;
                        keep[best] = true;
                        kept++;
                        took = true;
                }
        }
}

unsigned bench_headline(const struct bench_ratio *x, unsigned nx, struct bench_ratio *out,
                        unsigned max)
{
        const struct bench_ratio *pick[BENCH_MAX_RATIOS];
        bool keep[BENCH_MAX_RATIOS];
        unsigned n = 0, k = 0, kept;

        /* A row's side (tpc, else the first seen) and its worst peer. */
        for (unsigned i = 0; i < nx; i++) {
                const struct bench_ratio *r = &x[i];
                unsigned j = 0;

                if (!headline_candidate(r))
                        continue;
                while (j < n && !bench_same_row(pick[j]->side, r->side))
                        j++;
                if (j == n && n < BENCH_MAX_RATIOS)
                        pick[n++] = r;
                else if (j < n && is_tpc(r->side) && !is_tpc(pick[j]->side))
                        pick[j] = r;
                else if (j < n && r->side == pick[j]->side && r->value < pick[j]->value)
                        pick[j] = r;
        }
        for (unsigned i = 0; i < n; i++)
                keep[i] = true;
        if (n > max)
                worst_of_each_case(pick, n, keep);
        kept = 0;
        for (unsigned i = 0; i < n; i++)
                kept += keep[i];
        if (kept > max)
                suites_in_turn(pick, n, keep, max);
        for (unsigned i = 0; i < n && k < max; i++)
                if (keep[i])
                        out[k++] = *pick[i];
        return k;
}
