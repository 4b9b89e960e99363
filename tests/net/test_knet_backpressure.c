/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's output cap on loopback: a client that stops reading,
 * a producer that resumes from on_writable, and a reply written in pieces
 * that leaves as one send.
 * The server, the clients' helpers and CHECK() are knet_harness.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "knet_harness.h"

/* ---- a client that stops reading ------------------------------------------- */

#define SLOW_CAP (256u << 10)

struct slow {
        struct srv *s;
        struct pc_knet_stats at_stall;
        size_t sent, rcvd;
        unsigned bad;
};

static bool backpressured(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        /* A fiber's handler stops reading while its write waits, which
         * pauses reading too (read_paused). A pause while the handler has
         * merely not run yet is not the stall: output must have filled. */
        return (st->backpressure >= 1 || st->read_paused >= 1) && st->out_max > SLOW_CAP / 2;
}

/* Send up to 32 MB without reading. The server echoes until its output
 * for us reaches the cap, then stops reading; our sends stall once the
 * socket buffers fill. Then read everything back: reading resumes. */
static void *slow_client(void *arg)
{
        struct slow *sl = arg;
        const size_t total = 32u << 20;
        int fd = tcp_client(sl->s->port, true);
        static uint8_t buf[65536];

        if (fd < 0)
                return NULL;
        /* The peer never read: we stalled long before 32 MB. */
        CHECK(send_until_stopped(sl->s->rt, fd, 7, &sl->sent, total, backpressured));
        CHECK(sl->sent < total);
        sl->at_stall = client_stats(sl->s->rt);
        /* Now drain: every byte comes back in order. */
        shutdown(fd, SHUT_WR);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t r;

                if (poll(&p, 1, 20000) <= 0)
                        break;
                r = recv(fd, buf, sizeof(buf), 0);
                if (r <= 0)
                        break;
                for (ssize_t j = 0; j < r; j++)
                        if (buf[j] != pattern(7, sl->rcvd + (size_t)j))
                                sl->bad++;
                sl->rcvd += (size_t)r;
        }
        close(fd);
        return NULL;
}

static void test_slow_reader(void **state)
{
        struct pc_knet_opts o = {.out_cap = SLOW_CAP, .rbuf = 16u << 10, .recv_bufs = 16,
                                 .flags = recv_flags(state)};
        struct srv s;
        struct slow sl = {.s = &s};
        struct pc_knet_stats st;
        size_t held_max;

        bool fibers = o.flags & T_FIBERS;

        srv_create(&s, 1, &o);
        srv_run(&s, slow_client, &sl);
        assert_true(sl.at_stall.backpressure + sl.at_stall.read_paused >= 1);
        /* What the server held for us never exceeded the cap... */
        assert_true(sl.at_stall.out_max <= SLOW_CAP);
        assert_true(sl.at_stall.out_max > SLOW_CAP / 2);
        /* ...and it stopped reading: it took the cap plus what one pass of
         * receives can bring (one buffer single-shot; with multishot, at
         * most the worker's provided buffers before the pause cancels the
         * recv), not the gigabytes a client could send. */
        st = stats(s.rt);
        held_max = st.recv_multishot ? (size_t)o.recv_bufs * o.rbuf : 0;
        if (fibers) /* input the handler did not read yet, and its buffer */
                held_max += 4 * (size_t)o.rbuf + 6000;
        assert_true(sl.at_stall.bytes_in - sl.at_stall.bytes_out <= SLOW_CAP + held_max);
        check_recv_mode(&st, o.flags);
        assert_int_equal(sl.rcvd, sl.sent);
        assert_int_equal(sl.bad, 0);
        st = stats(s.rt);
        assert_true(st.out_max <= SLOW_CAP);
        if (fibers) /* a write that waited for room was woken by on_writable */
                assert_int_equal(st.writable, st.send_refused);
        else
                assert_int_equal(st.send_refused, 0);
        assert_int_equal(atomic_load(&send_errors), 0);
        pc_runtime_destroy(s.rt);
}

