/* SPDX-License-Identifier: MIT */
/*
 * pc-echo: TCP and UDP echo on percore, over kernel sockets (io_uring,
 * one SO_REUSEPORT socket per worker) or over DPDK (our own IPv4 stack
 * answering ARP and ICMP for -l, and percore's own TCP). Runs for --duration seconds or
 * until SIGINT/SIGTERM, then prints its counters.
 *
 *   pc-echo -p 7007 -U 7007 -t 2
 *   PERCORE_EAL_ARGS="--no-huge --no-pci --vdev net_af_packet0,iface=veth1" \
 *       pc-echo --backend dpdk -l 10.0.0.2 -p 7007 -U 7007
 *
 * The handlers are one set for both backends: UDP through pc_net.h's
 * endpoint, TCP through pc_net.h's callbacks; only how the program
 * listens differs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_cli.h"
#include "percore.h"
#include "pc_knet.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

enum backend { BACKEND_KERNEL, BACKEND_DPDK };

static struct pc_runtime *rt;
static struct pc_timer stop_timer;
static double duration;
static uint64_t t_start;

/* ---- the echo handlers ------------------------------------------------------ */

/* UDP, one handler for both backends (pc_net.h's endpoint). */
static struct pc_udp_ep udp_ep;

static void udp_echo(struct pc_udp_ep *ep, const struct pc_udp_peer *from, const void *data,
                     size_t len, void *arg)
{
        (void)arg;
        (void)pc_udp_ep_send(ep, from, data, len);
}

/* TCP: what arrives goes back. The backend pauses reading while a client
 * does not take its replies, so pc_conn_send() cannot overflow here. */
static void tcp_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len)
                pc_conn_send(c, data, len);
}

static const struct pc_tcp_callbacks tcp_cb = {.on_data = tcp_data};

/* TCP, blocking style (--fibers): each connection a loop of read, write in
 * a fiber of its own. pc_conn_write() waits while the output is full. */
static void tcp_fiber(struct pc_conn *c, void *arg)
{
        char buf[16384];
        ssize_t n;

        (void)arg;
        while ((n = pc_conn_read(c, buf, sizeof(buf))) > 0)
                if (pc_conn_write(c, buf, (size_t)n) < 0)
                        break;
}

/* ---- main ------------------------------------------------------------------- */

static void stop_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        pc_runtime_stop(rt);
}

static void echo_main(void *arg)
{
        (void)arg;
        t_start = pc_now_ns();
        if (duration > 0) {
                pc_timer_init(&stop_timer, stop_cb, NULL);
                pc_timer_start(&stop_timer, (uint64_t)(duration * 1e9), 0);
        }
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: pc-echo [--backend kernel|dpdk] [-l ADDR[/LEN]] [--gateway GW]\n"
                "               [-p TCP_PORT] [-U UDP_PORT] [-t WORKERS] [--fibers]\n"
                "               [--duration S] [--help]\n"
                "Echoes TCP and UDP until --duration passes or SIGINT/SIGTERM, then prints\n"
                "its counters.\n"
                "  --backend B     kernel (io_uring sockets, default) or dpdk (our own\n"
                "                  stack; the device comes from PERCORE_EAL_ARGS, port 0)\n"
                "  -l ADDR         IPv4 address to listen on (default 127.0.0.1); with dpdk,\n"
                "                  the address our stack answers ARP, ICMP, UDP and TCP for;\n"
                "                  /LEN (dpdk) the subnet on the link\n"
                "  --gateway GW    (dpdk, with /LEN) where frames off the subnet go\n"
                "  -p PORT         TCP port (default 7007; 0 = no TCP)\n"
                "  -U PORT         UDP port (default 0 = no UDP)\n"
                "  -t N            workers (default: PERCORE_WORKERS or one per CPU)\n"
                "  --fibers        serve TCP blocking-style: a fiber per connection reading\n"
                "                  and writing (pc_tcp_serve_kernel), instead of callbacks\n"
                "  --duration S    seconds (default: until a signal)\n"
                "Other settings: PERCORE_* variables (see README).\n");
}

