/* SPDX-License-Identifier: MIT */
/*
 * Mailboxes, the send side: a message written into the sender's next
 * slot, the tail published once per batch or iteration, credits, the
 * ordered overflow behind a full ring, doorbells, and the flush the
 * poller runs; pc_submit() and pc_submit_burst(). Quoted sections
 * ("Fences") are docs/messaging.md's.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mbox_pvt.h"

void pc__mbox_call_mark(void *record)
{
        pc_log(PC_LOG_ERROR, "mailbox: a call record %p was run as a submit", record);
        abort();
}

void pc__mbox_ring_bell(struct pc__shard_worker *sw, unsigned idx)
{
        unsigned dst = idx / 2, bit = 2 * sw->id + idx % 2;
        _Atomic uint64_t *db = &sw->sh->in[dst]->doorbell[bit / 64];

        if (atomic_fetch_or_explicit(db, 1ull << (bit % 64), memory_order_seq_cst) == 0 &&
            dst != sw->id)
                pc__wake(sw->sh->rt->workers[dst]);
}

/* Make what the sender wrote to outbound ring @idx visible. A receiver
 * watching the ring costs nothing more than a load; otherwise ring its
 * doorbell (see "Doorbell" and "Fences"). */
static void publish(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o)
{
        unsigned bit = 2 * sw->id + idx % 2;
        _Atomic uint64_t *db = &sw->sh->in[idx / 2]->doorbell[bit / 64];

        uint32_t fresh = pending(o) - o->moved;

        atomic_store_explicit(&o->ring->tail, o->tail, memory_order_release);
        /* The fast path counts its messages here, once per batch: they
         * cannot be received before this store, and a worker always
         * publishes before its iteration ends (see "Quiescence"). */
        if (fresh) {
                pc__count_sent(sw->w, fresh);
                pc__shard_bump(&sw->c.sent, fresh);
        }
        o->pub = o->tail;
        o->stop = o->tail; /* the next message sets the dirty bit (restop()) */
        o->moved = 0;
        pc__shard_bump(&sw->c.flushes, 1);
        bell_or_recheck(sw, idx, db, bit);
}

/* Write a message into outbound ring @idx's next slot (o->tail, which the
 * caller advances): the call record @rec (a call on a request ring), or
 * else *@m, whole in a reply ring, fn and arg in a request ring. */
static void slot_put(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o,
                     const struct pc__msg *m, struct pc_task *rec)
{
        uint32_t i = o->tail & sw->mask;

        if (rec)
                req_slots(o->ring)[i] = (struct pc__req){pc__mbox_call_mark, rec};
        else if (idx % 2 == MBOX_REQ)
                req_slots(o->ring)[i] = (struct pc__req){m->fn.submit, m->arg};
        else
                rep_slots(o->ring)[i] = *m;
}

/* slot_put() of the message overflow node @t carries. Returns true when
 * the ring now refers to @t (a call's record), false when @t may be
 * freed. */
static bool put_msg(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o,
                    struct pc_task *t)
{
        const struct pc__msg *m = (const struct pc__msg *)(const void *)t->reserved;
        struct pc_task *rec = idx % 2 == MBOX_REQ && m->done ? t : NULL;

        slot_put(sw, idx, o, m, rec);
        return rec != NULL;
}

/* Queue node @t at the end of outbound ring @idx's overflow, counted as
 * sent now: overflow may outlive this iteration. */
static void ovf_push(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o,
                     struct pc_task *t)
{
        t->next = NULL;
        if (o->ovf_tail)
                o->ovf_tail->next = t;
        else
                o->ovf_head = t;
        o->ovf_tail = t;
        o->stop = o->tail; /* every message joins the overflow now */
        o->ovf_len++;
        pc__count_sent(sw->w, 1);
        pc__shard_bump(&sw->c.sent, 1);
        pc__shard_bump(&sw->c.overflowed, 1);
        set_bit(sw->dirty, idx);
}

/* A node from *@spare when given and non-empty, else from the worker's
 * free list; NULL when out of memory. */
static struct pc_task *take_node(struct pc__shard_worker *sw, struct pc_task **spare)
{
        struct pc_task *t;

        if (spare && *spare) {
                t = *spare;
                *spare = t->next;
                return t;
        }
        return pc__task_alloc(sw->w);
}

/* Free slots the sender may write; reads the receiver's head only when the
 * credits it knew of are spent. */
