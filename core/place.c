/* SPDX-License-Identifier: MIT */
/*
 * Placement: spawn options, agents (task streams that share a worker), the
 * load monitor that retargets an agent's future spawns, and the policy
 * vtable the built-in modes are made of.
 *
 * In thread-per-core mode placement is the only balancing: nothing queued
 * ever moves, but where the next task of an agent goes can change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_core_pvt.h"

static const struct pc_policy builtin[] = {
        [PC_MODE_TPC] = {.name = "tpc", .stealing = false},
        [PC_MODE_ELASTIC] = {.name = "elastic", .stealing = true},
        [PC_MODE_DETERMINISTIC] = {.name = "deterministic", .stealing = false},
};

const struct pc_policy *pc_policy_builtin(enum pc_mode mode)
{
        if ((unsigned)mode >= sizeof(builtin) / sizeof(builtin[0]))
                return NULL;
        return &builtin[mode];
}

static uint64_t queue_depth(const struct pc_runtime *rt, unsigned w)
{
        return atomic_load_explicit(&rt->workers[w]->stats.queue_depth, memory_order_relaxed);
}

/* Least load, scanning from a rotating start so that equal loads are
 * served round-robin. Load = agents placed there + tasks queued there. */
static unsigned least_loaded(struct pc_runtime *rt)
{
        unsigned n = rt->nworkers;
        unsigned start = atomic_fetch_add_explicit(&rt->place_rr, 1, memory_order_relaxed) % n;
        unsigned best = start;
        uint64_t best_load = UINT64_MAX;

        for (unsigned k = 0; k < n; k++) {
                unsigned i = (start + k) % n;
                uint64_t load = atomic_load_explicit(&rt->agents_on[i], memory_order_relaxed) +
                                queue_depth(rt, i);
                if (load < best_load) {
                        best_load = load;
                        best = i;
                }
        }
        return best;
}

static int choose(struct pc_runtime *rt, unsigned from, enum pc_spawn_place place,
                  unsigned worker, unsigned *dst)
{
        const struct pc_policy *p = rt->policy;
        int w;

        switch (place) {
        case PC_SPAWN_LOCAL:
                *dst = from;
                return 0;
        case PC_SPAWN_ROUND_ROBIN:
                *dst = atomic_fetch_add_explicit(&rt->place_rr, 1, memory_order_relaxed) %
                       rt->nworkers;
                return 0;
        case PC_SPAWN_LEAST_LOADED:
                *dst = least_loaded(rt);
                return 0;
        case PC_SPAWN_WORKER:
                if (worker >= rt->nworkers)
                        return -EINVAL;
                *dst = worker;
                return 0;
        case PC_SPAWN_POLICY:
                w = p->place ? p->place(p->ctx, rt, from) : -1;
                *dst = w >= 0 && (unsigned)w < rt->nworkers ? (unsigned)w : from;
                return 0;
        }
        return -EINVAL;
}

static struct pc__agent *agent_of(const struct pc_runtime *rt, int id)
{
        struct pc__agent *a;

        if (id <= 0 || id > PC_MAX_AGENTS)
                return NULL;
        a = (struct pc__agent *)&rt->agents[id];
        return atomic_load_explicit(&a->used, memory_order_acquire) ? a : NULL;
}

