/* SPDX-License-Identifier: MIT */
/*
 * pc-kv's server internals, shared by its files:
 *   exec.c     a request run on its key's owner store, giving a struct
 *              kv_result that the request's protocol encoder turns into
 *              the reply (kv_run)
 *   exec_meta.c the same for the meta commands
 *   dispatch.c where a request runs (here, or the owner worker through
 *              pc_call), the per-sink queue that keeps replies in order,
 *              and the admin commands (shutdown, cache_memlimit)
 *   stats.c    "stats" and its groups, summed over the shards
 *   tcp.c      TCP connections (either backend) as sinks
 *   udp.c      memcached's UDP frames (kernel and DPDK backends) as sinks
 *   server.c   flags, setup, main
 *
 * Threading: every function here runs on a worker; a store is touched by
 * its owner worker only; a sink by the worker that created it only.
 */
#ifndef KV_PVT_H
#define KV_PVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "buf.h"
#include "percore.h"
#include "proto_ascii.h"
#include "proto_bin.h"
#include "proto_meta.h"
#include "store.h"

/* ---- the server's settings and per-worker state ----------------------------------- */

struct kv_settings;
extern struct kv_settings kv_set;

struct kv_settings {
        const char *addr;
        unsigned prefix;  /* -l ADDR/LEN (dpdk): the subnet, 0 = none */
        const char *gateway; /* --gateway (dpdk) */
        unsigned long tcp_port, udp_port, mem_mb, max_conns;
        size_t item_max;
        const char *backend;
        int verbose;
        bool shutdown_ok; /* -A: the shutdown command stops the server */
        unsigned long idle_timeout; /* -o idle_timeout: seconds, 0 = off */
        time_t started;
};

/** Item memory over all shards, from -m or the last cache_memlimit (which
 *  any worker may set: read and written atomically). */
static inline size_t kv_mem_total(void)
{
        return (size_t)__atomic_load_n(&kv_set.mem_mb, __ATOMIC_RELAXED) << 20;
}

/** Per-worker connection counters; each written by its worker only. */
struct kv_wstat {
        _Alignas(64) uint64_t curr_conns;
        uint64_t total_conns;
        uint64_t send_failed;
        uint64_t udp_requests;
        uint64_t udp_dropped; /* bad frame header: counted, not answered */
        uint64_t borrowed;    /* requests run on a sleeping owner's shard */
        uint64_t calls;       /* requests sent to their shard's owner */
        uint64_t idle_kicks;  /* connections closed by -o idle_timeout */
};

extern struct pc_runtime *kv_rt;
extern struct kv_store *kv_stores[PC_MAX_WORKERS];
extern struct kv_wstat kv_wstats[PC_MAX_WORKERS];

/* ---- exec.c: a request on its owner ------------------------------------------------ */

/** Run @r (one key: @key) on @s, its owner's store; what came of it in @res. */
void kv_exec(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
             struct kv_result *res);

/** kv_exec() for a meta command (exec_meta.c). */
void kv_exec_meta(struct kv_store *s, const struct kv_req *r, struct kv_result *res);

/** Write @r's reply from @res in @r's protocol. */
void kv_reply(const struct kv_req *r, const char *key, size_t klen, const struct kv_result *res,
              struct buf *out);

/** kv_exec() then kv_reply(): @r (one key: @key, or r->key when @key is
 *  NULL) on @s, the reply (if any) appended to @out. */
void kv_run(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
            struct buf *out);

/** A reply to a request that needs no store: version, verbosity, noop,
 *  quit (binary), flush done; in @r's protocol, nothing when quiet. */
void kv_reply_done(const struct kv_req *r, struct buf *out);

/** An error reply for @r: @ascii for ASCII, @status for binary (sent even
 *  for quiet binary requests, as memcached). */
void kv_reply_error(const struct kv_req *r, const char *ascii, uint16_t status,
                    struct buf *out);

/** One stat of a "stats" reply, and the end of it, in @r's protocol. */
void kv_reply_stat(const struct kv_req *r, const char *name, const char *val, size_t vlen,
                   struct buf *out);
void kv_reply_stats_end(const struct kv_req *r, struct buf *out);

/* ---- dispatch.c: replies in order per sink ------------------------------------------ */

struct pending;
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
/** A bounded sink's multi-key get takes a reply place per this many keys. */
#define KV_GET_PART 128

/** Is bounded sink @k full: produce nothing more until ops->room or the
 *  transport drains? false for a sink without ops->backlog. */
bool kv_sink_full(struct kv_sink *k);

/** Run one parsed request; its reply lands in order on @k. */
void kv_dispatch(struct kv_sink *k, const struct kv_req *r);

/** kv_dispatch() that stops a multi-key get part way on a bounded sink:
 *  false when keys are left, which the next call with the same @r and
 *  *@pos (0 the first time) goes on with; true once @r is done. */
bool kv_dispatch_from(struct kv_sink *k, const struct kv_req *r, size_t *pos);

/** Does @r end its connection once its replies are out (quit, and an
 *  allowed shutdown)? */
bool kv_req_closes(const struct kv_req *r);

/** The calling worker holds its own shard (waiting while another worker
 *  that borrowed it finishes one request): before it touches its store. */
void kv_shard_hold(void);

/** On every worker, once: lend the shard while the worker sleeps. From
 *  the runtime's first task, and only when it runs overprovisioned
 *  (PERCORE_OVERPROVISIONED=1). */
void kv_shard_lend_start(void);

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

/* ---- stats.c ------------------------------------------------------------------------ */

/** Answer "stats [group]" for @r into a reply place of @k. */
void kv_stats(struct kv_sink *k, const struct kv_req *r);

/** A place in @k's queue for a reply that some worker fills later
 *  (kv_pending_fill). NULL: out of memory (k->out.oom is set). */
struct pending *kv_pending_add(struct kv_sink *k, unsigned nparts);

/** Fill part @part of @pd with @b (taken over) and flush when complete. */
void kv_pending_fill(struct kv_sink *k, struct pending *pd, unsigned part, struct buf *b);

#endif