static inline uint32_t credits(struct pc__shard_worker *sw, struct pc__mbox_out *o)
{
        uint32_t cap = sw->mask + 1;

        if (o->tail - o->head_cache == cap)
                o->head_cache = atomic_load_explicit(&o->ring->head, memory_order_acquire);
        return cap - (o->tail - o->head_cache);
}

/* Move overflow of outbound ring @idx into the ring, oldest first, while
 * credits last, publishing as it goes. Returns the messages moved. */
static unsigned ovf_move(struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o)
{
        unsigned done = 0;
        uint32_t c;

        while (o->ovf_head && (c = credits(sw, o)) != 0) {
                while (c-- && o->ovf_head) {
                        struct pc_task *t = o->ovf_head;
                        o->ovf_head = t->next;
                        /* A call's node is its record: it travels on. */
                        if (!put_msg(sw, idx, o, t))
                                pc__task_release(sw->w, t);
                        o->tail++;
                        o->moved++;
                        o->ovf_len--;
                        done++;
                }
                publish(sw, idx, o);
        }
        if (o->ovf_head == NULL)
                o->ovf_tail = NULL;
        return done;
}

/* The ring is (nearly) full by what the sender knows, or overflow is
 * ahead of us: look at the receiver's head, then write a slot or queue the
 * message on the overflow list. The message is the call record @rec (a
 * call on a request ring, which travels as its node either way) or, when
 * @rec is NULL, *@m, copied into a node if it must wait. */
static __attribute__((noinline)) int send_slow(struct pc__shard_worker *sw, unsigned idx,
                                               const struct pc__msg *m, struct pc_task *rec,
                                               struct pc_task **spare)
{
        struct pc__mbox_out *o = &sw->out[idx];
        struct pc_task *t = rec;

        /* Every batch of messages overflowed, see whether the receiver
         * made room, so a sender faster than its receiver keeps most
         * messages in the ring instead of queueing them until its poll
         * (and reads the receiver's head at most once per batch). */
        if (o->ovf_head && (o->ovf_len & (sw->batch - 1)) == 0)
                ovf_move(sw, idx, o);
        if (o->ovf_head == NULL && credits(sw, o) != 0) {
                slot_put(sw, idx, o, m, rec);
                o->tail++;
                /* Publish a batch, or a full ring so the receiver can start. */
                if (pending(o) >= sw->batch || o->tail - o->head_cache == sw->mask + 1)
                        publish(sw, idx, o);
                else
                        set_bit(sw->dirty, idx);
                return 0;
        }
        if (t == NULL) {
                t = take_node(sw, spare);
                if (unlikely(t == NULL))
                        return -ENOMEM;
                memcpy(t->reserved, m, sizeof(*m));
        }
        ovf_push(sw, idx, o, t);
        return 0;
}

/*
 * Claim for writing the request slots [@tail + claim, @tail + 2 * claim)
 * (whole lines: @tail is a multiple of claim). A sender streaming into a
 * ring writes lines the receiver read a lap ago, so each new line is a
 * transfer from the receiver's cache, and x86 commits stores in order:
 * without the claim, the slot store that misses holds every younger store
 * behind it (the tail's, the next slots') and the sender stalls once its
 * store buffer is full, a few lines' transfers in flight at most.
 * PREFETCHW asks for the line in exclusive state without taking a
 * store-buffer entry, so the transfers overlap and the stores hit. Only
 * free slots are claimed (by the head the sender last read): taking a line
 * the receiver has still to read would cost it a transfer back.
 */
static void claim_lines(const struct pc__shard_worker *sw, const struct pc__mbox_out *o,
                        struct pc__req *slots, uint32_t tail)
{
#if defined(__x86_64__) || defined(__i386__)
        const uint32_t per_line = PC_CACHE_LINE / sizeof(*slots);
        uint32_t ahead = sw->claim;

        if (ahead == 0 || (tail & (ahead - 1)) != 0 || tail + 2 * ahead - o->head_cache > sw->mask)
                return;
        for (uint32_t i = ahead; i < 2 * ahead; i += per_line)
                __asm__ volatile("prefetchw %0" ::"m"(slots[(tail + i) & sw->mask]));
#else
        (void)sw, (void)o, (void)slots, (void)tail;
#endif
}

/*
 * Set where the fast path of outbound ring @idx must next step aside
 * (o->stop, a ring position): at once with overflow waiting or right after
 * a publication (that message sets the dirty bit); else at the earliest
 * of the slot the one-free rule keeps, the message that completes a batch
 * (which publishes) and a request ring's next claim. Every bound is a
 * position that only moves forward, and the fast path compares signed, so
 * a stop left behind by the slow path or a burst only sends the next
 * message here early; publish() and ovf_push() pull it back to the tail.
 */