/* The agent's worker; the first spawn places it (one CAS decides races). */
static int agent_target(struct pc_runtime *rt, unsigned from, int id, unsigned *dst)
{
        struct pc__agent *a = agent_of(rt, id);
        int cur, rc;
        unsigned pick;

        if (a == NULL)
                return -EINVAL;
        cur = atomic_load_explicit(&a->target, memory_order_acquire);
        if (cur >= 0) {
                *dst = (unsigned)cur;
                return 0;
        }
        rc = choose(rt, from, (enum pc_spawn_place)a->place, 0, &pick);
        if (rc)
                return rc;
        if (atomic_compare_exchange_strong_explicit(&a->target, &cur, (int)pick,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
                atomic_fetch_add_explicit(&rt->agents_on[pick], 1, memory_order_relaxed);
                cur = (int)pick;
        }
        *dst = (unsigned)cur;
        return 0;
}

int pc_spawn_ex(pc_task_fn fn, void *arg, const struct pc_spawn_opts *o)
{
        struct pc_worker *w = pc__self;
        struct pc_task *t;
        unsigned dst;
        int rc;

        if (w == NULL)
                return -EPERM;
        if (o == NULL) {
                rc = pc_spawn(fn, arg);
                return rc ? rc : (int)w->id;
        }
        if (fn == NULL || (o->affinity & ~(PC_STICKY | PC_ELASTIC)) ||
            o->affinity == (PC_STICKY | PC_ELASTIC))
                return -EINVAL;
        if (o->agent)
                rc = agent_target(w->rt, w->id, o->agent, &dst);
        else
                rc = choose(w->rt, w->id, o->place, o->worker, &dst);
        if (rc)
                return rc;
        t = pc__task_alloc(w);
        if (t == NULL)
                return -ENOMEM;
        t->fn = fn;
        t->arg = arg;
        t->flags = (uint16_t)o->affinity;
        rc = pc__spawn_to(w, dst, t);
        return rc ? rc : (int)dst;
}

int pc_agent_create(struct pc_runtime *rt, enum pc_spawn_place place, unsigned affinity,
                    int *id)
{
        if (rt == NULL || id == NULL || place == PC_SPAWN_WORKER ||
            (unsigned)place > PC_SPAWN_POLICY || (affinity & ~(PC_STICKY | PC_ELASTIC)))
                return -EINVAL;
        pthread_mutex_lock(&rt->agent_lock);
        for (int k = 0; k < PC_MAX_AGENTS; k++) {
                int i = 1 + (rt->agent_hint + k) % PC_MAX_AGENTS;
                struct pc__agent *a = &rt->agents[i];
                if (atomic_load_explicit(&a->used, memory_order_relaxed))
                        continue;
                a->place = (uint8_t)place;
                a->affinity = (uint8_t)affinity;
                atomic_store_explicit(&a->target, -1, memory_order_relaxed);
                atomic_store_explicit(&a->used, 1, memory_order_release);
                rt->agent_hint = i;
                atomic_fetch_add_explicit(&rt->agent_count, 1, memory_order_relaxed);
                pthread_mutex_unlock(&rt->agent_lock);
                *id = i;
                return 0;
        }
        pthread_mutex_unlock(&rt->agent_lock);
        return -ENOSPC;
}

int pc_agent_destroy(struct pc_runtime *rt, int id)
{
        struct pc__agent *a;
        int cur;

        if (rt == NULL)
                return -EINVAL;
        pthread_mutex_lock(&rt->agent_lock);
        a = agent_of(rt, id);
        if (a == NULL) {
                pthread_mutex_unlock(&rt->agent_lock);
                return -EINVAL;
        }
        cur = atomic_exchange_explicit(&a->target, -1, memory_order_acq_rel);
        if (cur >= 0)
                atomic_fetch_sub_explicit(&rt->agents_on[cur], 1, memory_order_relaxed);
        atomic_store_explicit(&a->used, 0, memory_order_release);
        atomic_fetch_sub_explicit(&rt->agent_count, 1, memory_order_relaxed);
        pthread_mutex_unlock(&rt->agent_lock);
        return 0;
}

int pc_agent_worker(const struct pc_runtime *rt, int id)
{
        struct pc__agent *a;
        int cur;

        if (rt == NULL || (a = agent_of(rt, id)) == NULL)
                return -EINVAL;
        cur = atomic_load_explicit(&a->target, memory_order_acquire);
        return cur >= 0 ? cur : -ENOENT;
}

/* ---- the load monitor --------------------------------------------------- */

/*
 * One look: when the busiest worker's queue is past PC_MONITOR_THRESHOLD
 * times the lightest's (at least 1) and at least PC_MONITOR_THRESHOLD
 * deep, move one movable agent placed on the busiest to the lightest.
 * Only where its next tasks go changes.
 */
void pc__monitor_sample(struct pc_runtime *rt)
{
        unsigned n = rt->nworkers, busy = 0, light = 0;
        uint64_t dmax = 0, dmin = UINT64_MAX, floor;

        atomic_fetch_add_explicit(&rt->mon_samples, 1, memory_order_relaxed);
        for (unsigned i = 0; i < n; i++) {
                uint64_t d = queue_depth(rt, i);
                if (d > dmax) {
                        dmax = d;
                        busy = i;
                }
                if (d < dmin) {
                        dmin = d;
                        light = i;
                }
        }
        floor = dmin ? dmin : 1;
        if (busy == light || dmax < PC_MONITOR_THRESHOLD || dmax <= PC_MONITOR_THRESHOLD * floor)
                return;
        pthread_mutex_lock(&rt->agent_lock);
        for (int k = 0; k < PC_MAX_AGENTS; k++) {
                int i = 1 + (rt->mon_hint + k) % PC_MAX_AGENTS;
                struct pc__agent *a = &rt->agents[i];
                int cur = (int)busy;
                if (!atomic_load_explicit(&a->used, memory_order_relaxed) ||
                    (a->affinity & PC_STICKY))
                        continue;
                if (atomic_compare_exchange_strong_explicit(&a->target, &cur, (int)light,
                                                            memory_order_acq_rel,
                                                            memory_order_relaxed)) {
                        atomic_fetch_sub_explicit(&rt->agents_on[busy], 1, memory_order_relaxed);
                        atomic_fetch_add_explicit(&rt->agents_on[light], 1, memory_order_relaxed);
                        atomic_fetch_add_explicit(&rt->mon_retargets, 1, memory_order_relaxed);
                        rt->mon_hint = i;
                        break;
                }
        }
        pthread_mutex_unlock(&rt->agent_lock);
}

static void *monitor_main(void *arg)
{
        struct pc_runtime *rt = arg;
        struct timespec ts;

        pthread_setname_np(pthread_self(), "pc-monitor");
        pthread_mutex_lock(&rt->mon_lock);
        while (!rt->mon_stop) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += (long)(rt->cfg.monitor_ms % 1000) * 1000000L;
                ts.tv_sec += rt->cfg.monitor_ms / 1000 + ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&rt->mon_cond, &rt->mon_lock, &ts);
                if (rt->mon_stop)
                        break;
                pthread_mutex_unlock(&rt->mon_lock);
                pc__monitor_sample(rt);
                pthread_mutex_lock(&rt->mon_lock);
        }
        pthread_mutex_unlock(&rt->mon_lock);
        return NULL;
}