/* ---- a producer that resumes from on_writable ---------------------------------- */

#define PROD_CAP (256u << 10)
#define PROD_TOTAL (8u << 20)

/* One connection's producer, on the server's single worker. */
static struct {
        size_t sent;
        unsigned refused, writable, emsgsize;
        int err;
} prod;

/* Send the stream in pieces of varying size until the backend refuses one
 * (then on_writable calls again) or all of it is queued (then close). */
static void prod_pump(struct pc_conn *c)
{
        static uint8_t chunk[65536];

        while (prod.sent < PROD_TOTAL) {
                size_t n = 1 + (prod.sent * 31u) % sizeof(chunk);
                int rc;

                if (n > PROD_TOTAL - prod.sent)
                        n = PROD_TOTAL - prod.sent;
                for (size_t j = 0; j < n; j++)
                        chunk[j] = pattern(9, prod.sent + j);
                rc = pc_conn_send(c, chunk, n);
                if (rc == -ENOBUFS) {
                        prod.refused++;
                        return;
                }
                if (rc) {
                        prod.err = rc;
                        return;
                }
                prod.sent += n;
        }
        pc_conn_close(c);
}

static void prod_accept(struct pc_conn *c, void *arg)
{
        (void)arg;
        /* One write larger than the cap can never be taken. */
        if (pc_conn_send(c, NULL, 0) == 0 && pc_conn_send(c, (const void *)&prod, PROD_CAP + 1) ==
                                                     -EMSGSIZE)
                prod.emsgsize++;
        prod_pump(c);
}

static void prod_writable(struct pc_conn *c, void *arg)
{
        (void)arg;
        prod.writable++;
        CHECK(pc_conn_buffered(c) <= PROD_CAP / 2);
        prod_pump(c);
}

static const struct pc_tcp_callbacks prod_cb = {
        .on_accept = prod_accept,
        .on_writable = prod_writable,
};

struct prodc {
        struct srv *s;
        size_t rcvd;
        unsigned bad;
        bool eof;
};

static bool refused_once(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->send_refused >= 1;
}

/* Connect and read nothing until the server's output is full, then read
 * the whole stream: every byte once, in order, then EOF. */
static void *prod_client(void *arg)
{
        struct prodc *pc = arg;
        int fd = tcp_client(pc->s->port, false);
        static uint8_t buf[65536];

        if (fd < 0)
                return NULL;
        CHECK(wait_for(pc->s->rt, refused_once, NULL));
        usleep(50000);
        for (;;) {
                ssize_t r = recv(fd, buf, sizeof(buf), 0);

                if (r <= 0) {
                        pc->eof = r == 0;
                        break;
                }
                for (ssize_t j = 0; j < r; j++)
                        if (buf[j] != pattern(9, pc->rcvd + (size_t)j))
                                pc->bad++;
                pc->rcvd += (size_t)r;
                /* Read slowly at first, so the producer stalls again. */
                if (pc->rcvd < PROD_TOTAL / 4)
                        usleep(1000);
        }
        close(fd);
        return NULL;
}

static void test_writable(void **state)
{
        struct pc_knet_opts o = {.out_cap = PROD_CAP, .flags = recv_flags(state)};
        struct pc_tcp_listener *l;
        struct pc_config cfg;
        struct pc_knet_stats st;
        struct srv s;
        struct prodc pc = {.s = &s};

        memset(&prod, 0, sizeof(prod));
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &s.rt), 0);
        assert_int_equal(pc_knet_configure(s.rt, &o), 0);
        assert_int_equal(pc_tcp_listen_kernel(s.rt, "127.0.0.1", 0, &prod_cb, NULL, &l), 0);
        s.port = pc_tcp_listener_port(l);
        srv_run(&s, prod_client, &pc);
        assert_int_equal(prod.err, 0);
        assert_int_equal(prod.emsgsize, 1);
        assert_int_equal(prod.sent, PROD_TOTAL);
        assert_true(pc.eof);
        assert_int_equal(pc.rcvd, PROD_TOTAL);
        assert_int_equal(pc.bad, 0);
        /* Every refusal was answered by exactly one on_writable. */
        assert_true(prod.refused >= 2);
        assert_int_equal(prod.writable, prod.refused);
        st = stats(s.rt);
        assert_int_equal(st.writable, prod.writable);
        assert_int_equal(st.send_refused, prod.refused);
        assert_true(st.out_max <= PROD_CAP);
        assert_int_equal(st.bytes_out, PROD_TOTAL);
        pc_runtime_destroy(s.rt);
}