static void restop(const struct pc__shard_worker *sw, unsigned idx, struct pc__mbox_out *o)
{
        uint32_t t = o->tail;
        int32_t d, b;

        if (o->ovf_head != NULL || t == o->pub) {
                o->stop = t;
                return;
        }
        d = (int32_t)(o->head_cache + sw->mask - t);
        b = (int32_t)(o->pub + sw->batch - 1 - t);
        if (b < d)
                d = b;
        if (idx % 2 == MBOX_REQ && sw->claim) {
                b = (int32_t)(sw->claim - (t & (sw->claim - 1)));
                if (b < d)
                        d = b;
        }
        o->stop = t + (uint32_t)(d > 0 ? d : 0);
}

/* mbox_send()'s way out, kept out of line so the fast path builds no
 * message on its stack. */
static __attribute__((noinline)) int send_slow_msg(struct pc__shard_worker *sw, unsigned idx,
                                                   union pc__msg_fn fn, void *arg,
                                                   struct pc_task *node, void *done_arg,
                                                   struct pc_task **spare)
{
        struct pc__msg m = {.fn = fn, .arg = arg, .node = node, .done_arg = done_arg};

        return send_slow(sw, idx, &m, NULL, spare);
}

/* mbox_send() at o->stop: everything the fast path leaves out (overflow
 * or a ring full by what the sender knows, the batch's publication, the
 * dirty bit, the claim), then a new stop. */
__attribute__((noinline)) int pc__mbox_send_edge(struct pc__shard_worker *sw, unsigned idx,
                                                 union pc__msg_fn fn, void *arg,
                                                 struct pc_task *node, void *done_arg,
                                                 struct pc_task **spare)
{
        struct pc__mbox_out *o = &sw->out[idx];
        uint32_t tail = o->tail;
        int rc = 0;

        if (o->ovf_head != NULL || tail - o->head_cache >= sw->mask) {
                rc = send_slow_msg(sw, idx, fn, arg, node, done_arg, spare);
        } else {
                if (idx % 2 == MBOX_REQ)
                        claim_lines(sw, o, req_slots(o->ring), tail);
                slot_write(sw, idx, o, tail, fn, arg, node, done_arg);
                o->tail = ++tail;
                if (tail - o->pub >= sw->batch)
                        publish(sw, idx, o);
                else
                        set_bit(sw->dirty, idx);
        }
        restop(sw, idx, o);
        return rc;
}

/* A call on request ring (@dst, REQ): its record in a node of the
 * caller's pool, whose address the ring carries. Out of line: calls take
 * the call slots when they can (see "Call slots"). */
__attribute__((noinline)) int pc__mbox_send_call(struct pc__shard_worker *sw, unsigned dst,
                                                 union pc__msg_fn fn, void *arg,
                                                 void (*done)(void *, void *), void *done_arg,
                                                 struct pc_task **spare)
{
        struct pc_task *t = take_node(sw, spare);
        struct pc__msg *m;
        int rc;

        if (unlikely(t == NULL))
                return -ENOMEM;
        m = (struct pc__msg *)(void *)t->reserved;
        *m = (struct pc__msg){.fn = fn, .arg = arg, .done = done, .done_arg = done_arg};
        rc = send_slow(sw, 2 * dst + MBOX_REQ, NULL, t, spare);
        if (rc == 0)
                sw->cout[dst].ring_calls++;
        return rc;
}

int pc__mbox_send(struct pc__shard_worker *sw, unsigned dst, unsigned kind,
                  const struct pc__msg *m, struct pc_task **spare)
{
        if (kind == MBOX_REQ)
                return mbox_send(sw, dst, MBOX_REQ, m->fn, m->arg, m->done, NULL, m->done_arg,
                                 spare);
        return mbox_send(sw, dst, MBOX_REP, m->fn, m->arg, NULL, m->node, m->done_arg, spare);
}

int pc__mbox_reserve(struct pc__shard_worker *sw, unsigned n, struct pc_task **spare)
{
        *spare = NULL;
        for (unsigned i = 0; i < n; i++) {
                struct pc_task *t = pc__task_alloc(sw->w);
                if (t == NULL) {
                        pc__mbox_unreserve(sw, *spare);
                        *spare = NULL;
                        return -ENOMEM;
                }
                t->next = *spare;
                *spare = t;
        }
        return 0;
}

