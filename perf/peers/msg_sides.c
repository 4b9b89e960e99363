/* SPDX-License-Identifier: MIT */
/*
 * The msg suite's peers as sides of its cases: peer:rte_ring,
 * peer:rte_ring_rtt (the rings are msg_rte_ring.c, built only with DPDK)
 * and peer:pingpong (msg_pingpong.c), each run on the suite's two CPUs
 * between two probes, its notes kept.
 */
#include <errno.h>
#include <math.h>

#include "msg_runs.h"
#include "peers/msg_peers.h"

#ifndef PC_BENCH_DPDK
double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2])
{
        (void)pin;
        (void)cpu0;
        (void)cpu1;
        (void)duration_s;
        (void)seen;
        return -ENOTSUP;
}

double msg_peer_rte_ring_rtt(bool pin, int cpu0, int cpu1, double duration_s,
                             unsigned pace, struct msg_cpu seen[2])
{
        (void)pace;
        return msg_peer_rte_ring(pin, cpu0, cpu1, duration_s, seen);
}
#endif

double msg_side_rte_ring(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        struct msg_cpu seen[2];
        struct msg_probe before = msg_probe_now(), after;
        double v;
        const char *kase = ctx; /* the case it runs beside (msg_case()) */

        (void)mode;
        *workers = MSG_WORKERS;
        v = msg_peer_rte_ring(msg_where.pin, msg_where.cpu[0], msg_where.cpu[1],
                              o->duration, seen);
        if (v == -ENOTSUP)
                bench_progress("msg/%s: peer:rte_ring not built (no DPDK)", kase);
        after = msg_probe_now();
        return msg_checked(kase, "peer:rte_ring", seen, v, &before, &after);
}

/* A short run of peer:rte_ring_rtt at @pace for msg_pace_pick(). */
static double rtt_sample(unsigned pace)
{
        double v = msg_peer_rte_ring_rtt(msg_where.pin, msg_where.cpu[0],
                                         msg_where.cpu[1], 0.002, pace, NULL);

        return v > 0 ? v : NAN;
}

double msg_side_rte_ring_rtt(const struct bench_opts *o, enum pc_mode mode,
                             unsigned *workers, void *ctx)
{
        struct msg_cpu seen[2];
        struct msg_probe before = msg_probe_now(), after;
        double v;
        unsigned pace = msg_pace_pick("peer:rte_ring_rtt", rtt_sample, 2);

        (void)mode;
        (void)ctx;
        *workers = MSG_WORKERS;
        v = msg_peer_rte_ring_rtt(msg_where.pin, msg_where.cpu[0], msg_where.cpu[1],
                                  o->duration, pace, seen);
        if (v == -ENOTSUP)
                bench_progress("msg/call: peer:rte_ring_rtt not built (no DPDK)");
        after = msg_probe_now();
        return msg_checked("call", "peer:rte_ring_rtt", seen, v, &before, &after);
}

double msg_side_pingpong(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        struct msg_cpu seen[2];
        struct msg_probe before = msg_probe_now(), after;
        double v;

        (void)mode;
        (void)ctx;
        *workers = MSG_WORKERS;
        v = msg_peer_pingpong(msg_where.pin, msg_where.cpu[0], msg_where.cpu[1],
                              o->duration, seen);
        after = msg_probe_now();
        return msg_checked("call", "peer:pingpong", seen, v, &before, &after);
}
