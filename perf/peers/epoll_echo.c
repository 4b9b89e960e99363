/* SPDX-License-Identifier: MIT */
/*
 * An epoll echo server as one is written for speed: a thread per worker,
 * pinned to the worker's CPU like percore's, each with its own
 * SO_REUSEPORT listener and level-triggered epoll set, non-blocking
 * sockets. A readable connection costs one recv and one send: level
 * triggering reports it again if it holds more, so there is no second recv
 * to see EAGAIN, and its interest changes only in the rare case that a send
 * is short (then it waits for EPOLLOUT, not reading meanwhile, and goes
 * back to EPOLLIN once the rest is out).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "epoll_echo.h"

#define MAX_THREADS 128
#define BUF 16384

struct econn {
        struct econn *prev, *next; /* the thread's open connections */
        int fd;
        size_t off, len; /* unsent bytes of buf */
        char buf[BUF];
};

struct ethread {
        struct epoll_echo *e;
        pthread_t t;
        int lfd, ep;
        struct econn *conns;
};

struct epoll_echo {
        unsigned n;
        int stopfd;
        struct ethread th[MAX_THREADS];
};

static void drop(struct ethread *t, struct econn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                t->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        free(c);
}

static void want(struct ethread *t, struct econn *c, uint32_t events)
{
        struct epoll_event ev = {.events = events, .data.ptr = c};

        epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Send what is left of buf; false on an error. */
static bool flush(struct ethread *t, struct econn *c, bool waiting)
{
        while (c->len) {
                ssize_t w = send(c->fd, c->buf + c->off, c->len, MSG_NOSIGNAL);

                if (w < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                return false;
                        if (errno == EAGAIN) {
                                if (!waiting)
                                        want(t, c, EPOLLOUT);
                                return true;
                        }
                        continue;
                }
                c->off += (size_t)w;
                c->len -= (size_t)w;
        }
        if (waiting)
                want(t, c, EPOLLIN);
        return true;
}

/* Returns false when the connection is gone. */
static bool serve(struct ethread *t, struct econn *c, uint32_t events)
{
        ssize_t r;

        if (c->len) { /* a short send: the rest waits for EPOLLOUT */
                if (!(events & EPOLLOUT))
                        return !(events & (EPOLLERR | EPOLLHUP));
                return flush(t, c, true);
        }
        r = recv(c->fd, c->buf, BUF, 0);
        if (r <= 0)
                return r < 0 && (errno == EAGAIN || errno == EINTR);
        c->off = 0;
        c->len = (size_t)r;
        return flush(t, c, false);
}

static void *run(void *arg)
{
        struct ethread *t = arg;
        struct epoll_event evs[64];

        for (;;) {
                int n = epoll_wait(t->ep, evs, 64, -1);
                for (int i = 0; i < n; i++) {
                        void *p = evs[i].data.ptr;
                        if (p == &t->e->stopfd)
                                return NULL;
                        if (p == t) {
                                int fd;
                                while ((fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                                        int one = 1;
                                        struct econn *c = calloc(1, sizeof(*c));
                                        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                                        if (c == NULL) {
                                                close(fd);
                                                continue;
                                        }
                                        c->fd = fd;
                                        c->next = t->conns;
                                        if (t->conns)
                                                t->conns->prev = c;
                                        t->conns = c;
                                        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                                        epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev);
                                }
                                continue;
                        }
                        if (!serve(t, p, evs[i].events))
                                drop(t, p);
                }
        }
}

int epoll_echo_start(unsigned nthreads, const int *cpus, uint16_t *port, struct epoll_echo **out)
{
        struct epoll_echo *e;
        uint16_t bound = 0;
        int rc = 0;

        if (nthreads == 0 || nthreads > MAX_THREADS)
                return -EINVAL;
        e = calloc(1, sizeof(*e));
        if (e == NULL)
                return -ENOMEM;
        e->stopfd = eventfd(0, EFD_NONBLOCK);
        for (unsigned i = 0; i < nthreads && rc == 0; i++) {
                struct ethread *t = &e->th[i];
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(bound)};
                socklen_t sl = sizeof(sa);
                struct epoll_event lev = {.events = EPOLLIN, .data.ptr = t};
                struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &e->stopfd};
                pthread_attr_t attr;
                int one = 1;

                t->e = e;
                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                t->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
                t->ep = epoll_create1(0);
                if (t->lfd < 0 || t->ep < 0 ||
                    setsockopt(t->lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
                    bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(t->lfd, 4096) ||
                    getsockname(t->lfd, (struct sockaddr *)&sa, &sl) ||
                    epoll_ctl(t->ep, EPOLL_CTL_ADD, t->lfd, &lev) ||
                    epoll_ctl(t->ep, EPOLL_CTL_ADD, e->stopfd, &sev)) {
                        rc = -errno;
                        break;
                }
                bound = ntohs(sa.sin_port);
                pthread_attr_init(&attr);
                if (cpus) {
                        cpu_set_t set;

                        CPU_ZERO(&set);
                        CPU_SET(cpus[i], &set);
                        pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
                }
                if (pthread_create(&t->t, &attr, run, t)) {
                        pthread_attr_destroy(&attr);
                        rc = -EAGAIN;
                        break;
                }
                pthread_attr_destroy(&attr);
                e->n = i + 1;
        }
        *port = bound;
        *out = e;
        if (rc) {
                epoll_echo_stop(e);
                *out = NULL;
        }
        return rc;
}

void epoll_echo_stop(struct epoll_echo *e)
{
        uint64_t one = 1;

        if (write(e->stopfd, &one, sizeof(one)) < 0)
                return;
        for (unsigned i = 0; i < e->n; i++)
                pthread_join(e->th[i].t, NULL);
        for (unsigned i = 0; i < e->n; i++)
                while (e->th[i].conns)
                        drop(&e->th[i], e->th[i].conns);
        for (unsigned i = 0; i < MAX_THREADS; i++) {
                if (e->th[i].lfd > 0)
                        close(e->th[i].lfd);
                if (e->th[i].ep > 0)
                        close(e->th[i].ep);
        }
        close(e->stopfd);
        free(e);
}
