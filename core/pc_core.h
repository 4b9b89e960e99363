/* SPDX-License-Identifier: MIT */
/*
 * percore core/: the thread-per-core runtime.
 *
 * A user includes percore.h, which includes this header with the other
 * modules' (fibers, shard/, the topology). Read it top to bottom:
 * configuration, the runtime's lifecycle, tasks, timers, pollers, stats.
 *
 * Conventions. Functions that can fail return 0 or a negative errno;
 * pc_strerror() turns either into text. "Worker only" means the function
 * must be called from a task, timer or poller running on a worker thread;
 * from any other thread it returns -EPERM. Worker ids are dense, 0..N-1.
 */
#ifndef PC_CORE_H
#define PC_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How the library was built: which backends, which version (generated). */
#include "pc_config.h"
/* The layer below: topology, placement, CPU lists (numa/). */
#include "pc_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most workers one runtime runs (DPDK's RTE_MAX_LCORE). */
#define PC_MAX_WORKERS PC_TOPO_MAX_WORKERS
/** Highest CPU number + 1 that CPU lists and topologies accept. */
#define PC_MAX_CPUS PC_TOPO_MAX_CPUS

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/** How work may move between workers. */
enum pc_mode {
        PC_MODE_TPC,           /**< thread-per-core: nothing moves (default) */
        PC_MODE_ELASTIC,       /**< idle workers steal elastic tasks */
        PC_MODE_DETERMINISTIC, /**< one worker, seeded RNG: reproducible */
};

/** What an idle worker does. */
enum pc_idle {
        PC_IDLE_POLL,     /**< spin forever, never sleep */
        PC_IDLE_PARK,     /**< sleep as soon as there is nothing to do */
        PC_IDLE_ADAPTIVE, /**< spin idle_spin_us, then sleep (default) */
};

/** How an elastic thief orders its victims. */
enum pc_steal_tiers {
        PC_TIERS_NUMA, /**< nearest first: cache, node, socket, remote */
        PC_TIERS_FLAT, /**< random, for comparison */
};

/** Where the machine's topology comes from. */
enum pc_topology_src {
        PC_TOPO_SYSFS,
        PC_TOPO_HWLOC,
};

/** Log levels, most severe first (numa/'s messages use the same values). */
enum pc_log_level {
        PC_LOG_ERROR = PC_TOPO_LOG_ERROR,
        PC_LOG_WARN = PC_TOPO_LOG_WARN,
        PC_LOG_INFO = PC_TOPO_LOG_INFO,
        PC_LOG_DEBUG = PC_TOPO_LOG_DEBUG,
};

/**
 * Runtime configuration. Start from pc_config_init(), set what the program
 * wants, then pc_runtime_create() applies the PERCORE_* environment on top
 * (so an operator can change a setting without recompiling) and validates
 * the result. Strings are copied by pc_runtime_create().
 */
