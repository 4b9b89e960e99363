/* SPDX-License-Identifier: MIT */
/*
 * Elastic mode's work stealing. An idle worker (at most N/2 search at
 * once) walks its steal order tier by tier; inside a tier it starts at a
 * random victim and goes round-robin, skipping workers that do not
 * advertise a surplus. It takes the oldest half of the victim's stealable
 * queue, at most PERCORE_STEAL_BATCH tasks, in one CAS. A remote tier is
 * used only when the victim's backlog reaches PERCORE_REMOTE_STEAL_MIN.
 *
 * None of this runs in thread-per-core mode. pc_runtime_set_mode() switches
 * between the two while the runtime runs; each worker applies the switch
 * in its loop, before it would steal again.
 */
#include <errno.h>
#include <string.h>

#include "pc_core_pvt.h"

/* PERCORE_STEAL_TIERS=flat, and the order before numa/ knows better: one
 * tier holding every other worker. */
void pc__steal_order_flat(struct pc_runtime *rt, unsigned w, struct pc_steal_order *o)
{
        unsigned n = 0;

        memset(o, 0, sizeof(*o));
        for (unsigned v = 0; v < rt->nworkers; v++)
                if (v != w)
                        o->victims[n++] = (uint16_t)v;
        o->ntiers = n ? 1 : 0;
        o->nvictims = n;
        o->tier_start[0] = 0;
        o->tier_start[1] = n;
        o->tier_kind[0] = PC_TIER_CACHE;
}

/* Set our bit, then wake a sleeper that could take the work. The seq_cst
 * RMW pairs with a parking worker's seq_cst read of the bitmap after it
 * raised its sleeping flag: either it sees our bit and stays up, or we see
 * it asleep and wake it. */
void pc__advertise(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;

        if (atomic_load_explicit(&w->sq.drained, memory_order_relaxed))
                atomic_store_explicit(&w->sq.drained, false, memory_order_relaxed);
        atomic_store_explicit(&w->sq.adv, true, memory_order_seq_cst);
        atomic_fetch_or_explicit(&rt->stealable[w->id / 64], 1ull << (w->id % 64),
                                 memory_order_seq_cst);
        pc__wake_thief(w, w->remote_min <= PC_ADVERTISE_MIN);
}

/*
 * Every PC_WAKE_STEP pushes while we advertise: if anyone sleeps, measure
 * the backlog with a fresh head (seen_head otherwise lags, refreshed only
 * when the ring looks full) and wake the nearest sleeper, one on another
 * node once the backlog is worth a remote steal. Not once per backlog but
 * all along: a thief woken while the backlog was short, or one that took a
 * small backlog elsewhere, may have gone back to sleep, and nothing else
 * would wake it while the backlog grows. The fence orders our tail stores
 * before the sleeping flags are read, as pc__advertise()'s RMW does, for a
 * thief that checks the backlog after raising its flag. The plain look at
 * nsleeping first keeps a busy runtime (nobody asleep) down to one load of
 * a read-mostly line per PC_WAKE_STEP pushes; a thief whose park it does
 * not see yet is seen at the next step, while the backlog still grows.
 */
void pc__backlog_wake(struct pc_worker *w)
{
        struct pc_stealq *q = &w->sq;
        uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed), len;

        w->wake_tail = t;
        if (atomic_load_explicit(&w->rt->nsleeping, memory_order_relaxed) == 0)
                return;
        q->seen_head = atomic_load_explicit(&q->head, memory_order_acquire);
        len = t - q->seen_head;
        if (len < PC_ADVERTISE_MIN)
                return;
        atomic_thread_fence(memory_order_seq_cst);
        pc__wake_thief(w, len >= w->remote_min);
}

