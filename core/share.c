/* SPDX-License-Identifier: MIT */
/*
 * Pinned workers on CPUs that other threads want too (PERCORE_SHARED).
 *
 * A pinned worker is the right thing on CPUs it has to itself. Beside a
 * busy thread that is not ours (a load generator on the same CPUs, a
 * sidecar, a neighbour in a container) it is the worst of both: when that
 * thread holds the worker's CPU, the worker waits out its scheduler slice
 * while another CPU of the run may sit idle, and every wake-up that does
 * get the CPU preempts the other thread. Threads that may move (Tokio's,
 * memcached's) go to the idle CPU instead.
 *
 * So each pinned worker looks, every PC_SHARE_WINDOW_NS of its own clock
 * reads, at how long its thread waited on a run queue meanwhile (the
 * second field of /proc/thread-self/schedstat, the scheduler's own run
 * delay; read with one pread). A window in which it waited
 * PC_SHARE_WAIT_HI percent of the time or more makes it roam: it may run
 * on every CPU of the run on its NUMA node (so its memory stays near) and
 * an adaptive idle parks at once instead of spinning, which would take
 * the CPU from the thread it shares. Its queues, connections and shard do
 * not move: only the thread that serves them may. It is pinned again after
 * a run of calm windows (PC_SHARE_WAIT_LO percent or less), a run that
 * doubles each time it roams again (up to PC_SHARE_CALM_MAX windows), so
 * a worker that contention keeps finding settles on roaming.
 *
 * While it roams, PERCORE_SCHED=auto (the default) also makes its thread
 * SCHED_BATCH: a wake-up then no longer preempts the thread it shares
 * with, and both run fewer, longer turns (batch_enter()).
 *
 * A worker alone on its CPU waits a few percent at most (a kernel thread
 * now and then) and is never moved. PERCORE_SHARED=off keeps every worker
 * pinned; =on makes the pinned ones roam from the start (the
 * overprovisioned mode of other reactors, for a machine known to be
 * shared). Unpinned runs (PERCORE_PIN=0) have nothing to do here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pc_core_pvt.h"

/* roam_set() and pc__pin_self() put topology CPU numbers in a cpu_set_t. */
_Static_assert(PC_MAX_CPUS <= CPU_SETSIZE, "a topology CPU number must fit a cpu_set_t");

/* The run's CPUs on @w's node: where a roaming worker may go, into @set
 * and, as a CPU list for the log, into @list (may be NULL). Returns how
 * many. */
static unsigned roam_set(const struct pc_worker *w, cpu_set_t *set, char *list, size_t len)
{
        const struct pc_runtime *rt = w->rt;
        uint64_t bits[PC_MAX_CPUS / 64] = {0};
        unsigned n = 0;

        CPU_ZERO(set);
        for (unsigned i = 0; i < rt->nworkers; i++) {
                int c = rt->cpus[i];

                if (rt->nodes[i] != w->node || c < 0 || c >= PC_MAX_CPUS || CPU_ISSET(c, set))
                        continue;
                CPU_SET(c, set);
                bits[c / 64] |= 1ull << (c % 64);
                n++;
        }
        if (list)
                pc_cpulist_format(bits, PC_MAX_CPUS, list, len);
        return n;
}

/* PERCORE_SCHED=auto: a roaming worker's thread runs SCHED_BATCH, so that
 * waking it does not preempt the thread it shares a CPU with; it takes
 * its turn when that thread sleeps or its slice ends, and serves what
 * arrived meanwhile in one pass (both run fewer, longer turns). A thread
 * that runs another policy (chrt) keeps it. */
static void batch_enter(struct pc_worker *w)
{
        struct sched_param sp;

        if (w->rt->cfg.sched == PC_SCHED_AUTO && w->share.policy < 0)
                w->share.policy = pc__sched_batch(w->id, true, &sp);
}

/* The policy batch_enter() found, back (SCHED_OTHER's only priority, 0). */
static void batch_leave(struct pc_worker *w)
{
        const struct sched_param sp = {0};

        pc__sched_restore(w->id, w->share.policy, &sp);
        w->share.policy = -1;
}

static void pin_home(struct pc_worker *w)
{
        int rc = pc__pin_self(w->cpu);

        if (rc) {
                /* Stays roaming: it still runs, and will try again. */
                pc_log(PC_LOG_WARN, "worker %u: cannot pin back to CPU %d: %s", w->id, w->cpu,
                       pc_strerror(rc));
                return;
        }
        w->share.roaming = false;
        atomic_store_explicit(&w->stats.roaming, 0, memory_order_relaxed);
        batch_leave(w);
}

