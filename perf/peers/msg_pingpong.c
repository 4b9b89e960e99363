/* SPDX-License-Identifier: MIT */
/*
 * peer:pingpong, the msg suite's floor for a call round trip: two threads
 * pinned to the suite's two CPUs bounce a counter on one cache line, one
 * writing odd values and waiting for the even answer. Both spin on the
 * line with nothing between two looks, the way a user writes it: no
 * pause, no pace tuned to the host, so the floor is the plain hardware
 * round trip and what percore adds above it shows in full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peers/msg_peers.h"

#define STOP UINT64_MAX /* odd, so the answering side looks at it */

/* Page-aligned (MSG_PEER_ALIGN): the same layout in every process. */
struct line {
        _Atomic uint64_t v __attribute__((aligned(64)));
        char pad[56];
        uint64_t duration_ns;
        uint64_t t0, t1, rounds;
};

/* Writes odd values and waits for the even answer; checks the clock
 * every 1024 round trips. */
static void *ask(void *arg)
{
        struct line *p = arg;
        uint64_t i, end;

        p->t0 = pc_now_ns();
        end = p->t0 + p->duration_ns;
        for (i = 0;; i++) {
                atomic_store_explicit(&p->v, 2 * i + 1, memory_order_release);
                while (atomic_load_explicit(&p->v, memory_order_acquire) != 2 * i + 2)
                        ;
                if ((i & 1023) == 1023 && pc_now_ns() >= end)
                        break;
        }
        p->t1 = pc_now_ns();
        p->rounds = i + 1;
        atomic_store_explicit(&p->v, STOP, memory_order_release);
        return NULL;
}

/* Answers every odd value with the next even one, until STOP. */
static void *answer(void *arg)
{
        struct line *p = arg;

        for (;;) {
                uint64_t v = atomic_load_explicit(&p->v, memory_order_acquire);

                if (v == STOP)
                        break;
                if (v & 1)
                        atomic_store_explicit(&p->v, v + 1, memory_order_release);
        }
        return NULL;
}

double msg_peer_pingpong(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2])
{
        struct line *p;
        double ns;
        int rc;

        if (!(duration_s > 0))
                return -EINVAL;
        p = aligned_alloc(MSG_PEER_ALIGN, MSG_PEER_ALIGN);
        if (p == NULL)
                return -ENOMEM;
        memset(p, 0, MSG_PEER_ALIGN);
        p->duration_ns = (uint64_t)(duration_s * 1e9);
        rc = msg_pair_run(pin, cpu0, ask, cpu1, answer, p, seen);
        ns = rc ? rc : (double)(p->t1 - p->t0) / (double)p->rounds;
        free(p);
        return ns;
}
