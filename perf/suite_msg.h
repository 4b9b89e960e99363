/* SPDX-License-Identifier: MIT */
/*
 * What the msg suite lends the fiber suite: its call case, run with
 * another way of issuing the round trips.
 */
#ifndef PC_BENCH_SUITE_MSG_H
#define PC_BENCH_SUITE_MSG_H

#include <stdbool.h>

#include "bench.h"

/*
 * One run of the call case (call_rtt_ns) with @start issuing the round
 * trips: a runtime of 2 workers with shard mailboxes and no blocking lane;
 * @start runs on worker 0 once the clock runs, and whatever it sets off
 * calls msg_call_round() on the caller's worker after each round trip,
 * going on while that returns true. Returns ns per round trip, or a
 * negative errno. Main thread only.
 */
double msg_call_rtt(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    pc_task_fn start);
/* The call case's own percore side: pc_call() with a callback that calls
 * again. */
double msg_call_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    void *ctx);
/* Count one round trip; false once the run stops. Worker only. */
bool msg_call_round(void);

#endif
