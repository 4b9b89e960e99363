/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's TCP on loopback: many clients echoed in every receive
 * mode, connections balanced over the workers, resets, the connection limit,
 * a client on a worker, and the calls' errors.
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

/* ---- many clients ----------------------------------------------------------- */

struct mc {
        int fd;
        size_t len, sent, rcvd;
        bool eof;
};

struct many {
        uint16_t port;
        unsigned n;
        struct mc *c;
        unsigned done, bad;
};

/* Every connection sends its own pattern in writes of varying size, reads
 * the echo back and checks every byte, then shuts its write side and
 * expects the server to close after the last byte (half-close). */
static void *many_client(void *arg)
{
        struct many *m = arg;
        int ep = epoll_create1(0);
        static uint8_t buf[65536];
        unsigned seed = 1, opened = 0;

        if (!CHECK(ep >= 0))
                return NULL;
        for (unsigned k = 0; k < m->n; k++) {
                struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = k};
                m->c[k].fd = tcp_client(m->port, true);
                if (m->c[k].fd < 0)
                        goto out;
                opened++;
                /* Every 100th is large (1.5 MB), the rest 1..4 KB. */
                m->c[k].len = k % 100 == 0 ? (3u << 19) : 1 + (k * 977u) % 4096;
                if (!CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, m->c[k].fd, &ev) == 0))
                        goto out;
        }
        while (m->done < m->n) {
                struct epoll_event evs[256];
                int n = epoll_wait(ep, evs, 256, 20000);

                if (!CHECK(n > 0))
                        goto out;
                for (int i = 0; i < n; i++) {
                        unsigned k = evs[i].data.u32;
                        struct mc *c = &m->c[k];

                        if ((evs[i].events & EPOLLOUT) && c->sent < c->len) {
                                size_t want = 1 + rand_r(&seed) % 20000, j;
                                ssize_t w;

                                if (want > c->len - c->sent)
                                        want = c->len - c->sent;
                                for (j = 0; j < want; j++)
                                        buf[j] = pattern(k, c->sent + j);
                                w = send(c->fd, buf, want, MSG_NOSIGNAL);
                                if (w > 0)
                                        c->sent += (size_t)w;
                                if (c->sent == c->len) {
                                        struct epoll_event ev = {.events = EPOLLIN,
                                                                 .data.u32 = k};
                                        shutdown(c->fd, SHUT_WR);
                                        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                                }
                        }
                        if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                                ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
                                if (r > 0) {
                                        for (ssize_t j = 0; j < r; j++)
                                                if (buf[j] != pattern(k, c->rcvd + (size_t)j))
                                                        m->bad++;
                                        c->rcvd += (size_t)r;
                                        if (c->rcvd > c->len)
                                                m->bad++;
                                } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                                        if (r < 0 || c->rcvd != c->len)
                                                m->bad++;
                                        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                                        close(c->fd);
                                        c->eof = true;
                                        m->done++;
                                }
                        }
                }
        }
out:
        for (unsigned k = 0; k < opened; k++)
                if (!m->c[k].eof)
                        close(m->c[k].fd);
        close(ep);
        return NULL;
}

static void test_many_clients(void **state)
{
        /* Few provided buffers, so thousands of connections run the ring
         * dry and multishot recvs end with ENOBUFS and are armed again. */
        struct pc_knet_opts o = {.recv_bufs = 64, .flags = recv_flags(state)};
        struct srv s;
        struct many m = {0};
        struct pc_knet_stats st;

        raise_nofile();
        srv_create(&s, 3, &o);
        m.port = s.port;
        m.n = (unsigned)pc_test_scaled(2500);
        if (m.n < 200)
                m.n = 200;
        m.c = calloc(m.n, sizeof(*m.c));
        assert_non_null(m.c);
        srv_run(&s, many_client, &m);
        assert_int_equal(m.done, m.n);
        assert_int_equal(m.bad, 0);
        for (unsigned k = 0; k < m.n; k++)
                assert_int_equal(m.c[k].rcvd, m.c[k].len);
        st = stats(s.rt);
        assert_int_equal(st.accepted, m.n);
        assert_int_equal(st.refused, 0);
        assert_int_equal(st.resets, 0);
        assert_int_equal(st.bytes_in, st.bytes_out);
        assert_int_equal(atomic_load(&wrong_worker), 0);
        assert_int_equal(atomic_load(&send_errors), 0);
        assert_int_equal(atomic_load(&opens), m.n);
        /* A client sees EOF only after the server closed its side, which
         * happens in the same callback that counts the close. */
        assert_int_equal(st.closed, m.n);
        assert_int_equal(st.conns, 0);
        assert_int_equal(atomic_load(&closes_clean), m.n);
        assert_int_equal(atomic_load(&closes_err), 0);
        assert_int_equal(atomic_load(&fib_misuse), 0);
        check_recv_mode(&st, o.flags);
        /* The kernel spread the connections over the workers' listeners. */
        unsigned busy = 0;
        for (int w = 0; w < 3; w++) {
                struct pc_knet_stats ws;
                assert_int_equal(pc_knet_stats(s.rt, w, &ws), 0);
                busy += ws.accepted > 0;
        }
        assert_true(busy >= 2);
        free(m.c);
        pc_runtime_destroy(s.rt);
}

