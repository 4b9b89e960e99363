/* SPDX-License-Identifier: MIT */
/* The bench's TCP load generator; see lgen.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
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

struct lgen {
        const struct lgen_opts *o;
        unsigned conns;
        uint64_t duration_ns;
        const struct lgen_proto *p;
        uint64_t done;
        double server_cpu_s, client_cpu_s;
        uint64_t hist[HIST_BUCKETS];
        int err;
};

static int pin_client(const char *cpus)
{
        cpu_set_t mask;
        int rc;

        if (cpus == NULL)
                return 0;
        rc = lgen_cpuset(cpus, &mask);
        return rc ? rc : -pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
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
        int rc;

        lr->req_len[i] = g->p->request(g->p->ctx, i, seed, lr->req[i], sizeof(lr->req[i]));
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
        if (!g->p->reply_done(g->p->ctx, i, c->buf, c->got))
                return c->got == sizeof(c->buf) ? -EPROTO : arm_recv(lr, c, i);
        g->done++;
        g->hist[hist_bucket(pc_now_ns() - c->sent_ns)]++;
        return next_request(g, lr, c, i, seed);
}

/*
 * The client: one io_uring for every connection, one request in flight on
 * each. A reply's completion queues the connection's next send and recv;
 * all of them go to the kernel in one io_uring_enter that also waits for
 * the next completions, so the client spends about one system call per
 * batch of requests, not three per request as a plain epoll loop does.
 * Its TCP work per request (its send runs the server socket's receive
 * too) stays about a server's, which is why its CPU is reported.
 */
static void *lgen_thread(void *arg)
{
        struct lgen *g = arg;
        struct lconn *c = calloc(g->conns, sizeof(*c));
        struct lring *lr = calloc(1, sizeof(*lr));
        uint64_t end, seed = 0x9E3779B97F4A7C15ull;
        double cpu0, ccpu0;
        bool ring = false;

        if (c == NULL || lr == NULL) {
                g->err = -ENOMEM;
                goto out;
        }
        g->err = pin_client(g->o->cpus);
        if (g->err)
                goto out;
        /* Task work deferred to the client's own io_uring_enter (6.1),
         * where the kernel has it: the client then costs every server the
         * same, less, and no IPI interrupts it per reply. */
        g->err = io_uring_queue_init(RING_ENTRIES, &lr->ring,
                                     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
        if (g->err == -EINVAL)
                g->err = io_uring_queue_init(RING_ENTRIES, &lr->ring, 0);
        if (g->err)
                goto out;
        ring = true;
        for (unsigned i = 0; i < g->conns; i++) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(g->o->port)};
                int one = 1;

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
                if (c[i].fd < 0 || connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa))) {
                        g->err = -errno;
                        goto out;
                }
                setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                if ((g->err = next_request(g, lr, &c[i], i, &seed)) != 0)
                        goto out;
        }
        cpu0 = proc_cpu_s(g->o->server_pid);
        ccpu0 = thread_cpu_s();
        end = pc_now_ns() + g->duration_ns;
        while (pc_now_ns() < end) {
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
        g->server_cpu_s = proc_cpu_s(g->o->server_pid) - cpu0;
        if (cpu0 < 0 || g->server_cpu_s < 0)
                g->server_cpu_s = -1;
        g->client_cpu_s = thread_cpu_s() - ccpu0;
out:
        /* Closing the sockets ends what is still armed; then the ring goes. */
        for (unsigned i = 0; c && i < g->conns; i++)
                if (c[i].fd > 0)
                        close(c[i].fd);
        if (ring)
                io_uring_queue_exit(&lr->ring);
        free(lr);
        free(c);
        return NULL;
}

int lgen_run(const struct lgen_opts *o, struct lgen_result *out)
{
        struct lgen *g = calloc(1, sizeof(*g));
        pthread_t t;
        int rc;

        if (g == NULL)
                return -ENOMEM;
        g->o = o;
        g->conns = o->conns > LGEN_MAX_CONNS ? LGEN_MAX_CONNS : o->conns;
        g->duration_ns = (uint64_t)(o->seconds * 1e9);
        g->p = o->p;
        if (pthread_create(&t, NULL, lgen_thread, g) != 0) {
                free(g);
                return -EAGAIN;
        }
        pthread_join(t, NULL);
        rc = g->err;
        out->done = g->done;
        out->p99_us = hist_quantile(g->hist, g->done, 0.99) / 1e3;
        out->server_cpu_s = g->server_cpu_s;
        out->client_cpu_s = g->client_cpu_s;
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

int lgen_place(unsigned workers, bool apart, struct lgen_place *out)
{
        int cpus[LGEN_MAX_SERVER + 1];
        unsigned n = 0, first = apart ? 1 : 0;
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set))
                return -errno;
        for (int c = 0; c < CPU_SETSIZE && n < LGEN_MAX_SERVER + 1; c++)
                if (CPU_ISSET(c, &set))
                        cpus[n++] = c;
        if (workers == 0 || workers > LGEN_MAX_SERVER || n < workers + first)
                return -ERANGE;
        memset(out, 0, sizeof(*out));
        out->workers = workers;
        out->apart = apart;
        memcpy(out->cpus, cpus + first, workers * sizeof(int));
        cpu_list(out->cpus, workers, out->server_cpus, sizeof(out->server_cpus));
        if (apart)
                cpu_list(cpus, 1, out->client_cpus, sizeof(out->client_cpus));
        else
                memcpy(out->client_cpus, out->server_cpus, sizeof(out->client_cpus));
        return 0;
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
