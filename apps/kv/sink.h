/* SPDX-License-Identifier: MIT */
/*
 * A sink: where a stream of requests' replies go, in request order
 * (sink.c). A reply that cannot be written at once takes a place (struct
 * pending) in the sink's queue, filled later by whichever worker ran the
 * request; the queue is sent from its head as places fill. A multi-key
 * get takes one place with a part per key, so its values come out in key
 * order whichever shard answers first. The transports (tcp.c, udp.c) are
 * sinks; dispatch.c and stats.c fill them.
 *
 * Threading: a sink and its places are touched by the worker that created
 * the sink only (remote calls bring their reply bytes back to it).
 */
#ifndef KV_SINK_H
#define KV_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct kv_sink;

struct kv_sink_ops {
        /** Send ready reply bytes, in order. false: stop (the sink is closing). */
        bool (*send)(struct kv_sink *k, const char *p, size_t len);
        /** Every queued reply has been sent (called after each flush that
         *  leaves the queue empty). */
        void (*drained)(struct kv_sink *k);
        /** Free the sink: it is dead and no remote call refers to it. */
        void (*release)(struct kv_sink *k);
        /** Optional: the bytes sent since the last call end one reply
         *  place (a kv_sink_slot(), a multi-key get's whole reply). */
        void (*reply_end)(struct kv_sink *k);
        /** Optional: an ASCII multi-key get's bytes since the last call are
         *  one key's (none for a miss), and more keys follow. A sink that
         *  has it gets every such get key by key (memcached's UDP sends a
         *  response per key); the last key's bytes end with END and a
         *  reply_end. */
        void (*key_end)(struct kv_sink *k);
        /** Optional: every reply queued before a kv_sink_mark() is sent. */
        void (*mark)(struct kv_sink *k);
        /** Optional: reply bytes the transport holds unsent (refused by a
         *  full output). A sink with it is bounded: see kv_sink_full(). */
        size_t (*backlog)(struct kv_sink *k);
        /** Optional: a call on the sink returned; a bounded sink that
         *  stopped while full may go on (kv_sink_full() says whether). */
        void (*room)(struct kv_sink *k);
};

/** Where a stream of requests' replies go, in request order. */
struct kv_sink {
        const struct kv_sink_ops *ops;
        struct buf out;                /* replies ready while the queue is empty */
        struct pending *head, *tail;   /* replies waiting for other workers */
        unsigned refs;                 /* remote calls whose done has not run */
        unsigned pins;                 /* ops->room calls in progress: keep the sink */
        size_t held;                   /* bytes of the reply places, replies and headers */
        struct pending *slot;          /* the place kv_sink_slot() gave, not yet counted */
        uint32_t batch;                /* this request batch's tag, 0 until needed */
        unsigned nreq;                 /* commands read at once so far (kv_sink_count) */
        bool dead;                     /* the transport is gone: drop replies */
};

/** A reply place: parts filled in any order, sent in order once all are. */
struct pending {
        struct pending *next;
        size_t held; /* counted in the sink's held: this header and its parts */
        unsigned nparts, waiting;
        bool end;  /* followed by "END\r\n" (the ASCII get family) */
        bool keyed; /* an ASCII multi-key get's keys: ops->key_end after each */
        bool mark; /* no reply: kv_sink_mark()'s place in the queue */
        struct buf parts[];
};

/** @n more bytes of @pd count against its sink's bound. */
static inline void kv_pending_count(struct kv_sink *k, struct pending *pd, size_t n)
{
        pd->held += n;
        k->held += n;
}

/*
 * What a bounded sink (one with ops->backlog: a TCP connection) holds for
 * replies its client has not read. Requests are run, and a multi-key get's
 * keys produced, only while the sink is not full: less than KV_OUT_HIGH
 * bytes wait in its buffer, its reply places and the transport's backlog,
 * and fewer than KV_CALLS_MAX calls are out at other workers (each holds
 * one request's copy and brings back one reply, each at most an item).
 * The rest waits as request bytes until the client reads (the transport's
 * on_writable) or a call returns (ops->room). So a connection holds at
 * most KV_OUT_HIGH + (1 + KV_CALLS_MAX) largest replies, beside the
 * backend's own output cap and its input: about 17.25 MiB with -I 1m,
 * however many keys a get names or how many requests come pipelined.
 * Fewer calls out would lower that, and slow a client that pipelines
 * requests to other workers' shards. Items are not referenced instead
 * (memcached's way): a store frees an item when it is replaced, and an
 * item pinned by an unread reply would hold memory the client controls.
 */
#define KV_OUT_HIGH (256u << 10)
#define KV_CALLS_MAX 16

/** Is bounded sink @k full: produce nothing more until ops->room or the
 *  transport drains? false for a sink without ops->backlog. */
bool kv_sink_full(struct kv_sink *k);

/** Send what is ready, in order; calls ops->drained when nothing waits. */
void kv_sink_flush(struct kv_sink *k);

/** The requests read at once are done: their replies would go out now
 *  in memcached, which holds an item an mg reply sends until then (or
 *  until an mn): kv_sink_flush(), and later requests are another batch. */
void kv_sink_batch_end(struct kv_sink *k);

/** memcached runs 21 commands of what it read at once, then sends their
 *  replies and runs 20 more at a time (its -R, 20): a new batch there. */
#define KV_REQS_PER_EVENT 20

/** A command line was read (a request or a refused one, not the bytes of a
 *  value): call before dispatching it. true: it starts a new batch. */
static inline bool kv_sink_count(struct kv_sink *k)
{
        if (++k->nreq > KV_REQS_PER_EVENT + 1 && (k->nreq - 2) % KV_REQS_PER_EVENT == 0) {
                k->batch = 0;
                return true;
        }
        return false;
}

/** Call ops->mark once the replies queued so far are sent: now if none
 *  waits for another worker, else when they have gone. No-op without it. */
void kv_sink_mark(struct kv_sink *k);

/** The transport is gone: free now or when the last remote call returns. */
void kv_sink_kill(struct kv_sink *k);

/** A remote call on @k returned: release a dead sink on the last one;
 *  tell a live one's ops->room. */
void kv_sink_unref(struct kv_sink *k);

/** Free the queued replies and buffers (for ops->release). */
void kv_sink_fini(struct kv_sink *k);

/** Where a reply known now goes (NULL: out of memory). */
struct buf *kv_sink_slot(struct kv_sink *k);

/** A place in @k's queue for a reply that some worker fills later
 *  (kv_pending_fill). NULL: out of memory (k->out.oom is set). */
struct pending *kv_pending_add(struct kv_sink *k, unsigned nparts);

/** Fill part @part of @pd with @b (taken over) and flush when complete. */
void kv_pending_fill(struct kv_sink *k, struct pending *pd, unsigned part, struct buf *b);

#endif
