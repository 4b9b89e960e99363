/* SPDX-License-Identifier: MIT */
/*
 * http: "GET /" answered "Hello, World!" (text/plain), requests per second
 * driven by the clients HTTP servers' users measure with, pc-http in each
 * mode against nginx and h2o from Debian, every server a child process on
 * loopback pinned to the same server CPUs (http_peers.c says how each peer
 * is configured), the sides alternated round by round. Cases, at 1 and 2
 * workers (or --workers), the client apart where CPUs are left for it and
 * on the server's CPUs otherwise, as in the kv suite (lgen_place(); pc-http
 * runs there with PERCORE_OVERPROVISIONED=1):
 *
 *   keepalive-*   wrk 4.1, 64 keep-alive connections, one request in
 *                 flight on each, a wrk thread per client thread;
 *   pipeline16-*  the same with 16 requests sent back to back on each
 *                 connection (the TechEmpower plaintext shape: a Lua
 *                 script that repeats wrk.format() 16 times in one buffer);
 *   h2c-*         h2load (nghttp2), HTTP/2 over cleartext by prior
 *                 knowledge, 64 connections of 100 concurrent streams
 *                 (-c 64 -m 100); nginx on a listen of its own for it.
 *
 * Each run reports requests per second as the client prints it, the
 * requests per CPU-second of the server's processes (user + system from
 * /proc, nginx's master and workers together) over the client's run, the
 * client's own CPU per second (a diagnostic) and a latency: wrk's 99th
 * percentile for keep-alive; none for pipelining (wrk times a whole batch
 * there, and its distribution loses its tail: wg/wrk#236); h2load's mean
 * time per request for h2c (it prints no percentiles). wrk and h2load run
 * for whole seconds, at least one. A run in which the client saw a
 * response other than 2xx or a socket error fails.
 *
 * pc-http (PERCORE_HTTP, default ../apps/pc-http beside the bench) is
 * reported skipped while it is not built, and in the h2c cases while it
 * does not speak h2c: a single h2load request to it must succeed over h2c.
 * A peer that is not installed, or a client (wrk, h2load), is reported
 * skipped with the package to install. The memif case (http_memif.c) puts
 * pc-http on percore's own TCP over DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "http_out.h"
#include "http_peers.h"
#include "http_suite.h"
#include "lat.h"
#include "lgen.h"

#define HTTP_CONNS "64"
#define H2_STREAMS "100"
#define PIPELINE_DEPTH 16
#define OUT_MAX 8192

enum http_proto { HTTP_KEEPALIVE, HTTP_PIPELINE, HTTP_H2C, HTTP_NPROTO };

static const char *const proto_case[HTTP_NPROTO] = {"keepalive", "pipeline16", "h2c"};

struct http_case {
        enum http_proto proto;
        struct lgen_place place;
        char name[32];
};

/* A side: percore's (@peer < 0) or a peer's. */
struct http_side {
        int peer;
        struct http_case *k;
};

/* The pipelining script, written once per suite run. */
static char lua_path[64];

/* The script wrk runs for the pipeline16 cases: PIPELINE_DEPTH copies of
 * the request wrk would send (wrk.format() with no arguments: GET of the
 * URL's path, Host added) in one buffer, sent on each connection whenever
 * its previous batch has been answered. wrk counts every response. */
static int write_lua(void)
{
        FILE *f;
        int fd;

        snprintf(lua_path, sizeof(lua_path), "/tmp/percore-bench-pipeline-XXXXXX");
        fd = mkstemp(lua_path);
        if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
                if (fd >= 0)
                        close(fd);
                lua_path[0] = '\0';
                return -errno;
        }
        fprintf(f,
                "-- %d requests in one buffer, the whole batch sent at once\n"
                "local batch\n"
                "init = function(args)\n"
                "  batch = string.rep(wrk.format(), %d)\n"
                "end\n"
                "request = function()\n"
                "  return batch\n"
                "end\n",
                PIPELINE_DEPTH, PIPELINE_DEPTH);
        return fclose(f) ? -errno : 0;
}

/* Whole seconds for wrk and h2load, at least one. */
static int client_seconds(const struct bench_opts *o)
{
        return o->duration < 1 ? 1 : (int)(o->duration + 0.5);
}

/* Whether @out (h2load's) is a success of every request over h2c. */
static bool h2c_ok(const struct h2load_out *r)
{
        return r->h2c && r->succeeded > 0 && r->failed == 0 && r->errored == 0;
}

