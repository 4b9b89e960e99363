/* SPDX-License-Identifier: MIT */
/*
 * percore shard/: cross-core messages, sharded services, the blocking lane.
 *
 * In thread-per-core mode mailboxes are the only way work crosses cores.
 * Each ordered pair of workers (src, dst) has two bounded single-producer
 * single-consumer rings, one for requests (pc_submit, pc_call) and one for
 * pc_call's replies. Messages are batched, a full ring pushes back into the
 * sender's own overflow list (nothing is dropped or reordered), and a
 * per-worker doorbell bitmap tells a worker which rings hold work (or did a
 * moment ago: a busy ring stays watched until it has been empty for a few
 * hundred polls), so an idle worker never scans its N peers.
 *
 * Read top to bottom: setup, messages, sharded helpers, per-worker slots,
 * the blocking lane, stats. Conventions are those of percore.h: 0 or a
 * negative errno; "worker only" functions return -EPERM off-worker.
 *
 * Message functions run on the target worker inside its mailbox poller, in
 * the order each sender sent them. Like a task they must not block; blocking
 * work belongs on the blocking lane (pc_spawn_blocking()).
 */
#ifndef PC_SHARD_H
#define PC_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "pc_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Setup                                                                    */
/* ------------------------------------------------------------------------ */

/** Default entries per ring. */
#define PC_SHARD_RING_DEFAULT 256
/** Largest ring accepted. */
#define PC_SHARD_RING_MAX 65536
/** Default blocking-lane threads. */
#define PC_SHARD_BLOCKING_DEFAULT 4
/** Most blocking-lane threads accepted. */
#define PC_SHARD_BLOCKING_MAX 256

/** Shard layer settings; start from pc_shard_opts_init(). */
struct pc_shard_opts {
        /** Entries per (src, dst) ring, a power of two from 2 to
         *  PC_SHARD_RING_MAX. Tests use tiny rings to force backpressure. */
        unsigned ring_size;
        /** Threads of the blocking lane, 0 to PC_SHARD_BLOCKING_MAX;
         *  0 means no lane (pc_spawn_blocking() returns -ENOTSUP). */
        unsigned blocking_threads;
        /** A pair of workers pinned to CPUs that share an L3 or a NUMA
         *  node, on a machine that is not a virtual one, runs "near" from
         *  the start, untimed: the caller reuses the line of its last
         *  answered call, and both workers look for the next one eagerly
         *  (see pc_shard_stats.slot_calls_near). Where the topology cannot
         *  say (unpinned workers, a guest whose host may run its vCPUs
         *  anywhere, workers on different nodes), the caller times one
         *  call in 64: faster than this on average (ns), near. Default
         *  200: the round trip of two cores that share a cache. Slower
         *  than 4 times this, the callee is busy or parked: the pair runs
         *  "far" (a slot per call in turn, idle spins paced). In between
         *  the pair tries both ways now and then and keeps the faster,
         *  which differs between machines. 0: never near, never timed;
         *  UINT32_MAX: always near (tests). */
        uint32_t call_near_ns;
};

/** Fill @o with the defaults. Any thread. */
void pc_shard_opts_init(struct pc_shard_opts *o);

/**
 * Set up the shard layer for @rt: allocate the N x N mailbox matrix and
 * start the blocking lane's threads (unpinned). Each worker registers its
 * mailbox poller when its loop starts, before it runs anything, so messages
 * sent at the very start of a run to workers that have not yet started are
 * delivered. @opts NULL means defaults. Everything is freed, and the lane's
 * threads joined, by pc_runtime_destroy().
 *
 * Errors: -EINVAL (NULL @rt, bad option), -EALREADY (already set up),
 * -EBUSY (the runtime is running), -ENOMEM, -EAGAIN (thread creation),
 * -EPERM from a worker thread.
 * The thread that owns @rt, before pc_runtime_run() or between runs.
 */
int pc_shard_init(struct pc_runtime *rt, const struct pc_shard_opts *opts);

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/**
 * Run @fn(@arg) on worker @dst. Messages from one worker to another run in
 * the order they were sent, exactly once; stopping the runtime runs every
 * message already sent. When the ring to @dst is full the message waits in
 * the caller's overflow list (backpressure: never dropped, never reordered).
 * To the calling worker itself the message goes through its own loopback
 * mailbox: it runs later on this worker, never inside this call.
 *
 * Errors: -EINVAL (@fn NULL, no worker @dst), -ENODEV (pc_shard_init() was
 * not called for this runtime), -ENOMEM (overflow node allocation),
 * -EPERM off-worker. Worker only.
 */
int pc_submit(unsigned dst, pc_task_fn fn, void *arg);

