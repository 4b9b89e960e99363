/* SPDX-License-Identifier: MIT */
/*
 * Call slots: pc_call()'s latency path. A call between two workers takes
 * one of PC_CSLOTS one-line slots of the pair when nothing else of the
 * pair is in the way, and is answered in the same line: one line transfer
 * each way. A pair runs near (reuse the last line, look eagerly) where
 * the topology places it near (mbox_setup.c); where the topology cannot
 * say, the caller times one slot call in PC_CALL_TIME_EVERY and chooses
 * near or far (rotate, pace the idle spin). Quoted sections ("Call
 * slots", "Near and far") are docs/messaging.md's.
 */
#include <errno.h>
#include <limits.h>

#include "mbox_pvt.h"

/* Call slot @k of the pair (@caller -> @callee), in the callee's block. */
static inline struct pc__cslot *cslot(const struct pc__shard *sh, unsigned callee,
                                      unsigned caller, unsigned k)
{
        return (struct pc__cslot *)((char *)sh->in[callee] + sh->slots_off) +
               (size_t)caller * PC_CSLOTS + k;
}

static void notify(struct pc__shard_worker *sw, unsigned idx)
{
        unsigned bit = 2 * sw->id + idx % 2;

        bell_or_recheck(sw, idx, &sw->sh->in[idx / 2]->doorbell[bit / 64], bit);
}

/* Set or clear bit @idx of a pair map, counting its bits in *@count (a
 * gauge pc_shard_stats() reads); returns true when the bit changed. */
static inline bool pair_mark(uint64_t *map, _Atomic uint64_t *count, unsigned idx, bool on)
{
        uint64_t bit = 1ull << (idx % 64), *word = &map[idx / 64];

        if (likely(!(*word & bit) == !on))
                return false;
        *word ^= bit;
        pc__shard_bump(count, on ? 1 : (uint64_t)-1);
        return true;
}

/* Record the placement (PAIR_*) of the pair behind ring @idx, and tell the
 * worker how to poll: eagerly while any pair of it is near, pacing its
 * idle spin while it has far pairs and no near one (see "Near and far"). */
static inline void pair_set(struct pc__shard_worker *sw, unsigned idx, unsigned state)
{
        bool moved = pair_mark(sw->near, &sw->c.near_pairs, idx, state == PAIR_NEAR);

        moved |= pair_mark(sw->far, &sw->c.far_pairs, idx, state == PAIR_FAR);
        if (likely(!moved))
                return;
        sw->eager = atomic_load_explicit(&sw->c.near_pairs, memory_order_relaxed) != 0;
        if (sw->poller) /* else the start hook tells it */
                pc__poller_hint(sw->poller, mbox_hints(sw));
}

void pc__pair_set(struct pc__shard_worker *sw, unsigned idx, unsigned state)
{
        pair_set(sw, idx, state);
}

/* The placement a caller tells its callee in each call's seq. */
static inline unsigned pair_state(const struct pc__call_out *co)
{
        return co->near ? PAIR_NEAR : co->rtt_ns ? PAIR_FAR : PAIR_UNKNOWN;
}

/* Whether the pair behind ring @idx is near for us. */
static inline bool near_bit(const struct pc__shard_worker *sw, unsigned idx)
{
        return (sw->near[idx / 64] >> (idx % 64)) & 1;
}

/* The slot of call @c of a pair whose reuses have moved its slots by
 * @off (see "Call slots"). */
static inline unsigned slot_of(uint64_t c, uint8_t off)
{
        return (unsigned)(c + off) & (PC_CSLOTS - 1);
}

/* The slot of the caller's oldest call out to @callee: the calls out all
 * came after the last reuse, so one offset serves them all. */
static inline unsigned oldest_slot(const struct pc__call_out *co)
{
        return slot_of(co->reaped, co->off);
}

/* A slot's seq: call c posted, with what the caller knows of the pair's
 * placement (PAIR_*); answered. */
