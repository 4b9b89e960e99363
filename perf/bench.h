/* SPDX-License-Identifier: MIT */
/*
 * percore-bench internals: the options every suite sees, and the record
 * each measurement produces. A suite measures; bench.c repeats, takes the
 * median and prints the table and JSON.
 */
#ifndef PC_BENCH_H
#define PC_BENCH_H

#include <errno.h>
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

/*
 * One measured run of a case. Returns the value, or a negative errno
 * (as a double) when the run could not be made.
 */
typedef double (*bench_run_fn)(const struct bench_opts *o, enum pc_mode mode,
                               unsigned *workers_out, void *ctx);

/*
 * Run @fn once to warm up, then o->runs times, and record the values: a
 * bench_compare() of one side, so a warm-up returning -ENOTSUP is reported
 * skipped and returns 0. Returns 0 or the first other error.
 */
int bench_measure(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *mode_name, enum pc_mode mode, const char *metric,
                  const char *unit, bool lower_is_better, bench_run_fn fn, void *ctx);

/* One side of a comparison: a percore mode or a peer. */
struct bench_side {
        const char *name;  /* "tpc", "elastic", "peer:NAME" */
        enum pc_mode mode; /* passed to fn; peers ignore it */
        bench_run_fn fn;
        void *ctx;
};

/*
 * Mark the records of peer @mode in @suite/@kase, measured so far, as a
 * floor: a bound nothing can pass, like one cache line bounced between two
 * CPUs for a round trip. A side that measured better than its floor gets
 * no ratio to it: that floor measured something else (another placement,
 * a preempted thread), and a ratio to it would mislead. Main thread only.
 */
void bench_set_floor(const char *suite, const char *kase, const char *mode);

/*
 * What a run returns (as a double, like an error) when a thread it timed
 * did not stay on the CPU it was placed on: the round keeps no value for
 * that side (NAN), the bench says so and goes on. A warm-up that returns
 * it is used as any warm-up.
 */
#define BENCH_MOVED (-(double)EXDEV)

/*
 * Measure @n sides of one case in alternated rounds: a warm-up of each,
 * then o->runs rounds of one run of each side in turn (A B A B ...), so a
 * drift of the shared machine hits every side alike. One record per side;
 * value i of every side's record (and of its bench_extra records) comes
 * from round i, so the table and JSON give each percore side's ratio to
 * each peer as the median of the per-round ratios. A side whose warm-up
 * returns -ENOTSUP is reported skipped (with the reason it printed) and
 * left out; any other error ends the comparison. Returns 0 or that error.
 */
int bench_compare(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *metric, const char *unit, bool lower_is_better,
                  const struct bench_side *sides, unsigned n);

/* How far apart two rounds' conditions may be for their values to pair. */
#define BENCH_COND_MATCH 1.3
/* How far apart (in share of the machine's CPU time) the host steal of a
 * side's run and its peer's may be for the two to pair: a host that took
 * a fifth of the CPUs from one run and nothing from the other compares two
 * machines, and the side that copes better with a busy host wins a ratio
 * it would not win on a quiet one. */
#define BENCH_STEAL_MATCH 0.05

/*
 * Say what the machine was like during the measured run in progress:
 * condition @k (below BENCH_MAX_COND) is one positive number, such as the
 * msg suite's cache-line round trip between its two CPUs (which tells
 * where a host placed two vCPUs) and the share of the run its threads had
 * their CPUs. A round whose side and peer ran under a condition more than
 * BENCH_COND_MATCH times apart gives no ratio between them: it would
 * compare two machines. Ignored during the warm-up; a condition a run did
 * not report pairs with anything.
 */
void bench_condition(unsigned k, double c);

/*
 * Report a second metric from inside a measured run (say, steals beside a
 * makespan). It becomes its own record with the suite, case, mode and
 * workers of the measurement in progress, its value i from round i (NAN
 * for a round that reported none); ignored during the warm-up.
 */
