/* SPDX-License-Identifier: MIT */
/*
 * Pinned workers on CPUs that other threads want too: the overprovisioned
 * switch (PERCORE_OVERPROVISIONED=1). Without it nothing here runs: every
 * worker stays pinned and SCHED_OTHER, the thread-per-core contract.
 *
 * A pinned worker is the right thing on CPUs it has to itself. Beside a
 * busy thread that is not ours (a load generator on the same CPUs, a
 * sidecar, a neighbour in a container) it is the worst of both: when that
 * thread holds the worker's CPU, the worker waits out its scheduler slice
 * while another CPU of the run may sit idle, and every wake-up that does
 * get the CPU preempts the other thread. Threads that may move (Tokio's,
 * memcached's) go to the idle CPU instead.
 *
 * So, under the switch, each pinned worker looks, every PC_SHARE_WINDOW_NS
 * of its own clock reads, at how long its thread waited on a run queue
 * meanwhile (the second field of /proc/thread-self/schedstat, the
 * scheduler's own run delay; read with one pread). A window in which it
 * waited SHARE_WAIT_HI percent of the time or more makes it roam: it may
 * run on every CPU of the run on its NUMA node (so its memory stays near)
 * and an adaptive idle parks at once instead of spinning, which would take
 * the CPU from the thread it shares. Its queues, connections and shard do
 * not move: only the thread that serves them may. It is pinned again after
 * a run of calm windows (SHARE_WAIT_LO percent or less), a run that
 * doubles each time it roams again (up to SHARE_CALM_MAX windows), so a
 * worker that contention keeps finding settles on roaming.
 *
 * While it roams its thread runs SCHED_BATCH (batch_enter()): a wake-up
 * then no longer preempts the thread it shares with, and both run fewer,
 * longer turns.
 *
 * Roaming workers also pack. Every PACK_WINDOW_NS one of a node's roaming
 * workers weighs how many whole CPUs the other threads use there: the
 * run's CPUs' busy time from /proc/stat, less what our workers ran (their
 * schedstat). That many are left to those threads (the ones they use most,
 * never one a pinned worker is on, never all), and the roaming workers run
 * on the rest, taking PACK_TURN_NS turns there before they yield to each
 * other while another of them is awake (pc__pack_turn()). Spread over
 * every CPU, a worker and the thread it shares with wait out each other's
 * slices, milliseconds; packed, the other threads have their CPUs and our
 * workers trade the rest among themselves in short turns. When the other
 * threads use less again, the CPUs come back, and with them the calm
 * windows that pin a worker home.
 *
 * A worker alone on its CPU waits a few percent at most (a kernel thread
 * now and then) and is never moved. Unpinned runs (PERCORE_PIN=0) have
 * nothing to do here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pc_core_pvt.h"

/* Roaming. The window itself, PC_SHARE_WINDOW_NS, is the loop's to time. */
#define SHARE_WAIT_HI 10   /* % of a window waited for the CPU: roam */
#define SHARE_WAIT_LO 2    /* % at most: a calm window */
#define SHARE_CALM 10      /* calm windows in a row to pin back, first */
#define SHARE_CALM_MAX 200 /* ... doubling each roam after that, up to */

/* Packing: how often a node's roaming workers weigh the other threads' use
 * of their CPUs (from /proc/stat, whose counts tick every 10 ms: a window
 * of 100 ms reads a CPU's to 0.1-0.2 of it, inside the slack below), and
 * the busy turn a packed worker takes before it yields. */
#define PACK_WINDOW_NS 100000000ull
#define PACK_TURN_NS 300000ull
/* Whole CPUs the other threads use, in thousandths: one more is left to
 * them at (left + 1) * 1000 - PACK_MORE, one fewer below
 * left * 1000 - PACK_LESS; and a CPU takes the place of one left when the
 * others use it PACK_SWAP more. */
