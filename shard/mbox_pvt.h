/* SPDX-License-Identifier: MIT */
/*
 * Private to the mailbox's files: the ring layout, the inline send path,
 * and what the files call of each other. mbox_send.c holds the rings'
 * send side (slots, credits, overflow, doorbells, the flush), mbox_poll.c
 * the poller that drains them, mbox_call.c the call slots (pc_call()'s
 * latency path, near and far pairs), mbox_setup.c setup and stats.
 *
 * Why it is built this way. Sender and receiver share nothing but the
 * slots, the ring's head and tail, and the receiver's doorbell, and each
 * handshake between them (a tail published against a doorbell bit let
 * go, a bit set against the receiver going to sleep, a sender out of
 * space against the head the receiver stores) is the Dekker pattern: each
 * side stores, then loads the other's variable, with a seq_cst fence or
 * RMW between, so at least one of them sees the other. The fences are
 * paid at the end of a poll, at most one, and only when it moved
 * something; the stores that make messages and space visible are plain
 * releases, whose line transfers overlap. docs/messaging.md gives the
 * whole argument, in sections (Sending, Doorbell, Fences, Receiving, Call
 * slots, Near and far, Quiescence) that the comments here name.
 */
#ifndef PC_MBOX_PVT_H
#define PC_MBOX_PVT_H

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "shard_pvt.h"

/* For the functions the mailbox's files call of each other on its fast
 * paths: a direct call, as within one file, not one through the PLT. */
#define PC_MBOX_INTERNAL __attribute__((visibility("hidden")))

/* A request ring's entries, and a reply ring's messages. */
static inline struct pc__req *req_slots(struct pc__ring *r)
{
        return (struct pc__req *)(void *)r->slots;
}

static inline struct pc__msg *rep_slots(struct pc__ring *r)
{
        return (struct pc__msg *)(void *)r->slots;
}

/* Where ring @idx's entry at index @i (already masked) lies. */
static inline void *slot_at(struct pc__ring *r, unsigned idx, uint32_t i)
{
        return idx % 2 == MBOX_REQ ? (void *)&req_slots(r)[i] : (void *)&rep_slots(r)[i];
}

static inline struct pc__ring *in_ring(const struct pc__shard *sh, unsigned dst, unsigned idx)
{
        return (struct pc__ring *)((char *)sh->in[dst] + sizeof(struct pc__mbox_in) +
                                   (size_t)(idx / 2) * sh->pair_stride +
                                   (idx % 2) * sh->req_stride);
}

static inline void set_bit(uint64_t *map, unsigned i)
{
        map[i / 64] |= 1ull << (i % 64);
}

static inline void clear_bit(uint64_t *map, unsigned i)
{
        map[i / 64] &= ~(1ull << (i % 64));
}

/* Slots written since the last publication. */
static inline uint32_t pending(const struct pc__mbox_out *o)
{
        return o->tail - o->pub;
}

/* mbox_send.c: the entry a request ring carries for a call (fn), the
 * call's record being arg. Never run: the drain compares against it. */
PC_MBOX_INTERNAL void pc__mbox_call_mark(void *record);

/* mbox_send.c: set the bit of outbound ring @idx in the receiver's
 * doorbell, and wake the receiver if it was the word's first bit. */
PC_MBOX_INTERNAL void pc__mbox_ring_bell(struct pc__shard_worker *sw, unsigned idx);

/* After a publication to outbound ring @idx (a tail, or a call slot):
 * a receiver watching the ring costs a load, rechecked in settle();
 * otherwise ring its doorbell. */
static inline void bell_or_recheck(struct pc__shard_worker *sw, unsigned idx,
                                   _Atomic uint64_t *db, unsigned bit)
{
        if (atomic_load_explicit(db, memory_order_relaxed) & (1ull << (bit % 64)))
                set_bit(sw->recheck, idx);
        else
                pc__mbox_ring_bell(sw, idx);
}

/* A submit's entry: one 16-byte store where SSE2 has it. The sender
 * streams into lines the receiver read a lap ago and is bound by the
 * stores it has in flight, so every store it leaves out counts. */
static inline void req_write(struct pc__req *slot, pc_task_fn fn, void *arg)
{
#ifdef __SSE2__
        _mm_storeu_si128((__m128i *)(void *)slot,
                         _mm_set_epi64x((long long)(uintptr_t)arg, (long long)(uintptr_t)fn));
#else
        slot->fn = fn;
        slot->arg = arg;
#endif
}

/* A message into outbound ring @idx's slot at @tail: fn and arg in a
 * request ring, the whole message in a reply ring, stored field by field
 * (a struct built first would cost the fast path stores on the stack). */
