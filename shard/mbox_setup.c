/* SPDX-License-Identifier: MIT */
/*
 * Mailboxes, setup and stats: the matrix laid out (one block per receiver,
 * on its node: doorbell, 2N rings, the call slots), each worker's
 * bookkeeping, the poller registered as a worker starts, teardown, and the
 * counters pc_shard_stats() and the metrics scrape read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "mbox_pvt.h"

__thread struct pc__shard_worker *pc__shard_here PC_TLS_IE;

/* Module start hook: on every run, the worker's thread finds its shard
 * state; the first time, it registers its poller, before it runs
 * anything. */
static void shard_worker_start(struct pc_worker *w, void *arg)
{
        struct pc__shard *sh = arg;
        struct pc__shard_worker *sw = sh->sw[w->id];
        int rc;

        pc__shard_here = sw;
        if (sw->poller != NULL)
                return;
        rc = pc_poller_register(&pc__mbox_ops, sw, &sw->poller);
        if (rc)
                pc_log(PC_LOG_ERROR, "worker %u: cannot register the mailbox poller: %s",
                       w->id, pc_strerror(rc));
        else
                pc__poller_hint(sw->poller, mbox_hints(sw));
}

/* Module stop hook: the thread may run another runtime's worker next. */
static void shard_worker_stop(struct pc_worker *w, void *arg)
{
        (void)w, (void)arg;
        pc__shard_here = NULL;
}

static void shard_free(struct pc__shard *sh)
{
        for (unsigned i = 0; i < sh->n; i++) {
                if (sh->sw[i]) {
                        free(sh->sw[i]->empty_polls);
                        free(sh->sw[i]->fenced_head);
                        free(sh->sw[i]->cout);
                        free(sh->sw[i]->slot_next);
                        free(sh->sw[i]->slot_off);
                        free(sh->sw[i]->out);
                        free(sh->sw[i]);
                }
                if (sh->in[i])
                        pc_numa_free(sh->in[i], sh->in_bytes);
        }
        free(sh);
}

static void shard_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg);
static void shard_destroy(struct pc_runtime *rt, void *arg);

/* @rt's shard layer, NULL before pc_shard_init(). */
static struct pc__shard *shard_of(const struct pc_runtime *rt)
{
        for (const struct pc__module *m = rt->modules; m; m = m->next)
                if (m->destroy == shard_destroy)
                        return m->arg;
        return NULL;
}

/* Module destroy hook: join the lane, free the matrix. Overflow nodes are
 * task objects from the workers' chunks, which the core frees. */
static void shard_destroy(struct pc_runtime *rt, void *arg)
{
        struct pc__shard *sh = arg;

        (void)rt;
        pc__blocking_stop(sh);
        shard_free(sh);
}

void pc_shard_opts_init(struct pc_shard_opts *o)
{
        if (o == NULL)
                return;
        o->ring_size = PC_SHARD_RING_DEFAULT;
        o->blocking_threads = PC_SHARD_BLOCKING_DEFAULT;
        o->call_near_ns = PC_CALL_NEAR_NS;
}

/* PREFETCHW (CPUID 0x80000001, ECX bit 8): AMD's since the K6, Intel's
 * since Broadwell; where the CPU lacks it, senders claim no lines. */
static bool cpu_has_prefetchw(void)
{
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;

        return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8));
#else
        return false;
#endif
}

/* A virtual machine (CPUID's hypervisor bit). Where the CPU cannot say,
 * as though it were one: every pair is then timed. */
static bool cpu_is_guest(void)
{
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;

        return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31));
#else
        return true;
#endif
}

bool pc__call_topo_near(const struct pc_topo *t, int a, int b, bool pinned, bool guest)
{
        const struct pc_topo_cpu *ca, *cb;

        if (!pinned || guest || t == NULL || t->flat_fallback || a < 0 || b < 0 ||
            (unsigned)a >= t->ncpus || (unsigned)b >= t->ncpus)
                return false;
        ca = &t->cpu[a];
        cb = &t->cpu[b];
        if (!ca->online || !cb->online)
                return false;
        return (ca->l3 >= 0 && ca->l3 == cb->l3) || ca->node == cb->node;
}

/* Whether the pair (@id, @peer) runs near from the start: always with
 * call_near_ns UINT32_MAX, never with 0, else where the topology says so
 * (see "Near and far"). */
