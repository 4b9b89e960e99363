/* SPDX-License-Identifier: MIT */
/* The bench's TCP load generator; see lgen.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "lat.h"
#include "lgen.h"
#include "percore.h"

struct lconn {
        int fd;
        size_t got;
        uint64_t sent_ns; /* when the request in flight was sent */
        char buf[LGEN_BUF];
};

/* What the client's threads share: the run, and its start. */
struct lgen_run {
        const struct lgen_opts *o;
        const struct lgen_proto *p;
        unsigned conns, threads;
        uint64_t duration_ns;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned ready;  /* threads connected (or failed), under lock */
        bool go;         /* the clock started, under lock */
        uint64_t end_ns; /* when it stops: set with go */
        _Atomic int err; /* the first error of any thread */
};

/* One client thread: its connections are those i with i % threads == index. */
struct lgen {
        struct lgen_run *run;
        unsigned index;
        uint64_t done;
        double client_cpu_s;
        uint64_t hist[HIST_BUCKETS];
        int err;
};

/* Thread @index of @threads on @cpus: the whole list, or (@pin_each) the
 * list's CPU number index alone. */
static int pin_client(const char *cpus, bool pin_each, unsigned index)
{
        cpu_set_t mask, one;
        unsigned k = 0;
        int rc;

        if (cpus == NULL)
                return 0;
        rc = lgen_cpuset(cpus, &mask);
        if (rc)
                return rc;
        if (pin_each) {
                CPU_ZERO(&one);
                for (int c = 0; c < CPU_SETSIZE; c++)
                        if (CPU_ISSET(c, &mask) &&
                            k++ == index % (unsigned)CPU_COUNT(&mask))
                                CPU_SET(c, &one);
                mask = one;
        }
        return -pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
}

/* user_data of a completion: the connection, and which operation. */
#define OP_SEND 0u
#define OP_RECV 1u
#define UD(conn, op) (((uint64_t)(conn) << 1) | (op))
#define RING_ENTRIES 1024

struct lring {
        struct io_uring ring;
        char req[LGEN_MAX_CONNS][LGEN_BUF]; /* each connection's request in flight */
        size_t req_len[LGEN_MAX_CONNS], req_off[LGEN_MAX_CONNS];
};

static struct io_uring_sqe *sqe_get(struct io_uring *r)
{
        struct io_uring_sqe *sqe = io_uring_get_sqe(r);

        if (sqe == NULL) {
                io_uring_submit(r);
                sqe = io_uring_get_sqe(r);
        }
        return sqe;
}

static int arm_send(struct lring *lr, struct lconn *c, unsigned i)
{
        struct io_uring_sqe *sqe = sqe_get(&lr->ring);

        if (sqe == NULL)
                return -EBUSY;
        io_uring_prep_send(sqe, c->fd, lr->req[i] + lr->req_off[i],
                           lr->req_len[i] - lr->req_off[i], MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, UD(i, OP_SEND));
        return 0;
}

static int arm_recv(struct lring *lr, struct lconn *c, unsigned i)
{
        struct io_uring_sqe *sqe = sqe_get(&lr->ring);

        if (sqe == NULL)
                return -EBUSY;
        io_uring_prep_recv(sqe, c->fd, c->buf + c->got, sizeof(c->buf) - c->got, 0);
        io_uring_sqe_set_data64(sqe, UD(i, OP_RECV));
        return 0;
}

/* The next request of connection @i, sent; its reply's recv is armed. */
static int next_request(struct lgen *g, struct lring *lr, struct lconn *c, unsigned i,
                        uint64_t *seed)
{
        const struct lgen_proto *p = g->run->p;
        int rc;

        lr->req_len[i] = p->request(p->ctx, g->index + i * g->run->threads, seed,
                                    lr->req[i], sizeof(lr->req[i]));
        lr->req_off[i] = 0;
        c->got = 0;
        c->sent_ns = pc_now_ns();
        rc = arm_send(lr, c, i);
        return rc ? rc : arm_recv(lr, c, i);
}