/* ---- connections balanced over the workers ------------------------------- */

#define BAL_WORKERS 4
#define BAL_CONNS 200

struct bal {
        uint16_t port;
        struct pc_runtime *rt;
        struct pc_knet_stats held[BAL_WORKERS]; /* with every connection open */
};

static bool all_open(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->conns == BAL_CONNS;
}

static bool none_open(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->conns == 0 && st->closed == BAL_CONNS;
}

/* Open every connection, note where each worker stands, close them all. */
static void *bal_client(void *arg)
{
        struct bal *b = arg;
        int fds[BAL_CONNS];
        unsigned n = 0;

        for (; n < BAL_CONNS; n++) {
                fds[n] = tcp_client(b->port, false);
                if (!CHECK(fds[n] >= 0))
                        break;
        }
        if (n == BAL_CONNS && CHECK(wait_for(b->rt, all_open, NULL)))
                for (int w = 0; w < BAL_WORKERS; w++)
                        CHECK(pc_knet_stats(b->rt, w, &b->held[w]) == 0);
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
        CHECK(wait_for(b->rt, none_open, NULL));
        return NULL;
}

/*
 * The kernel's SO_REUSEPORT hash puts each of 200 connections on one of 4
 * listeners at random (50 +- 6 a worker); balancing hands a connection on
 * from a worker that holds more than another, so each worker ends with
 * 50 +- 2. With PC_KNET_NO_BALANCE nothing is handed on. Every connection
 * is served exactly once either way: accepted counts it where it is served.
 */
static void test_accept_balance(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state)};
        bool balance = !(o.flags & PC_KNET_NO_BALANCE);
        uint64_t accepted = 0, handed = 0;
        struct bal b = {0};
        struct srv s;

        raise_nofile();
        srv_create(&s, BAL_WORKERS, &o);
        b.port = s.port;
        b.rt = s.rt;
        srv_run(&s, bal_client, &b);
        for (int w = 0; w < BAL_WORKERS; w++) {
                struct pc_knet_stats ws;

                assert_int_equal(pc_knet_stats(s.rt, w, &ws), 0);
                accepted += ws.accepted;
                handed += ws.handed_off;
                assert_int_equal(b.held[w].accepted, ws.accepted);
                if (balance) {
                        assert_in_range(b.held[w].conns, BAL_CONNS / BAL_WORKERS - 2,
                                        BAL_CONNS / BAL_WORKERS + 2);
                }
        }
        assert_int_equal(accepted, BAL_CONNS);
        assert_int_equal(atomic_load(&opens), BAL_CONNS);
        assert_int_equal(atomic_load(&wrong_worker), 0);
        if (!balance)
                assert_int_equal(handed, 0);
        pc_runtime_destroy(s.rt);
}

static const unsigned no_balance = PC_KNET_NO_BALANCE;
/* Elastic mode: a thief must leave a handed-off connection to its worker. */
static const unsigned elastic_only = T_ELASTIC;

/* ---- resets ------------------------------------------------------------------ */

struct resets {
        struct srv *s;
        unsigned n;
        bool echoed_after;
};

static bool n_resets(const struct pc_knet_stats *st, void *arg)
{
        return st->resets >= *(unsigned *)arg && st->conns == 0;
}

/* Each client waits for its echo (so the server has the connection), then
 * closes with SO_LINGER 0: an RST, no FIN. */
static void *reset_client(void *arg)
{
        struct resets *rs = arg;
        struct linger lg = {.l_onoff = 1, .l_linger = 0};

        for (unsigned k = 0; k < rs->n; k++) {
                int fd = tcp_client(rs->s->port, false);
                char b[4];
                bool ok;

                if (fd < 0)
                        return NULL;
                ok = CHECK(send(fd, "ping", 4, MSG_NOSIGNAL) == 4) &&
                     CHECK(recv(fd, b, 4, MSG_WAITALL) == 4);
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
                close(fd);
                if (!ok)
                        return NULL;
        }
        if (CHECK(wait_for(rs->s->rt, n_resets, &rs->n)))
                echo_once(rs->s->port, "still alive", &rs->echoed_after);
        return NULL;
}

static void test_resets(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state)};
        struct srv s;
        struct resets rs = {.s = &s, .n = 50};
        struct pc_knet_stats st;

        srv_create(&s, 2, &o);
        srv_run(&s, reset_client, &rs);
        st = stats(s.rt);
        assert_int_equal(st.resets, rs.n);
        assert_int_equal(st.accepted, rs.n + 1);
        assert_int_equal(atomic_load(&closes_err), rs.n);
        assert_true(rs.echoed_after);
        pc_runtime_destroy(s.rt);
}

/* ---- connection limit ------------------------------------------------------- */

struct limit {
        struct srv *s;
        unsigned echoed, refused;
};