static bool pair_near_at_start(const struct pc__shard *sh, unsigned id, unsigned peer)
{
        const struct pc_runtime *rt = sh->rt;

        if (sh->near_ns == UINT32_MAX || sh->near_ns == 0)
                return sh->near_ns == UINT32_MAX;
        return pc__call_topo_near(pc_runtime_topo(rt), pc_runtime_worker_cpu(rt, id),
                                  pc_runtime_worker_cpu(rt, peer), pc_runtime_config(rt)->pin,
                                  sh->guest);
}

/* Zeroed memory for @n items of @size, in whole cache lines of its own:
 * each worker's arrays are written by it alone, and a line shared with
 * another worker's would bounce between them. */
static void *line_calloc(size_t n, size_t size)
{
        size_t bytes = (n * size + PC_CACHE_LINE - 1) & ~(size_t)(PC_CACHE_LINE - 1);
        void *p;

        if (size && n > SIZE_MAX / 2 / size)
                return NULL;
        p = aligned_alloc(PC_CACHE_LINE, bytes ? bytes : PC_CACHE_LINE);
        if (p)
                memset(p, 0, bytes);
        return p;
}

static int alloc_worker(struct pc__shard *sh, unsigned id)
{
        struct pc__shard_worker *sw;
        void *p;

        /* One block per receiver, on the receiver's node. Its pages are
         * zero (a valid empty ring) and, being an untouched mapping, cost
         * memory only once a pair first talks. */
        p = pc_numa_alloc(sh->in_bytes, pc_runtime_worker_node(sh->rt, id));
        if (p == NULL)
                return -ENOMEM;
        sh->in[id] = p;
        sw = aligned_alloc(PC_CACHE_LINE, sizeof(*sw));
        if (sw == NULL)
                return -ENOMEM;
        memset(sw, 0, sizeof(*sw));
        sh->sw[id] = sw;
        sw->sh = sh;
        sw->w = sh->rt->workers[id];
        sw->id = id;
        sw->n = sh->n;
        sw->db_words = (2 * sh->n + 63) / 64;
        sw->mask = sh->ring_size - 1;
        sw->batch = sh->ring_size / 4 < PC_MBOX_BATCH ? sh->ring_size / 4 : PC_MBOX_BATCH;
        if (sw->batch == 0)
                sw->batch = 1;
        if (sh->ring_size >= 4 * PC_MBOX_CLAIM && cpu_has_prefetchw())
                sw->claim = PC_MBOX_CLAIM;
        sw->in = sh->in[id];
        sw->out = line_calloc(2 * (size_t)sh->n, sizeof(*sw->out));
        sw->empty_polls = line_calloc(2 * (size_t)sh->n, sizeof(*sw->empty_polls));
        sw->fenced_head = line_calloc(2 * (size_t)sh->n, sizeof(*sw->fenced_head));
        sw->cout = line_calloc(sh->n, sizeof(*sw->cout));
        sw->slot_next = line_calloc(sh->n, sizeof(*sw->slot_next));
        sw->slot_off = line_calloc(sh->n, sizeof(*sw->slot_off));
        if (sw->out == NULL || sw->empty_polls == NULL || sw->fenced_head == NULL ||
            sw->cout == NULL || sw->slot_next == NULL || sw->slot_off == NULL)
                return -ENOMEM;
        sw->near_ns = sh->near_ns;
        sw->time_calls = sh->near_ns != 0 && sh->near_ns != UINT32_MAX;
        for (unsigned peer = 0; peer < sh->n; peer++) {
                pc__call_explore_reset(&sw->cout[peer]);
                if (peer != id && pair_near_at_start(sh, id, peer)) {
                        sw->cout[peer].near = true;
                        sw->cout[peer].placed = true;
                        pc__pair_set(sw, 2 * peer + MBOX_REP, PAIR_NEAR);
                }
        }
        return 0;
}