#define PACK_MORE 300
#define PACK_LESS 500
#define PACK_SWAP 500
#define PACK_MIN 250 /* a CPU the others use less is never left to them */

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

/* Let the calling worker's thread run on @set; false (logged) if the
 * kernel refuses, and the worker stays as it was. */
static bool run_on(const struct pc_worker *w, const cpu_set_t *set)
{
        int rc = -pthread_setaffinity_np(pthread_self(), sizeof(*set), set);

        if (rc)
                pc_log(PC_LOG_WARN, "worker %u: cannot change its CPUs: %s", w->id,
                       pc_strerror(rc));
        return rc == 0;
}

/* A roaming worker's thread runs SCHED_BATCH, so that waking it does not
 * preempt the thread it shares a CPU with; it takes its turn when that
 * thread sleeps or its slice ends, and serves what arrived meanwhile in
 * one pass (both run fewer, longer turns). A thread that runs another
 * policy (chrt) keeps it. SCHED_RESET_ON_FORK is kept as it was. */
static void batch_enter(struct pc_worker *w)
{
        const struct sched_param sp = {0};
        int was;

        if (w->share.policy >= 0)
                return;
        was = sched_getscheduler(0);
        if (was < 0 || (was & ~SCHED_RESET_ON_FORK) != SCHED_OTHER)
                return;
        if (sched_setscheduler(0, SCHED_BATCH | (was & SCHED_RESET_ON_FORK), &sp)) {
                pc_log(PC_LOG_WARN, "worker %u: cannot run as SCHED_BATCH: %s", w->id,
                       pc_strerror(-errno));
                return;
        }
        w->share.policy = was;
}

/* The policy batch_enter() found, back (SCHED_OTHER's only priority, 0). */
static void batch_leave(struct pc_worker *w)
{
        const struct sched_param sp = {0};

        if (w->share.policy >= 0 && sched_setscheduler(0, w->share.policy, &sp))
                pc_log(PC_LOG_WARN, "worker %u: cannot leave SCHED_BATCH: %s", w->id,
                       pc_strerror(-errno));
        w->share.policy = -1;
}

/* --- packing ------------------------------------------------------- */

struct pc__pack {
        pthread_mutex_t lock;
        int node;
        unsigned n;                   /* the run's CPUs on the node, ascending */
        int cpu[PC_MAX_WORKERS];
        unsigned nw;                  /* the node's workers, by id */
        unsigned wid[PC_MAX_WORKERS];
        _Atomic int tid[PC_MAX_WORKERS]; /* each one's thread while it runs; 0 */
        _Atomic int where[PC_MAX_WORKERS]; /* the CPU each ran on at its last look */
        /* under lock: the judge's last sample */
        int fd; /* /proc/stat */
        char *buf;
        size_t cap;
        _Atomic uint64_t at_ns; /* 0: none; written under @lock */
        uint64_t busy[PC_MAX_WORKERS]; /* each CPU's busy ns then */
        uint64_t ran[PC_MAX_WORKERS];  /* each worker's run ns then */
        bool left[PC_MAX_WORKERS];     /* CPUs left to other threads */
        bool told;
        /* read by the node's workers */
        _Atomic unsigned gen;   /* changes as @left does */
};

