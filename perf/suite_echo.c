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
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "lgen.h"
#include "pc_knet.h"
#include "peers/epoll_echo.h"

#define REQ 64
#define CONNS 64

static size_t echo_request(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap)
{
        (void)ctx;
        (void)conn;
        (void)seed;
        (void)cap;
        memset(buf, 'r', REQ);
        return REQ;
}

static bool echo_done(void *ctx, unsigned conn, const char *buf, size_t len)
{
        (void)ctx;
        (void)conn;
        (void)buf;
        return len >= REQ;
}

static const struct lgen_proto echo_proto = {.request = echo_request, .reply_done = echo_done};

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

        r->result = lgen_run(r->port, CONNS, r->o->duration, &echo_proto, NULL);
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
        v = lgen_run(port, CONNS, o->duration, &echo_proto, NULL);
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
