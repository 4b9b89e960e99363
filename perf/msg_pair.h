/* SPDX-License-Identifier: MIT */
/*
 * The msg suite's pairs of pinned threads, shared by percore's side, its
 * peers (perf/peers/msg_*.c) and the probes: the message work both sides
 * run, and a pair run that says where each thread ran.
 */
#ifndef PC_BENCH_MSG_PAIR_H
#define PC_BENCH_MSG_PAIR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "percore.h"

/* The suite's workers: every case runs on the two CPUs a 2-worker runtime
 * places its workers on. */
#define MSG_WORKERS 2

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

/* The call case's callee: returns its argument. */
void *msg_echo(void *arg);

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

/* The calling thread's CPU time so far, in ns. */
uint64_t msg_thread_cpu_ns(void);

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
 * error, not an unpinned run). Main thread only.
 */
int msg_pair_run(bool pin, int cpu0, void *(*a)(void *), int cpu1, void *(*b)(void *),
                 void *arg, struct msg_cpu seen[2]);

/* The alignment of the peers' shared memory: a page, so that where the
 * allocator happens to put it (which line of a page, next to what) is the
 * same in every process. */
#define MSG_PEER_ALIGN 4096

/*
 * @n pause instructions: what a spinning peer does between two looks at
 * what it waits for. The suite picks n per run (its "pace", see
 * msg_pace_pick()): back-to-back loads at a line another core is about to
 * write can slow that write's hand-off, so the fastest spin is not always
 * the tightest.
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

#endif
