/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's connections served by fibers (pc_tcp_serve_kernel) on
 * loopback: the run stops under handlers waiting to read, a handler that
 * does not read, and the calls that must be refused.
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

/* ---- fibers: the run stops under handlers waiting to read --------------------- */

#define IDLE_CONNS 20

struct idle {
        struct srv *s;
        int fd[IDLE_CONNS];
        unsigned opened;
};

/* Each connection's handler echoes a ping, then waits in pc_conn_read for
 * more that never comes: we return with the connections open, and the
 * run must still end, every handler's read returning -ECANCELED. */
static void *idle_client(void *arg)
{
        struct idle *id = arg;

        for (unsigned k = 0; k < IDLE_CONNS; k++) {
                char b[4];

                id->fd[k] = tcp_client(id->s->port, false);
                if (id->fd[k] < 0)
                        return NULL;
                id->opened++;
                if (!CHECK(send(id->fd[k], "ping", 4, MSG_NOSIGNAL) == 4) ||
                    !CHECK(recv(id->fd[k], b, 4, MSG_WAITALL) == 4))
                        return NULL;
        }
        return NULL;
}

static void test_fiber_stop(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state) | T_FIBERS};
        struct srv s;
        struct idle id = {.s = &s};

        srv_create(&s, 2, &o);
        srv_run(&s, idle_client, &id);
        assert_int_equal(id.opened, IDLE_CONNS);
        assert_int_equal(atomic_load(&opens), IDLE_CONNS);
        assert_int_equal(atomic_load(&fib_cancels), IDLE_CONNS);
        assert_int_equal(atomic_load(&fib_shutdowns), IDLE_CONNS);
        assert_int_equal(atomic_load(&closes_err), IDLE_CONNS);
        for (unsigned k = 0; k < id.opened; k++)
                close(id.fd[k]);
        pc_runtime_destroy(s.rt);
}

/* ---- fibers: a handler that does not read ----------------------------------------- */

#define LAZY_RBUF (16u << 10)
#define LAZY_BUFS 16

static _Atomic bool lazy_go;
static _Atomic uint64_t lazy_bad;

/* Reads nothing until told, then checks every byte and answers with the
 * count once the client shuts its side. */
static void lazy_reader(struct pc_conn *c, void *arg)
{
        char buf[4096];
        uint64_t got = 0;
        ssize_t n;

        (void)arg;
        while (!atomic_load(&lazy_go))
                if (pc_fiber_sleep_ns(1000000) != 0)
                        return;
        while ((n = pc_conn_read(c, buf, sizeof(buf))) > 0)
                for (ssize_t j = 0; j < n; j++, got++)
                        if ((uint8_t)buf[j] != pattern(3, got))
                                atomic_fetch_add(&lazy_bad, 1);
        if (n < 0 || pc_conn_write(c, &got, sizeof(got)) != (ssize_t)sizeof(got))
                atomic_fetch_add(&lazy_bad, 1);
}

/* The handler's unread input reached its cap: reading paused. */
static bool paused(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->read_paused >= 1;
}

struct lazy {
        struct srv *s;
        struct pc_knet_stats at_stall;
        size_t sent;
        uint64_t echoed;
};

static void *lazy_client(void *arg)
{
        struct lazy *lz = arg;
        const size_t total = 64u << 20;
        int fd = tcp_client(lz->s->port, true);
        static uint8_t buf[65536];

        if (fd < 0)
                return NULL;
        CHECK(send_until_stopped(lz->s->rt, fd, 3, &lz->sent, total, paused));
        CHECK(lz->sent < total);
        lz->at_stall = client_stats(lz->s->rt);
        atomic_store(&lazy_go, true);
        /* The rest goes in blocking: the handler reads now. */
        fcntl(fd, F_SETFL, 0);
        while (lz->sent < total) {
                size_t want = total - lz->sent < sizeof(buf) ? total - lz->sent : sizeof(buf);
                ssize_t w;

                for (size_t j = 0; j < want; j++)
                        buf[j] = pattern(3, lz->sent + j);
                w = send(fd, buf, want, MSG_NOSIGNAL);
                if (!CHECK(w > 0))
                        break;
                lz->sent += (size_t)w;
        }
        shutdown(fd, SHUT_WR);
        CHECK(recv(fd, &lz->echoed, sizeof(lz->echoed), MSG_WAITALL) ==
              (ssize_t)sizeof(lz->echoed));
        close(fd);
        return NULL;
}