static void roam(struct pc_worker *w, uint64_t wait_ns, uint64_t wall_ns)
{
        cpu_set_t set;
        char list[64];
        int rc;

        if (roam_set(w, &set, list, sizeof(list)) < 2)
                return;
        rc = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        if (rc) {
                pc_log(PC_LOG_WARN, "worker %u: cannot widen its CPUs: %s", w->id,
                       pc_strerror(rc));
                return;
        }
        w->share.roaming = true;
        w->share.calm = 0;
        batch_enter(w);
        atomic_store_explicit(&w->stats.roaming, 1, memory_order_relaxed);
        atomic_store_explicit(&w->stats.roams,
                              atomic_load_explicit(&w->stats.roams, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        if (w->share.told)
                return;
        w->share.told = true;
        if (wall_ns)
                pc_log(PC_LOG_INFO,
                       "worker %u waited for CPU %d %" PRIu64 "%% of %" PRIu64
                       " ms (another thread runs there): it runs on CPUs %s%s while that "
                       "lasts (PERCORE_SHARED=off keeps it pinned)",
                       w->id, w->cpu, wait_ns * 100 / wall_ns, wall_ns / 1000000, list,
                       w->share.policy >= 0 ? " as SCHED_BATCH" : "");
        else
                pc_log(PC_LOG_INFO, "worker %u runs on CPUs %s%s (PERCORE_SHARED=on)", w->id,
                       list, w->share.policy >= 0 ? " as SCHED_BATCH" : "");
}

enum pc__share_move pc__share_judge(struct pc__share *s, uint64_t wait_ns, uint64_t wall_ns)
{
        if (wall_ns == 0)
                return PC_SHARE_STAY;
        if (!s->roaming) {
                if (wait_ns * 100 >= wall_ns * PC_SHARE_WAIT_HI) {
                        /* Every roam after the first asks a longer calm. */
                        if (s->roams++)
                                s->calm_need = s->calm_need * 2 < PC_SHARE_CALM_MAX
                                                       ? s->calm_need * 2
                                                       : PC_SHARE_CALM_MAX;
                        return PC_SHARE_ROAM;
                }
                return PC_SHARE_STAY;
        }
        if (wait_ns * 100 > wall_ns * PC_SHARE_WAIT_LO) {
                s->calm = 0;
                return PC_SHARE_STAY;
        }
        if (++s->calm < s->calm_need)
                return PC_SHARE_STAY;
        s->calm = 0;
        return PC_SHARE_PIN;
}

/* The thread's run delay so far (ns), or -1. */
static int64_t run_delay(int fd)
{
        char buf[96];
        unsigned long long run, wait;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n <= 0)
                return -1;
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
                return -1;
        return (int64_t)wait;
}

void pc__share_start(struct pc_worker *w)
{
        const struct pc_runtime *rt = w->rt;
        cpu_set_t set;
        int64_t d;

        w->share = (struct pc__share){.fd = -1, .calm_need = PC_SHARE_CALM, .policy = -1};
        atomic_store_explicit(&w->stats.roaming, 0, memory_order_relaxed);
        if (!rt->cfg.pin || rt->cfg.shared == PC_SHARED_OFF || w->cpu < 0 ||
            roam_set(w, &set, NULL, 0) < 2)
                return;
        if (rt->cfg.shared == PC_SHARED_ON) {
                roam(w, 0, 0);
                return;
        }
        w->share.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (w->share.fd < 0)
                return; /* no scheduler statistics here: stays pinned */
        d = run_delay(w->share.fd);
        if (d < 0) {
                close(w->share.fd);
                w->share.fd = -1;
                return;
        }
        w->share.wait_ns = (uint64_t)d;
        w->share.at_ns = pc__now();
}

void pc__share_check(struct pc_worker *w, uint64_t now)
{
        struct pc__share *s = &w->share;
        int64_t d = run_delay(s->fd);
        uint64_t wait, wall = now - s->at_ns;

        if (d < 0) {
                close(s->fd);
                s->fd = -1;
                return;
        }
        wait = (uint64_t)d - s->wait_ns;
        s->wait_ns = (uint64_t)d;
        s->at_ns = now;
        switch (pc__share_judge(s, wait, wall)) {
        case PC_SHARE_ROAM:
                roam(w, wait, wall);
                break;
        case PC_SHARE_PIN:
                pin_home(w);
                break;
        case PC_SHARE_STAY:
                break;
        }
}

void pc__share_stop(struct pc_worker *w)
{
        if (w->share.roaming)
                pin_home(w); /* the thread leaves as its launcher pinned it */
        if (w->share.fd >= 0)
                close(w->share.fd);
        w->share.fd = -1;
}
