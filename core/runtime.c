/* SPDX-License-Identifier: MIT */
/*
 * The runtime's lifecycle: create (configuration, CPU choice, worker
 * state), run (worker threads pinned to their CPUs, the caller becoming
 * worker 0), stop (async-signal-safe), destroy.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_core_pvt.h"

static char *dup_or_null(const char *s)
{
        return s ? strdup(s) : NULL;
}

/* Render the CPUs of @set as a list ("0-3,8") for messages. */
static void format_cpus(const uint64_t *set, char *buf, size_t len)
{
        size_t off = 0;
        int start = -1;

        buf[0] = '\0';
        for (int c = 0; c <= PC_MAX_CPUS && off < len; c++) {
                bool in = c < PC_MAX_CPUS && (set[c / 64] >> (c % 64) & 1);
                if (in && start < 0)
                        start = c;
                if (!in && start >= 0) {
                        off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "",
                                                start);
                        if (c - 1 > start && off < len)
                                off += (size_t)snprintf(buf + off, len - off, "-%d", c - 1);
                        start = -1;
                }
        }
}

/*
 * Choose each worker's CPU: the CPUs of PERCORE_CPUS, or of the process's
 * affinity mask, in ascending order. With pinning on, every listed CPU must
 * be one this process may run on, and there must be a CPU per worker.
 */
static int choose_cpus(struct pc_runtime *rt, char *err, size_t errlen)
{
        uint64_t allowed[PC_MAX_CPUS / 64] = {0}, want[PC_MAX_CPUS / 64];
        int list[PC_MAX_CPUS], ncpus = 0;
        cpu_set_t mask;
        unsigned nworkers;

        CPU_ZERO(&mask);
        if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
                snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
                return -errno;
        }
        for (int c = 0; c < PC_MAX_CPUS && c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &mask))
                        allowed[c / 64] |= 1ull << (c % 64);

        if (rt->cfg.cpus) {
                if (pc_cpulist_parse(rt->cfg.cpus, want, PC_MAX_CPUS) < 0) {
                        snprintf(err, errlen, "PERCORE_CPUS='%s' is not a valid CPU list",
                                 rt->cfg.cpus);
                        return -EINVAL;
                }
                for (int c = 0; c < PC_MAX_CPUS; c++) {
                        bool in = want[c / 64] >> (c % 64) & 1;
                        if (in && rt->cfg.pin && !(allowed[c / 64] >> (c % 64) & 1)) {
                                char a[256];
                                format_cpus(allowed, a, sizeof(a));
                                snprintf(err, errlen,
                                         "PERCORE_CPUS lists CPU %d, which this process may "
                                         "not run on (allowed: %s); set PERCORE_PIN=0 to "
                                         "run unpinned",
                                         c, a);
                                return -EINVAL;
                        }
                }
        } else {
                memcpy(want, allowed, sizeof(want));
        }
        for (int c = 0; c < PC_MAX_CPUS; c++)
                if (want[c / 64] >> (c % 64) & 1)
                        list[ncpus++] = c;
        if (ncpus == 0) {
                snprintf(err, errlen, "no usable CPU");
                return -EINVAL;
        }

        nworkers = rt->cfg.workers ? rt->cfg.workers : (unsigned)ncpus;
        if (rt->cfg.mode == PC_MODE_DETERMINISTIC)
                nworkers = 1;
        if (nworkers > PC_MAX_WORKERS)
                nworkers = PC_MAX_WORKERS;
        if (nworkers > (unsigned)ncpus && rt->cfg.pin) {
                snprintf(err, errlen,
                         "%u workers (PERCORE_WORKERS) need %u CPUs but only %d are usable; set "
                         "PERCORE_PIN=0 to oversubscribe",
                         nworkers, nworkers, ncpus);
                return -EINVAL;
        }
        rt->nworkers = nworkers;
        for (unsigned i = 0; i < nworkers; i++)
                rt->cpus[i] = list[i % (unsigned)ncpus];
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
        rt = aligned_alloc(PC_CACHE_LINE, sizeof(*rt));
        if (rt == NULL)
                return -ENOMEM;
        memset(rt, 0, sizeof(*rt));
        pthread_mutex_init(&rt->inj_lock, NULL);
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
                free(rt);
                return rc;
        }
        pc__log_set_level(rt->cfg.log_level);

        rt->cpus_str = dup_or_null(rt->cfg.cpus);
        rt->sysfs_root_str = dup_or_null(rt->cfg.sysfs_root);
        rt->eal_args_str = dup_or_null(rt->cfg.eal_args);
        rt->cfg.cpus = rt->cpus_str;
        rt->cfg.sysfs_root = rt->sysfs_root_str;
        rt->cfg.eal_args = rt->eal_args_str;
        if ((cfg && cfg->cpus && !rt->cpus_str) || !rt->sysfs_root_str) {
                rc = -ENOMEM;
                goto fail;
        }
        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct pc_worker *w = aligned_alloc(PC_CACHE_LINE, sizeof(*w));
                if (w == NULL) {
                        rc = -ENOMEM;
                        goto fail;
                }
                rc = pc__worker_init(w, rt, i, rt->cfg.runq_size);
                if (rc) {
                        free(w);
                        goto fail;
                }
                rt->workers[i] = w;
        }
        pc_config_format(&rt->cfg, line, sizeof(line));
        pc_log(PC_LOG_INFO, "%u workers, %s", rt->nworkers, line);
        *out = rt;
        return 0;