static inline uint64_t seq_posted(uint64_t c, unsigned state)
{
        return (2 * c + 1) << 2 | state;
}

static inline uint64_t seq_answered(uint64_t c)
{
        return (2 * c + 2) << 2;
}

/* Where call @c of @caller is, if posted: in its slot by the pair's
 * offset @off, or, while the pair is near for us (@near), first in call
 * c - 1's (*@reused: then the offset moves down by one); -1 when not
 * posted yet. *@told: the placement the call carries (PAIR_*). @order:
 * seq_cst for let_go()'s second look, else acquire. */
static inline int slot_find(const struct pc__shard_worker *sw, unsigned caller, uint64_t c,
                            uint8_t off, bool near, unsigned *told, bool *reused,
                            memory_order order)
{
        unsigned k;
        uint64_t v;

        if (near) {
                k = slot_of(c - 1, off);
                v = atomic_load_explicit(&cslot(sw->sh, sw->id, caller, k)->seq, order);
                if (v >> 2 == 2 * c + 1) {
                        *told = v & 3;
                        *reused = true;
                        return (int)k;
                }
        }
        k = slot_of(c, off);
        v = atomic_load_explicit(&cslot(sw->sh, sw->id, caller, k)->seq, order);
        if (v >> 2 != 2 * c + 1)
                return -1;
        *told = v & 3;
        *reused = false;
        return (int)k;
}

/* The callee: run the slot calls @caller posted, in order, answering
 * each in its line (at most PC_CSLOTS: a caller that keeps posting waits
 * for the next poll). Each call's near bit says where to look for the
 * next one (see "Near and far"). */
unsigned pc__slot_serve(struct pc__shard_worker *sw, unsigned caller)
{
        unsigned idx = 2 * caller + MBOX_REQ, n = 0;
        uint64_t c = sw->slot_next[caller];
        uint8_t off = sw->slot_off[caller];

        for (; n < PC_CSLOTS; n++, c++) {
                unsigned told;
                bool reused;
                int k = slot_find(sw, caller, c, off, near_bit(sw, idx), &told, &reused,
                                  memory_order_acquire);
                struct pc__cslot *s;

                if (k < 0)
                        break;
                /* The answer first: the bookkeeping below runs while its
                 * line travels. */
                s = cslot(sw->sh, sw->id, caller, (unsigned)k);
                s->result = s->fn(s->arg);
                atomic_store_explicit(&s->seq, seq_answered(c), memory_order_release);
                pair_set(sw, idx, told);
                off -= reused;
                pc__count_recv(sw->w, 1);
                pc__shard_bump(&sw->c.received, 1);
                pc__count_sent(sw->w, 1);
                pc__shard_bump(&sw->c.sent, 1);
        }
        if (n) {
                sw->slot_next[caller] = c;
                if (off != sw->slot_off[caller])
                        sw->slot_off[caller] = off;
                notify(sw, 2 * caller + MBOX_REP);
        }
        return n;
}

/* A timed slot call of pair @co came back after @ns: average it in, and
 * choose near or far (see "Near and far"). Pure: tests drive it. */
