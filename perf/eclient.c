/* SPDX-License-Identifier: MIT */
/* The echo suite's plain epoll client; see eclient.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "eclient.h"

#define EVENTS     64
#define WAIT_MS    100   /* the longest wait between two looks at the clock */
#define DRAIN_MS   10000 /* for the echo of a request in flight at the end */

struct econn {
        int fd;
        size_t got;   /* bytes of the echo in flight read so far */
        uint64_t seq; /* requests sent on it */
        char *req, *buf;
};

/* What the threads share: the run, and its start. */
struct erun {
        const struct eclient_opts *o;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned ready; /* threads connected (or failed), under lock */
        int go;         /* 0: wait; 1: run; -1: a thread failed, stop. Under lock */
        int err;        /* the first thread's error before the start, under lock */
        uint64_t start_ns, end_ns;
};

struct ethread {
        struct erun *run;
        unsigned index;
        uint64_t replies, sent, stop_ns;
        int err;
};

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Connection @c, the @k-th of its thread (its epoll data) and @g-th of
 * the run, connected and on @ep; its requests are its own letter. */
static int conn_open(struct econn *c, const struct eclient_opts *o, int ep, unsigned k,
                     unsigned g)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(o->port)};
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = k};
        int one = 1;

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        memset(c->req, 'a' + (int)(g % 26), o->size);
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                return -errno;
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
            epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
                return -errno;
        return 0;
}

/* Send @c's next request whole: its sequence number first, so an echo of
 * an older one does not pass for it. */
static int send_request(struct econn *c, size_t size)
{
        size_t off = 0;

        c->seq++;
        memcpy(c->req, &c->seq, size < sizeof(c->seq) ? size : sizeof(c->seq));
        c->got = 0;
        while (off < size) {
                ssize_t w = send(c->fd, c->req + off, size - off, MSG_NOSIGNAL);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                off += (size_t)w;
        }
        return 0;
}

/* Read what @c has; 1 once its echo is whole (and is its request), 0
 * before, or a negative errno. */
