/* SPDX-License-Identifier: MIT */
/*
 * percore-bench internals: what a suite calls to have its sides measured
 * in rounds and its records kept (bench.c), and the suites. A suite
 * measures; bench.c repeats; main.c runs the suites and hands the records
 * to bench_report.h's writers.
 */
#ifndef PC_BENCH_H
#define PC_BENCH_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench_ratio.h"
#include "bench_record.h"
#include "bench_report.h"
#include "percore.h"

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

/* Progress for long suites, on stderr. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A runtime config for a bench run: the given mode and worker count, polling
 * idle (benchmarks measure the loop, not wake-up latency), workers that stay
 * pinned (not overprovisioned). */
void bench_config(struct pc_config *cfg, const struct bench_opts *o, enum pc_mode mode);

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

/* Whether execvp() would find @name: a path to an executable, or an
 * executable file of that name in a directory on PATH. Any thread. */
bool bench_on_path(const char *name);

/* Suites percore-bench runs at most. */
#define BENCH_MAX_SUITES 16

/* Run suite @name (@run) with @o, noting the host's steal over it for
 * the writers. Returns what @run returned. Main thread only. */
int bench_run_suite(const char *name, int (*run)(const struct bench_opts *o),
                    const struct bench_opts *o);

/*
 * What the suites run so far made: their records, notes and steal, with
 * @config (@len bytes) the configuration the runs used: the bench's
 * settings for @o, then the environment on top, as pc_runtime_create()
 * applies them. Main thread only.
 */
void bench_results(const struct bench_opts *o, struct bench_results *r, char *config,
                   size_t len);

/* Suites. */
int suite_spawn(const struct bench_opts *o);
int suite_imbalance(const struct bench_opts *o);
int suite_msg(const struct bench_opts *o);
int suite_fiber(const struct bench_opts *o);
int suite_fwd(const struct bench_opts *o);
int suite_echo(const struct bench_opts *o);
int suite_kv(const struct bench_opts *o);
int suite_tcp(const struct bench_opts *o);
int suite_http(const struct bench_opts *o);
/* suite_echo.c: pc-echo --fibers ("fibers") against pc-echo's callbacks
 * ("base:callbacks"), one worker, the client on the same CPUs; for the
 * fiber suite's echo case. */
int echo_styles(const struct bench_opts *o, const char *suite, const char *kase);

#endif
