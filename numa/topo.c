/* SPDX-License-Identifier: MIT */
/*
 * The loader-independent half of the topology: allocation, the common
 * numbering pass both loaders end with, the flat fallback, and lookups.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_pvt.h"

int pc__set_last(const uint64_t *set, unsigned nbits)
{
        for (int i = (int)nbits - 1; i >= 0; i--)
                if (pc__bit(set, (unsigned)i))
                        return i;
        return -1;
}

struct pc_topo *pc__topo_alloc(unsigned ncpus, unsigned nnodes)
{
        struct pc_topo *t = calloc(1, sizeof(*t));

        if (t == NULL)
                return NULL;
        t->ncpus = ncpus;
        t->nnodes = nnodes;
        t->cpu = calloc(ncpus ? ncpus : 1, sizeof(*t->cpu));
        t->node = calloc(nnodes ? nnodes : 1, sizeof(*t->node));
        t->distance = calloc(nnodes ? (size_t)nnodes * nnodes : 1, 1);
        if (t->cpu == NULL || t->node == NULL || t->distance == NULL) {
                pc_topo_free(t);
                return NULL;
        }
        for (unsigned c = 0; c < ncpus; c++) {
                struct pc_topo_cpu *p = &t->cpu[c];
                p->cpu = (int)c;
                p->package = p->die = p->core = p->core_id = -1;
                p->smt_rank = p->l3 = p->node = -1;
        }
        for (unsigned i = 0; i < nnodes; i++) {
                t->node[i].id = -1;
                t->node[i].has_memory = true;
        }
        return t;
}

void pc_topo_free(struct pc_topo *t)
{
        if (t == NULL)
                return;
        free(t->cpu);
        free(t->node);
        free(t->distance);
        free(t);
}

/* Replace representative CPUs in the field at @off of every online CPU by
 * dense indexes, in order of each group's lowest CPU; -1 stays -1. When
 * @rank is set, also rank each CPU within its group. Returns the number
 * of groups, or -EINVAL for a representative that is not an online CPU. */
static int densify(struct pc_topo *t, size_t off, bool rank)
{
        int *dense = malloc(t->ncpus * sizeof(int));
        int *count = calloc(t->ncpus, sizeof(int));
        int ngroups = 0;

        if (dense == NULL || count == NULL) {
                free(dense);
                free(count);
                return -ENOMEM;
        }
        for (unsigned c = 0; c < t->ncpus; c++)
                dense[c] = -1;
        for (unsigned c = 0; c < t->ncpus; c++) {
                struct pc_topo_cpu *p = &t->cpu[c];
                int *field = (int *)((char *)p + off);

                if (!p->online || *field < 0)
                        continue;
                if ((unsigned)*field >= t->ncpus || !t->cpu[*field].online) {
                        ngroups = -EINVAL;
                        break;
                }
                if (dense[*field] < 0)
                        dense[*field] = ngroups++;
                *field = dense[*field];
                if (rank)
                        p->smt_rank = count[*field]++;
        }
        free(dense);
        free(count);
        return ngroups;
}

int pc__topo_finish(struct pc_topo *t, const uint64_t *allowed)
{
        int n, pkgs[PC_TOPO_MAX_CPUS];
        unsigned npkgs = 0;

        n = densify(t, offsetof(struct pc_topo_cpu, core), true);
        if (n < 0)
                return n;
        t->ncores = (unsigned)n;
        n = densify(t, offsetof(struct pc_topo_cpu, l3), false);
        if (n < 0)
                return n;
        t->nl3 = (unsigned)n;

        for (unsigned i = 0; i < t->nnodes; i++) {
                memset(t->node[i].cpus, 0, sizeof(t->node[i].cpus));
                t->node[i].ncpus = 0;
        }
        t->nonline = t->nusable = 0;
        for (unsigned c = 0; c < t->ncpus; c++) {
                struct pc_topo_cpu *p = &t->cpu[c];
                unsigned k;
                int ni;

                if (!p->online)
                        continue;
                ni = pc_topo_node_index(t, p->node);
                if (ni < 0 || p->package < 0 || p->core < 0)
                        return -EINVAL;
                pc__bit_set(t->node[ni].cpus, c);
                t->node[ni].ncpus++;
                t->nonline++;
                p->usable = allowed == NULL || pc__bit(allowed, c);
                t->nusable += p->usable;
                if (p->die < 0)
                        p->die = p->package;
                for (k = 0; k < npkgs && pkgs[k] != p->package; k++)
                        ;
                if (k == npkgs)
                        pkgs[npkgs++] = p->package;
        }
        t->npackages = npkgs;
        return 0;
}

int pc__topo_flat(const uint64_t *online, const uint64_t *allowed, const char *source,
                  struct pc_topo **out)
{
        int last = pc__set_last(online, PC_TOPO_MAX_CPUS);
        struct pc_topo *t;
        int rc;

        if (last < 0)
                return -EINVAL;
        t = pc__topo_alloc((unsigned)last + 1, 1);
        if (t == NULL)
                return -ENOMEM;
        t->node[0].id = 0;
        t->distance[0] = 10;
        for (unsigned c = 0; c < t->ncpus; c++) {
                struct pc_topo_cpu *p = &t->cpu[c];

                if (!pc__bit(online, c))
                        continue;
                p->online = true;
                p->package = p->die = 0;
                p->core = (int)c;
                p->core_id = (int)c;
                p->node = 0;
        }
        rc = pc__topo_finish(t, allowed);
        if (rc) {
                pc_topo_free(t);
                return rc;
        }
        t->flat_fallback = true;
        snprintf(t->source, sizeof(t->source), "%s (flat fallback)", source);
        *out = t;
        return 0;
}

int pc_topo_affinity(uint64_t *set)
{
        cpu_set_t *cs;
        size_t sz = CPU_ALLOC_SIZE(PC_TOPO_MAX_CPUS);
        int n = 0;

        if (set == NULL)
                return -EINVAL;
        cs = CPU_ALLOC(PC_TOPO_MAX_CPUS);
        if (cs == NULL)
                return -ENOMEM;
        if (sched_getaffinity(0, sz, cs) != 0) {
                int err = errno;
                CPU_FREE(cs);
                return -err;
        }
        memset(set, 0, PC_CPUSET_WORDS * sizeof(uint64_t));
        for (unsigned c = 0; c < PC_TOPO_MAX_CPUS; c++) {
                if (CPU_ISSET_S(c, sz, cs)) {
                        pc__bit_set(set, c);
                        n++;
                }
        }
        CPU_FREE(cs);
        return n;
}

int pc_topo_node_index(const struct pc_topo *t, int id)
{
        if (t == NULL)
                return -EINVAL;
        for (unsigned i = 0; i < t->nnodes; i++)
                if (t->node[i].id == id)
                        return (int)i;
        return -ENOENT;
}

int pc_topo_node_of_cpu(const struct pc_topo *t, int cpu)
{
        if (t == NULL || cpu < 0 || (unsigned)cpu >= t->ncpus || !t->cpu[cpu].online)
                return -EINVAL;
        return t->cpu[cpu].node;
}

int pc_topo_distance(const struct pc_topo *t, int a, int b)
{
        int ia = pc_topo_node_index(t, a), ib = pc_topo_node_index(t, b);

        if (ia < 0 || ib < 0)
                return -EINVAL;
        return t->distance[(unsigned)ia * t->nnodes + (unsigned)ib];
}
