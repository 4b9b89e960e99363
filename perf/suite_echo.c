/* SPDX-License-Identifier: MIT */
/*
 * echo: TCP echo requests per second per worker, 64-byte ping-pong over a
 * fixed set of loopback connections. The load generator is in the bench:
 * client threads with non-blocking sockets and epoll, each connection
 * sending one request and waiting for its whole reply before the next.
 * percore (kernel backend) runs in each mode; the peer is a plain epoll
 * echo server with the same thread count, driven by the same generator in
 * the same run.
 *
 * Server and clients share the machine, so percore's workers use the
 * default adaptive idle (spin briefly, then park) rather than the bench's
 * usual polling, which would take the generator's CPU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "pc_knet.h"
#include "peers/epoll_echo.h"

#define REQ 64
#define CONNS 64
#define CLIENT_THREADS 1

struct lconn {
        int fd;
        size_t got;
};

struct lgen {
        uint16_t port;
        uint64_t duration_ns;
        uint64_t requests;
        int err;
};

/* One client thread: CONNS / CLIENT_THREADS connections in ping-pong. */
static void *lgen_thread(void *arg)
{
        struct lgen *g = arg;
        unsigned n = CONNS / CLIENT_THREADS;
        struct lconn *c = calloc(n, sizeof(*c));
        char req[REQ], buf[4096];
        int ep = epoll_create1(0);
        uint64_t end, reqs = 0;

        memset(req, 'r', sizeof(req));
        if (c == NULL || ep < 0) {
                g->err = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < n; i++) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(g->port)};
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
                int one = 1;

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
                if (c[i].fd < 0 || connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa))) {
                        g->err = -errno;
                        goto out;
                }
                setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
                if (send(c[i].fd, req, REQ, MSG_NOSIGNAL) != REQ) {
                        g->err = -EIO;
                        goto out;
                }
        }
        end = pc_now_ns() + g->duration_ns;
        while (pc_now_ns() < end) {
                struct epoll_event evs[64];
                int k = epoll_wait(ep, evs, 64, 100);

                for (int i = 0; i < k; i++) {
                        struct lconn *x = &c[evs[i].data.u32];
                        ssize_t r = recv(x->fd, buf, sizeof(buf), MSG_DONTWAIT);

                        if (r <= 0) {
                                if (r < 0 && errno == EAGAIN)
                                        continue;
                                g->err = -EPIPE;
                                goto out;
                        }
                        x->got += (size_t)r;
                        if (x->got >= REQ) {
                                x->got -= REQ;
                                reqs++;
                                if (send(x->fd, req, REQ, MSG_NOSIGNAL) != REQ) {
                                        g->err = -EIO;
                                        goto out;
                                }
                        }
                }
        }
out:
        g->requests = reqs;
        for (unsigned i = 0; c && i < n; i++)
                if (c[i].fd > 0)
                        close(c[i].fd);
        free(c);
        if (ep >= 0)
                close(ep);
        return NULL;
}

/* Drive @port for @o->duration; returns requests completed or -errno. */
static double lgen_run(const struct bench_opts *o, uint16_t port)
{
        struct lgen g[CLIENT_THREADS];
        pthread_t t[CLIENT_THREADS];
        double total = 0;
        int err = 0;

        for (unsigned i = 0; i < CLIENT_THREADS; i++) {
                g[i] = (struct lgen){.port = port, .duration_ns = (uint64_t)(o->duration * 1e9)};
                pthread_create(&t[i], NULL, lgen_thread, &g[i]);
        }
        for (unsigned i = 0; i < CLIENT_THREADS; i++) {
                pthread_join(t[i], NULL);
                total += (double)g[i].requests;
                if (g[i].err)
                        err = g[i].err;
        }
        return err ? err : total;
}

/* ---- percore ------------------------------------------------------------- */

static void echo_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len)
                pc_conn_send(c, data, len);
}

static const struct pc_tcp_callbacks echo_cb = {.on_data = echo_data};

struct pc_run {
        struct pc_runtime *rt;
        const struct bench_opts *o;
        uint16_t port;
        double result;
};

static void *pc_driver(void *arg)
{
        struct pc_run *r = arg;

        r->result = lgen_run(r->o, r->port);
        pc_runtime_stop(r->rt);
        return NULL;
}

static void noop(void *arg)
{
        (void)arg;
}

static unsigned echo_workers(const struct bench_opts *o)
{
        return o->workers ? o->workers : 1;
}

static double percore_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                          void *ctx)
{
        struct pc_config cfg;
        struct pc_tcp_listener *l;
        struct pc_run r = {.o = o};
        pthread_t t;
        int rc;

        (void)ctx;
        bench_config(&cfg, o, mode);
        cfg.workers = mode == PC_MODE_DETERMINISTIC ? 0 : echo_workers(o);
        cfg.idle = PC_IDLE_ADAPTIVE;
        rc = pc_runtime_create(&cfg, &r.rt);
        if (rc)
                return rc;
        *workers = pc_runtime_workers(r.rt);
        rc = pc_tcp_listen(r.rt, "127.0.0.1", 0, &echo_cb, NULL, &l);
        if (rc) {
                pc_runtime_destroy(r.rt);
                return rc;
        }
        r.port = pc_tcp_listener_port(l);
        pthread_create(&t, NULL, pc_driver, &r);
        rc = pc_runtime_run(r.rt, noop, NULL);
        pthread_join(t, NULL);
        pc_runtime_destroy(r.rt);
        if (rc)
                return rc;
        if (r.result < 0)
                return r.result;
        return r.result / *workers / o->duration;
}

static double epoll_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        struct epoll_echo *e;
        uint16_t port;
        double v;
        int rc;

        (void)mode;
        (void)ctx;
        *workers = echo_workers(o);
        rc = epoll_echo_start(*workers, &port, &e);
        if (rc)
                return rc;
        v = lgen_run(o, port);
        epoll_echo_stop(e);
        return v < 0 ? v : v / *workers / o->duration;
}

int suite_echo(const struct bench_opts *o)
{
        int rc;

        for (unsigned m = 0; m < o->nmodes; m++) {
                rc = bench_measure(o, "echo", "tcp64", pc_mode_name(o->modes[m]), o->modes[m],
                                   "requests_per_sec_per_worker", "req/s", false, percore_run,
                                   NULL);
                if (rc)
                        return rc;
        }
        return bench_measure(o, "echo", "tcp64", "peer:epoll", PC_MODE_TPC,
                             "requests_per_sec_per_worker", "req/s", false, epoll_run, NULL);
}
