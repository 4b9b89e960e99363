/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's connections across a run's life on loopback: replies
 * after the peer's EOF (pc_conn_linger), running out of file descriptors,
 * running twice, and a run that ends mid-stream.
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

/* ---- replies after the peer's EOF (pc_conn_linger) ------------------------------- */

static struct {
        struct pc_conn *c;
        char got[64];
        size_t len;
        int late_send, linger_after, reclose;
} lg;

/* The last reply, from a task that runs after on_data(EOF) returned: with
 * linger the connection is still open for it. */
static void linger_reply(void *arg)
{
        (void)arg;
        if (lg.c == NULL) { /* already closed and gone */
                lg.late_send = -EPIPE;
                return;
        }
        lg.late_send = pc_conn_send(lg.c, lg.got, lg.len);
        if (lg.late_send == 0)
                lg.late_send = pc_conn_send(lg.c, " bye", 4);
        pc_conn_close(lg.c);
        lg.reclose = pc_conn_close(lg.c); /* idempotent */
}

static void linger_accept(struct pc_conn *c, void *arg)
{
        bool *on = arg;

        lg.c = c;
        if (*on)
                CHECK(pc_conn_linger(c) == 0);
}

static void linger_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)c;
        (void)arg;
        if (len) {
                if (lg.len + len <= sizeof(lg.got)) {
                        memcpy(lg.got + lg.len, data, len);
                        lg.len += len;
                }
                return;
        }
        CHECK(pc_spawn(linger_reply, NULL) == 0);
}

static void linger_close(struct pc_conn *c, int err, void *arg)
{
        (void)arg;
        lg.linger_after = pc_conn_linger(c); /* closed: -EPIPE */
        lg.c = NULL;
        atomic_fetch_add(err ? &closes_err : &closes_clean, 1);
}

static const struct pc_tcp_callbacks linger_cb = {
        .on_accept = linger_accept,
        .on_data = linger_data,
        .on_close = linger_close,
};

static bool one_closed(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->closed >= 1;
}

struct lingerc {
        struct srv *s;
        char reply[64];
        ssize_t n;
};

/* Send, shut the write side, read to EOF. */
static void *linger_client(void *arg)
{
        struct lingerc *lc = arg;
        int fd = tcp_client(lc->s->port, false);
        ssize_t r;

        lc->n = 0;
        if (fd < 0)
                return NULL;
        if (!CHECK(send(fd, "hello", 5, 0) == 5) || !CHECK(shutdown(fd, SHUT_WR) == 0)) {
                close(fd);
                return NULL;
        }
        while ((r = recv(fd, lc->reply + lc->n, sizeof(lc->reply) - 1 - (size_t)lc->n, 0)) > 0)
                lc->n += r;
        close(fd);
        CHECK(wait_for(lc->s->rt, one_closed, NULL));
        return NULL;
}

static void test_linger(void **state)
{
        struct pc_tcp_listener *l;
        struct pc_config cfg;

        (void)state;
        for (int on = 1; on >= 0; on--) {
                bool linger = on;
                struct srv s;
                struct lingerc lc = {.s = &s};

                memset(&lg, 0, sizeof(lg));
                reset_counts();
                pc_test_config(&cfg, 1);
                assert_int_equal(pc_runtime_create(&cfg, &s.rt), 0);
                assert_int_equal(pc_tcp_listen_kernel(s.rt, "127.0.0.1", 0, &linger_cb, &linger, &l), 0);
                s.port = pc_tcp_listener_port(l);
                srv_run(&s, linger_client, &lc);
                assert_int_equal(closes_clean, 1);
                assert_int_equal(lg.linger_after, -EPIPE);
                if (linger) {
                        /* Everything, then the close. */
                        assert_int_equal(lg.late_send, 0);
                        assert_int_equal(lg.reclose, 0);
                        assert_int_equal(lc.n, 9);
                        assert_memory_equal(lc.reply, "hello bye", 9);
                } else {
                        /* Without it the EOF closed the connection at once. */
                        assert_int_equal(lg.late_send, -EPIPE);
                        assert_int_equal(lc.n, 0);
                }
                pc_runtime_destroy(s.rt);
        }
}

