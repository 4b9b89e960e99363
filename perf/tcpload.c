/* SPDX-License-Identifier: MIT */
/*
 * percore-tcpload: the tcp suite's client, written on percore's own TCP
 * service API (pc_net.h), so one program drives either backend: over
 * kernel sockets (io_uring) against any TCP echo server, or over a DPDK
 * port with percore's own TCP (net/dpdk/tcp.c) against a percore stack on
 * the other end of the link. Each worker opens its share of the
 * connections; each connection sends a request of -s bytes and waits for
 * the whole echo before the next (closed loop, the shape of the echo
 * suite's lgen). Once every connection has its first echo back, a warm-up
 * runs, then the timed window; only replies completed inside it count.
 * With --http each request is instead "GET / HTTP/1.1" on a keep-alive
 * connection, and a reply is a whole 2xx response, framed by its
 * Content-Length (http_resp.c): the http suite's client over DPDK.
 *
 *   percore-tcpload [--backend kernel|dpdk] -a ADDR -p PORT [-l OURS]
 *                   [-c CONNS] [-s BYTES] [-d SECONDS] [-w SECONDS]
 *                   [-t WORKERS] [--server-pid PID] [--http]
 *
 * The DPDK backend takes its EAL arguments from PERCORE_EAL_ARGS (port 0 is
 * the link) and needs -l, our own IPv4 address on it. PERCORE_CPUS pins the
 * workers as for any percore program. It prints one line,
 *
 *   tcpload: requests=N seconds=S req_per_sec=R p99_us=P server_cpu_s=C
 *
 * (server_cpu_s: the user + system time of process PID and its children,
 * such as an nginx master's workers, over the window; -1 without
 * --server-pid), closes its connections (waiting up to 2 s for
 * them to close) and exits 0; 1 when a connection failed or
 * closed early, a reply was not what was asked for (an echo of another
 * length; with --http a response that is not a framed 2xx), or the
 * connections were not all up within 10 s; 2 for bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/app_cli.h"
#include "http_resp.h"
#include "lat.h"
#include "pc_knet.h"
#include "percore.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

#define MAX_CONNS 4096
#define MAX_REQ 65536
#define CONNECT_LIMIT_NS 10000000000ull
#define CLOSE_LIMIT_NS 2000000000ull /* longest wait for the closes at the end */

enum phase { PH_CONNECT, PH_WARM, PH_TIMED, PH_DONE };

struct tconn {
        struct pc_conn *c;
        size_t got;
        uint64_t sent_ns;
        unsigned wk;
        bool up;
};

/* One worker's counts, written by it alone. */
struct wstat {
        uint64_t done;
        uint64_t hist[HIST_BUCKETS];
} __attribute__((aligned(64)));

static struct pc_runtime *rt;
static bool use_dpdk;
static const char *server = "127.0.0.1";
static unsigned long server_port, nconns = 64, req_len = 64, nworkers = 1;
static double seconds = 2, warm_s = 0.5;
static long server_pid;
static void *dport;
static struct tconn conns[MAX_CONNS];
static struct wstat wstats[PC_MAX_WORKERS];
static char request[MAX_REQ];
static bool http_mode;
static struct http_resp_rx *rx; /* per connection, with --http */
static _Atomic int phase = PH_CONNECT;
static _Atomic unsigned up_count, closed_count, failures;
static struct pc_timer clock_timer;
static uint64_t t_start, t_warm, t0, t1, t_done;
static double cpu0 = -1, cpu1 = -1;

#define FAIL(...)                                                                               \
        do {                                                                                    \
                fprintf(stderr, "percore-tcpload: " __VA_ARGS__);                               \
                fputc('\n', stderr);                                                            \
                atomic_fetch_add(&failures, 1);                                                 \
        } while (0)

static void send_request(struct tconn *k)
{
        int rc;

        k->got = 0;
        k->sent_ns = pc_now_ns();
        rc = pc_conn_send(k->c, request, req_len);
        if (rc) {
                FAIL("send: %s", pc_strerror(rc));
                pc_conn_close(k->c);
        }
}

