/* SPDX-License-Identifier: MIT */
/*
 * Two percore TCP stacks in one process over DPDK, for the service API's
 * tests: port A (net_ring0) and port B (net_ring1), each looped back to
 * itself by net_ring, joined by a shim RX handler that hands what A sent
 * to B's stack and back, on the worker that received it (the stacks hand
 * a segment to the worker owning its flow). The shim shows each TCP
 * segment to a watch function first, which may drop it. Nothing is lost
 * otherwise, and nothing depends on timing: pair_run()'s limit only ends
 * a hung run.
 */
#ifndef DTCP_PAIR_H
#define DTCP_PAIR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pc_dpdk.h"

#define PAIR_IP_A 0x0a000201u
#define PAIR_IP_B 0x0a000202u
#define PAIR_IP_A_STR "10.0.2.1"
#define PAIR_IP_B_STR "10.0.2.2"
#define PAIR_WORKERS 2

extern struct pc_runtime *pair_rt;
extern struct pc_port *pair_a, *pair_b;
extern _Atomic unsigned pair_failures;

/* Count a failure seen on a worker; the test checks pair_failures. */
#define PAIR_FAIL(...)                                                                          \
        do {                                                                                    \
                fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                 \
                fprintf(stderr, __VA_ARGS__);                                                   \
                fputc('\n', stderr);                                                            \
                atomic_fetch_add(&pair_failures, 1);                                            \
        } while (0)
#define PAIR_CHECK(cond)                                                                        \
        do {                                                                                    \
                if (!(cond))                                                                    \
                        PAIR_FAIL("%s", #cond);                                                 \
        } while (0)

/* A TCP segment on the wire: @from_a whether A sent it, its ports, flags
 * (PC_TCP_*) and payload length. Return true to drop it. Runs on the
 * worker that received the frame. */
typedef bool (*pair_watch_fn)(bool from_a, uint16_t sport, uint16_t dport, uint8_t flags,
                              size_t len);
extern pair_watch_fn pair_watch;

/* Make the runtime (@prefix: its EAL file prefix) and the two ports with
 * their addresses. Listeners may be added before pair_run(). */
int pair_setup(const char *prefix);
void pair_teardown(void);

/* Run @main_fn on worker 0 until @done() holds (checked every ms) or
 * @limit_s seconds passed; returns whether @done() held. */
bool pair_run(pc_task_fn main_fn, bool (*done)(void), unsigned limit_s);

#endif
