/* SPDX-License-Identifier: MIT */
/*
 * Private core state: the runtime, its workers and the inline fast paths
 * shared by the core's files. Nothing here is part of the public API.
 */
#ifndef PC_CORE_PVT_H
#define PC_CORE_PVT_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "percore.h"
#include "pc_topo.h"
#include "stealq_pvt.h"

#define PC_CACHE_LINE 64
#define PC_ALIGNED __attribute__((aligned(PC_CACHE_LINE)))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Tunables, in one place. */
#define PC_TASK_BUDGET 256      /* tasks per iteration before pollers run */
#define PC_INJECT_EVERY 61      /* look at the injector first every 61st task */
#define PC_TIMER_EVERY 32       /* check timers every 32 tasks (power of two) */
#define PC_INJECT_BATCH_MAX 128 /* most tasks taken from the injector at once */
#define PC_TASK_CHUNK 512       /* tasks per free-list refill allocation */
#define PC_RUNQ_DEFAULT 4096    /* default local ring slots */
#define PC_STOP_POLL_NS 100000  /* coordinator's re-check period while draining */
#define PC_ADVERTISE_MIN 2      /* stealable tasks before a worker advertises */
#define PC_WAKE_STEP 4          /* pushes between an advertising owner's wakes */
#define PC_OWNER_BATCH 8        /* stealable tasks the owner claims per CAS */
#define PC_SPILL_MAX 2048       /* most tasks a full stealable ring spills at once */
#define PC_MONITOR_THRESHOLD 4  /* load monitor: busiest > 4 x max(lightest, 1), >= 4 */
#define PC_STALL_SIGNAL (SIGRTMIN + 3) /* the stall timer's signal (worker threads) */
#define PC_STALL_TICKS 4        /* stall timer ticks per PERCORE_STALL_MS of CPU time */
#define PC_STALL_REPORTS 5      /* stall reports printed per minute, all workers */

/* Task owners that are not workers. */
#define PC_OWNER_HEAP 0xfffeu /* malloc'd by pc_runtime_inject(): free() it */
#define PC_OWNER_USER 0xffffu /* caller-owned: never touched after it starts */

_Static_assert(sizeof(struct pc_task) == 64, "a task is one cache line");

/* Owner-only FIFO: a power-of-two ring, then an overflow list once it fills.
 * While the overflow list is non-empty every push goes there too, so the
 * ring always holds the oldest tasks and order is kept. */
struct pc_runq {
        uint32_t head;
        uint32_t tail;
        uint32_t mask;
        uint32_t pad;
        struct pc_task **slots;
        struct pc_task *ovf_head;
        struct pc_task *ovf_tail;
        uint64_t ovf_len;
};

struct pc__shard_worker;

struct pc_poller {
        const struct pc_poller_ops *ops;
        void *arg;
        unsigned worker;
        bool dead; /* unregistered during a poll pass; freed after it */
};

/* Counters the owner publishes once per iteration; read by any thread. */
struct pc_pub_stats {
        _Atomic uint64_t tasks_run;
        _Atomic uint64_t tasks_remote;
        _Atomic uint64_t tasks_inject;
        _Atomic uint64_t timers_fired;
        _Atomic uint64_t polls;
        _Atomic uint64_t iterations;
        _Atomic uint64_t parks;
        _Atomic uint64_t wakeups;
        _Atomic uint64_t queue_depth;
        _Atomic uint64_t busy_ns;
        _Atomic uint64_t idle_ns;
        _Atomic uint64_t spin_ns; /* stored when it changes, not per iteration */
        _Atomic uint64_t stolen;
        _Atomic uint64_t steal_attempts;
        _Atomic uint64_t steal_failures;
        _Atomic uint64_t searches;
        _Atomic uint64_t stalls; /* stored by the stall detector as it counts one */
        _Atomic uint64_t roams, roaming; /* share.c, as they change */
        _Atomic uint64_t packed, yields;  /* share.c (packing), as they change */
        _Atomic uint64_t steals_from[PC_MAX_WORKERS]; /* by victim */
};

/* The owner's private copy of the same counters (plain, hot). */
struct pc_local_stats {
        uint64_t tasks_run;
        uint64_t tasks_remote;
        uint64_t tasks_inject;
        uint64_t timers_fired;
        uint64_t polls;
        uint64_t iterations;
        uint64_t parks;
        uint64_t wakeups;
        uint64_t busy_ns;
        uint64_t idle_ns;
        uint64_t stolen;
        uint64_t steal_attempts;
        uint64_t steal_failures;
        uint64_t searches;
        uint64_t spilled;
};