/*
 * Wake the nearest sleeping worker that could steal from @w: walk @w's own
 * steal order (the same tiers seen from the other side), near tiers only
 * unless @remote. Called when our surplus appears, every PC_WAKE_STEP
 * pushes while it lasts (remote once it reaches the remote-steal
 * threshold), and by a thief that just stole, so idle workers join in one
 * after another. A searching worker does not stop us: it may be one that
 * cannot take this work (another node, under the threshold).
 */
void pc__wake_thief(struct pc_worker *w, bool remote)
{
        struct pc_runtime *rt = w->rt;
        const struct pc_steal_order *o = &w->order;

        if (atomic_load_explicit(&rt->nsleeping, memory_order_seq_cst) == 0)
                return;
        for (unsigned tier = 0; tier < o->ntiers; tier++) {
                if (!remote && o->tier_kind[tier] >= PC_TIER_PACKAGE)
                        return;
                for (unsigned k = o->tier_start[tier]; k < o->tier_start[tier + 1]; k++) {
                        struct pc_worker *v = rt->workers[o->victims[k]];
                        if (atomic_load_explicit(&v->sleeping, memory_order_seq_cst)) {
                                pc__wake(v);
                                return;
                        }
                }
        }
}

/*
 * The bit first, then the flag; pc__advertise() sets them the other way
 * round (all seq_cst). So whichever way an owner's advertise and a thief's
 * clear interleave, a flag left set has its bit set: the owner may find
 * its flag clear with the bit still set (it advertises again at its next
 * push; a thief drops a bit whose ring is empty), never the flag set with
 * no bit, which would hide its queue from every thief for good.
 */
void pc__unadvertise(struct pc_worker *w)
{
        atomic_fetch_and_explicit(&w->rt->stealable[w->id / 64], ~(1ull << (w->id % 64)),
                                  memory_order_seq_cst);
        atomic_store_explicit(&w->sq.adv, false, memory_order_seq_cst);
}

static inline bool advertises(struct pc_runtime *rt, unsigned v)
{
        return atomic_load_explicit(&rt->stealable[v / 64], memory_order_relaxed) >> (v % 64) &
               1;
}

/*
 * The stealable ring is full: move its older half, then @t, to the global
 * injector in one batch (one lock), where any worker can take them, like
 * Tokio does. Keeping them in a list only this worker can reach would
 * strand them whenever it is busy in a long task.
 */
void pc__spill(struct pc_worker *w, struct pc_task *t)
{
        struct pc_task *buf[PC_SPILL_MAX];
        unsigned half = (unsigned)((w->sq.mask + 1) / 2), got;

        if (half > PC_SPILL_MAX)
                half = PC_SPILL_MAX;
        got = pc__stealq_pop_batch(&w->sq, buf, half);
        for (unsigned i = 0; i + 1 < got; i++)
                buf[i]->next = buf[i + 1];
        if (got)
                buf[got - 1]->next = t;
        t->next = NULL;
        pc__inject_list(w->rt, got ? buf[0] : t, t, got + 1ull);
        w->ls.spilled += got + 1;
}

/*
 * A victim advertises but its ring is empty: thieves took it all while its
 * owner was busy elsewhere (a long task, its pollers), and only the owner
 * would clear the bit, at its next pop. Clear it here, or every idle
 * thief keeps searching and never parks. Its drained flag, set first, has
 * the owner's next push advertise even a single task (below
 * PC_ADVERTISE_MIN it would not: the last task of a burst would wait for
 * its busy owner while every thief sleeps). An owner that pushed between
 * our look and our clear saw its flag still set and did not advertise:
 * look again after the clear, and advertise its ring for it (the flag,
 * then the bit, as pc__advertise() does). What remains is a push whose
 * tail store the owner's CPU has not yet made visible when we look again
 * (no fence on the owner's push pays for that window of nanoseconds): the
 * owner's next push or pop advertises or runs it, never a task lost.
 */
