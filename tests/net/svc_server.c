/* SPDX-License-Identifier: MIT */
/*
 * svc_server: the service API's conformance server, written on pc_net.h
 * alone (the backend headers only make the listeners), so the same
 * behaviours run on either backend:
 *
 *   svc_server [--drain-on-signals MS] --kernel ADDR
 *   svc_server [--drain-on-signals MS] --dpdk IFACE ADDR [EAL ARGS...]
 *
 * It serves a fiber port, a callback port, a callback port with a
 * connection limit of 2, and a UDP echo port, then prints
 * "ready FIBER CALLBACK LIMITED UDP" (the ports) on stdout. The first line
 * a client sends on a TCP connection picks what the connection does
 * (tests/net/test_service.py drives every case); "stats" answers the
 * counters as one line of key=value. At exit it prints "exit RC".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore.h"
#include "pc_fiber.h"
#include "pc_net.h"
#ifdef PC_HAVE_URING
#include "pc_knet.h"
#endif
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

#define CHUNK (256u << 10)
#define PATTERN (1u << 20)
#define MS 1000000ull

static struct pc_runtime *rt;
static struct pc_tcp_listener *fl, *cl, *ll;
static struct pc_udp_ep udp;
static uint8_t pattern[PATTERN];

/* What the cases saw, for "stats". */
#define STATS(X)                                                                               \
        X(timeouts) X(idle_timeouts) X(wt_fiber) X(wt_buffered) X(noread_bytes)               \
        X(noread_done) X(shut_epipe) X(shut_read) X(cb_idle_timeouts) X(cb_wtimeouts)         \
        X(cb_wt_buffered) X(cb_shut_epipe) X(cb_shut_read) X(cb_ref_ok) X(cb_ref_bad)         \
        X(cb_aborted) X(pause_leak) X(pause_bad)
#define DECL(n) static _Atomic uint64_t n;
STATS(DECL)

static void note_max(_Atomic uint64_t *m, uint64_t v)
{
        uint64_t o = atomic_load(m);

        while (v > o && !atomic_compare_exchange_weak(m, &o, v))
                ;
}

static int stats_line(char *out, size_t cap)
{
        struct pc_tcp_listener_stats f, c, l;
        int n = 0;

        pc_tcp_listener_stats(fl, &f);
        pc_tcp_listener_stats(cl, &c);
        pc_tcp_listener_stats(ll, &l);
#define PR(x) n += snprintf(out + n, cap - (size_t)n, #x "=%" PRIu64 " ", atomic_load(&x));
        STATS(PR)
#undef PR
        n += snprintf(out + n, cap - (size_t)n,
                      "fiber_open=%" PRIu64 " cb_open=%" PRIu64 " limit_accepted=%" PRIu64
                      " limit_refused=%" PRIu64 " limit_open=%" PRIu64 "\n",
                      f.open, c.open, l.accepted, l.refused, l.open);
        return n;
}

/* ---- the fiber port ------------------------------------------------------- */

/* A connection's input beyond its first line. */
struct fin {
        struct pc_conn *c;
        char buf[8192];
        size_t n;
};

static ssize_t rd(struct fin *f, void *p, size_t len)
{
        if (f->n) {
                size_t k = f->n < len ? f->n : len;

                memcpy(p, f->buf, k);
                memmove(f->buf, f->buf + k, f->n - k);
                f->n -= k;
                return (ssize_t)k;
        }
        return pc_conn_read(f->c, p, len);
}

/* A line without its newline into @line; its length, or -errno (the
 * bytes of a line cut short stay in @f: f->n). */
static ssize_t read_line(struct fin *f, char *line, size_t cap)
{
        for (;;) {
                char *nl = memchr(f->buf, '\n', f->n);
                ssize_t r;

                if (nl) {
                        size_t k = (size_t)(nl - f->buf);

                        if (k >= cap)
                                k = cap - 1;
                        memcpy(line, f->buf, k);
                        line[k] = '\0';
                        f->n -= (size_t)(nl - f->buf) + 1;
                        memmove(f->buf, nl + 1, f->n);
                        return (ssize_t)k;
                }
                if (f->n == sizeof(f->buf))
                        return -EMSGSIZE;
                r = pc_conn_read(f->c, f->buf + f->n, sizeof(f->buf) - f->n);
                if (r <= 0)
                        return r ? r : -EPIPE;
                f->n += (size_t)r;
        }
}

