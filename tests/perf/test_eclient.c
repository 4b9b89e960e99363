/* SPDX-License-Identifier: MIT */
/*
 * The echo suite's plain epoll client (perf/eclient.c) against an echo
 * server in this process that counts what it echoes: every connection is
 * made, the server echoed exactly the requests the client sent, those are
 * the replies counted plus one in flight per connection at the end, and an
 * echo that is not the request is an error. Nothing asserts on a time or
 * a rate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eclient.h"
#include "pc_test.h"

#define MAX_CONNS 16

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
        struct pollfd pf[MAX_CONNS + 1] = {{.fd = s->lfd, .events = POLLIN}};
        unsigned n = 1;
        char buf[4096];

        while (!atomic_load(&s->stop)) {
                if (poll(pf, n, 10) <= 0)
                        continue;
                if ((pf[0].revents & POLLIN) && n < MAX_CONNS + 1) {
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

/* The first CPU this process may use. */
static int first_cpu(void)
{
        cpu_set_t set;

        assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                        return c;
        fail();
        return -1;
}

static void run(unsigned conns, unsigned threads, size_t size, const int *cpus)
{
        struct eclient_opts o = {.conns = conns,
                                 .size = size,
                                 .seconds = 0.1,
                                 .cpus = cpus,
                                 .threads = threads};
        struct eclient_result res;
        struct echo_srv s;

        echo_srv_start(&s, false);
        o.port = s.port;
        assert_int_equal(eclient_run(&o, &res), 0);
        echo_srv_stop(&s);
        assert_int_equal(s.accepted, conns);
        /* Every request sent was echoed whole, and read back: the replies
         * counted in time and one a connection in flight at the end. */
        assert_true(res.replies >= 1);
        assert_int_equal(res.sent, res.replies + conns);
        assert_int_equal(s.echoed, res.sent * size);
        assert_true(res.seconds > 0);
}

static void test_one_thread(void **state)
{
        (void)state;
        run(5, 1, 64, NULL);
}

static void test_threads_uneven(void **state)
{
        (void)state;
        /* Seven connections over three threads (3, 2 and 2), requests
         * larger than one of the server's reads. */
        run(7, 3, 5000, NULL);
}

static void test_threads_pinned(void **state)
{
        int cpus[2];

        (void)state;
        cpus[0] = cpus[1] = first_cpu();
        run(4, 2, 1, cpus);
}

static void test_wrong_echo(void **state)
{
        struct eclient_opts o = {.conns = 3, .size = 64, .seconds = 0.1, .threads = 1};
        struct eclient_result res;
        struct echo_srv s;

        (void)state;
        echo_srv_start(&s, true);
        o.port = s.port;
        assert_int_equal(eclient_run(&o, &res), -EPROTO);
        echo_srv_stop(&s);
        assert_int_equal(res.replies, 0);
}

static void test_errors(void **state)
{
        struct eclient_opts o = {.conns = 4, .size = 64, .seconds = 0.1, .threads = 1};
        struct eclient_result res;
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM, 0), bad = CPU_SETSIZE - 1;

        (void)state;
        o.threads = 5;
        assert_int_equal(eclient_run(&o, &res), -ERANGE);
        o.threads = 1;
        o.size = 0;
        assert_int_equal(eclient_run(&o, &res), -EINVAL);
        o.size = ECLIENT_MAX_SIZE + 1;
        assert_int_equal(eclient_run(&o, &res), -EINVAL);
        o.size = 64;
        o.seconds = 0;
        assert_int_equal(eclient_run(&o, &res), -EINVAL);
        o.seconds = 0.1;
        /* A port nobody listens on (bound, never listening): every
         * thread's connect fails, none waits for the others forever. */
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
        o.port = ntohs(sa.sin_port);
        o.threads = 3;
        o.conns = 6;
        assert_int_equal(eclient_run(&o, &res), -ECONNREFUSED);
        assert_int_equal(res.replies, 0);
        /* A CPU the process may not use. */
        o.threads = 1;
        o.cpus = &bad;
        assert_true(eclient_run(&o, &res) < 0);
        close(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_thread),
                cmocka_unit_test(test_threads_uneven),
                cmocka_unit_test(test_threads_pinned),
                cmocka_unit_test(test_wrong_echo),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
