/* SPDX-License-Identifier: MIT */
/*
 * The runtime's lifecycle: create (configuration, CPU choice, the backends
 * that attach at create, worker state), run (worker threads pinned to their
 * CPUs, the caller becoming worker 0), stop (async-signal-safe), destroy.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_core_pvt.h"

static char *dup_or_null(const char *s)
{
        return s ? strdup(s) : NULL;
}

static bool in_set(const uint64_t *set, int c)
{
        return set[c / 64] >> (c % 64) & 1;
}

static int load_topology(struct pc_runtime *rt, const uint64_t *allowed, char *err,
                         size_t errlen)
{
        int rc;

        if (rt->cfg.topology == PC_TOPO_HWLOC)
                rc = pc_topo_load_hwloc(NULL, allowed, &rt->topo);
        else
                rc = pc_topo_load(rt->cfg.sysfs_root, allowed, &rt->topo);
        if (rc)
                snprintf(err, errlen, "cannot read the CPU topology from %s: %s",
                         rt->cfg.topology == PC_TOPO_HWLOC ? "hwloc" : rt->cfg.sysfs_root,
                         pc_strerror(rc));
        return rc;
}

/*
 * Choose each worker's CPU with numa/: the usable CPUs are PERCORE_CPUS or
 * the process's affinity mask (on another machine's tree, every online CPU
 * of it), placed compact or spread, physical cores before SMT siblings.
 * Pinned workers need a CPU each, and a CPU this process may run on.
 */
static int choose_cpus(struct pc_runtime *rt, char *err, size_t errlen)
{
        uint64_t affinity[PC_MAX_CPUS / 64], want[PC_MAX_CPUS / 64];
        const uint64_t *allowed = NULL;
        bool this_machine = rt->cfg.topology == PC_TOPO_HWLOC ||
                            strcmp(rt->cfg.sysfs_root, "/sys") == 0;
        unsigned nworkers;
        char a[256];
        int rc;

        rc = pc_topo_affinity(affinity);
        if (rc < 0) {
                snprintf(err, errlen, "sched_getaffinity: %s", pc_strerror(rc));
                return rc;
        }
        pc_cpulist_format(affinity, PC_MAX_CPUS, a, sizeof(a));
        if (rt->cfg.cpus) {
                if (pc_cpulist_parse(rt->cfg.cpus, want, PC_MAX_CPUS) < 0) {
                        snprintf(err, errlen, "PERCORE_CPUS='%s' is not a valid CPU list",
                                 rt->cfg.cpus);
                        return -EINVAL;
                }
                for (int c = 0; c < PC_MAX_CPUS && rt->cfg.pin && this_machine; c++) {
                        if (in_set(want, c) && !in_set(affinity, c)) {
                                snprintf(err, errlen,
                                         "PERCORE_CPUS lists CPU %d, which this process may "
                                         "not run on (allowed: %s); set PERCORE_PIN=0 to "
                                         "run unpinned",
                                         c, a);
                                return -EINVAL;
                        }
                }
                allowed = want;
        } else if (this_machine) {
                allowed = affinity;
        }
        rc = load_topology(rt, allowed, err, errlen);
        if (rc)
                return rc;
        if (rt->topo->nusable == 0) {
                snprintf(err, errlen, "no usable CPU (PERCORE_CPUS and the affinity mask)");
                return -EINVAL;
        }

        nworkers = rt->cfg.workers ? rt->cfg.workers : rt->topo->nusable;
        if (rt->cfg.mode == PC_MODE_DETERMINISTIC)
                nworkers = 1;
        if (nworkers > PC_MAX_WORKERS)
                nworkers = PC_MAX_WORKERS;
        if (nworkers > rt->topo->nusable && rt->cfg.pin) {
                snprintf(err, errlen,
                         "%u workers (PERCORE_WORKERS) need %u CPUs but only %u are usable; "
                         "set PERCORE_PIN=0 to oversubscribe",
                         nworkers, nworkers, rt->topo->nusable);
                return -EINVAL;
        }
        rc = pc_topo_place(rt->topo, nworkers, rt->cfg.placement, rt->cfg.pin, rt->cpus);
        if (rc) {
                snprintf(err, errlen, "cannot place %u workers: %s", nworkers,
                         pc_strerror(rc));
                return rc;
        }
        for (unsigned i = 0; i < nworkers; i++) {
                /* A tree describing another machine can name CPUs this one
                 * lacks: such a run must be unpinned. */
                if (rt->cfg.pin && !in_set(affinity, rt->cpus[i])) {
                        snprintf(err, errlen,
                                 "worker %u would be pinned to CPU %d, which this process "
                                 "may not run on (allowed: %s); set PERCORE_PIN=0 to run "
                                 "unpinned",
                                 i, rt->cpus[i], a);
                        return -EINVAL;
                }
                rt->nodes[i] = pc_topo_node_of_cpu(rt->topo, rt->cpus[i]);
        }
        rt->nworkers = nworkers;
        return 0;
}

