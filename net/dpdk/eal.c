/* SPDX-License-Identifier: MIT */
/*
 * The EAL and the lcore map. This file registers the DPDK backend, which
 * pc_runtime_create() offers every runtime; it attaches when
 * PERCORE_EAL_ARGS is set: we build the EAL arguments from the workers'
 * CPUs (worker i = lcore i, worker 0 = the main lcore), add the user's
 * arguments split like a shell would, start the EAL, and add a module that
 * claims the workers' launch, starting workers 1..N-1 with
 * rte_eal_remote_launch().
 *
 * The EAL starts once per process and cannot start again after
 * rte_eal_cleanup(): the first runtime on DPDK owns it until destroy, and
 * any later one gets -EALREADY.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>

#include "dpdk_pvt.h"

#define MAX_ARGS 128

enum eal_state { EAL_NONE, EAL_UP, EAL_GONE };
static enum eal_state eal_state;

/*
 * Split @s into words the way a shell would, without expansions: blanks
 * separate words, '...' keeps everything literally, "..." keeps blanks and
 * honours \" and \\, a backslash outside quotes escapes the next byte.
 * Words go into @buf (as long as @s + 1) and @argv. Returns the word count,
 * -EINVAL for an unterminated quote or trailing backslash, -E2BIG past
 * @max words.
 */
static int split_args(const char *s, char *buf, char **argv, int max)
{
        int n = 0;
        char *o = buf;

        for (;;) {
                while (*s && isspace((unsigned char)*s))
                        s++;
                if (*s == '\0')
                        return n;
                if (n == max)
                        return -E2BIG;
                argv[n] = o;
                while (*s && !isspace((unsigned char)*s)) {
                        if (*s == '\'') {
                                for (s++; *s && *s != '\''; s++)
                                        *o++ = *s;
                                if (*s != '\'')
                                        return -EINVAL;
                                s++;
                        } else if (*s == '"') {
                                for (s++; *s && *s != '"'; s++) {
                                        if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
                                                s++;
                                        *o++ = *s;
                                }
                                if (*s != '"')
                                        return -EINVAL;
                                s++;
                        } else if (*s == '\\') {
                                if (s[1] == '\0')
                                        return -EINVAL;
                                *o++ = s[1];
                                s += 2;
                        } else {
                                *o++ = *s++;
                        }
                }
                *o++ = '\0';
                n++;
        }
}

/* Arguments that would remap lcores behind our back. */
static const char *lcore_option(const char *a)
{
        static const char *const bad[] = {"-l", "-c", "--lcores", "--main-lcore",
                                          "--master-lcore", "-s", "-S"};

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                size_t n = strlen(bad[i]);
                if (strncmp(a, bad[i], n) == 0 &&
                    (a[n] == '\0' || a[n] == '=' || (bad[i][1] != '-' && isdigit((unsigned char)a[n]))))
                        return bad[i];
        }
        return NULL;
}

/* "(0-3,8)": the CPUs of @set as an EAL cpuset group. */
static int format_cpuset(const cpu_set_t *set, char *buf, size_t len)
{
        size_t off = 0;
        int start = -1;

        off += (size_t)snprintf(buf, len, "(");
        for (int c = 0; c <= CPU_SETSIZE && off < len; c++) {
                bool in = c < CPU_SETSIZE && CPU_ISSET(c, set);
                if (in && start < 0)
                        start = c;
                if (!in && start >= 0) {
                        off += (size_t)snprintf(buf + off, len - off, "%s%d", off > 1 ? "," : "",
                                                start);
                        if (c - 1 > start && off < len)
                                off += (size_t)snprintf(buf + off, len - off, "-%d", c - 1);
                        start = -1;
                }
        }
        if (off < len)
                off += (size_t)snprintf(buf + off, len - off, ")");
        return off < len ? 0 : -E2BIG;
}

/*
 * --lcores: pinned, "0@c0,1@c1,..."; unpinned (PERCORE_PIN=0), every
 * lcore may run on any CPU of the process's affinity mask,
 * "0@(0-1),1@(0-1),...": lcore ids still equal worker ids, the kernel
 * schedules the threads.
 */
static int build_lcores(struct pc_runtime *rt, const cpu_set_t *allowed, char *buf, size_t len)
{
        char set[512];
        size_t off = 0;

        if (!rt->cfg.pin && format_cpuset(allowed, set, sizeof(set)))
                return -E2BIG;
        buf[0] = '\0';
        for (unsigned i = 0; i < rt->nworkers; i++) {
                int n;
                if (rt->cfg.pin)
                        n = snprintf(buf + off, len - off, "%s%u@%d", i ? "," : "", i,
                                     rt->cpus[i]);
                else
                        n = snprintf(buf + off, len - off, "%s%u@%s", i ? "," : "", i, set);
                if (n < 0 || (size_t)n >= len - off)
                        return -E2BIG;
                off += (size_t)n;
        }
        return 0;
}

