/* SPDX-License-Identifier: MIT */
/*
 * Private shard/ state shared by the mailbox (mbox_*.c), shard.c,
 * blocking.c and await.c.
 *
 * Memory map. Each receiver dst owns one block, struct pc__mbox_in followed
 * by its 2N inbound rings; ring (src, kind) is number 2 * src + kind, and the
 * same number is its bit in dst's doorbell. Each sender src owns its
 * outbound bookkeeping, struct pc__mbox_out[2N] (credits, unpublished count,
 * overflow list), which only src touches.
 */
#ifndef PC_SHARD_PVT_H
#define PC_SHARD_PVT_H

#include <errno.h>

#include "pc_module_pvt.h"
#include "pc_shard.h"

/* Tunables, in one place. */
/* Publish a ring's tail at least every this many messages (a quarter of a
 * smaller ring: sw->batch). Each publication costs the sender a transfer
 * of the tail's line, which the receiver polls, and the sender stalls on
 * each tail store while its store buffer fills behind it: every 16 or 32
 * falls behind rte_ring's bursts of 32, every 64 keeps up with them
 * whether the two CPUs are near or far. */
#define PC_MBOX_BATCH 64
#define PC_MBOX_DRAIN_MAX 256  /* most messages taken from one ring per poll */
#define PC_MBOX_PREFETCH 4     /* slots ahead the receiver prefetches */
#define PC_MBOX_CLAIM 16       /* request slots the sender claims for writing at a time, a run
                                * ahead; a power of two, whole lines */
#define PC_MBOX_COLD_POLLS 256 /* empty polls before a receiver lets a ring's bit go */
#define PC_DB_WORDS (2 * PC_MAX_WORKERS / 64)
#define PC_CSLOTS 4            /* call slots per (caller, callee) pair: a power of two, >= 2 */
#define PC_CALL_NEAR_NS 200    /* default pc_shard_opts.call_near_ns */
#define PC_CALL_TIME_EVERY 64  /* a caller times one slot call in this many (a power of two) */
#define PC_CALL_SLOW 4         /* above this many call_near_ns a pair runs far, untried */
#define PC_CALL_TRIAL 4        /* timed calls a trial of the other way takes */
#define PC_CALL_EXPLORE_MIN 4  /* timed calls between trials, at first... */
#define PC_CALL_EXPLORE_MAX 256 /* ...doubled after each trial that lost, up to this */

enum { MBOX_REQ = 0, MBOX_REP = 1 };

/* One message as a reply ring and an overflow node carry it (two per
 * cache line). A request ring carries struct pc__req instead. */
struct pc__msg {
        union pc__msg_fn {
                pc_task_fn submit;                          /* REQ, done == NULL */
                void *(*call)(void *arg);                   /* REQ, done != NULL */
                void (*reply)(void *result, void *done_arg); /* REP */
        } fn;
        void *arg; /* REP: the result */
        union {
                void (*done)(void *result, void *done_arg); /* REQ */
                struct pc_task *node; /* REP: the call's record, back to its owner */
        };
        void *done_arg;
};

_Static_assert(sizeof(struct pc__msg) == 32, "two messages per cache line");
_Static_assert(sizeof(struct pc__msg) == sizeof(((struct pc_task *)0)->reserved),
               "an overflow node carries a message in a task's reserved words");

/* One request ring entry (four per cache line): a submit's fn and arg, or,
 * with fn == the mailbox's call mark, a call whose record (fn, arg, done,
 * done_arg as a struct pc__msg) is the task node at arg, taken from the
 * caller's pool and given back with the reply. A submit, the common
 * message, thus moves 16 bytes, and a receiver's stream of them costs a
 * line per four. */
struct pc__req {
        pc_task_fn fn;
        void *arg;
};