static void *limit_client(void *arg)
{
        struct limit *li = arg;
        int fds[10];

        for (int k = 0; k < 10; k++) {
                char b;
                ssize_t r;

                fds[k] = tcp_client(li->s->port, false);
                send(fds[k], "x", 1, MSG_NOSIGNAL);
                /* Connections beyond the 4th are accepted and closed. */
                r = recv(fds[k], &b, 1, 0);
                if (r == 1)
                        li->echoed++;
                else
                        li->refused++;
        }
        for (int k = 0; k < 10; k++)
                close(fds[k]);
        return NULL;
}

static void test_conn_limit(void **state)
{
        struct pc_knet_opts o = {.max_conns = 4};
        struct srv s;
        struct limit li = {.s = &s};
        struct pc_knet_stats st;

        (void)state;
        srv_create(&s, 1, &o);
        srv_run(&s, limit_client, &li);
        assert_int_equal(li.echoed, 4);
        assert_int_equal(li.refused, 6);
        st = stats(s.rt);
        assert_int_equal(st.accepted, 4);
        assert_int_equal(st.refused, 6);
        pc_runtime_destroy(s.rt);
}

/* ---- a client on a worker ---------------------------------------------------- */

struct cli {
        struct pc_runtime *rt;
        uint16_t port;
        char got[16];
        size_t n;
        int close_err;
        bool closed;
};

static void cli_accept(struct pc_conn *c, void *arg)
{
        (void)arg;
        CHECK(pc_conn_send(c, "hello", 5) == 0);
}

static void cli_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct cli *k = arg;

        memcpy(k->got + k->n, data, len < sizeof(k->got) - k->n ? len : 0);
        k->n += len;
        if (k->n >= 5)
                pc_conn_close(c);
}

static void cli_close(struct pc_conn *c, int err, void *arg)
{
        struct cli *k = arg;

        (void)c;
        k->close_err = err;
        k->closed = true;
        pc_runtime_stop(k->rt);
}

static const struct pc_tcp_callbacks cli_cb = {
        .on_accept = cli_accept,
        .on_data = cli_data,
        .on_close = cli_close,
};

static void cli_main(void *arg)
{
        struct cli *k = arg;

        /* A task on a worker: CHECK(), so a failure cannot leave the run
         * by a longjmp. Without the connection nothing would stop it. */
        CHECK(pc_tcp_connect_kernel("nonsense", k->port, &cli_cb, k, NULL) == -EINVAL);
        if (!CHECK(pc_tcp_connect_kernel("127.0.0.1", k->port, &cli_cb, k, NULL) == 0))
                pc_runtime_stop(k->rt);
}

static void test_connect(void **state)
{
        struct srv s;
        struct cli k = {0};

        (void)state;
        srv_create(&s, 2, NULL);
        k.rt = s.rt;
        k.port = s.port;
        assert_int_equal(pc_tcp_connect_kernel("127.0.0.1", s.port, &cli_cb, &k, NULL), -EPERM);
        checks_reset();
        assert_int_equal(pc_runtime_run(s.rt, cli_main, &k), 0);
        checks_pass();
        assert_true(k.closed);
        assert_int_equal(k.close_err, 0);
        assert_int_equal(k.n, 5);
        assert_memory_equal(k.got, "hello", 5);
        pc_runtime_destroy(s.rt);
}
static void test_errors(void **state)
{
        struct pc_runtime *rt;
        struct pc_config cfg;
        struct pc_knet_stats st;
        struct pc_knet_opts bad = {.out_cap = 1000, .rbuf = 4096};

        (void)state;
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_knet_stats(rt, -1, &st), -ENOENT);
        assert_int_equal(pc_knet_configure(rt, &bad), -EINVAL);
        assert_int_equal(pc_tcp_listen_kernel(rt, "256.0.0.1", 0, &echo_cb, NULL, NULL), -EINVAL);
        assert_int_equal(pc_knet_stats(rt, 1, &st), -EINVAL);
        assert_int_equal(pc_knet_stats(rt, 0, &st), 0);
        assert_int_equal(st.accepted, 0);
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_many_clients),
                cmocka_unit_test_prestate(test_many_clients, (void *)&single_recv),
                cmocka_unit_test_prestate(test_many_clients, (void *)&no_defer),
                cmocka_unit_test_prestate(test_many_clients, (void *)&efd_sleep),
                cmocka_unit_test_prestate(test_many_clients, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_many_clients, (void *)&fibers_single),
                cmocka_unit_test_prestate(test_many_clients, (void *)&fibers_elastic),
                cmocka_unit_test(test_accept_balance),
                cmocka_unit_test_prestate(test_accept_balance, (void *)&no_balance),
                cmocka_unit_test_prestate(test_accept_balance, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_accept_balance, (void *)&elastic_only),
                cmocka_unit_test_prestate(test_accept_balance, (void *)&fibers_elastic),
                cmocka_unit_test(test_resets),
                cmocka_unit_test_prestate(test_resets, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_resets, (void *)&fibers_elastic),
                cmocka_unit_test(test_conn_limit),
                cmocka_unit_test(test_connect),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