static void say(struct pc_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct pc_conn *c, const char *fmt, ...)
{
        char b[512];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(b, sizeof(b), fmt, ap);
        va_end(ap);
        pc_conn_write(c, b, (size_t)n);
}

static void f_echo(struct fin *f)
{
        char b[16384];
        ssize_t n;

        while ((n = rd(f, b, sizeof(b))) > 0)
                if (pc_conn_write(f->c, b, (size_t)n) < 0)
                        return;
}

/* Lines with a read timeout: each timeout is said and reading goes on
 * (the connection stays usable), but one that cuts a line short ends it. */
static void f_read_timeout(struct fin *f, uint64_t ms)
{
        char line[256];

        pc_conn_set_timeout(f->c, ms * MS);
        for (;;) {
                ssize_t n = read_line(f, line, sizeof(line));

                if (n >= 0) {
                        say(f->c, "line %s\n", line);
                } else if (n == -ETIMEDOUT && f->n) {
                        say(f->c, "stalled %zu\n", f->n);
                        return;
                } else if (n == -ETIMEDOUT) {
                        atomic_fetch_add(&timeouts, 1);
                        say(f->c, "timeout\n");
                } else {
                        return;
                }
        }
}

static void f_idle(struct fin *f, uint64_t ms)
{
        char b[4096];
        ssize_t n;

        pc_conn_set_timeout(f->c, ms * MS);
        while ((n = rd(f, b, sizeof(b))) > 0)
                ;
        if (n == -ETIMEDOUT)
                atomic_fetch_add(&idle_timeouts, 1);
}

/* Write to a peer that never reads: the write timeout ends the wait;
 * returning then leaves the output queued, which the same timeout ends. */
static void f_write_timeout(struct fin *f, uint64_t ms)
{
        ssize_t n;

        pc_conn_set_write_timeout(f->c, ms * MS);
        while ((n = pc_conn_write(f->c, pattern, CHUNK)) > 0)
                ;
        note_max(&wt_buffered, pc_conn_buffered(f->c));
        if (n == -ETIMEDOUT)
                atomic_fetch_add(&wt_fiber, 1);
}

/* A handler that does not read until "noread-go" comes on another
 * connection, while its peer sends what it can. */
static _Atomic bool noread_go;

static void f_noread(struct fin *f)
{
        char b[16384];
        uint64_t total = f->n;
        ssize_t n;

        while (!atomic_load(&noread_go))
                if (pc_fiber_sleep_ns(10 * MS) != 0)
                        return;
        f->n = 0;
        while ((n = pc_conn_read(f->c, b, sizeof(b))) > 0)
                total += (uint64_t)n;
        atomic_fetch_add(&noread_bytes, total);
        atomic_fetch_add(&noread_done, 1);
}

static void f_shutdown(struct fin *f)
{
        char b[4096];
        uint64_t total = 0;
        ssize_t n;

        say(f->c, "reply\n");
        if (pc_conn_shutdown(f->c) != 0)
                return;
        if (pc_conn_write(f->c, "x", 1) == -EPIPE)
                atomic_fetch_add(&shut_epipe, 1);
        while ((n = rd(f, b, sizeof(b))) > 0)
                total += (uint64_t)n;
        atomic_store(&shut_read, total);
}

