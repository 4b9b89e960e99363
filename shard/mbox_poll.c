/* SPDX-License-Identifier: MIT */
/*
 * Mailboxes, the receive side: the poller each worker runs, which drains
 * the rings its doorbell names (running messages in place), runs the calls
 * that came on a ring, lets quiet rings go, flushes what the worker sent,
 * and settles the handshakes with one fence at most; and the check that
 * lets the worker sleep. Quoted sections ("Fences") are
 * docs/messaging.md's.
 */
#include "mbox_pvt.h"

/* Run the call whose record is node @rec of worker @src's pool, and send
 * the answer back with the node. */
static void run_call(struct pc__shard_worker *sw, unsigned src, struct pc_task *rec)
{
        const struct pc__msg *m = (const struct pc__msg *)(const void *)rec->reserved;
        struct pc__msg rep;
        int rc;

        rep.fn.reply = m->done;
        rep.done_arg = m->done_arg;
        rep.arg = m->fn.call(m->arg);
        rep.node = rec;
        rc = mbox_send(sw, src, MBOX_REP, rep.fn, rep.arg, NULL, rep.node, rep.done_arg, NULL);
        if (unlikely(rc))
                pc_log(PC_LOG_ERROR, "pc_call reply from worker %u to %u lost: %s", sw->id,
                       src, pc_strerror(rc));
}

/* Run the messages inbound ring @idx holds, up to PC_MBOX_DRAIN_MAX, after
 * the pair's slot calls or answers (see "Call slots"). */
static unsigned drain(struct pc__shard_worker *sw, unsigned idx)
{
        struct pc__ring *r = in_ring(sw->sh, sw->id, idx);
        uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        uint32_t n = tail - head;
        unsigned src = idx / 2, ns = 0;

        pc__shard_bump(&sw->c.rings_inspected, 1);
        if (src != sw->id)
                ns = idx & 1 ? pc__slot_reap(sw, src) : pc__slot_serve(sw, src);
        if (n == 0)
                return ns;
        if (idx & 1)
                sw->cout[src].ring_calls -= n > PC_MBOX_DRAIN_MAX ? PC_MBOX_DRAIN_MAX : n;
        if (n > PC_MBOX_DRAIN_MAX) {
                n = PC_MBOX_DRAIN_MAX;
                set_bit(sw->carry, idx);
        }
        pc__count_recv(sw->w, n);
        pc__shard_bump(&sw->c.received, n);
        /* The slots stay ours until the head moves, so run them in place.
         * Never prefetch past the tail: a line the sender is still filling
         * would have to be taken back from us, stalling it. */
        if (idx % 2 == MBOX_REQ) {
                struct pc__req *q = req_slots(r);

                for (uint32_t i = 0; i < n; i++) {
                        const struct pc__req *e = &q[(head + i) & sw->mask];

                        if (i + 2 * PC_MBOX_PREFETCH < n)
                                __builtin_prefetch(&q[(head + i + 2 * PC_MBOX_PREFETCH) &
                                                      sw->mask]);
                        if (likely(e->fn != pc__mbox_call_mark))
                                e->fn(e->arg);
                        else
                                run_call(sw, src, e->arg);
                }
        } else {
                struct pc__msg *q = rep_slots(r);

                for (uint32_t i = 0; i < n; i++) {
                        const struct pc__msg *m = &q[(head + i) & sw->mask];

                        if (i + PC_MBOX_PREFETCH < n)
                                __builtin_prefetch(&q[(head + i + PC_MBOX_PREFETCH) & sw->mask]);
                        m->fn.reply(m->arg, m->done_arg);
                        /* Every reply on the ring answers a call that went
                         * on a request ring: its record comes home. */
                        pc__task_release(sw->w, m->node);
                }
        }
        /* The sender's want_space is looked at in settle(), after a fence
         * only when this tail is a ring's length past the head the last
         * one covered (see "Fences"). */
        atomic_store_explicit(&r->head, head + n, memory_order_release);
        set_bit(sw->drained, idx);
        if (tail - sw->fenced_head[idx] >= sw->mask)
                set_bit(sw->fence_due, idx);
        return n + ns;
}

