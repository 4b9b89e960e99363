/* SPDX-License-Identifier: MIT */
/*
 * DPDK telemetry commands, readable with dpdk-telemetry.py:
 *   /percore/ports     counters per port; with a port number, per queue
 *   /percore/workers   per-worker counters (cpu, node, lcore, tasks, polls,
 *                      stalls, roams)
 *   /percore/steals    the steal matrix, one row per source
 *   /percore/config    the effective configuration
 *   /percore/mode      the scheduling mode; with tpc or elastic, switch to it
 * DPDK 22.11's callbacks take no argument and cannot be unregistered, so
 * they read the one runtime that owns the EAL through a static pointer,
 * cleared at destroy (a request then gets an error).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dpdk_pvt.h"

static _Atomic(struct pc_runtime *) tel_rt;
static bool registered;

static struct pc_runtime *current(void)
{
        return atomic_load_explicit(&tel_rt, memory_order_acquire);
}

static void put_stats(struct rte_tel_data *d, const struct pc_port_stats *s)
{
        rte_tel_data_add_dict_u64(d, "rx", s->rx);
        rte_tel_data_add_dict_u64(d, "tx", s->tx);
        rte_tel_data_add_dict_u64(d, "drops", s->drops);
        rte_tel_data_add_dict_u64(d, "errors", s->errors);
        rte_tel_data_add_dict_u64(d, "malformed", s->malformed);
        rte_tel_data_add_dict_u64(d, "bad_cksum", s->bad_cksum);
}

static int cmd_ports(const char *cmd, const char *params, struct rte_tel_data *d)
{
        struct pc_runtime *rt = current();
        struct pc_port_stats s;
        char key[32];

        (void)cmd;
        if (rt == NULL)
                return -ENODEV;
        rte_tel_data_start_dict(d);
        if (params && *params) {
                char *end;
                unsigned long i = strtoul(params, &end, 10);
                struct pc_port *p = pc_port_get(rt, (unsigned)i);
                if (*end != '\0' || p == NULL)
                        return -EINVAL;
                for (unsigned q = 0; q < pc__port_queues(p); q++) {
                        struct rte_tel_data *c = rte_tel_data_alloc();
                        if (c == NULL)
                                return -ENOMEM;
                        rte_tel_data_start_dict(c);
                        pc_port_stats(p, (int)q, &s);
                        put_stats(c, &s);
                        snprintf(key, sizeof(key), "queue%u", q);
                        rte_tel_data_add_dict_container(d, key, c, 0);
                }
                return 0;
        }
        for (unsigned i = 0; i < pc_port_count(rt); i++) {
                struct pc_port *p = pc_port_get(rt, i);
                struct rte_tel_data *c = rte_tel_data_alloc();
                if (c == NULL)
                        return -ENOMEM;
                rte_tel_data_start_dict(c);
                pc_port_stats(p, -1, &s);
                rte_tel_data_add_dict_u64(c, "port_id", pc_port_id(p));
                rte_tel_data_add_dict_u64(c, "queues", pc__port_queues(p));
                put_stats(c, &s);
                rte_tel_data_add_dict_container(d, pc_port_name(p), c, 0);
        }
        return 0;
}

static int cmd_workers(const char *cmd, const char *params, struct rte_tel_data *d)
{
        struct pc_runtime *rt = current();
        struct pc_worker_stats ws[PC_MAX_WORKERS];
        char key[32];
        int n;

        (void)cmd;
        (void)params;
        if (rt == NULL)
                return -ENODEV;
        n = pc_stats_snapshot(rt, ws, PC_MAX_WORKERS);
        if (n < 0)
                return n;
        rte_tel_data_start_dict(d);
        for (int i = 0; i < n; i++) {
                struct rte_tel_data *c = rte_tel_data_alloc();
                if (c == NULL)
                        return -ENOMEM;
                rte_tel_data_start_dict(c);
                rte_tel_data_add_dict_int(c, "cpu", ws[i].cpu);
                rte_tel_data_add_dict_int(c, "node", pc_runtime_worker_node(rt, ws[i].worker));
                rte_tel_data_add_dict_u64(c, "lcore", ws[i].worker);
                rte_tel_data_add_dict_u64(c, "tasks_run", ws[i].tasks_run);
                rte_tel_data_add_dict_u64(c, "polls", ws[i].polls);
                rte_tel_data_add_dict_u64(c, "iterations", ws[i].iterations);
                rte_tel_data_add_dict_u64(c, "busy_ns", ws[i].busy_ns);
                rte_tel_data_add_dict_u64(c, "idle_ns", ws[i].idle_ns);
                rte_tel_data_add_dict_u64(c, "stolen", ws[i].stolen);
                rte_tel_data_add_dict_u64(c, "stalls", ws[i].stalls);
                rte_tel_data_add_dict_u64(c, "roams", ws[i].roams);
                rte_tel_data_add_dict_u64(c, "roaming", ws[i].roaming);
                rte_tel_data_add_dict_u64(c, "packed", ws[i].packed);
                rte_tel_data_add_dict_u64(c, "yields", ws[i].yields);
                snprintf(key, sizeof(key), "worker%u", ws[i].worker);
                rte_tel_data_add_dict_container(d, key, c, 0);
        }
        return 0;
}

static int cmd_steals(const char *cmd, const char *params, struct rte_tel_data *d)
{
        struct pc_runtime *rt = current();
        unsigned n;
        uint64_t *m;
        char key[32];

        (void)cmd;
        (void)params;
        if (rt == NULL)
                return -ENODEV;
        n = pc_runtime_workers(rt);
        m = calloc((size_t)(n + 1) * n, sizeof(*m));
        if (m == NULL)
                return -ENOMEM;
        pc_stats_steals(rt, m, (size_t)(n + 1) * n);
        rte_tel_data_start_dict(d);
        /* Row src: tasks each worker (column) took from src; the last row
         * is the global injector. */
        for (unsigned src = 0; src <= n; src++) {
                struct rte_tel_data *row = rte_tel_data_alloc();
                if (row == NULL) {
                        free(m);
                        return -ENOMEM;
                }
                rte_tel_data_start_array(row, RTE_TEL_U64_VAL);
                for (unsigned dst = 0; dst < n; dst++)
                        rte_tel_data_add_array_u64(row, m[src * n + dst]);
                if (src == n)
                        snprintf(key, sizeof(key), "injector");
                else
                        snprintf(key, sizeof(key), "from%u", src);
                rte_tel_data_add_dict_container(d, key, row, 0);
        }
        free(m);
        return 0;
}

