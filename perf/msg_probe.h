/* SPDX-License-Identifier: MIT */
/*
 * Where the msg suite runs and what it probes around every run: the two
 * CPUs and what the topology says of them, the round trip of a cache line
 * bounced between them, and how fast each runs plain code. A guest cannot
 * see where its host runs two vCPUs, and the host may change that during
 * a run: the probes before and after it show which placement a run had.
 */
#ifndef PC_BENCH_MSG_PROBE_H
#define PC_BENCH_MSG_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "msg_pair.h"

/* The two CPUs of the suite, from the topology a 2-worker runtime places
 * its workers by. */
struct msg_placement {
        bool known;     /* found by this suite (not when another suite borrows a case) */
        int cpu[2];
        bool pin;
        bool smt;       /* one core's threads (SMT siblings) */
        bool same_l3;
        bool l3_known; /* the topology names both CPUs' L3 (a /sys without caches does
                          not) */
        int node[2];
        bool hypervisor; /* a virtual machine: the host may place vCPUs anywhere */
        char source[64];
};

/* Where the suite runs now; set by suite_msg(). Main thread only. */
extern struct msg_placement msg_where;

/* Fill @pl with the CPUs (and pinning) of @rt's first two workers and
 * what @rt's topology says of them. Main thread only. */
void msg_find_placement(struct pc_runtime *rt, struct msg_placement *pl);

/* What the suite probes around every run: the line round trip between its
 * two CPUs and how fast each CPU runs plain code (ns a step). */
struct msg_probe {
        double line;
        double core[2];
};

/* Both probes on msg_where's CPUs now, a few milliseconds; NANs where
 * msg_where is not known. Main thread only. */
struct msg_probe msg_probe_now(void);

#endif