static void on_accept(struct pc_conn *c, void *arg)
{
        struct tconn *k = arg;

        k->c = c;
        send_request(k);
}

static void on_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct tconn *k = arg;
        int ph;

        if (len == 0) {
                if (atomic_load_explicit(&phase, memory_order_relaxed) != PH_DONE)
                        FAIL("the server closed a connection");
                pc_conn_close(c);
                return;
        }
        if (http_mode) {
                int n = http_resp_feed(&rx[k - conns], data, len);

                if (n == 0)
                        return;
                if (n != 1) {
                        if (n < 0)
                                FAIL("a response the bench cannot count: %s", pc_strerror(n));
                        else
                                FAIL("%d responses to one request", n);
                        pc_conn_close(c);
                        return;
                }
        } else {
                k->got += len;
                if (k->got < req_len)
                        return;
                if (k->got > req_len) {
                        FAIL("%zu bytes echoed to a %lu-byte request", k->got, req_len);
                        pc_conn_close(c);
                        return;
                }
        }
        ph = atomic_load_explicit(&phase, memory_order_relaxed);
        if (!k->up) {
                k->up = true;
                atomic_fetch_add(&up_count, 1);
        }
        if (ph == PH_TIMED) {
                struct wstat *s = &wstats[k->wk];

                s->done++;
                s->hist[hist_bucket(pc_now_ns() - k->sent_ns)]++;
        }
        if (ph != PH_DONE)
                send_request(k);
}

static void on_close(struct pc_conn *c, int err, void *arg)
{
        struct tconn *k = arg;

        (void)c;
        k->c = NULL;
        atomic_fetch_add(&closed_count, 1);
        if (atomic_load_explicit(&phase, memory_order_relaxed) != PH_DONE)
                FAIL("a connection closed during the run: %s", pc_strerror(err ? err : -EPIPE));
}

static const struct pc_tcp_callbacks cb = {
        .on_accept = on_accept,
        .on_data = on_data,
        .on_close = on_close,
};

static void start_worker(void *arg)
{
        unsigned w = (unsigned)pc_worker_id();

        (void)arg;
        for (unsigned long i = w; i < nconns; i += nworkers) {
                struct tconn *k = &conns[i];
                int rc;

                k->wk = w;
#ifdef PC_HAVE_DPDK
                if (use_dpdk)
                        rc = pc_tcp_connect_dpdk(dport, server, (uint16_t)server_port, &cb, k,
                                                 NULL);
                else
#endif
                        rc = pc_tcp_connect_kernel(server, (uint16_t)server_port, &cb, k, NULL);
                if (rc)
                        FAIL("connect to %s:%lu: %s", server, server_port, pc_strerror(rc));
        }
}

/* The window is over: each worker closes its connections (so a server
 * on percore's TCP sees a FIN, not a peer that vanished). */
static void close_worker(void *arg)
{
        unsigned w = (unsigned)pc_worker_id();

        (void)arg;
        for (unsigned long i = w; i < nconns; i += nworkers)
                if (conns[i].c)
                        pc_conn_close(conns[i].c);
}

static void finish(void)
{
        atomic_store(&phase, PH_DONE);
        t_done = pc_now_ns();
        for (unsigned w = 0; w < nworkers; w++)
                if (pc_spawn_on(w, close_worker, NULL))
                        t_done = 0; /* cannot close them: stop at the next tick */
}

static void stop(void)
{
        atomic_store(&phase, PH_DONE);
        pc_timer_cancel(&clock_timer);
        pc_runtime_stop(rt);
}