/**
 * pc_submit() of @n messages at once, @fn(@args[0]) ... @fn(@args[n-1]),
 * in that order, each once, ordered with the caller's other messages to
 * @dst as n pc_submit() calls would be; one look at the ring's space and
 * at most one publication for all that fit (the burst style of DPDK's
 * rings, for a fan-out of one function over many arguments). What does
 * not fit waits in overflow as with pc_submit().
 * Returns @n; or fewer when an overflow node could not be allocated (the
 * first ones are queued, the rest are not); or -errno, nothing queued:
 * -EINVAL (@fn NULL, @args NULL with @n > 0, @n over INT_MAX, no worker
 * @dst), -ENODEV
 * (pc_shard_init() not called), -EPERM off-worker, -ENOMEM (no message
 * at all could be queued). Worker only.
 */
int pc_submit_burst(unsigned dst, pc_task_fn fn, void *const *args, unsigned n);

/**
 * Run @result = @fn(@arg) on worker @dst, then @done(@result, @done_arg)
 * back on the calling worker. Ordering and backpressure as pc_submit();
 * replies travel on their own ring, so they never queue behind requests. A
 * call to the calling worker itself is queued on its loopback mailbox like
 * any other: @fn and @done both run later, never inside this call.
 *
 * Errors: -EINVAL (@fn or @done NULL, no worker @dst), -ENODEV, -ENOMEM,
 * -EPERM off-worker. Worker only.
 */
int pc_call(unsigned dst, void *(*fn)(void *arg), void *arg,
            void (*done)(void *result, void *done_arg), void *done_arg);

/* ------------------------------------------------------------------------ */
/* Sharded services                                                         */
/* ------------------------------------------------------------------------ */

/**
 * The 64-bit hash pc_shard_of() uses: FNV-1a over the bytes, then the
 * MurmurHash3 fmix64 finaliser (FNV alone mixes its high bits poorly). The
 * same key gives the same hash on every run and machine. @key may be NULL
 * when @len is 0. Any thread.
 */
uint64_t pc_shard_hash(const void *key, size_t len);

/**
 * Map @hash to [0, @n) by multiply-shift of its high 32 bits (no
 * division, uniform for a uniform hash). Returns 0 when @n is 0. Any thread.
 */
unsigned pc_shard_pick(uint64_t hash, unsigned n);

/**
 * The worker that owns @key: pc_shard_pick(pc_shard_hash(key, len), N) for
 * the calling worker's runtime of N workers; stable across runs with the
 * same N. Worker only; off-worker there is no N to use and it returns 0
 * (use pc_shard_pick() with pc_runtime_workers() there).
 */
unsigned pc_shard_of(const void *key, size_t len);

/**
 * Run @fn(@arg) on every worker (the caller included, through its loopback
 * mailbox), then @done(@done_arg) once on the calling worker after all of
 * them returned. Either every worker is sent the call or, on error, none.
 *
 * Errors: -EINVAL (@fn NULL; @done may be NULL), -ENODEV, -ENOMEM,
 * -EPERM off-worker. Worker only.
 */
int pc_for_each_worker(void (*fn)(void *arg), void *arg, void (*done)(void *done_arg),
                       void *done_arg);

/**
 * Map, then reduce: run item_w = @map(@arg) on every worker w, then on the
 * calling worker fold acc = @reduce(acc, item_w, @arg) starting from
 * @acc0, in worker order 0..N-1 whatever order the items arrived in (so a
 * non-commutative reduce gives the same answer every run), and finally
 * @done(acc, @done_arg) there. Either every worker is sent the map or, on
 * error, none.
 *
 * Errors: -EINVAL (@map, @reduce or @done NULL), -ENODEV, -ENOMEM,
 * -EPERM off-worker. Worker only.
 */
int pc_map_reduce(void *(*map)(void *arg), void *arg,
                  void *(*reduce)(void *acc, void *item, void *arg), void *acc0,
                  void (*done)(void *acc, void *done_arg), void *done_arg);

/* ------------------------------------------------------------------------ */
/* Per-worker slots                                                         */
/* ------------------------------------------------------------------------ */

/**
 * A per-worker slot: one pointer per worker, each on its own cache line, so
 * a sharded service keeps one instance per worker and finds its own in
 * O(1) without sharing a line with its neighbours.
 */
struct pc_slot;

/**
 * Create a slot for @rt's workers, every value NULL. Does not need
 * pc_shard_init(). Errors: -EINVAL, -ENOMEM. Any thread.
 */
int pc_slot_create(struct pc_runtime *rt, struct pc_slot **out);

/** Free @s (NULL is fine). The values are the caller's. Any thread, once
 *  no worker uses @s any more. */
void pc_slot_destroy(struct pc_slot *s);