/* One completion. Returns 0, or a negative errno that ends the run. */
static int complete(struct lgen *g, struct lring *lr, struct lconn *c, unsigned i, unsigned op,
                    int res, uint64_t *seed)
{
        if (op == OP_SEND) {
                if (res < 0)
                        return res == -EINTR || res == -EAGAIN ? arm_send(lr, c, i) : -EPIPE;
                lr->req_off[i] += (size_t)res;
                /* A short send: the rest, then (already armed) the reply. */
                return lr->req_off[i] < lr->req_len[i] ? arm_send(lr, c, i) : 0;
        }
        if (res <= 0)
                return res == -EINTR || res == -EAGAIN ? arm_recv(lr, c, i) : -EPIPE;
        c->got += (size_t)res;
        if (!g->run->p->reply_done(g->run->p->ctx, g->index + i * g->run->threads, c->buf,
                                   c->got))
                return c->got == sizeof(c->buf) ? -EPROTO : arm_recv(lr, c, i);
        g->done++;
        g->hist[hist_bucket(pc_now_ns() - c->sent_ns)]++;
        return next_request(g, lr, c, i, seed);
}

/* Set the run's first error (the later ones say less). */
static void run_fail(struct lgen_run *r, int err)
{
        int none = 0;

        atomic_compare_exchange_strong(&r->err, &none, err);
}

/*
 * A client thread: one io_uring for its connections, one request in
 * flight on each. A reply's completion queues the connection's next send
 * and recv; all of them go to the kernel in one io_uring_enter that also
 * waits for the next completions, so the thread spends about one system
 * call per batch of requests, not three per request as a plain epoll loop
 * does. Its TCP work per request (its send runs the server socket's
 * receive too) stays about a server's, which is why its CPU is reported.
 * Every thread connects and sends its first requests, then waits for the
 * others and the clock; a thread that failed still says it is ready, and
 * then no thread runs.
 */
static void *lgen_thread(void *arg)
{
        struct lgen *g = arg;
        struct lgen_run *r = g->run;
        unsigned conns = r->conns / r->threads + (g->index < r->conns % r->threads);
        struct lconn *c = calloc(conns, sizeof(*c));
        struct lring *lr = calloc(1, sizeof(*lr));
        uint64_t seed = 0x9E3779B97F4A7C15ull + g->index * 0xD1B54A32D192ED03ull;
        double ccpu0;
        bool ring = false;

        if (c == NULL || lr == NULL) {
                g->err = -ENOMEM;
                goto ready;
        }
        for (unsigned i = 0; i < conns; i++)
                c[i].fd = -1;
        g->err = pin_client(r->o->cpus, r->o->pin_each, g->index);
        if (g->err)
                goto ready;
        /* Task work deferred to the client's own io_uring_enter (6.1),
         * where the kernel has it: the client then costs every server the
         * same, less, and no IPI interrupts it per reply. */
        g->err = io_uring_queue_init(RING_ENTRIES, &lr->ring,
                                     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
        if (g->err == -EINVAL)
                g->err = io_uring_queue_init(RING_ENTRIES, &lr->ring, 0);
        if (g->err)
                goto ready;
        ring = true;
        for (unsigned i = 0; i < conns; i++) {
                struct sockaddr_in sa = {.sin_family = AF_INET,
                                         .sin_port = htons(r->o->port)};
                int one = 1;

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
                if (c[i].fd < 0 || connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa))) {
                        g->err = -errno;
                        goto ready;
                }
                setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                if ((g->err = next_request(g, lr, &c[i], i, &seed)) != 0)
                        goto ready;
        }
ready:
        if (g->err)
                run_fail(r, g->err);
        pthread_mutex_lock(&r->lock);
        r->ready++;
        pthread_cond_broadcast(&r->cond);
        while (!r->go)
                pthread_cond_wait(&r->cond, &r->lock);
        pthread_mutex_unlock(&r->lock);
        if (atomic_load(&r->err))
                goto out;
        ccpu0 = thread_cpu_s();
        while (pc_now_ns() < r->end_ns) {
                struct __kernel_timespec ts = {.tv_nsec = 100000000};
                struct io_uring_cqe *cqe;
                unsigned head, seen = 0;
                int rc;

                rc = io_uring_submit_and_wait_timeout(&lr->ring, &cqe, 1, &ts, NULL);
                if (rc < 0 && rc != -ETIME && rc != -EINTR) {
                        g->err = rc;
                        goto out;
                }
                io_uring_for_each_cqe(&lr->ring, head, cqe) {
                        unsigned i = (unsigned)(cqe->user_data >> 1);

                        seen++;
                        rc = complete(g, lr, &c[i], i, (unsigned)(cqe->user_data & 1), cqe->res,
                                      &seed);
                        if (rc) {
                                g->err = rc;
                                break;
                        }
                }
                io_uring_cq_advance(&lr->ring, seen);
                if (g->err)
                        goto out;
        }
        g->client_cpu_s = thread_cpu_s() - ccpu0;
