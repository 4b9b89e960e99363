/* SPDX-License-Identifier: MIT */
/*
 * echo: TCP echo over loopback, 64 connections each sending 64 bytes and
 * waiting for the whole echo before the next (closed loop), the shape of
 * the echo benchmarks Tokio's and Seastar's users run. Sides, alternated
 * round by round (A B C A B C ...):
 *
 *   tpc, elastic  percore's kernel backend (io_uring), in this process, its
 *                 workers pinned to the server CPUs, idle policy the default
 *                 (adaptive: spin briefly, then park), as a user runs it;
 *   peer:tokio    Tokio's echo server (perf/peers/tokio-echo), a child
 *                 process, multi-thread runtime with as many workers, each
 *                 pinned to the same CPUs;
 *   peer:epoll    a lean epoll server (perf/peers/epoll_echo.c), threads
 *                 pinned to the same CPUs, one recv and one send a request.
 *
 * Cases: "shared", the client thread on the server's own CPUs, and "apart",
 * the client on a CPU of its own and the server on the next ones (skipped
 * where the machine has too few CPUs); each at 1 and 2 workers (or
 * --workers). The client is the bench's io_uring generator (lgen.c), the
 * same for every side. Each run reports requests per second, the client's
 * p99 and requests per server CPU-second (the server's user + system time
 * over the timed part: its process's for a child, this process's less the
 * client thread's otherwise).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "lgen.h"
#include "pc_knet.h"
#include "peers/epoll_echo.h"
#include "peers/tokio_echo.h"

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

/* Record a finished run's extras; returns requests per second. */
static double report(const struct bench_opts *o, const struct lgen_result *r)
{
        bench_extra("p99_us", "us", true, r->p99_us);
        if (r->server_cpu_s > 0)
                bench_extra("requests_per_server_cpu_sec", "req/cpu-s", false,
                            (double)r->done / r->server_cpu_s);
        return (double)r->done / o->duration;
}

static struct lgen_opts load(const struct bench_opts *o, const struct lgen_place *k,
                             uint16_t port, pid_t pid)
{
        return (struct lgen_opts){.port = port,
                                  .conns = CONNS,
                                  .seconds = o->duration,
                                  .p = &echo_proto,
                                  .cpus = k->client_cpus,
                                  .server_pid = pid};
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
        struct lgen_opts lo;
        struct lgen_result res;
        int rc;
};

static void *pc_driver(void *arg)
{
        struct pc_run *r = arg;

        r->rc = lgen_run(&r->lo, &r->res);
        pc_runtime_stop(r->rt);
        return NULL;
}

static void noop(void *arg)
{
        (void)arg;
}

static double percore_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                          void *ctx)
{
        const struct lgen_place *k = ctx;
        struct pc_config cfg;
        struct pc_tcp_listener *l;
        struct pc_run r = {.rc = 0};
        pthread_t t;
        int rc;

        bench_config(&cfg, o, mode);
        cfg.workers = k->workers;
        cfg.cpus = k->server_cpus;
        cfg.idle = PC_IDLE_ADAPTIVE; /* the default: the client shares CPUs */
        rc = pc_runtime_create(&cfg, &r.rt);
        if (rc)
                return rc;
        *workers = pc_runtime_workers(r.rt);
        rc = pc_tcp_listen(r.rt, "127.0.0.1", 0, &echo_cb, NULL, &l);
        if (rc) {
                pc_runtime_destroy(r.rt);
                return rc;
        }
        r.lo = load(o, k, pc_tcp_listener_port(l), 0);
        if (pthread_create(&t, NULL, pc_driver, &r)) {
                pc_runtime_destroy(r.rt);
                return -EAGAIN;
        }
        rc = pc_runtime_run(r.rt, noop, NULL);
        pthread_join(t, NULL);
        pc_runtime_destroy(r.rt);
        if (rc || r.rc)
                return rc ? rc : r.rc;
        return report(o, &r.res);
}

/* ---- peers --------------------------------------------------------------- */

static double epoll_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct lgen_place *k = ctx;
        struct lgen_result res;
        struct epoll_echo *e;
        struct lgen_opts lo;
        uint16_t port;
        int rc;

        (void)mode;
        *workers = k->workers;
        rc = epoll_echo_start(k->workers, k->cpus, &port, &e);
        if (rc)
                return rc;
        lo = load(o, k, port, 0);
        rc = lgen_run(&lo, &res);
        epoll_echo_stop(e);
        return rc ? rc : report(o, &res);
}

static double tokio_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct lgen_place *k = ctx;
        struct lgen_result res;
        struct tokio_echo *t;
        struct lgen_opts lo;
        const char *why;
        uint16_t port;
        int rc;

        (void)mode;
        *workers = k->workers;
        if (!tokio_echo_available(&why)) {
                bench_progress("echo: peer:tokio not built: %s", why);
                return -ENOTSUP;
        }
        rc = tokio_echo_start(k->workers, k->server_cpus, &port, &t);
        if (rc)
                return rc;
        lo = load(o, k, port, tokio_echo_pid(t));
        rc = lgen_run(&lo, &res);
        tokio_echo_stop(t);
        return rc ? rc : report(o, &res);
}

/* ---- cases --------------------------------------------------------------- */

int suite_echo(const struct bench_opts *o)
{
        static const char *const kases[] = {"tcp64-shared", "tcp64-apart"};
        static struct lgen_place cases[2][2];
        unsigned counts[2] = {1, 2}, ncounts = o->workers ? 1 : 2;
        struct bench_side sides[6];
        unsigned n = 0;
        int rc;

        if (o->workers)
                counts[0] = o->workers;
        for (unsigned m = 0; m < o->nmodes; m++) {
                if (o->modes[m] == PC_MODE_DETERMINISTIC)
                        continue;
                sides[n++] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m],
                                                 percore_run, NULL};
        }
        sides[n++] = (struct bench_side){"peer:tokio", PC_MODE_TPC, tokio_run, NULL};
        sides[n++] = (struct bench_side){"peer:epoll", PC_MODE_TPC, epoll_run, NULL};
        for (unsigned a = 0; a < 2; a++) {
                for (unsigned c = 0; c < ncounts; c++) {
                        struct lgen_place *k = &cases[a][c];

                        if (lgen_place(counts[c], a == 1, k)) {
                                bench_progress("echo/%s at %u workers: skipped: needs %u CPUs",
                                               kases[a], counts[c], counts[c] + a);
                                continue;
                        }
                        for (unsigned i = 0; i < n; i++)
                                sides[i].ctx = k;
                        rc = bench_compare(o, "echo", kases[a], "requests_per_sec", "req/s",
                                           false, sides, n);
                        if (rc)
                                return rc;
                }
        }
        return 0;
}
