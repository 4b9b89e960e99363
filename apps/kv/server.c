/* SPDX-License-Identifier: MIT */
/*
 * pc-kv: a memcached-compatible cache on percore. Each worker owns one
 * store, its shard of the key space (pc_shard_of); a request whose key
 * another worker owns goes there by pc_call() and the reply comes back in
 * order (dispatch.c). Both memcached protocols over TCP and memcached's
 * UDP frames, on the kernel or the DPDK backend (tcp.c, udp.c).
 *
 *   pc-kv -p 11211 -U 11211 -t 4 -m 64
 *   PERCORE_EAL_ARGS="..." pc-kv --backend dpdk -l 10.0.0.2 -p 11211 -U 11211
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_cli.h"
#include "kv_pvt.h"
#include "pc_knet.h"
#include "pc_shard.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

int kv_tcp_start(void);
void kv_tcp_free(void);
int kv_udp_start_kernel(void);
int kv_udp_start_dpdk(struct pc_port *p);
int kv_tcp_start_dpdk(struct pc_port *p);

static void kv_main(void *arg)
{
        (void)arg;
        /* Shards are lent only on CPUs shared with other busy threads
         * (dispatch.c); otherwise other workers reach them by mailbox. */
        if (pc_runtime_config(kv_rt)->overprovisioned)
                kv_shard_lend_start();
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: pc-kv [-p TCP_PORT] [-U UDP_PORT] [-l ADDR[/LEN]] [-m MB] [-t WORKERS]\n"
                "             [-c MAXCONNS] [-I ITEM_MAX] [-A] [-v] [-o OPT[,OPT...]]\n"
                "             [--backend kernel|dpdk] [--gateway GW] [--help]\n"
                "A memcached-compatible cache (ASCII and binary protocols over TCP, memcached's\n"
                "UDP frames), its data sharded by key across the workers. Runs until\n"
                "SIGINT/SIGTERM.\n"
                "  -p PORT         TCP port (default 11211; 0 = off)\n"
                "  -U PORT         UDP port (default 0 = off)\n"
                "  -l ADDR         IPv4 address to listen on (default 127.0.0.1); with dpdk,\n"
                "                  the address our own stack answers for on DPDK port 0;\n"
                "                  /LEN (dpdk) the subnet on the link\n"
                "  --gateway GW    (dpdk, with /LEN) where frames off the subnet go\n"
                "  -m MB           item memory in megabytes, split evenly per worker (64)\n"
                "  -t N            workers (default: PERCORE_WORKERS or one per CPU)\n"
                "  -c N            most simultaneous connections (1024)\n"
                "  -I SIZE         largest value, bytes or with k/m suffix (1m)\n"
                "  -A, --enable-shutdown\n"
                "                  let the shutdown command stop the server\n"
                "  -v              more logging (repeat for more)\n"
                "  -o, --extended OPT[,OPT...]\n"
                "                  memcached's extended options that apply here:\n"
                "                  idle_timeout=N  close a connection after N seconds without\n"
                "                                  a request byte, or with a reply the client\n"
                "                                  takes nothing of (0 = never, the default;\n"
                "                                  counted in stats idle_kicks)\n"
                "                  maxconns_fast, no_lru_crawler, modern\n"
                "                                  accepted: pc-kv already behaves so\n"
                "                  any other is refused\n"
                "  --backend B     kernel (io_uring sockets, default) or dpdk (our own stack\n"
                "                  and TCP on the port from PERCORE_EAL_ARGS, e.g.\n"
                "                  net_af_packet on a veth)\n"
                "Other settings: PERCORE_* variables (see README).\n");
}

/* memcached's -I: bytes, or a k/m suffix. */
static int parse_size(const char *s, size_t *out)
{
        char tmp[32];
        size_t n = strlen(s), mult = 1;
        unsigned long v;

        if (n == 0 || n >= sizeof(tmp))
                return -1;
        memcpy(tmp, s, n + 1);
        if (tmp[n - 1] == 'k' || tmp[n - 1] == 'K')
                mult = 1024;
        else if (tmp[n - 1] == 'm' || tmp[n - 1] == 'M')
                mult = 1024 * 1024;
        if (mult > 1)
                tmp[n - 1] = 0;
        if (app_parse_uint(tmp, 1, 1024UL * 1024 * 1024, &v) || v * mult < 1024 ||
            v * mult > 1024UL * 1024 * 1024)
                return -1;
        *out = v * mult;
        return 0;
}

