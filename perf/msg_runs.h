/* SPDX-License-Identifier: MIT */
/*
 * The notes the msg suite keeps of its runs: where each (case, side) ran
 * and what the probes said around each run, whether a run may be used,
 * the pauses the spinning peers poll with, what percore's call runs found
 * of their pair, and the JSON object and footer that say all of it. One
 * process's suite at a time; main thread only.
 */
#ifndef PC_BENCH_MSG_RUNS_H
#define PC_BENCH_MSG_RUNS_H

#include <stdint.h>

#include "bench.h"
#include "msg_probe.h"

/* The spinning peers whose paces are counted. */
#define MSG_MAX_PEERS 2

/*
 * Account a run of @side in @kase that ran where @seen says, with the
 * probes @b before it and @a after: @v when every pinned thread stayed on
 * its CPU and neither probe changed during the run, else BENCH_MOVED after
 * saying what happened. Errors pass through. The run's conditions go to
 * bench_condition() when msg_where is known.
 */
double msg_checked(const char *kase, const char *side, const struct msg_cpu seen[2],
                   double v, const struct msg_probe *b, const struct msg_probe *a);

/* The notes of a side's runs keep one per round (the warm-up first): a
 * try that is run again leaves its counts (runs, moved), not its note. */
void msg_drop_last_note(const char *kase, const char *side);

/* The pace whose @sample (ns per round trip, lower is better; NAN when it
 * could not be had) was shortest, each tried @tries times; counted for
 * @side. Pace 0 when nothing could be measured. */
unsigned msg_pace_pick(const char *side, double (*sample)(unsigned pace), unsigned tries);

/* What percore's call runs found of their pair (pc_shard_stats() of the
 * caller, worker 0, after each run): whether it ran near or far at the end
 * (by pc_shard_opts.call_near_ns and, between it and 4 times it, by trying
 * both), and how many slot calls reused a near pair's line. */
struct msg_call_pairs {
        unsigned runs, near_runs, far_runs;
        uint64_t slot_calls, slot_calls_near;
};

extern struct msg_call_pairs msg_call_pairs;

/* Forget the notes and paces of an earlier suite run. */
void msg_runs_reset(void);

/* The JSON object and the footer line of where the suite ran
 * (bench_info("msg", ...)). */
void msg_placement_info(void);

#endif
