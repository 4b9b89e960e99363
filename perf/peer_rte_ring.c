/* SPDX-License-Identifier: MIT */
/*
 * peer:rte_ring for the msg suite: DPDK's single-producer single-consumer
 * ring between the same two CPUs, bursts of 32. The ring functions are
 * inline and rte_ring_init() works on our own memory, so no EAL is needed.
 * Messages carry fn and arg like a percore message: the producer fills a
 * message object, enqueues its pointer, and the consumer calls fn(arg).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ring.h>

#include "percore.h"
#include "msg_peers.h"

#define RING_SIZE 1024
#define BURST 32
/* Message objects cycle through a pool larger than the ring plus one burst
 * in the consumer's hands, so the producer never rewrites one in use. */
#define POOL (2 * RING_SIZE)

struct peer_msg {
        void (*fn)(void *arg);
        void *arg;
};

struct peer {
        struct rte_ring *ring;
        struct peer_msg pool[POOL];
        struct msg_sink sink;
        uint64_t duration_ns;
        uint64_t t0, t1, consumed_at_end;
        _Atomic int stop __attribute__((aligned(64)));
};

static void *producer(void *arg)
{
        struct peer *p = arg;
        void *objs[BURST];
        uint64_t seq = 0, end;
        unsigned have = 0, round = 0;

        p->t0 = pc_now_ns();
        end = p->t0 + p->duration_ns;
        for (;;) {
                /* Fill the burst's free places, then enqueue what fits. */
                for (; have < BURST; have++, seq++) {
                        struct peer_msg *m = &p->pool[seq % POOL];
                        m->fn = msg_sink_fn;
                        m->arg = &p->sink;
                        objs[have] = m;
                }
                unsigned n = rte_ring_sp_enqueue_burst(p->ring, objs, BURST, NULL);
                if (n < BURST)
                        memmove(objs, objs + n, (BURST - n) * sizeof(objs[0]));
                have = BURST - n;
                if ((++round & 63) == 0 && pc_now_ns() >= end)
                        break;
        }
        p->t1 = pc_now_ns();
        p->consumed_at_end = atomic_load_explicit(&p->sink.pub, memory_order_relaxed);
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        return NULL;
}

static void *consumer(void *arg)
{
        struct peer *p = arg;
        void *objs[BURST];

        for (;;) {
                unsigned n = rte_ring_sc_dequeue_burst(p->ring, objs, BURST, NULL);
                for (unsigned i = 0; i < n; i++) {
                        struct peer_msg *m = objs[i];
                        m->fn(m->arg);
                }
                if (n == 0 && atomic_load_explicit(&p->stop, memory_order_acquire))
                        break;
        }
        return NULL;
}

double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s)
{
        struct peer *p;
        ssize_t sz = rte_ring_get_memsize(RING_SIZE);
        double rate;
        int rc;

        if (sz < 0)
                return (double)sz;
        p = aligned_alloc(64, sizeof(*p));
        if (p == NULL)
                return -ENOMEM;
        memset(p, 0, sizeof(*p));
        p->ring = aligned_alloc(64, ((size_t)sz + 63) & ~(size_t)63);
        if (p->ring == NULL) {
                free(p);
                return -ENOMEM;
        }
        rc = rte_ring_init(p->ring, "pc-bench-msg", RING_SIZE, RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (rc == 0) {
                p->duration_ns = (uint64_t)(duration_s * 1e9);
                rc = msg_pair_run(pin, cpu0, producer, cpu1, consumer, p);
        }
        rate = rc ? rc : (double)p->consumed_at_end / ((double)(p->t1 - p->t0) / 1e9);
        free(p->ring);
        free(p);
        return rate;
}