/*
 * One worker. The first lines are touched by the owner only; each field
 * other threads write sits on a line of its own, so a producer never
 * invalidates the owner's hot state.
 */
/* fiber.c: a worker's fiber state (only its own thread touches it). */
struct pc_fiber;
struct pc__fiber_worker {
        struct pc_fiber *cur;   /* the fiber running now, or NULL */
        struct pc_fiber *from;  /* switched straight to cur; saved by cur */
        void *sched;            /* context of the task runner that resumed it */
        int action;             /* what cur asked for as it switched out */
        struct pc_fiber *cache; /* finished fibers whose stacks are kept */
        unsigned ncache;
        void *tsan_sched;       /* ThreadSanitizer's fiber of this thread */
        void *asan_fake;        /* AddressSanitizer's fake stack of the runner */
        const void *sched_bottom;
        size_t sched_size;
};

/* stall.c: a worker's stall detector. Its own thread only: the worker
 * loop as it starts and ends, and the timer's signal handler between. */
struct pc__stall {
        timer_t timer;
        bool on;
        uint64_t gen;      /* the loop's progress at the last tick */
        uint64_t since_ns; /* thread CPU time when @gen was first seen */
        uint64_t next_ns;  /* how long a stall must be for its next report */
};

/* share.c, under PERCORE_OVERPROVISIONED: whether a pinned worker shares
 * its CPU, looked at every PC_SHARE_WINDOW_NS (50 ms). Its own thread
 * only. */
#define PC_SHARE_WINDOW_NS 50000000ull

struct pc__pack;

struct pc__share {
        int fd;           /* /proc/thread-self/schedstat; -1: not watching */
        bool roaming;     /* may run on the run's CPUs of its node */
        bool told;        /* the first roam of the run was logged */
        int policy;       /* >= 0: roaming made the thread SCHED_BATCH, and this
                           * was its policy */
        unsigned calm;    /* calm windows in a row while roaming */
        unsigned calm_need;
        unsigned roams;
        uint64_t at_ns;   /* clock at the last look */
        uint64_t wait_ns; /* the thread's run delay then */
        unsigned pack_gen; /* the node's packing it applied (struct pc__pack) */
        unsigned slot;     /* its place in that struct's per-worker arrays */
        bool packed;       /* runs on fewer of its node's CPUs: others use the rest */
        uint64_t turn_ns;  /* packed: its last pass without work, or last yield */
        cpu_set_t on;      /* packed: the CPUs it may run on */
};

enum pc__share_move { PC_SHARE_STAY, PC_SHARE_ROAM, PC_SHARE_PIN };

struct pc_worker {
        /* --- owner only --- */
        struct pc_runq rq;
        struct pc_task *free_list;
        struct pc_runtime *rt;
        unsigned id;
        int cpu;
        int node;
        unsigned inject_countdown;
        unsigned tick;
        unsigned budget_left; /* tasks this loop iteration may still run */
        uint64_t rng;
        uint64_t idle_since; /* 0 while busy */
        uint64_t spin_ns;    /* adaptive idle: this worker's spin before parking */
        bool parked;         /* parked since it last found work */
        uint64_t spin_idle;  /* spin_ns when this idle period first parked */
        uint64_t last_ns;
        unsigned idle_clock; /* idle iterations since the clock was last read */
        unsigned busy_clock; /* busy iterations in a row, for their clock reads */
        bool last_busy;
        bool woke_queued; /* this pass skipped the clock for tasks an idle spell queued */
        bool stop_seen;
        bool quiet_published;
        bool elastic;    /* elastic mode: stealable queue in use */
        bool spin_pause; /* the idle spin pauses: the core is shared (see idle()) */
        bool poll_eager; /* a module waits on a near line: no clock read starts an idle spell */
        bool poll_pace;  /* a module waits on far lines: the idle spin pauses (idle()) */
        bool clock_fresh; /* the last pass read the clock */
        /* The mode it schedules in (rt->mode as it last looked), stored
         * when it changes; others read it to see a switch applied. */
        _Atomic int mode;
        uint64_t remote_min; /* cfg.remote_steal_min, kept hot */
        uint64_t wake_tail;  /* sq.tail at the last pc__backlog_wake() */
        bool sticky_turn; /* alternate sticky and stealable queues */
        struct pc_steal_order order;
        /* Tasks the owner claimed from its stealable queue, oldest first. */
        struct pc_task *batch[PC_OWNER_BATCH];
        unsigned batch_i, batch_n;
        /* timers: a binary min-heap on (deadline, seq) */
        struct pc_timer **theap;
        uint32_t tn, tcap;
        uint64_t tseq;
        /* pollers */
        struct pc_poller **pollers;
        unsigned npollers, cap_pollers;
        bool pollers_dirty;
        /* slabs the free list was carved from, freed at destroy */
        void **chunks;
        unsigned nchunks, cap_chunks;
        struct pc_local_stats ls;
        struct pc__shard_worker *shard; /* shard/ state; set before run, NULL without */
        struct pc__fiber_worker fib;    /* fiber.c: the running fiber, stack cache */
        /* What runs now, for the stall and crash reports (which read them
         * on this thread, from a signal handler): the task, timer or poll
         * function, and the poller; NULL between them. */
        const void *cur_fn;
        const struct pc_poller *cur_poller;
        struct pc__stall stall;
        struct pc__share share;
        struct pc__pack *pack; /* its node's (share.c); NULL: never roams */
        /* quiescence counters, owner-written, read by the coordinator */
        _Atomic uint64_t sent PC_ALIGNED; /* tasks pushed to other workers */
        _Atomic uint64_t recv;            /* tasks taken from the inbox */
        _Atomic uint64_t inj_recv;        /* tasks taken from the injector */
        _Atomic int quiet;                /* idle while stopping */

