/* SPDX-License-Identifier: MIT */
/*
 * The bench's load generator (perf/lgen.c): where a case puts the client
 * and the server on machines of 2 to 16 CPUs (lgen_layout, pure), and runs
 * of several client threads against an echo server in this process that
 * counts what it echoes: every connection is driven, by one thread, each
 * reply matches its own connection's request, and the requests sent are
 * the replies counted plus one in flight per connection. Nothing asserts
 * on a time or a rate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "echo_srv.h"
#include "lgen.h"
#include "pc_test.h"

static const int seq_cpus[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void layout(unsigned n, unsigned workers, bool apart, const char *client,
                   const char *server, unsigned threads, unsigned conns)
{
        struct lgen_place p;

        assert_int_equal(lgen_layout(seq_cpus, n, workers, apart, &p), 0);
        assert_int_equal(p.workers, workers);
        assert_true(p.apart == apart);
        assert_string_equal(p.client_cpus, client);
        assert_string_equal(p.server_cpus, server);
        assert_int_equal(p.client_threads, threads);
        assert_int_equal(p.conns, conns);
}

static void test_layout_two_cpus(void **state)
{
        struct lgen_place p;

        (void)state;
        /* The development machine's shapes, as they were with one thread. */
        layout(2, 1, true, "0", "1", 1, 64);
        layout(2, 1, false, "0", "0", 1, 64);
        layout(2, 2, false, "0,1", "0,1", 1, 64);
        assert_int_equal(lgen_layout(seq_cpus, 2, 2, true, &p), -ERANGE);
        assert_int_equal(lgen_layout(seq_cpus, 2, 3, false, &p), -ERANGE);
        assert_int_equal(lgen_layout(seq_cpus, 2, 0, false, &p), -ERANGE);
        assert_int_equal(lgen_layout(seq_cpus, 16, LGEN_MAX_SERVER + 1, false, &p), -ERANGE);
}