void bench_extra(const char *metric, const char *unit, bool lower_is_better, double v);

/*
 * The same for a diagnostic that is neither better nor worse, such as the
 * CPU the load generator itself used: printed and written beside the
 * figures, with no ratio.
 */
void bench_extra_info(const char *metric, const char *unit, double v);

/* Whether a record's mode names a peer ("peer:NAME") rather than a
 * percore side, or a baseline: percore itself in its usual style
 * ("base:NAME", say callbacks beside fibers), which the other sides'
 * ratios are taken against like a peer's. */
static inline bool bench_is_peer(const char *mode)
{
        return strncmp(mode, "peer:", 5) == 0 || strncmp(mode, "base:", 5) == 0;
}

/* Progress for long suites, on stderr. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A runtime config for a bench run: the given mode and worker count, polling
 * idle (benchmarks measure the loop, not wake-up latency), workers that stay
 * pinned (not overprovisioned). */
void bench_config(struct pc_config *cfg, const struct bench_opts *o, enum pc_mode mode);

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

/*
 * Facts a suite found about where it ran (its CPUs, their topology): @json,
 * a JSON object's text, goes into the JSON as "info": {@suite: @json};
 * @text (may be NULL) is printed under the table. The last call of a
 * suite wins. Main thread only.
 */
void bench_info(const char *suite, const char *json, const char *text);

/* bench_info() of an object made of @members (JSON members, "a": 1, ...)
 * and a text of @title, then @lines (lines after the first indented by
 * two spaces), indented under it. Main thread only. */
void bench_info_of(const char *suite, const char *members, const char *title,
                   const char *lines);

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
 * How far a side may measure past its floor before the floor is refused:
 * a side that reaches its floor (a call whose round trip is the line's
 * own, as on a Zen 5 host with its vCPUs ~400 ns apart: per-process
 * medians 0.93-1.01x) lands either side of it by the rounds' noise; a
 * floor that measures something else is off by far more (343 against
 * 179 ns, the case that made the rule).
 */
#define BENCH_FLOOR_SLACK 1.05

/*
 * Whether a floor's figure @floor is worse than the side's @side that it
 * bounds (higher for a lower-is-better metric) by more than
 * BENCH_FLOOR_SLACK, which refuses a ratio of medians measured apart;
 * false when either is not a finite number.
 */
bool bench_floor_refuses(bool lower_is_better, double side, double floor);

/* Whether execvp() would find @name: a path to an executable, or an
 * executable file of that name in a directory on PATH. Any thread. */
bool bench_on_path(const char *name);

/* Whether an executable gnuplot is on PATH (--plot checks before the
 * suites run, not after minutes of them). */
bool bench_plot_available(void);

/*
 * Draw @n records as one SVG at @path with gnuplot: a summary of every
 * percore/peer ratio, then a grid of charts, one per suite/case/metric with
 * a bar per side (median, min-max error bar), and idle_iter_ns as a line
 * over worker counts. Returns 0, or a negative errno after saying why on
 * stderr (gnuplot missing or failing).
 */
int bench_plot(const char *path, const struct bench_record *recs, unsigned n);

/* Suites. */
int suite_spawn(const struct bench_opts *o);
int suite_imbalance(const struct bench_opts *o);
int suite_msg(const struct bench_opts *o);
int suite_fiber(const struct bench_opts *o);
int suite_fwd(const struct bench_opts *o);
int suite_echo(const struct bench_opts *o);
int suite_kv(const struct bench_opts *o);
int suite_tcp(const struct bench_opts *o);
/* suite_echo.c: pc-echo --fibers ("fibers") against pc-echo's callbacks
 * ("base:callbacks"), one worker, the client on the same CPUs; for the
 * fiber suite's echo case. */
int echo_styles(const struct bench_opts *o, const char *suite, const char *kase);

#endif