/* An order a policy computed must list every other worker exactly once. */
static bool order_valid(const struct pc_runtime *rt, unsigned w, const struct pc_steal_order *o)
{
        bool seen[PC_MAX_WORKERS] = {false};

        if (o->ntiers > PC_TOPO_MAX_TIERS || o->tier_start[0] != 0 ||
            o->tier_start[o->ntiers] != rt->nworkers - 1)
                return false;
        for (unsigned t = 0; t < o->ntiers; t++)
                if (o->tier_start[t] > o->tier_start[t + 1])
                        return false;
        for (unsigned k = 0; k + 1 < rt->nworkers; k++) {
                unsigned v = o->victims[k];
                if (v >= rt->nworkers || v == w || seen[v])
                        return false;
                seen[v] = true;
        }
        return true;
}

/* Each worker's steal order: the policy's, the numa tiers, or flat. */
static void steal_orders(struct pc_runtime *rt)
{
        const struct pc_policy *p = rt->policy;

        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct pc_worker *w = rt->workers[i];
                if (p->steal_order && p->steal_order(p->ctx, rt, i, &w->order) == 0) {
                        if (order_valid(rt, i, &w->order))
                                continue;
                        pc_log(PC_LOG_WARN, "policy %s: steal order of worker %u is not a "
                                            "permutation of the other workers; using the "
                                            "default", p->name, i);
                }
                if (rt->cfg.steal_tiers == PC_TIERS_NUMA &&
                    pc_topo_steal_tiers(rt->topo, rt->cpus, rt->nworkers, i, &w->order) == 0)
                        continue;
                pc__steal_order_flat(rt, i, &w->order);
        }
}

/*
 * A worker's thread ended inside its loop: a task called pthread_exit(),
 * or the thread was cancelled. Its queues will never drain and the
 * messages sent to it never be taken, so the run fails: every other
 * worker leaves as soon as its own queue is empty, and pc_runtime_run()
 * returns -EOWNERDEAD.
 */
static void worker_gone(void *arg)
{
        struct pc_worker *w = arg;
        struct pc_runtime *rt = w->rt;
        int none = 0;

        pc__stall_stop(w);
        pc__share_stop(w); /* its schedstat descriptor, and its CPU back */
        pc__self = NULL;
        pc_log(PC_LOG_ERROR, "worker %u: its thread exited inside the worker loop (a task "
                             "called pthread_exit?); the run fails",
               w->id);
        atomic_store(&w->gone, true);
        atomic_compare_exchange_strong(&rt->failed, &none, -EOWNERDEAD);
        atomic_store_explicit(&rt->stop_req, 1, memory_order_seq_cst);
        atomic_store_explicit(&rt->done, 1, memory_order_seq_cst);
        for (unsigned i = 0; i < rt->nworkers; i++)
                if (i != w->id)
                        pc__wake(rt->workers[i]);
}

/* The loop, with worker_gone() run should the thread be cancelled. */
static void worker_loop_guarded(struct pc_worker *w)
{
        pthread_cleanup_push(worker_gone, w);
        pc__worker_loop(w);
        pthread_cleanup_pop(0);
}

