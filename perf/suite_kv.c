/* SPDX-License-Identifier: MIT */
/*
 * kv: memcached ASCII get/set operations per second per worker, pc-kv in
 * each mode against Debian's memcached with the same thread count, both
 * as child processes on loopback, driven by the same generator in the same
 * run. Every key of a fixed key space is stored first (one pipelined
 * connection, not timed); then each connection sends gets and sets of
 * 32-byte values at random keys, nine gets to one set, one request in
 * flight per connection, so the servers do the same work. Each run also reports the 99th percentile latency
 * of a request (p99_us) as seen by the generator, and the operations per
 * CPU second the server process used (ops_per_server_cpu_sec, from
 * /proc/PID/stat): on a machine where the generator shares the CPUs and
 * caps ops/s for every server, this is what says how much work a server
 * spends per request. pc-kv's workers poll while idle, so their spinning
 * counts against them here.
 *
 * PERCORE_KV names the pc-kv binary (default: ../apps/pc-kv beside the
 * bench); the peer is skipped with a message when memcached is missing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "lgen.h"

#define KV_CONNS 32
#define KV_KEYS 10000
#define KV_VALUE 32
#define KV_PORT_BASE 23000

/* Per connection: whether its request in flight is a get. */
static bool kv_is_get[LGEN_MAX_CONNS];

static size_t kv_request(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap)
{
        unsigned key;
        int n;

        (void)ctx;
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        key = (unsigned)(*seed >> 33) % KV_KEYS;
        /* Nine gets to one set. */
        kv_is_get[conn] = (*seed >> 20) % 10 != 0;
        if (kv_is_get[conn])
                n = snprintf(buf, cap, "get k%05u\r\n", key);
        else
                n = snprintf(buf, cap, "set k%05u 0 0 %d\r\n%0*u\r\n", key, KV_VALUE,
                             KV_VALUE, key);
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

static const struct lgen_proto kv_proto = {.request = kv_request, .reply_done = kv_done};

static const char *pc_kv_path(void)
{
        static char path[PATH_MAX + 32];
        char self[PATH_MAX];
        ssize_t n;

        if (getenv("PERCORE_KV"))
                return getenv("PERCORE_KV");
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return "pc-kv";
        self[n] = '\0';
        snprintf(path, sizeof(path), "%s/../apps/pc-kv", dirname(self));
        return path;
}

/* Wait until something accepts on @port (the child is up), at most 5 s. */
static int wait_port(uint16_t port, pid_t child)
{
        for (int i = 0; i < 500; i++) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
                int fd = socket(AF_INET, SOCK_STREAM, 0), rc;
                struct timespec ts = {0, 10000000};

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
                close(fd);
                if (rc == 0)
                        return 0;
                if (waitpid(child, NULL, WNOHANG) == child)
                        return -ECHILD;
                nanosleep(&ts, NULL);
        }
        return -ETIMEDOUT;
}

/* CPU seconds @pid has used so far (all its threads), or -1. */
static double cpu_seconds(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long utime, stime;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (f == NULL)
                return -1;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* Fields after the command (which may hold spaces) start at ") ";
         * utime and stime are the 12th and 13th of them. */
        p = strrchr(buf, ')');
        if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                &utime, &stime) != 2)
                return -1;
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Store every key once, before the timed part: one connection, pipelined
 * noreply sets, then a version to know they were all taken. */
static int kv_preload(uint16_t port)
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
                                                "set k%05u 0 0 %d noreply\r\n%0*u\r\n", k,
                                                KV_VALUE, KV_VALUE, k);
                else
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "version\r\n");
                if (k == KV_KEYS || len > sizeof(buf) - 128) {
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

struct kv_ctx {
        bool memcached;
        unsigned runs; /* gives each run its own port */
};

static double kv_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers, void *arg)
{
        struct kv_ctx *x = arg;
        unsigned n = o->workers ? o->workers : 1;
        uint16_t port = (uint16_t)(KV_PORT_BASE + (x->memcached ? 500 : 0) + x->runs++ % 400);
        char ports[16], threads[16];
        double ops = 0;
        pid_t pid;
        int rc, status;

        snprintf(ports, sizeof(ports), "%u", port);
        snprintf(threads, sizeof(threads), "%u", n);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                if (null >= 0) {
                        dup2(null, 1);
                        dup2(null, 2);
                }
                if (x->memcached) {
                        execlp("memcached", "memcached", "-p", ports, "-U", "0", "-l",
                               "127.0.0.1", "-t", threads, "-m", "256", "-u", "root", (char *)NULL);
                } else {
                        setenv("PERCORE_MODE", pc_mode_name(mode), 1);
                        setenv("PERCORE_PIN", "0", 1);
                        execl(pc_kv_path(), "pc-kv", "-p", ports, "-l", "127.0.0.1", "-t",
                              threads, "-m", "256", (char *)NULL);
                }
                _exit(127);
        }
        rc = wait_port(port, pid);
        if (rc == 0)
                rc = kv_preload(port);
        if (rc == 0) {
                memset(kv_is_get, 0, sizeof(kv_is_get));
                double p99 = 0, cpu0 = cpu_seconds(pid), cpu1;

                ops = lgen_run(port, KV_CONNS, o->duration, &kv_proto, &p99);
                cpu1 = cpu_seconds(pid);
                if (ops < 0) {
                        rc = (int)ops;
                } else {
                        bench_extra("p99_us", "us", true, p99);
                        if (cpu0 >= 0 && cpu1 > cpu0)
                                bench_extra("ops_per_server_cpu_sec", "ops/cpu-s", false,
                                            ops / (cpu1 - cpu0));
                }
        }
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        *workers = n;
        if (rc)
                return rc;
        return ops / n / o->duration;
}

static bool have_memcached(void)
{
        return system("command -v memcached >/dev/null 2>&1") == 0;
}

int suite_kv(const struct bench_opts *o)
{
        static struct kv_ctx pc = {.memcached = false}, mc = {.memcached = true};
        int rc;

        if (access(pc_kv_path(), X_OK) != 0) {
                bench_progress("kv: skipped: %s not found (built without io_uring?)",
                               pc_kv_path());
                return 0;
        }
        for (unsigned m = 0; m < o->nmodes; m++) {
                if (o->modes[m] == PC_MODE_DETERMINISTIC)
                        continue;
                rc = bench_measure(o, "kv", "getset", pc_mode_name(o->modes[m]), o->modes[m],
                                   "ops_per_sec_per_worker", "ops/s", false, kv_run, &pc);
                if (rc)
                        return rc;
        }
        if (!have_memcached()) {
                bench_progress("kv: peer:memcached skipped: memcached is not installed");
                return 0;
        }
        return bench_measure(o, "kv", "getset", "peer:memcached", PC_MODE_TPC,
                             "ops_per_sec_per_worker", "ops/s", false, kv_run, &mc);
}
