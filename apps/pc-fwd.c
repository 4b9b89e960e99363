/* SPDX-License-Identifier: MIT */
/*
 * pc-fwd: a DPDK forwarder in the manner of testpmd's io, mac and macswap
 * modes, on percore's per-core queues: every worker polls its own RX queue
 * of each port and sends on its own TX queue of the peer port (0 <-> 1,
 * or a single port back to itself). Runs for --duration seconds or until
 * SIGINT/SIGTERM, then prints per-port, per-queue counters and the rate.
 *
 *   PERCORE_WORKERS=1 pc-fwd --eal "--no-huge --no-pci -m 256 \
 *       --vdev net_null0 --vdev net_null1" --mode macswap --duration 5
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_prefetch.h>
#include <rte_mbuf.h>

#include "app_cli.h"
#include "percore.h"
#include "pc_dpdk.h"
#include "pc_proto.h"

enum fwd_mode { FWD_IO, FWD_MAC, FWD_MACSWAP };
static const char *const mode_names[] = {"io", "mac", "macswap"};

#define FWD_PREFETCH 4 /* packets ahead whose header we prefetch */
/* Full bursts a port's poller takes per loop pass. A forwarder has nothing
 * else to run, so it spreads the loop's own cost (the other pollers, the
 * clock, the timers) over 16 bursts, not the library's 4; 16 x 32 frames
 * of one port pass before the other port is looked at. */
#define FWD_RX_BURSTS 16

struct stream {
        struct pc_port *dst;
        enum fwd_mode mode;
        struct rte_ether_addr src_mac, peer_mac; /* mac mode */
};

static struct pc_runtime *rt;
static struct stream streams[2];
static struct pc_timer stop_timer;
static double duration;
static uint64_t t_start;

static void forward(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        struct stream *s = arg;

        (void)p;
        switch (s->mode) {
        case FWD_IO:
                break;
        case FWD_MAC:
                for (uint16_t i = 0; i < n && i < FWD_PREFETCH; i++)
                        rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
                for (uint16_t i = 0; i < n; i++) {
                        struct rte_ether_hdr *e = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
                        if (i + FWD_PREFETCH < n)
                                rte_prefetch0(rte_pktmbuf_mtod(pkts[i + FWD_PREFETCH], void *));
                        rte_ether_addr_copy(&s->peer_mac, &e->dst_addr);
                        rte_ether_addr_copy(&s->src_mac, &e->src_addr);
                }
                break;
        case FWD_MACSWAP:
                /* The headers are cold: ask for a few ahead while swapping. */
                for (uint16_t i = 0; i < n && i < FWD_PREFETCH; i++)
                        rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
                for (uint16_t i = 0; i < n; i++) {
                        struct rte_ether_hdr *e = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
                        if (i + FWD_PREFETCH < n)
                                rte_prefetch0(rte_pktmbuf_mtod(pkts[i + FWD_PREFETCH], void *));
                        pc_eth_swap_macs((uint8_t *)e);
                }
                break;
        }
        pc_port_tx_burst(s->dst, pkts, n);
}

static void stop_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        pc_runtime_stop(rt);
}

static void fwd_main(void *arg)
{
        (void)arg;
        t_start = pc_now_ns();
        /* The bench waits for this line before it starts its clock. */
        printf("pc-fwd: forwarding\n");
        fflush(stdout);
        if (duration > 0) {
                pc_timer_init(&stop_timer, stop_cb, NULL);
                pc_timer_start(&stop_timer, (uint64_t)(duration * 1e9), 0);
        }
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: pc-fwd [--eal ARGS] [--ports A[,B]] [--mode io|mac|macswap]\n"
                "              [--duration S] [--burst N] [--rx-bursts N] [--mbufs N] [--help]\n"
                "Forwards between ports A and B (default 0,1; one port forwards to itself)\n"
                "on every worker's own queues until --duration passes or SIGINT/SIGTERM.\n"
                "  --eal ARGS      DPDK EAL arguments (or PERCORE_EAL_ARGS, which wins)\n"
                "  --ports A,B     port names or numbers\n"
                "  --mode M        io: as received; mac: set src to the TX port's MAC, dst\n"
                "                  to 02:00:00:00:00:<tx port>; macswap: swap src and dst\n"
                "  --duration S    seconds (default: until a signal)\n"
                "  --burst N       RX burst / TX buffer, 1..256 (default 32)\n"
                "  --rx-bursts N   full bursts a port's poller takes per loop pass, 1..64\n"
                "                  (default 16)\n"
                "  --mbufs N       mbufs in the pool (default: sized to the ports)\n"
                "Workers, CPUs and the rest: PERCORE_* variables (see README).\n");
}