/* ---- out of file descriptors ---------------------------------------------------- */

/* The lowest free descriptor: every one below it is in use. */
static int lowest_free_fd(void)
{
        int fd = dup(0);

        assert_true(fd >= 0);
        close(fd);
        return fd;
}

/* Allow no new descriptor in the process (those open stay valid). */
static void nofile_set(struct rlimit *saved, rlim_t cur)
{
        struct rlimit r;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, saved), 0);
        r = *saved;
        r.rlim_cur = cur;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &r), 0);
}

struct fdx {
        struct srv *s;
        int fd;              /* the client's socket, made while fds were left */
        struct rlimit saved; /* the limit to restore */
        _Atomic int connect_rc;
        _Atomic bool connect_done;
        struct pc_knet_stats limited;
        bool echoed_while_limited, echoed_after;
};

static bool accept_failed_twice(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->accept_errors >= 2;
}

static bool no_conns(const struct pc_knet_stats *st, void *arg)
{
        (void)arg;
        return st->conns == 0;
}

static void fdx_connect(void *arg)
{
        struct fdx *x = arg;

        atomic_store(&x->connect_rc, pc_tcp_connect_kernel("127.0.0.1", x->s->port, &echo_cb, NULL, NULL));
        atomic_store(&x->connect_done, true);
}

/* The server started with no descriptor to spare: its accepts fail
 * (counted, retried) and pc_tcp_connect_kernel() says -EMFILE; once descriptors
 * are back the waiting connection is accepted and served. */