static inline __attribute__((always_inline)) void
slot_write(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o, uint32_t tail,
           union pc__msg_fn fn, void *arg, struct pc_task *node, void *done_arg)
{
        if (idx % 2 == MBOX_REQ) {
                req_write(&req_slots(o->ring)[tail & sw->mask], fn.submit, arg);
        } else {
                struct pc__msg *slot = &rep_slots(o->ring)[tail & sw->mask];

                slot->fn = fn;
                slot->arg = arg;
                slot->node = node;
                slot->done_arg = done_arg;
        }
}

/* mbox_send.c: mbox_send()'s ways out of line: a message at o->stop
 * (overflow, or a ring full by what the sender knows; a batch to publish,
 * the dirty bit, a claim), and a call on a request ring. */
PC_MBOX_INTERNAL int pc__mbox_send_edge(struct pc__shard_worker *sw, unsigned idx,
                                        union pc__msg_fn fn, void *arg,
                                        struct pc_task *node, void *done_arg,
                                        struct pc_task **spare);
PC_MBOX_INTERNAL int pc__mbox_send_call(struct pc__shard_worker *sw, unsigned dst,
                                        union pc__msg_fn fn, void *arg,
                                        void (*done)(void *, void *), void *done_arg,
                                        struct pc_task **spare);

/* The send path, inlined into pc_submit() and the reply of a call: before
 * the stop (the sender knows of two free slots or more, nothing waits in
 * overflow, the batch is not complete), a slot write and the new tail,
 * nothing shared but the slot.
 * A request with @done is a call; a reply carries its call's record in
 * @node. Scalars, not a struct: a message struct passed in was built on
 * the stack on the fast path (five stores more per submit). */
static inline __attribute__((always_inline)) int
mbox_send(struct pc__shard_worker *sw, unsigned dst, unsigned kind, union pc__msg_fn fn,
          void *arg, void (*done)(void *, void *), struct pc_task *node, void *done_arg,
          struct pc_task **spare)
{
        unsigned idx = 2 * dst + kind;
        struct pc__mbox_out *o = &sw->out[idx];

        if (kind == MBOX_REQ && done)
                return pc__mbox_send_call(sw, dst, fn, arg, done, done_arg, spare);

        uint32_t tail = o->tail;

        if (unlikely((int32_t)(o->stop - tail) <= 0))
                return pc__mbox_send_edge(sw, idx, fn, arg, node, done_arg, spare);
        /* The tail stays in a register: the slot's stores cannot be taken
         * to alias it. */
        slot_write(sw, idx, o, tail, fn, arg, node, done_arg);
        o->tail = tail + 1;
        return 0;
}

/* mbox_send.c: move overflow into the rings as credits allow, and publish
 * what is unpublished; returns the messages moved or published. */
PC_MBOX_INTERNAL unsigned pc__mbox_flush_all(struct pc__shard_worker *sw);

/* mbox_call.c: the callee runs the slot calls @caller posted; the caller
 * runs done for those @callee answered. Each returns how many. */
PC_MBOX_INTERNAL unsigned pc__slot_serve(struct pc__shard_worker *sw, unsigned caller);
PC_MBOX_INTERNAL unsigned pc__slot_reap(struct pc__shard_worker *sw, unsigned callee);
/* mbox_call.c: whether the pair behind inbound ring @idx has slot work
 * for us (seq_cst: let_go()'s second look). */
PC_MBOX_INTERNAL bool pc__slot_ready(struct pc__shard_worker *sw, unsigned idx);
/* mbox_call.c: start the line transfers the worker's near pairs wait for. */
PC_MBOX_INTERNAL void pc__near_prefetch(const struct pc__shard_worker *sw);
/* mbox_call.c: record the placement (PAIR_*) of the pair behind ring
 * @idx, and tell the worker how to poll. */
PC_MBOX_INTERNAL void pc__pair_set(struct pc__shard_worker *sw, unsigned idx,
                                   unsigned state);

/* What the worker's idle passes should do (PC__POLL_*): look eagerly
 * while any pair of it is near, pace the spin while it has far pairs and
 * no near one (see "Near and far"). */
static inline unsigned mbox_hints(const struct pc__shard_worker *sw)
{
        bool near = atomic_load_explicit(&sw->c.near_pairs, memory_order_relaxed) != 0;
        bool far = atomic_load_explicit(&sw->c.far_pairs, memory_order_relaxed) != 0;

        return (near ? PC__POLL_EAGER : 0) | (far && !near ? PC__POLL_PACE : 0);
}

/* What a caller knows of a pair's placement, carried in each posted seq
 * (see "Near and far"): not timed yet (or never timed), near, far. */
enum { PAIR_UNKNOWN = 0, PAIR_NEAR = 1, PAIR_FAR = 2 };

/* mbox_poll.c: the mailbox poller each worker registers as it starts. */
PC_MBOX_INTERNAL extern const struct pc_poller_ops pc__mbox_ops;

#endif /* PC_MBOX_PVT_H */
