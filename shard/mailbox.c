/* SPDX-License-Identifier: MIT */
/*
 * Mailboxes: the N x N matrix of SPSC rings, pc_submit() and pc_call(),
 * and the per-worker poller that drains and flushes them.
 *
 * Sending. A message is written by value into the sender's next free slot:
 * 16 bytes in a request ring (struct pc__req: a submit's fn and arg, or a
 * mark and the address of a call's record, a task node of the caller's
 * that comes back with the reply), 32 in a reply ring (struct pc__msg);
 * the ring's tail is published once per reactor iteration (the poller's
 * flush), after every sw->batch messages (PC_MBOX_BATCH, 64, or a quarter
 * of a smaller ring), and when the ring fills.
 * Between those the fast path is one comparison, the tail against a stop
 * (restop()) set where the next thing other than a slot write is due: a
 * batch's publication, the dirty bit after one, the one free slot it
 * keeps, overflow, and every PC_MBOX_CLAIM request slots the claim of the
 * next run's lines for writing (PREFETCHW, claim_lines()), so the
 * transfers of the lines the receiver read a lap ago overlap instead of
 * stalling the sender's stores one after another.
 * Credits are the free slots the sender knows of, cap - (tail - head_cache);
 * only when they run out does it read the receiver's head again. With no
 * credit left, messages wait in the sender's overflow list for that ring,
 * in order (once the list is non-empty every new message joins it), and
 * the flush moves them into the ring as credits come back.
 *
 * Doorbell. A bit per inbound ring in the receiver's doorbell says "look
 * at this ring". Publishing stores the tail (release), then reads the bit:
 * set means the receiver is watching the ring, and nothing more is written
 * to the shared line; clear means the sender sets it (a seq_cst RMW) and
 * wakes the receiver if it was the word's first bit (if other bits were
 * set, whoever set the first one did the wake-up, and the receiver cannot
 * sleep while any bit is set). The receiver keeps a busy ring's bit set and
 * polls its tail every iteration; it clears the bit only when the ring has
 * been empty for PC_MBOX_COLD_POLLS polls in a row, or before it sleeps. So
 * a stream of messages costs the sender a release store and a load of a
 * line that does not move, and an idle poll of a receiver whose rings are
 * quiet reads (2N + 63) / 64 words and inspects no ring.
 *
 * Fences. Every handshake below is the Dekker pattern, so in the single
 * total order S of seq_cst operations at least one side sees the other:
 *   - a sender that found the bit set did not fence between its tail store
 *     and that load, so the receiver may be clearing the bit at that very
 *     moment without seeing the tail. The sender remembers the ring
 *     (recheck) and, at the end of its poll (settle()), issues a seq_cst
 *     fence and reads the bit again; clear means it sets it as above.
 *     Receiver letting a ring go: clear the bit (seq_cst RMW), then load
 *     the tail (seq_cst); a non-empty ring is drained. If the sender's
 *     second load still sees the bit, the clear follows its fence in S, so
 *     the receiver's tail load sees the tail stored before that fence; if
 *     it sees the bit clear, it sets it again. A publication waits at most
 *     until the end of the sender's iteration, and the sender does not
 *     sleep with a recheck outstanding.
 *   - sender setting a bit: RMW doorbell; load the receiver's sleeping flag
 *     (pc__wake). Receiver going to sleep: store sleeping (park()); clear
 *     every bit and check those rings, then load the doorbell
 *     (prepare_sleep()). Either the receiver sees the bit or the work and
 *     stays up, or the sender sees it asleep and writes its eventfd.
 *   - a sender out of credits: store want_space; load head (both
 *     seq_cst); it waits only if that head leaves the ring full (tail -
 *     head == cap). Receiver: store head (release) after a drain, and at
 *     the end of the poll load want_space (on the head's line, a hit) and
 *     if set wake the sender. The fence before that load is paid only
 *     after a drain whose loaded tail is at least cap - 1 past the head
 *     the ring had at the receiver's last fence (fenced_head): a sender
 *     whose want_space store follows that fence in S reads a head no
 *     older than fenced_head, and waits only on a tail cap past it, which
 *     the receiver drains up to (the ring is not empty) and so fences
 *     for; one whose store precedes the fence is seen by the load after
 *     it. A stream that keeps the ring less than full thus fences about
 *     once a ring's length, not once a poll. The sender's prepare_sleep()
 *     then reads want_space again after its sleeping store: still set
 *     means the receiver's exchange is later and will see it asleep. So a
 *     sender with overflow sleeps instead of spinning, and is woken as
 *     soon as space appears.
 *
 * A poll thus costs at most one fence, and only when it moved something
 * (and, for space, only once a ring's length); the stores that make
 * messages and space visible are plain releases, so the line transfers
 * they cause overlap instead of stalling one another.
 *
 * Receiving. Messages run inside the poller, in place in the ring, up to
 * PC_MBOX_DRAIN_MAX per ring per poll (a ring left non-empty is remembered
 * in a local carry bitmap), then the head is published once per batch.
 *
 * Call slots. A pc_call() between two workers takes the latency path when
 * nothing else of the pair is in the way: PC_CSLOTS one-line slots per
 * (caller, callee) pair in the callee's block. The caller writes fn and
 * arg, then seq (release: seq_posted(), 2c + 1 for its c-th slot call,
 * beside its view of the pair's placement) in the call's slot, and rings
 * or rechecks the pair's request bit as a
 * publication does; the callee, draining that bit, runs the call and
 * answers in the same line (result, then seq_answered(), 2c + 2), then rings or
 * rechecks the caller's reply bit; the caller, draining that one, runs
 * done. With both awake that is one line transfer each way, against a
 * slot, a tail and a doorbell line each way on the rings, and nothing
 * waits for the end of an iteration. Order is kept by three rules:
 *   - a call takes a slot only while the request ring is empty (what the
 *     caller sent there has run), no call of the pair is on the ring, and
 *     a slot is free; otherwise it goes on the ring, as before;
 *   - draining a request ring, the callee loads its tail (acquire), then
 *     runs posted slot calls, then the ring's messages up to that tail: a
 *     message sent after a slot call is seen only with the call;
 *   - draining a reply ring, the caller loads its tail, then runs answered
 *     slot calls' done, then the ring's replies, so done runs in call order.
 * A slot call counts as a message each way for the drain (sent when
 * posted or answered, received when taken), and let_go() and the sleep
 * check look at the slots as at the rings, so the fences above hold.
 * Which slot a call takes: call c goes in slot (c + off) % PC_CSLOTS,
 * the one after call c - 1's; but when the pair runs near (below), call
 * c - 1 is answered and done, and it said near, call c takes that same
 * slot again, and off moves down by one (so it moves only with no call
 * out, and every call out is in its slot by the one offset). Each posted
 * seq carries what the caller knows of the placement (near, far, or not
 * timed); the callee keeps that of the last call it served and its own
 * copy of off, and looks for call c in its
 * slot, and, only while the pair is near, first in call c - 1's (found
 * there: off moves down for it too). A caller turning near says so in a
 * call in its own slot before it reuses one, so a far pair's callee loads
 * one line a poll, and a far pair's ends keep their offsets unchanged.
 *
 * Near and far. Where the two workers share a cache (SMT siblings, or
 * cores of one cache), a line crosses in ~30-70 ns, and what is
 * around the transfer counts: on a 2-vCPU guest whose line round trip
 * was 55-62 ns, 4 rotating slots answered in 112-119 ns, and one reused
 * slot, a prefetch of the awaited line at the end of each poll and no
 * clock read on the first idle pass after work (core/worker.c,
 * poll_eager) in 96-100 ns (the clock read alone ~11 ns of it). Where
 * they do not, it depends on the machine: on a Zen 5 guest at ~410 ns
 * (a socket away) those were a loss, the reused line written while the
 * other side still reads it and an eager look taking a line back from
 * its writer (~350 ns rotating, ~430 with all three); on a Zen 4 guest
 * whose two vCPUs sat ~300 ns apart they were a gain (316-344 ns near
 * against 375-413 rotating, beside a 272-287 ns ping-pong).
 * So the caller times one slot call in PC_CALL_TIME_EVERY (posted with
 * none out, the round trip to its done) and chooses (pc__call_choose()):
 *   - an average under pc_shard_opts.call_near_ns: the workers share a
 *     cache; near;
 *   - above PC_CALL_SLOW times that: the callee is busy or parked, not
 *     the line slow; far, as before this existed;
 *   - between the two: the way it runs now, with a trial of the other
 *     one (PC_CALL_TRIAL timed calls) after every explore_gap timed
 *     calls; the trial's way stays if its average beats the kept one by a
 *     sixteenth, and otherwise the gap doubles, from PC_CALL_EXPLORE_MIN
 *     up to PC_CALL_EXPLORE_MAX, so a machine where one way is plainly
 *     better spends under 2 % of its timed calls trying the other, and
 *     one that changes (a host that moves a vCPU) is followed within the
 *     longest gap.
 * Near, the caller reuses the slot, prefetches the awaited line, and
 * makes its worker poll eagerly; a callee does the same for the pair's
 * next call while the last call it served said near.
 * Far, the other way round, a look costs its writer: an idle worker's
 * spin looks at the awaited line every ~15 ns, and each look can take the
 * line from the other side while its store waits to complete. On that
 * guest at ~395 ns, the round trip was 330-350 ns in some processes and
 * 400-430 in others (the two loops falling into step or not, for a whole
 * run); with one pause (~18 ns there) per idle pass on both workers,
 * 300-324 in every process (312-330 before near pairs existed). So a
 * worker with pairs timed far, and no near one, paces its idle spin
 * (core/worker.c, poll_pace), as the suite's ping-pong peer paces its
 * spin there; an untimed pair changes nothing.
 *
 * Quiescence. A message counts as sent (pc__count_sent) when its ring
 * slot is published or when it joins the overflow list, and as received
 * (pc__count_recv) when the receiver takes it, so the runtime's
 * four-counter drain cannot end while a message is in a ring or in
 * overflow. An unpublished slot is not counted yet, but its sender is in
 * the middle of an iteration (not quiet), and the poller publishes it
 * before that iteration can end idle. The poller also refuses sleep while
 * anything it holds is unpublished or could be moved.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "shard_pvt.h"

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

/* The entry a request ring carries for a call: this mark as fn, the call's
 * record as arg. Never run: drain() compares against it. */