/* A small gather, then one larger than a write's chunk. */
static void f_writev(struct fin *f)
{
        struct iovec small[] = {
                {.iov_base = "alpha ", .iov_len = 6},
                {.iov_base = NULL, .iov_len = 0},
                {.iov_base = "beta ", .iov_len = 5},
                {.iov_base = "gamma\n", .iov_len = 6},
        };
        struct iovec big[3];

        for (int i = 0; i < 3; i++) {
                big[i].iov_base = pattern + i * 1000;
                big[i].iov_len = 300000;
        }
        say(f->c, "%zd\n", pc_conn_writev(f->c, small, 4));
        say(f->c, "%zd\n", pc_conn_writev(f->c, big, 3));
}

static void ref_done(void *arg)
{
        (*(unsigned *)arg)++;
}

/* @n references of @size bytes, each after a copied header: "done N" once
 * the backend let go of all. */
static void f_sendref(struct fin *f, unsigned n, unsigned size)
{
        unsigned done = 0, i;
        int rc = 0;

        for (i = 0; i < n && rc == 0; i++) {
                say(f->c, "R%u:", i);
                rc = pc_conn_send_ref(f->c, pattern + (size_t)i * 17, size, ref_done, &done);
                /* Over the backend's output cap: wait for the peer to take some. */
                for (unsigned w = 0; w < 20000 && rc == -ENOBUFS; w++) {
                        pc_fiber_sleep_ns(MS);
                        rc = pc_conn_send_ref(f->c, pattern + (size_t)i * 17, size, ref_done,
                                              &done);
                }
        }
        for (unsigned w = 0; w < 20000 && done < i; w++)
                pc_fiber_sleep_ns(MS);
        say(f->c, "done %u rc %d\n", done, rc);
}

static void put_addr(char *out, size_t cap, const struct sockaddr_storage *ss)
{
        char a[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const void *)ss;

                inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
                port = ntohs(in->sin_port);
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const void *)ss;

                inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
                port = ntohs(in6->sin6_port);
        }
        snprintf(out, cap, "%s %s %u", ss->ss_family == AF_INET6 ? "inet6" : "inet", a, port);
}

static void f_addr(struct fin *f)
{
        struct sockaddr_storage p, l;
        char ps[96], ls[96];
        int rp = pc_conn_peer(f->c, &p), rl = pc_conn_local(f->c, &l);

        if (rp || rl) {
                say(f->c, "error %d %d\n", rp, rl);
                return;
        }
        put_addr(ps, sizeof(ps), &p);
        put_addr(ls, sizeof(ls), &l);
        say(f->c, "peer %s local %s\n", ps, ls);
}

static void f_opts(struct fin *f)
{
        say(f->c, "opts %d %d %d %d %d %d %d\n", pc_conn_pause_read(f->c, true),
            pc_conn_set_nodelay(f->c, false),
            pc_conn_set_nodelay(f->c, true), pc_conn_set_keepalive(f->c, 10, 5, 3),
            pc_conn_set_keepalive(f->c, 10, 0, 3), pc_conn_set_keepalive(f->c, 0, 0, 0),
            pc_conn_set_keepalive(f->c, 100000, 1, 1));
}

static void serve_fiber(struct pc_conn *c, void *arg)
{
        struct fin *f = calloc(1, sizeof(*f));
        char line[256], b[1024];
        unsigned long a1 = 0, a2 = 0;

        (void)arg;
        if (f == NULL)
                return;
        f->c = c;
        if (read_line(f, line, sizeof(line)) < 0) {
                free(f);
                return;
        }
        sscanf(line, "%*s %lu %lu", &a1, &a2);
        if (strcmp(line, "echo") == 0 || strcmp(line, "hold") == 0)
                f_echo(f);
        else if (strncmp(line, "read-timeout ", 13) == 0)
                f_read_timeout(f, a1);
        else if (strncmp(line, "idle ", 5) == 0)
                f_idle(f, a1);
        else if (strncmp(line, "write-timeout ", 14) == 0)
                f_write_timeout(f, a1);
        else if (strcmp(line, "noread") == 0)
                f_noread(f);
        else if (strcmp(line, "noread-go") == 0)
                atomic_store(&noread_go, true);
        else if (strcmp(line, "shutdown") == 0)
                f_shutdown(f);
        else if (strcmp(line, "writev") == 0)
                f_writev(f);
        else if (strncmp(line, "sendref ", 8) == 0)
                f_sendref(f, (unsigned)a1, (unsigned)a2);
        else if (strcmp(line, "addr") == 0)
                f_addr(f);
        else if (strcmp(line, "opts") == 0)
                f_opts(f);
        else if (strncmp(line, "drain ", 6) == 0) {
                int r1 = pc_runtime_drain(rt, a1 * MS);

                say(c, "draining %d %d\n", r1, pc_runtime_drain(rt, a1 * MS));
        } else if (strcmp(line, "stats") == 0)
                pc_conn_write(c, b, (size_t)stats_line(b, sizeof(b)));
        else
                say(c, "unknown %s\n", line);
        free(f);
}

