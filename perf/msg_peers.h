/* SPDX-License-Identifier: MIT */
/*
 * What the msg suite shares with its peers (the message sink both sides
 * call, a pair of pinned threads) and with the fiber suite (its call round
 * trip).
 */
#ifndef PC_BENCH_MSG_PEERS_H
#define PC_BENCH_MSG_PEERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench.h"

/* The receiving side's count: a plain counter its thread owns, published
 * every 64 messages so the sender's flow control reads a line that rarely
 * moves. */
struct msg_sink {
        uint64_t n __attribute__((aligned(64))); /* not beside the sender's fields */
        char pad0[56];
        _Atomic uint64_t pub;
        char pad1[56];
};

/* One message's work, the same for percore and its peers. */
void msg_sink_fn(void *arg);

/*
 * Where one timed thread ran: the CPU it was pinned to (-1 when not
 * pinned) and what sched_getcpu() said just before and just after its
 * timed part. A pinned thread cannot migrate, but a pin can fail or be
 * undone (a cgroup's cpuset changing under the process, taskset -p), and a
 * run measured elsewhere than on the CPUs named must not be used.
 */
struct msg_cpu {
        int want, before, after;
        long switches; /* involuntary context switches in the timed part */
        double oncpu;  /* its CPU time over the timed part's wall time */
};

/* The calling thread's involuntary context switches so far: another
 * runnable thread took its CPU (a loaded machine), which a spinning
 * measurement pays for in full. */
long msg_thread_preemptions(void);

/* Whether a thread that was pinned ran anywhere else. */
static inline bool msg_cpu_moved(const struct msg_cpu *c)
{
        return c->want >= 0 && (c->before != c->want || c->after != c->want);
}

/*
 * Run @a on @cpu0 and @b on @cpu1 (pinned when @pin), both with @arg, and
 * join them; @seen (2 entries, or NULL) gets where each ran, sched_getcpu()
 * read just before and just after its function, how often it was preempted
 * in between and what share of that time it ran. Returns 0 or a negative
 * errno (a pin the kernel refuses, say a CPU outside the cpuset, is an
 * error, not an unpinned run).
 */
int msg_pair_run(bool pin, int cpu0, void *(*a)(void *), int cpu1, void *(*b)(void *),
                 void *arg, struct msg_cpu seen[2]);

/*
 * DPDK rte_ring SP/SC peer of pc_submit(): one thread on @cpu0 enqueues
 * bursts of 32 message pointers for @duration_s, one on @cpu1 dequeues
 * bursts and runs each. @seen as for msg_pair_run(). Returns messages per
 * second, or a negative errno (-ENOTSUP when percore-bench was built
 * without DPDK).
 */
double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2]);

/*
 * @n pause instructions: what a spinning peer does between two looks at
 * what it waits for. The suite picks n per run (its "pace", see
 * pace_pick() in suite_msg.c): back-to-back loads at a line another core
 * is about to write can slow that write's hand-off, so the fastest spin is
 * not always the tightest, and a floor must be the fastest.
 */
static inline void msg_pause(unsigned n)
{
        for (unsigned k = 0; k < n; k++) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#elif defined(__aarch64__)
                __asm__ volatile("yield");
#endif
        }
}

/*
 * DPDK rte_ring round trip, the peer of pc_call(): a request ring and a
 * reply ring (SP/SC each); the thread on @cpu0 puts one message (fn, arg)
 * on the request ring and spins on the reply ring, the one on @cpu1 spins
 * on the request ring, runs fn(arg) into the message's result and puts the
 * message on the reply ring; one message in flight; each spin makes @pace
 * pauses between two polls (msg_pause()). @seen as for msg_pair_run().
 * Returns ns per round trip, or a negative errno (-ENOTSUP without DPDK).
 */
double msg_peer_rte_ring_rtt(bool pin, int cpu0, int cpu1, double duration_s, unsigned pace,
                             struct msg_cpu seen[2]);

/* The alignment of the peers' shared memory: a page, so that where the
 * allocator happens to put it (which line of a page, next to what) is the
 * same in every process. */
#define MSG_PEER_ALIGN 4096

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
/* The call case's callee: returns its argument. */
void *msg_echo(void *arg);

#endif
