/* SPDX-License-Identifier: MIT */
/*
 * An echo server in the test's own process, for the bench's clients
 * (test_eclient.c, test_lgen.c): one thread that echoes what each
 * connection sends and counts it, so a test checks a client's counts
 * against what really crossed the wire. Start and stop from the test
 * thread; the counts are the test's to read once stopped.
 */
#ifndef PC_TEST_ECHO_SRV_H
#define PC_TEST_ECHO_SRV_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pc_test.h"

/* Connections the server takes at most. */
#define ECHO_SRV_MAX_CONNS 16

struct echo_srv {
        int lfd;
        uint16_t port;
        _Atomic bool stop;
        bool corrupt; /* flip a byte of every echo */
        unsigned accepted;
        uint64_t echoed; /* bytes, counted before they are sent back */
        pthread_t t;
};

/* One thread, poll() over the listener and every connection: what a
 * connection sends comes back as it was (or, corrupt, with its first byte
 * changed). */
static void *echo_srv_main(void *arg)
{
        struct echo_srv *s = arg;
        struct pollfd pf[ECHO_SRV_MAX_CONNS + 1] = {{.fd = s->lfd, .events = POLLIN}};
        unsigned n = 1;
        char buf[4096];

        while (!atomic_load(&s->stop)) {
                if (poll(pf, n, 10) <= 0)
                        continue;
                if ((pf[0].revents & POLLIN) && n < ECHO_SRV_MAX_CONNS + 1) {
                        int fd = accept(s->lfd, NULL, NULL);

                        if (fd >= 0) {
                                pf[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                                s->accepted++;
                        }
                }
                for (unsigned i = 1; i < n; i++) {
                        ssize_t r;

                        if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        r = recv(pf[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
                        if (r <= 0) {
                                if (r < 0 && errno == EAGAIN)
                                        continue;
                                close(pf[i].fd);
                                pf[i--] = pf[--n];
                                continue;
                        }
                        s->echoed += (uint64_t)r;
                        if (s->corrupt)
                                buf[0] ^= 1;
                        for (ssize_t off = 0; off < r;) {
                                ssize_t w = send(pf[i].fd, buf + off, (size_t)(r - off),
                                                 MSG_NOSIGNAL);

                                if (w <= 0)
                                        break;
                                off += w;
                        }
                }
        }
        for (unsigned i = 1; i < n; i++)
                close(pf[i].fd);
        return NULL;
}

static void echo_srv_start(struct echo_srv *s, bool corrupt)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof(sa);

        memset(s, 0, sizeof(*s));
        s->corrupt = corrupt;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s->lfd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(s->lfd >= 0);
        assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(s->lfd, 64), 0);
        assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
        s->port = ntohs(sa.sin_port);
        assert_int_equal(pthread_create(&s->t, NULL, echo_srv_main, s), 0);
}

/* Stopped and joined: its counts are final and the test's to read. */
static void echo_srv_stop(struct echo_srv *s)
{
        atomic_store(&s->stop, true);
        pthread_join(s->t, NULL);
        close(s->lfd);
}

#endif