        /* --- written by other threads --- */
        _Atomic(struct pc_task *) inbox PC_ALIGNED;     /* LIFO, reversed on drain */
        _Atomic(struct pc_task *) remote_free PC_ALIGNED; /* our tasks freed elsewhere */
        _Atomic int sleeping PC_ALIGNED;
        int efd; /* eventfd the worker sleeps on */
        /* When a worker just out of a park itself woke it from its
         * current park (pc__now(), stored before the eventfd write; 0 =
         * none): adaptive idle's judge of whether the spin should have
         * lasted (worker.c). */
        _Atomic uint64_t woken_at;

        struct pc_stealq sq; /* elastic mode; its indexes have lines of their own */

        struct pc_pub_stats stats PC_ALIGNED;
        pthread_t thread;
        bool thread_started;
        _Atomic bool gone; /* its thread ended inside the loop (runtime.c) */
} PC_ALIGNED;

_Static_assert(offsetof(struct pc_worker, inbox) % PC_CACHE_LINE == 0,
               "inbox on its own line");
_Static_assert(offsetof(struct pc_worker, remote_free) - offsetof(struct pc_worker, inbox) >=
                       PC_CACHE_LINE,
               "remote frees do not share the inbox line");
_Static_assert(offsetof(struct pc_worker, sleeping) - offsetof(struct pc_worker, remote_free) >=
                       PC_CACHE_LINE,
               "sleep flag on its own line");

struct pc_runtime;

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

/* An agent: tasks sharing placement. target < 0 until the first spawn. */
struct pc__agent {
        _Atomic int target;
        _Atomic uint8_t used;
        uint8_t place;    /* enum pc_spawn_place */
        uint8_t affinity; /* PC_STICKY: the monitor leaves it alone */
};

struct pc_runtime {
        struct pc_config cfg;
        /* fiber.c: every fiber mapping, for destroy; mmap/munmap paths only */
        pthread_mutex_t fib_lock;
        struct pc_fiber *fib_all;
        const struct pc_policy *policy;
        const struct pc__launcher *launcher;
        void *launcher_ctx;
        char *cpus_str, *sysfs_root_str, *eal_args_str, *metrics_str; /* owned copies */
        struct pc__metrics *metrics; /* metrics.c: PERCORE_METRICS, NULL = off */
        unsigned nworkers;
        int cpus[PC_MAX_WORKERS];
        int nodes[PC_MAX_WORKERS];
        struct pc_topo *topo;
        struct pc_worker *workers[PC_MAX_WORKERS];
        struct pc__pack **packs; /* share.c: one per node with workers */
        unsigned npacks;

        /* Global injector: tasks from any thread, taken by any worker. */
        pthread_mutex_t inj_lock PC_ALIGNED;
        struct pc_task *inj_head, *inj_tail;
        uint64_t inj_pushed; /* under inj_lock */
        _Atomic uint64_t inj_len;
        _Atomic unsigned wake_rr;

        /* Elastic mode: who has stealable work, who searches, who sleeps. */
        _Atomic uint64_t stealable[PC_MAX_WORKERS / 64] PC_ALIGNED;
        _Atomic unsigned searching PC_ALIGNED;
        _Atomic unsigned nsleeping;

        _Atomic int stop_req PC_ALIGNED;
        _Atomic int done;
        _Atomic int running;
        _Atomic int failed; /* a worker thread ended inside its loop: -EOWNERDEAD */
        _Atomic int mode;   /* PC_MODE_*, pc_runtime_set_mode(); read every iteration */
        struct pc_task main_task;
        struct pc__module *modules; /* in the order they were added */

