/* SPDX-License-Identifier: MIT */
/*
 * core/'s own internals: what its files share beyond the module interface
 * (pc_module_pvt.h), the run queues and the inline fast paths. Only core/
 * (and core's tests) include this header; nothing here is public.
 */
#ifndef PC_CORE_PVT_H
#define PC_CORE_PVT_H

#include "pc_module_pvt.h"

/* worker.c */
void pc__worker_loop(struct pc_worker *w);

/* Adaptive idle's next spin after a park that a just-woken worker ended at
 * @woken_at (0: none, or the park timed out / never slept), for a worker
 * idle since @idle_since and running again at @now, whose spin was @spin
 * before the park halved it; @max and @min bound it (worker.c). Pure. */
uint64_t pc__spin_after_park(uint64_t spin, uint64_t max, uint64_t min, uint64_t idle_since,
                             uint64_t woken_at, uint64_t now);
int pc__worker_init(struct pc_worker *w, struct pc_runtime *rt, unsigned id, unsigned runq);
void pc__worker_fini(struct pc_worker *w);

/* place.c */
int pc__monitor_start(struct pc_runtime *rt);
void pc__monitor_stop(struct pc_runtime *rt);
void pc__monitor_sample(struct pc_runtime *rt);

/* task.c */
int pc__spawn_to(struct pc_worker *self, unsigned dst, struct pc_task *t);
int pc__inject(struct pc_runtime *rt, struct pc_task *t);
void pc__inject_list(struct pc_runtime *rt, struct pc_task *first, struct pc_task *last,
                     uint64_t n);

/* fiber.c */
/* A timer that pc__timers_drop() must not drop silently: a sleeping fiber's,
 * which it wakes with -ECANCELED instead. */
void pc__fiber_timer_fn(struct pc_timer *t, void *arg);
void pc__fiber_cancel(void *fiber_arg);
void pc__fiber_runtime_fini(struct pc_runtime *rt);
/* The function fiber @f runs (for the reports). */
const void *pc__fiber_fn(const struct pc_fiber *f);
/* Give the calling thread an alternate signal stack if it has none, so
 * that a handler runs even when the fault is a stack overflow. */
void pc__alt_stack_ensure(void);

/* steal.c */
struct pc_task *pc__steal(struct pc_worker *w);
bool pc__steal_possible(struct pc_worker *w);
void pc__steal_order_flat(struct pc_runtime *rt, unsigned w, struct pc_steal_order *o);
void pc__advertise(struct pc_worker *w);
void pc__spill(struct pc_worker *w, struct pc_task *t);
void pc__wake_thief(struct pc_worker *w, bool remote);
/* Clear @w's advertisement: its owner, or a thief that found @w's ring
 * empty (a stale bit would keep every thief from parking). */
void pc__unadvertise(struct pc_worker *w);
/* Owner, from pc__push_local(), every PC_WAKE_STEP pushes while it
 * advertises: wake a sleeper that can take the backlog. */
void pc__backlog_wake(struct pc_worker *w);
/* Owner, in an iteration that found rt->mode changed: start or stop
 * stealing (to tpc, every task it held for thieves comes back to its
 * own ring). */
void pc__mode_apply(struct pc_worker *w, int mode);

/* A fiber of @w yields and will itself run the loop's next task (go on
 * in place, or switch to a fiber first in line): whether it may take the
 * loop's turn for it; if so, the turn is counted as one task run. */
bool pc__take_turn(struct pc_worker *w);

/* timer.c */
unsigned pc__timers_expire(struct pc_worker *w, uint64_t now);
void pc__timers_drop(struct pc_worker *w);

/* drain.c. rt->drain_req: none, claimed (its deadline being written), on. */
enum { PC__DRAIN_OFF = 0, PC__DRAIN_CLAIMED = 1, PC__DRAIN_ON = 2 };
/* Worker @w sees the drain: its modules stop taking work, and its tick
 * starts. Owner only, once a run. */
void pc__drain_begin(struct pc_worker *w);

