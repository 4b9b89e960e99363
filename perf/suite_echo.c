/* SPDX-License-Identifier: MIT */
/*
 * echo: TCP echo over loopback, 64 connections each sending 64 bytes and
 * waiting for the whole echo before the next (closed loop), the shape of
 * the echo benchmarks Tokio's and Seastar's users run. Every server is a
 * child process pinned to the same server CPUs, so each pays the same
 * process switches against the client and its CPU time is its own. Sides,
 * alternated round by round (A B C A B C ...):
 *
 *   tpc, elastic  pc-echo, the app (PERCORE_ECHO names another binary), on
 *                 the kernel backend (io_uring), idle policy the default
 *                 (adaptive: spin, back off, park), as a user runs it;
 *   peer:tokio    Tokio's echo server (perf/peers/tokio-echo), the
 *                 multi-thread runtime with as many workers, each pinned;
 *   peer:epoll    a lean epoll server (perf/peers/epoll_echo.c) in a child
 *                 of the bench, one pinned thread a worker, one recv and
 *                 one send a request.
 *
 * Cases: "shared", the client on the server's own CPUs, pc-echo run with
 * PERCORE_OVERPROVISIONED=1 (a line of the note under the table says so),
 * and "apart", the client on CPUs of its own and the server on the next
 * ones (skipped where the machine has too few CPUs), pc-echo pinned as by
 * default; each at 1 and 2 workers (or --workers). The client is the
 * bench's io_uring generator (lgen.c), the same for every side, with the
 * threads and connections lgen_place() gives the case: on two CPUs one
 * thread and 64 connections. Each run reports requests per second, the
 * client's p99 and requests per server CPU-second (the server process's
 * user + system time over the timed part).
 *
 * Every case runs again with a second, independent client (case
 * "...-eclient"): eclient.c, a plain epoll closed loop with the same
 * connections and requests, a thread pinned to each of the case's first
 * client CPUs. A ratio that moves with the client owes that much to it;
 * those rows report requests per second alone.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "eclient.h"
#include "lgen.h"
#include "peers/epoll_echo.h"
#include "peers/tokio_echo.h"

#define REQ 64

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

/* The client of the cases running now: false for lgen.c, true for the
 * plain epoll client. */
static bool eclient_now;

/* Record a finished run's extras; returns requests per second. */
static double report(const struct bench_opts *o, const struct lgen_result *r)
{
        bench_extra("p99_us", "us", true, r->p99_us);
        if (r->server_cpu_s > 0)
                bench_extra("requests_per_server_cpu_sec", "req/cpu-s", false,
                            (double)r->done / r->server_cpu_s);
        /* Near its threads' count, the client was the bound, not the server. */
        bench_extra_info("client_cpu_per_sec", "cpu-s/s", r->client_cpu_s / o->duration);
        return (double)r->done / o->duration;
}

static struct lgen_opts load(const struct bench_opts *o, const struct lgen_place *k,
                             uint16_t port, pid_t pid)
{
        return (struct lgen_opts){.port = port,
                                  .conns = k->conns,
                                  .seconds = o->duration,
                                  .p = &echo_proto,
                                  .cpus = k->client_cpus,
                                  .threads = k->client_threads,
                                  .pin_each = k->apart,
                                  .server_pid = pid};
}

/* The plain epoll client against @port with @k's connections and
 * threads; its replies per second of the run as it ran. */
static double eclient_drive(const struct bench_opts *o, const struct lgen_place *k,
                            uint16_t port)
{
        struct eclient_opts eo = {.port = port,
                                  .conns = k->conns,
                                  .size = REQ,
                                  .seconds = o->duration,
                                  .threads = k->client_threads};
        int cpus[ECLIENT_MAX_THREADS];
        struct eclient_result res;
        unsigned n = 0;
        cpu_set_t set;
        int rc = lgen_cpuset(k->client_cpus, &set);

        for (int c = 0; rc == 0 && c < CPU_SETSIZE && n < k->client_threads; c++)
                if (CPU_ISSET(c, &set) && n < ECLIENT_MAX_THREADS)
                        cpus[n++] = c;
        if (rc == 0 && n < k->client_threads)
                rc = -ERANGE;
        eo.cpus = cpus;
        if (rc == 0)
                rc = eclient_run(&eo, &res);
        return rc ? rc : (double)res.replies / res.seconds;
}

/* Drive the server on @port (process @pid) with the cases' client. */
static double client_run(const struct bench_opts *o, const struct lgen_place *k,
                         uint16_t port, pid_t pid)
{
        struct lgen_opts lo = load(o, k, port, pid);
        struct lgen_result res;
        int rc;

        if (eclient_now)
                return eclient_drive(o, k, port);
        rc = lgen_run(&lo, &res);
        return rc ? rc : report(o, &res);
}

/* ---- the sides ---------------------------------------------------------- */

/* Drive the server in child @pid on @port, stop it, and report. */
static double drive(const struct bench_opts *o, const struct lgen_place *k, uint16_t port,
                    pid_t pid)
{
        int rc = child_wait_port(port, pid);
        double v = rc ? rc : client_run(o, k, port, pid);

        child_stop(pid);
        return v;
}

/* pc-echo, the app, with the case's workers on its CPUs; @fibers: the
 * blocking-style server (--fibers). */