/* The handler's unread input is capped: reading pauses (read_paused),
 * the kernel's buffers fill, and the client stalls; then everything
 * arrives, in order. */
static void test_fiber_lazy_reader(void **state)
{
        struct pc_knet_opts o = {.rbuf = LAZY_RBUF, .recv_bufs = LAZY_BUFS,
                                 .flags = recv_flags(state)};
        struct pc_config cfg;
        struct pc_tcp_listener *l;
        struct srv s;
        struct lazy lz = {.s = &s};
        size_t bound;

        atomic_store(&lazy_go, false);
        atomic_store(&lazy_bad, 0);
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &s.rt), 0);
        assert_int_equal(pc_knet_configure(s.rt, &o), 0);
        assert_int_equal(pc_tcp_serve_kernel(s.rt, "127.0.0.1", 0, lazy_reader, NULL, &l), 0);
        s.port = pc_tcp_listener_port(l);
        srv_run(&s, lazy_client, &lz);
        assert_true(lz.at_stall.read_paused >= 1);
        /* Held: four receive buffers for the handler, plus what one pass
         * of multishot receives brings before the pause cancels them. */
        bound = 4 * (size_t)LAZY_RBUF + (lz.at_stall.recv_multishot ? LAZY_BUFS * LAZY_RBUF :
                                                                      LAZY_RBUF);
        assert_true(lz.at_stall.bytes_in <= bound);
        assert_int_equal(lz.echoed, lz.sent);
        assert_int_equal(atomic_load(&lazy_bad), 0);
        pc_runtime_destroy(s.rt);
}

/* ---- fibers: calls that must be refused ----------------------------------------- */

static _Atomic int misuse_read = 1, misuse_write = 1;

static void *misuse_fiber(void *arg)
{
        char b[4];

        /* A connection served by callbacks has no reader to wake. */
        atomic_store(&misuse_read, (int)pc_conn_read(arg, b, sizeof(b)));
        atomic_store(&misuse_write, (int)pc_conn_write(arg, "x", 1));
        return NULL;
}

static void misuse_accept(struct pc_conn *c, void *arg)
{
        srv_accept(c, arg);
        CHECK(pc_fiber_spawn(misuse_fiber, c, NULL) == 0);
}

static const struct pc_tcp_callbacks misuse_cb = {
        .on_accept = misuse_accept,
        .on_data = srv_data,
        .on_close = srv_close,
};

static void *misuse_client(void *arg)
{
        struct srv *s = arg;
        bool ok;

        echo_once(s->port, "ping", &ok);
        CHECK(ok);
        return NULL;
}

static void test_fiber_errors(void **state)
{
        struct pc_config cfg;
        struct pc_tcp_listener *l;
        struct srv s;
        char b[4];

        (void)state;
        reset_counts();
        pc_test_config(&cfg, 1);
        assert_int_equal(pc_runtime_create(&cfg, &s.rt), 0);
        assert_int_equal(pc_tcp_serve_kernel(s.rt, "127.0.0.1", 0, NULL, NULL, &l), -EINVAL);
        assert_int_equal(pc_tcp_serve_kernel(s.rt, "256.0.0.1", 0, fiber_echo, NULL, &l), -EINVAL);
        assert_int_equal(pc_conn_read(NULL, b, sizeof(b)), -EPERM);
        assert_int_equal(pc_conn_write(NULL, b, sizeof(b)), -EPERM);
        assert_int_equal(pc_tcp_listen_kernel(s.rt, "127.0.0.1", 0, &misuse_cb, NULL, &l), 0);
        s.port = pc_tcp_listener_port(l);
        srv_run(&s, misuse_client, &s);
        assert_int_equal(atomic_load(&misuse_read), -EINVAL);
        assert_int_equal(atomic_load(&misuse_write), -EINVAL);
        pc_runtime_destroy(s.rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fiber_stop),
                cmocka_unit_test_prestate(test_fiber_stop, (void *)&single_recv),
                cmocka_unit_test(test_fiber_errors),
                cmocka_unit_test(test_fiber_lazy_reader),
                cmocka_unit_test_prestate(test_fiber_lazy_reader, (void *)&single_recv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
