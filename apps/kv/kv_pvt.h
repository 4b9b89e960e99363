/* SPDX-License-Identifier: MIT */
/*
 * pc-kv's server internals, shared by its files:
 *   exec.c     a request run on its key's owner store, giving a struct
 *              kv_result that the request's protocol encoder turns into
 *              the reply (kv_run)
 *   exec_meta.c the same for the meta commands
 *   sink.c     the per-sink queue that keeps replies in order (sink.h)
 *   dispatch.c where a request runs (here, or the owner worker through
 *              pc_call), and the admin commands (shutdown, cache_memlimit)
 *   lend.c     shards lent to other workers while their owner sleeps
 *   stats.c    "stats" and its groups, summed over the shards
 *   tcp.c      TCP connections (either backend) as sinks
 *   udp.c      memcached's UDP frames (kernel and DPDK backends) as sinks
 *   state.c    the settings and per-worker state below, with their defaults
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
#include "sink.h"
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

/* ---- dispatch.c: where a request runs ---------------------------------------------- */

/** A bounded sink's multi-key get takes a reply place per this many keys. */
#define KV_GET_PART 128

/** Run one parsed request; its reply lands in order on @k. */
void kv_dispatch(struct kv_sink *k, const struct kv_req *r);

/** kv_dispatch() that stops a multi-key get part way on a bounded sink:
 *  false when keys are left, which the next call with the same @r and
 *  *@pos (0 the first time) goes on with; true once @r is done. */
bool kv_dispatch_from(struct kv_sink *k, const struct kv_req *r, size_t *pos);

/** Does @r end its connection once its replies are out (quit, and an
 *  allowed shutdown)? */
bool kv_req_closes(const struct kv_req *r);

/* ---- lend.c: shards lent while their owner sleeps ---------------------------------- */

/** The calling worker holds its own shard (waiting while another worker
 *  that borrowed it finishes one request): before it touches its store. */
void kv_shard_hold(void);

/** On every worker, once: lend the shard while the worker sleeps. From
 *  the runtime's first task, and only when it runs overprovisioned
 *  (PERCORE_OVERPROVISIONED=1). */
void kv_shard_lend_start(void);

/** Worker @me takes @owner's shard if it is lent and free (counted in
 *  kv_wstats): true, then it runs one request on that store and calls
 *  kv_shard_return(). */
bool kv_shard_borrow(unsigned me, unsigned owner);

/** Give back @owner's shard, taken by kv_shard_borrow(). */
void kv_shard_return(unsigned owner);

/* ---- stats.c ------------------------------------------------------------------------ */

/** Answer "stats [group]" for @r into a reply place of @k. */
void kv_stats(struct kv_sink *k, const struct kv_req *r);

#endif