/* Worker 0, every millisecond: move through the phases. */
static void tick(struct pc_timer *t, void *arg)
{
        uint64_t now = pc_now_ns();

        (void)t;
        (void)arg;
        if (atomic_load(&failures)) {
                stop();
                return;
        }
        switch (atomic_load(&phase)) {
        case PH_CONNECT:
                if (atomic_load(&up_count) == nconns) {
                        t_warm = now;
                        atomic_store(&phase, PH_WARM);
                } else if (now - t_start > CONNECT_LIMIT_NS) {
                        FAIL("%u of %lu connections up after 10 s", atomic_load(&up_count),
                             nconns);
                        stop();
                }
                break;
        case PH_WARM:
                if (now - t_warm >= (uint64_t)(warm_s * 1e9)) {
                        if (server_pid > 0)
                                cpu0 = proc_tree_cpu_s((pid_t)server_pid);
                        t0 = pc_now_ns();
                        atomic_store(&phase, PH_TIMED);
                }
                break;
        case PH_TIMED:
                if (now - t0 >= (uint64_t)(seconds * 1e9)) {
                        t1 = pc_now_ns();
                        if (server_pid > 0)
                                cpu1 = proc_tree_cpu_s((pid_t)server_pid);
                        finish();
                }
                break;
        case PH_DONE:
                /* Every connection that came up is closed, or the wait is over. */
                if (atomic_load(&closed_count) >= atomic_load(&up_count) || t_done == 0 ||
                    now - t_done > CLOSE_LIMIT_NS)
                        stop();
                break;
        default:
                break;
        }
}

static void client_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < nworkers; w++) {
                int rc = pc_spawn_on(w, start_worker, NULL);
                if (rc) {
                        FAIL("spawn on worker %u: %s", w, pc_strerror(rc));
                        return;
                }
        }
        t_start = pc_now_ns();
        pc_timer_init(&clock_timer, tick, NULL);
        pc_timer_start(&clock_timer, 1000000, 1000000);
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: percore-tcpload [--backend kernel|dpdk] -a ADDR -p PORT [-l OURS]\n"
                "                       [-c CONNS] [-s BYTES] [-d SECONDS] [-w SECONDS]\n"
                "                       [-t WORKERS] [--server-pid PID] [--http]\n"
                "  --backend B   kernel (io_uring sockets, default) or dpdk (percore's TCP\n"
                "                on port 0 of PERCORE_EAL_ARGS)\n"
                "  -a ADDR       the echo server's IPv4 address (default 127.0.0.1)\n"
                "  -p PORT       its TCP port\n"
                "  -l OURS       our IPv4 address on the DPDK link (dpdk only)\n"
                "  -c CONNS      connections, spread over the workers (64, at most %d)\n"
                "  -s BYTES      request size (64, at most %d)\n"
                "  -d SECONDS    timed window (2)\n"
                "  -w SECONDS    warm-up once all are connected (0.5)\n"
                "  -t WORKERS    client workers (1)\n"
                "  --server-pid  report that process's CPU time (its children's too) over the\n"
                "                window\n"
                "  --http        send GET / HTTP/1.1 (keep-alive), count whole responses\n",
                MAX_CONNS, MAX_REQ);
}