static void print_stats(enum backend be, void *dport)
{
        double secs = (double)(pc_now_ns() - t_start) / 1e9;

        printf("pc-echo: workers=%u seconds=%.3f\n", pc_runtime_workers(rt), secs);
        if (be == BACKEND_KERNEL) {
                struct pc_knet_stats s;

                pc_knet_stats_print(rt, stdout);
                if (pc_knet_stats(rt, -1, &s) == 0)
                        printf("pc-echo: total accepted=%" PRIu64 " refused=%" PRIu64
                               " closed=%" PRIu64 " resets=%" PRIu64 " bytes_in=%" PRIu64
                               " bytes_out=%" PRIu64 " backpressure=%" PRIu64
                               " udp_rx=%" PRIu64 " udp_tx=%" PRIu64 "\n",
                               s.accepted, s.refused, s.closed, s.resets, s.bytes_in,
                               s.bytes_out, s.backpressure, s.udp_rx, s.udp_tx);
        }
#ifdef PC_HAVE_DPDK
        if (be == BACKEND_DPDK && dport) {
                struct pc_port_stats s;
                struct pc_tcpe_stats t;
                uint64_t handoffs;

                pc_port_stats_print(rt, stdout);
                if (pc_port_stats(dport, -1, &s) == 0)
                        printf("pc-echo: total rx=%" PRIu64 " tx=%" PRIu64 " drops=%" PRIu64
                               "\n", s.rx, s.tx, s.drops);
                if (pc_port_tcp_stats(dport, -1, &t, &handoffs, NULL, NULL) == 0)
                        printf("pc-echo: tcp accepted=%" PRIu64 " closed=%" PRIu64
                               " resets_in=%" PRIu64 " bytes_in=%" PRIu64 " bytes_out=%" PRIu64
                               " retransmits=%" PRIu64 " handoffs=%" PRIu64 "\n",
                               t.passive_opens, t.closed, t.resets_in, t.bytes_in, t.bytes_out,
                               t.retransmits, handoffs);
                printf("pc-echo: tcp resets_out=%" PRIu64 " drops:", t.resets_out);
                pc_tcpe_drops_print(&t, stdout);
                printf("\n");
                for (int r = 1; r < PC_PKT_NR; r++)
                        if (pc_port_drop_reason(dport, (enum pc_pkt_err)r))
                                printf("pc-echo: port drops %s=%" PRIu64 "\n",
                                       pc_pkt_err_name((enum pc_pkt_err)r),
                                       pc_port_drop_reason(dport, (enum pc_pkt_err)r));
        }
#else
        (void)dport;
#endif
}

