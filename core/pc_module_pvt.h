/* SPDX-License-Identifier: MIT */
/*
 * The module interface: what a module that keeps per-worker state (shard/,
 * the network backends) may use of core/. Its lifecycle hooks and a
 * backend's launch of the workers, the calling worker, quiescence counts,
 * pollers' hints to the idle loop, pooled tasks, fiber waits, and the
 * metrics families it adds. Logging is public (pc_core.h). core/'s own
 * internals are in pc_core_pvt.h, which only core/ includes.
 */
#ifndef PC_MODULE_PVT_H
#define PC_MODULE_PVT_H

#include "pc_runtime_pvt.h"

/*
 * How worker threads come to be. The runtime's own launcher starts pthreads
 * pinned to each worker's CPU; a module may claim the launch with one of
 * its own (pc__module.launcher), as DPDK's does so that worker i is EAL
 * lcore i. In both, the thread calling pc_runtime_run() is worker 0. The
 * callbacks find their context in rt->launcher_ctx.
 */
struct pc__launcher {
        const char *name;
        /* Make the calling thread worker 0 for this run (pin it). */
        int (*enter)(struct pc_runtime *rt);
        /* Start worker w (w > 0): it must call pc__worker_main(w). */
        int (*launch)(struct pc_runtime *rt, struct pc_worker *w);
        /* Wait until a launched worker returned. */
        void (*join)(struct pc_runtime *rt, struct pc_worker *w);
        /* Undo enter() on the calling thread. */
        void (*leave)(struct pc_runtime *rt);
        /* At destroy; may be NULL. */
        void (*fini)(struct pc_runtime *rt);
};

struct pc__prom;
struct pc__metrics;

/*
 * A module that keeps per-worker state (shard/, the network backends) hooks
 * into the runtime's lifecycle. Added before pc_runtime_run(), from the
 * thread that owns the runtime; the runtime keeps the pointer until destroy.
 */
struct pc__module {
        struct pc__module *next;
        void *arg;
        /* Called by each worker on its own thread when its loop starts, on
         * every run, before it runs anything; pc__self is set. May be NULL. */
        void (*worker_start)(struct pc_worker *w, void *arg);
        /* Called by each worker on its own thread when it first sees the
         * run stopping (idle, stop requested), before its timers are
         * dropped: the module wakes the fibers that wait on it, with
         * -ECANCELED, so that they run to their end in the drain. May be
         * NULL. */
        void (*worker_stopping)(struct pc_worker *w, void *arg);
        /* Called by each worker on its own thread when its loop ends, on
         * every run, after its last task ran; pc__self is still set. The
         * thread may exit next (workers other than 0 do), taking with it
         * what the kernel ties to threads. May be NULL. */
        void (*worker_stop)(struct pc_worker *w, void *arg);
        /* pc_runtime_drain() began: called once by each worker on its own
         * thread; the module stops taking new work there (closes its
         * listeners) and lets open work go on. May be NULL. */
        void (*worker_drain)(struct pc_worker *w, void *arg);
        /* While draining, on each worker's thread: how much the module
         * still serves there (open connections); the drain ends once every
         * module says 0 on every worker, or at its deadline. May be NULL. */
        unsigned (*drain_busy)(struct pc_worker *w, void *arg);
        /* Called by pc_runtime_destroy() before the workers are freed. May be
         * NULL. The module may free @m itself here. */
        void (*destroy)(struct pc_runtime *rt, void *arg);
        /* Add the module's families to a metrics scrape (pc__prom_*()), on
         * the metrics thread while the runtime runs, reading only counters
         * that other threads may read. May be NULL. */
        void (*metrics)(struct pc_runtime *rt, struct pc__prom *out, void *arg);
        /* NULL, or how the workers' threads start: a module whose own
         * threads must run the workers (DPDK's lcores, started with
         * rte_eal_remote_launch) claims the launch with this, @arg becoming
         * rt->launcher_ctx. Its fini() runs after every module's destroy(),
         * and must not free @m before then. One module per runtime, and
         * only while a backend attaches in pc_runtime_create(); when none
         * claims it, the runtime starts pinned pthreads itself. */
        const struct pc__launcher *launcher;
};

/*
 * A backend that a runtime may ask for as it is created (DPDK, when
 * PERCORE_EAL_ARGS is set), where a service cannot call it first because
 * the backend decides how the workers start. It registers once per process
 * from a constructor, the way DPDK's drivers do (so a static link of the
 * library needs --whole-archive, as DPDK's own does).
 */
struct pc__backend {
        const char *name;
        struct pc__backend *next; /* the registry's */
        /* Offered every runtime in pc_runtime_create(), once the workers'
         * CPUs are chosen and before their state is allocated. Returns 1
         * after attaching (pc__module_add(), maybe claiming the launch), 0
         * when @rt's configuration does not ask for this backend, or -errno
         * with the reason in @err. On error, destroy still runs what was
         * added. */
        int (*attach)(struct pc_runtime *rt, char *err, size_t errlen);
};

