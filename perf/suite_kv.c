/* SPDX-License-Identifier: MIT */
/*
 * kv: memcached ASCII get/set operations per second, pc-kv in each mode
 * against Debian's memcached with the same thread count, both child
 * processes on loopback pinned to the same server CPUs (pc-kv pins each
 * worker; memcached, which has no pinning of its own, gets its process
 * affinity set, as taskset would), driven by the same generator, the
 * sides alternated round by round. Every key of a fixed key space is
 * stored first (one pipelined connection, not timed); then 64 connections
 * send gets and sets at random keys, nine gets to one set, one request in
 * flight per connection (a case on many CPUs gives the client more
 * threads and connections: lgen_place()). Cases: 32-byte and 1 KB
 * values, at 1 and 2 workers (or --workers); with 2 workers pc-kv's shards
 * split the keys, so half the requests of a connection go to the other
 * worker's shard by pc_call(). The client runs on CPUs of its own where
 * they are left ("-apart"), on the server's CPUs otherwise ("-shared"),
 * where pc-kv runs with PERCORE_OVERPROVISIONED=1 (so its parked owners
 * lend their shards; a line of the note under the table says so).
 * Each run also reports the 99th percentile latency (p99_us) the client
 * saw and the operations per CPU second the server process used
 * (ops_per_server_cpu_sec, from /proc/PID/stat over the timed part): where
 * the client shares the CPUs, that is what says how much work a server
 * spends per request.
 *
 * The "slap-" cases drive the same servers with a client nobody here
 * wrote, as memcached's users measure one: libmemcached's memcaslap
 * (Debian's libmemcached-tools), the case's client threads and connections
 * (one and 64 on two CPUs), its own mix
 * of nine gets to one set over its own 64-byte keys (control and high
 * bytes among them) and 1 KB values, on the client CPUs named above; the
 * figure is the operations per second memcaslap prints. They are skipped,
 * with a message, when memcaslap is not installed.
 *
 * PERCORE_KV names the pc-kv binary (default: ../apps/pc-kv beside the
 * bench); the peer is skipped with a message when memcached is missing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "lat.h"
#include "lgen.h"

#define KV_KEYS 10000

/* One case: value size and where the server and client run. */
struct kv_case {
        unsigned value;
        bool slap; /* driven by memcaslap rather than the bench's generator */
        struct lgen_place place;
        char name[32];
};

/* Per connection: whether its request in flight is a get. */
static bool kv_is_get[LGEN_MAX_CONNS];

static size_t kv_request(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap)
{
        const struct kv_case *k = ctx;
        unsigned key;
        int n;

        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        key = (unsigned)(*seed >> 33) % KV_KEYS;
        /* Nine gets to one set. */
        kv_is_get[conn] = (*seed >> 20) % 10 != 0;
        if (kv_is_get[conn])
                n = snprintf(buf, cap, "get k%05u\r\n", key);
        else
                n = snprintf(buf, cap, "set k%05u 0 0 %u\r\n%0*u\r\n", key, k->value,
                             (int)k->value, key);
        return (size_t)n;
}

/* A whole reply: "STORED\r\n" for a set, anything ending in "END\r\n" for
 * a get (a hit carries the VALUE line and data before it). */
static bool kv_done(void *ctx, unsigned conn, const char *buf, size_t len)
{
        (void)ctx;
        if (!kv_is_get[conn])
                return len >= 8;
        return len >= 5 && memcmp(buf + len - 5, "END\r\n", 5) == 0;
}

static const char *pc_kv_path(void)
{
        return child_app_path("pc-kv", "PERCORE_KV");
}

/* Store every key once, before the timed part: one connection, pipelined
 * noreply sets, then a version to know they were all taken. */
static int kv_preload(uint16_t port, unsigned value)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        char buf[64 * 1024], reply[256];
        int fd = socket(AF_INET, SOCK_STREAM, 0), rc = 0;
        size_t len = 0, got = 0;

        if (fd < 0)
                return -errno;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
                rc = -errno;
                goto out;
        }
        for (unsigned k = 0; k <= KV_KEYS && rc == 0; k++) {
                if (k < KV_KEYS)
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                                "set k%05u 0 0 %u noreply\r\n%0*u\r\n", k,
                                                value, (int)value, k);
                else
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "version\r\n");
                if (k == KV_KEYS || len > sizeof(buf) - 128 - value) {
                        if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
                                rc = -EIO;
                        len = 0;
                }
        }
        while (rc == 0 && (got == 0 || reply[got - 1] != '\n')) {
                ssize_t r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);

                if (r <= 0)
                        rc = -EIO;
                else
                        got += (size_t)r;
                if (got == sizeof(reply) - 1)
                        rc = -EPROTO;
        }
        if (rc == 0 && strncmp(reply, "VERSION ", 8) != 0)
                rc = -EPROTO;