int pc_shard_init(struct pc_runtime *rt, const struct pc_shard_opts *opts)
{
        struct pc_shard_opts o;
        struct pc__shard *sh;
        int rc = 0;

        if (pc__self != NULL)
                return -EPERM;
        if (rt == NULL)
                return -EINVAL;
        pc_shard_opts_init(&o);
        if (opts)
                o = *opts;
        if (o.ring_size < 2 || o.ring_size > PC_SHARD_RING_MAX ||
            (o.ring_size & (o.ring_size - 1)) || o.blocking_threads > PC_SHARD_BLOCKING_MAX)
                return -EINVAL;
        if (atomic_load(&rt->running))
                return -EBUSY;
        if (shard_of(rt) != NULL)
                return -EALREADY;

        sh = calloc(1, sizeof(*sh));
        if (sh == NULL)
                return -ENOMEM;
        sh->rt = rt;
        sh->n = rt->nworkers;
        sh->ring_size = o.ring_size;
        sh->near_ns = o.call_near_ns;
        sh->guest = cpu_is_guest();
        /* Each ring starts on a line: a request ring of 2 entries is half
         * a line of slots, padded. */
        sh->req_stride = sizeof(struct pc__ring) +
                         ((o.ring_size * sizeof(struct pc__req) + PC_CACHE_LINE - 1) &
                          ~(size_t)(PC_CACHE_LINE - 1));
        sh->pair_stride = sh->req_stride + sizeof(struct pc__ring) +
                          o.ring_size * sizeof(struct pc__msg);
        sh->slots_off = sizeof(struct pc__mbox_in) + (size_t)sh->n * sh->pair_stride;
        sh->in_bytes = sh->slots_off + (size_t)sh->n * PC_CSLOTS * sizeof(struct pc__cslot);
        for (unsigned i = 0; i < sh->n && rc == 0; i++)
                rc = alloc_worker(sh, i);
        /* Wire every sender's outbound view to the receiver's ring. */
        for (unsigned s = 0; s < sh->n && rc == 0; s++)
                for (unsigned idx = 0; idx < 2 * sh->n; idx++)
                        sh->sw[s]->out[idx].ring = in_ring(sh, idx / 2, 2 * s + idx % 2);
        if (rc == 0)
                rc = pc__blocking_start(sh, o.blocking_threads);
        if (rc) {
                shard_free(sh);
                return rc;
        }
        sh->mod.arg = sh;
        sh->mod.worker_start = shard_worker_start;
        sh->mod.worker_stop = shard_worker_stop;
        sh->mod.destroy = shard_destroy;
        sh->mod.metrics = shard_metrics;
        pc__module_add(rt, &sh->mod);
        return 0;
}

int pc_shard_stats(const struct pc_runtime *rt, unsigned w, struct pc_shard_stats *out)
{
        const struct pc__shard_counters *c;
        const struct pc__shard *sh;

        if (rt == NULL || out == NULL || w >= rt->nworkers)
                return -EINVAL;
        sh = shard_of(rt);
        if (sh == NULL)
                return -ENODEV;
        c = &sh->sw[w]->c;
#define LD(x) atomic_load_explicit(&c->x, memory_order_relaxed)
        *out = (struct pc_shard_stats){
                .sent = LD(sent),
                .received = LD(received),
                .overflowed = LD(overflowed),
                .flushes = LD(flushes),
                .polls = LD(polls),
                .idle_polls = LD(idle_polls),
                .rings_inspected = LD(rings_inspected),
                .space_waits = LD(space_waits),
                .blocking_done = LD(blocking_done),
                .slot_calls = LD(slot_calls),
                .slot_calls_near = LD(slot_calls_near),
                .near_pairs = LD(near_pairs),
                .far_pairs = LD(far_pairs),
        };
#undef LD
        return 0;
}

/* Module metrics hook: the mailbox counters of every worker. */
static void shard_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg)
{
        static const struct {
                const char *name, *help;
                size_t off;
        } fam[] = {
#define F(n, f, h) {"percore_mailbox_" n, h, offsetof(struct pc_shard_stats, f)}
                F("sent_total", sent,
                  "Messages the worker published to rings or queued in its overflow."),
                F("received_total", received, "Messages the worker took from its rings."),
                F("overflowed_total", overflowed, "Messages that waited in overflow."),
                F("space_waits_total", space_waits,
                  "Times the worker asked a receiver for space."),
                F("blocking_done_total", blocking_done,
                  "Blocking-lane completions it ran."),
#undef F
        };
        struct pc_shard_stats st[PC_MAX_WORKERS];

        (void)arg;
        for (unsigned w = 0; w < rt->nworkers; w++)
                if (pc_shard_stats(rt, w, &st[w]))
                        return;
        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, "counter", fam[f].help);
                for (unsigned w = 0; w < rt->nworkers; w++)
                        pc__prom_worker_u64(p, fam[f].name, w,
                                            *(const uint64_t *)((const char *)&st[w] +
                                                                fam[f].off));
        }
}