unsigned pc__pack_judge(unsigned n, const uint64_t *busy, const uint64_t *mine, const bool *pinned,
                        uint64_t roam, uint64_t wall_ns, bool *left, uint64_t *others)
{
        uint64_t total = 0, ours = roam, foreign, f[PC_MAX_WORKERS], score[PC_MAX_WORKERS];
        unsigned cur = 0, want, free_cpus = 0, stay;
        bool pick[PC_MAX_WORKERS] = {0};

        if (n < 2 || n > PC_MAX_WORKERS || wall_ns == 0)
                return 0;
        for (unsigned c = 0; c < n; c++) {
                total += busy[c];
                ours += mine[c];
                cur += left[c];
                free_cpus += !pinned[c];
        }
        /* How many whole CPUs the others use, in thousandths; the count
         * left follows it with some slack each way, so that a use near a
         * boundary does not move CPUs back and forth. */
        foreign = total > ours ? (total - ours) * 1000 / wall_ns : 0;
        if (others)
                *others = foreign;
        want = cur;
        while (want + 1 < n && foreign + PACK_MORE >= (uint64_t)(want + 1) * 1000)
                want++;
        while (want > 0 && foreign + PACK_LESS < (uint64_t)want * 1000)
                want--;
        if (want > free_cpus)
                want = free_cpus;
        /* Each CPU's use by others: its busy time less what our workers ran
         * there (the roaming ones' share spread over the CPUs they had). A
         * CPU already left keeps its place unless another is used
         * PACK_SWAP more. */
        stay = n - cur;
        for (unsigned c = 0; c < n; c++) {
                uint64_t o = mine[c] + (left[c] || stay == 0 ? 0 : roam / stay);

                f[c] = busy[c] > o ? busy[c] - o : 0;
                score[c] = f[c] + (left[c] ? wall_ns / 1000 * PACK_SWAP : 0);
        }
        for (unsigned k = 0; k < want; k++) {
                int best = -1;

                for (unsigned c = 0; c < n; c++)
                        if (!pinned[c] && !pick[c] && (best < 0 || score[c] > score[best]))
                                best = (int)c; /* ties: the lower CPU */
                if (best < 0 || f[best] < wall_ns / 1000 * PACK_MIN) {
                        want = k; /* the others' use is elsewhere: not there */
                        break;
                }
                pick[best] = true;
        }
        for (unsigned c = 0; c < n; c++)
                left[c] = pick[c];
        return want;
}

/* A schedstat file's first two fields: the thread's run time so far and
 * its run delay (ns). 0 or -1. */
static int schedstat_read(int fd, uint64_t *run, uint64_t *wait)
{
        char buf[96];
        unsigned long long r, d;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n <= 0)
                return -1;
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu", &r, &d) != 2)
                return -1;
        *run = r;
        *wait = d;
        return 0;
}

/* Another thread's run time so far (ns), or -1. */
static int64_t task_ran(int tid)
{
        char path[64];
        uint64_t run, wait;
        int fd, rc;

        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        rc = schedstat_read(fd, &run, &wait);
        close(fd);
        return rc ? -1 : (int64_t)run;
}

/* The thread's run delay so far (ns), or -1. */
static int64_t run_delay(int fd)
{
        uint64_t run, wait;

        return schedstat_read(fd, &run, &wait) ? -1 : (int64_t)wait;
}

/* Each of the node's CPUs' busy time so far (ns: user, nice, system, irq
 * and softirq; not steal, when the host ran something else) into @busy.
 * 0 or -errno. Under p->lock. */
static int cpu_busy(struct pc__pack *p, uint64_t *busy)
{
        long hz = sysconf(_SC_CLK_TCK);
        size_t len = 0;
        unsigned got = 0;
        char *line;

        if (hz <= 0)
                return -EINVAL;
        for (;;) { /* the whole file: its size grows with the CPUs */
                ssize_t r = pread(p->fd, p->buf + len, p->cap - len - 1, (off_t)len);

                if (r < 0)
                        return -errno;
                len += (size_t)r;
                if (r == 0)
                        break;
                if (len + 1 == p->cap) {
                        char *nb = realloc(p->buf, p->cap * 2);

                        if (nb == NULL)
                                return -ENOMEM;
                        p->buf = nb;
                        p->cap *= 2;
                }
        }
        p->buf[len] = '\0';
        for (unsigned c = 0; c < p->n; c++)
                busy[c] = UINT64_MAX;
        for (line = p->buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                unsigned long long v[7];
                int cpu;

                if (line[0] != 'c' || line[1] != 'p' || line[2] != 'u' || line[3] < '0' ||
                    line[3] > '9')
                        continue;
                if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                           &v[2], &v[3], &v[4], &v[5], &v[6]) != 8)
                        return -EPROTO;
                for (unsigned c = 0; c < p->n; c++)
                        if (p->cpu[c] == cpu && busy[c] == UINT64_MAX) {
                                busy[c] = (uint64_t)(v[0] + v[1] + v[2] + v[5] + v[6]) *
                                          (1000000000ull / (uint64_t)hz);
                                got++;
                        }
        }
        return got == p->n ? 0 : -ENOENT; /* an offline CPU has no line */
}