out:
        close(fd);
        return rc;
}

struct kv_side {
        bool memcached;
        struct kv_case *k;
};

/* Start the server of @x in a child, on the case's CPUs. */
static pid_t kv_spawn(const struct kv_side *x, enum pc_mode mode, uint16_t port)
{
        char ports[16], threads[16], modev[64], cpusv[300];
        const char *env[] = {modev, cpusv,
                             x->k->place.overprovisioned ? "PERCORE_OVERPROVISIONED=1"
                                                         : "PERCORE_OVERPROVISIONED=0",
                             NULL};

        snprintf(ports, sizeof(ports), "%u", port);
        snprintf(threads, sizeof(threads), "%u", x->k->place.workers);
        if (x->memcached) {
                char *argv[] = {"memcached", "-p", ports, "-U", "0", "-l", "127.0.0.1", "-t",
                                threads, "-m", "256", "-c", "4096", "-u", "root", NULL};

                return child_spawn(argv, NULL, x->k->place.server_cpus);
        }
        char *argv[] = {(char *)pc_kv_path(), "-p", ports, "-l", "127.0.0.1", "-t", threads,
                        "-m", "256", "-c", "4096", NULL};

        snprintf(modev, sizeof(modev), "PERCORE_MODE=%s", pc_mode_name(mode));
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", x->k->place.server_cpus);
        return child_spawn(argv, env, NULL);
}

/* memcaslap's name (Debian's; upstream's is memaslap), or NULL when
 * neither is on PATH. */
static const char *slap_path(void)
{
        if (bench_on_path("memcaslap"))
                return "memcaslap";
        return bench_on_path("memaslap") ? "memaslap" : NULL;
}

/* One memcaslap run against the server @pid on @port (see the top). */
static double slap_run(const struct bench_opts *o, const struct kv_case *k, uint16_t port,
                       pid_t pid)
{
        char srv[32], secs[16], threads[16], conns[16], value[16], out[4096];
        char *argv[] = {(char *)slap_path(), "-s", srv, "-T", threads, "-c", conns,
                        "-X", value, "-t", secs, NULL};
        int n = o->duration < 1 ? 1 : (int)(o->duration + 0.5), fd, status;
        double cpu0 = proc_cpu_s(pid), cpu1, client_s, ops, tps, run_s, gets, misses;
        pid_t slap;

        snprintf(srv, sizeof(srv), "127.0.0.1:%u", port);
        snprintf(secs, sizeof(secs), "%ds", n);
        snprintf(threads, sizeof(threads), "%u", k->place.client_threads);
        snprintf(conns, sizeof(conns), "%u", k->place.conns);
        snprintf(value, sizeof(value), "%u", k->value);
        slap = child_spawn_read(argv, NULL, k->place.client_cpus, &fd);
        if (slap < 0)
                return slap;
        status = child_collect(slap, fd, out, sizeof(out), n * 1000L + 20000, &client_s);
        cpu1 = proc_cpu_s(pid);
        tps = child_field(out, "TPS: ");
        ops = child_field(out, "Ops: ");
        run_s = child_field(out, "Run time: ");
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || tps <= 0 ||
            ops <= 0 || run_s <= 0) {
                bench_progress("kv: memcaslap failed (status %d)", status);
                return -EIO;
        }
        if (cpu0 >= 0 && cpu1 > cpu0)
                bench_extra("ops_per_server_cpu_sec", "ops/cpu-s", false, ops / (cpu1 - cpu0));
        /* Its CPU over its whole life (connecting included) per second of
         * its timed run: slightly over what the run itself took, never
         * under, so near 1 still says the client was the bound. */
        bench_extra_info("client_cpu_per_sec", "cpu-s/s", client_s / run_s);
        /* Its gets find what its sets stored: a server that refused the
         * sets (or the keys) shows here. */
        gets = child_field(out, "cmd_get: ");
        misses = child_field(out, "get_misses: ");
        if (gets > 0 && misses >= 0)
                bench_extra_info("get_misses_per_get", "share", misses / gets);
        return tps;
}