void pc__worker_main(struct pc_worker *w)
{
        char name[16];
        sigset_t old;
        bool blocked = pc__signals_block(&old);

        snprintf(name, sizeof(name), "pc-worker-%u", w->id);
        pthread_setname_np(pthread_self(), name);
        worker_loop_guarded(w);
        pc__signals_restore(blocked, &old);
}

int pc__pin_self(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ---- the default launcher: pinned pthreads ------------------------------ */

struct pthread_ctx {
        cpu_set_t saved_mask;
};

static void *pthread_body(void *arg)
{
        pc__worker_main(arg);
        return NULL;
}

static int pthread_enter(struct pc_runtime *rt)
{
        struct pthread_ctx *c = rt->launcher_ctx;
        int rc;

        sched_getaffinity(0, sizeof(c->saved_mask), &c->saved_mask);
        if (rt->cfg.pin) {
                rc = pc__pin_self(rt->cpus[0]);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "cannot pin worker 0 to CPU %d: %s", rt->cpus[0],
                               pc_strerror(rc));
                        return rc;
                }
        }
        /* Not renamed: the calling thread is mostly the process's main
         * thread, whose name ps, pgrep and top show; worker 0 only borrows
         * it. */
        return 0;
}

static int pthread_launch(struct pc_runtime *rt, struct pc_worker *w)
{
        pthread_attr_t attr;
        cpu_set_t set;
        int rc;

        pthread_attr_init(&attr);
        if (rt->cfg.pin) {
                CPU_ZERO(&set);
                CPU_SET(w->cpu, &set);
                pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
        }
        rc = pthread_create(&w->thread, &attr, pthread_body, w);
        pthread_attr_destroy(&attr);
        return -rc;
}

static void pthread_join_worker(struct pc_runtime *rt, struct pc_worker *w)
{
        (void)rt;
        pthread_join(w->thread, NULL);
}

static void pthread_leave(struct pc_runtime *rt)
{
        struct pthread_ctx *c = rt->launcher_ctx;

        if (rt->cfg.pin)
                pthread_setaffinity_np(pthread_self(), sizeof(c->saved_mask), &c->saved_mask);
}

static void pthread_fini(struct pc_runtime *rt)
{
        free(rt->launcher_ctx);
        rt->launcher_ctx = NULL;
}

static const struct pc__launcher pthread_launcher = {
        .name = "pthread",
        .enter = pthread_enter,
        .launch = pthread_launch,
        .join = pthread_join_worker,
        .leave = pthread_leave,
        .fini = pthread_fini,
};

/* ---- backends that attach at create ------------------------------------ */

/* Written by constructors before main(), read-only afterwards. */
static struct pc__backend *backends;

void pc__backend_register(struct pc__backend *b)
{
        struct pc__backend **pp = &backends;

        while (*pp)
                pp = &(*pp)->next;
        b->next = NULL;
        *pp = b;
}

/*
 * Offer @rt to each registered backend. EAL arguments are meant for a
 * backend that starts the workers itself (DPDK): when none took them, that
 * is an error, not a silent pthread run.
 */
static int attach_backends(struct pc_runtime *rt, char *err, size_t errlen)
{
        bool attached = false;

        for (struct pc__backend *b = backends; b; b = b->next) {
                int rc = b->attach(rt, err, errlen);
                if (rc < 0)
                        return rc;
                attached |= rc > 0;
        }
        if (rt->cfg.eal_args && rt->cfg.eal_args[0] && !attached) {
                snprintf(err, errlen,
                         "PERCORE_EAL_ARGS is set but percore was built without DPDK");
                return -ENOTSUP;
        }
        return 0;
}