/* stall.c: the worker's stall timer, armed and disarmed on its thread as
 * its loop starts and ends. */
void pc__stall_start(struct pc_worker *w);
void pc__stall_stop(struct pc_worker *w);

/* signals.c: while pc_runtime_stop_on_signals()'s thread takes SIGINT and
 * SIGTERM, block them in the calling thread, about to run a worker, saving
 * its mask in @old; returns whether it did. pc__signals_restore() puts
 * that mask back (a no-op when @blocked is false). */
bool pc__signals_block(sigset_t *old);
void pc__signals_restore(bool blocked, const sigset_t *old);
/* signals.c: from pc_runtime_destroy(), before anything of @rt is freed:
 * the signals no longer stop @rt (the old handlers back when they stopped
 * it). */
void pc__signals_forget(struct pc_runtime *rt);

/* share.c. start/stop: on the worker's thread as its loop starts and
 * ends; check: from the loop when PC_SHARE_WINDOW_NS passed since the
 * last look (@now, pc__now()); judge: the decision alone, for tests. */
void pc__share_start(struct pc_worker *w);
void pc__share_check(struct pc_worker *w, uint64_t now);
void pc__share_stop(struct pc_worker *w);
enum pc__share_move pc__share_judge(struct pc__share *s, uint64_t wait_ns, uint64_t wall_ns);
/* Packing's judge, on its own for tests: over a window of @wall_ns, @busy
 * holds each of a node's @n CPUs' busy time, @mine what our workers ran on
 * each as far as known (@pinned: a worker is pinned there), @roam what
 * roaming ones ran where not known (spread over the CPUs not left); @left
 * (in and out) marks the CPUs left to other threads; @others (may be NULL)
 * gets the CPUs the others used, in thousandths. Returns how many are
 * left now. Never leaves a CPU a pinned worker runs on, one the others use
 * less than a quarter of, nor every CPU. */
unsigned pc__pack_judge(unsigned n, const uint64_t *busy, const uint64_t *mine, const bool *pinned,
                        uint64_t roam, uint64_t wall_ns, bool *left, uint64_t *others);
/* A packed worker's turn: from the loop as it reads the clock (@now),
 * with that pass's work count @n; yields the CPU once a turn (0.3 ms)
 * passed since its last pass without work (or its last yield). */
void pc__pack_turn(struct pc_worker *w, unsigned n, uint64_t now);
/* Every node's packing state, at create (-ENOMEM) and destroy. */
int pc__pack_setup(struct pc_runtime *rt);
void pc__pack_free(struct pc_runtime *rt);

/* crash.c: the fatal-signal report on workers; once per process, from
 * pc_runtime_create(). */
void pc__crash_install(void);

/* report.c: async-signal-safe lines for the stall and crash reports,
 * built in a buffer and written to stderr with one write(2). */
struct pc__line {
        char buf[512];
        size_t len;
};
void pc__line_str(struct pc__line *l, const char *s);
void pc__line_u64(struct pc__line *l, uint64_t v);
/* "name (file+0xoff)", as much of it as the dynamic symbols tell. */
void pc__line_sym(struct pc__line *l, const void *addr);
/* What worker @w runs: " in fiber f (...)", " in poller p (...)", ... */
void pc__line_running(struct pc__line *l, const struct pc_worker *w);
void pc__line_write(struct pc__line *l);
/* The calling thread's stack from the frame a signal interrupted (@uc, its
 * ucontext), one "percore:   #i frame" line each. */
void pc__backtrace(const void *uc);
/* Call once outside a signal handler: backtrace() loads its unwinder then. */
void pc__backtrace_warm(void);

/* metrics.c: bound in create (errors in @err naming PERCORE_METRICS),
 * served from run's start to its end, closed in destroy. */