/* ---- the callback ports --------------------------------------------------- */

enum cmode { C_LINE, C_ECHO, C_IDLE, C_WT, C_SHUT, C_SENDV, C_REF, C_ABORT, C_PAUSE };

struct cst {
        enum cmode mode;
        char line[256];
        size_t n;
        unsigned refs, done;
        uint64_t shut_read;
        uint64_t got;  /* C_PAUSE: bytes after the line */
        bool resumed;  /* C_PAUSE: its reading was resumed */
};

/* The "pause" connection, for the "resume" one to find (one at a time). */
static struct pc_conn *_Atomic paused_conn;

/* On the paused connection's worker: bytes delivered while it was paused
 * are a leak; then reading goes on. */
static void resume_task(void *arg)
{
        struct pc_conn *c = arg;
        struct cst *s = pc_conn_data(c);

        atomic_fetch_add(&pause_leak, s->got);
        s->resumed = true;
        if (pc_conn_pause_read(c, false) || pc_conn_pause_read(c, false))
                atomic_fetch_add(&pause_bad, 1);
}

static void c_pump(struct pc_conn *c)
{
        while (pc_conn_send(c, pattern, CHUNK / 4) == 0)
                ;
        note_max(&cb_wt_buffered, pc_conn_buffered(c));
}

static void c_route(struct pc_conn *c, struct cst *s)
{
        unsigned long a1 = 0, a2 = 0;

        sscanf(s->line, "%*s %lu %lu", &a1, &a2);
        if (strcmp(s->line, "echo") == 0) {
                s->mode = C_ECHO;
        } else if (strncmp(s->line, "idle ", 5) == 0) {
                s->mode = C_IDLE;
                pc_conn_set_timeout(c, a1 * MS);
        } else if (strncmp(s->line, "write-timeout ", 14) == 0) {
                s->mode = C_WT;
                pc_conn_set_write_timeout(c, a1 * MS);
                c_pump(c);
        } else if (strcmp(s->line, "shutdown") == 0) {
                s->mode = C_SHUT;
                pc_conn_send(c, "reply\n", 6);
                pc_conn_shutdown(c);
                if (pc_conn_send(c, "x", 1) == -EPIPE)
                        atomic_fetch_add(&cb_shut_epipe, 1);
        } else if (strcmp(s->line, "sendv") == 0) {
                struct iovec v[] = {{.iov_base = "one ", .iov_len = 4},
                                    {.iov_base = "two ", .iov_len = 4},
                                    {.iov_base = "three\n", .iov_len = 6}};

                s->mode = C_SENDV;
                pc_conn_sendv(c, v, 3);
        } else if (strncmp(s->line, "sendref ", 8) == 0) {
                s->mode = C_REF;
                for (unsigned i = 0; i < a1; i++)
                        if (pc_conn_send_ref(c, pattern + (size_t)i * 17, (size_t)a2, ref_done,
                                             &s->done) == 0)
                                s->refs++;
                pc_conn_close(c);
        } else if (strcmp(s->line, "pause") == 0) {
                /* Twice is one pause; the reply is sent while paused. */
                s->mode = C_PAUSE;
                if (pc_conn_pause_read(c, true) || pc_conn_pause_read(c, true) ||
                    pc_conn_pause_read(NULL, true) != -EINVAL)
                        atomic_fetch_add(&pause_bad, 1);
                atomic_store(&paused_conn, c);
                pc_conn_send(c, "paused\n", 7);
        } else if (strcmp(s->line, "resume") == 0) {
                struct pc_conn *p = atomic_exchange(&paused_conn, NULL);
                const struct pc_spawn_opts o = {
                        .affinity = PC_STICKY, .place = PC_SPAWN_WORKER,
                        .worker = p ? pc_conn_worker(p) : 0};

                /* From another worker: -EXDEV, as for every option. */
                if (p && pc_conn_worker(p) != pc_conn_worker(c) &&
                    pc_conn_pause_read(p, false) != -EXDEV)
                        atomic_fetch_add(&pause_bad, 1);
                if (p && pc_spawn_ex(resume_task, p, &o) >= 0)
                        pc_conn_send(c, "resuming\n", 9);
                else
                        pc_conn_send(c, "none\n", 5);
                pc_conn_close(c);
        } else if (strcmp(s->line, "abort") == 0) {
                s->mode = C_ABORT;
                pc_conn_send(c, "dropped\n", 8);
                pc_conn_abort(c);
        } else {
                pc_conn_close(c);
        }
}

