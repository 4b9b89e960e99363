/* SPDX-License-Identifier: MIT */
/*
 * The server test_http.py checks: net/http with small limits and short
 * timeouts (so the limits are cheap to reach and the timeouts quick to
 * see), two workers, on the kernel backend or on DPDK. Its routes:
 *
 *   GET  /            "Hello, World!"
 *   POST|PUT /echo    the request body back, with X-Body-Len
 *   GET  /slow        answered 300 ms later from another fiber (LATER)
 *   GET  /block       the handler itself waits 200 ms, then answers
 *   GET  /stream      a chunked body: "one", "two", "three"
 *   GET  /unended     a chunk "ab", and the handler returns without ending
 *   GET  /headers     what the request's headers say
 *   GET  /stats       the server's counters, summed
 *   GET  /static/...  files under --root DIR
 *
 *   http_server (--kernel ADDR | --dpdk IFACE ADDR) [--root DIR] [--log FILE]
 *
 * Prints "ready PORT" once it serves, "exit RC" at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_http.h"
#include "percore.h"
#ifdef PC_HAVE_URING
#include "pc_knet.h"
#endif
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

#define MS 1000000ull
#define DPDK_PORT 8080

static struct pc_runtime *rt;
static struct pc_http_server *srv;
static struct pc_tcp_listener *lis;

static int text(struct pc_http_resp *r, const char *s)
{
        pc_http_resp_header(r, "Content-Type", "text/plain");
        pc_http_resp_body(r, s, strlen(s));
        return pc_http_resp_send(r);
}

static int on_root(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        return text(r, "Hello, World!");
}

static int on_echo(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        struct pc_http_slice b = pc_http_req_body(q);
        char len[32];

        snprintf(len, sizeof(len), "%zu", b.len);
        pc_http_resp_header(r, "X-Body-Len", len);
        pc_http_resp_body(r, b.p, b.len);
        return pc_http_resp_send(r);
}

static void *slow_answer(void *arg)
{
        struct pc_http_resp *r = arg;

        /* A stopping run ends the connection, and the response with it. */
        if (pc_fiber_sleep_ns(300 * MS) == 0)
                text(r, "slow");
        return NULL;
}

static int on_slow(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        if (pc_fiber_spawn(slow_answer, r, NULL))
                return -1;
        return PC_HTTP_LATER;
}

static int on_block(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        pc_fiber_sleep_ns(200 * MS);
        return text(r, "block");
}

static int on_stream(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        pc_http_resp_header(r, "Content-Type", "text/plain");
        if (pc_http_resp_chunk(r, "one", 3) || pc_http_resp_chunk(r, "two", 3) ||
            pc_http_resp_chunk(r, "three", 5))
                return -1;
        return pc_http_resp_end(r);
}

/* Streams and returns without ending: the layer ends it. */
static int on_unended(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        return pc_http_resp_chunk(r, "ab", 2) ? -1 : 0;
}

static int on_headers(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        struct pc_http_slice host = {"-", 1}, x = {"-", 1}, name, value, path, query;
        char out[512];
        unsigned n = pc_http_req_header_count(q);

        pc_http_req_header(q, "HOST", &host);
        pc_http_req_header(q, "x-test", &x);
        path = pc_http_req_path(q);
        query = pc_http_req_query(q);
        if (n == 0 || pc_http_req_header_at(q, n - 1, &name, &value) ||
            pc_http_req_header_at(q, n, &name, &value) != -ERANGE)
                return -1;
        snprintf(out, sizeof(out), "n=%u host=%.*s x=%.*s last=%.*s path=%.*s query=%.*s v=%d",
                 n, (int)host.len, host.p, (int)x.len, x.p, (int)name.len, name.p,
                 (int)path.len, path.p, (int)query.len, query.p, pc_http_req_version(q));
        return text(r, out);
}

static int on_stats(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        struct pc_http_stats st;
        char out[512];

        pc_http_server_stats(srv, UINT32_MAX, &st);
        snprintf(out, sizeof(out),
                 "1xx=%" PRIu64 " 2xx=%" PRIu64 " 3xx=%" PRIu64 " 4xx=%" PRIu64 " 5xx=%" PRIu64
                 " in=%" PRIu64 " out=%" PRIu64 " open=%" PRIu64 " parse_errors=%" PRIu64
                 " timeouts=%" PRIu64,
                 st.responses[0], st.responses[1], st.responses[2], st.responses[3],
                 st.responses[4], st.bytes_in, st.bytes_out, st.conns_open, st.parse_errors,
                 st.timeouts);
        return text(r, out);
}