/*
 * Drive the server @pid on @port with the case's client; record the
 * extras. Returns requests per second, or -errno.
 */
static double client_run(const struct bench_opts *o, const struct http_case *k, uint16_t port,
                         pid_t pid)
{
        char url[64], secs[16], threads[16], out[OUT_MAX];
        const struct lgen_place *pl = &k->place;
        int n = client_seconds(o), fd, status;
        double cpu0 = proc_tree_cpu_s(pid), cpu1, client_s, rps, requests;
        pid_t c;

        snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
        snprintf(threads, sizeof(threads), "%u", pl->client_threads);
        if (k->proto == HTTP_H2C) {
                char *argv[] = {"h2load", "-c", HTTP_CONNS, "-m", H2_STREAMS, "-t", threads,
                                "-D", secs, url, NULL};

                snprintf(secs, sizeof(secs), "%d", n);
                c = child_spawn_read(argv, NULL, pl->client_cpus, &fd);
        } else {
                char *argv[] = {"wrk", "-t", threads, "-c", HTTP_CONNS, "-d", secs, "--latency",
                                "-s", lua_path, url, NULL};

                snprintf(secs, sizeof(secs), "%ds", n);
                /* Keep-alive: no script. */
                if (k->proto == HTTP_KEEPALIVE) {
                        argv[8] = url;
                        argv[9] = NULL;
                }
                c = child_spawn_read(argv, NULL, pl->client_cpus, &fd);
        }
        if (c < 0)
                return c;
        status = child_collect(c, fd, out, sizeof(out), n * 1000L + 20000, &client_s);
        cpu1 = proc_tree_cpu_s(pid);
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                bench_progress("http/%s: %s failed (status %d)", k->name,
                               k->proto == HTTP_H2C ? "h2load" : "wrk", status);
                return -EIO;
        }
        if (k->proto == HTTP_H2C) {
                struct h2load_out r;

                if (h2load_out_parse(out, &r) || !h2c_ok(&r) || r.seconds <= 0) {
                        bench_progress("http/%s: h2load's run failed or is unreadable:\n%s",
                                       k->name, out);
                        return -EIO;
                }
                rps = r.req_per_sec;
                requests = r.succeeded;
                bench_extra("mean_us", "us", true, r.mean_us);
                bench_extra_info("client_cpu_per_sec", "cpu-s/s", client_s / r.seconds);
        } else {
                struct wrk_out r;

                if (wrk_out_parse(out, &r) || r.non_2xx || r.sock_errors || r.requests == 0) {
                        bench_progress("http/%s: wrk's run failed or is unreadable:\n%s",
                                       k->name, out);
                        return -EIO;
                }
                rps = r.req_per_sec;
                requests = r.requests;
                if (k->proto == HTTP_KEEPALIVE)
                        bench_extra("p99_us", "us", true, r.p99_us);
                bench_extra_info("client_cpu_per_sec", "cpu-s/s", client_s / r.seconds);
        }
        if (cpu0 >= 0 && cpu1 > cpu0)
                bench_extra("requests_per_server_cpu_sec", "req/cpu-s", false,
                            requests / (cpu1 - cpu0));
        return rps;
}

/* One h2load request over h2c to @port: whether it succeeded. */
static bool h2c_probe(uint16_t port)
{
        char url[64], out[OUT_MAX];
        char *argv[] = {"h2load", "-n", "1", "-c", "1", url, NULL};
        struct h2load_out r;
        int fd, status;
        pid_t c;

        snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
        c = child_spawn_read(argv, NULL, NULL, &fd);
        if (c < 0)
                return false;
        status = child_collect(c, fd, out, sizeof(out), 10000, NULL);
        return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
               h2load_out_parse(out, &r) == 0 && h2c_ok(&r);
}

static double pc_run(const struct bench_opts *o, enum pc_mode mode, struct http_case *k)
{
        int port = child_free_port(), rc;
        pid_t pid;
        double v;

        if (access(http_pc_path(), X_OK) != 0) {
                bench_progress("http/%s %s skipped: pc-http not built (%s)", k->name,
                               pc_mode_name(mode), http_pc_path());
                return -ENOTSUP;
        }
        if (port < 0)
                return port;
        pid = http_pc_spawn(&k->place, mode, (uint16_t)port);
        if (pid < 0)
                return pid;
        rc = child_wait_port((uint16_t)port, pid);
        if (rc == 0 && k->proto == HTTP_H2C && !h2c_probe((uint16_t)port)) {
                bench_progress("http/%s %s skipped: pc-http does not answer h2c (one "
                               "h2load request failed)", k->name, pc_mode_name(mode));
                rc = -ENOTSUP;
        }
        v = rc ? rc : client_run(o, k, (uint16_t)port, pid);
        child_stop(pid);
        return v;
}