static void drop_stale(struct pc_runtime *rt, unsigned v)
{
        struct pc_worker *o = rt->workers[v];

        if (pc__stealq_ring_len(&o->sq) != 0 ||
            !atomic_load_explicit(&o->sq.adv, memory_order_relaxed))
                return;
        atomic_store_explicit(&o->sq.drained, true, memory_order_relaxed);
        pc__unadvertise(o);
        if (pc__stealq_ring_len(&o->sq) != 0 &&
            !atomic_load_explicit(&o->sq.adv, memory_order_seq_cst)) {
                atomic_store_explicit(&o->sq.adv, true, memory_order_seq_cst);
                atomic_fetch_or_explicit(&rt->stealable[v / 64], 1ull << (v % 64),
                                         memory_order_seq_cst);
        }
}

/* Whether a search could succeed now: a victim in a near tier advertises
 * and has a task, or one in a remote tier has a backlog past the
 * threshold. A worker that parks checks this after raising its sleeping
 * flag, so it neither sleeps through stealable work nor spins on work it
 * may not take; a stale advertisement it finds is dropped. */
bool pc__steal_possible(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;
        const struct pc_steal_order *o = &w->order;

        for (unsigned tier = 0; tier < o->ntiers; tier++) {
                bool remote = o->tier_kind[tier] >= PC_TIER_PACKAGE;
                for (unsigned k = o->tier_start[tier]; k < o->tier_start[tier + 1]; k++) {
                        unsigned v = o->victims[k];
                        uint64_t len;

                        if (!(atomic_load_explicit(&rt->stealable[v / 64],
                                                   memory_order_seq_cst) >>
                              (v % 64) & 1))
                                continue;
                        len = pc__stealq_ring_len(&rt->workers[v]->sq);
                        if (len == 0)
                                drop_stale(rt, v);
                        else if (!remote || len >= rt->cfg.remote_steal_min)
                                return true;
                }
        }
        return false;
}

/* Queue the stolen tasks after the first, oldest first, in our own
 * stealable queue: they stay elastic and can move on again. */
static void keep_stolen(struct pc_worker *w, struct pc_task **buf, unsigned got)
{
        for (unsigned i = 1; i < got; i++)
                pc__push_local(w, buf[i]);
}

static struct pc_task *search(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;
        const struct pc_steal_order *o = &w->order;
        struct pc_task *buf[1024];
        unsigned max = rt->cfg.steal_batch;

        for (unsigned tier = 0; tier < o->ntiers; tier++) {
                unsigned first = o->tier_start[tier];
                unsigned cnt = o->tier_start[tier + 1] - first;
                unsigned start = (unsigned)(pc_random() % cnt);

                for (unsigned k = 0; k < cnt; k++) {
                        unsigned v = o->victims[first + (start + k) % cnt];
                        struct pc_stealq *vq = &rt->workers[v]->sq;
                        uint64_t left;
                        unsigned got;
                        bool last;

                        if (!advertises(rt, v))
                                continue;
                        w->ls.steal_attempts++;
                        /* Package and remote tiers are other nodes. */
                        if (o->tier_kind[tier] >= PC_TIER_PACKAGE &&
                            pc__stealq_ring_len(vq) < rt->cfg.remote_steal_min) {
                                w->ls.steal_failures++;
                                continue;
                        }
                        got = pc__stealq_steal(vq, buf, max);
                        if (got == 0) {
                                w->ls.steal_failures++;
                                drop_stale(rt, v);
                                continue;
                        }
                        w->ls.stolen += got;
                        pc__owner_add(&w->stats.steals_from[v], got);
                        keep_stolen(w, buf, got);
                        /* More where that came from: bring in the nearest
                         * sleeper, one on another node too if the backlog
                         * left is worth a remote steal. And as Tokio does,
                         * the last searcher to find work always wakes one
                         * more: otherwise a chain of wakes stops at a thief
                         * that happened to take a small backlog while a
                         * large one elsewhere, whose owner woke thieves
                         * once for it, waits for thieves asleep. */
                        left = pc__stealq_ring_len(vq);
                        last = atomic_load_explicit(&rt->searching, memory_order_relaxed) == 1;
                        if (last || got > 1 || left >= PC_ADVERTISE_MIN)
                                pc__wake_thief(w, last || left >= w->remote_min);
                        return buf[0];
                }
        }
        return NULL;
}