int main(int argc, char **argv)
{
        static const struct option lopts[] = {
                {"backend", required_argument, NULL, 'b'},
                {"duration", required_argument, NULL, 'd'},
                {"fibers", no_argument, NULL, 'f'},
                {"gateway", required_argument, NULL, 'g'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct pc_config cfg;
        enum backend be = BACKEND_KERNEL;
        const char *addr = "127.0.0.1";
        unsigned long tcp_port = 7007, udp_port = 0, v;
        struct in_addr ia, gw = {0};
        unsigned prefix = 0;
        bool gateway = false;
        void *dport = NULL;
        bool fibers = false;
        int c, rc;

        pc_config_init(&cfg);
        while ((c = getopt_long(argc, argv, "l:p:U:t:h", lopts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "kernel") == 0) {
                                be = BACKEND_KERNEL;
                        } else if (strcmp(optarg, "dpdk") == 0) {
                                be = BACKEND_DPDK;
                        } else {
                                fprintf(stderr, "pc-echo: --backend '%s': expected kernel or dpdk\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'l':
                        if (app_parse_ipv4_prefix(optarg, &ia, &prefix)) {
                                fprintf(stderr, "pc-echo: -l '%s': expected an IPv4 address, "
                                                "with /LEN (1..32) on dpdk\n", optarg);
                                return 2;
                        }
                        addr = optarg;
                        break;
                case 'g':
                        if (inet_pton(AF_INET, optarg, &gw) != 1) {
                                fprintf(stderr, "pc-echo: --gateway '%s': expected an IPv4 "
                                                "address\n", optarg);
                                return 2;
                        }
                        gateway = true;
                        break;
                case 'p':
                case 'U':
                        if (app_parse_uint(optarg, 0, 65535, &v)) {
                                fprintf(stderr, "pc-echo: -%c '%s': expected a port 0..65535\n",
                                        c, optarg);
                                return 2;
                        }
                        *(c == 'p' ? &tcp_port : &udp_port) = v;
                        break;
                case 't':
                        if (app_parse_uint(optarg, 1, PC_MAX_WORKERS, &v)) {
                                fprintf(stderr, "pc-echo: -t '%s': expected 1..%d\n", optarg,
                                        PC_MAX_WORKERS);
                                return 2;
                        }
                        cfg.workers = (unsigned)v;
                        break;
                case 'd':
                        if (app_parse_seconds(optarg, &duration)) {
                                fprintf(stderr, "pc-echo: --duration '%s': expected seconds > 0\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'f':
                        fibers = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (app_no_operands("pc-echo", argc, argv, optind, usage))
                return 2;
        app_parse_ipv4_prefix(addr, &ia, &prefix); /* checked when given; the default parses */
        if (be == BACKEND_KERNEL && (prefix || gateway)) {
                fprintf(stderr, "pc-echo: -l ADDR/LEN and --gateway are for --backend dpdk\n");
                return 2;
        }
        if (gateway && prefix == 0) {
                fprintf(stderr, "pc-echo: --gateway needs the subnet: -l ADDR/LEN\n");
                return 2;
        }
        if (be == BACKEND_DPDK && app_dpdk_ready("pc-echo"))
                return 2;
        if (tcp_port == 0 && udp_port == 0) {
                fprintf(stderr, "pc-echo: nothing to serve: -p and -U are both 0\n");
                return 2;
        }

        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "pc-echo: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        if (be == BACKEND_KERNEL) {
                struct pc_tcp_listener *l;

                if (tcp_port && fibers)
                        rc = pc_tcp_serve_kernel(rt, addr, (uint16_t)tcp_port, tcp_fiber, NULL, &l);
                else if (tcp_port)
                        rc = pc_tcp_listen_kernel(rt, addr, (uint16_t)tcp_port, &tcp_cb, NULL, &l);
                if (tcp_port && rc) {
                        fprintf(stderr, "pc-echo: TCP %s:%lu: %s\n", addr, tcp_port,
                                pc_strerror(rc));
                        goto fail;
                }
                if (udp_port && (rc = pc_udp_ep_bind_kernel(&udp_ep, rt, addr, (uint16_t)udp_port,
                                                       udp_echo, NULL))) {
                        fprintf(stderr, "pc-echo: UDP %s:%lu: %s\n", addr, udp_port,
                                pc_strerror(rc));
                        goto fail;
                }
        }
#ifdef PC_HAVE_DPDK
        else {
                struct pc_port *p;

                struct pc_tcp_listener *l;

                rc = pc_port_open(rt, "0", NULL, &p);
                if (rc == 0)
                        rc = pc_port_set_ipv4(p, ntohl(ia.s_addr));
                if (rc == 0 && prefix)
                        rc = pc_port_set_route(p, prefix, ntohl(gw.s_addr));
                if (rc == 0 && udp_port)
                        rc = pc_udp_ep_bind_dpdk(&udp_ep, p, (uint16_t)udp_port, udp_echo, NULL);
                if (rc == 0 && tcp_port && fibers)
                        rc = pc_tcp_serve_dpdk(p, (uint16_t)tcp_port, tcp_fiber, NULL, &l);
                else if (rc == 0 && tcp_port)
                        rc = pc_tcp_listen_dpdk(p, (uint16_t)tcp_port, &tcp_cb, NULL, &l);
                if (rc) {
                        fprintf(stderr, "pc-echo: DPDK port 0: %s\n", pc_strerror(rc));
                        goto fail;
                }
                dport = p;
        }
#endif
        printf("pc-echo: %s backend, %s tcp=%lu%s udp=%lu\n",
               be == BACKEND_KERNEL ? "kernel" : "dpdk", addr, tcp_port,
               fibers ? " (fibers)" : "", udp_port);
        fflush(stdout);
        pc_runtime_stop_on_signals(rt);
        rc = pc_runtime_run(rt, echo_main, NULL);
        print_stats(be, dport);
        pc_runtime_destroy(rt);
        if (rc) {
                fprintf(stderr, "pc-echo: run: %s\n", pc_strerror(rc));
                return 1;
        }
        return 0;
fail:
        pc_runtime_destroy(rt);
        return 1;
}