struct pc_config {
        enum pc_mode mode;               /**< PERCORE_MODE */
        unsigned workers;                /**< PERCORE_WORKERS; 0 = one per usable CPU */
        const char *cpus;                /**< PERCORE_CPUS list "0-3,8"; NULL = affinity */
        enum pc_placement placement;     /**< PERCORE_PLACEMENT (pc_topo.h) */
        bool pin;                        /**< PERCORE_PIN */
        unsigned steal_batch;            /**< PERCORE_STEAL_BATCH, 1..1024 */
        enum pc_steal_tiers steal_tiers; /**< PERCORE_STEAL_TIERS */
        unsigned remote_steal_min;       /**< PERCORE_REMOTE_STEAL_MIN */
        enum pc_idle idle;               /**< PERCORE_IDLE */
        unsigned idle_spin_us;           /**< PERCORE_IDLE_SPIN_US */
        /**
         * PERCORE_OVERPROVISIONED: the run shares its CPUs with other busy
         * threads (a laptop, a VM shared with the load generator).
         *
         * false (the default): thread-per-core. Each worker stays pinned to
         * its CPU and runs SCHED_OTHER, whatever else runs there.
         *
         * true: a pinned worker that keeps waiting for its CPU (another
         * thread runs there) may run on every CPU of the run on its NUMA
         * node, as SCHED_BATCH, parking at once when idle, until its CPU is
         * calm again; while workers of a node roam they leave the other
         * threads as many whole CPUs as those use and take short turns on
         * the rest. A worker alone on its CPU never moves, nor does its
         * work: queues, connections and shards stay where they are. A
         * service may read the switch (pc_runtime_config()) for sharing of
         * its own, as pc-kv lends an idle worker's shard to the others.
         * Unpinned runs (@pin false) have nothing to roam.
         */
        bool overprovisioned;
        unsigned monitor_ms;             /**< PERCORE_MONITOR_MS, 0 = off */
        uint64_t seed;                   /**< PERCORE_SEED */
        const char *sysfs_root;          /**< PERCORE_SYSFS_ROOT */
        enum pc_topology_src topology;   /**< PERCORE_TOPOLOGY */
        const char *eal_args;            /**< PERCORE_EAL_ARGS */
        enum pc_log_level log_level;     /**< PERCORE_LOG */
        bool stats;                      /**< PERCORE_STATS: table at exit */
        unsigned runq_size; /**< local ring slots per worker, power of two */
        unsigned fiber_stack_kb;         /**< PERCORE_FIBER_STACK_KB, 16..65536 */
        /** PERCORE_STALL_MS: report a task, poller or fiber that keeps its
         * worker longer than this (CPU time), 0..3600000; 0 = off. */
        unsigned stall_ms;
        /** PERCORE_METRICS: "ADDR:PORT" ("127.0.0.1:9100", "[::1]:9100"; port
         * 0 = any free one) serving GET /metrics; NULL = off. */
        const char *metrics;
        /** Scheduling policy; NULL = the built-in one of @mode. */
        const struct pc_policy *policy;
};

/**
 * Fill @cfg with the defaults of DESIGN.md's table.
 * Any thread. Cannot fail.
 */
void pc_config_init(struct pc_config *cfg);

/**
 * Apply the PERCORE_* environment variables to @cfg. A variable that is
 * unset leaves its field alone. Strings in @cfg then point into the
 * environment.
 *
 * Returns 0, or -EINVAL for the first bad value, or for a variable that
 * is no longer read (PERCORE_SHARED, PERCORE_PACK, PERCORE_SCHED: the
 * message says what replaced it); @err (when not NULL) receives a message
 * naming the variable and the accepted values.
 * Any thread, but not concurrently with setenv().
 */
int pc_config_from_env(struct pc_config *cfg, char *err, size_t errlen);

/**
 * Check @cfg for values out of range (everything pc_config_from_env()
 * checks for the environment, for values a program set directly).
 * Returns 0 or -EINVAL with a message in @err. Any thread.
 */
int pc_config_validate(const struct pc_config *cfg, char *err, size_t errlen);

/**
 * Write @cfg as one line of "key=value" pairs into @buf.
 * Returns the length snprintf() would have written. Any thread.
 */
int pc_config_format(const struct pc_config *cfg, char *buf, size_t len);

/** Name of a mode ("tpc", "elastic", "deterministic"). */
const char *pc_mode_name(enum pc_mode mode);

/* pc_cpulist_parse(), which reads PERCORE_CPUS, is numa/'s (pc_topo.h). */

/* ------------------------------------------------------------------------ */
/* Errors and logging                                                       */
/* ------------------------------------------------------------------------ */

/** Text for a 0 / -errno code. Any thread; the string is static. */
const char *pc_strerror(int err);

/**
 * Log one line to stderr ("percore: LEVEL: text") when @level is at or
 * above the runtime's PERCORE_LOG level. Any thread; lines are not torn.
 */