static void c_accept(struct pc_conn *c, void *arg)
{
        (void)arg;
        pc_conn_set_data(c, calloc(1, sizeof(struct cst)));
}

static void c_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct cst *s = pc_conn_data(c);
        const char *p = data;

        (void)arg;
        if (s == NULL)
                return;
        if (len == 0) {
                if (s->mode == C_SHUT)
                        atomic_store(&cb_shut_read, s->shut_read);
                if (s->mode == C_PAUSE) {
                        char b[64];
                        int n = snprintf(b, sizeof(b), "got %" PRIu64 "\n", s->got);

                        pc_conn_send(c, b, (size_t)n);
                        pc_conn_close(c);
                        if (pc_conn_pause_read(c, true) != -EPIPE)
                                atomic_fetch_add(&pause_bad, 1);
                }
                return;
        }
        while (s->mode == C_LINE && len) {
                char ch = *p++;

                len--;
                if (ch != '\n') {
                        if (s->n < sizeof(s->line) - 1)
                                s->line[s->n++] = ch;
                        continue;
                }
                s->line[s->n] = '\0';
                c_route(c, s);
        }
        if (s->mode == C_ECHO && len)
                pc_conn_send(c, p, len);
        else if (s->mode == C_SHUT)
                s->shut_read += len;
        else if (s->mode == C_PAUSE)
                s->got += len;
}

static void c_writable(struct pc_conn *c, void *arg)
{
        struct cst *s = pc_conn_data(c);

        (void)arg;
        if (s && s->mode == C_WT)
                c_pump(c);
}

static void c_close(struct pc_conn *c, int err, void *arg)
{
        struct cst *s = pc_conn_data(c);

        (void)arg;
        if (s == NULL)
                return;
        if (s->mode == C_IDLE && err == -ETIMEDOUT)
                atomic_fetch_add(&cb_idle_timeouts, 1);
        if (s->mode == C_WT && err == -ETIMEDOUT)
                atomic_fetch_add(&cb_wtimeouts, 1);
        if (s->mode == C_ABORT && err == -ECONNABORTED)
                atomic_fetch_add(&cb_aborted, 1);
        if (s->mode == C_REF)
                atomic_fetch_add(s->done == s->refs ? &cb_ref_ok : &cb_ref_bad, 1);
        free(s);
}

static const struct pc_tcp_callbacks cbs = {
        .on_accept = c_accept,
        .on_data = c_data,
        .on_close = c_close,
        .on_writable = c_writable,
};

static void udp_echo(struct pc_udp_ep *ep, const struct pc_udp_peer *from, const void *data,
                     size_t len, void *arg)
{
        (void)arg;
        pc_udp_ep_send(ep, from, data, len);
}