static double http_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *arg)
{
        struct http_side *x = arg;
        struct http_case *k = x->k;
        struct http_peer p;
        double v;
        int rc;

        *workers = k->place.workers;
        if (x->peer < 0)
                return pc_run(o, mode, k);
        rc = http_peer_start((enum http_peer_kind)x->peer, &k->place, &p);
        if (rc)
                return rc;
        v = client_run(o, k, k->proto == HTTP_H2C ? p.h2_port : p.port, p.pid);
        http_peer_stop(&p);
        return v;
}

/* Whether the client of @proto is installed; the bench is told when not. */
static bool have_client(enum http_proto proto)
{
        const char *tool = proto == HTTP_H2C ? "h2load" : "wrk";

        if (bench_on_path(tool))
                return true;
        bench_progress("http/%s-*: skipped: %s is not installed (Debian: %s)", proto_case[proto],
                       tool, proto == HTTP_H2C ? "nghttp2-client" : "wrk");
        return false;
}

int suite_http(const struct bench_opts *o)
{
        static struct http_case cases[HTTP_NPROTO][2];
        static struct http_side pc[3], peers[2];
        static char json[2048], text[2048];
        unsigned counts[2] = {1, 2}, ncounts = o->workers ? 1 : 2;
        bool noted[2] = {false, false};
        struct bench_side sides[5];
        unsigned n = 0;
        bool over = false;
        int rc = 0;

        if (o->workers)
                counts[0] = o->workers;
        for (unsigned m = 0; m < o->nmodes; m++) {
                if (o->modes[m] == PC_MODE_DETERMINISTIC)
                        continue;
                pc[n].peer = -1;
                sides[n] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m], http_run,
                                               &pc[n]};
                n++;
        }
        peers[0].peer = HTTP_NGINX;
        peers[1].peer = HTTP_H2O;
        sides[n++] = (struct bench_side){"peer:nginx", PC_MODE_TPC, http_run, &peers[0]};
        sides[n++] = (struct bench_side){"peer:h2o", PC_MODE_TPC, http_run, &peers[1]};
        if (access(http_pc_path(), X_OK) != 0)
                bench_progress("http: pc-http not built (%s): its sides are skipped, the "
                               "peers measured", http_pc_path());
        rc = write_lua();
        if (rc)
                return rc;
        for (unsigned p = 0; p < HTTP_NPROTO && rc == 0; p++) {
                if (!have_client((enum http_proto)p))
                        continue;
                for (unsigned c = 0; c < ncounts && rc == 0; c++) {
                        struct http_case *k = &cases[p][c];

                        k->proto = (enum http_proto)p;
                        /* The client on a CPU of its own where one is left. */
                        if (lgen_place(counts[c], true, &k->place) &&
                            (rc = lgen_place(counts[c], false, &k->place)) != 0) {
                                bench_progress("http at %u workers: skipped: %s", counts[c],
                                               pc_strerror(rc));
                                rc = 0;
                                continue;
                        }
                        snprintf(k->name, sizeof(k->name), "%s-%s", proto_case[p],
                                 k->place.apart ? "apart" : "shared");
                        /* Every protocol places the client alike. */
                        if (!noted[c])
                                lgen_place_note(&k->place, k->place.apart ? "apart" : "shared",
                                                json, sizeof(json), text, sizeof(text));
                        noted[c] = true;
                        over |= k->place.overprovisioned;
                        for (unsigned i = 0; i < n; i++)
                                ((struct http_side *)sides[i].ctx)->k = k;
                        rc = bench_compare(o, "http", k->name, "requests_per_sec", "req/s",
                                           false, sides, n);
                }
        }
        unlink(lua_path);
        if (rc == 0)
                rc = http_memif_case(o);
        if (over)
                snprintf(text + strlen(text), sizeof(text) - strlen(text),
                         "\n  -shared cases: pc-http runs overprovisioned "
                         "(PERCORE_OVERPROVISIONED=1)");
        if (json[0])
                bench_info_of("http", json,
                              "the client (wrk -t, h2load -t: the client threads; 64 "
                              "connections):",
                              text);
        return rc;
}