int main(int argc, char **argv)
{
        static const struct option lopts[] = {
                {"eal", required_argument, NULL, 'e'},
                {"ports", required_argument, NULL, 'p'},
                {"mode", required_argument, NULL, 'm'},
                {"duration", required_argument, NULL, 'd'},
                {"burst", required_argument, NULL, 'b'},
                {"rx-bursts", required_argument, NULL, 'r'},
                {"mbufs", required_argument, NULL, 'n'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct pc_config cfg;
        struct pc_port_opts po = {.rx_bursts = FWD_RX_BURSTS};
        struct pc_port *ports[2] = {NULL, NULL};
        const char *names[2] = {"0", "1"};
        char portarg[256];
        enum fwd_mode mode = FWD_IO;
        unsigned nports = 2;
        bool ports_given = false;
        unsigned long v;
        int c, rc;

        pc_config_init(&cfg);
        cfg.idle = PC_IDLE_POLL;
        while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
                switch (c) {
                case 'e':
                        cfg.eal_args = optarg;
                        break;
                case 'p': {
                        char *comma;
                        if (strlen(optarg) >= sizeof(portarg) || optarg[0] == '\0')
                                goto bad_ports;
                        strcpy(portarg, optarg);
                        comma = strchr(portarg, ',');
                        names[0] = portarg;
                        nports = 1;
                        if (comma) {
                                *comma = '\0';
                                names[1] = comma + 1;
                                nports = 2;
                                if (!*names[0] || !*names[1] || strchr(names[1], ','))
                                        goto bad_ports;
                        }
                        ports_given = true;
                        break;
                bad_ports:
                        fprintf(stderr, "pc-fwd: --ports '%s': expected A or A,B\n", optarg);
                        return 2;
                }
                case 'm':
                        for (v = 0; v < 3 && strcmp(optarg, mode_names[v]); v++)
                                ;
                        if (v == 3) {
                                fprintf(stderr,
                                        "pc-fwd: --mode '%s': expected io, mac or macswap\n",
                                        optarg);
                                return 2;
                        }
                        mode = (enum fwd_mode)v;
                        break;
                case 'd':
                        if (app_parse_seconds(optarg, &duration)) {
                                fprintf(stderr, "pc-fwd: --duration '%s': expected seconds > 0\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'b':
                        if (app_parse_uint(optarg, 1, 256, &v)) {
                                fprintf(stderr, "pc-fwd: --burst '%s': expected 1..256\n", optarg);
                                return 2;
                        }
                        po.burst = (uint16_t)v;
                        break;
                case 'r':
                        if (app_parse_uint(optarg, 1, 64, &v)) {
                                fprintf(stderr, "pc-fwd: --rx-bursts '%s': expected 1..64\n",
                                        optarg);
                                return 2;
                        }
                        po.rx_bursts = (uint16_t)v;
                        break;
                case 'n':
                        if (app_parse_uint(optarg, 1024, 1u << 26, &v)) {
                                fprintf(stderr, "pc-fwd: --mbufs '%s': expected 1024..%u\n",
                                        optarg, 1u << 26);
                                return 2;
                        }
                        po.nb_mbufs = (unsigned)v;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (app_no_operands("pc-fwd", argc, argv, optind, usage))
                return 2;
        if ((cfg.eal_args == NULL || !*cfg.eal_args) &&
            (getenv("PERCORE_EAL_ARGS") == NULL || !*getenv("PERCORE_EAL_ARGS"))) {
                fprintf(stderr, "pc-fwd: needs DPDK: give --eal ARGS or PERCORE_EAL_ARGS\n");
                return 2;
        }

        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "pc-fwd: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        if (!ports_given && rte_eth_dev_count_avail() < 2)
                nports = 1;
        for (unsigned i = 0; i < nports; i++) {
                po.rx = forward;
                po.rx_arg = &streams[i];
                rc = pc_port_open(rt, names[i], &po, &ports[i]);
                if (rc) {
                        fprintf(stderr, "pc-fwd: port '%s': %s\n", names[i], pc_strerror(rc));
                        pc_runtime_destroy(rt);
                        return 1;
                }
        }
        for (unsigned i = 0; i < nports; i++) {
                struct pc_port *dst = ports[nports == 2 ? 1 - i : i];
                streams[i].dst = dst;
                streams[i].mode = mode;
                memcpy(streams[i].src_mac.addr_bytes, pc_port_mac(dst), 6);
                memcpy(streams[i].peer_mac.addr_bytes, "\x02\x00\x00\x00\x00", 5);
                streams[i].peer_mac.addr_bytes[5] = (uint8_t)pc_port_id(dst);
        }
        /* Mac mode writes these as the source: say what they are. */
        for (unsigned i = 0; i < nports; i++) {
                const uint8_t *m = pc_port_mac(ports[i]);
                printf("pc-fwd: port %u %s mac %02x:%02x:%02x:%02x:%02x:%02x\n",
                       pc_port_id(ports[i]), pc_port_name(ports[i]), m[0], m[1], m[2], m[3],
                       m[4], m[5]);
        }
        pc_runtime_stop_on_signals(rt);
        rc = pc_runtime_run(rt, fwd_main, NULL);
        {
                double secs = (double)(pc_now_ns() - t_start) / 1e9;
                struct pc_port_stats s, tot = {0};
                unsigned nw = pc_runtime_workers(rt);

                for (unsigned i = 0; i < nports; i++) {
                        pc_port_stats(ports[i], -1, &s);
                        tot.rx += s.rx;
                        tot.tx += s.tx;
                        tot.drops += s.drops;
                        tot.errors += s.errors;
                }
                pc_port_stats_print(rt, stdout);
                printf("pc-fwd: mode=%s ports=%u workers=%u seconds=%.3f\n", mode_names[mode],
                       nports, nw, secs);
                printf("pc-fwd: total rx=%" PRIu64 " tx=%" PRIu64 " drops=%" PRIu64
                       " errors=%" PRIu64 "\n",
                       tot.rx, tot.tx, tot.drops, tot.errors);
                printf("pc-fwd: mpps=%.3f mpps_per_core=%.3f\n", secs > 0 ? tot.rx / secs / 1e6 : 0,
                       secs > 0 ? tot.rx / secs / 1e6 / nw : 0);
        }
        pc_runtime_destroy(rt);
        if (rc) {
                fprintf(stderr, "pc-fwd: run: %s\n", pc_strerror(rc));
                return 1;
        }
        return 0;
}