struct pc_task *pc__steal(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;
        unsigned limit = rt->nworkers / 2 ? rt->nworkers / 2 : 1;
        struct pc_task *t;
        uint64_t any = 0;

        /* Cheap first look, so an idle machine does not touch the shared
         * searcher count on every spin. */
        for (unsigned i = 0; i < PC_MAX_WORKERS / 64; i++)
                any |= atomic_load_explicit(&rt->stealable[i], memory_order_relaxed) &
                       ~(i == w->id / 64 ? 1ull << (w->id % 64) : 0);
        if (any == 0)
                return NULL;
        if (atomic_fetch_add_explicit(&rt->searching, 1, memory_order_seq_cst) >= limit) {
                atomic_fetch_sub_explicit(&rt->searching, 1, memory_order_relaxed);
                return NULL;
        }
        w->ls.searches++;
        t = search(w);
        atomic_fetch_sub_explicit(&rt->searching, 1, memory_order_seq_cst);
        return t;
}

/* ---- switching mode ----------------------------------------------------------- */

int pc_runtime_set_mode(struct pc_runtime *rt, enum pc_mode mode)
{
        if (rt == NULL || (mode != PC_MODE_TPC && mode != PC_MODE_ELASTIC))
                return -EINVAL;
        if (atomic_load(&rt->mode) == PC_MODE_DETERMINISTIC)
                return -ENOTSUP;
        /* Seq_cst, as a producer's work: a worker about to park reads it
         * after raising its sleeping flag (work_pending()), or is woken. */
        atomic_store_explicit(&rt->mode, (int)mode, memory_order_seq_cst);
        for (unsigned i = 0; i < rt->nworkers; i++)
                pc__wake(rt->workers[i]);
        return 0;
}

enum pc_mode pc_runtime_mode(const struct pc_runtime *rt)
{
        return rt ? (enum pc_mode)atomic_load_explicit(&rt->mode, memory_order_relaxed)
                  : PC_MODE_TPC;
}

void pc__mode_apply(struct pc_worker *w, int mode)
{
        bool elastic = mode == PC_MODE_ELASTIC && w->rt->nworkers > 1;
        struct pc_task *buf[PC_OWNER_BATCH];
        unsigned n;

        if (w->elastic && !elastic) {
                /* Tasks stay on the worker that queued them: the ones it
                 * claimed, then its stealable ring's, oldest first, go to
                 * its own ring. Thieves still reaching into the ring take
                 * a task or leave it, never both. */
                pc__unadvertise(w);
                while (w->batch_i < w->batch_n)
                        pc__runq_push(&w->rq, w->batch[w->batch_i++]);
                w->batch_i = w->batch_n = 0;
                while ((n = pc__stealq_pop_batch(&w->sq, buf, PC_OWNER_BATCH)) > 0)
                        for (unsigned i = 0; i < n; i++)
                                pc__runq_push(&w->rq, buf[i]);
                /* The counters stop being published with the mode. */
                atomic_store_explicit(&w->stats.stolen, w->ls.stolen,
                                      memory_order_relaxed);
                atomic_store_explicit(&w->stats.steal_attempts, w->ls.steal_attempts,
                                      memory_order_relaxed);
                atomic_store_explicit(&w->stats.steal_failures, w->ls.steal_failures,
                                      memory_order_relaxed);
                atomic_store_explicit(&w->stats.searches, w->ls.searches,
                                      memory_order_relaxed);
        }
        w->elastic = elastic;
        atomic_store_explicit(&w->mode, mode, memory_order_release);
}
