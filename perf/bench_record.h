/* SPDX-License-Identifier: MIT */
/*
 * What percore-bench measures and compares: the options every suite sees,
 * one record per measurement and one ratio per percore side and peer of a
 * row. Types only; bench.h runs suites, bench_ratio.h computes from
 * records, bench_report.h and plot.h write them.
 */
#ifndef PC_BENCH_RECORD_H
#define PC_BENCH_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "percore.h"

#define BENCH_MAX_RECORDS 512
#define BENCH_MAX_RUNS 64
#define BENCH_MAX_SIDES 8  /* sides of one bench_compare() */
#define BENCH_MAX_RATIOS 256
#define BENCH_MAX_COND 4   /* conditions a run may report */

struct bench_opts {
        double duration;   /* seconds per measured run */
        unsigned workers;  /* 0 = runtime default */
        unsigned runs;     /* measured repetitions */
        bool quick;
        const char *json;
        const char *plot;  /* SVG path, or NULL */
        bool plots_all;    /* the plot holds every ratio and chart, not the headline alone */
        enum pc_mode modes[3];
        unsigned nmodes;
};

/*
 * One measurement: a value per run; the table shows the median. Records of
 * one bench_compare() share a round group, and value i of each came from
 * round i; a run that reported no value for a bench_extra() metric holds
 * NAN there, which the statistics skip.
 */
struct bench_record {
        const char *suite;
        const char *kase;   /* the "case" field */
        char mode[32];      /* "tpc", "elastic", "peer:NAME" */
        unsigned workers;
        const char *metric;
        const char *unit;
        bool lower_is_better;
        double values[BENCH_MAX_RUNS];
        unsigned nvalues;
        unsigned group;     /* the bench_compare() it came from, from 1 */
        bool floor;         /* a peer no percore side can beat (bench_set_floor()) */
        bool info;          /* a diagnostic beside the figures (bench_extra_info()): no ratio */
        bool extra;         /* reported beside the case's compared metric (bench_extra()) */
        /* round i's bench_condition()s; 0 or NAN: none */
        double cond[BENCH_MAX_RUNS][BENCH_MAX_COND];
        /* round i's host steal over its run (share of the machine's CPU
         * time, 0-1, from /proc/stat, less one tick); NAN: not known
         * (or a run too short to tell) */
        double steal[BENCH_MAX_RUNS];
};

/*
 * A percore side against a peer in the same row (suite, case, metric,
 * workers), oriented so that above 1 means percore is better: peer/side
 * for lower-is-better metrics, side/peer otherwise. From one comparison it
 * is the median of the per-round ratios, with their min and max; from
 * records measured apart, the ratio of the medians with @rounds 0 and no
 * range (@min, @max NAN). A ratio pairs only rounds whose conditions
 * match (bench_condition()). @refused: the peer is a floor and the ratio
 * says it measured worse than the side (above 1), so the floor did not
 * measure the floor and the table and JSON give no ratio (value, min and
 * max are still computed).
 */
struct bench_ratio {
        const struct bench_record *side, *peer;
        double value, min, max;
        unsigned rounds;
        bool refused;
};

/* How far apart two rounds' conditions may be for their values to pair. */
#define BENCH_COND_MATCH 1.3
/* How far apart (in share of the machine's CPU time) the host steal of a
 * side's run and its peer's may be for the two to pair: a host that took
 * a fifth of the CPUs from one run and nothing from the other compares two
 * machines, and the side that copes better with a busy host wins a ratio
 * it would not win on a quiet one. */
#define BENCH_STEAL_MATCH 0.05

/*
 * How far a side may measure past its floor before the floor is refused:
 * a side that reaches its floor (a call whose round trip is the line's
 * own) lands either side of it by the rounds' noise; a floor that
 * measures something else (another placement of the vCPUs, a preempted
 * thread) is off by far more.
 */
#define BENCH_FLOOR_SLACK 1.05

/* Whether a record's mode names a peer ("peer:NAME") rather than a
 * percore side, or a baseline: percore itself in its usual style
 * ("base:NAME", say callbacks beside fibers), which the other sides'
 * ratios are taken against like a peer's. */
static inline bool bench_is_peer(const char *mode)
{
        return strncmp(mode, "peer:", 5) == 0 || strncmp(mode, "base:", 5) == 0;
}

#endif
