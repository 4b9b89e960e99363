/* SPDX-License-Identifier: MIT */
/*
 * What test_kconn.c and test_kdrain.c share: a runtime of two workers,
 * results recorded off the test's thread (REC, EXPECT) for the test's
 * thread to check after the run, and plain-socket clients.
 */
#ifndef KCONN_HARNESS_H
#define KCONN_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pc_test.h"
#include "pc_fiber.h"
#include "pc_knet.h"

#define MS 1000000ull
#define LONG_NS (60ull * 1000000000ull) /* no passing run gets near it */

static struct pc_runtime *RT;
static struct pc_tcp_listener *L;

/* Results recorded off the test's thread: slot -> value, and the first
 * mismatch of an expectation. */
static _Atomic long rec[80];
static _Atomic unsigned bad;
static char bad_what[160];

#define REC(i, v) atomic_store(&rec[i], (long)(v))
#define EXPECT(cond) expect_at((cond), #cond, __LINE__)

static inline void expect_at(bool ok, const char *what, int line)
{
        if (!ok && atomic_fetch_add(&bad, 1) == 0)
                snprintf(bad_what, sizeof(bad_what), "line %d: %s", line, what);
}

static inline void no_bad(void)
{
        if (atomic_load(&bad))
                fail_msg("%u expectation(s) failed off the test's thread, first %s",
                         atomic_load(&bad), bad_what);
}

static inline void reset(void)
{
        for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++)
                atomic_store(&rec[i], LONG_MIN);
        atomic_store(&bad, 0);
}

static inline void mk(void)
{
        struct pc_config cfg;

        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        reset();
}

static inline void noop(void *arg)
{
        (void)arg;
}

/* ---- client side ---------------------------------------------------------- */

static inline int cli_connect(const char *addr, uint16_t port, int rcvbuf)
{
        struct sockaddr_storage ss = {0};
        struct timeval tv = {.tv_sec = 30};
        socklen_t sl;
        int fd, fam = strchr(addr, ':') ? AF_INET6 : AF_INET;

        if (fam == AF_INET) {
                struct sockaddr_in *in = (void *)&ss;

                in->sin_family = AF_INET;
                in->sin_port = htons(port);
                inet_pton(AF_INET, addr, &in->sin_addr);
                sl = sizeof(*in);
        } else {
                struct sockaddr_in6 *in6 = (void *)&ss;

                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                inet_pton(AF_INET6, addr, &in6->sin6_addr);
                sl = sizeof(*in6);
        }
        fd = socket(fam, SOCK_STREAM, 0);
        if (fd < 0)
                return -errno;
        if (rcvbuf)
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&ss, sl)) {
                int e = -errno;

                close(fd);
                return e;
        }
        return fd;
}

/* Read one byte: it, or -1 at EOF, or -errno. */
static inline int cli_byte(int fd)
{
        unsigned char b;
        ssize_t n = recv(fd, &b, 1, 0);

        return n == 1 ? b : n == 0 ? -1 : -errno;
}

/* Until the server ends the connection: 0 for EOF, -ECONNRESET. */
static inline int cli_end(int fd)
{
        char b[65536];
        ssize_t n;

        while ((n = recv(fd, b, sizeof(b), 0)) > 0)
                ;
        return n == 0 ? 0 : -errno;
}

/* Connect until refused (a closed listener), 30 s at most. */
static inline bool cli_refused(uint16_t port)
{
        for (int i = 0; i < 3000; i++) {
                int fd = cli_connect("127.0.0.1", port, 0);

                if (fd == -ECONNREFUSED)
                        return true;
                if (fd >= 0)
                        close(fd);
                usleep(10000);
        }
        return false;
}

static inline void *run_client(void *(*fn)(void *))
{
        pthread_t t;
        void *ret;

        assert_int_equal(pthread_create(&t, NULL, fn, NULL), 0);
        assert_int_equal(pc_runtime_run(RT, noop, NULL), 0);
        pthread_join(t, &ret);
        return ret;
}

#endif /* KCONN_HARNESS_H */