out:
        /* Closing the sockets ends what is still armed; then the ring goes. */
        for (unsigned i = 0; c && i < conns; i++)
                if (c[i].fd >= 0)
                        close(c[i].fd);
        if (ring)
                io_uring_queue_exit(&lr->ring);
        free(lr);
        free(c);
        return NULL;
}

int lgen_run(const struct lgen_opts *o, struct lgen_result *out)
{
        unsigned threads = o->threads ? o->threads : 1, started = 0;
        struct lgen_run r = {.o = o, .p = o->p, .threads = threads};
        pthread_t tid[LGEN_MAX_THREADS];
        struct lgen *g;
        double cpu0, cpu1;
        int rc;

        r.conns = o->conns > LGEN_MAX_CONNS ? LGEN_MAX_CONNS : o->conns;
        r.duration_ns = (uint64_t)(o->seconds * 1e9);
        if (threads > LGEN_MAX_THREADS || threads > r.conns)
                return -ERANGE;
        g = calloc(threads, sizeof(*g));
        if (g == NULL)
                return -ENOMEM;
        pthread_mutex_init(&r.lock, NULL);
        pthread_cond_init(&r.cond, NULL);
        for (; started < threads; started++) {
                g[started] = (struct lgen){.run = &r, .index = started};
                if (pthread_create(&tid[started], NULL, lgen_thread, &g[started]) != 0) {
                        run_fail(&r, -EAGAIN);
                        break;
                }
        }
        /* Every started thread connected (or failed): the clock starts. */
        pthread_mutex_lock(&r.lock);
        while (r.ready < started)
                pthread_cond_wait(&r.cond, &r.lock);
        cpu0 = proc_cpu_s(o->server_pid);
        r.end_ns = pc_now_ns() + r.duration_ns;
        r.go = true;
        pthread_cond_broadcast(&r.cond);
        pthread_mutex_unlock(&r.lock);
        /* The server's CPU over the threads' timed part: to the clock's end,
         * not past their closes (no wait when no thread runs). */
        for (uint64_t now; !atomic_load(&r.err) && (now = pc_now_ns()) < r.end_ns;) {
                struct timespec ts = {.tv_sec = (time_t)((r.end_ns - now) / 1000000000u),
                                      .tv_nsec = (long)((r.end_ns - now) % 1000000000u)};

                nanosleep(&ts, NULL);
        }
        cpu1 = proc_cpu_s(o->server_pid);
        memset(out, 0, sizeof(*out));
        for (unsigned i = 0; i < started; i++) {
                pthread_join(tid[i], NULL);
                if (g[i].err)
                        run_fail(&r, g[i].err);
                out->done += g[i].done;
                out->client_cpu_s += g[i].client_cpu_s;
                for (unsigned b = 0; i > 0 && b < HIST_BUCKETS; b++)
                        g[0].hist[b] += g[i].hist[b]; /* every thread's, into the first's */
        }
        out->server_cpu_s = cpu1 - cpu0;
        if (cpu0 < 0 || out->server_cpu_s < 0)
                out->server_cpu_s = -1;
        out->p99_us = hist_quantile(g[0].hist, out->done, 0.99) / 1e3;
        rc = atomic_load(&r.err);
        pthread_cond_destroy(&r.cond);
        pthread_mutex_destroy(&r.lock);
        free(g);
        return rc;
}

static void cpu_list(const int *cpus, unsigned n, char *buf, size_t len)
{
        size_t off = 0;

        buf[0] = '\0';
        for (unsigned i = 0; i < n && off < len; i++)
                off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "", cpus[i]);
}