/* Clear inbound ring @idx's doorbell bit, then look at the ring once more
 * (see "Fences"): what arrived meanwhile is drained through carry. Returns
 * true when the ring is empty. */
static bool let_go(struct pc__shard_worker *sw, unsigned idx)
{
        struct pc__ring *r = in_ring(sw->sh, sw->id, idx);

        sw->empty_polls[idx] = 0;
        atomic_fetch_and_explicit(&sw->in->doorbell[idx / 64], ~(1ull << (idx % 64)),
                                  memory_order_seq_cst);
        if (atomic_load_explicit(&r->tail, memory_order_seq_cst) ==
                    atomic_load_explicit(&r->head, memory_order_relaxed) &&
            !pc__slot_ready(sw, idx))
                return true;
        set_bit(sw->carry, idx);
        return false;
}

static unsigned drain_all(struct pc__shard_worker *sw)
{
        _Atomic uint64_t *db = sw->in->doorbell;
        unsigned n = 0;

        for (unsigned i = 0; i < sw->db_words; i++) {
                uint64_t ring = atomic_load_explicit(&db[i], memory_order_relaxed);
                uint64_t bits = ring | sw->carry[i];

                if (bits == 0)
                        continue;
                /* Start the misses on each ring's tail line, and on the first
                 * unread slot of a ring that was empty last time (a reply
                 * awaited: the two misses overlap). Not on a busy ring: that
                 * line is likely still being filled by its sender. */
                for (uint64_t p = bits; p; p &= p - 1) {
                        unsigned idx = i * 64 + (unsigned)__builtin_ctzll(p);
                        struct pc__ring *r = in_ring(sw->sh, sw->id, idx);

                        __builtin_prefetch(&r->tail);
                        if (sw->empty_polls[idx]) {
                                uint32_t h = atomic_load_explicit(&r->head,
                                                                  memory_order_relaxed);
                                __builtin_prefetch(slot_at(r, idx, h & sw->mask));
                        }
                }
                sw->carry[i] = 0;
                while (bits) {
                        unsigned b = (unsigned)__builtin_ctzll(bits);
                        unsigned idx = i * 64 + b, got;

                        bits &= bits - 1;
                        got = drain(sw, idx);
                        n += got;
                        /* A watched ring that stays empty is let go, so
                         * an idle poll stops inspecting it. */
                        if (got)
                                sw->empty_polls[idx] = 0;
                        else if ((ring >> b) & 1 &&
                                 ++sw->empty_polls[idx] >= PC_MBOX_COLD_POLLS)
                                let_go(sw, idx);
                }
        }
        return n;
}

/*
 * End of a poll: one seq_cst fence serves both handshakes whose other side
 * fences on every try ("Fences"), when either needs it: a doorbell bit
 * publish() found set, or a drained ring whose sender may wait on the head
 * just stored. Look again at those bits, and at the want_space flag of
 * every ring we drained.
 */
