/* SPDX-License-Identifier: MIT */
/*
 * The fiber suite's peers, programs of their own run as children
 * (peer_prog.h): go-fiber (go-fiber/main.go, Debian's golang-go) and
 * tokio-fiber (tokio-fiber/src/main.rs, Debian's librust-tokio-dev). Each
 * times a case itself and prints "CASE NS". Main thread only.
 */
#ifndef PC_BENCH_FIBER_PEERS_H
#define PC_BENCH_FIBER_PEERS_H

#include <stdbool.h>

enum fiber_peer { FIBER_PEER_GO, FIBER_PEER_TOKIO };

/* "peer:go", "peer:tokio": the bench side's name. */
const char *fiber_peer_name(enum fiber_peer p);

/* Whether @p was built: *@what then says what with ("go1.19.8", "tokio
 * 1.24.2"), else why not. Valid until the next call. */
bool fiber_peer_available(enum fiber_peer p, const char **what);

/*
 * Run case @kase ("switch", "pingpong", "spawn_join") of @p for @seconds,
 * the whole process on @cpu unless it is negative (Go with GOMAXPROCS=1:
 * one worker, like percore's). Returns the nanoseconds per operation it
 * printed, or a negative errno: -ENOENT (not built), -ETIMEDOUT (no answer
 * in time), -ECHILD (it exited without one, or not with 0), -EPROTO (an
 * answer that is not "KASE NS").
 */
double fiber_peer_run(enum fiber_peer p, const char *kase, int cpu, double seconds);

#endif