_Static_assert(sizeof(struct pc__req) == 16, "four requests per cache line");
_Static_assert((PC_MBOX_CLAIM & (PC_MBOX_CLAIM - 1)) == 0 &&
                       PC_MBOX_CLAIM * sizeof(struct pc__req) % PC_CACHE_LINE == 0,
               "a claim is a power of two of whole lines");

/*
 * One SPSC ring. The consumer's index and the producer's tail sit on
 * cache lines of their own; the slots start on the next line. want_space
 * shares the consumer's line: the producer writes it only when the ring is
 * full, and the consumer reads it after every drain, where a flag on the
 * tail's line (which the producer keeps rewriting) would be a miss.
 */
struct pc__ring {
        _Atomic uint32_t head PC_ALIGNED; /* consumer: next slot to read */
        _Atomic uint32_t want_space;      /* producer waits for the consumer */
        _Atomic uint32_t tail PC_ALIGNED; /* producer: slots published */
        /* struct pc__req in a request ring, struct pc__msg in a reply ring */
        unsigned char slots[] PC_ALIGNED;
};

_Static_assert(offsetof(struct pc__ring, head) == 0, "consumer line first");
_Static_assert(offsetof(struct pc__ring, tail) == PC_CACHE_LINE,
               "producer and consumer indexes on separate lines");
_Static_assert(offsetof(struct pc__ring, slots) == 2 * PC_CACHE_LINE,
               "slots start on a line of their own");
_Static_assert(sizeof(struct pc__ring) == 2 * PC_CACHE_LINE, "ring header is two lines");

/*
 * A call slot: pc_call()'s latency path (mbox_call.c). One line, in the
 * callee's block, written by the caller (fn, arg, then seq) and answered
 * in place by the callee (result, then seq).
 */
struct pc__cslot {
        _Atomic uint64_t seq; /* (2c + 1) << 2 | placement: the pair's slot call c
                               * posted; (2c + 2) << 2: answered (mbox_call.c) */
        void *(*fn)(void *arg);
        void *arg;
        void *result;
} PC_ALIGNED;

_Static_assert(sizeof(struct pc__cslot) == PC_CACHE_LINE, "a call slot is one line");

_Static_assert(PC_CSLOTS >= 2 && (PC_CSLOTS & (PC_CSLOTS - 1)) == 0,
               "a slot call goes to the last call's slot or the next one");

/* A caller's view of its call slots to one callee. Owner only. */
struct pc__call_out {
        uint64_t posted, reaped; /* slot calls posted, and answered and run */
        uint32_t ring_calls;     /* calls on the ring whose replies are due */
        uint32_t rtt_ns;         /* timed slot calls' round trip, averaged; 0: none yet */
        uint32_t kept_ns;        /* during a trial: rtt_ns of the way it may replace */
        uint16_t trial;          /* timed calls left in a trial of the other way; 0: none */
        uint16_t explore_in;     /* timed calls until the next trial */
        uint16_t explore_gap;    /* what explore_in starts from (mbox_call.c) */
        uint64_t timed;          /* 1 + the slot call being timed; 0: none */
        uint64_t timed_at;       /* pc__now() when it was posted */
        uint8_t off;             /* call c's slot: (c + off) % PC_CSLOTS (mbox_call.c) */
        bool near;               /* the pair runs near (mbox_call.c) */
        bool told;               /* the last call posted said near */
        bool placed;             /* near by the topology: never timed */
        struct {
                void (*done)(void *result, void *done_arg);
                void *done_arg;
        } pend[PC_CSLOTS];
};

struct pc__bjob;

/* A receiver's block header; its rings follow it. */
struct pc__mbox_in {
        /* Bit 2 * src + kind: ring (src, kind) has work or is being watched.
         * Senders set bits; the owner keeps a bit set while the ring is
         * busy and clears it once the ring stays empty (mbox_poll.c). */
        _Atomic uint64_t doorbell[PC_DB_WORDS] PC_ALIGNED;
        /* Blocking-lane jobs finished for this worker (LIFO, MPSC). */
        _Atomic(struct pc__bjob *) completions PC_ALIGNED;
};

