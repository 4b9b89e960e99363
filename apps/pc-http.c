/* SPDX-License-Identifier: MIT */
/*
 * pc-http: an HTTP/1.1 server on percore (net/http), on the kernel or the
 * DPDK backend. GET / answers "Hello, World!" (text/plain), GET /json a
 * small JSON object; with --root DIR every other path is a file under DIR
 * (the two fixed routes still win for "/" exactly and "/json"). SIGTERM
 * drains: listeners stop, open connections finish for up to DRAIN_S
 * seconds; a second SIGTERM or a SIGINT stops at once.
 *
 *   pc-http -l 127.0.0.1 -p 8080 -t 2
 *   PERCORE_EAL_ARGS="..." pc-http --backend dpdk -l 10.0.0.2/24 -p 80
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_cli.h"
#include "pc_http.h"
#include "pc_knet.h"
#include "percore.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

#define DRAIN_S 10

static const char hello[] = "Hello, World!";
static const char json[] = "{\"message\":\"Hello, World!\"}";

static struct {
        const char *addr, *backend, *root, *log, *gateway;
        unsigned long port;
        unsigned prefix;
} set = {.addr = "127.0.0.1", .backend = "kernel", .port = 8080};

static int answer(struct pc_http_resp *r, const char *type, const char *body, size_t len)
{
        pc_http_resp_header(r, "Content-Type", type);
        /* The text is static: written from where it lies. */
        pc_http_resp_body_ref(r, body, len, NULL, NULL);
        return pc_http_resp_send(r);
}

static int on_root(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        (void)q;
        (void)arg;
        return answer(r, "text/plain", hello, sizeof(hello) - 1);
}

static int on_json(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        (void)q;
        (void)arg;
        return answer(r, "application/json", json, sizeof(json) - 1);
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: pc-http [-l ADDR[/LEN]] [-p PORT] [-t WORKERS] [--backend kernel|dpdk]\n"
                "               [--gateway GW] [--root DIR] [--access-log FILE] [--help]\n"
                "An HTTP/1.1 server: GET / answers Hello, World!, GET /json a JSON object.\n"
                "  -l ADDR         IPv4 address to listen on (default 127.0.0.1); with dpdk,\n"
                "                  the address our own stack answers for on DPDK port 0;\n"
                "                  /LEN (dpdk) the subnet on the link\n"
                "  -p PORT         TCP port (default 8080)\n"
                "  -t N            workers (default: PERCORE_WORKERS or one per CPU)\n"
                "  --backend B     kernel (io_uring sockets, default) or dpdk (our own TCP on\n"
                "                  the port from PERCORE_EAL_ARGS)\n"
                "  --gateway GW    (dpdk, with /LEN) where frames off the subnet go\n"
                "  --root DIR      serve the files under DIR at / (GET, HEAD, Range,\n"
                "                  If-Modified-Since); / itself and /json stay the fixed answers\n"
                "  --access-log F  one line per request, common log format (default off)\n"
                "SIGTERM drains for up to %d s; SIGINT stops. Other settings: PERCORE_*.\n",
                DRAIN_S);
}

static int bad_flag(const char *what, const char *arg, const char *expected)
{
        fprintf(stderr, "pc-http: %s '%s': expected %s\n", what, arg, expected);
        return 2;
}

