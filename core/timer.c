/* SPDX-License-Identifier: MIT */
/*
 * Per-worker timers: a binary min-heap of caller-owned timers keyed on
 * (deadline, start sequence), so timers due at the same time fire in the
 * order they were started. Start and cancel are O(log n); a million
 * pending timers cost 8 MB of heap slots and nothing per iteration.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "pc_core_pvt.h"

#define NOT_ARMED UINT32_MAX

uint64_t pc_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pc_timer_init(struct pc_timer *t, pc_timer_fn fn, void *arg)
{
        t->deadline_ns = 0;
        t->period_ns = 0;
        t->seq = 0;
        t->fn = fn;
        t->arg = arg;
        t->heap_idx = NOT_ARMED;
        t->worker = -1;
}

static inline bool before(const struct pc_timer *a, const struct pc_timer *b)
{
        return a->deadline_ns < b->deadline_ns ||
               (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

static inline void place(struct pc_worker *w, uint32_t i, struct pc_timer *t)
{
        w->theap[i] = t;
        t->heap_idx = i;
}

static void sift_up(struct pc_worker *w, uint32_t i)
{
        struct pc_timer *t = w->theap[i];

        while (i > 0) {
                uint32_t parent = (i - 1) / 2;
                if (!before(t, w->theap[parent]))
                        break;
                place(w, i, w->theap[parent]);
                i = parent;
        }
        place(w, i, t);
}

static void sift_down(struct pc_worker *w, uint32_t i)
{
        struct pc_timer *t = w->theap[i];

        for (;;) {
                uint32_t c = 2 * i + 1;
                if (c >= w->tn)
                        break;
                if (c + 1 < w->tn && before(w->theap[c + 1], w->theap[c]))
                        c++;
                if (!before(w->theap[c], t))
                        break;
                place(w, i, w->theap[c]);
                i = c;
        }
        place(w, i, t);
}

static void heap_remove(struct pc_worker *w, struct pc_timer *t)
{
        uint32_t i = t->heap_idx;
        struct pc_timer *last = w->theap[--w->tn];

        t->heap_idx = NOT_ARMED;
        if (last == t)
                return;
        place(w, i, last);
        if (i > 0 && before(last, w->theap[(i - 1) / 2]))
                sift_up(w, i);
        else
                sift_down(w, i);
}

static int heap_insert(struct pc_worker *w, struct pc_timer *t)
{
        if (w->tn == w->tcap) {
                uint32_t cap = w->tcap ? w->tcap * 2 : 64;
                struct pc_timer **h = realloc(w->theap, cap * sizeof(*h));
                if (h == NULL)
                        return -ENOMEM;
                w->theap = h;
                w->tcap = cap;
        }
        t->seq = w->tseq++;
        w->theap[w->tn] = t;
        t->heap_idx = w->tn++;
        sift_up(w, t->heap_idx);
        return 0;
}

int pc_timer_start(struct pc_timer *t, uint64_t delay_ns, uint64_t period_ns)
{
        struct pc_worker *w = pc__self;

        if (w == NULL)
                return -EPERM;
        if (t == NULL || t->fn == NULL)
                return -EINVAL;
        /* t->worker is set while armed and only by the owner, so reading it
         * first lets another worker be refused without touching fields the
         * owner's heap is rewriting. */
        if (t->worker >= 0 && t->worker != (int32_t)w->id)
                return -EXDEV;
        if (t->heap_idx != NOT_ARMED)
                heap_remove(w, t);
        t->worker = -1;
        if (w->stop_seen || atomic_load_explicit(&w->rt->stop_req, memory_order_relaxed))
                return -ESHUTDOWN;
        t->deadline_ns = pc__now() + delay_ns;
        t->period_ns = period_ns;
        t->worker = (int32_t)w->id;
        return heap_insert(w, t);
}

int pc_timer_cancel(struct pc_timer *t)
{
        struct pc_worker *w = pc__self;

        if (w == NULL)
                return -EPERM;
        if (t == NULL)
                return -EINVAL;
        if (t->worker >= 0 && t->worker != (int32_t)w->id)
                return -EXDEV;
        if (t->heap_idx == NOT_ARMED)
                return -ENOENT;
        heap_remove(w, t);
        t->worker = -1;
        return 0;
}

bool pc_timer_armed(const struct pc_timer *t)
{
        return t->heap_idx != NOT_ARMED;
}

/*
 * Fire every timer due at @now. Timers started (or re-armed) while this
 * pass runs get a sequence number at or past @limit and wait for the next
 * pass, so a callback that re-arms itself with no delay cannot loop here.
 */
unsigned pc__timers_expire(struct pc_worker *w, uint64_t now)
{
        uint64_t limit = w->tseq;
        unsigned fired = 0;

        if (unlikely(atomic_load_explicit(&w->rt->stop_req, memory_order_relaxed))) {
                pc__timers_drop(w);
                return 0;
        }
        while (w->tn) {
                struct pc_timer *t = w->theap[0];
                if (t->deadline_ns > now || t->seq >= limit)
                        break;
                heap_remove(w, t);
                if (t->period_ns == 0) {
                        t->worker = -1;
                } else {
                        /* Keep the phase; skip periods missed while busy
                         * rather than firing a burst to catch up. */
                        uint64_t next = t->deadline_ns + t->period_ns;
                        if (next <= now)
                                next = now + t->period_ns;
                        t->deadline_ns = next;
                        /* Cannot fail: the slot it just left is free. */
                        (void)heap_insert(w, t);
                }
                fired++;
                w->cur_fn = (const void *)t->fn;
                t->fn(t, t->arg);
        }
        w->cur_fn = NULL;
        w->ls.timers_fired += fired;
        return fired;
}

/* The run is stopping: timers are dropped, except that a fiber asleep on
 * one is woken (its sleep returns -ECANCELED) so that it runs to its end
 * in the drain. */
void pc__timers_drop(struct pc_worker *w)
{
        uint32_t n = w->tn;

        w->tn = 0;
        for (uint32_t i = 0; i < n; i++) {
                struct pc_timer *t = w->theap[i];

                t->heap_idx = NOT_ARMED;
                t->worker = -1;
                if (t->fn == pc__fiber_timer_fn)
                        pc__fiber_cancel(t->arg);
        }
}