static void *fdx_client(void *arg)
{
        struct fdx *x = arg;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(x->s->port)};
        struct pollfd p = {.fd = x->fd, .events = POLLIN};
        char b[8];
        size_t got = 0;

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        /* The handshake needs no descriptor; the server's accept does. */
        if (!CHECK(connect(x->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) ||
            !CHECK(send(x->fd, "fd-ok", 5, MSG_NOSIGNAL) == 5) ||
            !CHECK(wait_for(x->s->rt, accept_failed_twice, NULL)) ||
            !CHECK(pc_runtime_inject(x->s->rt, fdx_connect, x) == 0)) {
                setrlimit(RLIMIT_NOFILE, &x->saved);
                close(x->fd);
                return NULL;
        }
        while (!atomic_load(&x->connect_done))
                usleep(1000);
        x->limited = client_stats(x->s->rt);
        x->echoed_while_limited = poll(&p, 1, 50) > 0;
        CHECK(setrlimit(RLIMIT_NOFILE, &x->saved) == 0);
        /* The listener retries on its own and the connection gets its echo. */
        while (got < 5) {
                ssize_t r;

                if (poll(&p, 1, 10000) <= 0)
                        break;
                r = recv(x->fd, b + got, sizeof(b) - got, 0);
                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        x->echoed_after = got == 5 && memcmp(b, "fd-ok", 5) == 0;
        close(x->fd);
        CHECK(wait_for(x->s->rt, no_conns, NULL));
        return NULL;
}

static void test_fd_exhaustion(void **state)
{
        struct pc_runtime *rt;
        struct pc_config cfg;
        struct rlimit saved;
        struct srv s;
        struct fdx x = {.s = &s};
        struct pc_knet_stats st;
        int before;

        (void)state;
        /* Opening sockets before the run: a clean -EMFILE, nothing left
         * open (with two workers the first socket succeeds, the second
         * fails). */
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        before = lowest_free_fd();
        nofile_set(&saved, (rlim_t)before + 1);
        assert_int_equal(pc_tcp_listen_kernel(rt, "127.0.0.1", 0, &echo_cb, NULL, NULL), -EMFILE);
        assert_int_equal(pc_kudp_bind(rt, "127.0.0.1", 0, udp_echo, NULL, NULL), -EMFILE);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
        assert_int_equal(lowest_free_fd(), before);
        pc_runtime_destroy(rt);

        /* Accepting and connecting on a worker. The limit leaves room for
         * the worker's ring and nothing else. io_uring reads the limit when
         * an accept is armed, so it must be low before the run starts. */
        srv_create(&s, 1, NULL);
        x.fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(x.fd >= 0);
        nofile_set(&x.saved, (rlim_t)lowest_free_fd() + 1);
        srv_run(&s, fdx_client, &x);
        assert_int_equal(atomic_load(&x.connect_rc), -EMFILE);
        assert_false(x.echoed_while_limited);
        assert_true(x.limited.accept_errors >= 2);
        assert_int_equal(x.limited.accepted, 0);
        assert_true(x.echoed_after);
        st = stats(s.rt);
        assert_int_equal(st.accepted, 1);
        assert_int_equal(st.conns, 0);
        pc_runtime_destroy(s.rt);
}

/* ---- running twice -------------------------------------------------------------- */

struct twice {
        struct srv *s;
        uint16_t port2;
        int keep; /* a connection open across both runs */
        unsigned round;
        bool ok[4];
};

static bool echo_on(int fd, const char *msg)
{
        char b[32];
        size_t len = strlen(msg), got = 0;

        if (send(fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
                return false;
        while (got < len) {
                ssize_t r = recv(fd, b + got, sizeof(b) - got, 0);
                if (r <= 0)
                        return false;
                got += (size_t)r;
        }
        return memcmp(b, msg, len) == 0;
}

static void *twice_client(void *arg)
{
        struct twice *t = arg;

        if (t->round == 0) {
                t->keep = tcp_client(t->s->port, false);
                t->ok[0] = echo_on(t->keep, "first run");
        } else {
                bool fresh;

                /* The connection from the first run, a new one on the old
                 * listener, one on the listener added between the runs. */
                t->ok[1] = echo_on(t->keep, "second run");
                echo_once(t->s->port, "new conn", &fresh);
                t->ok[2] = fresh;
                echo_once(t->port2, "new listener", &fresh);
                t->ok[3] = fresh;
                close(t->keep);
        }
        return NULL;
}

static void *twice_wait_closed(void *arg)
{
        struct twice *t = arg;

        twice_client(arg);
        CHECK(wait_for(t->s->rt, no_conns, NULL));
        return NULL;
}

/* pc_runtime_run() twice with listeners, UDP and a live connection: the
 * second run serves the old connection and listener, a listener added in
 * between, and ASan sees nothing leak at destroy. */
static void test_run_twice(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state)};
        struct pc_tcp_listener *l2;
        struct pc_kudp *u;
        struct srv s;
        struct twice t = {.s = &s};
        struct pc_knet_stats st;

        srv_create(&s, 2, &o);
        assert_int_equal(pc_kudp_bind(s.rt, "127.0.0.1", 0, udp_echo, NULL, &u), 0);
        srv_run(&s, twice_client, &t);
        assert_true(t.ok[0]);
        assert_int_equal(pc_knet_configure(s.rt, &o), -EBUSY);
        assert_int_equal(pc_tcp_listen_kernel(s.rt, "127.0.0.1", 0, &echo_cb, NULL, &l2), 0);
        t.port2 = pc_tcp_listener_port(l2);
        t.round = 1;
        srv_run(&s, twice_wait_closed, &t);
        assert_true(t.ok[1]);
        assert_true(t.ok[2]);
        assert_true(t.ok[3]);
        st = stats(s.rt);
        assert_int_equal(st.accepted, 3);
        assert_int_equal(st.closed, 3);
        assert_int_equal(atomic_load(&closes_clean), 3);
        check_recv_mode(&st, o.flags);
        pc_runtime_destroy(s.rt);
}

/* ---- a run that ends mid-stream ------------------------------------------ */

#define MID_TOTAL ((size_t)8 << 20)

struct mid {
        struct srv *s;
        int fd;
        bool writing;
        pthread_t writer;
        size_t echoed; /* bytes read back and checked; the client thread's */
        _Atomic bool bad;
};

/* The whole stream, written without pause (blocking between runs, when the
 * server reads nothing and the socket buffers fill). */
static void *mid_write(void *arg)
{
        struct mid *m = arg;
        uint8_t buf[4096];
        size_t off = 0;

        while (off < MID_TOTAL && !atomic_load(&m->bad)) {
                size_t n = MID_TOTAL - off < sizeof(buf) ? MID_TOTAL - off : sizeof(buf);
                ssize_t w;

                for (size_t i = 0; i < n; i++)
                        buf[i] = pattern(5, off + i);
                w = send(m->fd, buf, n, MSG_NOSIGNAL);
                if (w <= 0) {
                        atomic_store(&m->bad, true);
                        break;
                }
                off += (size_t)w;
        }
        return NULL;
}

/* Read the echo back up to @upto bytes, checking each; no cmocka asserts
 * off the test's thread. */
static void mid_read(struct mid *m, size_t upto)
{
        uint8_t buf[4096];

        while (m->echoed < upto && !atomic_load(&m->bad)) {
                ssize_t r = recv(m->fd, buf, sizeof(buf), 0);

                if (r <= 0) {
                        atomic_store(&m->bad, true);
                        return;
                }
                for (ssize_t i = 0; i < r; i++)
                        if (buf[i] != pattern(5, m->echoed + (size_t)i))
                                atomic_store(&m->bad, true);
                m->echoed += (size_t)r;
        }
}

static void *mid_client(void *arg)
{
        struct mid *m = arg;

        if (!m->writing) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(m->s->port)};

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                m->fd = socket(AF_INET, SOCK_STREAM, 0);
                if (m->fd < 0 || connect(m->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
                    pthread_create(&m->writer, NULL, mid_write, m)) {
                        atomic_store(&m->bad, true);
                        return NULL;
                }
                m->writing = true;
                mid_read(m, MID_TOTAL / 4); /* then the run ends mid-stream */
        } else {
                struct timespec ts = {0, 1000000};
                struct pc_knet_stats st;

                mid_read(m, MID_TOTAL);
                close(m->fd);
                /* The server sees the EOF and closes its side (freeing what
                 * on_accept allocated) before the run ends. */
                for (int i = 0; i < 20000; i++) {
                        if (pc_knet_stats(m->s->rt, -1, &st) == 0 && st.conns == 0)
                                break;
                        nanosleep(&ts, NULL);
                }
        }
        return NULL;
}