int main(int argc, char **argv)
{
        static const struct option lopts[] = {
                {"backend", required_argument, NULL, 'b'},
                {"server-pid", required_argument, NULL, 'P'},
                {"http", no_argument, NULL, 'H'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct pc_config cfg;
        struct in_addr ia;
        const char *ours = NULL;
        unsigned long v;
        uint64_t done = 0;
        int c, rc;

        while ((c = getopt_long(argc, argv, "a:p:l:c:s:d:w:t:h", lopts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "kernel") && strcmp(optarg, "dpdk")) {
                                fprintf(stderr, "percore-tcpload: --backend '%s': expected "
                                                "kernel or dpdk\n", optarg);
                                return 2;
                        }
                        use_dpdk = strcmp(optarg, "dpdk") == 0;
                        break;
                case 'a':
                case 'l':
                        if (inet_pton(AF_INET, optarg, &ia) != 1) {
                                fprintf(stderr, "percore-tcpload: -%c '%s': expected an IPv4 "
                                                "address\n", c, optarg);
                                return 2;
                        }
                        *(c == 'a' ? &server : &ours) = optarg;
                        break;
                case 'p':
                case 'c':
                case 's':
                case 't':
                case 'P': {
                        unsigned long hi = c == 'p' ? 65535 : c == 'c' ? MAX_CONNS
                                         : c == 's' ? MAX_REQ : c == 't' ? PC_MAX_WORKERS
                                         : 4194304;
                        if (app_parse_uint(optarg, 1, hi, &v)) {
                                fprintf(stderr, "percore-tcpload: %s%c '%s': expected 1..%lu\n",
                                        c == 'P' ? "--server-pid" : "-", c == 'P' ? ' ' : c,
                                        optarg, hi);
                                return 2;
                        }
                        if (c == 'p')
                                server_port = v;
                        else if (c == 'c')
                                nconns = v;
                        else if (c == 's')
                                req_len = v;
                        else if (c == 't')
                                nworkers = v;
                        else
                                server_pid = (long)v;
                        break;
                }
                case 'd':
                case 'w':
                        if (app_parse_seconds(optarg, c == 'd' ? &seconds : &warm_s)) {
                                fprintf(stderr, "percore-tcpload: -%c '%s': expected seconds > 0\n",
                                        c, optarg);
                                return 2;
                        }
                        break;
                case 'H':
                        http_mode = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (app_no_operands("percore-tcpload", argc, argv, optind, usage))
                return 2;
        if (server_port == 0) {
                fprintf(stderr, "percore-tcpload: -p PORT is needed\n");
                return 2;
        }
        if (use_dpdk && app_dpdk_ready("percore-tcpload"))
                return 2;
        if (use_dpdk && ours == NULL) {
                fprintf(stderr, "percore-tcpload: --backend dpdk needs -l OURS\n");
                return 2;
        }
        memset(request, 'q', sizeof(request));
        if (http_mode) {
                req_len = (unsigned long)snprintf(request, sizeof(request),
                                                  "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", server);
                rx = calloc(nconns, sizeof(*rx));
                if (rx == NULL) {
                        fprintf(stderr, "percore-tcpload: out of memory\n");
                        return 1;
                }
        }

        pc_config_init(&cfg);
        cfg.workers = (unsigned)nworkers;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "percore-tcpload: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        if (!use_dpdk) {
                /* A client-only program starts the kernel backend itself
                 * (a listener would have): defaults. */
                static const struct pc_knet_opts kopts;

                rc = pc_knet_configure(rt, &kopts);
                if (rc) {
                        fprintf(stderr, "percore-tcpload: kernel backend: %s\n",
                                pc_strerror(rc));
                        pc_runtime_destroy(rt);
                        return 1;
                }
        }
#ifdef PC_HAVE_DPDK
        if (use_dpdk) {
                struct pc_port *p;

                inet_pton(AF_INET, ours, &ia);
                rc = pc_port_open(rt, "0", NULL, &p);
                if (rc == 0)
                        rc = pc_port_set_ipv4(p, ntohl(ia.s_addr));
                if (rc) {
                        fprintf(stderr, "percore-tcpload: DPDK port 0: %s\n", pc_strerror(rc));
                        pc_runtime_destroy(rt);
                        return 1;
                }
                dport = p;
        }
#endif
        pc_runtime_stop_on_signals(rt);
        rc = pc_runtime_run(rt, client_main, NULL);
        pc_runtime_destroy(rt);
        if (rc) {
                fprintf(stderr, "percore-tcpload: run: %s\n", pc_strerror(rc));
                return 1;
        }
        if (atomic_load(&failures) || t1 == 0) {
                if (t1 == 0 && atomic_load(&failures) == 0)
                        fprintf(stderr, "percore-tcpload: stopped before the window ended\n");
                return 1;
        }
        for (unsigned w = 1; w < nworkers; w++) {
                for (unsigned b = 0; b < HIST_BUCKETS; b++)
                        wstats[0].hist[b] += wstats[w].hist[b];
        }
        for (unsigned w = 0; w < nworkers; w++)
                done += wstats[w].done;
        double s = (double)(t1 - t0) / 1e9;
        printf("tcpload: requests=%" PRIu64 " seconds=%.6f req_per_sec=%.1f p99_us=%.2f "
               "server_cpu_s=%.3f\n",
               done, s, (double)done / s, hist_quantile(wstats[0].hist, done, 0.99) / 1e3,
               cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1.0);
        return 0;
}
