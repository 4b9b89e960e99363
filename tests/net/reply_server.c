/* SPDX-License-Identifier: MIT */
/*
 * reply_server IFACE ADDR SECONDS: a percore TCP service on DPDK's
 * af_packet PMD over IFACE at IPv4 ADDR, port 8080, that refuses every
 * request as an HTTP server refuses an oversized one: its fiber reads the
 * start of the request, writes a 431 reply with a Content-Length and
 * returns (the connection closes) while the client is still sending.
 * Prints "ready" once listening; stops after SECONDS or on SIGTERM and
 * prints the port's counters, its drops by reason, the TCP engine's
 * drops and resets, and "refused N" (replies written).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore.h"
#include "pc_dpdk.h"
#include "pc_net.h"

#define REPLY_BODY "request header fields too large\n"

static struct pc_runtime *rt;
static struct pc_timer stop_timer;
static double seconds;
static _Atomic unsigned refused;

static void refuse(struct pc_conn *c, void *arg)
{
        char buf[512], reply[256];
        int n;

        (void)arg;
        if (pc_conn_read(c, buf, sizeof(buf)) <= 0)
                return;
        n = snprintf(reply, sizeof(reply),
                     "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     strlen(REPLY_BODY), REPLY_BODY);
        if (pc_conn_write(c, reply, (size_t)n) == n)
                atomic_fetch_add(&refused, 1);
        /* Returning closes the connection, the rest of the request unread. */
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
        struct pc_tcp_listener *l;
        struct pc_tcpe_stats ts;
        struct pc_port_stats ps;
        struct pc_config cfg;
        struct pc_port *port;
        struct in_addr a;
        char eal[512];
        int rc;

        if (argc != 4 || inet_pton(AF_INET, argv[2], &a) != 1) {
                fprintf(stderr, "usage: reply_server IFACE ADDR SECONDS\n");
                return 2;
        }
        seconds = atof(argv[3]);
        pc_config_init(&cfg);
        cfg.workers = 1;
        cfg.pin = false;
        snprintf(eal, sizeof(eal),
                 "--no-huge --no-pci -m 128 --file-prefix pc_reply --log-level=lib.eal:error "
                 "--vdev net_af_packet0,iface=%s",
                 argv[1]);
        cfg.eal_args = eal;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "reply_server: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_port_open(rt, "net_af_packet0", NULL, &port);
        if (rc == 0)
                rc = pc_port_set_ipv4(port, ntohl(a.s_addr));
        if (rc == 0)
                rc = pc_tcp_serve_dpdk(port, 8080, refuse, NULL, &l);
        if (rc == 0)
                rc = pc_runtime_stop_on_signals(rt);
        if (rc == 0)
                rc = pc_runtime_run(rt, server_main, NULL);
        if (rc == 0) {
                pc_port_stats_print(rt, stdout);
                for (int e = 1; e < PC_PKT_NR; e++)
                        if (pc_port_drop_reason(port, (enum pc_pkt_err)e))
                                printf("drop %s: %" PRIu64 "\n",
                                       pc_pkt_err_name((enum pc_pkt_err)e),
                                       pc_port_drop_reason(port, (enum pc_pkt_err)e));
                if (pc_port_tcp_stats(port, -1, &ts, NULL, NULL, NULL) == 0) {
                        printf("tcp drops:");
                        pc_tcpe_drops_print(&ts, stdout);
                        printf("\ntcp resets_out %" PRIu64 "\n", ts.resets_out);
                }
                if (pc_port_stats(port, -1, &ps) == 0)
                        printf("bad_cksum %" PRIu64 "\n", ps.bad_cksum);
                printf("refused %u\n", atomic_load(&refused));
        }
        pc_runtime_destroy(rt);
        if (rc) {
                fprintf(stderr, "reply_server: %s\n", pc_strerror(rc));
                return 1;
        }
        return 0;
}