void pc__call_choose(struct pc__call_out *co, uint64_t ns, uint32_t near_ns)
{
        uint64_t lim = near_ns, slow = PC_CALL_SLOW * lim, avg;

        /* A parked or busy callee's round trip says nothing of the line:
         * clamped, it cannot hold the average up for long (nor overflow
         * it: a bound near UINT32_MAX clamps at UINT32_MAX). */
        if (ns > 2 * slow)
                ns = 2 * slow;
        if (ns > UINT32_MAX)
                ns = UINT32_MAX;
        /* A trial's average starts from its own first call. */
        avg = co->rtt_ns && co->trial != PC_CALL_TRIAL ? co->rtt_ns - co->rtt_ns / 4 + ns / 4
                                                       : ns;
        co->rtt_ns = (uint32_t)avg;
        if (co->trial) {
                if (--co->trial)
                        return;
                /* The trial's way stays if it beat the kept one by a
                 * sixteenth; otherwise back, and the next trial waits
                 * twice as long. */
                if (avg < co->kept_ns - co->kept_ns / 16) {
                        co->explore_gap = PC_CALL_EXPLORE_MIN;
                } else {
                        co->near = !co->near;
                        co->rtt_ns = co->kept_ns;
                        if (co->explore_gap < PC_CALL_EXPLORE_MAX)
                                co->explore_gap *= 2;
                }
                co->explore_in = co->explore_gap;
        } else if (avg < lim || avg > slow) {
                /* Under the bound the pair shares a cache: near. Above
                 * PC_CALL_SLOW times it the callee is busy or parked: far.
                 * Either way a return to the band between tries again
                 * soon. */
                co->near = avg < lim;
                pc__call_explore_reset(co);
        } else if (co->explore_in <= 1) {
                /* Between the two, which way is faster depends on the
                 * machine: try the other one now and then. */
                co->kept_ns = (uint32_t)avg;
                co->near = !co->near;
                co->trial = PC_CALL_TRIAL;
        } else {
                co->explore_in--;
        }
}

/* A timed slot call to @callee came back after @ns. */
static void call_timed(struct pc__shard_worker *sw, unsigned callee, uint64_t ns)
{
        struct pc__call_out *co = &sw->cout[callee];

        pc__call_choose(co, ns, sw->near_ns);
        pair_set(sw, 2 * callee + MBOX_REP, pair_state(co));
}

/* The caller: run done for the slot calls @callee answered, in order. */
unsigned pc__slot_reap(struct pc__shard_worker *sw, unsigned callee)
{
        struct pc__call_out *co = &sw->cout[callee];
        unsigned n = 0;

        while (co->reaped != co->posted && n < PC_CSLOTS) {
                uint64_t c = co->reaped;
                unsigned k = oldest_slot(co);
                struct pc__cslot *s = cslot(sw->sh, callee, sw->id, k);
                void (*done)(void *, void *);
                void *result, *done_arg;

                if (atomic_load_explicit(&s->seq, memory_order_acquire) != seq_answered(c))
                        break;
                result = s->result;
                done = co->pend[k].done;
                done_arg = co->pend[k].done_arg;
                co->reaped++; /* the slot is free again, even for done's own calls */
                if (unlikely(co->timed == c + 1)) {
                        co->timed = 0;
                        call_timed(sw, callee, pc__now() - co->timed_at);
                }
                pc__count_recv(sw->w, 1);
                pc__shard_bump(&sw->c.received, 1);
                done(result, done_arg);
                n++;
        }
        return n;
}

/* Whether the pair behind inbound ring @idx has slot work for us: a call
 * posted (a request ring) or answered (a reply ring). seq_cst: let_go()'s
 * second look. */
bool pc__slot_ready(struct pc__shard_worker *sw, unsigned idx)
{
        unsigned peer = idx / 2;
        const struct pc__call_out *co;
        uint64_t c;

        if (peer == sw->id)
                return false;
        if (idx % 2 == MBOX_REQ) {
                unsigned told;
                bool reused;

                return slot_find(sw, peer, sw->slot_next[peer], sw->slot_off[peer],
                                 near_bit(sw, idx), &told, &reused,
                                 memory_order_seq_cst) >= 0;
        }
        co = &sw->cout[peer];
        c = co->reaped;
        return c != co->posted &&
               atomic_load_explicit(&cslot(sw->sh, peer, sw->id, oldest_slot(co))->seq,
                                    memory_order_seq_cst) == seq_answered(c);
}

/* At the end of a poll, start the line transfers a near pair waits for:
 * the awaited answer of a call out, the slot a caller's next call takes. */