static void ring_call_mark(void *record)
{
        pc_log(PC_LOG_ERROR, "mailbox: a call record %p was run as a submit", record);
        abort();
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

/* ---- sending ------------------------------------------------------------- */

/* Set the bit of outbound ring @idx in the receiver's doorbell, and wake
 * the receiver if it was the word's first bit. */
static void ring_bell(struct pc__shard_worker *sw, unsigned idx)
{
        unsigned dst = idx / 2, bit = 2 * sw->id + idx % 2;
        _Atomic uint64_t *db = &sw->sh->in[dst]->doorbell[bit / 64];

        if (atomic_fetch_or_explicit(db, 1ull << (bit % 64), memory_order_seq_cst) == 0 &&
            dst != sw->id)
                pc__wake(sw->sh->rt->workers[dst]);
}

/* After a publication to outbound ring @idx (a tail, or a call slot):
 * a receiver watching the ring costs a load, rechecked in settle();
 * otherwise ring its doorbell. */
static inline void bell_or_recheck(struct pc__shard_worker *sw, unsigned idx,
                                   _Atomic uint64_t *db, unsigned bit)
{
        if (atomic_load_explicit(db, memory_order_relaxed) & (1ull << (bit % 64)))
                set_bit(sw->recheck, idx);
        else
                ring_bell(sw, idx);
}

static void notify(struct pc__shard_worker *sw, unsigned idx)
{
        unsigned bit = 2 * sw->id + idx % 2;

        bell_or_recheck(sw, idx, &sw->sh->in[idx / 2]->doorbell[bit / 64], bit);
}

/* Make what the sender wrote to outbound ring @idx visible. A receiver
 * watching the ring costs nothing more than a load; otherwise ring its
 * doorbell (see "Doorbell" and "Fences" above). */
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
                req_slots(o->ring)[i] = (struct pc__req){ring_call_mark, rec};
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
static __attribute__((noinline)) int send_edge(struct pc__shard_worker *sw, unsigned idx,
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
static __attribute__((noinline)) int send_call(struct pc__shard_worker *sw, unsigned dst,
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
                return send_call(sw, dst, fn, arg, done, done_arg, spare);

        uint32_t tail = o->tail;

        if (unlikely((int32_t)(o->stop - tail) <= 0))
                return send_edge(sw, idx, fn, arg, node, done_arg, spare);
        /* The tail stays in a register: the slot's stores cannot be taken
         * to alias it. */
        slot_write(sw, idx, o, tail, fn, arg, node, done_arg);
        o->tail = tail + 1;
        return 0;
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

static unsigned flush_all(struct pc__shard_worker *sw)
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

/* ---- receiving ----------------------------------------------------------- */

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

/* Call slot @k of the pair (@caller -> @callee), in the callee's block. */
static inline struct pc__cslot *cslot(const struct pc__shard *sh, unsigned callee,
                                      unsigned caller, unsigned k)
{
        return (struct pc__cslot *)((char *)sh->in[callee] + sh->slots_off) +
               (size_t)caller * PC_CSLOTS + k;
}

/* What a caller knows of a pair's placement, carried in each posted seq
 * (see "Near and far"): not timed yet (or never timed), near, far. */
enum { PAIR_UNKNOWN = 0, PAIR_NEAR = 1, PAIR_FAR = 2 };

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
        uint64_t near, far;

        moved |= pair_mark(sw->far, &sw->c.far_pairs, idx, state == PAIR_FAR);
        if (likely(!moved))
                return;
        near = atomic_load_explicit(&sw->c.near_pairs, memory_order_relaxed);
        far = atomic_load_explicit(&sw->c.far_pairs, memory_order_relaxed);
        sw->w->poll_eager = near != 0;
        sw->w->poll_pace = far != 0 && near == 0;
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
static unsigned slot_serve(struct pc__shard_worker *sw, unsigned caller)
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
static unsigned slot_reap(struct pc__shard_worker *sw, unsigned callee)
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
static bool slot_ready(struct pc__shard_worker *sw, unsigned idx)
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
static void near_prefetch(const struct pc__shard_worker *sw)
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
                ns = idx & 1 ? slot_reap(sw, src) : slot_serve(sw, src);
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
                        if (likely(e->fn != ring_call_mark))
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
            !slot_ready(sw, idx))
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
                                ring_bell(sw, idx);
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

/* ---- the poller ---------------------------------------------------------- */

static unsigned mbox_poll(void *arg)
{
        struct pc__shard_worker *sw = arg;
        unsigned n = 0;

        pc__shard_bump(&sw->c.polls, 1);
        if (atomic_load_explicit(&sw->in->completions, memory_order_relaxed))
                n += pc__blocking_complete(sw);
        n += drain_all(sw);
        /* Last, so what the messages above sent goes out in this iteration. */
        n += flush_all(sw);
        settle(sw);
        if (sw->w->poll_eager) /* a near pair */
                near_prefetch(sw);
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

static const struct pc_poller_ops mbox_ops = {
        .name = "mailbox",
        .poll = mbox_poll,
        .prepare_sleep = mbox_prepare_sleep,
};

/* ---- lifecycle ----------------------------------------------------------- */

/* Module start hook: every worker registers its poller on its own thread,
 * once, before it runs anything. */
static void shard_worker_start(struct pc_worker *w, void *arg)
{
        struct pc__shard_worker *sw = w->shard;
        int rc;

        (void)arg;
        if (sw == NULL || sw->poller != NULL)
                return;
        rc = pc_poller_register(&mbox_ops, sw, &sw->poller);
        if (rc)
                pc_log(PC_LOG_ERROR, "worker %u: cannot register the mailbox poller: %s",
                       w->id, pc_strerror(rc));
}

static void shard_free(struct pc__shard *sh)
{
        for (unsigned i = 0; i < sh->n; i++) {
                if (sh->sw[i]) {
                        free(sh->sw[i]->empty_polls);
                        free(sh->sw[i]->fenced_head);
                        free(sh->sw[i]->cout);
                        free(sh->sw[i]->slot_next);
                        free(sh->sw[i]->slot_off);
                        free(sh->sw[i]->out);
                        free(sh->sw[i]);
                }
                if (sh->in[i])
                        pc_numa_free(sh->in[i], sh->in_bytes);
                if (sh->rt->workers[i])
                        sh->rt->workers[i]->shard = NULL;
        }
        free(sh);
}

static void shard_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg);

/* Module destroy hook: join the lane, free the matrix. Overflow nodes are
 * task objects from the workers' chunks, which the core frees. */
static void shard_destroy(struct pc_runtime *rt, void *arg)
{
        struct pc__shard *sh = arg;

        (void)rt;
        pc__blocking_stop(sh);
        shard_free(sh);
}

void pc_shard_opts_init(struct pc_shard_opts *o)
{
        if (o == NULL)
                return;
        o->ring_size = PC_SHARD_RING_DEFAULT;
        o->blocking_threads = PC_SHARD_BLOCKING_DEFAULT;
        o->call_near_ns = PC_CALL_NEAR_NS;
}

/* PREFETCHW (CPUID 0x80000001, ECX bit 8): AMD's since the K6, Intel's
 * since Broadwell; where the CPU lacks it, senders claim no lines. */
static bool cpu_has_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;

        return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
#else
        return false;
#endif
}

/* Zeroed memory for @n items of @size, in whole cache lines of its own:
 * each worker's arrays are written by it alone, and a line shared with
 * another worker's would bounce between them. */
static void *line_calloc(size_t n, size_t size)
{
        size_t bytes = (n * size + PC_CACHE_LINE - 1) & ~(size_t)(PC_CACHE_LINE - 1);
        void *p;

        if (size && n > SIZE_MAX / 2 / size)
                return NULL;
        p = aligned_alloc(PC_CACHE_LINE, bytes ? bytes : PC_CACHE_LINE);
        if (p)
                memset(p, 0, bytes);
        return p;
}

static int alloc_worker(struct pc__shard *sh, unsigned id)
{
        struct pc__shard_worker *sw;
        void *p;

        /* One block per receiver, on the receiver's node. Its pages are
         * zero (a valid empty ring) and, being an untouched mapping, cost
         * memory only once a pair first talks. */
        p = pc_numa_alloc(sh->in_bytes, pc_runtime_worker_node(sh->rt, id));
        if (p == NULL)
                return -ENOMEM;
        sh->in[id] = p;
        sw = aligned_alloc(PC_CACHE_LINE, sizeof(*sw));
        if (sw == NULL)
                return -ENOMEM;
        memset(sw, 0, sizeof(*sw));
        sh->sw[id] = sw;
        sw->sh = sh;
        sw->w = sh->rt->workers[id];
        sw->id = id;
        sw->n = sh->n;
        sw->db_words = (2 * sh->n + 63) / 64;
        sw->mask = sh->ring_size - 1;
        sw->batch = sh->ring_size / 4 < PC_MBOX_BATCH ? sh->ring_size / 4 : PC_MBOX_BATCH;
        if (sw->batch == 0)
                sw->batch = 1;
        if (sh->ring_size >= 4 * PC_MBOX_CLAIM && cpu_has_prefetchw())
                sw->claim = PC_MBOX_CLAIM;
        sw->in = sh->in[id];
        sw->out = line_calloc(2 * (size_t)sh->n, sizeof(*sw->out));
        sw->empty_polls = line_calloc(2 * (size_t)sh->n, sizeof(*sw->empty_polls));
        sw->fenced_head = line_calloc(2 * (size_t)sh->n, sizeof(*sw->fenced_head));
        sw->cout = line_calloc(sh->n, sizeof(*sw->cout));
        sw->slot_next = line_calloc(sh->n, sizeof(*sw->slot_next));
        sw->slot_off = line_calloc(sh->n, sizeof(*sw->slot_off));
        if (sw->out == NULL || sw->empty_polls == NULL || sw->fenced_head == NULL ||
            sw->cout == NULL || sw->slot_next == NULL || sw->slot_off == NULL)
                return -ENOMEM;
        sw->near_ns = sh->near_ns;
        sw->time_calls = sh->near_ns != 0 && sh->near_ns != UINT32_MAX;
        for (unsigned peer = 0; peer < sh->n; peer++) {
                pc__call_explore_reset(&sw->cout[peer]);
                if (sh->near_ns == UINT32_MAX && peer != id) {
                        sw->cout[peer].near = true;
                        pair_set(sw, 2 * peer + MBOX_REP, PAIR_NEAR);
                }
        }
        return 0;
}

int pc_shard_init(struct pc_runtime *rt, const struct pc_shard_opts *opts)
{
        struct pc_shard_opts o;
        struct pc__shard *sh;
        int rc = 0;

        if (pc__self != NULL)
                return -EPERM;
        if (rt == NULL)
                return -EINVAL;
        pc_shard_opts_init(&o);
        if (opts)
                o = *opts;
        if (o.ring_size < 2 || o.ring_size > PC_SHARD_RING_MAX ||
            (o.ring_size & (o.ring_size - 1)) || o.blocking_threads > PC_SHARD_BLOCKING_MAX)
                return -EINVAL;
        if (atomic_load(&rt->running))
                return -EBUSY;
        if (rt->workers[0]->shard != NULL)
                return -EALREADY;

        sh = calloc(1, sizeof(*sh));
        if (sh == NULL)
                return -ENOMEM;
        sh->rt = rt;
        sh->n = rt->nworkers;
        sh->ring_size = o.ring_size;
        sh->near_ns = o.call_near_ns;
        /* Each ring starts on a line: a request ring of 2 entries is half
         * a line of slots, padded. */
        sh->req_stride = sizeof(struct pc__ring) +
                         ((o.ring_size * sizeof(struct pc__req) + PC_CACHE_LINE - 1) &
                          ~(size_t)(PC_CACHE_LINE - 1));
        sh->pair_stride = sh->req_stride + sizeof(struct pc__ring) +
                          o.ring_size * sizeof(struct pc__msg);
        sh->slots_off = sizeof(struct pc__mbox_in) + (size_t)sh->n * sh->pair_stride;
        sh->in_bytes = sh->slots_off + (size_t)sh->n * PC_CSLOTS * sizeof(struct pc__cslot);
        for (unsigned i = 0; i < sh->n && rc == 0; i++)
                rc = alloc_worker(sh, i);
        /* Wire every sender's outbound view to the receiver's ring. */
        for (unsigned s = 0; s < sh->n && rc == 0; s++)
                for (unsigned idx = 0; idx < 2 * sh->n; idx++)
                        sh->sw[s]->out[idx].ring = in_ring(sh, idx / 2, 2 * s + idx % 2);
        if (rc == 0)
                rc = pc__blocking_start(sh, o.blocking_threads);
        if (rc) {
                shard_free(sh);
                return rc;
        }
        for (unsigned i = 0; i < sh->n; i++)
                rt->workers[i]->shard = sh->sw[i];
        sh->mod.arg = sh;
        sh->mod.worker_start = shard_worker_start;
        sh->mod.destroy = shard_destroy;
        sh->mod.metrics = shard_metrics;
        pc__module_add(rt, &sh->mod);
        return 0;
}

/* ---- call slots (see "Call slots") ---------------------------------------- */

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
            sw->time_calls) {
                co->timed = c + 1;
                co->timed_at = pc__now();
        }
        pc__count_sent(sw->w, 1);
        pc__shard_bump(&sw->c.sent, 1);
        pc__shard_bump(&sw->c.slot_calls, 1);
        notify(sw, 2 * dst + MBOX_REQ);
        return 0;
}