/* The calling thread's worker, NULL off-worker. Initial-exec: libpercore
 * is linked at program start, never dlopen()ed, so the variable sits in
 * static TLS and reading it is one %fs-relative load instead of a
 * __tls_get_addr() call on every pc_submit() and spawn. */
#define PC_TLS_IE __attribute__((tls_model("initial-exec")))
extern __thread struct pc_worker *pc__self PC_TLS_IE;

/*
 * Quiescence accounting for modules that carry work between workers
 * outside the task inboxes (shard/ mailboxes): count a message as sent
 * when it is accepted (ring or overflow) and as received when it is taken.
 * Stopping ends only once every worker's counts balance. Calling worker
 * only.
 */
/* Add to a counter only its owner writes (others read it): a relaxed load
 * and store, no read-modify-write on the owner's path. */
static inline void pc__owner_add(_Atomic uint64_t *c, uint64_t n)
{
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

static inline void pc__count_sent(struct pc_worker *w, uint64_t n)
{
        pc__owner_add(&w->sent, n);
}

static inline void pc__count_recv(struct pc_worker *w, uint64_t n)
{
        pc__owner_add(&w->recv, n);
}

/* What a poller may ask of its worker's idle passes (pc__poller_hint()). */
#define PC__POLL_EAGER 1u /* it waits on a line a near peer writes: the first idle
                           * pass after work reads no clock (worker.c, eager_idle()) */
#define PC__POLL_PACE 2u  /* it waits on lines far peers write, and each look can
                           * slow their writer: the idle spin pauses (idle()) */

/* poller.c: set poller @p's hints (PC__POLL_*); its worker's idle passes
 * follow the union of its live pollers' hints. Returns 0, -EPERM off a
 * worker, -EXDEV for another worker's poller. The owning worker only. */
int pc__poller_hint(struct pc_poller *p, unsigned hints);

/* runtime.c: a launched worker thread's body (names the thread, runs the
 * loop). */
void pc__worker_main(struct pc_worker *w);

/* worker.c: wake @w if it sleeps (a syscall only then). Any thread. */
void pc__wake(struct pc_worker *w);

/* Append @m to @rt's modules. 0, or -EBUSY when @m claims the launch and
 * another module has, or the runtime's create already chose pthreads. */
int pc__module_add(struct pc_runtime *rt, struct pc__module *m);
/* Add @b to the process's backends; from a constructor, before main(). */
void pc__backend_register(struct pc__backend *b);

/* Pin the calling thread to @cpu alone. Returns 0 or -errno. */
int pc__pin_self(int cpu);

/* task.c: the slow paths of pc__task_alloc() and pc__task_release(). */
struct pc_task *pc__task_alloc_slow(struct pc_worker *w);
void pc__task_free_remote(struct pc_runtime *rt, struct pc_task *t);

/* Take a task from the worker's free list; never from another worker's. */
static inline struct pc_task *pc__task_alloc(struct pc_worker *w)
{
        struct pc_task *t = w->free_list;
        if (likely(t != NULL)) {
                w->free_list = t->next;
                return t;
        }
        return pc__task_alloc_slow(w);
}

/* Give a pooled task back to its owner: locally for free, else through the
 * owner's remote-free stack. */
static inline void pc__task_release(struct pc_worker *w, struct pc_task *t)
{
        if (likely(t->owner == w->id)) {
                t->next = w->free_list;
                w->free_list = t;
        } else {
                pc__task_free_remote(w->rt, t);
        }
}

/* fiber.c */
/* For the awaits of other layers: the calling fiber registers with what
 * will wake it, then pc__fiber_wait() gives the worker back until
 * pc__fiber_wake() (on any worker), and returns the rc that was given. */
int pc__fiber_wait(void);
void pc__fiber_wake(struct pc_fiber *f, int rc);
/* pc__fiber_wake() that, on @f's own worker outside any fiber (a
 * poller's callback), runs @f in place until it waits, yields
 * past its turn or ends. For wakers that run no code of their own after
 * it on state the fiber may change. */
void pc__fiber_wake_here(struct pc_fiber *f, int rc);

/* prom.c: what a module's metrics hook adds to a scrape (struct
 * pc__prom, the scrape's text, is core's). */
/* "# HELP" and "# TYPE" (@type "counter" or "gauge") of a family; its
 * samples follow. */
void pc__prom_family(struct pc__prom *p, const char *name, const char *type,
                     const char *help);
/* A sample: @labels holds @nlabels name, value pairs (values escaped here). */
void pc__prom_u64(struct pc__prom *p, const char *name, const char *const *labels,
                  unsigned nlabels, uint64_t v);
void pc__prom_f64(struct pc__prom *p, const char *name, const char *const *labels,
                  unsigned nlabels, double v);
/* A sample labelled worker="@w". */
void pc__prom_worker_u64(struct pc__prom *p, const char *name, unsigned w, uint64_t v);

static inline uint64_t pc__now(void)
{
        return pc_now_ns();
}

static inline void pc__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
}

#endif /* PC_MODULE_PVT_H */