/* At exit, after the run: every worker's counters, summed. */
static void print_totals(void)
{
        struct kv_store_stats sum = {0}, st;
        uint64_t send_failed = 0, total_conns = 0, udp = 0, udp_dropped = 0, borrowed = 0;
        uint64_t calls = 0;

        for (unsigned w = 0; w < pc_runtime_workers(kv_rt); w++) {
                uint64_t *d = (uint64_t *)&sum, *s = (uint64_t *)&st;

                kv_store_stats(kv_stores[w], &st);
                for (size_t i = 0; i < sizeof(sum) / sizeof(uint64_t); i++)
                        d[i] += s[i];
                send_failed += kv_wstats[w].send_failed;
                total_conns += kv_wstats[w].total_conns;
                udp += kv_wstats[w].udp_requests;
                udp_dropped += kv_wstats[w].udp_dropped;
                borrowed += kv_wstats[w].borrowed;
                calls += kv_wstats[w].calls;
        }
        printf("pc-kv: workers=%u connections=%" PRIu64 " udp_requests=%" PRIu64
               " udp_dropped=%" PRIu64 " get_hits=%" PRIu64 " get_misses=%" PRIu64
               " cmd_set=%" PRIu64 " curr_items=%" PRIu64 " bytes=%" PRIu64
               " evictions=%" PRIu64 " send_failed=%" PRIu64 " calls=%" PRIu64
               " borrowed=%" PRIu64 "\n",
               pc_runtime_workers(kv_rt), total_conns, udp, udp_dropped, sum.get_hits, sum.get_misses,
               sum.cmd_set, sum.curr_items, sum.bytes, sum.evictions, send_failed, calls,
               borrowed);
}

static int bad_flag(const char *what, const char *arg, const char *expected)
{
        fprintf(stderr, "pc-kv: %s '%s': expected %s\n", what, arg, expected);
        return 2;
}

/*
 * memcached's extended options taken without a value because pc-kv
 * already does what they ask: over -c a connection is closed at once
 * (maxconns_fast); there is no LRU crawler thread to turn off, an expired
 * item goes when a lookup or the LRU's tail meets it (no_lru_crawler);
 * memcached 1.6 itself changes nothing for "modern".
 */
static const char *const ext_as_is[] = {"maxconns_fast", "no_lru_crawler", "modern"};

