/* SPDX-License-Identifier: MIT */
/*
 * Printing a topology and a worker map, as tables for people or JSON for
 * scripts (percore-topo --json, the bench's recorded configuration).
 */
#include <errno.h>
#include <stdio.h>

#include "topo_pvt.h"

/* A CPU list as long as the longest PC_TOPO_MAX_CPUS-bit set can need. */
#define LIST_MAX 4096

static const char *yes(bool b)
{
        return b ? "yes" : "no";
}

static void json_string(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;
                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch < 0x20)
                        fprintf(f, "\\u%04x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

static void set_of(const struct pc_topo *t, bool (*in)(const struct pc_topo_cpu *, int),
                   int arg, uint64_t *set)
{
        for (unsigned w = 0; w < PC_CPUSET_WORDS; w++)
                set[w] = 0;
        for (unsigned c = 0; c < t->ncpus; c++)
                if (in(&t->cpu[c], arg))
                        pc__bit_set(set, c);
}

static bool is_online(const struct pc_topo_cpu *p, int arg)
{
        (void)arg;
        return p->online;
}

static bool is_usable(const struct pc_topo_cpu *p, int arg)
{
        (void)arg;
        return p->usable;
}

static bool in_l3(const struct pc_topo_cpu *p, int l3)
{
        return p->online && p->l3 == l3;
}

static int finish(FILE *f)
{
        return ferror(f) ? -EIO : 0;
}

/* The machine's fields of a JSON object, without its braces: percore-topo
 * puts the worker map in the same object. */
static void json_machine_fields(const struct pc_topo *t, FILE *f, char *list)
{
        uint64_t set[PC_CPUSET_WORDS];
        unsigned nn = t->nnodes;

        fprintf(f, "\"source\":");
        json_string(f, t->source);
        fprintf(f, ",\"flat_fallback\":%s", t->flat_fallback ? "true" : "false");
        set_of(t, is_online, 0, set);
        pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
        fprintf(f, ",\"online\":\"%s\"", list);
        set_of(t, is_usable, 0, set);
        pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
        fprintf(f, ",\"usable\":\"%s\"", list);
        fprintf(f,
                ",\"counts\":{\"cpus\":%u,\"online\":%u,\"usable\":%u,\"cores\":%u,"
                "\"packages\":%u,\"l3\":%u,\"nodes\":%u}",
                t->ncpus, t->nonline, t->nusable, t->ncores, t->npackages, t->nl3, nn);
        fprintf(f, ",\"cpus\":[");
        for (unsigned c = 0, first = 1; c < t->ncpus; c++) {
                const struct pc_topo_cpu *p = &t->cpu[c];
                if (!p->online)
                        continue;
                fprintf(
                    f,
                    "%s{\"cpu\":%d,\"usable\":%s,\"package\":%d,\"die\":%d,\"core\":%d,"
                    "\"core_id\":%d,\"smt_rank\":%d,\"l3\":%d,\"node\":%d,\"smt_siblings\":[",
                    first ? "" : ",", p->cpu, p->usable ? "true" : "false", p->package,
                    p->die, p->core, p->core_id, p->smt_rank, p->l3, p->node);
                for (unsigned o = 0, n = 0; o < t->ncpus; o++)
                        if (o != c && t->cpu[o].online && t->cpu[o].core == p->core)
                                fprintf(f, "%s%u", n++ ? "," : "", o);
                fprintf(f, "]}");
                first = 0;
        }
        fprintf(f, "],\"nodes\":[");
        for (unsigned i = 0; i < nn; i++) {
                pc_cpulist_format(t->node[i].cpus, PC_TOPO_MAX_CPUS, list, LIST_MAX);
                fprintf(f,
                        "%s{\"node\":%d,\"id\":%d,\"has_memory\":%s,\"cpulist\":\"%s\","
                        "\"cpus\":[",
                        i ? "," : "", t->node[i].id, t->node[i].id,
                        t->node[i].has_memory ? "true" : "false", list);
                for (unsigned c = 0, n = 0; c < PC_TOPO_MAX_CPUS; c++)
                        if (t->node[i].cpus[c / 64] >> (c % 64) & 1)
                                fprintf(f, "%s%u", n++ ? "," : "", c);
                fprintf(f, "],\"distance\":[");
                for (unsigned j = 0; j < nn; j++)
                        fprintf(f, "%s%u", j ? "," : "", t->distance[i * nn + j]);
                fprintf(f, "]}");
        }
        fprintf(f, "],\"l3\":[");
        for (unsigned l = 0; l < t->nl3; l++) {
                set_of(t, in_l3, (int)l, set);
                pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
                fprintf(f, "%s\"%s\"", l ? "," : "", list);
        }
        fprintf(f, "]");
}

static void format_table(const struct pc_topo *t, FILE *f, char *list)
{
        uint64_t set[PC_CPUSET_WORDS];
        unsigned nn = t->nnodes;

        fprintf(f, "source: %s%s\n", t->source,
                t->flat_fallback ? "  (WARNING: flat fallback, detail unknown)" : "");
        set_of(t, is_online, 0, set);
        pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
        fprintf(f, "online: %u CPUs (%s)\n", t->nonline, list);
        set_of(t, is_usable, 0, set);
        pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
        fprintf(f, "usable: %u CPUs (%s)\n", t->nusable, list);
        fprintf(f, "packages: %u, nodes: %u, L3 caches: %u, cores: %u\n\n", t->npackages,
                nn, t->nl3, t->ncores);

        fprintf(f, "%5s %6s %7s %4s %5s %7s %4s %4s %5s\n", "cpu", "usable", "package",
                "die", "core", "core_id", "smt", "l3", "node");
        for (unsigned c = 0; c < t->ncpus; c++) {
                const struct pc_topo_cpu *p = &t->cpu[c];
                if (!p->online) {
                        fprintf(f, "%5u offline\n", c);
                        continue;
                }
                fprintf(f, "%5d %6s %7d %4d %5d %7d %4d %4d %5d\n", p->cpu,
                        yes(p->usable), p->package, p->die, p->core, p->core_id,
                        p->smt_rank, p->l3, p->node);
        }

        fprintf(f, "\n%5s %6s  %s\n", "node", "memory", "cpus");
        for (unsigned i = 0; i < nn; i++) {
                pc_cpulist_format(t->node[i].cpus, PC_TOPO_MAX_CPUS, list, LIST_MAX);
                fprintf(f, "%5d %6s  %s\n", t->node[i].id, yes(t->node[i].has_memory),
                        list[0] ? list : "(none)");
        }

        fprintf(f, "\ndistances\n%5s", "");
        for (unsigned j = 0; j < nn; j++)
                fprintf(f, " %4d", t->node[j].id);
        fputc('\n', f);
        for (unsigned i = 0; i < nn; i++) {
                fprintf(f, "%5d", t->node[i].id);
                for (unsigned j = 0; j < nn; j++)
                        fprintf(f, " %4u", t->distance[i * nn + j]);
                fputc('\n', f);
        }

        fprintf(f, "\nL3 groups%s\n", t->nl3 ? "" : ": none known");
        for (unsigned l = 0; l < t->nl3; l++) {
                set_of(t, in_l3, (int)l, set);
                pc_cpulist_format(set, t->ncpus, list, LIST_MAX);
                fprintf(f, "%5u  %s\n", l, list);
        }
}

int pc_topo_format(const struct pc_topo *t, FILE *f, bool json)
{
        char list[LIST_MAX];

        if (t == NULL || f == NULL)
                return -EINVAL;
        if (json) {
                fputc('{', f);
                json_machine_fields(t, f, list);
                fputc('}', f);
        } else
                format_table(t, f, list);
        return finish(f);
}

int pc_topo_format_workers(const struct pc_topo *t, const int *worker_cpus,
                           unsigned nworkers, FILE *f, bool json)
{
        struct pc_steal_order o;
        int rc;

        if (t == NULL || worker_cpus == NULL || f == NULL || nworkers == 0)
                return -EINVAL;
        /* Validate every worker before printing anything. */
        for (unsigned w = 0; w < nworkers; w++)
                if ((rc = pc_topo_steal_tiers(t, worker_cpus, nworkers, w, &o)) != 0)
                        return rc;

        if (json) {
                char list[LIST_MAX];
                fputc('{', f);
                json_machine_fields(t, f, list);
                fprintf(f, ",\"workers\":[");
        } else
                fprintf(f, "%6s %5s %5s %4s %7s %4s  %s\n", "worker", "lcore", "cpu",
                        "node", "package", "l3", "steal tiers (nearest first)");
        for (unsigned w = 0; w < nworkers; w++) {
                const struct pc_topo_cpu *p = &t->cpu[worker_cpus[w]];

                pc_topo_steal_tiers(t, worker_cpus, nworkers, w, &o);
                if (json)
                        fprintf(f,
                                "%s{\"worker\":%u,\"lcore\":%u,\"cpu\":%d,\"node\":%d,"
                                "\"package\":%d,\"l3\":%d,\"tiers\":[",
                                w ? "," : "", w, w, p->cpu, p->node, p->package, p->l3);
                else
                        fprintf(f, "%6u %5u %5d %4d %7d %4d ", w, w, p->cpu, p->node,
                                p->package, p->l3);
                for (unsigned i = 0; i < o.ntiers; i++) {
                        const char *name =
                            pc_topo_tier_name((enum pc_tier_kind)o.tier_kind[i]);

                        if (json)
                                fprintf(
                                    f, "%s{\"kind\":\"%s\",\"distance\":%u,\"victims\":[",
                                    i ? "," : "", name, o.tier_distance[i]);
                        else
                                fprintf(f, " %s(%u):", name, o.tier_distance[i]);
                        for (unsigned k = o.tier_start[i]; k < o.tier_start[i + 1]; k++)
                                fprintf(f, "%s%u", k > o.tier_start[i] ? "," : "",
                                        o.victims[k]);
                        if (json)
                                fprintf(f, "]}");
                }
                if (json) {
                        /* The same tiers as plain lists, nearest first. */
                        fprintf(f, "],\"steal_tiers\":[");
                        for (unsigned i = 0; i < o.ntiers; i++) {
                                fprintf(f, "%s[", i ? "," : "");
                                for (unsigned k = o.tier_start[i]; k < o.tier_start[i + 1];
                                     k++)
                                        fprintf(f, "%s%u", k > o.tier_start[i] ? "," : "",
                                                o.victims[k]);
                                fputc(']', f);
                        }
                }
                fprintf(f, json ? "]}" : "\n");
        }
        if (json)
                fprintf(f, "]}");
        return finish(f);
}
