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
#include "echo_srv.h"
#include "pc_test.h"

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