/* Every CPU back to the roaming workers. Under p->lock. */
static void pack_clear(struct pc__pack *p)
{
        const bool none[PC_MAX_WORKERS] = {0};

        if (memcmp(p->left, none, p->n * sizeof(bool)) == 0)
                return;
        memset(p->left, 0, sizeof(p->left));
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
}

/* Sample the node; with a fresh sample before it, judge. Under p->lock. */
static void pack_sample(const struct pc_runtime *rt, struct pc__pack *p, uint64_t now)
{
        uint64_t busy[PC_MAX_WORKERS], ran[PC_MAX_WORKERS], d[PC_MAX_WORKERS] = {0},
                 mine[PC_MAX_WORKERS] = {0}, roam = 0, wall = now - p->at_ns, foreign = 0;
        bool pinned[PC_MAX_WORKERS] = {0}, was[PC_MAX_WORKERS];
        unsigned nleft;
        int rc = cpu_busy(p, busy);

        if (rc) {
                pc_log(PC_LOG_WARN, "node %d: cannot read /proc/stat (%s): roaming workers stop "
                       "packing", p->node, pc_strerror(rc));
                close(p->fd);
                p->fd = -1;
                pack_clear(p);
                return;
        }
        for (unsigned k = 0; k < p->nw; k++) {
                int tid = atomic_load_explicit(&p->tid[k], memory_order_relaxed);
                int64_t r = tid > 0 ? task_ran(tid) : -1;

                ran[k] = r < 0 ? p->ran[k] : (uint64_t)r;
        }
        if (p->at_ns && wall <= 4 * PACK_WINDOW_NS) {
                for (unsigned k = 0; k < p->nw; k++) {
                        const struct pc_worker *w = rt->workers[p->wid[k]];

                        bool roaming = atomic_load_explicit(&w->stats.roaming,
                                                            memory_order_relaxed);
                        int at = roaming ? atomic_load_explicit(&p->where[k],
                                                                memory_order_relaxed)
                                         : w->cpu;
                        bool placed = false;

                        d[k] = ran[k] > p->ran[k] ? ran[k] - p->ran[k] : 0;
                        /* A roaming worker's time goes to the CPU it was on
                         * at its last look (a sample: it may have run on
                         * others too); unknown, it is spread. */
                        for (unsigned c = 0; c < p->n; c++)
                                if (p->cpu[c] == at) {
                                        mine[c] += d[k];
                                        pinned[c] |= !roaming;
                                        placed = true;
                                }
                        if (!placed)
                                roam += d[k];
                }
                for (unsigned c = 0; c < p->n; c++) {
                        uint64_t b = busy[c] > p->busy[c] ? busy[c] - p->busy[c] : 0;

                        was[c] = p->left[c];
                        p->busy[c] = busy[c];
                        busy[c] = b;
                }
                nleft = pc__pack_judge(p->n, busy, mine, pinned, roam, wall, p->left, &foreign);
                if (memcmp(was, p->left, p->n * sizeof(bool))) {
                        uint64_t bits[PC_MAX_CPUS / 64] = {0};
                        char list[64];

                        for (unsigned c = 0; c < p->n; c++)
                                if (p->left[c])
                                        bits[p->cpu[c] / 64] |= 1ull << (p->cpu[c] % 64);
                        pc_cpulist_format(bits, PC_MAX_CPUS, list, sizeof(list));
                        pc_log(p->told ? PC_LOG_DEBUG : PC_LOG_INFO,
                               "node %d: other threads use %" PRIu64 ".%02" PRIu64
                               " CPUs of the run: its roaming workers leave them %s%s%s",
                               p->node, foreign / 1000, foreign % 1000 / 10,
                               nleft ? "CPUs " : "none", nleft ? list : "",
                               nleft ? " and take turns on the rest" : "");
                        p->told = true;
                        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
                }
        } else {
                /* No roaming worker looked for a while: start afresh. */
                for (unsigned c = 0; c < p->n; c++)
                        p->busy[c] = busy[c];
                pack_clear(p);
        }
        memcpy(p->ran, ran, sizeof(ran[0]) * p->nw);
        p->at_ns = now;
}