void pc_log(enum pc_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------------ */
/* Runtime                                                                  */
/* ------------------------------------------------------------------------ */

struct pc_runtime;

/** A task body: runs to completion on one worker. */
typedef void (*pc_task_fn)(void *arg);

/**
 * Create a runtime: apply the environment to a copy of @cfg (NULL means
 * defaults), validate it, choose the workers' CPUs and allocate their
 * state. No thread starts until pc_runtime_run(). Logs the effective
 * configuration once at info level.
 *
 * Errors: -EINVAL for a bad setting (logged, naming the variable),
 * -ENOMEM.
 * Not from a worker thread.
 */
int pc_runtime_create(const struct pc_config *cfg, struct pc_runtime **out);

/**
 * Start the workers and run @main_fn(@arg) as a task on worker 0. The
 * calling thread becomes worker 0 (pinned to its CPU) until the call
 * returns; its affinity is restored then. It keeps its name, so that ps
 * and pgrep still show the program's; the other workers' threads are
 * named pc-worker-N.
 *
 * Returns after pc_runtime_stop() once every queued task has run: stopping
 * drains the run queues on every worker (tasks spawned while draining run
 * too) and drops pending timers. May be called again after it returned.
 *
 * A worker thread that ends inside its loop (a task calls pthread_exit(),
 * or the thread is cancelled) fails the run: the other workers leave once
 * their queues are empty, without the drain, and the call returns
 * -EOWNERDEAD, as does every later call (destroy the runtime; tasks still
 * queued are dropped). A worker thread that cannot start fails the call
 * at once with the launcher's error, the workers that did start stopped.
 * A fatal signal on a worker (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
 * ends the process of that signal after a line on stderr naming the
 * worker and the function it ran, and a backtrace.
 *
 * Errors: -EINVAL (NULL argument), -EALREADY while running,
 * -EAGAIN/-ENOMEM when a worker thread cannot start, -EINVAL when a CPU
 * cannot be pinned, -EOWNERDEAD when a worker thread ended (above).
 * The thread that created the runtime, not a worker.
 */
int pc_runtime_run(struct pc_runtime *rt, pc_task_fn main_fn, void *arg);

/**
 * Ask the runtime to stop: new external submissions fail with -ESHUTDOWN,
 * timers stop firing, every queued task still runs, then
 * pc_runtime_run() returns. Idempotent. Any thread, and async-signal-safe.
 */
void pc_runtime_stop(struct pc_runtime *rt);

/**
 * Make SIGINT and SIGTERM call pc_runtime_stop(@rt). The signals are taken
 * by a thread of the runtime's (pc-signals, started by the first call) and
 * blocked in the workers while they run, so a signal never interrupts a
 * worker's loop, and its stop comes at once even where a worker never
 * makes a system call (a polled device). A later call moves the signals to
 * another @rt; pc_runtime_destroy() of the runtime named last puts the old
 * handlers back and ends the thread. Returns 0 (also when the thread could
 * not start: a warning is logged and the handler runs on whichever thread
 * the signal lands), -EINVAL (@rt NULL) or -errno from sigaction(). Main
 * thread, before pc_runtime_run().
 */
int pc_runtime_stop_on_signals(struct pc_runtime *rt);

/**
 * Stop gracefully: every module stops taking new work on every worker (the
 * network backends close their listeners: pc_tcp_listener_close()), open
 * connections are served on until every module says nothing is left on
 * any worker (each worker asks its modules every millisecond), or until
 * @deadline_ns nanoseconds from this call have passed (0: at the first
 * look); then the runtime stops as pc_runtime_stop() makes it (fibers
 * waiting on a connection get -ECANCELED). A drain asked for before
 * pc_runtime_run() begins when the run does; it applies to one run.
 * Uses atomics and the workers' wake-up only: async-signal-safe, like
 * pc_runtime_stop().
 * Errors: -EINVAL (@rt NULL), -ESHUTDOWN (a stop or a drain was already
 * asked for). Any thread, worker, fiber or signal handler.
 */
int pc_runtime_drain(struct pc_runtime *rt, uint64_t deadline_ns);

/** True once pc_runtime_drain() was called in this run: a service may
 * then end its idle keep-alive connections. Any thread. */
bool pc_runtime_draining(const struct pc_runtime *rt);

/**
 * pc_runtime_stop_on_signals(), except that SIGTERM drains
 * (pc_runtime_drain(@rt, @deadline_ns)); a second SIGTERM, or SIGINT,
 * stops at once. A later pc_runtime_stop_on_signals() makes SIGTERM stop
 * again. Errors: those of pc_runtime_stop_on_signals(), -EINVAL for a
 * @deadline_ns of 0. Main thread, before pc_runtime_run().
 */
int pc_runtime_drain_on_signals(struct pc_runtime *rt, uint64_t deadline_ns);

/**
 * Free the runtime. Must not be running. Tasks still queued (only possible
 * if pc_runtime_run() was never called) are dropped without running;
 * their caller-owned task structs are left untouched. Not from a worker.
 */
void pc_runtime_destroy(struct pc_runtime *rt);

/** Number of workers. Any thread. */
unsigned pc_runtime_workers(const struct pc_runtime *rt);

/**
 * The TCP port PERCORE_METRICS listens on (the one chosen, for port 0).
 * The socket is bound by pc_runtime_create(); GET /metrics is answered
 * while pc_runtime_run() runs. Returns the port, -ENOENT when metrics are
 * off, -EINVAL for NULL. Any thread.
 */
int pc_runtime_metrics_port(const struct pc_runtime *rt);

/** CPU worker @w is placed on, or -EINVAL. Any thread. */
int pc_runtime_worker_cpu(const struct pc_runtime *rt, unsigned w);

/** The effective configuration. Any thread; valid until destroy. */
const struct pc_config *pc_runtime_config(const struct pc_runtime *rt);

/** The runtime the calling worker belongs to, or NULL off-worker. */
struct pc_runtime *pc_runtime_current(void);

/** True once pc_runtime_stop() was called (for long-running tasks). */
bool pc_runtime_stopping(const struct pc_runtime *rt);

/**
 * Submit fn(arg) from any thread, worker or not, through the global
 * injector: some worker runs it. Allocates the task.
 * Errors: -EINVAL, -ENOMEM, -ESHUTDOWN after pc_runtime_stop(). Any thread.
 */
int pc_runtime_inject(struct pc_runtime *rt, pc_task_fn fn, void *arg);

/** Id of the calling worker, or -1 when the caller is not a worker. */
int pc_worker_id(void);

/**
 * The next value of the calling worker's random generator (xorshift),
 * seeded from PERCORE_SEED and the worker id, so a deterministic run
 * draws the same sequence every time. Worker only; 0 off-worker.
 */
uint64_t pc_random(void);

/* ------------------------------------------------------------------------ */
/* Tasks                                                                    */
/* ------------------------------------------------------------------------ */

/** Task affinity: sticky tasks never leave their worker. */
#define PC_STICKY 0x1u
/** Task affinity: may be stolen in elastic mode (sticky in tpc mode). */
#define PC_ELASTIC 0x2u

/**
 * A task object, 64 bytes. pc_spawn() takes one from the worker's free
 * list; the intrusive forms use one the caller owns (zero allocation).
 * Fields are private; initialise with pc_task_init().
 */
struct pc_task {
        struct pc_task *next;
        pc_task_fn fn;
        void *arg;
        uint16_t owner; /* worker whose free list it belongs to */
        uint16_t flags;
        uint32_t pad0;
        uint64_t reserved[4];
};

/** Prepare a caller-owned task. @flags: PC_STICKY or PC_ELASTIC (0 = mode default). */
void pc_task_init(struct pc_task *t, pc_task_fn fn, void *arg, unsigned flags);

/**
 * Queue fn(arg) on the calling worker (FIFO with what it queued before).
 * No lock, syscall or allocation unless the worker's free list is empty.
 * Errors: -EINVAL (fn NULL), -ENOMEM, -EPERM off-worker. Worker only.
 */
int pc_spawn(pc_task_fn fn, void *arg);

/**
 * Queue fn(arg) on worker @worker. In thread-per-core mode it runs there
 * and nowhere else; in elastic mode, like any task of the mode's default
 * affinity, an idle worker may steal it (pc_spawn_ex() with PC_STICKY and
 * PC_SPAWN_WORKER keeps it there). To the calling worker itself this is
 * pc_spawn(). Tasks one worker sends to another run in the order they
 * were sent.
 * Errors: -EINVAL (fn NULL or no such worker), -ENOMEM, -EPERM off-worker.
 * Worker only.
 */
int pc_spawn_on(unsigned worker, pc_task_fn fn, void *arg);

/**
 * Intrusive forms of pc_spawn() and pc_spawn_on(): @t is the caller's, and
 * must stay valid until its function starts; it may be reused (or freed)
 * from inside that function on. Errors as above. Worker only.
 */
int pc_spawn_task(struct pc_task *t);
int pc_spawn_task_on(unsigned worker, struct pc_task *t);

/**
 * Intrusive form of pc_runtime_inject(). Errors: -EINVAL, -ESHUTDOWN.
 * Any thread.
 */
int pc_runtime_inject_task(struct pc_runtime *rt, struct pc_task *t);

/* ------------------------------------------------------------------------ */
/* Placement, agents and policies                                           */
/* ------------------------------------------------------------------------ */

/** Where pc_spawn_ex() puts a task. */
enum pc_spawn_place {
        PC_SPAWN_LOCAL,        /**< the calling worker (default) */
        PC_SPAWN_ROUND_ROBIN,  /**< the next worker in turn */
        PC_SPAWN_LEAST_LOADED, /**< least load: agents assigned + tasks queued */
        PC_SPAWN_WORKER,       /**< the worker in pc_spawn_opts.worker */
        PC_SPAWN_POLICY,       /**< ask the runtime's policy (pc_policy.place) */
};

/** Options of pc_spawn_ex(); zero-initialised means pc_spawn(). */
struct pc_spawn_opts {
        unsigned affinity;         /**< PC_STICKY, PC_ELASTIC, or 0 = mode default */
        enum pc_spawn_place place; /**< ignored when @agent is set */
        unsigned worker;           /**< for PC_SPAWN_WORKER */
        int agent;                 /**< 0 = none, else an id from pc_agent_create() */
};

/**
 * Spawn fn(arg) with explicit affinity and placement. With an agent, the
 * task goes where the agent is placed: the first spawn places the agent by
 * the agent's policy, later ones follow it until the load monitor
 * retargets it (future spawns only: queued work never moves).
 * Least-loaded scans the workers from a rotating start, so equal loads
 * are served round-robin.
 * Returns the worker the task was queued on (>= 0), or -EINVAL (fn NULL,
 * bad place, affinity or worker, unknown agent), -ENOMEM, -EPERM
 * off-worker. Worker only.
 */
int pc_spawn_ex(pc_task_fn fn, void *arg, const struct pc_spawn_opts *opts);

/**
 * Create an agent: a stream of tasks that share placement (a connection,
 * an actor, a client). @place is how it is placed on its first spawn
 * (not PC_SPAWN_WORKER); @affinity PC_STICKY keeps the load monitor from
 * moving it. Returns 0 and an id > 0 in *@id, -EINVAL, or -ENOSPC when
 * PC_MAX_AGENTS exist. Any thread.
 */
#define PC_MAX_AGENTS 4096
int pc_agent_create(struct pc_runtime *rt, enum pc_spawn_place place, unsigned affinity,
                    int *id);

/** Forget an agent; its queued tasks still run. 0 or -EINVAL. Any thread. */
int pc_agent_destroy(struct pc_runtime *rt, int id);

/** The worker an agent's next task goes to, -ENOENT if not placed yet,
 * -EINVAL for an unknown agent. Any thread. */
int pc_agent_worker(const struct pc_runtime *rt, int id);

struct pc_steal_order;

/**
 * A scheduling policy, the way a user swaps the scheduler. The built-in
 * modes are instances (pc_policy_builtin()); a program may plug in its own
 * through pc_config.policy. Callbacks run on workers; NULL means the
 * built-in behaviour.
 */
struct pc_policy {
        const char *name;
        /** Elastic tasks go to stealable queues (false: everything stays). */
        bool stealing;
        /** Worker for a PC_SPAWN_POLICY task or a new agent of that place;
         * return < 0 to place locally. */
        int (*place)(void *ctx, const struct pc_runtime *rt, unsigned from);
        /** Fill worker @w's victims, nearest first (computed once at
         * create); return 0 or < 0 for the numa tiers. */
        int (*steal_order)(void *ctx, const struct pc_runtime *rt, unsigned w,
                           struct pc_steal_order *out);
        /** Worker @w is idle: return true to let it try to steal. */
        bool (*on_idle)(void *ctx, unsigned w);
        void *ctx;
};

/**
 * Switch a runtime between thread-per-core and elastic mode while it runs
 * (or before). Each worker applies the switch at the end of its current
 * loop iteration (an idle one within 16 iterations, as it next reads the
 * clock; a parked one is woken for it), before it would steal again. To PC_MODE_TPC: thieves
 * stop, and the tasks a worker queued for them stay on that worker, to
 * run there; to PC_MODE_ELASTIC: tasks spawned from then on without
 * PC_STICKY may be stolen, those queued before stay where they are. No
 * task is lost or run twice either way. This overrides the `stealing` of
 * a policy given in pc_config.policy; its callbacks still apply.
 * Errors: -EINVAL (NULL, or @mode neither PC_MODE_TPC nor
 * PC_MODE_ELASTIC), -ENOTSUP for a deterministic runtime. Any thread.
 */
int pc_runtime_set_mode(struct pc_runtime *rt, enum pc_mode mode);

/**
 * The mode asked for last: the configuration's (PC_MODE_ELASTIC for a
 * policy that steals), or pc_runtime_set_mode()'s. PC_MODE_TPC for NULL.
 * Any thread.
 */
enum pc_mode pc_runtime_mode(const struct pc_runtime *rt);

/** The policy a built-in mode is made of. Any thread; static storage. */
const struct pc_policy *pc_policy_builtin(enum pc_mode mode);

/** Runtime-wide counters of placement and the load monitor. */
struct pc_runtime_stats {
        uint64_t monitor_samples;   /**< intervals the monitor looked */
        uint64_t monitor_retargets; /**< agents it moved (future spawns) */
        uint64_t agents;            /**< agents alive */
};

/** Copy the runtime-wide counters. 0 or -EINVAL. Any thread. */
int pc_stats_runtime(const struct pc_runtime *rt, struct pc_runtime_stats *out);

/* ------------------------------------------------------------------------ */
/* Timers                                                                   */
/* ------------------------------------------------------------------------ */

struct pc_timer;
/** A timer callback: runs on the worker that started the timer. */
typedef void (*pc_timer_fn)(struct pc_timer *t, void *arg);

/** A caller-owned timer. Fields are private; use pc_timer_init(). */
struct pc_timer {
        uint64_t deadline_ns;
        uint64_t period_ns;
        uint64_t seq;
        pc_timer_fn fn;
        void *arg;
        uint32_t heap_idx; /* UINT32_MAX when not armed */
        int32_t worker;
};

/** Prepare @t. Any thread. */
void pc_timer_init(struct pc_timer *t, pc_timer_fn fn, void *arg);

/**
 * Arm @t to fire @delay_ns from now on the calling worker, then every
 * @period_ns if that is not 0. Re-arming an armed timer reschedules it.
 * A timer never fires early; timers due at the same time fire in the
 * order they were started. Timers are checked every 32 tasks, so a busy
 * worker still fires them on time.
 * Errors: -EINVAL (NULL), -ENOMEM (timer heap growth), -EXDEV (armed on
 * another worker), -ESHUTDOWN (runtime stopping), -EPERM off-worker.
 * Worker only.
 */
int pc_timer_start(struct pc_timer *t, uint64_t delay_ns, uint64_t period_ns);

/**
 * Disarm @t. Callable from its own callback (stops a periodic timer).
 * Errors: -ENOENT (not armed), -EXDEV (armed on another worker), -EPERM.
 * Worker only.
 */
int pc_timer_cancel(struct pc_timer *t);

/** Whether @t is armed. Worker that armed it. */
bool pc_timer_armed(const struct pc_timer *t);

/** CLOCK_MONOTONIC in nanoseconds. Any thread. */
uint64_t pc_now_ns(void);

/* ------------------------------------------------------------------------ */
/* Pollers                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * A poller: a per-worker callback the reactor calls every iteration (the
 * hook network RX, io_uring completions and mailboxes use).
 */
struct pc_poller_ops {
        const char *name;
        /** Do pending work; return how many items were handled (0 = idle). */
        unsigned (*poll)(void *arg);
        /**
         * The worker is about to sleep (its sleeping flag is already
         * published): return false if work is pending or may arrive without
         * a wake-up, true to allow sleep. NULL = never blocks sleep.
         */
        bool (*prepare_sleep)(void *arg);
        /** The worker woke up after prepare_sleep() allowed it. May be NULL. */
        void (*after_sleep)(void *arg);
        /**
         * Sleep the worker inside this poller instead of in poll(2) on its
         * eventfd, so that the poller's own events end the sleep without a
         * second system call (io_uring waits in io_uring_enter). Called
         * after every poller's prepare_sleep() allowed sleep. It must return
         * once @wake_fd (the worker's eventfd, written by pc_worker_wake()
         * and by every producer of the worker's work) becomes readable
         * (it need not read it), once its own events arrive, or at
         * @deadline_ns (CLOCK_MONOTONIC, 0 = none). Returns 1 when woken, 0
         * on timeout or a spurious return, and a negative errno when it
         * cannot sleep the worker: then the worker sleeps in poll(2) on
         * @wake_fd, so the poller's events must signal that eventfd by
         * then. The first poller registered with a sleep op sleeps the
         * worker; NULL = this poller does not. On the worker's thread only,
         * as every op.
         */
        int (*sleep)(void *arg, int wake_fd, uint64_t deadline_ns);
};

struct pc_poller;

/**
 * Register a poller on the calling worker. @ops must outlive it.
 * Errors: -EINVAL, -ENOMEM, -EPERM off-worker. Worker only.
 */
int pc_poller_register(const struct pc_poller_ops *ops, void *arg, struct pc_poller **out);

/**
 * Unregister and free @p; safe from inside its own poll(). Returns 0,
 * -EINVAL, -EXDEV (another worker's poller). The owning worker only.
 */
int pc_poller_unregister(struct pc_poller *p);

/**
 * Wake worker @w if it sleeps (for pollers whose events arrive from other
 * threads). Costs a syscall only when the worker is asleep. Any thread.
 */
void pc_worker_wake(struct pc_runtime *rt, unsigned w);

/* ------------------------------------------------------------------------ */
/* Stats                                                                    */
/* ------------------------------------------------------------------------ */

/** One worker's counters; each is written by its worker only. */
struct pc_worker_stats {
        unsigned worker;
        int cpu;
        uint64_t tasks_run;    /**< tasks executed */
        uint64_t tasks_remote; /**< tasks received from other workers */
        uint64_t tasks_inject; /**< tasks taken from the global injector */
        uint64_t timers_fired;
        uint64_t polls;      /**< poller items handled */
        uint64_t iterations; /**< reactor loop iterations */
        uint64_t parks;      /**< times the worker went to sleep */
        uint64_t wakeups;    /**< wake-up syscalls other threads sent it */
        uint64_t queue_depth; /**< tasks queued locally at the last sample */
        uint64_t busy_ns;    /**< time in iterations that found work */
        uint64_t idle_ns;    /**< time idle: spinning or asleep */
        uint64_t spin_ns;    /**< adaptive idle: the spin the next idle
                                  period starts with (see PERCORE_IDLE_SPIN_US) */
        /* elastic mode */
        uint64_t stolen;         /**< tasks this worker stole from others */
        uint64_t steal_attempts; /**< victims tried */
        uint64_t steal_failures; /**< tries that took nothing */
        uint64_t searches;       /**< times it went looking for work */
        uint64_t stalls; /**< tasks, pollers or fibers that ran past PERCORE_STALL_MS */
        bool spin_pause; /**< its idle spin pauses each iteration: another online
                              hardware thread shares its core (SMT), or it is
                              not pinned; fixed at pc_runtime_create() */
        uint64_t roams; /**< times the pinned worker, waiting for its CPU, was let
                             run on its node's CPUs (PERCORE_OVERPROVISIONED); counts
                             across runs, like the counters above */
        bool roaming;   /**< it may run on its node's CPUs now
                             (PERCORE_OVERPROVISIONED) */
        bool packed;    /**< roaming, it runs on fewer of them: the rest are left
                             to other threads that use them (PERCORE_OVERPROVISIONED) */
        uint64_t yields; /**< busy turns it ended to let a worker packed on
                              the same CPUs run (PERCORE_OVERPROVISIONED) */
};

/**
 * Copy up to @n workers' counters into @out. Counters are read without
 * stopping the workers, so each is exact but they are not one instant.
 * Returns the number of records written, or -EINVAL. Any thread.
 */
int pc_stats_snapshot(const struct pc_runtime *rt, struct pc_worker_stats *out, unsigned n);

/**
 * Copy the steal matrix: @m[src * N + dst] counts tasks worker dst took
 * from src, for src < N (steals), and for src == N from the global
 * injector. @m holds (N + 1) * N entries, N = pc_runtime_workers().
 * Returns 0, -EINVAL, or -ENOSPC when @len is too small. Any thread.
 */
int pc_stats_steals(const struct pc_runtime *rt, uint64_t *m, size_t len);

/** Print the per-worker table PERCORE_STATS=1 prints at exit. Any thread. */
void pc_stats_print(const struct pc_runtime *rt, FILE *f);

/**
 * The machine's topology the runtime placed its workers on (numa/,
 * pc_topo.h). Any thread; valid until destroy.
 */
struct pc_topo;
const struct pc_topo *pc_runtime_topo(const struct pc_runtime *rt);

/** NUMA node of worker @w's CPU, or -EINVAL. Any thread. */
int pc_runtime_worker_node(const struct pc_runtime *rt, unsigned w);

#ifdef __cplusplus
}
#endif

#endif /* PC_CORE_H */