/* ---- public sends -------------------------------------------------------- */

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

int pc_shard_stats(const struct pc_runtime *rt, unsigned w, struct pc_shard_stats *out)
{
        const struct pc__shard_counters *c;

        if (rt == NULL || out == NULL || w >= rt->nworkers)
                return -EINVAL;
        if (rt->workers[w]->shard == NULL)
                return -ENODEV;
        c = &rt->workers[w]->shard->c;
#define LD(x) atomic_load_explicit(&c->x, memory_order_relaxed)
        *out = (struct pc_shard_stats){
                .sent = LD(sent),
                .received = LD(received),
                .overflowed = LD(overflowed),
                .flushes = LD(flushes),
                .polls = LD(polls),
                .idle_polls = LD(idle_polls),
                .rings_inspected = LD(rings_inspected),
                .space_waits = LD(space_waits),
                .blocking_done = LD(blocking_done),
                .slot_calls = LD(slot_calls),
                .slot_calls_near = LD(slot_calls_near),
                .near_pairs = LD(near_pairs),
                .far_pairs = LD(far_pairs),
        };
#undef LD
        return 0;
}

/* Module metrics hook: the mailbox counters of every worker. */
static void shard_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg)
{
        static const struct {
                const char *name, *help;
                size_t off;
        } fam[] = {
#define F(n, f, h) {"percore_mailbox_" n, h, offsetof(struct pc_shard_stats, f)}
                F("sent_total", sent,
                  "Messages the worker published to rings or queued in its overflow."),
                F("received_total", received, "Messages the worker took from its rings."),
                F("overflowed_total", overflowed, "Messages that waited in overflow."),
                F("space_waits_total", space_waits,
                  "Times the worker asked a receiver for space."),
                F("blocking_done_total", blocking_done,
                  "Blocking-lane completions it ran."),
#undef F
        };
        struct pc_shard_stats st[PC_MAX_WORKERS];

        (void)arg;
        for (unsigned w = 0; w < rt->nworkers; w++)
                if (pc_shard_stats(rt, w, &st[w]))
                        return;
        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, "counter", fam[f].help);
                for (unsigned w = 0; w < rt->nworkers; w++)
                        pc__prom_worker_u64(p, fam[f].name, w,
                                            *(const uint64_t *)((const char *)&st[w] +
                                                                fam[f].off));
        }
}