/* Narrow (or widen back) a roaming worker's CPUs to its node's packing. */
static void pack_apply(struct pc_worker *w)
{
        struct pc__pack *p = w->pack;
        cpu_set_t set;
        unsigned gen, all, nleft = 0;
        bool left[PC_MAX_WORKERS];

        pthread_mutex_lock(&p->lock);
        gen = atomic_load_explicit(&p->gen, memory_order_acquire);
        memcpy(left, p->left, sizeof(left));
        pthread_mutex_unlock(&p->lock);
        w->share.pack_gen = gen;
        if (!w->share.roaming)
                return;
        all = roam_set(w, &set, NULL, 0);
        for (unsigned c = 0; c < p->n; c++)
                if (left[c] && CPU_ISSET(p->cpu[c], &set)) {
                        CPU_CLR(p->cpu[c], &set);
                        nleft++;
                }
        if (nleft == 0 && !w->share.packed)
                return;
        if (nleft >= all) /* never all: the judge leaves one */
                return;
        if (!run_on(w, &set))
                return;
        w->share.packed = nleft > 0;
        w->share.on = set;
        w->share.turn_ns = 0;
        atomic_store_explicit(&w->stats.packed, nleft > 0, memory_order_relaxed);
}

/* From a roaming worker's window: judge the node now and then (whoever
 * gets there first), and follow what was judged. */
static void pack_tick(struct pc_worker *w, uint64_t now)
{
        struct pc__pack *p = w->pack;

        if (p == NULL)
                return;
        if (now - p->at_ns >= PACK_WINDOW_NS && pthread_mutex_trylock(&p->lock) == 0) {
                /* The clock read under the lock: samples never go back. */
                uint64_t t = pc__now();

                if (p->fd >= 0 && t - p->at_ns >= PACK_WINDOW_NS)
                        pack_sample(w->rt, p, t);
                pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load_explicit(&p->gen, memory_order_acquire) != w->share.pack_gen)
                pack_apply(w);
}

/* Whether another worker packed like @w, or pinned on one of its CPUs, is
 * awake: one its yield may let run. A parked one waits for work, not for
 * the CPU; a packed one on another of several packed CPUs makes the yield
 * a wasted system call, no worse. */
static bool pack_peer_awake(const struct pc_worker *w)
{
        const struct pc__pack *p = w->pack;

        for (unsigned k = 0; k < p->nw; k++) {
                const struct pc_worker *o = w->rt->workers[p->wid[k]];

                if (o == w || atomic_load_explicit(&o->sleeping, memory_order_relaxed))
                        continue;
                if (atomic_load_explicit(&o->stats.packed, memory_order_relaxed) ||
                    (!atomic_load_explicit(&o->stats.roaming, memory_order_relaxed) &&
                     o->cpu >= 0 && CPU_ISSET(o->cpu, &w->share.on)))
                        return true;
        }
        return false;
}