_Static_assert(sizeof(struct pc__mbox_in) == 2 * PC_CACHE_LINE, "doorbell, completions");

/* A sender's view of one outbound ring. Owner only. */
struct pc__mbox_out {
        struct pc__ring *ring;
        uint32_t tail;       /* next slot to write */
        uint32_t pub;        /* ring->tail as last published; tail - pub are pending */
        uint32_t head_cache; /* consumer head last read: credits = cap - (tail - head_cache) */
        uint32_t stop;       /* the fast path writes while tail is before this (restop()) */
        uint32_t moved;      /* of the pending, from overflow (already counted as sent) */
        uint32_t ovf_len;
        struct pc_task *ovf_head, *ovf_tail; /* waiting for credits, in order */
};

/* Counters a worker publishes for pc_shard_stats(). */
struct pc__shard_counters {
        _Atomic uint64_t sent;
        _Atomic uint64_t received;
        _Atomic uint64_t overflowed;
        _Atomic uint64_t flushes;
        _Atomic uint64_t polls;
        _Atomic uint64_t idle_polls;
        _Atomic uint64_t rings_inspected;
        _Atomic uint64_t space_waits;
        _Atomic uint64_t blocking_done;
        _Atomic uint64_t slot_calls;
        _Atomic uint64_t slot_calls_near;
        _Atomic uint64_t near_pairs; /* gauges: bits set in near and far below */
        _Atomic uint64_t far_pairs;
};

struct pc__shard;

/* One worker's shard state. Owner only, except where noted. */
struct pc__shard_worker {
        struct pc__shard *sh;
        struct pc_worker *w;
        unsigned id;
        unsigned n;
        unsigned db_words; /* doorbell words in use: (2N + 63) / 64 */
        uint32_t mask;     /* ring size - 1 */
        uint32_t batch;    /* publish every batch messages: PC_MBOX_BATCH, at most a
                            * quarter of the ring; a power of two */
        uint32_t claim;    /* PC_MBOX_CLAIM where the CPU has PREFETCHW and the ring
                            * holds four times that, else 0 (see claim_lines()) */
        struct pc__mbox_in *in;   /* this worker's inbound block */
        struct pc__mbox_out *out; /* [2N]: outbound ring 2 * dst + kind */
        struct pc_poller *poller; /* registered as the worker first starts */
        bool eager;               /* a near pair: each poll prefetches what it awaits */
        uint64_t dirty[PC_DB_WORDS]; /* outbound rings unpublished or overflowing */
        uint64_t carry[PC_DB_WORDS]; /* inbound rings the last drain left non-empty */
        uint64_t recheck[PC_DB_WORDS]; /* outbound rings published without ringing */
        uint64_t drained[PC_DB_WORDS]; /* inbound rings whose head moved this poll */
        uint64_t fence_due[PC_DB_WORDS]; /* of those, the ones settle() must fence for */
        uint16_t *empty_polls;         /* [2N]: inbound ring's polls found empty in a row */
        uint32_t *fenced_head;         /* [2N]: inbound ring's head at the last fence after it */
        struct pc__call_out *cout;     /* [N]: call slots to each callee */
        uint64_t *slot_next;           /* [N]: the next slot call due from each caller */
        uint8_t *slot_off;             /* [N]: each caller's slot offset (mbox_call.c) */
        uint32_t near_ns;              /* pc_shard_opts.call_near_ns */
        bool time_calls;               /* near_ns neither 0 (never) nor UINT32_MAX (always) */
        /* Bit 2 * peer + MBOX_REP: a near callee we call; 2 * peer +
         * MBOX_REQ: a caller that calls us near (mbox_call.c). */
        uint64_t near[PC_DB_WORDS];    /* counted in c.near_pairs */
        uint64_t far[PC_DB_WORDS];     /* the same for pairs timed far (c.far_pairs) */
        struct pc__shard_counters c PC_ALIGNED; /* read by pc_shard_stats() */
} PC_ALIGNED;