        /* Placement and agents (place.c). */
        _Atomic unsigned place_rr PC_ALIGNED;
        _Atomic unsigned agents_on[PC_MAX_WORKERS]; /* agents placed per worker */
        pthread_mutex_t agent_lock;
        int agent_hint, mon_hint; /* under agent_lock */
        _Atomic unsigned agent_count;
        struct pc__agent agents[PC_MAX_AGENTS + 1]; /* ids 1..PC_MAX_AGENTS */

        /* The load monitor thread. */
        pthread_t mon_thread;
        pthread_mutex_t mon_lock;
        pthread_cond_t mon_cond;
        bool mon_stop, mon_running;
        _Atomic uint64_t mon_samples, mon_retargets;

        /* stall.c: the reports of the current minute, every worker's. */
        _Atomic uint64_t stall_window PC_ALIGNED; /* CLOCK_MONOTONIC ns it began */
        _Atomic unsigned stall_reports;
        _Atomic uint64_t stall_unreported; /* since the last report printed */
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

/* runtime.c: a launched worker thread's body (names the thread, runs the
 * loop). */
void pc__worker_main(struct pc_worker *w);

/* worker.c */
void pc__worker_loop(struct pc_worker *w);
void pc__wake(struct pc_worker *w);

/* Adaptive idle's next spin after a park that a just-woken worker ended at
 * @woken_at (0: none, or the park timed out / never slept), for a worker
 * idle since @idle_since and running again at @now, whose spin was @spin
 * before the park halved it; @max and @min bound it (worker.c). Pure. */
uint64_t pc__spin_after_park(uint64_t spin, uint64_t max, uint64_t min, uint64_t idle_since,
                             uint64_t woken_at, uint64_t now);
int pc__worker_init(struct pc_worker *w, struct pc_runtime *rt, unsigned id, unsigned runq);
void pc__worker_fini(struct pc_worker *w);

/* runtime.c */
/* Append @m to @rt's modules. 0, or -EBUSY when @m claims the launch and
 * another module has, or the runtime's create already chose pthreads. */
int pc__module_add(struct pc_runtime *rt, struct pc__module *m);
/* Add @b to the process's backends; from a constructor, before main(). */
void pc__backend_register(struct pc__backend *b);

/* place.c */
int pc__monitor_start(struct pc_runtime *rt);
void pc__monitor_stop(struct pc_runtime *rt);
void pc__monitor_sample(struct pc_runtime *rt);

/* task.c */
int pc__spawn_to(struct pc_worker *self, unsigned dst, struct pc_task *t);
struct pc_task *pc__task_alloc_slow(struct pc_worker *w);
void pc__task_free_remote(struct pc_runtime *rt, struct pc_task *t);
int pc__inject(struct pc_runtime *rt, struct pc_task *t);
void pc__inject_list(struct pc_runtime *rt, struct pc_task *first, struct pc_task *last,
                     uint64_t n);

/* fiber.c */
/* A timer that pc__timers_drop() must not drop silently: a sleeping fiber's,
 * which it wakes with -ECANCELED instead. */
void pc__fiber_timer_fn(struct pc_timer *t, void *arg);
void pc__fiber_cancel(void *fiber_arg);
void pc__fiber_runtime_fini(struct pc_runtime *rt);
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

/* stall.c: the worker's stall timer, armed and disarmed on its thread as
 * its loop starts and ends. */
void pc__stall_start(struct pc_worker *w);
void pc__stall_stop(struct pc_worker *w);

/* Pin the calling thread to @cpu alone. Returns 0 or -errno. */
int pc__pin_self(int cpu);

/* runtime.c: while pc_runtime_stop_on_signals()'s thread takes SIGINT and
 * SIGTERM, block them in the calling thread, about to run a worker, saving
 * its mask in @old; returns whether it did. pc__signals_restore() puts
 * that mask back (a no-op when @blocked is false). */
bool pc__signals_block(sigset_t *old);
void pc__signals_restore(bool blocked, const sigset_t *old);

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
/* Every family: the runtime's and its workers', then the modules'. */
void pc__prom_runtime(struct pc_runtime *rt, struct pc__prom *p,
                      struct pc__metrics_prev *prev);

/* log.c */
void pc__log_set_level(enum pc_log_level level);
/* Route numa/'s messages through pc_log(), so PERCORE_LOG applies to them. */
void pc__log_hook_topo(void);

/* stats.c */

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

#endif /* PC_CORE_PVT_H */