static int parse_flags(int argc, char **argv, struct pc_config *cfg)
{
        static const struct option lopts[] = {
                {"backend", required_argument, NULL, 'b'},
                {"gateway", required_argument, NULL, 'g'},
                {"root", required_argument, NULL, 'r'},
                {"access-log", required_argument, NULL, 'a'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct in_addr ia;
        unsigned long v;
        int c;

        while ((c = getopt_long(argc, argv, "l:p:t:h", lopts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "kernel") && strcmp(optarg, "dpdk"))
                                return bad_flag("--backend", optarg, "kernel or dpdk");
                        set.backend = optarg;
                        break;
                case 'l':
                        if (app_parse_ipv4_prefix(optarg, &ia, &set.prefix))
                                return bad_flag("-l", optarg,
                                                "an IPv4 address, with /LEN (1..32) on dpdk");
                        set.addr = optarg;
                        break;
                case 'g':
                        if (inet_pton(AF_INET, optarg, &ia) != 1)
                                return bad_flag("--gateway", optarg, "an IPv4 address");
                        set.gateway = optarg;
                        break;
                case 'p':
                        if (app_parse_uint(optarg, 0, 65535, &set.port))
                                return bad_flag("-p", optarg, "a port");
                        break;
                case 't':
                        if (app_parse_uint(optarg, 1, PC_MAX_WORKERS, &v))
                                return bad_flag("-t", optarg, "1..PC_MAX_WORKERS");
                        cfg->workers = (unsigned)v;
                        break;
                case 'r':
                        set.root = optarg;
                        break;
                case 'a':
                        set.log = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return -1;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (app_no_operands("pc-http", argc, argv, optind, usage))
                return 2;
        if (strcmp(set.backend, "kernel") == 0 && (set.prefix || set.gateway)) {
                fprintf(stderr, "pc-http: -l ADDR/LEN and --gateway are for --backend dpdk\n");
                return 2;
        }
        if (set.gateway && set.prefix == 0) {
                fprintf(stderr, "pc-http: --gateway needs the subnet: -l ADDR/LEN\n");
                return 2;
        }
        if (strcmp(set.backend, "dpdk") == 0 && app_dpdk_ready("pc-http"))
                return 2;
        return 0;
}

static int listen_on(struct pc_runtime *rt, struct pc_http_server *s,
                     struct pc_tcp_listener **l)
{
        if (strcmp(set.backend, "kernel") == 0)
                return pc_tcp_serve_kernel(rt, set.addr, (uint16_t)set.port, pc_http_serve, s, l);
#ifdef PC_HAVE_DPDK
        {
                struct pc_port *p;
                struct in_addr ia, gw = {0};
                unsigned prefix;
                int rc;

                app_parse_ipv4_prefix(set.addr, &ia, &prefix); /* parsed before */
                if (set.gateway)
                        inet_pton(AF_INET, set.gateway, &gw);
                rc = pc_port_open(rt, "0", NULL, &p);
                if (rc == 0)
                        rc = pc_port_set_ipv4(p, ntohl(ia.s_addr));
                if (rc == 0 && prefix)
                        rc = pc_port_set_route(p, prefix, ntohl(gw.s_addr));
                if (rc == 0)
                        rc = pc_tcp_serve_dpdk(p, (uint16_t)set.port, pc_http_serve, s, l);
                return rc;
        }
#else
        return -ENOTSUP;
#endif
}

static void start(void *arg)
{
        (void)arg; /* the listener serves on its own */
}

int main(int argc, char **argv)
{
        struct pc_config cfg;
        struct pc_http_opts o;
        struct pc_http_server *s = NULL;
        struct pc_http_stats st;
        struct pc_tcp_listener *l;
        struct pc_runtime *rt;
        FILE *log = NULL;
        int rc;

        pc_config_init(&cfg);
        rc = parse_flags(argc, argv, &cfg);
        if (rc)
                return rc < 0 ? 0 : rc;
        setvbuf(stdout, NULL, _IOLBF, 0);
        pc_http_opts_init(&o);
        if (set.log) {
                log = fopen(set.log, "a");
                if (log == NULL) {
                        fprintf(stderr, "pc-http: --access-log %s: %s\n", set.log,
                                strerror(errno));
                        return 2;
                }
                setvbuf(log, NULL, _IOLBF, 0);
                o.access_log = log;
        }
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "pc-http: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_http_server_create(rt, &o, &s);
        if (rc == 0)
                rc = pc_http_route(s, PC_HTTP_GET, "/", on_root, NULL);
        if (rc == 0)
                rc = pc_http_route(s, PC_HTTP_GET, "/json", on_json, NULL);
        if (rc == 0 && set.root && (rc = pc_http_static(s, "/", set.root)))
                fprintf(stderr, "pc-http: --root %s: %s\n", set.root, pc_strerror(rc));
        else if (rc)
                fprintf(stderr, "pc-http: setup: %s\n", pc_strerror(rc));
        if (rc == 0 && (rc = listen_on(rt, s, &l)))
                fprintf(stderr, "pc-http: %s:%lu (%s): %s\n", set.addr, set.port, set.backend,
                        pc_strerror(rc));
        if (rc == 0)
                rc = pc_runtime_drain_on_signals(rt, (uint64_t)DRAIN_S * 1000000000u);
        if (rc)
                goto out;
        printf("pc-http: listening on %s:%u (%s backend), %u workers\n", set.addr,
               pc_tcp_listener_port(l), set.backend, pc_runtime_workers(rt));
        rc = pc_runtime_run(rt, start, NULL);
        if (rc)
                fprintf(stderr, "pc-http: run: %s\n", pc_strerror(rc));
        pc_http_server_stats(s, UINT32_MAX, &st);
        printf("pc-http: stopped: connections=%" PRIu64 " 2xx=%" PRIu64 " 3xx=%" PRIu64
               " 4xx=%" PRIu64 " 5xx=%" PRIu64 " parse_errors=%" PRIu64 " timeouts=%" PRIu64
               "\n", st.conns_total, st.responses[1], st.responses[2], st.responses[3],
               st.responses[4], st.parse_errors, st.timeouts);
out:
        pc_runtime_destroy(rt);
        pc_http_server_destroy(s);
        if (log)
                fclose(log);
        return rc ? 1 : 0;
}
