/* SPDX-License-Identifier: MIT */
/*
 * The msg suite's peers: DPDK's rte_ring one way (peer:rte_ring) and as a
 * call path (peer:rte_ring_rtt), and one cache line bounced between two
 * threads (peer:pingpong, the floor of a round trip). Each runs on the two
 * CPUs the suite's workers use (msg_where) and is a side of its case
 * (bench_run_fn), probed around every run (msg_checked()).
 */
#ifndef PC_BENCH_MSG_PEERS_H
#define PC_BENCH_MSG_PEERS_H

#include <stdbool.h>

#include "bench.h"
#include "msg_pair.h"

/*
 * DPDK rte_ring SP/SC peer of pc_submit(): one thread on @cpu0 enqueues
 * bursts of 32 message pointers for @duration_s, one on @cpu1 dequeues
 * bursts and runs each. @seen as for msg_pair_run(). Returns messages per
 * second, or a negative errno (-ENOTSUP when percore-bench was built
 * without DPDK). Main thread only.
 */
double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2]);

/*
 * DPDK rte_ring round trip, the peer of pc_call(): a request ring and a
 * reply ring (SP/SC each); the thread on @cpu0 puts one message (fn, arg)
 * on the request ring and spins on the reply ring, the one on @cpu1 spins
 * on the request ring, runs fn(arg) into the message's result and puts the
 * message on the reply ring; one message in flight; each spin makes @pace
 * pauses between two polls (msg_pause()). @seen as for msg_pair_run().
 * Returns ns per round trip, or a negative errno (-ENOTSUP without DPDK).
 * Main thread only.
 */
double msg_peer_rte_ring_rtt(bool pin, int cpu0, int cpu1, double duration_s,
                             unsigned pace, struct msg_cpu seen[2]);

/*
 * The floor of a round trip: a thread on @cpu0 writes an odd value to one
 * cache line and spins until the thread on @cpu1, spinning on the same
 * line, answers with the next even one, for @duration_s; neither pauses
 * between two looks. @seen as for msg_pair_run(). Returns ns per round
 * trip, or a negative errno (-EINVAL for a duration not above 0, or the
 * pin's error). Main thread only.
 */
double msg_peer_pingpong(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2]);

/* The sides: peer:rte_ring beside the case named by @ctx (a string),
 * peer:rte_ring_rtt and peer:pingpong beside the call case. Each returns
 * its figure, BENCH_MOVED or a negative errno, as msg_checked(). Main
 * thread only. */
double msg_side_rte_ring(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx);
double msg_side_rte_ring_rtt(const struct bench_opts *o, enum pc_mode mode,
                             unsigned *workers, void *ctx);
double msg_side_pingpong(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx);

#endif