fail:
        pc_log(PC_LOG_ERROR, "runtime create: %s", pc_strerror(rc));
        pc_runtime_destroy(rt);
        return rc;
}

static void *worker_main(void *arg)
{
        struct pc_worker *w = arg;
        char name[16];

        snprintf(name, sizeof(name), "pc-worker-%u", w->id);
        pthread_setname_np(pthread_self(), name);
        pc__worker_loop(w);
        return NULL;
}

static int start_thread(struct pc_runtime *rt, struct pc_worker *w)
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
        rc = pthread_create(&w->thread, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (rc == 0)
                w->thread_started = true;
        return -rc;
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
                        pthread_join(rt->workers[i]->thread, NULL);
                rt->workers[i]->thread_started = false;
        }
}

int pc_runtime_run(struct pc_runtime *rt, pc_task_fn main_fn, void *arg)
{
        struct pc_worker *w0;
        cpu_set_t saved_mask, set;
        char saved_name[16] = "";
        int rc = 0;

        if (rt == NULL || main_fn == NULL)
                return -EINVAL;
        if (pc__self != NULL)
                return -EPERM;
        if (atomic_exchange(&rt->running, 1))
                return -EALREADY;
        w0 = rt->workers[0];
        atomic_store(&rt->done, 0);
        for (unsigned i = 0; i < rt->nworkers; i++) {
                atomic_store(&rt->workers[i]->quiet, 0);
                rt->workers[i]->quiet_published = false;
        }

        for (unsigned i = 1; i < rt->nworkers && rc == 0; i++) {
                rc = start_thread(rt, rt->workers[i]);
                if (rc)
                        pc_log(PC_LOG_ERROR, "cannot start worker %u on CPU %d: %s", i,
                               rt->workers[i]->cpu, pc_strerror(rc));
        }
        pthread_getname_np(pthread_self(), saved_name, sizeof(saved_name));
        sched_getaffinity(0, sizeof(saved_mask), &saved_mask);
        if (rc == 0 && rt->cfg.pin) {
                CPU_ZERO(&set);
                CPU_SET(w0->cpu, &set);
                rc = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
                if (rc)
                        pc_log(PC_LOG_ERROR, "cannot pin worker 0 to CPU %d: %s", w0->cpu,
                               pc_strerror(rc));
        }
        if (rc) {
                abort_start(rt);
                goto out;
        }
        pthread_setname_np(pthread_self(), "pc-worker-0");

        pc_task_init(&rt->main_task, main_fn, arg, PC_STICKY);
        pc__runq_push(&w0->rq, &rt->main_task);
        pc__worker_loop(w0);

        for (unsigned i = 1; i < rt->nworkers; i++) {
                pthread_join(rt->workers[i]->thread, NULL);
                rt->workers[i]->thread_started = false;
        }
        if (rt->cfg.stats)
                pc_stats_print(rt, stderr);
out:
        if (rt->cfg.pin)
                pthread_setaffinity_np(pthread_self(), sizeof(saved_mask), &saved_mask);
        if (saved_name[0])
                pthread_setname_np(pthread_self(), saved_name);
        /* A stop applies to one run; the next run starts afresh. */
        atomic_store(&rt->stop_req, 0);
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

static _Atomic(struct pc_runtime *) signal_rt;
static struct sigaction old_int, old_term;
static bool signals_installed;

static void on_signal(int sig)
{
        (void)sig;
        pc_runtime_stop(atomic_load(&signal_rt));
}

int pc_runtime_stop_on_signals(struct pc_runtime *rt)
{
        struct sigaction sa;

        if (rt == NULL)
                return -EINVAL;
        atomic_store(&signal_rt, rt);
        if (signals_installed)
                return 0;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(SIGINT, &sa, &old_int) != 0 || sigaction(SIGTERM, &sa, &old_term) != 0)
                return -errno;
        signals_installed = true;
        return 0;
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
        if (atomic_load(&signal_rt) == rt) {
                atomic_store(&signal_rt, NULL);
                if (signals_installed) {
                        sigaction(SIGINT, &old_int, NULL);
                        sigaction(SIGTERM, &old_term, NULL);
                        signals_installed = false;
                }
        }
        for (struct pc__module *m = rt->modules, *next; m; m = next) {
                next = m->next;
                if (m->destroy)
                        m->destroy(rt, m->arg);
        }
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
                drop_list(w->sq.ovf_head);
                drop_list(atomic_load(&w->inbox));
                pc__worker_fini(w);
                free(w);
        }
        pthread_mutex_destroy(&rt->inj_lock);
        free(rt->cpus_str);
        free(rt->sysfs_root_str);
        free(rt->eal_args_str);
        free(rt);
}

void pc__module_add(struct pc_runtime *rt, struct pc__module *m)
{
        struct pc__module **pp = &rt->modules;

        while (*pp)
                pp = &(*pp)->next;
        m->next = NULL;
        *pp = m;
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

const struct pc_config *pc_runtime_config(const struct pc_runtime *rt)
{
        return rt ? &rt->cfg : NULL;
}

struct pc_runtime *pc_runtime_current(void)
{
        return pc__self ? pc__self->rt : NULL;
}