int pc__metrics_open(struct pc_runtime *rt, char *err, size_t errlen);
int pc__metrics_start(struct pc_runtime *rt);
void pc__metrics_stop(struct pc_runtime *rt);
void pc__metrics_close(struct pc_runtime *rt);
struct sockaddr_storage;
/* Parse "A.B.C.D:PORT" or "[v6]:PORT". 0 or -EINVAL. */
int pc__metrics_addr(const char *s, struct sockaddr_storage *ss, unsigned *len);
/* The status to answer the request head in @buf with, 0 while incomplete. */
int pc__http_route(const char *buf, size_t len);

/* prom.c: a scrape's text, grown as families are added. */
struct pc__prom {
        char *buf;
        size_t len, cap;
        bool failed; /* out of memory: the scrape answers 500 */
};
/* Where a worker's busy and idle time stood at the previous scrape. */
struct pc__metrics_prev {
        uint64_t busy_ns, idle_ns;
};
/* Every family: the runtime's and its workers', then the modules'. */
void pc__prom_runtime(struct pc_runtime *rt, struct pc__prom *p,
                      struct pc__metrics_prev *prev);

/* log.c */
void pc__log_set_level(enum pc_log_level level);
/* Route numa/'s messages through pc_log(), so PERCORE_LOG applies to them. */
void pc__log_hook_topo(void);

static inline struct pc_task *pc__runq_pop(struct pc_runq *rq)
{
        if (likely(rq->head != rq->tail))
                return rq->slots[rq->head++ & rq->mask];
        if (rq->ovf_head == NULL)
                return NULL;
        /* The ring is empty: the overflow list holds the oldest tasks. Move
         * as many as fit back into the ring, in order. */
        while (rq->ovf_head && rq->tail - rq->head <= rq->mask) {
                struct pc_task *t = rq->ovf_head;
                rq->ovf_head = t->next;
                rq->slots[rq->tail++ & rq->mask] = t;
                rq->ovf_len--;
        }
        if (rq->ovf_head == NULL)
                rq->ovf_tail = NULL;
        return rq->slots[rq->head++ & rq->mask];
}

static inline void pc__runq_push(struct pc_runq *rq, struct pc_task *t)
{
        if (likely(rq->ovf_head == NULL && rq->tail - rq->head <= rq->mask)) {
                rq->slots[rq->tail++ & rq->mask] = t;
                return;
        }
        t->next = NULL;
        if (rq->ovf_tail)
                rq->ovf_tail->next = t;
        else
                rq->ovf_head = t;
        rq->ovf_tail = t;
        rq->ovf_len++;
}

static inline uint64_t pc__runq_len(const struct pc_runq *rq)
{
        return (uint64_t)(rq->tail - rq->head) + rq->ovf_len;
}

/* Queue @t on its own worker: the sticky ring in tpc mode or for sticky
 * tasks, else the stealable queue (advertised once it holds a surplus). */
static inline void pc__push_local(struct pc_worker *w, struct pc_task *t)
{
        if (likely(!w->elastic) || (t->flags & PC_STICKY)) {
                pc__runq_push(&w->rq, t);
                return;
        }
        if (unlikely(!pc__stealq_push(&w->sq, t))) {
                pc__spill(w, t);
                return;
        }
        /* Acquire: a thief's clear of adv (drop_stale()) shows its drained. */
        if (!atomic_load_explicit(&w->sq.adv, memory_order_acquire)) {
                uint64_t len = pc__stealq_ring_len(&w->sq);

                if (len >= PC_ADVERTISE_MIN ||
                    (len && atomic_load_explicit(&w->sq.drained, memory_order_relaxed)))
                        pc__advertise(w);
        } else if (unlikely(atomic_load_explicit(&w->sq.tail, memory_order_relaxed) -
                                    w->wake_tail >=
                            PC_WAKE_STEP)) {
                pc__backlog_wake(w);
        }
}

static inline uint64_t pc__queued(struct pc_worker *w)
{
        uint64_t n = pc__runq_len(&w->rq);

        if (w->elastic)
                n += pc__stealq_ring_len(&w->sq) + (w->batch_n - w->batch_i);
        return n;
}

#endif /* PC_CORE_PVT_H */
