/* SPDX-License-Identifier: MIT */
/*
 * Where workers go (placement) and whom an idle worker robs first (steal
 * tiers). Both are computed once at start from the topology, so clarity
 * wins over speed here: sorting a few hundred CPUs costs nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo_pvt.h"

/* A usable CPU and the keys it is sorted by. */
struct slot {
        int cpu;
        int keys[4];
};

static int slot_cmp(const void *a, const void *b)
{
        const struct slot *x = a, *y = b;

        for (int i = 0; i < 4; i++)
                if (x->keys[i] != y->keys[i])
                        return x->keys[i] < y->keys[i] ? -1 : 1;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* Rank of usable CPU @c among usable CPUs before it that match it on
 * @same (threads of its core, or first threads of its L3...). Quadratic,
 * and that is fine at start-up. */
typedef bool (*same_fn)(const struct pc_topo_cpu *a, const struct pc_topo_cpu *b);

static int rank_among(const struct pc_topo *t, const int *prank, unsigned c, same_fn same)
{
        int r = 0;

        for (unsigned o = 0; o < c; o++)
                if (t->cpu[o].usable && (prank == NULL || prank[o] == prank[c]) &&
                    same(&t->cpu[o], &t->cpu[c]))
                        r++;
        return r;
}

static bool same_core(const struct pc_topo_cpu *a, const struct pc_topo_cpu *b)
{
        return a->core == b->core;
}

static bool same_node_l3(const struct pc_topo_cpu *a, const struct pc_topo_cpu *b)
{
        return a->node == b->node && a->l3 == b->l3;
}

/* Spread's position of usable CPU @c within its node: the node's CPUs of
 * the same thread rank, dealt one per L3 in turn (first of every L3, then
 * second of every L3...), so a node's workers spread over its caches. */
static int node_slot(const struct pc_topo *t, const int *prank, const int *l3rank,
                     unsigned c)
{
        const struct pc_topo_cpu *p = &t->cpu[c];
        int r = 0;

        for (unsigned o = 0; o < t->ncpus; o++) {
                const struct pc_topo_cpu *q = &t->cpu[o];

                if (o == c || !q->usable || q->node != p->node || prank[o] != prank[c])
                        continue;
                if (l3rank[o] < l3rank[c] ||
                    (l3rank[o] == l3rank[c] &&
                     (q->l3 < p->l3 || (q->l3 == p->l3 && o < c))))
                        r++;
        }
        return r;
}

/* Spread's node order: the k-th node of each package, for k = 0, 1, ...,
 * so that consecutive workers land on different packages before they land
 * on two nodes of one package. A node's package is its first CPU's. */
static void spread_node_order(const struct pc_topo *t, int *pos)
{
        struct slot s[PC_TOPO_MAX_NODES];
        unsigned n = 0;

        for (unsigned i = 0; i < t->nnodes; i++) {
                int pkg = 0, k = 0;

                for (unsigned c = 0; c < t->ncpus; c++) {
                        if (t->cpu[c].usable && t->cpu[c].node == t->node[i].id) {
                                pkg = t->cpu[c].package;
                                break;
                        }
                }
                for (unsigned j = 0; j < i; j++)
                        if (s[j].keys[1] == pkg)
                                k++;
                s[n].cpu = (int)i;
                s[n].keys[0] = k;
                s[n].keys[1] = pkg;
                s[n].keys[2] = t->node[i].id;
                s[n].keys[3] = 0;
                n++;
        }
        qsort(s, n, sizeof(s[0]), slot_cmp);
        for (unsigned i = 0; i < n; i++)
                pos[s[i].cpu] = (int)i;
}

int pc_topo_place(const struct pc_topo *t, unsigned nworkers, enum pc_placement placement,
                  bool pin, int *cpus_out)
{
        int *prank, *l3rank, *node_pos;
        struct slot *s;
        unsigned n = 0;

        if (t == NULL || cpus_out == NULL || nworkers == 0 ||
            nworkers > PC_TOPO_MAX_WORKERS ||
            (placement != PC_PLACE_COMPACT && placement != PC_PLACE_SPREAD))
                return -EINVAL;
        if (t->nusable == 0)
                return -ENODEV;
        if (nworkers > t->nusable && pin)
                return -EINVAL;
        prank = calloc(t->ncpus, sizeof(*prank));
        l3rank = calloc(t->ncpus, sizeof(*l3rank));
        s = calloc(t->nusable, sizeof(*s));
        node_pos = calloc(t->nnodes ? t->nnodes : 1, sizeof(*node_pos));
        if (prank == NULL || l3rank == NULL || s == NULL || node_pos == NULL) {
                n = 0;
                goto out;
        }

        /* A thread's rank among the *usable* threads of its core: if thread
         * 0 is not allowed, thread 1 is the core's first. */
        for (unsigned c = 0; c < t->ncpus; c++)
                if (t->cpu[c].usable)
                        prank[c] = rank_among(t, NULL, c, same_core);
        if (placement == PC_PLACE_SPREAD) {
                spread_node_order(t, node_pos);
                for (unsigned c = 0; c < t->ncpus; c++)
                        if (t->cpu[c].usable)
                                l3rank[c] = rank_among(t, prank, c, same_node_l3);
        }

        for (unsigned c = 0; c < t->ncpus; c++) {
                const struct pc_topo_cpu *p = &t->cpu[c];
                int ni;

                if (!p->usable)
                        continue;
                ni = pc_topo_node_index(t, p->node);
                s[n].cpu = (int)c;
                if (placement == PC_PLACE_COMPACT) {
                        s[n].keys[0] = ni;
                        s[n].keys[1] = prank[c];
                        s[n].keys[2] = p->l3;
                        s[n].keys[3] = 0;
                } else {
                        s[n].keys[0] = prank[c];
                        s[n].keys[1] = node_slot(t, prank, l3rank, c);
                        s[n].keys[2] = node_pos[ni];
                        s[n].keys[3] = 0;
                }
                n++;
        }
        qsort(s, n, sizeof(s[0]), slot_cmp);
        for (unsigned w = 0; w < nworkers; w++)
                cpus_out[w] = s[w % n].cpu;
out:
        free(prank);
        free(l3rank);
        free(s);
        free(node_pos);
        return n ? 0 : -ENOMEM;
}

static bool cpu_known(const struct pc_topo *t, int cpu)
{
        return cpu >= 0 && (unsigned)cpu < t->ncpus && t->cpu[cpu].online;
}

/* A victim's tier as one sortable number: its kind, then its distance. */
static int tier_key(const struct pc_topo *t, const struct pc_topo_cpu *me,
                    const struct pc_topo_cpu *v)
{
        int d = pc_topo_distance(t, me->node, v->node);
        enum pc_tier_kind kind;

        if (d < 0)
                d = 255;
        if (me->core == v->core || (me->l3 >= 0 && me->l3 == v->l3))
                kind = PC_TIER_CACHE;
        else if (me->node == v->node)
                kind = PC_TIER_NODE;
        else if (me->package == v->package)
                kind = PC_TIER_PACKAGE;
        else
                kind = PC_TIER_REMOTE;
        return (int)kind * 256 + d;
}

int pc_topo_steal_tiers(const struct pc_topo *t, const int *worker_cpus,
                        unsigned nworkers, unsigned w, struct pc_steal_order *out)
{
        int keys[PC_TOPO_MAX_WORKERS], distinct[PC_TOPO_MAX_WORKERS];
        unsigned ndistinct = 0, n = 0;

        if (t == NULL || worker_cpus == NULL || out == NULL || nworkers == 0 ||
            nworkers > PC_TOPO_MAX_WORKERS || w >= nworkers)
                return -EINVAL;
        for (unsigned v = 0; v < nworkers; v++)
                if (!cpu_known(t, worker_cpus[v]))
                        return -EINVAL;

        memset(out, 0, sizeof(*out));
        for (unsigned v = 0; v < nworkers; v++) {
                unsigned i;

                if (v == w)
                        continue;
                keys[v] = tier_key(t, &t->cpu[worker_cpus[w]], &t->cpu[worker_cpus[v]]);
                for (i = 0; i < ndistinct && distinct[i] < keys[v]; i++)
                        ;
                if (i < ndistinct && distinct[i] == keys[v])
                        continue;
                memmove(&distinct[i + 1], &distinct[i], (ndistinct - i) * sizeof(int));
                distinct[i] = keys[v];
                ndistinct++;
        }

        /* Past the last tier everything is far anyway: share the last one. */
        out->ntiers = ndistinct < PC_TOPO_MAX_TIERS ? ndistinct : PC_TOPO_MAX_TIERS;
        for (unsigned i = 0; i < out->ntiers; i++) {
                out->tier_start[i] = n;
                out->tier_kind[i] = (uint8_t)(distinct[i] / 256);
                out->tier_distance[i] = (uint8_t)(distinct[i] % 256);
                for (unsigned v = 0; v < nworkers; v++) {
                        bool last = i + 1 == out->ntiers;
                        if (v != w &&
                            (keys[v] == distinct[i] || (last && keys[v] > distinct[i])))
                                out->victims[n++] = (uint16_t)v;
                }
        }
        out->tier_start[out->ntiers] = n;
        out->nvictims = n;
        return 0;
}

const char *pc_topo_tier_name(enum pc_tier_kind kind)
{
        static const char *const names[] = {"cache", "node", "package", "remote"};

        return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}