static double pc_echo_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                          const struct lgen_place *k, bool fibers)
{
        char ports[16], threads[16], modev[64], cpusv[300];
        const char *env[] = {modev, cpusv, "PERCORE_LOG=warn",
                             k->overprovisioned ? "PERCORE_OVERPROVISIONED=1"
                                                : "PERCORE_OVERPROVISIONED=0",
                             NULL};
        int port = child_free_port();
        pid_t pid;

        *workers = k->workers;
        if (port < 0)
                return port;
        snprintf(ports, sizeof(ports), "%d", port);
        snprintf(threads, sizeof(threads), "%u", k->workers);
        snprintf(modev, sizeof(modev), "PERCORE_MODE=%s", pc_mode_name(mode));
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", k->server_cpus);
        char *argv[] = {(char *)child_app_path("pc-echo", "PERCORE_ECHO"), "-p", ports, "-t",
                        threads, fibers ? "--fibers" : NULL, NULL};

        pid = child_spawn(argv, env, NULL);
        if (pid < 0)
                return pid;
        return drive(o, k, (uint16_t)port, pid);
}

static double percore_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                          void *ctx)
{
        return pc_echo_run(o, mode, workers, ctx, false);
}

static double fibers_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        return pc_echo_run(o, mode, workers, ctx, true);
}

/* The epoll server in a child of the bench, like the other servers. */
static double epoll_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct lgen_place *k = ctx;
        uint16_t port = 0;
        int fds[2];
        pid_t pid;

        (void)mode;
        *workers = k->workers;
        if (pipe(fds))
                return -errno;
        pid = fork();
        if (pid < 0) {
                close(fds[0]);
                close(fds[1]);
                return -errno;
        }
        if (pid == 0) {
                struct epoll_echo *e;
                sigset_t set;
                int sig;

                sigemptyset(&set);
                sigaddset(&set, SIGTERM);
                sigprocmask(SIG_BLOCK, &set, NULL);
                close(fds[0]);
                if (epoll_echo_start(k->workers, k->cpus, &port, &e))
                        _exit(1);
                if (write(fds[1], &port, sizeof(port)) != sizeof(port))
                        _exit(1);
                sigwait(&set, &sig);
                epoll_echo_stop(e);
                _exit(0);
        }
        close(fds[1]);
        if (read(fds[0], &port, sizeof(port)) != sizeof(port))
                port = 0;
        close(fds[0]);
        if (port == 0) {
                child_stop(pid);
                return -ECHILD;
        }
        return drive(o, k, port, pid);
}

static double tokio_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct lgen_place *k = ctx;
        struct tokio_echo *t;
        const char *why;
        uint16_t port;
        double v;
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
        v = client_run(o, k, port, tokio_echo_pid(t));
        tokio_echo_stop(t);
        return v;
}

/* ---- cases --------------------------------------------------------------- */

int suite_echo(const struct bench_opts *o)
{
        /* [client][placement]: lgen.c's, then the plain epoll client's. */
        static const char *const kases[2][2] = {
                {"tcp64-shared", "tcp64-apart"},
                {"tcp64-shared-eclient", "tcp64-apart-eclient"},
        };
        static struct lgen_place cases[2][2];
        static char json[4096], text[4096];
        unsigned counts[2] = {1, 2}, ncounts = o->workers ? 1 : 2;
        struct bench_side sides[6];
        unsigned n = 0;
        bool over = false;
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
                                               kases[0][a], counts[c], counts[c] + a);
                                continue;
                        }
                        for (unsigned i = 0; i < n; i++)
                                sides[i].ctx = k;
                        /* The same case with each client in turn. */
                        for (unsigned e = 0; e < 2; e++) {
                                eclient_now = e == 1;
                                lgen_place_note(k, kases[e][a], json, sizeof(json), text,
                                                sizeof(text));
                                over |= k->overprovisioned;
                                rc = bench_compare(o, "echo", kases[e][a],
                                                   "requests_per_sec", "req/s", false,
                                                   sides, n);
                                eclient_now = false;
                                if (rc)
                                        return rc;
                        }
                }
        }
        if (over)
                snprintf(text + strlen(text), sizeof(text) - strlen(text),
                         "\n  tcp64-shared: pc-echo runs overprovisioned "
                         "(PERCORE_OVERPROVISIONED=1)");
        bench_info_of("echo", json,
                      "the clients in each case (perf/lgen.c; -eclient: perf/eclient.c, "
                      "a thread\n  pinned to each of the first client CPUs listed):",
                      text);
        return 0;
}

/* The fiber suite's echo case: pc-echo's two styles side by side on one
 * worker, the client on the same CPUs (the shape of echo/tcp64-shared,
 * overprovisioned alike: on one worker that changes nothing). */
int echo_styles(const struct bench_opts *o, const char *suite, const char *kase)
{
        static struct lgen_place k;
        struct bench_side sides[] = {
                {"base:callbacks", PC_MODE_TPC, percore_run, &k},
                {"fibers", PC_MODE_TPC, fibers_run, &k},
        };

        if (lgen_place(1, false, &k)) {
                bench_progress("%s/%s: skipped: no CPU", suite, kase);
                return 0;
        }
        return bench_compare(o, suite, kase, "requests_per_sec", "req/s", false, sides, 2);
}
