/* SPDX-License-Identifier: MIT */
/*
 * kv: memcached ASCII get/set operations per second per worker, pc-kv in
 * each mode against Debian's memcached with the same thread count, both
 * as child processes on loopback, driven by the same generator in the same
 * run. Each connection alternates "set" and "get" of 32-byte values over a
 * fixed key space (one request in flight per connection), so the servers
 * do the same work; gets of keys not yet set count too (memcached answers
 * them the same way).
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
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define KV_CONNS 32
#define KV_KEYS 10000
#define KV_VALUE 32
#define KV_PORT_BASE 23000

struct kconn {
        int fd;
        bool is_get;
        size_t got;
        char buf[256];
};

struct kgen {
        uint16_t port;
        uint64_t duration_ns;
        uint64_t ops;
        int err;
};

static int send_req(struct kconn *c, uint64_t *seed)
{
        char req[128];
        int n;
        unsigned key;

        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        key = (unsigned)(*seed >> 33) % KV_KEYS;
        if (c->is_get)
                n = snprintf(req, sizeof(req), "get k%05u\r\n", key);
        else
                n = snprintf(req, sizeof(req), "set k%05u 0 0 %d\r\n%0*u\r\n", key, KV_VALUE,
                             KV_VALUE, key);
        c->got = 0;
        return send(c->fd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -EIO;
}

/* A whole reply: "STORED\r\n" for a set, anything ending in "END\r\n" for
 * a get (a hit carries the VALUE line and data before it). */
static bool reply_done(const struct kconn *c)
{
        if (!c->is_get)
                return c->got >= 8;
        return c->got >= 5 && memcmp(c->buf + c->got - 5, "END\r\n", 5) == 0;
}

static void *kgen_thread(void *arg)
{
        struct kgen *g = arg;
        struct kconn *c = calloc(KV_CONNS, sizeof(*c));
        int ep = epoll_create1(0);
        uint64_t end, ops = 0, seed = 0x9E3779B97F4A7C15ull;

        if (c == NULL || ep < 0) {
                g->err = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < KV_CONNS; i++) {
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
                c[i].is_get = i % 2;
                if (send_req(&c[i], &seed)) {
                        g->err = -EIO;
                        goto out;
                }
        }
        end = pc_now_ns() + g->duration_ns;
        while (pc_now_ns() < end) {
                struct epoll_event evs[KV_CONNS];
                int k = epoll_wait(ep, evs, KV_CONNS, 100);

                for (int i = 0; i < k; i++) {
                        struct kconn *x = &c[evs[i].data.u32];
                        ssize_t r = recv(x->fd, x->buf + x->got, sizeof(x->buf) - x->got,
                                         MSG_DONTWAIT);

                        if (r <= 0) {
                                if (r < 0 && errno == EAGAIN)
                                        continue;
                                g->err = -EPIPE;
                                goto out;
                        }
                        x->got += (size_t)r;
                        if (!reply_done(x)) {
                                if (x->got == sizeof(x->buf)) {
                                        g->err = -EPROTO;
                                        goto out;
                                }
                                continue;
                        }
                        ops++;
                        x->is_get = !x->is_get;
                        if (send_req(x, &seed)) {
                                g->err = -EIO;
                                goto out;
                        }
                }
        }
out:
        g->ops = ops;
        for (unsigned i = 0; c && i < KV_CONNS; i++)
                if (c[i].fd > 0)
                        close(c[i].fd);
        free(c);
        if (ep >= 0)
                close(ep);
        return NULL;
}

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
        struct kgen g = {.port = port, .duration_ns = (uint64_t)(o->duration * 1e9)};
        pthread_t t;
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
        if (rc == 0) {
                pthread_create(&t, NULL, kgen_thread, &g);
                pthread_join(t, NULL);
                rc = g.err;
        }
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        *workers = n;
        if (rc)
                return rc;
        return (double)g.ops / n / o->duration;
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