void pc__pack_turn(struct pc_worker *w, unsigned n, uint64_t now)
{
        /* The turn runs from the last pass that found nothing (or the last
         * yield), and counts the time the worker then slept or waited for
         * the CPU: a worker woken after such a wait serves what it found
         * in one pass and lets the next one run, as that one has likely
         * waited as long. */
        if (n == 0 || w->share.turn_ns == 0) {
                w->share.turn_ns = now;
        } else if (now - w->share.turn_ns >= PACK_TURN_NS) {
                if (!pack_peer_awake(w)) {
                        w->share.turn_ns = now; /* nobody of ours to let run */
                        return;
                }
                sched_yield();
                w->share.turn_ns = pc__now();
                atomic_store_explicit(&w->stats.yields,
                                      atomic_load_explicit(&w->stats.yields,
                                                           memory_order_relaxed) + 1,
                                      memory_order_relaxed);
        }
}

int pc__pack_setup(struct pc_runtime *rt)
{
        if (!rt->cfg.overprovisioned || !rt->cfg.pin)
                return 0;
        rt->packs = calloc(rt->nworkers, sizeof(*rt->packs));
        if (rt->packs == NULL)
                return -ENOMEM;
        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct pc_worker *w = rt->workers[i];
                struct pc__pack *p = NULL;
                cpu_set_t set;

                if (w->cpu < 0 || roam_set(w, &set, NULL, 0) < 2)
                        continue;
                for (unsigned k = 0; k < rt->npacks; k++)
                        if (rt->packs[k]->node == w->node)
                                p = rt->packs[k];
                if (p == NULL) {
                        p = calloc(1, sizeof(*p));
                        if (p == NULL)
                                return -ENOMEM;
                        pthread_mutex_init(&p->lock, NULL);
                        p->node = w->node;
                        p->fd = -1;
                        rt->packs[rt->npacks++] = p;
                        for (int c = 0; c < PC_MAX_CPUS; c++)
                                if (CPU_ISSET(c, &set))
                                        p->cpu[p->n++] = c;
                        p->cap = 4096;
                        p->buf = malloc(p->cap);
                        if (p->buf == NULL)
                                return -ENOMEM;
                        /* Without it (no /proc) workers roam unpacked. */
                        p->fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
                }
                p->wid[p->nw++] = i;
                w->pack = p;
        }
        return 0;
}

void pc__pack_free(struct pc_runtime *rt)
{
        for (unsigned k = 0; k < rt->npacks; k++) {
                struct pc__pack *p = rt->packs[k];

                if (p->fd >= 0)
                        close(p->fd);
                pthread_mutex_destroy(&p->lock);
                free(p->buf);
                free(p);
        }
        free(rt->packs);
        rt->packs = NULL;
        rt->npacks = 0;
}

/* This worker's slot in its node's packing. */
static unsigned pack_slot(const struct pc_worker *w)
{
        for (unsigned k = 0; k < w->pack->nw; k++)
                if (w->pack->wid[k] == w->id)
                        return k;
        return 0; /* not reached: pc__pack_setup() put it there */
}

/* --- roaming -------------------------------------------------------- */

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
        w->share.packed = false;
        w->share.turn_ns = 0;
        atomic_store_explicit(&w->stats.roaming, 0, memory_order_relaxed);
        atomic_store_explicit(&w->stats.packed, 0, memory_order_relaxed);
        batch_leave(w);
}