/* One -o OPT[,OPT...] (memcached's form) into kv_set; 0 or 2. */
static int parse_extended(const char *arg)
{
        char list[256], *save = NULL, *opt;
        size_t n = strlen(arg);

        if (n == 0 || n >= sizeof(list))
                return bad_flag("-o", arg, "a comma-separated list of options");
        memcpy(list, arg, n + 1);
        if (list[0] == ',' || list[n - 1] == ',' || strstr(list, ",,"))
                return bad_flag("-o", arg, "a comma-separated list without empty options");
        for (opt = strtok_r(list, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
                char *val = strchr(opt, '=');
                bool known = false;

                if (val)
                        *val++ = 0;
                if (strcmp(opt, "idle_timeout") == 0) {
                        if (val == NULL || app_parse_uint(val, 0, UINT32_MAX, &kv_set.idle_timeout))
                                return bad_flag("-o idle_timeout", val ? val : "",
                                                "seconds (0 = off)");
                        continue;
                }
                for (size_t i = 0; i < sizeof(ext_as_is) / sizeof(ext_as_is[0]); i++)
                        known = known || strcmp(opt, ext_as_is[i]) == 0;
                if (known && val)
                        return bad_flag("-o", opt, "no value");
                if (!known) {
                        fprintf(stderr, "pc-kv: -o %s: not an option pc-kv can honour (it takes "
                                        "idle_timeout=N, maxconns_fast, no_lru_crawler, modern)\n",
                                opt);
                        return 2;
                }
        }
        return 0;
}

/* Flags into kv_set and @cfg; 0, or the exit status (2 bad usage, -1 help). */
static int parse_flags(int argc, char **argv, struct pc_config *cfg)
{
        static const struct option lopts[] = {
                {"backend", required_argument, NULL, 'b'},
                {"enable-shutdown", no_argument, NULL, 'A'},
                {"extended", required_argument, NULL, 'o'},
                {"gateway", required_argument, NULL, 'g'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        unsigned long v;
        struct in_addr ia;
        int c;

        while ((c = getopt_long(argc, argv, "p:U:l:m:t:c:I:o:Avh", lopts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "kernel") && strcmp(optarg, "dpdk"))
                                return bad_flag("--backend", optarg, "kernel or dpdk");
                        kv_set.backend = optarg;
                        break;
                case 'p':
                case 'U':
                        if (app_parse_uint(optarg, 0, 65535, &v))
                                return bad_flag(c == 'p' ? "-p" : "-U", optarg,
                                                "a port (0 = off)");
                        *(c == 'p' ? &kv_set.tcp_port : &kv_set.udp_port) = v;
                        break;
                case 'l':
                        if (app_parse_ipv4_prefix(optarg, &ia, &kv_set.prefix))
                                return bad_flag("-l", optarg,
                                                "an IPv4 address, with /LEN (1..32) on dpdk");
                        kv_set.addr = optarg;
                        break;
                case 'g':
                        if (inet_pton(AF_INET, optarg, &ia) != 1)
                                return bad_flag("--gateway", optarg, "an IPv4 address");
                        kv_set.gateway = optarg;
                        break;
                case 'm':
                        if (app_parse_uint(optarg, 1, 1024UL * 1024, &kv_set.mem_mb))
                                return bad_flag("-m", optarg, "megabytes >= 1");
                        break;
                case 't':
                        if (app_parse_uint(optarg, 1, PC_MAX_WORKERS, &v))
                                return bad_flag("-t", optarg, "1..PC_MAX_WORKERS");
                        cfg->workers = (unsigned)v;
                        break;
                case 'c':
                        if (app_parse_uint(optarg, 1, 1000000, &kv_set.max_conns))
                                return bad_flag("-c", optarg, "1..1000000");
                        break;
                case 'I':
                        if (parse_size(optarg, &kv_set.item_max))
                                return bad_flag("-I", optarg, "1k..1024m");
                        break;
                case 'A':
                        kv_set.shutdown_ok = true;
                        break;
                case 'o':
                        if (parse_extended(optarg))
                                return 2;
                        break;
                case 'v':
                        kv_set.verbose++;
                        break;
                case 'h':
                        usage(stdout);
                        return -1;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (app_no_operands("pc-kv", argc, argv, optind, usage))
                return 2;
        if (strcmp(kv_set.backend, "kernel") == 0 && (kv_set.prefix || kv_set.gateway)) {
                fprintf(stderr, "pc-kv: -l ADDR/LEN and --gateway are for --backend dpdk\n");
                return 2;
        }
        if (kv_set.gateway && kv_set.prefix == 0) {
                fprintf(stderr, "pc-kv: --gateway needs the subnet: -l ADDR/LEN\n");
                return 2;
        }
        if (strcmp(kv_set.backend, "dpdk") == 0 && app_dpdk_ready("pc-kv"))
                return 2;
        if (kv_set.tcp_port == 0 && kv_set.udp_port == 0) {
                fprintf(stderr, "pc-kv: nothing to serve: -p and -U are both 0\n");
                return 2;
        }
        if (kv_set.verbose)
                cfg->log_level = kv_set.verbose > 1 ? PC_LOG_DEBUG : PC_LOG_INFO;
        return 0;
}

/* Listeners of the chosen backend. */
static int start_services(void)
{
        int rc = 0;

        if (strcmp(kv_set.backend, "kernel") == 0) {
                if (kv_set.tcp_port && (rc = kv_tcp_start()))
                        fprintf(stderr, "pc-kv: TCP %s:%lu: %s\n", kv_set.addr,
                                kv_set.tcp_port, pc_strerror(rc));
                else if (kv_set.udp_port && (rc = kv_udp_start_kernel()))
                        fprintf(stderr, "pc-kv: UDP %s:%lu: %s\n", kv_set.addr,
                                kv_set.udp_port, pc_strerror(rc));
                return rc;
        }
#ifdef PC_HAVE_DPDK
        {
                struct pc_port *p;
                struct pc_port_opts o = {0};
                struct pc_tcpe_config tc = {0};
                struct in_addr ia;

                /* -c spread over the workers, as on the kernel backend. */
                tc.max_conns = (unsigned)((kv_set.max_conns + pc_runtime_workers(kv_rt) - 1) /
                                          pc_runtime_workers(kv_rt));
                o.tcp = &tc;
                struct in_addr gw = {0};
                unsigned prefix;

                app_parse_ipv4_prefix(kv_set.addr, &ia, &prefix); /* parsed before */
                if (kv_set.gateway)
                        inet_pton(AF_INET, kv_set.gateway, &gw);
                rc = pc_port_open(kv_rt, "0", &o, &p);
                if (rc == 0)
                        rc = pc_port_set_ipv4(p, ntohl(ia.s_addr));
                if (rc == 0 && prefix)
                        rc = pc_port_set_route(p, prefix, ntohl(gw.s_addr));
                if (rc == 0 && kv_set.udp_port)
                        rc = kv_udp_start_dpdk(p);
                if (rc == 0 && kv_set.tcp_port)
                        rc = kv_tcp_start_dpdk(p);
                if (rc)
                        fprintf(stderr, "pc-kv: DPDK port 0: %s\n", pc_strerror(rc));
        }
#endif
        return rc;
}

int main(int argc, char **argv)
{
        struct pc_config cfg;
        struct pc_knet_opts ko = {0};
        unsigned workers;
        int rc;

        pc_config_init(&cfg);
        rc = parse_flags(argc, argv, &cfg);
        if (rc)
                return rc < 0 ? 0 : rc;
        rc = pc_runtime_create(&cfg, &kv_rt);
        if (rc) {
                fprintf(stderr, "pc-kv: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        workers = pc_runtime_workers(kv_rt);
        if (kv_mem_total() / workers < kv_store_item_size(KV_KEY_MAX, kv_set.item_max)) {
                fprintf(stderr, "pc-kv: -m %lu over %u workers leaves less than one -I item "
                                "per worker\n", kv_set.mem_mb, workers);
                pc_runtime_destroy(kv_rt);
                return 2;
        }
        ko.max_conns = (unsigned)((kv_set.max_conns + workers - 1) / workers);
        /* Room for a whole largest reply and then some, so a get of the
         * largest item does not meet the output cap. */
        ko.out_cap = 4 * (kv_set.item_max + 65536);
        rc = pc_shard_init(kv_rt, NULL);
        if (rc == 0 && strcmp(kv_set.backend, "kernel") == 0)
                rc = pc_knet_configure(kv_rt, &ko);
        for (unsigned w = 0; rc == 0 && w < workers; w++) {
                rc = kv_store_create(kv_mem_total() / workers, NULL, NULL, &kv_stores[w]);
                if (rc == 0)
                        kv_store_set_item_max(kv_stores[w], kv_set.item_max);
        }
        if (rc) {
                fprintf(stderr, "pc-kv: setup: %s\n", pc_strerror(rc));
                goto out;
        }
        rc = start_services();
        if (rc)
                goto out;
        kv_set.started = time(NULL);
        printf("pc-kv: listening on %s tcp=%lu udp=%lu (%s backend), %u workers, %lu MB, "
               "item max %zu\n", kv_set.addr, kv_set.tcp_port, kv_set.udp_port, kv_set.backend,
               workers, kv_set.mem_mb, kv_set.item_max);
        fflush(stdout);
        pc_runtime_stop_on_signals(kv_rt);
        rc = pc_runtime_run(kv_rt, kv_main, NULL);
        print_totals();
        if (rc)
                fprintf(stderr, "pc-kv: run: %s\n", pc_strerror(rc));
out:
        pc_runtime_destroy(kv_rt);
        kv_tcp_free(); /* connections still open: closed by the destroy */
        for (unsigned w = 0; w < workers; w++)
                kv_store_destroy(kv_stores[w]);
        return rc ? 1 : 0;
}