struct pc__blocking;

struct pc__shard {
        struct pc_runtime *rt;
        unsigned n;
        uint32_t ring_size;
        uint32_t near_ns;   /* pc_shard_opts.call_near_ns */
        bool guest;         /* a virtual machine: the topology places no pair */
        size_t req_stride;  /* bytes per request ring: header + slots */
        size_t pair_stride; /* bytes per (src, dst) pair: request + reply ring */
        size_t in_bytes;    /* bytes per receiver block: header, rings, call slots */
        size_t slots_off;   /* where a block's call slots start */
        struct pc__module mod;
        struct pc__blocking *lane; /* NULL without a blocking lane */
        struct pc__mbox_in *in[PC_MAX_WORKERS];
        struct pc__shard_worker *sw[PC_MAX_WORKERS];
};

/* Owner-only counter: a relaxed load and store, no RMW. */
static inline void pc__shard_bump(_Atomic uint64_t *c, uint64_t n)
{
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

/* The calling thread's shard state while it runs a worker of a runtime
 * with a shard layer (set by the module's start hook, cleared by its stop
 * hook), else NULL. Initial-exec, as pc__self: a load on every send. */
extern __thread struct pc__shard_worker *pc__shard_here PC_TLS_IE;

/* The calling worker's shard state; sets *@rc to -EPERM or -ENODEV. */
static inline struct pc__shard_worker *pc__shard_self(int *rc)
{
        struct pc__shard_worker *sw = pc__shard_here;

        if (likely(sw != NULL))
                return sw;
        *rc = pc__self == NULL ? -EPERM : -ENODEV;
        return NULL;
}

/* mbox_send.c: queue @m on outbound ring (dst, kind). An overflow node comes
 * from *@spare when given and non-empty, else from the worker's free list. */
int pc__mbox_send(struct pc__shard_worker *sw, unsigned dst, unsigned kind,
                  const struct pc__msg *m, struct pc_task **spare);
/* Take @n nodes from the free list for pc__mbox_send(), all or none. */
int pc__mbox_reserve(struct pc__shard_worker *sw, unsigned n, struct pc_task **spare);
void pc__mbox_unreserve(struct pc__shard_worker *sw, struct pc_task *spare);

/* A pair's trials start over: the next one after PC_CALL_EXPLORE_MIN
 * timed calls (a new pair, or one back between the bounds). */
static inline void pc__call_explore_reset(struct pc__call_out *co)
{
        co->explore_gap = PC_CALL_EXPLORE_MIN;
        co->explore_in = PC_CALL_EXPLORE_MIN;
}

/* mbox_call.c: a timed slot call of pair @co took @ns; average it into
 * co->rtt_ns and set co->near by pc_shard_opts.call_near_ns @near_ns and
 * the trials between (docs/messaging.md, "Near and far"). Touches @co
 * only: the owner's worker, or a test. */
void pc__call_choose(struct pc__call_out *co, uint64_t ns, uint32_t near_ns);

/* mbox_setup.c: whether the topology alone says that workers on CPUs @a
 * and @b call each other near: pinned (@pinned) to CPUs that share an L3
 * or a NUMA node, on a machine that is not a virtual one (@guest: its
 * host may run the vCPUs anywhere). False where the topology cannot say
 * (unpinned, a guest, a flat fallback, a CPU it does not know): those
 * pairs are timed (pc__call_choose()). Pure: tests drive it. */
bool pc__call_topo_near(const struct pc_topo *t, int a, int b, bool pinned, bool guest);

/* blocking.c */
int pc__blocking_start(struct pc__shard *sh, unsigned nthreads);
void pc__blocking_stop(struct pc__shard *sh);
unsigned pc__blocking_complete(struct pc__shard_worker *sw);

#endif /* PC_SHARD_PVT_H */