/* A stream still arriving as a run ends loses nothing and keeps its order:
 * each worker cancels its ring's operations and holds what comes in
 * meanwhile, and the next run, on a new ring, echoes every byte. */
static void test_stop_midstream(void **state)
{
        struct pc_knet_opts o = {.flags = recv_flags(state)};
        struct srv s;
        struct mid m = {.s = &s, .fd = -1};

        srv_create(&s, 1, &o);
        srv_run(&s, mid_client, &m);
        assert_false(atomic_load(&m.bad));
        assert_true(m.writing);
        assert_true(m.echoed >= MID_TOTAL / 4);
        srv_run(&s, mid_client, &m);
        pthread_join(m.writer, NULL);
        assert_false(atomic_load(&m.bad));
        assert_int_equal(m.echoed, MID_TOTAL);
        assert_int_equal(stats(s.rt).conns, 0);
        assert_int_equal(atomic_load(&closes_clean), 1);
        pc_runtime_destroy(s.rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_linger),
                cmocka_unit_test(test_fd_exhaustion),
                cmocka_unit_test(test_run_twice),
                cmocka_unit_test_prestate(test_run_twice, (void *)&single_recv),
                cmocka_unit_test_prestate(test_run_twice, (void *)&no_defer),
                cmocka_unit_test_prestate(test_run_twice, (void *)&efd_sleep),
                cmocka_unit_test(test_stop_midstream),
                cmocka_unit_test_prestate(test_stop_midstream, (void *)&single_recv),
                cmocka_unit_test_prestate(test_stop_midstream, (void *)&no_defer),
                cmocka_unit_test_prestate(test_stop_midstream, (void *)&efd_sleep),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