/* ---- setup ---------------------------------------------------------------- */

static void server_main(void *arg)
{
        (void)arg;
        printf("ready %u %u %u %u\n", pc_tcp_listener_port(fl), pc_tcp_listener_port(cl),
               pc_tcp_listener_port(ll), pc_udp_ep_port(&udp));
        fflush(stdout);
}

static int open_kernel(const char *addr)
{
#ifdef PC_HAVE_URING
        int rc = pc_tcp_serve_kernel(rt, addr, 0, serve_fiber, NULL, &fl);

        if (rc == 0)
                rc = pc_tcp_listen_kernel(rt, addr, 0, &cbs, NULL, &cl);
        if (rc == 0)
                rc = pc_tcp_listen_kernel(rt, addr, 0, &cbs, NULL, &ll);
        if (rc == 0)
                rc = pc_udp_ep_bind_kernel(&udp, rt, addr, 0, udp_echo, NULL);
        return rc;
#else
        (void)addr;
        return -ENOTSUP;
#endif
}

/* DPDK's listeners take a port: fixed ones. */
static int open_dpdk(const char *addr)
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
                rc = pc_tcp_serve_dpdk(port, 7001, serve_fiber, NULL, &fl);
        if (rc == 0)
                rc = pc_tcp_listen_dpdk(port, 7002, &cbs, NULL, &cl);
        if (rc == 0)
                rc = pc_tcp_listen_dpdk(port, 7003, &cbs, NULL, &ll);
        if (rc == 0)
                rc = pc_udp_ep_bind_dpdk(&udp, port, 7004, udp_echo, NULL);
        return rc;
#else
        (void)addr;
        return -ENOTSUP;
#endif
}

int main(int argc, char **argv)
{
        struct pc_config cfg;
        uint64_t drain_ms = 0;
        char eal[1024];
        int i = 1, rc;

        for (size_t k = 0; k < sizeof(pattern); k++)
                pattern[k] = (uint8_t)(k * 7 + k / 251);
        if (i + 1 < argc && strcmp(argv[i], "--drain-on-signals") == 0) {
                drain_ms = strtoull(argv[i + 1], NULL, 10);
                i += 2;
        }
        pc_config_init(&cfg);
        cfg.workers = 2;
        cfg.pin = false;
        cfg.idle = PC_IDLE_PARK;
        if (i + 1 < argc && strcmp(argv[i], "--dpdk") == 0 && i + 2 < argc) {
                int n = snprintf(eal, sizeof(eal),
                                 "--no-huge --no-pci -m 512 --file-prefix pc_svc_server --log-level=lib.eal:error "
                                 "--vdev net_af_packet0,iface=%s,qpairs=2",
                                 argv[i + 1]);

                for (int j = i + 3; j < argc && n < (int)sizeof(eal); j++)
                        n += snprintf(eal + n, sizeof(eal) - (size_t)n, " %s", argv[j]);
                cfg.eal_args = eal;
        } else if (!(i + 1 < argc && strcmp(argv[i], "--kernel") == 0)) {
                fprintf(stderr, "usage: svc_server [--drain-on-signals MS] "
                                "(--kernel ADDR | --dpdk IFACE ADDR [EAL ARGS])\n");
                return 2;
        }
        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "svc_server: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = strcmp(argv[i], "--dpdk") == 0 ? open_dpdk(argv[i + 2]) : open_kernel(argv[i + 1]);
        if (rc == 0)
                rc = pc_tcp_listener_set_limit(ll, 2);
        if (rc == 0)
                rc = drain_ms ? pc_runtime_drain_on_signals(rt, drain_ms * MS)
                              : pc_runtime_stop_on_signals(rt);
        if (rc == 0)
                rc = pc_runtime_run(rt, server_main, NULL);
        printf("exit %d\n", rc);
        fflush(stdout);
        pc_runtime_destroy(rt);
        if (rc)
                fprintf(stderr, "svc_server: %s\n", pc_strerror(rc));
        return rc ? 1 : 0;
}
