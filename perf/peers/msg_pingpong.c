/* SPDX-License-Identifier: MIT */
/*
 * peer:pingpong, the msg suite's floor for a call round trip: two threads
 * pinned to the suite's two CPUs bounce a counter on one cache line, one
 * writing odd values and waiting for the even answer, for a run's time.
 */
#include <string.h>

#include "msg_runs.h"
#include "peers/msg_peers.h"

/* Writes odd values and waits for the even answer. */
static void *pp_ask(void *arg)
{
        struct msg_pingpong *p = arg;
        const unsigned pace = p->pace;
        uint64_t i, end;

        p->t0 = pc_now_ns();
        end = p->t0 + p->duration_ns;
        for (i = 0;; i++) {
                atomic_store_explicit(&p->v, 2 * i + 1, memory_order_release);
                while (atomic_load_explicit(&p->v, memory_order_acquire) != 2 * i + 2)
                        msg_pause(pace);
                if ((i & 1023) == 1023 && pc_now_ns() >= end)
                        break;
        }
        p->t1 = pc_now_ns();
        p->rounds = i + 1;
        atomic_store_explicit(&p->v, MSG_PP_STOP, memory_order_release);
        return NULL;
}

double msg_side_pingpong(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        /* Page-aligned like the other peers' memory. */
        static struct msg_pingpong p __attribute__((aligned(MSG_PEER_ALIGN)));
        struct msg_cpu seen[2];
        struct msg_probe before = msg_probe_now(), after;
        unsigned pace = msg_pace_pick("peer:pingpong", msg_line_rtt, 1);
        int rc;

        (void)mode;
        (void)ctx;
        memset(&p, 0, sizeof(p));
        p.duration_ns = (uint64_t)(o->duration * 1e9);
        p.pace = pace;
        *workers = MSG_WORKERS;
        rc = msg_pair_run(msg_where.pin, msg_where.cpu[0], pp_ask, msg_where.cpu[1],
                          msg_pp_answer, &p, seen);
        if (rc)
                return rc;
        after = msg_probe_now();
        return msg_checked("call", "peer:pingpong", seen,
                           (double)(p.t1 - p.t0) / (double)p.rounds, &before, &after);
}
