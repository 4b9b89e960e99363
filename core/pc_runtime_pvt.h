/* SPDX-License-Identifier: MIT */
/*
 * The runtime's and its workers' state, as core/ lays it out, with the
 * tunables that size it. Modules read a few fields through the module
 * interface (pc_module_pvt.h: a worker's id, runtime and eventfd; the
 * runtime's configuration, CPUs and workers); the rest is core's.
 */
#ifndef PC_RUNTIME_PVT_H
#define PC_RUNTIME_PVT_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "pc_core.h"
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
#define PC_DRAIN_TICK_NS 1000000 /* pc_runtime_drain(): how often a worker asks its modules */
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

struct pc_poller {
        const struct pc_poller_ops *ops;
        void *arg;
        unsigned worker;
        bool dead;     /* unregistered during a poll pass; freed after it */
        uint8_t hints; /* PC__POLL_* (pc__poller_hint()) */
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
        bool drain_seen; /* this run's pc_runtime_drain() began here (drain.c) */
        bool quiet_published;
        bool elastic;    /* elastic mode: stealable queue in use */
        bool spin_pause; /* the idle spin pauses: the core is shared (see idle()) */
        uint8_t poll_hints; /* PC__POLL_*: the union of its live pollers' hints */
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
        struct pc__fiber_worker fib; /* fiber.c: the running fiber, stack cache */
        /* What runs now, for the stall and crash reports (which read them
         * on this thread, from a signal handler): the task, timer or poll
         * function, and the poller; NULL between them. */
        const void *cur_fn;
        const struct pc_poller *cur_poller;
        struct pc__stall stall;
        struct pc__share share;
        struct pc__pack *pack; /* its node's (share.c); NULL: never roams */
        struct pc_timer drain_tick; /* drain.c: looks at the modules while draining */
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


struct pc__launcher;
struct pc__metrics;
struct pc__module;

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
        _Atomic int drain_req; /* PC__DRAIN_*, pc_runtime_drain(); read beside mode */
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

        /* drain.c: when the drain ends at the latest (CLOCK_MONOTONIC ns),
         * how many workers began it, and what each still serves
         * (UINT_MAX until it looked after every worker began). */
        _Atomic uint64_t drain_at PC_ALIGNED;
        _Atomic unsigned drain_began;
        _Atomic unsigned drain_left[PC_MAX_WORKERS];

        /* stall.c: the reports of the current minute, every worker's. */
        _Atomic uint64_t stall_window PC_ALIGNED; /* CLOCK_MONOTONIC ns it began */
        _Atomic unsigned stall_reports;
        _Atomic uint64_t stall_unreported; /* since the last report printed */
};

#endif /* PC_RUNTIME_PVT_H */