static int cmd_config(const char *cmd, const char *params, struct rte_tel_data *d)
{
        struct pc_runtime *rt = current();
        const struct pc_config *c;
        char line[1024];

        (void)cmd;
        (void)params;
        if (rt == NULL)
                return -ENODEV;
        c = pc_runtime_config(rt);
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_string(d, "mode", pc_mode_name(pc_runtime_mode(rt)));
        rte_tel_data_add_dict_u64(d, "workers", pc_runtime_workers(rt));
        rte_tel_data_add_dict_int(d, "pin", c->pin);
        rte_tel_data_add_dict_string(d, "eal_args", c->eal_args ? c->eal_args : "");
        pc_config_format(c, line, sizeof(line));
        /* Telemetry strings are limited in length; the line is cut if
         * longer. */
        line[RTE_TEL_MAX_STRING_LEN - 1] = '\0';
        rte_tel_data_add_dict_string(d, "line", line);
        return 0;
}

/* Read the mode, or with a parameter ("tpc", "elastic") switch to it. */
static int cmd_mode(const char *cmd, const char *params, struct rte_tel_data *d)
{
        struct pc_runtime *rt = current();
        int rc;

        (void)cmd;
        if (rt == NULL)
                return -ENODEV;
        if (params && *params) {
                if (strcmp(params, "tpc") == 0)
                        rc = pc_runtime_set_mode(rt, PC_MODE_TPC);
                else if (strcmp(params, "elastic") == 0)
                        rc = pc_runtime_set_mode(rt, PC_MODE_ELASTIC);
                else
                        rc = -EINVAL;
                if (rc)
                        return rc;
        }
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_string(d, "mode", pc_mode_name(pc_runtime_mode(rt)));
        return 0;
}

void pc__telemetry_register(struct pc_runtime *rt)
{
        atomic_store_explicit(&tel_rt, rt, memory_order_release);
        if (registered)
                return;
        registered = true;
        rte_telemetry_register_cmd("/percore/ports", cmd_ports,
                                   "Port counters. Parameters: none, or a port index for "
                                   "per-queue counters");
        rte_telemetry_register_cmd("/percore/workers", cmd_workers,
                                   "Per-worker counters (cpu, node, lcore, tasks, polls, "
                                   "stalls, roams)");
        rte_telemetry_register_cmd("/percore/steals", cmd_steals,
                                   "Steal matrix: row fromS lists tasks each worker took "
                                   "from S; row injector from the global injector");
        rte_telemetry_register_cmd("/percore/config", cmd_config,
                                   "The runtime's effective configuration");
        rte_telemetry_register_cmd("/percore/mode", cmd_mode,
                                   "Scheduling mode. Parameters: none to read it, tpc or "
                                   "elastic to switch to it");
}

void pc__telemetry_unregister(struct pc_runtime *rt)
{
        if (current() == rt)
                atomic_store_explicit(&tel_rt, NULL, memory_order_release);
}