void pc__mbox_unreserve(struct pc__shard_worker *sw, struct pc_task *spare)
{
        while (spare) {
                struct pc_task *next = spare->next;
                pc__task_release(sw->w, spare);
                spare = next;
        }
}

/* Move overflow of outbound ring @idx into the ring as credits allow and
 * publish what is unpublished. Returns the messages moved or published. */
static unsigned flush_one(struct pc__shard_worker *sw, unsigned idx)
{
        struct pc__mbox_out *o = &sw->out[idx];
        uint32_t cap = sw->mask + 1;
        unsigned done = pending(o);

        for (;;) {
                done += ovf_move(sw, idx, o);
                if (o->ovf_head == NULL)
                        break;
                if (pending(o))
                        publish(sw, idx, o);
                /* Still no credit: ask the receiver to wake us when it frees
                 * space, then look once more (the want_space handshake). */
                atomic_store_explicit(&o->ring->want_space, 1, memory_order_seq_cst);
                pc__shard_bump(&sw->c.space_waits, 1);
                o->head_cache = atomic_load_explicit(&o->ring->head, memory_order_seq_cst);
                if (o->tail - o->head_cache == cap)
                        break;
        }
        if (pending(o))
                publish(sw, idx, o);
        if (o->ovf_head == NULL)
                clear_bit(sw->dirty, idx);
        return done;
}

unsigned pc__mbox_flush_all(struct pc__shard_worker *sw)
{
        unsigned n = 0;

        for (unsigned i = 0; i < sw->db_words; i++) {
                uint64_t bits = sw->dirty[i];
                while (bits) {
                        unsigned b = (unsigned)__builtin_ctzll(bits);
                        bits &= bits - 1;
                        n += flush_one(sw, i * 64 + b);
                }
        }
        return n;
}

int pc_submit(unsigned dst, pc_task_fn fn, void *arg)
{
        struct pc__shard_worker *sw;
        int rc;

        sw = pc__shard_self(&rc);
        if (unlikely(sw == NULL))
                return rc;
        if (unlikely(fn == NULL || dst >= sw->n))
                return -EINVAL;
        return mbox_send(sw, dst, MBOX_REQ, (union pc__msg_fn){.submit = fn}, arg, NULL, NULL,
                         NULL, NULL);
}

/* Slots the fast path may write at @tail: all free ones but one, by what
 * the sender knows of the receiver's head. */
static inline uint32_t fast_room(const struct pc__shard_worker *sw, const struct pc__mbox_out *o,
                                 uint32_t tail)
{
        uint32_t used = tail - o->head_cache;

        return used < sw->mask ? sw->mask - used : 0;
}

int pc_submit_burst(unsigned dst, pc_task_fn fn, void *const *args, unsigned n)
{
        struct pc__shard_worker *sw;
        struct pc__mbox_out *o;
        unsigned idx, i = 0;
        int rc;

        sw = pc__shard_self(&rc);
        if (unlikely(sw == NULL))
                return rc;
        if (unlikely(fn == NULL || (args == NULL && n) || dst >= sw->n || n > INT_MAX))
                return -EINVAL;
        idx = 2 * dst + MBOX_REQ;
        o = &sw->out[idx];
        if (likely(o->ovf_head == NULL) && n) {
                struct pc__req *slots = req_slots(o->ring);
                uint32_t tail = o->tail, before = tail - o->pub, room, k;

                /* The fast path's rule: keep at least one slot free. The
                 * slow path fills a ring to the last slot (send_slow()), so
                 * a ring may hold mask + 1 already: no room, not 2^32 - 1. */
                room = fast_room(sw, o, tail);
                if (room < n) {
                        o->head_cache = atomic_load_explicit(&o->ring->head,
                                                             memory_order_acquire);
                        room = fast_room(sw, o, tail);
                }
                k = n < room ? n : room;
                for (uint32_t j = 0; j < k; j++)
                        req_write(&slots[(tail + j) & sw->mask], fn, args[j]);
                o->tail = tail + k;
                i = k;
                if (before + k >= sw->batch)
                        publish(sw, idx, o);
                else if (before == 0 && k)
                        set_bit(sw->dirty, idx);
        }
        /* The rest one by one: the slow path publishes a full ring and
         * queues in overflow, in order. */
        for (; i < n; i++) {
                rc = mbox_send(sw, dst, MBOX_REQ, (union pc__msg_fn){.submit = fn}, args[i],
                               NULL, NULL, NULL, NULL);
                if (unlikely(rc))
                        return i ? (int)i : rc;
        }
        return (int)n;
}