int pc__monitor_start(struct pc_runtime *rt)
{
        int rc;

        if (rt->cfg.monitor_ms == 0 || rt->cfg.mode == PC_MODE_DETERMINISTIC)
                return 0;
        rt->mon_stop = false;
        rc = pthread_create(&rt->mon_thread, NULL, monitor_main, rt);
        if (rc)
                return -rc;
        rt->mon_running = true;
        return 0;
}

void pc__monitor_stop(struct pc_runtime *rt)
{
        if (!rt->mon_running)
                return;
        pthread_mutex_lock(&rt->mon_lock);
        rt->mon_stop = true;
        pthread_cond_signal(&rt->mon_cond);
        pthread_mutex_unlock(&rt->mon_lock);
        pthread_join(rt->mon_thread, NULL);
        rt->mon_running = false;
}

int pc_stats_runtime(const struct pc_runtime *rt, struct pc_runtime_stats *out)
{
        if (rt == NULL || out == NULL)
                return -EINVAL;
        out->monitor_samples = atomic_load_explicit(&rt->mon_samples, memory_order_relaxed);
        out->monitor_retargets = atomic_load_explicit(&rt->mon_retargets, memory_order_relaxed);
        out->agents = atomic_load_explicit(&rt->agent_count, memory_order_relaxed);
        return 0;
}