static void roam(struct pc_worker *w, uint64_t wait_ns, uint64_t wall_ns)
{
        cpu_set_t set;
        char list[64];

        if (roam_set(w, &set, list, sizeof(list)) < 2)
                return;
        if (!run_on(w, &set))
                return;
        w->share.roaming = true;
        w->share.packed = false;
        w->share.calm = 0;
        batch_enter(w);
        if (w->pack)
                pack_tick(w, pc__now()); /* the node's packing, if it packs now */
        atomic_store_explicit(&w->stats.roaming, 1, memory_order_relaxed);
        atomic_store_explicit(&w->stats.roams,
                              atomic_load_explicit(&w->stats.roams, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        if (w->share.told)
                return;
        w->share.told = true;
        pc_log(PC_LOG_INFO,
               "worker %u waited for CPU %d %" PRIu64 "%% of %" PRIu64
               " ms (another thread runs there): it runs on CPUs %s%s while that lasts "
               "(PERCORE_OVERPROVISIONED=1)",
               w->id, w->cpu, wait_ns * 100 / wall_ns, wall_ns / 1000000, list,
               w->share.policy >= 0 ? " as SCHED_BATCH" : "");
}

enum pc__share_move pc__share_judge(struct pc__share *s, uint64_t wait_ns, uint64_t wall_ns)
{
        if (wall_ns == 0)
                return PC_SHARE_STAY;
        if (!s->roaming) {
                if (wait_ns * 100 >= wall_ns * SHARE_WAIT_HI) {
                        /* Every roam after the first asks a longer calm. */
                        if (s->roams++)
                                s->calm_need = s->calm_need * 2 < SHARE_CALM_MAX
                                                       ? s->calm_need * 2
                                                       : SHARE_CALM_MAX;
                        return PC_SHARE_ROAM;
                }
                return PC_SHARE_STAY;
        }
        if (wait_ns * 100 > wall_ns * SHARE_WAIT_LO) {
                s->calm = 0;
                return PC_SHARE_STAY;
        }
        if (++s->calm < s->calm_need)
                return PC_SHARE_STAY;
        s->calm = 0;
        return PC_SHARE_PIN;
}

void pc__share_start(struct pc_worker *w)
{
        const struct pc_runtime *rt = w->rt;
        cpu_set_t set;
        int64_t d;

        w->share = (struct pc__share){.fd = -1, .calm_need = SHARE_CALM, .policy = -1};
        atomic_store_explicit(&w->stats.roaming, 0, memory_order_relaxed);
        atomic_store_explicit(&w->stats.packed, 0, memory_order_relaxed);
        if (!rt->cfg.overprovisioned || !rt->cfg.pin || w->cpu < 0 ||
            roam_set(w, &set, NULL, 0) < 2)
                return;
        if (w->pack) {
                struct pc__pack *p = w->pack;
                uint64_t now;

                w->share.pack_gen = atomic_load_explicit(&p->gen, memory_order_acquire);
                w->share.slot = pack_slot(w);
                atomic_store_explicit(&p->tid[w->share.slot], (int)gettid(),
                                      memory_order_relaxed);
                atomic_store_explicit(&p->where[w->share.slot], sched_getcpu(),
                                      memory_order_relaxed);
                /* A first sample now, so that a worker that roams soon
                 * has a window behind it to judge. */
                pthread_mutex_lock(&p->lock);
                now = pc__now();
                if (p->fd >= 0 && now - p->at_ns > 4 * PACK_WINDOW_NS)
                        pack_sample(rt, p, now);
                pthread_mutex_unlock(&p->lock);
        }
        w->share.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (w->share.fd < 0)
                return; /* no scheduler statistics here: stays as it is */
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
        if (w->pack)
                atomic_store_explicit(&w->pack->where[s->slot], sched_getcpu(),
                                      memory_order_relaxed);
        switch (pc__share_judge(s, wait, wall)) {
        case PC_SHARE_ROAM:
                roam(w, wait, wall);
                break;
        case PC_SHARE_PIN:
                pin_home(w);
                break;
        case PC_SHARE_STAY:
                /* Packed workers wait for each other: no calm windows then
                 * (the others' use of the CPUs unpacks them first). */
                if (s->roaming && w->pack)
                        pack_tick(w, now);
                break;
        }
}

void pc__share_stop(struct pc_worker *w)
{
        if (w->share.roaming)
                pin_home(w); /* the thread leaves as its launcher pinned it */
        if (w->pack)
                atomic_store_explicit(&w->pack->tid[w->share.slot], 0, memory_order_relaxed);
        if (w->share.fd >= 0)
                close(w->share.fd);
        w->share.fd = -1;
}