static void test_layout_many_cpus(void **state)
{
        (void)state;
        /* Apart: the client gets as many CPUs as the server where they are
         * left, a thread pinned to each; past two threads 32 connections
         * a thread. */
        layout(16, 2, true, "0,1", "2,3", 2, 64);
        layout(16, 4, true, "0,1,2,3", "4,5,6,7", 4, 128);
        layout(16, 8, true, "0,1,2,3,4,5,6,7", "8,9,10,11,12,13,14,15", 8, 256);
        layout(16, 10, true, "0,1,2,3,4,5", "6,7,8,9,10,11,12,13,14,15", 6, 192);
        layout(16, 15, true, "0", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", 1, 64);
        /* Shared: a client thread per two server CPUs, on the same CPUs. */
        layout(16, 3, false, "0,1,2", "0,1,2", 2, 64);
        layout(16, 4, false, "0,1,2,3", "0,1,2,3", 2, 64);
        layout(16, 16, false, "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
               "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", 8, 256);
}

static void test_layout_sparse_cpus(void **state)
{
        static const int cpus[] = {1, 3, 5, 7, 9};
        struct lgen_place p;

        (void)state;
        /* The CPUs a process may use, in order, whatever their numbers. */
        assert_int_equal(lgen_layout(cpus, 5, 2, true, &p), 0);
        assert_string_equal(p.client_cpus, "1,3");
        assert_string_equal(p.server_cpus, "5,7");
        assert_int_equal(p.cpus[0], 5);
        assert_int_equal(p.cpus[1], 7);
        assert_int_equal(p.client_threads, 2);
}

static void test_place_note(void **state)
{
        static const int sparse[] = {1, 3, 5, 7, 9};
        struct lgen_place p, q;
        char json[1024] = "", text[1024] = "", small[24] = "", tiny[24] = "";

        (void)state;
        assert_int_equal(lgen_layout(seq_cpus, 16, 8, true, &p), 0);
        assert_int_equal(lgen_layout(sparse, 5, 2, false, &q), 0);
        lgen_place_note(&p, "apart", json, sizeof(json), text, sizeof(text));
        lgen_place_note(&q, "shared", json, sizeof(json), text, sizeof(text));
        /* The shared case names the switch percore runs it with. */
        assert_false(p.overprovisioned);
        assert_true(q.overprovisioned);
        assert_string_equal(json, "\"apart/8\": {\"server_cpus\": \"8,9,10,11,12,13,14,15\", "
                                  "\"client_cpus\": \"0,1,2,3,4,5,6,7\", "
                                  "\"client_threads\": 8, \"conns\": 256, "
                                  "\"client_apart\": true, "
                                  "\"percore_overprovisioned\": false}, "
                                  "\"shared/2\": {\"server_cpus\": "
                                  "\"1,3\", \"client_cpus\": \"1,3\", \"client_threads\": 1, "
                                  "\"conns\": 64, \"client_apart\": false, "
                                  "\"percore_overprovisioned\": true}");
        assert_string_equal(text,
                            "apart, 8 workers: server CPUs 8-15; client 8 threads on "
                            "its own CPUs 0-7, 256 connections\n  shared, 2 workers: "
                            "server CPUs 1,3; client 1 thread on the same, "
                            "64 connections");
        /* Short buffers: cut, terminated, and a later note adds nothing. */
        lgen_place_note(&p, "apart", small, sizeof(small), tiny, sizeof(tiny));
        lgen_place_note(&p, "apart", small, sizeof(small), tiny, sizeof(tiny));
        assert_int_equal(strlen(small), sizeof(small) - 1);
        assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
        assert_memory_equal(tiny, "apart, 8 workers: serve", sizeof(tiny));
}

/* ---- runs against an echo server of the test's own ----------------------- */

#define REQ 48
/* The protocol: connection i's requests are REQ bytes of its own letter,
 * so a reply read by the wrong connection's index shows. Each connection's
 * counters are written by the one thread that drives it. */
struct tproto {
        uint64_t sent[LGEN_MAX_CONNS];
        uint64_t replies[LGEN_MAX_CONNS];
        uint64_t wrong[LGEN_MAX_CONNS];
};

static size_t t_request(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap)
{
        struct tproto *t = ctx;

        (void)seed;
        (void)cap; /* LGEN_BUF, well above REQ */
        t->sent[conn]++;
        memset(buf, 'A' + (int)(conn % 26), REQ);
        return REQ;
}

static bool t_done(void *ctx, unsigned conn, const char *buf, size_t len)
{
        struct tproto *t = ctx;

        if (len < REQ)
                return false;
        t->replies[conn]++;
        for (size_t i = 0; i < len; i++)
                t->wrong[conn] += buf[i] != 'A' + (int)(conn % 26);
        return true;
}

static void run_threads(unsigned conns, unsigned threads, const char *cpus, bool pin_each)
{
        static struct tproto t;
        struct lgen_proto p = {.request = t_request, .reply_done = t_done, .ctx = &t};
        struct lgen_result res;
        struct echo_srv s;
        uint64_t sent = 0, replies = 0;

        memset(&t, 0, sizeof(t));
        echo_srv_start(&s, false);
        struct lgen_opts o = {.port = s.port,
                              .conns = conns,
                              .seconds = 0.2,
                              .p = &p,
                              .cpus = cpus,
                              .threads = threads,
                              .pin_each = pin_each,
                              .server_pid = getpid()};

        assert_int_equal(lgen_run(&o, &res), 0);
        echo_srv_stop(&s);
        assert_int_equal(s.accepted, conns);
        for (unsigned i = 0; i < conns; i++) {
                /* Every connection driven, its replies its own, one request
                 * in flight at the end. */
                assert_true(t.replies[i] >= 1);
                assert_int_equal(t.wrong[i], 0);
                assert_int_equal(t.sent[i], t.replies[i] + 1);
                sent += t.sent[i];
                replies += t.replies[i];
        }
        for (unsigned i = conns; i < LGEN_MAX_CONNS; i++)
                assert_int_equal(t.sent[i], 0);
        /* Every reply is reaped after the clock starts, so each is in done. */
        assert_int_equal(res.done, replies);
        assert_true(s.echoed >= replies * REQ && s.echoed <= sent * REQ);
        assert_true(res.client_cpu_s > 0);
        assert_true(res.p99_us > 0);
}

static void test_run_one_thread(void **state)
{
        (void)state;
        run_threads(5, 1, NULL, false);
}

static void test_run_threads_uneven(void **state)
{
        (void)state;
        /* Seven connections over three threads: 3, 2 and 2. */
        run_threads(7, 3, NULL, false);
}

static void test_run_threads_pinned_each(void **state)
{
        (void)state;
        /* Threads pinned one a CPU, round the list: both on CPU 0. */
        run_threads(4, 2, "0", true);
}

static void test_run_errors(void **state)
{
        static struct tproto t;
        struct lgen_proto p = {.request = t_request, .reply_done = t_done, .ctx = &t};
        struct lgen_result res;
        struct lgen_opts o = {.conns = 4, .seconds = 0.1, .p = &p, .server_pid = getpid()};
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        (void)state;
        o.threads = 5;
        assert_int_equal(lgen_run(&o, &res), -ERANGE);
        o.threads = LGEN_MAX_THREADS + 1;
        o.conns = LGEN_MAX_CONNS;
        assert_int_equal(lgen_run(&o, &res), -ERANGE);
        /* A port nobody listens on (bound, never listening): every thread's
         * connect fails, none waits for the others forever. */
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
        o.port = ntohs(sa.sin_port);
        o.conns = 6;
        o.threads = 3;
        assert_int_equal(lgen_run(&o, &res), -ECONNREFUSED);
        assert_int_equal(res.done, 0);
        o.cpus = "0-";
        assert_int_equal(lgen_run(&o, &res), -EINVAL);
        close(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_layout_two_cpus),
                cmocka_unit_test(test_layout_many_cpus),
                cmocka_unit_test(test_layout_sparse_cpus),
                cmocka_unit_test(test_place_note),
                cmocka_unit_test(test_run_one_thread),
                cmocka_unit_test(test_run_threads_uneven),
                cmocka_unit_test(test_run_threads_pinned_each),
                cmocka_unit_test(test_run_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