static void server_main(void *arg)
{
        (void)arg;
        printf("ready %u\n", pc_tcp_listener_port(lis));
        fflush(stdout);
}

static int listen_dpdk(const char *addr)
{
#ifdef PC_HAVE_DPDK
        struct pc_port *port;
        struct in_addr a;
        int rc;

        if (inet_pton(AF_INET, addr, &a) != 1)
                return -EINVAL;
        rc = pc_port_open(rt, "net_af_packet0", NULL, &port);
        if (rc == 0)
                rc = pc_port_set_ipv4(port, ntohl(a.s_addr));
        if (rc == 0)
                rc = pc_tcp_serve_dpdk(port, DPDK_PORT, pc_http_serve, srv, &lis);
        return rc;
#else
        (void)addr;
        return -ENOTSUP;
#endif
}

static int listen_kernel(const char *addr)
{
#ifdef PC_HAVE_URING
        return pc_tcp_serve_kernel(rt, addr, 0, pc_http_serve, srv, &lis);
#else
        (void)addr;
        return -ENOTSUP;
#endif
}

int main(int argc, char **argv)
{
        const char *root = NULL, *log = NULL, *iface = NULL, *addr = NULL;
        struct pc_http_opts o;
        struct pc_config cfg;
        FILE *logf = NULL;
        char eal[512];
        int rc;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
                        addr = argv[++i];
                } else if (strcmp(argv[i], "--dpdk") == 0 && i + 2 < argc) {
                        iface = argv[++i];
                        addr = argv[++i];
                } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
                        root = argv[++i];
                } else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
                        log = argv[++i];
                } else {
                        addr = NULL;
                        break;
                }
        }
        if (addr == NULL) {
                fprintf(stderr, "usage: http_server (--kernel ADDR | --dpdk IFACE ADDR) "
                                "[--root DIR] [--log FILE]\n");
                return 2;
        }
        pc_config_init(&cfg);
        cfg.workers = 2;
        cfg.pin = false;
        cfg.idle = PC_IDLE_PARK;
        if (iface) {
                snprintf(eal, sizeof(eal),
                         "--no-huge --no-pci -m 512 --file-prefix pc_http_server "
                         "--log-level=lib.eal:error --vdev net_af_packet0,iface=%s,qpairs=2",
                         iface);
                cfg.eal_args = eal;
        }
        pc_http_opts_init(&o);
        o.max_head = 4096;
        o.max_uri = 1024;
        o.max_body = 4096;
        o.max_headers = 16;
        o.head_timeout_ns = 1000 * MS;
        o.body_timeout_ns = 1000 * MS;
        o.idle_timeout_ns = 1000 * MS;
        o.write_timeout_ns = 1000 * MS;
        o.linger_ns = 2000 * MS;
        o.linger_bytes = 4 << 20;
        if (log) {
                logf = fopen(log, "w");
                if (logf == NULL) {
                        perror(log);
                        return 1;
                }
                setvbuf(logf, NULL, _IOLBF, 0);
                o.access_log = logf;
        }
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "http_server: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_http_server_create(rt, &o, &srv);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/", on_root, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_POST | PC_HTTP_PUT, "/echo", on_echo, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/slow", on_slow, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/block", on_block, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/stream", on_stream, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/unended", on_unended, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/headers", on_headers, NULL);
        if (rc == 0)
                rc = pc_http_route(srv, PC_HTTP_GET, "/stats", on_stats, NULL);
        if (rc == 0 && pc_http_route(srv, PC_HTTP_GET, "/", on_root, NULL) != -EEXIST)
                rc = -EPROTO; /* the same route twice must be refused */
        if (rc == 0 && root)
                rc = pc_http_static(srv, "/static/", root);
        if (rc == 0)
                rc = iface ? listen_dpdk(addr) : listen_kernel(addr);
        if (rc == 0)
                rc = pc_runtime_stop_on_signals(rt);
        if (rc == 0)
                rc = pc_runtime_run(rt, server_main, NULL);
        printf("exit %d\n", rc);
        fflush(stdout);
        pc_runtime_destroy(rt);
        pc_http_server_destroy(srv);
        if (logf)
                fclose(logf);
        if (rc)
                fprintf(stderr, "http_server: %s\n", pc_strerror(rc));
        return rc ? 1 : 0;
}