int pc_runtime_create(const struct pc_config *cfg, struct pc_runtime **out)
{
        struct pc_runtime *rt;
        char err[512], line[1024];
        int rc;

        if (out == NULL)
                return -EINVAL;
        if (pc__self != NULL)
                return -EPERM;
        pc__log_hook_topo();
        pc__crash_install();
        rt = aligned_alloc(PC_CACHE_LINE, sizeof(*rt));
        if (rt == NULL)
                return -ENOMEM;
        memset(rt, 0, sizeof(*rt));
        pthread_mutex_init(&rt->inj_lock, NULL);
        pthread_mutex_init(&rt->agent_lock, NULL);
        pthread_mutex_init(&rt->mon_lock, NULL);
        pthread_mutex_init(&rt->fib_lock, NULL);
        {
                pthread_condattr_t ca;
                pthread_condattr_init(&ca);
                pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
                pthread_cond_init(&rt->mon_cond, &ca);
                pthread_condattr_destroy(&ca);
        }
        if (cfg)
                rt->cfg = *cfg;
        else
                pc_config_init(&rt->cfg);

        err[0] = '\0';
        rc = pc_config_from_env(&rt->cfg, err, sizeof(err));
        if (rc == 0)
                rc = pc_config_validate(&rt->cfg, err, sizeof(err));
        if (rc == 0)
                rc = choose_cpus(rt, err, sizeof(err));
        if (rc) {
                pc_log(PC_LOG_ERROR, "%s", err);
                pthread_mutex_destroy(&rt->inj_lock);
                pthread_mutex_destroy(&rt->agent_lock);
                pthread_mutex_destroy(&rt->mon_lock);
                pthread_mutex_destroy(&rt->fib_lock);
                pthread_cond_destroy(&rt->mon_cond);
                pc_topo_free(rt->topo);
                free(rt);
                return rc;
        }
        pc__log_set_level(rt->cfg.log_level);
        rt->policy = rt->cfg.policy ? rt->cfg.policy : pc_policy_builtin(rt->cfg.mode);
        /* A policy of the program's own steals if it says so. */
        if (rt->policy->stealing)
                atomic_store(&rt->mode, PC_MODE_ELASTIC);
        else if (rt->cfg.mode == PC_MODE_DETERMINISTIC)
                atomic_store(&rt->mode, PC_MODE_DETERMINISTIC);
        else
                atomic_store(&rt->mode, PC_MODE_TPC);

        rt->cpus_str = dup_or_null(rt->cfg.cpus);
        rt->sysfs_root_str = dup_or_null(rt->cfg.sysfs_root);
        rt->eal_args_str = dup_or_null(rt->cfg.eal_args);
        rt->metrics_str = dup_or_null(rt->cfg.metrics);
        rt->cfg.cpus = rt->cpus_str;
        rt->cfg.sysfs_root = rt->sysfs_root_str;
        rt->cfg.eal_args = rt->eal_args_str;
        rt->cfg.metrics = rt->metrics_str;
        if ((cfg && cfg->cpus && !rt->cpus_str) || !rt->sysfs_root_str ||
            (rt->cfg.metrics == NULL) != (rt->metrics_str == NULL)) {
                rc = -ENOMEM;
                goto fail;
        }
        rc = attach_backends(rt, err, sizeof(err));
        if (rc) {
                pc_log(PC_LOG_ERROR, "%s", err);
                goto fail;
        }
        if (rt->launcher == NULL) {
                rt->launcher = &pthread_launcher;
                rt->launcher_ctx = calloc(1, sizeof(struct pthread_ctx));
                if (rt->launcher_ctx == NULL) {
                        rc = -ENOMEM;
                        goto fail;
                }
        }
        for (unsigned i = 0; i < rt->nworkers; i++) {
                /* The worker's state lives on its node (page aligned, so
                 * cache-line aligned too). */
                struct pc_worker *w = pc_numa_alloc(sizeof(*w), rt->nodes[i]);
                if (w == NULL) {
                        rc = -ENOMEM;
                        goto fail;
                }
                rc = pc__worker_init(w, rt, i, rt->cfg.runq_size);
                if (rc) {
                        pc_numa_free(w, sizeof(*w));
                        goto fail;
                }
                rt->workers[i] = w;
        }
        rc = pc__pack_setup(rt);
        if (rc)
                goto fail;
        steal_orders(rt);
        pc_config_format(&rt->cfg, line, sizeof(line));
        pc_log(PC_LOG_INFO, "%u workers, %s", rt->nworkers, line);
        rc = pc__metrics_open(rt, err, sizeof(err));
        if (rc) {
                pc_log(PC_LOG_ERROR, "%s", err);
                goto fail;
        }
        *out = rt;
        return 0;
fail:
        pc_log(PC_LOG_ERROR, "runtime create: %s", pc_strerror(rc));
        pc_runtime_destroy(rt);
        return rc;
}

