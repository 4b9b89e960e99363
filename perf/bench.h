/* SPDX-License-Identifier: MIT */
/*
 * percore-bench internals: the options every suite sees, and the record
 * each measurement produces. A suite measures; bench.c repeats, takes the
 * median and prints the table and JSON.
 */
#ifndef PC_BENCH_H
#define PC_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "percore.h"

#define BENCH_MAX_RECORDS 512
#define BENCH_MAX_RUNS 64

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

/* One measurement: a value per run; the table shows the median. */
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
};

/*
 * One measured run of a case. Returns the value, or a negative errno
 * (as a double) when the run could not be made.
 */
typedef double (*bench_run_fn)(const struct bench_opts *o, enum pc_mode mode,
                               unsigned *workers_out, void *ctx);

/*
 * Run @fn once to warm up, then o->runs times, and record the values.
 * Returns 0 or the first error.
 */
int bench_measure(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *mode_name, enum pc_mode mode, const char *metric,
                  const char *unit, bool lower_is_better, bench_run_fn fn, void *ctx);

/*
 * Report a second metric from inside a measured run (say, steals beside a
 * makespan). It becomes its own record with the suite, case, mode and
 * workers of the measurement in progress; ignored during the warm-up.
 */
void bench_extra(const char *metric, const char *unit, bool lower_is_better, double v);

/* Progress for long suites, on stderr. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A runtime config for a bench run: the given mode and worker count, polling
 * idle (benchmarks measure the loop, not wake-up latency). */
void bench_config(struct pc_config *cfg, const struct bench_opts *o, enum pc_mode mode);

/* The median, min and max of a record's values. */
void bench_stats(const struct bench_record *r, double *med, double *lo, double *hi);

/* Whether an executable gnuplot is on PATH (--plot checks before the
 * suites run, not after minutes of them). */
bool bench_plot_available(void);

/*
 * Draw @n records as one SVG at @path with gnuplot: per suite/case/metric
 * a bar per mode or peer, median with min-max error bars. Returns 0, or a
 * negative errno after saying why on stderr (gnuplot missing or failing).
 */
int bench_plot(const char *path, const struct bench_record *recs, unsigned n);

/* Suites. */
int suite_spawn(const struct bench_opts *o);
int suite_imbalance(const struct bench_opts *o);
int suite_msg(const struct bench_opts *o);
int suite_fwd(const struct bench_opts *o);
int suite_echo(const struct bench_opts *o);
int suite_kv(const struct bench_opts *o);

#endif
