/* SPDX-License-Identifier: MIT */
/*
 * The stealable queue of elastic mode: a bounded ring with one producer
 * (the owner) and many consumers (the owner and thieves), all taking the
 * oldest task first. Indexes are 64-bit and only grow, so a compare-and-
 * swap on head can never be fooled by wrap-around.
 *
 * A consumer reads the slots it wants, then claims them by moving head
 * with one CAS; if head moved meanwhile the claim fails and nothing was
 * taken. The owner overwrites a slot only once head has passed it, and it
 * reads head with acquire, pairing with the thieves' release CAS, so no
 * thief can be reading a slot the owner is rewriting.
 *
 * A push into a full ring fails; the caller (pc__push_local) then moves
 * the older half of the ring to the global injector, where any worker can
 * take it, so work never piles up where only a busy owner could reach it.
 */
#ifndef PC_STEALQ_PVT_H
#define PC_STEALQ_PVT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pc_core.h"

struct pc_stealq {
        _Atomic uint64_t head __attribute__((aligned(64))); /* consumers */
        _Atomic uint64_t tail __attribute__((aligned(64))); /* owner */
        /* Our bit is set in rt->stealable: set by the owner, cleared by the
         * owner or by a thief that finds the ring empty. In the owner's
         * line, which a thief writes only then. */
        _Atomic bool adv;
        /* A thief found the ring empty and dropped our advertisement: the
         * thieves drain us faster than we push (we are busy elsewhere),
         * so the next push advertises even below PC_ADVERTISE_MIN, or a
         * last task would wait for us. Set by that thief before it clears
         * adv; cleared by the owner when it advertises or pops. */
        _Atomic bool drained;
        uint64_t mask;
        _Atomic(struct pc_task *) *slots;
        /* owner only */
        uint64_t seen_head; /* a head value read with acquire, <= head */
};

static inline uint64_t pc__stealq_ring_len(struct pc_stealq *q)
{
        uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);
        uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

        return t - h;
}

/* Owner only. Returns false, queueing nothing, when the ring is full. */
static inline bool pc__stealq_push(struct pc_stealq *q, struct pc_task *x)
{
        uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

        /* A slot is free once head passed it; an older head read with
         * acquire proves that for every slot below it, so re-read head
         * (a line thieves write) only when the ring looks full. */
        if (t - q->seen_head > q->mask) {
                q->seen_head = atomic_load_explicit(&q->head, memory_order_acquire);
                if (t - q->seen_head > q->mask)
                        return false;
        }
        atomic_store_explicit(&q->slots[t & q->mask], x, memory_order_relaxed);
        atomic_store_explicit(&q->tail, t + 1, memory_order_release);
        return true;
}

/* Owner only: the oldest task, or NULL. */
static inline struct pc_task *pc__stealq_pop(struct pc_stealq *q)
{
        uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
        uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);

        while (h != t) {
                struct pc_task *x =
                        atomic_load_explicit(&q->slots[h & q->mask], memory_order_relaxed);
                if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + 1,
                                                          memory_order_acq_rel,
                                                          memory_order_acquire))
                        return x;
        }
        return NULL;
}

/*
 * Claim the oldest half of the ring (rounded up), at most @max tasks, into
 * @out with one CAS on head: read the slots, then move head past them; if
 * head moved meanwhile nothing was taken and we retry, at most @tries times
 * (< 0: until the ring is empty). head is read before tail, so the length
 * can only be too large by what other consumers took since, which the CAS
 * catches. Returns how many were taken.
 */
static inline unsigned pc__stealq_claim(struct pc_stealq *q, struct pc_task **out, unsigned max,
                                        int tries)
{
        uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);

        for (int i = 0; tries < 0 || i < tries; i++) {
                uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
                uint64_t len = t - h, n;

                if ((int64_t)len <= 0)
                        return 0;
                n = len - len / 2;
                if (n > max)
                        n = max;
                for (uint64_t k = 0; k < n; k++)
                        out[k] = atomic_load_explicit(&q->slots[(h + k) & q->mask],
                                                      memory_order_relaxed);
                if (atomic_compare_exchange_strong_explicit(&q->head, &h, h + n,
                                                            memory_order_acq_rel,
                                                            memory_order_acquire))
                        return (unsigned)n;
        }
        return 0;
}

/* Owner: one CAS per batch instead of per task, while thieves can still
 * take the other half. */
static inline unsigned pc__stealq_pop_batch(struct pc_stealq *q, struct pc_task **out,
                                            unsigned max)
{
        return pc__stealq_claim(q, out, max, -1);
}

/* Thief: a few tries, then look elsewhere. */
static inline unsigned pc__stealq_steal(struct pc_stealq *q, struct pc_task **out, unsigned max)
{
        return pc__stealq_claim(q, out, max, 8);
}

#endif