/* ---- the launcher -------------------------------------------------------- */

static int lcore_body(void *arg)
{
        struct pc_worker *w = arg;
        struct pc_dpdk *d = w->rt->launcher_ctx;

        (void)atomic_load_explicit(&d->launches[w->id], memory_order_acquire);
        pc__worker_main(w);
        atomic_fetch_add_explicit(&d->returns[w->id], 1, memory_order_release);
        return 0;
}

static int dpdk_launch(struct pc_runtime *rt, struct pc_worker *w)
{
        struct pc_dpdk *d = rt->launcher_ctx;

        atomic_fetch_add_explicit(&d->launches[w->id], 1, memory_order_release);
        /* 0, -EBUSY (lcore not idle) or -EPIPE. */
        return rte_eal_remote_launch(lcore_body, w, w->id);
}

static void dpdk_join(struct pc_runtime *rt, struct pc_worker *w)
{
        struct pc_dpdk *d = rt->launcher_ctx;

        /* An lcore whose thread ended inside the worker loop never tells
         * the EAL it is done. */
        if (atomic_load(&w->gone))
                return;
        rte_eal_wait_lcore(w->id);
        (void)atomic_load_explicit(&d->returns[w->id], memory_order_acquire);
}

/* The calling thread is the main lcore already (rte_eal_init made it so),
 * but we gave it its affinity back after init: pin it for the run. */
static int dpdk_enter(struct pc_runtime *rt)
{
        struct pc_dpdk *d = rt->launcher_ctx;
        int rc;

        d->entered_pinned = false;
        if (rt->cfg.pin) {
                sched_getaffinity(0, sizeof(d->saved_mask), &d->saved_mask);
                rc = pc__pin_self(rt->cpus[0]);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "cannot pin worker 0 (main lcore) to CPU %d: %s",
                               rt->cpus[0], pc_strerror(rc));
                        return rc;
                }
                d->entered_pinned = true;
        }
        /* Not renamed, as with the pthread launcher: the process keeps
         * its name. */
        return 0;
}

static void dpdk_leave(struct pc_runtime *rt)
{
        struct pc_dpdk *d = rt->launcher_ctx;

        if (d->entered_pinned)
                pthread_setaffinity_np(pthread_self(), sizeof(d->saved_mask), &d->saved_mask);
}

static void dpdk_fini(struct pc_runtime *rt)
{
        struct pc_dpdk *d = rt->launcher_ctx;

        pc__telemetry_unregister(rt);
        pc__ports_close(d);
        for (size_t i = 0; i < RTE_DIM(d->pools); i++)
                rte_mempool_free(d->pools[i]);
        rte_eal_cleanup();
        eal_state = EAL_GONE;
        free(d);
        rt->launcher_ctx = NULL;
}

static const struct pc__launcher dpdk_launcher = {
        .name = "dpdk",
        .enter = dpdk_enter,
        .launch = dpdk_launch,
        .join = dpdk_join,
        .leave = dpdk_leave,
        .fini = dpdk_fini,
};

struct pc_dpdk *pc__dpdk_of(const struct pc_runtime *rt)
{
        return rt && rt->launcher == &dpdk_launcher ? rt->launcher_ctx : NULL;
}

/* After init: the lcores are exactly the workers, and their sockets agree
 * with numa/ (a mismatch is only worth a warning: memory placement is
 * slower, nothing breaks). */
static int check_lcores(struct pc_runtime *rt, char *err, size_t errlen)
{
        if (rte_lcore_count() != rt->nworkers || rte_get_main_lcore() != 0) {
                snprintf(err, errlen, "EAL runs %u lcores (main %u), expected %u (main 0)",
                         rte_lcore_count(), rte_get_main_lcore(), rt->nworkers);
                return -EINVAL;
        }
        for (unsigned i = 0; i < rt->nworkers; i++) {
                unsigned s = rte_lcore_to_socket_id(i);
                if (!rte_lcore_is_enabled(i)) {
                        snprintf(err, errlen, "EAL lcore %u is not enabled", i);
                        return -EINVAL;
                }
                if (rt->cfg.pin && (int)s != rt->nodes[i] && s != (unsigned)SOCKET_ID_ANY)
                        pc_log(PC_LOG_WARN, "lcore %u on CPU %d: EAL socket %u, numa node %d",
                               i, rt->cpus[i], s, rt->nodes[i]);
        }
        return 0;
}