/* Ask started workers to leave at once (nothing was queued yet) and join. */
static void abort_start(struct pc_runtime *rt)
{
        atomic_store_explicit(&rt->stop_req, 1, memory_order_seq_cst);
        atomic_store_explicit(&rt->done, 1, memory_order_seq_cst);
        for (unsigned i = 0; i < rt->nworkers; i++)
                pc__wake(rt->workers[i]);
        for (unsigned i = 1; i < rt->nworkers; i++) {
                if (rt->workers[i]->thread_started)
                        rt->launcher->join(rt, rt->workers[i]);
                rt->workers[i]->thread_started = false;
        }
}

int pc_runtime_run(struct pc_runtime *rt, pc_task_fn main_fn, void *arg)
{
        struct pc_worker *w0;
        bool entered = false, sig_blocked;
        sigset_t sig_old;
        int rc = 0;

        if (rt == NULL || main_fn == NULL)
                return -EINVAL;
        if (pc__self != NULL)
                return -EPERM;
        if (atomic_exchange(&rt->running, 1))
                return -EALREADY;
        if (atomic_load(&rt->failed)) {
                atomic_store(&rt->running, 0);
                return atomic_load(&rt->failed);
        }
        w0 = rt->workers[0];
        atomic_store(&rt->done, 0);
        for (unsigned i = 0; i < rt->nworkers; i++) {
                atomic_store(&rt->workers[i]->quiet, 0);
                rt->workers[i]->quiet_published = false;
        }

        for (unsigned i = 1; i < rt->nworkers && rc == 0; i++) {
                struct pc_worker *w = rt->workers[i];
                rc = rt->launcher->launch(rt, w);
                if (rc)
                        pc_log(PC_LOG_ERROR, "cannot start worker %u on CPU %d: %s", i, w->cpu,
                               pc_strerror(rc));
                else
                        w->thread_started = true;
        }
        if (rc == 0) {
                rc = rt->launcher->enter(rt);
                entered = rc == 0;
        }
        if (rc) {
                abort_start(rt);
                goto out;
        }

        rc = pc__metrics_start(rt);
        if (rc) {
                pc_log(PC_LOG_ERROR, "PERCORE_METRICS: the metrics thread did not start: %s",
                       pc_strerror(rc));
                abort_start(rt);
                goto out;
        }
        if (pc__monitor_start(rt) != 0)
                pc_log(PC_LOG_WARN, "the load monitor thread did not start; running without");
        pc_task_init(&rt->main_task, main_fn, arg, PC_STICKY);
        pc__runq_push(&w0->rq, &rt->main_task);
        sig_blocked = pc__signals_block(&sig_old);
        pc__worker_loop(w0);
        pc__signals_restore(sig_blocked, &sig_old);
        pc__monitor_stop(rt);

        for (unsigned i = 1; i < rt->nworkers; i++) {
                rt->launcher->join(rt, rt->workers[i]);
                rt->workers[i]->thread_started = false;
        }
        pc__metrics_stop(rt);
        rc = atomic_load(&rt->failed);
        if (rt->cfg.stats)
                pc_stats_print(rt, stderr);
out:
        if (entered)
                rt->launcher->leave(rt);
        /* A stop applies to one run; the next run starts afresh. */
        atomic_store(&rt->stop_req, 0);
        atomic_store(&rt->drain_req, PC__DRAIN_OFF);
        atomic_store(&rt->done, 0);
        atomic_store(&rt->running, 0);
        return rc;
}