/**
 * Set the calling worker's value. Errors: -EINVAL (@s NULL or made for a
 * smaller runtime), -EPERM off-worker. Worker only.
 */
int pc_slot_set(struct pc_slot *s, void *v);

/** The calling worker's value; NULL off-worker or for a NULL @s. Worker only. */
void *pc_slot_get(const struct pc_slot *s);

/**
 * Worker @w's value, or NULL when @w is out of range. Any thread; the read
 * is atomic, but it is only meaningful once ordered after @w's
 * pc_slot_set() (e.g. in a pc_call() reply from @w, or after
 * pc_runtime_run() returned).
 */
void *pc_slot_get_on(const struct pc_slot *s, unsigned w);

/* ------------------------------------------------------------------------ */
/* Blocking lane                                                            */
/* ------------------------------------------------------------------------ */

/**
 * Run @result = @fn(@arg) on the blocking lane, a pool of unpinned threads
 * beside the workers, then @done(@result, @done_arg) back on the calling
 * worker (@done may be NULL). The reactor never waits: it keeps running
 * tasks and messages while @fn blocks. Jobs start in the order they were
 * spawned (across all workers) on whichever lane thread is free. Stopping
 * the runtime waits for every job in flight and runs its @done before
 * pc_runtime_run() returns; jobs may still be spawned while stopping. @fn
 * runs off-worker: worker-only functions return -EPERM there.
 *
 * Errors: -EINVAL (@fn NULL), -ENODEV, -ENOTSUP (no lane: blocking_threads
 * was 0), -ENOMEM, -EPERM off-worker. Worker only.
 */
int pc_spawn_blocking(void *(*fn)(void *arg), void *arg,
                      void (*done)(void *result, void *done_arg), void *done_arg);

/**
 * pc_call() that suspends the calling fiber until the result is back:
 * *result (if not NULL) gets @fn's return value. The worker runs other
 * tasks and fibers meanwhile. Calls still in flight when the runtime stops
 * are answered in the drain, so this always returns with the result.
 * Errors: as pc_call() (-EINVAL, -ENODEV, -ENOMEM), -EPERM off-fiber.
 * Fiber only.
 */
int pc_call_await(unsigned dst, void *(*fn)(void *arg), void *arg, void **result);

/**
 * pc_spawn_blocking() that suspends the calling fiber until @fn returned
 * on the blocking lane: *result (if not NULL) gets its value. Errors: as
 * pc_spawn_blocking() (-EINVAL, -ENODEV, -ENOTSUP without a lane,
 * -ENOMEM), -EPERM off-fiber. Fiber only.
 */
int pc_blocking_await(void *(*fn)(void *arg), void *arg, void **result);

/* ------------------------------------------------------------------------ */
/* Stats                                                                    */
/* ------------------------------------------------------------------------ */

/** One worker's shard counters; each is written by its worker only. */
struct pc_shard_stats {
        uint64_t sent;            /**< messages published to a ring or queued in overflow */
        uint64_t received;        /**< messages taken from its rings */
        uint64_t overflowed;      /**< messages that waited in overflow */
        uint64_t flushes;         /**< ring tail publications */
        uint64_t polls;           /**< mailbox poller calls */
        uint64_t idle_polls;      /**< polls that found nothing to do */
        uint64_t rings_inspected; /**< inbound rings a poll looked into */
        uint64_t space_waits;     /**< times it asked a receiver for space */
        uint64_t blocking_done;   /**< blocking-lane completions it ran */
        uint64_t slot_calls;      /**< its pc_call()s that took a call slot (the
                                       latency path) rather than the ring */
        uint64_t slot_calls_near; /**< of those, calls to a near callee that took
                                       the line of the pair's last call */
        uint64_t near_pairs; /**< now: the pairs (it as caller, or as callee)
                                  that run near (pc_shard_opts.call_near_ns) */
        uint64_t far_pairs;  /**< now: the timed pairs that run far; while it
                                  has any and no near one, its idle spin pauses
                                  (a look at a far line slows its writer) */
};

/**
 * Copy worker @w's counters into @out. Each counter is exact but they are
 * not read at one instant; a message counts as sent once its ring slot is
 * published (at most 64 messages, or a quarter of a smaller ring, or one
 * iteration after pc_submit()) or it joins the overflow list. The ring
 * counter only grows when a doorbell bit (or a ring left non-empty by the
 * previous poll) points at a ring: a ring stays watched for up to 256
 * empty polls after its last message, and once
 * traffic has stopped for that long an idle poll inspects no ring, whatever
 * the number of workers.
 * Errors: -EINVAL (NULL, no worker @w), -ENODEV. Any thread.
 */
int pc_shard_stats(const struct pc_runtime *rt, unsigned w, struct pc_shard_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PC_SHARD_H */
