/* SPDX-License-Identifier: MIT */
/*
 * peer:rte_ring for the msg suite: DPDK's single-producer single-consumer
 * ring between the same two CPUs, bursts of 32. The ring functions are
 * inline and rte_ring_init() works on our own memory, so no EAL is needed.
 * Messages carry fn and arg like a percore message: the producer fills a
 * message object, enqueues its pointer, and the consumer calls fn(arg).
 *
 * peer:rte_ring_rtt: the same ring as a call path, a request ring and a
 * reply ring between the two CPUs and one message in flight, the way a
 * DPDK application hands a request to another lcore and waits for the
 * answer (rte_ring_sp_enqueue / rte_ring_sc_dequeue, spinning, with the
 * pauses between polls that the suite found fastest just before).
 *
 * Every ring and the memory both threads touch is page-aligned, so each
 * process lays them out alike (see MSG_PEER_ALIGN).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ring.h>

#include "percore.h"
#include "peers/msg_peers.h"

#define RING_SIZE 1024
#define BURST 32
/* Message objects cycle through a pool larger than the ring plus one burst
 * in the consumer's hands, so the producer never rewrites one in use. */
#define POOL (2 * RING_SIZE)

struct peer_msg {
        void (*fn)(void *arg);
        void *arg;
};

/* Page-aligned (peer_alloc()): the same layout in every process. */
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

/* @size bytes aligned to MSG_PEER_ALIGN, zeroed; NULL when out of memory. */
static void *peer_alloc(size_t size)
{
        size = (size + MSG_PEER_ALIGN - 1) & ~(size_t)(MSG_PEER_ALIGN - 1);
        void *p = aligned_alloc(MSG_PEER_ALIGN, size);

        if (p)
                memset(p, 0, size);
        return p;
}

/* A ring of @count entries on memory of its own, SP/SC; NULL on failure
 * (with *@rc the error). */
static struct rte_ring *ring_new(const char *name, unsigned count, int *rc)
{
        ssize_t sz = rte_ring_get_memsize(count);
        struct rte_ring *r;

        if (sz < 0) {
                *rc = (int)sz;
                return NULL;
        }
        r = peer_alloc((size_t)sz);
        if (r == NULL) {
                *rc = -ENOMEM;
                return NULL;
        }
        *rc = rte_ring_init(r, name, count, RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (*rc) {
                free(r);
                return NULL;
        }
        return r;
}

double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2])
{
        struct peer *p = peer_alloc(sizeof(*p));
        double rate;
        int rc;

        if (p == NULL)
                return -ENOMEM;
        p->ring = ring_new("pc-bench-msg", RING_SIZE, &rc);
        if (p->ring) {
                p->duration_ns = (uint64_t)(duration_s * 1e9);
                rc = msg_pair_run(pin, cpu0, producer, cpu1, consumer, p, seen);
        }
        rate = rc ? rc : (double)p->consumed_at_end / ((double)(p->t1 - p->t0) / 1e9);
        free(p->ring);
        free(p);
        return rate;
}

/* ---- round trip ---------------------------------------------------------- */

/* A call's message: what pc_call() carries (fn, arg) and its answer. */
struct rtt_msg {
        void *(*fn)(void *arg);
        void *arg;
        void *result;
};

struct rtt_peer {
        struct rte_ring *req, *rep;
        uint64_t duration_ns;
        unsigned pace; /* pauses between two polls */
        uint64_t t0, t1, rounds; /* the requester's */
        _Atomic int stop __attribute__((aligned(64)));
        /* One message, in flight all the time, on a line of its own. */
        struct rtt_msg msg __attribute__((aligned(64)));
};

static void *requester(void *arg)
{
        struct rtt_peer *p = arg;
        struct rtt_msg *m = &p->msg;
        uint64_t i, end;
        void *obj;

        p->t0 = pc_now_ns();
        end = p->t0 + p->duration_ns;
        for (i = 0;; i++) {
                m->fn = msg_echo;
                m->arg = m;
                /* A ring of RING_SIZE never fills with one message in it. */
                rte_ring_sp_enqueue(p->req, m);
                while (rte_ring_sc_dequeue(p->rep, &obj) != 0)
                        msg_pause(p->pace);
                if (((struct rtt_msg *)obj)->result != m)
                        abort(); /* not the answer to this request */
                if ((i & 1023) == 1023 && pc_now_ns() >= end)
                        break;
        }
        p->t1 = pc_now_ns();
        p->rounds = i + 1;
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        return NULL;
}

static void *responder(void *arg)
{
        struct rtt_peer *p = arg;
        void *obj;

        for (;;) {
                if (rte_ring_sc_dequeue(p->req, &obj) == 0) {
                        struct rtt_msg *m = obj;
                        m->result = m->fn(m->arg);
                        rte_ring_sp_enqueue(p->rep, m);
                } else if (atomic_load_explicit(&p->stop, memory_order_acquire)) {
                        break;
                } else {
                        msg_pause(p->pace);
                }
        }
        return NULL;
}

double msg_peer_rte_ring_rtt(bool pin, int cpu0, int cpu1, double duration_s, unsigned pace,
                             struct msg_cpu seen[2])
{
        struct rtt_peer *p = peer_alloc(sizeof(*p));
        double v;
        int rc;

        if (p == NULL)
                return -ENOMEM;
        p->req = ring_new("pc-bench-req", RING_SIZE, &rc);
        if (p->req)
                p->rep = ring_new("pc-bench-rep", RING_SIZE, &rc);
        if (p->rep) {
                p->duration_ns = (uint64_t)(duration_s * 1e9);
                p->pace = pace;
                rc = msg_pair_run(pin, cpu0, requester, cpu1, responder, p, seen);
        }
        v = rc ? rc : (double)(p->t1 - p->t0) / (double)p->rounds;
        free(p->req);
        free(p->rep);
        free(p);
        return v;
}
