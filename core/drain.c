/* SPDX-License-Identifier: MIT */
/*
 * A graceful stop (pc_runtime_drain()): the modules stop taking new work
 * (the network backends close their listeners) on every worker, what is
 * open goes on being served, and the runtime stops as pc_runtime_stop()
 * does once the modules say nothing is left on any worker, or at the
 * deadline.
 *
 * The request is a flag and a deadline, written with atomics only, and
 * the wake-up pc_runtime_stop() uses, so a signal handler may drain. Each
 * worker sees the flag where it looks for a mode switch (worker.c), runs
 * its modules' worker_drain hooks, then asks their drain_busy hooks every
 * PC_DRAIN_TICK_NS on a timer of its own: a timer wakes a parked worker,
 * and the deadline is checked on the same tick. A worker's count only
 * counts once every worker began (rt->drain_began): by then every
 * listener is closed, so a count of 0 everywhere cannot be undone by a
 * connection accepted on a worker that had not begun yet.
 */
#include <errno.h>
#include <limits.h>

#include "pc_core_pvt.h"

static void drain_tick(struct pc_timer *t, void *arg)
{
        struct pc_worker *w = arg;
        struct pc_runtime *rt = w->rt;
        unsigned busy = 0;
        bool all = atomic_load_explicit(&rt->drain_began, memory_order_acquire) ==
                   rt->nworkers;

        (void)t;
        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->drain_busy)
                        busy += m->drain_busy(w, m->arg);
        atomic_store_explicit(&rt->drain_left[w->id], all ? busy : UINT_MAX,
                              memory_order_release);
        if (pc_now_ns() >= atomic_load_explicit(&rt->drain_at, memory_order_acquire)) {
                pc_runtime_stop(rt);
                return;
        }
        if (busy || !all)
                return;
        for (unsigned i = 0; i < rt->nworkers; i++)
                if (atomic_load_explicit(&rt->drain_left[i], memory_order_acquire) != 0)
                        return;
        pc_runtime_stop(rt);
}

void pc__drain_begin(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;

        w->drain_seen = true;
        /* Pairs with the request's store: its deadline is seen. */
        (void)atomic_load_explicit(&rt->drain_req, memory_order_acquire);
        if (w->stop_seen || atomic_load_explicit(&rt->stop_req, memory_order_relaxed))
                return; /* stopping already: the drain has nothing to add */
        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->worker_drain)
                        m->worker_drain(w, m->arg);
        atomic_fetch_add_explicit(&rt->drain_began, 1, memory_order_acq_rel);
        pc_timer_init(&w->drain_tick, drain_tick, w);
        if (pc_timer_start(&w->drain_tick, 0, PC_DRAIN_TICK_NS) != 0) {
                /* No room in the timer heap: nothing could end the drain
                 * but its deadline, which this worker no longer sees. */
                pc_log(PC_LOG_WARN, "worker %u: no timer for the drain; stopping now", w->id);
                pc_runtime_stop(rt);
        }
}

int pc_runtime_drain(struct pc_runtime *rt, uint64_t deadline_ns)
{
        int off = PC__DRAIN_OFF;
        uint64_t now;

        if (rt == NULL)
                return -EINVAL;
        if (atomic_load_explicit(&rt->stop_req, memory_order_seq_cst))
                return -ESHUTDOWN;
        /* Claimed first, so that two callers (a thread and a signal
         * handler, say) cannot both write the deadline. */
        if (!atomic_compare_exchange_strong_explicit(&rt->drain_req, &off, PC__DRAIN_CLAIMED,
                                                     memory_order_seq_cst,
                                                     memory_order_relaxed))
                return -ESHUTDOWN;
        now = pc_now_ns();
        atomic_store_explicit(&rt->drain_at,
                              deadline_ns > UINT64_MAX - now ? UINT64_MAX : now + deadline_ns,
                              memory_order_relaxed);
        atomic_store_explicit(&rt->drain_began, 0, memory_order_relaxed);
        for (unsigned i = 0; i < rt->nworkers; i++)
                atomic_store_explicit(&rt->drain_left[i], UINT_MAX, memory_order_relaxed);
        atomic_store_explicit(&rt->drain_req, PC__DRAIN_ON, memory_order_seq_cst);
        for (unsigned i = 0; i < rt->nworkers; i++)
                pc__wake(rt->workers[i]);
        return 0;
}

bool pc_runtime_draining(const struct pc_runtime *rt)
{
        return rt && atomic_load_explicit(&((struct pc_runtime *)rt)->drain_req,
                                          memory_order_relaxed) != PC__DRAIN_OFF;
}