static int read_echo(struct econn *c, size_t size)
{
        ssize_t r = recv(c->fd, c->buf + c->got, size - c->got, MSG_DONTWAIT);

        if (r == 0)
                return -ECONNRESET;
        if (r < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        c->got += (size_t)r;
        if (c->got < size)
                return 0;
        return memcmp(c->buf, c->req, size) == 0 ? 1 : -EPROTO;
}

/* Report this thread ready (with @rc, its connections' error) and wait
 * for the start: 0 to run, or why not. */
static int wait_go(struct erun *run, int rc)
{
        int go;

        pthread_mutex_lock(&run->lock);
        if (rc && run->err == 0)
                run->err = rc;
        run->ready++;
        pthread_cond_broadcast(&run->cond);
        while ((go = run->go) == 0)
                pthread_cond_wait(&run->cond, &run->lock);
        pthread_mutex_unlock(&run->lock);
        return rc ? rc : go > 0 ? 0 : -ECANCELED;
}

/* The closed loop until the run's end: a whole echo is counted and
 * answered by the next request at once, so every connection has one
 * request in flight whenever the clock is read. */
static int loop(struct ethread *t, struct econn *c, unsigned n, int ep)
{
        const struct eclient_opts *o = t->run->o;
        struct epoll_event evs[EVENTS];
        int rc = 0;

        for (unsigned i = 0; i < n && rc == 0; i++)
                rc = send_request(&c[i], o->size);
        t->sent += n;
        while (rc == 0) {
                int nev = epoll_wait(ep, evs, EVENTS, WAIT_MS);

                if (nev < 0 && errno != EINTR)
                        return -errno;
                for (int e = 0; e < nev && rc == 0; e++) {
                        struct econn *k = &c[evs[e].data.u32];

                        rc = read_echo(k, o->size);
                        if (rc == 1) {
                                t->replies++;
                                t->sent++;
                                rc = send_request(k, o->size);
                        }
                }
                t->stop_ns = now_ns();
                if (t->stop_ns >= t->run->end_ns)
                        break;
        }
        return rc;
}

/* Read the echo of every request still in flight: not counted, but the
 * server echoed each request sent. */
static int drain(struct econn *c, unsigned n, size_t size)
{
        for (unsigned i = 0; i < n; i++) {
                int rc = 0;

                while (rc == 0) {
                        struct pollfd p = {.fd = c[i].fd, .events = POLLIN};
                        int ready = poll(&p, 1, DRAIN_MS);

                        if (ready == 0)
                                return -ETIMEDOUT;
                        if (ready < 0 && errno != EINTR)
                                return -errno;
                        rc = read_echo(&c[i], size);
                }
                if (rc < 0)
                        return rc;
        }
        return 0;
}

static void *thread_main(void *arg)
{
        struct ethread *t = arg;
        const struct eclient_opts *o = t->run->o;
        unsigned n = (o->conns - t->index + o->threads - 1) / o->threads;
        struct econn *c = calloc(n, sizeof(*c));
        char *mem = malloc(2 * (size_t)n * o->size);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        int rc = c && mem ? 0 : -ENOMEM;

        if (rc == 0 && ep < 0)
                rc = -errno;
        for (unsigned i = 0; c && i < n; i++)
                c[i].fd = -1;
        for (unsigned i = 0; rc == 0 && i < n; i++) {
                c[i].req = mem + 2 * (size_t)i * o->size;
                c[i].buf = c[i].req + o->size;
                rc = conn_open(&c[i], o, ep, i, t->index + i * o->threads);
        }
        rc = wait_go(t->run, rc);
        if (rc == 0)
                rc = loop(t, c, n, ep);
        if (rc == 0)
                rc = drain(c, n, o->size);
        for (unsigned i = 0; c && i < n; i++)
                if (c[i].fd >= 0)
                        close(c[i].fd);
        if (ep >= 0)
                close(ep);
        free(mem);
        free(c);
        t->err = rc;
        return NULL;
}

int eclient_run(const struct eclient_opts *o, struct eclient_result *out)
{
        struct ethread th[ECLIENT_MAX_THREADS];
        pthread_t tid[ECLIENT_MAX_THREADS];
        struct eclient_opts run_opts = *o;
        struct erun run = {.o = &run_opts};
        unsigned started = 0;
        uint64_t last = 0;
        int rc = 0;

        memset(out, 0, sizeof(*out));
        if (run_opts.threads == 0)
                run_opts.threads = 1;
        if (o->conns == 0 || o->size == 0 || o->size > ECLIENT_MAX_SIZE ||
            !(o->seconds > 0))
                return -EINVAL;
        if (run_opts.threads > o->conns || run_opts.threads > ECLIENT_MAX_THREADS ||
            o->conns > ECLIENT_MAX_CONNS)
                return -ERANGE;
        pthread_mutex_init(&run.lock, NULL);
        pthread_cond_init(&run.cond, NULL);
        for (unsigned i = 0; i < run_opts.threads && rc == 0; i++) {
                pthread_attr_t attr;
                cpu_set_t set;

                th[i] = (struct ethread){.run = &run, .index = i};
                pthread_attr_init(&attr);
                if (o->cpus && (o->cpus[i] < 0 || o->cpus[i] >= CPU_SETSIZE)) {
                        rc = -EINVAL;
                } else if (o->cpus) {
                        CPU_ZERO(&set);
                        CPU_SET(o->cpus[i], &set);
                        rc = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
                }
                if (rc == 0)
                        rc = -pthread_create(&tid[i], &attr, thread_main, &th[i]);
                pthread_attr_destroy(&attr);
                started += rc == 0;
        }
        /* Every started thread connected (or failed): the clock starts, or
         * they all stop. */
        pthread_mutex_lock(&run.lock);
        while (run.ready < started)
                pthread_cond_wait(&run.cond, &run.lock);
        if (rc == 0)
                rc = run.err;
        run.start_ns = now_ns();
        run.end_ns = run.start_ns + (uint64_t)(o->seconds * 1e9);
        run.go = rc ? -1 : 1;
        pthread_cond_broadcast(&run.cond);
        pthread_mutex_unlock(&run.lock);
        for (unsigned i = 0; i < started; i++) {
                pthread_join(tid[i], NULL);
                if (rc == 0)
                        rc = th[i].err;
                out->replies += th[i].replies;
                out->sent += th[i].sent;
                last = th[i].stop_ns > last ? th[i].stop_ns : last;
        }
        pthread_cond_destroy(&run.cond);
        pthread_mutex_destroy(&run.lock);
        if (last > run.start_ns)
                out->seconds = (double)(last - run.start_ns) / 1e9;
        return rc;
}