static void settle(struct pc__shard_worker *sw)
{
        uint64_t any = 0, fence = 0;

        for (unsigned i = 0; i < sw->db_words; i++) {
                any |= sw->drained[i];
                fence |= sw->recheck[i] | sw->fence_due[i];
        }
        if ((any | fence) == 0)
                return;
        if (fence) {
                atomic_thread_fence(memory_order_seq_cst);
                /* What this fence covers: every drained ring's head. */
                for (unsigned i = 0; i < sw->db_words; i++) {
                        uint64_t bits = sw->drained[i];

                        sw->fence_due[i] = 0;
                        for (; bits; bits &= bits - 1) {
                                unsigned idx = i * 64 + (unsigned)__builtin_ctzll(bits);

                                sw->fenced_head[idx] = atomic_load_explicit(
                                        &in_ring(sw->sh, sw->id, idx)->head,
                                        memory_order_relaxed);
                        }
                }
        }
        for (unsigned i = 0; i < sw->db_words; i++) {
                uint64_t bits = sw->recheck[i];

                sw->recheck[i] = 0;
                while (bits) {
                        unsigned idx = i * 64 + (unsigned)__builtin_ctzll(bits);
                        unsigned bit = 2 * sw->id + idx % 2;
                        _Atomic uint64_t *db = &sw->sh->in[idx / 2]->doorbell[bit / 64];

                        bits &= bits - 1;
                        if (!(atomic_load_explicit(db, memory_order_relaxed) &
                              (1ull << (bit % 64))))
                                pc__mbox_ring_bell(sw, idx);
                }
                bits = sw->drained[i];
                sw->drained[i] = 0;
                while (bits) {
                        unsigned idx = i * 64 + (unsigned)__builtin_ctzll(bits);
                        struct pc__ring *r = in_ring(sw->sh, sw->id, idx);

                        bits &= bits - 1;
                        if (atomic_load_explicit(&r->want_space, memory_order_relaxed) &&
                            atomic_exchange_explicit(&r->want_space, 0, memory_order_seq_cst) &&
                            idx / 2 != sw->id)
                                pc__wake(sw->sh->rt->workers[idx / 2]);
                }
        }
}

static unsigned mbox_poll(void *arg)
{
        struct pc__shard_worker *sw = arg;
        unsigned n = 0;

        pc__shard_bump(&sw->c.polls, 1);
        if (atomic_load_explicit(&sw->in->completions, memory_order_relaxed))
                n += pc__blocking_complete(sw);
        n += drain_all(sw);
        /* Last, so what the messages above sent goes out in this iteration. */
        n += pc__mbox_flush_all(sw);
        settle(sw);
        if (sw->eager) /* a near pair */
                pc__near_prefetch(sw);
        if (n == 0)
                pc__shard_bump(&sw->c.idle_polls, 1);
        return n;
}

/*
 * The worker stored its sleeping flag (seq_cst) before this runs; the
 * seq_cst operations here pair with the producers' (see "Fences"). Let go
 * of every watched ring first, so that a sender publishing from now on
 * rings the doorbell and wakes us. Refuse sleep while a ring has work, a
 * blocking job finished, something is unpublished or not rechecked, or
 * overflow could move now (want_space already taken by the receiver, or
 * space seen).
 */
static bool mbox_prepare_sleep(void *arg)
{
        struct pc__shard_worker *sw = arg;
        uint32_t cap = sw->mask + 1;
        bool empty = true;

        for (unsigned i = 0; i < sw->db_words; i++) {
                uint64_t bits = atomic_load_explicit(&sw->in->doorbell[i], memory_order_relaxed);

                for (; bits; bits &= bits - 1)
                        empty &= let_go(sw, i * 64 + (unsigned)__builtin_ctzll(bits));
        }
        if (!empty)
                return false;
        for (unsigned i = 0; i < sw->db_words; i++) {
                if (sw->carry[i] || sw->recheck[i] ||
                    atomic_load_explicit(&sw->in->doorbell[i], memory_order_seq_cst))
                        return false;
        }
        if (atomic_load_explicit(&sw->in->completions, memory_order_seq_cst))
                return false;
        for (unsigned i = 0; i < sw->db_words; i++) {
                uint64_t bits = sw->dirty[i];
                while (bits) {
                        unsigned b = (unsigned)__builtin_ctzll(bits);
                        struct pc__mbox_out *o = &sw->out[i * 64 + b];

                        bits &= bits - 1;
                        if (pending(o))
                                return false;
                        if (o->ovf_head == NULL)
                                continue;
                        if (!atomic_load_explicit(&o->ring->want_space, memory_order_seq_cst))
                                return false;
                        if (o->tail - atomic_load_explicit(&o->ring->head,
                                                           memory_order_seq_cst) < cap)
                                return false;
                }
        }
        return true;
}

const struct pc_poller_ops pc__mbox_ops = {
        .name = "mailbox",
        .poll = mbox_poll,
        .prepare_sleep = mbox_prepare_sleep,
};