/* ---- one send per pass ---------------------------------------------------------- */

/* Each request byte is answered in three pc_conn_send() calls, the way a
 * protocol writes a header, a value and a trailer: they leave as one send,
 * not as a first piece at once and the rest once it completes. */
#define PIECES_REQS 300
static const char pieces_reply[] = "a" "bb" "ccc";

static _Atomic uint64_t pieces_calls;

static void pieces_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)data;
        (void)arg;
        if (len == 0)
                return;
        atomic_fetch_add(&pieces_calls, 1);
        for (size_t i = 0; i < len; i++)
                if (pc_conn_send(c, "a", 1) || pc_conn_send(c, "bb", 2) ||
                    pc_conn_send(c, "ccc", 3))
                        atomic_fetch_add(&send_errors, 1);
}

static const struct pc_tcp_callbacks pieces_cb = {.on_data = pieces_data};

struct pieces {
        uint16_t port;
        unsigned bad, done;
};

static void *pieces_client_run(void *arg)
{
        struct pieces *p = arg;
        int fd = tcp_client(p->port, false), one = 1;
        char got[sizeof(pieces_reply)];

        if (fd < 0)
                return NULL;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        for (unsigned i = 0; i < PIECES_REQS; i++) {
                size_t have = 0;

                if (!CHECK(send(fd, "q", 1, MSG_NOSIGNAL) == 1))
                        break;
                while (have < sizeof(pieces_reply) - 1) {
                        ssize_t r = recv(fd, got + have, sizeof(pieces_reply) - 1 - have, 0);
                        if (!CHECK(r > 0))
                                goto out;
                        have += (size_t)r;
                }
                if (memcmp(got, pieces_reply, sizeof(pieces_reply) - 1))
                        p->bad++;
                p->done++;
        }
out:
        close(fd);
        return NULL;
}

static void test_send_pieces(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state)};
        struct pc_tcp_listener *l;
        struct pc_knet_stats st;
        struct pc_config cfg;
        struct pieces p = {0};
        struct srv s;

        reset_counts();
        pieces_calls = 0;
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &s.rt), 0);
        assert_int_equal(pc_knet_configure(s.rt, &o), 0);
        assert_int_equal(pc_tcp_listen_kernel(s.rt, "127.0.0.1", 0, &pieces_cb, NULL, &l), 0);
        s.port = p.port = pc_tcp_listener_port(l);
        srv_run(&s, pieces_client_run, &p);
        assert_int_equal(p.done, PIECES_REQS);
        assert_int_equal(p.bad, 0);
        assert_int_equal(send_errors, 0);
        st = stats(s.rt);
        assert_int_equal(st.bytes_out, (uint64_t)PIECES_REQS * (sizeof(pieces_reply) - 1));
        /* One send per handler call: a 6-byte send on loopback is never
         * short, so any more would be a piece sent on its own. */
        assert_int_equal(st.sends, pieces_calls);
        pc_runtime_destroy(s.rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_slow_reader),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&fibers_single),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&single_recv),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&no_defer),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&efd_sleep),
                cmocka_unit_test(test_writable),
                cmocka_unit_test(test_send_pieces),
                cmocka_unit_test_prestate(test_send_pieces, (void *)&single_recv),
                cmocka_unit_test_prestate(test_writable, (void *)&single_recv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