void pc_runtime_stop(struct pc_runtime *rt)
{
        if (rt == NULL)
                return;
        /* Only lock-free atomics and write(2): safe in a signal handler. */
        atomic_store_explicit(&rt->stop_req, 1, memory_order_seq_cst);
        for (unsigned i = 0; i < rt->nworkers; i++)
                pc__wake(rt->workers[i]);
}

bool pc_runtime_stopping(const struct pc_runtime *rt)
{
        return rt && atomic_load_explicit(&((struct pc_runtime *)rt)->stop_req,
                                          memory_order_relaxed);
}

/* Free tasks that never ran: only those the runtime allocated with malloc.
 * Pooled ones live in the workers' chunks; caller-owned ones are theirs. */
static void drop_list(struct pc_task *t)
{
        while (t) {
                struct pc_task *next = t->next;
                if (t->owner == PC_OWNER_HEAP)
                        free(t);
                t = next;
        }
}

void pc_runtime_destroy(struct pc_runtime *rt)
{
        if (rt == NULL)
                return;
        if (atomic_load(&rt->running)) {
                pc_log(PC_LOG_ERROR, "pc_runtime_destroy: runtime is running; not freed");
                return;
        }
        pc__metrics_close(rt);
        pc__signals_forget(rt);
        for (struct pc__module *m = rt->modules, *next; m; m = next) {
                next = m->next;
                if (m->destroy)
                        m->destroy(rt, m->arg);
        }
        if (rt->launcher && rt->launcher->fini)
                rt->launcher->fini(rt);
        drop_list(rt->inj_head);
        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct pc_worker *w = rt->workers[i];
                if (w == NULL)
                        continue;
                while (w->rq.head != w->rq.tail) {
                        struct pc_task *t = w->rq.slots[w->rq.head++ & w->rq.mask];
                        t->next = NULL;
                        drop_list(t);
                }
                drop_list(w->rq.ovf_head);
                while (pc__stealq_ring_len(&w->sq)) {
                        struct pc_task *t = pc__stealq_pop(&w->sq);
                        t->next = NULL;
                        drop_list(t);
                }
                drop_list(atomic_load(&w->inbox));
                pc__worker_fini(w);
                pc_numa_free(w, sizeof(*w));
        }
        pc__pack_free(rt);
        /* After the queues: a fiber's resume task lives in its mapping. */
        pc__fiber_runtime_fini(rt);
        pthread_mutex_destroy(&rt->fib_lock);
        pthread_mutex_destroy(&rt->inj_lock);
        pthread_mutex_destroy(&rt->agent_lock);
        pthread_mutex_destroy(&rt->mon_lock);
        pthread_cond_destroy(&rt->mon_cond);
        pc_topo_free(rt->topo);
        free(rt->cpus_str);
        free(rt->sysfs_root_str);
        free(rt->eal_args_str);
        free(rt->metrics_str);
        free(rt);
}

int pc__module_add(struct pc_runtime *rt, struct pc__module *m)
{
        struct pc__module **pp = &rt->modules;

        if (m->launcher) {
                if (rt->launcher)
                        return -EBUSY;
                rt->launcher = m->launcher;
                rt->launcher_ctx = m->arg;
        }
        while (*pp)
                pp = &(*pp)->next;
        m->next = NULL;
        *pp = m;
        return 0;
}

unsigned pc_runtime_workers(const struct pc_runtime *rt)
{
        return rt ? rt->nworkers : 0;
}

int pc_runtime_worker_cpu(const struct pc_runtime *rt, unsigned w)
{
        if (rt == NULL || w >= rt->nworkers)
                return -EINVAL;
        return rt->cpus[w];
}

const struct pc_topo *pc_runtime_topo(const struct pc_runtime *rt)
{
        return rt ? rt->topo : NULL;
}

int pc_runtime_worker_node(const struct pc_runtime *rt, unsigned w)
{
        if (rt == NULL || w >= rt->nworkers)
                return -EINVAL;
        return rt->nodes[w];
}

const struct pc_config *pc_runtime_config(const struct pc_runtime *rt)
{
        return rt ? &rt->cfg : NULL;
}

struct pc_runtime *pc_runtime_current(void)
{
        return pc__self ? pc__self->rt : NULL;
}