int lgen_layout(const int *cpus, unsigned n, unsigned workers, bool apart,
                struct lgen_place *out)
{
        unsigned client = 0;

        if (workers == 0 || workers > LGEN_MAX_SERVER || n < workers + apart)
                return -ERANGE;
        memset(out, 0, sizeof(*out));
        out->workers = workers;
        out->apart = apart;
        out->overprovisioned = !apart;
        if (apart) {
                client = n - workers < workers ? n - workers : workers;
                if (client > LGEN_MAX_THREADS)
                        client = LGEN_MAX_THREADS;
                out->client_threads = client;
        } else {
                out->client_threads = (workers + 1) / 2;
        }
        memcpy(out->cpus, cpus + client, workers * sizeof(int));
        cpu_list(out->cpus, workers, out->server_cpus, sizeof(out->server_cpus));
        if (apart)
                cpu_list(cpus, client, out->client_cpus, sizeof(out->client_cpus));
        else
                memcpy(out->client_cpus, out->server_cpus, sizeof(out->client_cpus));
        out->conns = out->client_threads <= 2 ? LGEN_CONNS : 32 * out->client_threads;
        if (out->conns > LGEN_MAX_CONNS)
                out->conns = LGEN_MAX_CONNS;
        return 0;
}

int lgen_place(unsigned workers, bool apart, struct lgen_place *out)
{
        int cpus[2 * LGEN_MAX_SERVER];
        unsigned n = 0;
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set))
                return -errno;
        for (int c = 0; c < CPU_SETSIZE && n < 2 * LGEN_MAX_SERVER; c++)
                if (CPU_ISSET(c, &set))
                        cpus[n++] = c;
        return lgen_layout(cpus, n, workers, apart, out);
}

/* snprintf() at @buf's end, never past @len. */
static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
        size_t used = strnlen(buf, len);
        va_list ap;

        if (used + 1 >= len)
                return;
        va_start(ap, fmt);
        vsnprintf(buf + used, len - used, fmt, ap);
        va_end(ap);
}

/* CPU list @list as ranges ("0-7,9") into @out, for a short line. */
static void cpu_ranges(const char *list, char *out, size_t len)
{
        uint64_t set[CPU_SETSIZE / 64];

        if (pc_cpulist_parse(list, set, CPU_SETSIZE) < 0)
                snprintf(out, len, "%s", list);
        else
                pc_cpulist_format(set, CPU_SETSIZE, out, len);
}

void lgen_place_note(const struct lgen_place *k, const char *kase, char *json,
                     size_t jlen, char *text, size_t tlen)
{
        char server[sizeof(k->server_cpus)], client[sizeof(k->client_cpus)];

        append(json, jlen,
               "%s\"%s/%u\": {\"server_cpus\": \"%s\", \"client_cpus\": \"%s\", "
               "\"client_threads\": %u, \"conns\": %u, \"client_apart\": %s, "
               "\"percore_overprovisioned\": %s}",
               json[0] ? ", " : "", kase, k->workers, k->server_cpus, k->client_cpus,
               k->client_threads, k->conns, k->apart ? "true" : "false",
               k->overprovisioned ? "true" : "false");
        cpu_ranges(k->server_cpus, server, sizeof(server));
        cpu_ranges(k->client_cpus, client, sizeof(client));
        append(text, tlen, "%s%s, %u worker%s: server CPU%s %s; client %u thread%s on ",
               text[0] ? "\n  " : "", kase, k->workers, k->workers == 1 ? "" : "s",
               strchr(k->server_cpus, ',') ? "s" : "", server, k->client_threads,
               k->client_threads == 1 ? "" : "s");
        if (k->apart)
                append(text, tlen, "its own CPU%s %s", strchr(k->client_cpus, ',') ? "s" : "",
                       client);
        else
                append(text, tlen, "the same");
        append(text, tlen, ", %u connections", k->conns);
}

int lgen_cpuset(const char *list, cpu_set_t *out)
{
        uint64_t set[CPU_SETSIZE / 64];
        int rc = pc_cpulist_parse(list, set, CPU_SETSIZE);

        if (rc < 0)
                return rc;
        CPU_ZERO(out);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (set[c / 64] >> (c % 64) & 1)
                        CPU_SET(c, out);
        return 0;
}