/* Start the EAL for @rt and claim its launch: 1, or -errno with the reason
 * in @err; 0 when @rt was not asked to run on DPDK. */
static int dpdk_attach(struct pc_runtime *rt, char *err, size_t errlen)
{
        char *argv[MAX_ARGS + 8], *copy[MAX_ARGS + 8];
        char *words = NULL, lcores[4096], cmdline[1024];
        cpu_set_t before;
        struct pc_dpdk *d;
        int argc = 0, n, rc;
        size_t off = 0;

        if (rt->cfg.eal_args == NULL || rt->cfg.eal_args[0] == '\0')
                return 0;
        /* Lcores must run the workers: refuse before spending the EAL,
         * which starts once per process, if another backend does. */
        if (rt->launcher) {
                snprintf(err, errlen, "DPDK cannot start the workers: another backend does");
                return -EBUSY;
        }
        if (eal_state != EAL_NONE) {
                snprintf(err, errlen,
                         "DPDK's EAL %s in this process; it starts once per process, so only "
                         "one runtime may use DPDK",
                         eal_state == EAL_UP ? "already belongs to another runtime"
                                             : "was cleaned up or failed to start");
                return -EALREADY;
        }
        if (sched_getaffinity(0, sizeof(before), &before) != 0) {
                snprintf(err, errlen, "sched_getaffinity: %s", strerror(errno));
                return -errno;
        }
        if (build_lcores(rt, &before, lcores, sizeof(lcores))) {
                snprintf(err, errlen, "EAL --lcores argument too long");
                return -E2BIG;
        }
        words = malloc(strlen(rt->cfg.eal_args) + 1);
        d = calloc(1, sizeof(*d));
        if (words == NULL || d == NULL) {
                free(words);
                free(d);
                return -ENOMEM;
        }
        argv[argc++] = "percore";
        argv[argc++] = "--lcores";
        argv[argc++] = lcores;
        argv[argc++] = "--main-lcore";
        argv[argc++] = "0";
        n = split_args(rt->cfg.eal_args, words, argv + argc, MAX_ARGS);
        if (n < 0) {
                snprintf(err, errlen, "PERCORE_EAL_ARGS='%s': %s", rt->cfg.eal_args,
                         n == -E2BIG ? "too many words" : "unterminated quote or escape");
                rc = -EINVAL;
                goto fail;
        }
        for (int i = argc; i < argc + n; i++) {
                const char *bad = lcore_option(argv[i]);
                if (bad) {
                        snprintf(err, errlen,
                                 "PERCORE_EAL_ARGS must not contain %s: percore maps worker i "
                                 "to lcore i itself (choose CPUs with PERCORE_CPUS)",
                                 bad);
                        rc = -EINVAL;
                        goto fail;
                }
        }
        argc += n;
        argv[argc] = NULL;
        for (int i = 0; i < argc && off < sizeof(cmdline); i++)
                off += (size_t)snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s",
                                        i ? " " : "", argv[i]);
        pc_log(PC_LOG_INFO, "EAL: %s", cmdline);

        /* rte_eal_init() permutes argv; keep our own pointer list. */
        memcpy(copy, argv, sizeof(argv[0]) * (size_t)(argc + 1));
        rc = rte_eal_init(argc, copy);
        if (rc < 0) {
                rc = rte_errno ? -rte_errno : -EINVAL;
                snprintf(err, errlen, "rte_eal_init(%s) failed: %s (see EAL's messages above)",
                         cmdline, rte_strerror(-rc));
                /* Not even bad arguments can be retried: the EAL keeps
                 * what it parsed ("--lcores is set"). */
                eal_state = EAL_GONE;
                goto fail;
        }
        eal_state = EAL_UP;
        /* The EAL pinned this thread to lcore 0's CPUs; until the runtime
         * runs it is still the user's thread, so give its affinity back
         * (dpdk_enter() pins it for each run). */
        sched_setaffinity(0, sizeof(before), &before);
        free(words);
        d->rt = rt;
        d->eal_module.arg = d;
        d->eal_module.launcher = &dpdk_launcher;
        pc__module_add(rt, &d->eal_module); /* 0: nobody claimed the launch */
        rc = check_lcores(rt, err, errlen);
        if (rc)
                return rc; /* destroy's fini cleans the EAL up */
        pc__telemetry_register(rt);
        return 1;
fail:
        free(words);
        free(d);
        return rc;
}

static struct pc__backend dpdk_backend = {
        .name = "dpdk",
        .attach = dpdk_attach,
};

RTE_INIT(dpdk_backend_register)
{
        pc__backend_register(&dpdk_backend);
}