static double kv_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers, void *arg)
{
        struct kv_side *x = arg;
        struct kv_case *k = x->k;
        int free_port = child_free_port();
        uint16_t port = (uint16_t)free_port;
        const struct lgen_proto proto = {.request = kv_request, .reply_done = kv_done, .ctx = k};
        struct lgen_result res;
        pid_t pid;
        int rc;

        *workers = k->place.workers;
        if (free_port < 0)
                return free_port;
        pid = kv_spawn(x, mode, port);
        if (pid < 0)
                return pid;
        rc = child_wait_port(port, pid);
        if (rc == 0 && k->slap) {
                double v = slap_run(o, k, port, pid);

                child_stop(pid);
                return v;
        }
        if (rc == 0)
                rc = kv_preload(port, k->value);
        if (rc == 0) {
                struct lgen_opts lo = {.port = port,
                                       .conns = k->place.conns,
                                       .seconds = o->duration,
                                       .p = &proto,
                                       .cpus = k->place.client_cpus,
                                       .threads = k->place.client_threads,
                                       .pin_each = k->place.apart,
                                       .server_pid = pid};

                memset(kv_is_get, 0, sizeof(kv_is_get));
                rc = lgen_run(&lo, &res);
        }
        child_stop(pid);
        if (rc)
                return rc;
        bench_extra("p99_us", "us", true, res.p99_us);
        if (res.server_cpu_s > 0)
                bench_extra("ops_per_server_cpu_sec", "ops/cpu-s", false,
                            (double)res.done / res.server_cpu_s);
        /* Near its threads' count, the client was the bound, not the server. */
        bench_extra_info("client_cpu_per_sec", "cpu-s/s", res.client_cpu_s / o->duration);
        return (double)res.done / o->duration;
}

static bool have_memcached(void)
{
        return bench_on_path("memcached");
}

static double memcached_missing(const struct bench_opts *o, enum pc_mode mode,
                                unsigned *workers, void *arg)
{
        (void)o;
        (void)mode;
        (void)workers;
        (void)arg;
        bench_progress("kv: peer:memcached skipped: memcached is not installed");
        return -ENOTSUP;
}

int suite_kv(const struct bench_opts *o)
{
        /* 32 B and 1 KB with the bench's generator, 1 KB with memcaslap. */
        static const unsigned values[] = {32, 1024, 1024};
        static struct kv_case cases[3][2];
        static struct kv_side pc[3], mc;
        static char json[2048], text[2048];
        unsigned counts[2] = {1, 2}, ncounts = o->workers ? 1 : 2;
        struct bench_side sides[4];
        unsigned n = 0;
        bool over = false;
        int rc;

        if (access(pc_kv_path(), X_OK) != 0) {
                bench_progress("kv: skipped: %s not found (built without io_uring?)",
                               pc_kv_path());
                return 0;
        }
        if (o->workers)
                counts[0] = o->workers;
        for (unsigned m = 0; m < o->nmodes; m++) {
                if (o->modes[m] == PC_MODE_DETERMINISTIC)
                        continue;
                sides[n] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m], kv_run,
                                               &pc[n]};
                n++;
        }
        mc.memcached = true;
        sides[n++] = (struct bench_side){"peer:memcached", PC_MODE_TPC,
                                         have_memcached() ? kv_run : memcached_missing, &mc};
        for (unsigned v = 0; v < 3; v++) {
                if (v == 2 && slap_path() == NULL) {
                        bench_progress("kv: slap cases skipped: memcaslap is not installed "
                                       "(Debian: libmemcached-tools)");
                        break;
                }
                for (unsigned c = 0; c < ncounts; c++) {
                        struct kv_case *k = &cases[v][c];
                        char *kase = k->name;

                        k->value = values[v];
                        k->slap = v == 2;
                        /* The client on a CPU of its own where one is left. */
                        if (lgen_place(counts[c], true, &k->place) &&
                            (rc = lgen_place(counts[c], false, &k->place)) != 0) {
                                bench_progress("kv at %u workers: skipped: %s", counts[c],
                                               pc_strerror(rc));
                                continue;
                        }
                        snprintf(kase, sizeof(k->name), "%sv%s-%s", k->slap ? "slap-" : "",
                                 v ? "1k" : "32", k->place.apart ? "apart" : "shared");
                        /* Every value size places the client alike. */
                        if (v == 0)
                                lgen_place_note(&k->place,
                                                k->place.apart ? "apart" : "shared", json,
                                                sizeof(json), text, sizeof(text));
                        over |= k->place.overprovisioned;
                        for (unsigned i = 0; i < n; i++)
                                ((struct kv_side *)sides[i].ctx)->k = k;
                        rc = bench_compare(o, "kv", kase, "ops_per_sec", "ops/s", false, sides,
                                           n);
                        if (rc)
                                return rc;
                }
        }
        if (over)
                snprintf(text + strlen(text), sizeof(text) - strlen(text),
                         "\n  -shared cases: pc-kv runs overprovisioned "
                         "(PERCORE_OVERPROVISIONED=1), lending shards");
        bench_info_of("kv", json,
                      "the client (perf/lgen.c; memcaslap's -T and -c the same in the "
                      "slap- cases):",
                      text);
        return 0;
}