void pc__near_prefetch(const struct pc__shard_worker *sw)
{
        for (unsigned i = 0; i < sw->db_words; i++)
                for (uint64_t bits = sw->near[i]; bits; bits &= bits - 1) {
                        unsigned idx = i * 64 + (unsigned)__builtin_ctzll(bits);
                        unsigned peer = idx / 2;
                        const struct pc__call_out *co = &sw->cout[peer];

                        if (idx % 2 == MBOX_REQ)
                                __builtin_prefetch(cslot(
                                        sw->sh, sw->id, peer,
                                        slot_of(sw->slot_next[peer] - 1, sw->slot_off[peer])));
                        else if (co->reaped != co->posted)
                                __builtin_prefetch(cslot(sw->sh, peer, sw->id, oldest_slot(co)));
                }
}

/* Whether a call to @dst may take a slot: one is free, no call of the pair
 * is on the ring, and what we sent on the request ring has all run (the
 * receiver's head is read only when the ring was used since we last saw
 * it empty). */
static inline bool slot_free(struct pc__shard_worker *sw, unsigned dst)
{
        const struct pc__call_out *co = &sw->cout[dst];
        struct pc__mbox_out *o = &sw->out[2 * dst + MBOX_REQ];

        if (co->ring_calls || co->posted - co->reaped >= PC_CSLOTS || o->ovf_head ||
            o->tail != o->pub)
                return false;
        if (o->head_cache != o->tail)
                o->head_cache = atomic_load_explicit(&o->ring->head, memory_order_acquire);
        return o->head_cache == o->tail;
}

/* Post a call in the next slot, or near with none out in the last one
 * again (see "Call slots", "Near and far"); time one in
 * PC_CALL_TIME_EVERY of those posted with none out. */
static int slot_post(struct pc__shard_worker *sw, unsigned dst, void *(*fn)(void *), void *arg,
                     void (*done)(void *, void *), void *done_arg)
{
        struct pc__call_out *co = &sw->cout[dst];
        uint64_t c = co->posted++;
        bool alone = c == co->reaped;
        struct pc__cslot *s;
        unsigned k;

        /* The callee looks in the last call's slot only once it has seen
         * a call that said near: the first near call takes its own. */
        if (unlikely(co->near)) {
                if (alone && co->told) {
                        co->off--;
                        pc__shard_bump(&sw->c.slot_calls_near, 1);
                }
                co->told = true;
        } else if (unlikely(co->told)) {
                co->told = false;
        }
        k = slot_of(c, co->off);
        s = cslot(sw->sh, dst, sw->id, k);
        co->pend[k].done = done;
        co->pend[k].done_arg = done_arg;
        s->fn = fn;
        s->arg = arg;
        atomic_store_explicit(&s->seq, seq_posted(c, pair_state(co)), memory_order_release);
        if (unlikely((c & (PC_CALL_TIME_EVERY - 1)) == 0) && alone && co->timed == 0 &&
            sw->time_calls && !co->placed) {
                co->timed = c + 1;
                co->timed_at = pc__now();
        }
        pc__count_sent(sw->w, 1);
        pc__shard_bump(&sw->c.sent, 1);
        pc__shard_bump(&sw->c.slot_calls, 1);
        notify(sw, 2 * dst + MBOX_REQ);
        return 0;
}

int pc_call(unsigned dst, void *(*fn)(void *arg), void *arg,
            void (*done)(void *result, void *done_arg), void *done_arg)
{
        struct pc__shard_worker *sw;
        int rc;

        sw = pc__shard_self(&rc);
        if (unlikely(sw == NULL))
                return rc;
        if (unlikely(fn == NULL || done == NULL || dst >= sw->n))
                return -EINVAL;
        if (dst != sw->id && slot_free(sw, dst))
                return slot_post(sw, dst, fn, arg, done, done_arg);
        return mbox_send(sw, dst, MBOX_REQ, (union pc__msg_fn){.call = fn}, arg, done, NULL,
                         done_arg, NULL);
}
