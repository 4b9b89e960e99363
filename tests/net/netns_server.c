/* SPDX-License-Identifier: MIT */
/*
 * netns_server IFACE ADDR SECONDS: a percore UDP echo service on DPDK's
 * af_packet PMD over IFACE (one queue pair per worker), at IPv4 ADDR, UDP
 * port 7. The stack answers ARP and ICMP echo. Prints "ready" once the
 * port is open, the counters at exit; exits 0 when it served at least one
 * datagram on a worker that owns the queue it arrived on.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>

#include "percore.h"
#include "pc_dpdk.h"

static struct pc_runtime *rt;
static struct pc_timer stop_timer;
static double seconds;
static _Atomic unsigned served, failures;

static void echo(struct pc_port *p, const struct pc_udp_peer *from, uint16_t dport,
                 const void *data, size_t len, void *arg)
{
        (void)arg;
        if (pc_worker_id() < 0 || rte_lcore_id() != (unsigned)pc_worker_id())
                atomic_fetch_add(&failures, 1);
        if (pc_udp_send(p, from, dport, data, len) != 0)
                atomic_fetch_add(&failures, 1);
        atomic_fetch_add(&served, 1);
}

static void stop_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        pc_runtime_stop(rt);
}

static void server_main(void *arg)
{
        (void)arg;
        pc_timer_init(&stop_timer, stop_cb, NULL);
        pc_timer_start(&stop_timer, (uint64_t)(seconds * 1e9), 0);
        printf("ready\n");
        fflush(stdout);
}

int main(int argc, char **argv)
{
        struct pc_config cfg;
        struct pc_port *port;
        struct in_addr a;
        char eal[512];
        int rc;

        if (argc != 4 || inet_pton(AF_INET, argv[2], &a) != 1) {
                fprintf(stderr, "usage: netns_server IFACE ADDR SECONDS\n");
                return 2;
        }
        seconds = atof(argv[3]);
        pc_config_init(&cfg);
        cfg.workers = 2;
        cfg.pin = false;
        snprintf(eal, sizeof(eal),
                 "--no-huge --no-pci -m 128 --file-prefix pc_netns --log-level=lib.eal:error "
                 "--vdev net_af_packet0,iface=%s,qpairs=2",
                 argv[1]);
        cfg.eal_args = eal;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "netns_server: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_port_open(rt, "net_af_packet0", NULL, &port);
        if (rc == 0)
                rc = pc_port_set_ipv4(port, ntohl(a.s_addr));
        if (rc == 0)
                rc = pc_udp_bind(port, 7, echo, NULL);
        if (rc == 0)
                rc = pc_runtime_stop_on_signals(rt);
        if (rc == 0)
                rc = pc_runtime_run(rt, server_main, NULL);
        if (rc == 0) {
                pc_port_stats_print(rt, stdout);
                for (int e = 1; e < PC_PKT_NR; e++)
                        if (pc_port_drop_reason(port, (enum pc_pkt_err)e))
                                printf("drop %s: %" PRIu64 "\n", pc_pkt_err_name((enum pc_pkt_err)e),
                                       pc_port_drop_reason(port, (enum pc_pkt_err)e));
                printf("served %u failures %u\n", atomic_load(&served), atomic_load(&failures));
        }
        pc_runtime_destroy(rt);
        if (rc) {
                fprintf(stderr, "netns_server: %s\n", pc_strerror(rc));
                return 1;
        }
        return atomic_load(&served) > 0 && atomic_load(&failures) == 0 ? 0 : 1;
}
