/* SPDX-License-Identifier: MIT */
/* The bench's TCP load generator; see lgen.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lgen.h"
#include "percore.h"

struct lconn {
        int fd;
        size_t got;
        uint64_t sent_ns; /* when the request in flight was sent */
        char buf[LGEN_BUF];
};

/* Latencies in a log-linear histogram: 32 linear steps per power of two of
 * nanoseconds, so a bucket is within 1/32 of its values. */
#define HIST_SUB 32
#define HIST_BUCKETS (64 * HIST_SUB)

static unsigned hist_bucket(uint64_t ns)
{
        unsigned msb;

        if (ns < HIST_SUB)
                return (unsigned)ns;
        msb = 63u - (unsigned)__builtin_clzll(ns);
        /* The HIST_SUB values below the top bit pick the step. */
        return (msb - 4) * HIST_SUB + (unsigned)((ns >> (msb - 5)) & (HIST_SUB - 1));
}

/* The smallest value bucket @b holds. */
static uint64_t hist_value(unsigned b)
{
        unsigned msb;

        if (b < HIST_SUB)
                return b;
        msb = b / HIST_SUB + 4;
        return (1ull << msb) | ((uint64_t)(b % HIST_SUB) << (msb - 5));
}

static double hist_quantile(const uint64_t *h, uint64_t n, double q)
{
        uint64_t want = (uint64_t)((double)n * q), seen = 0;

        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                seen += h[b];
                if (seen > want)
                        return (double)hist_value(b);
        }
        return 0;
}

struct lgen {
        uint16_t port;
        unsigned conns;
        uint64_t duration_ns;
        const struct lgen_proto *p;
        uint64_t done;
        uint64_t hist[HIST_BUCKETS];
        int err;
};

static int send_next(struct lgen *g, unsigned i, struct lconn *c, uint64_t *seed)
{
        char req[LGEN_BUF];
        size_t n = g->p->request(g->p->ctx, i, seed, req, sizeof(req));

        c->got = 0;
        c->sent_ns = pc_now_ns();
        return send(c->fd, req, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -EIO;
}

static void *lgen_thread(void *arg)
{
        struct lgen *g = arg;
        struct lconn *c = calloc(g->conns, sizeof(*c));
        int ep = epoll_create1(0);
        uint64_t end, done = 0, seed = 0x9E3779B97F4A7C15ull;

        if (c == NULL || ep < 0) {
                g->err = -ENOMEM;
                goto out;
        }
        for (unsigned i = 0; i < g->conns; i++) {
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
                if ((g->err = send_next(g, i, &c[i], &seed)) != 0)
                        goto out;
        }
        end = pc_now_ns() + g->duration_ns;
        while (pc_now_ns() < end) {
                struct epoll_event evs[64];
                int k = epoll_wait(ep, evs, 64, 100);

                for (int e = 0; e < k; e++) {
                        unsigned i = evs[e].data.u32;
                        struct lconn *x = &c[i];
                        ssize_t r = recv(x->fd, x->buf + x->got, sizeof(x->buf) - x->got,
                                         MSG_DONTWAIT);

                        if (r <= 0) {
                                if (r < 0 && errno == EAGAIN)
                                        continue;
                                g->err = -EPIPE;
                                goto out;
                        }
                        x->got += (size_t)r;
                        if (!g->p->reply_done(g->p->ctx, i, x->buf, x->got)) {
                                if (x->got == sizeof(x->buf)) {
                                        g->err = -EPROTO;
                                        goto out;
                                }
                                continue;
                        }
                        done++;
                        g->hist[hist_bucket(pc_now_ns() - x->sent_ns)]++;
                        if ((g->err = send_next(g, i, x, &seed)) != 0)
                                goto out;
                }
        }
out:
        g->done = done;
        for (unsigned i = 0; c && i < g->conns; i++)
                if (c[i].fd > 0)
                        close(c[i].fd);
        free(c);
        if (ep >= 0)
                close(ep);
        return NULL;
}

double lgen_run(uint16_t port, unsigned conns, double seconds, const struct lgen_proto *p,
                double *p99_us)
{
        struct lgen *g = calloc(1, sizeof(*g));
        pthread_t t;
        double rc;

        if (g == NULL)
                return -ENOMEM;
        g->port = port;
        g->conns = conns > LGEN_MAX_CONNS ? LGEN_MAX_CONNS : conns;
        g->duration_ns = (uint64_t)(seconds * 1e9);
        g->p = p;
        if (pthread_create(&t, NULL, lgen_thread, g) != 0) {
                free(g);
                return -EAGAIN;
        }
        pthread_join(t, NULL);
        rc = g->err ? g->err : (double)g->done;
        if (p99_us)
                *p99_us = hist_quantile(g->hist, g->done, 0.99) / 1e3;
        free(g);
        return rc;
}
