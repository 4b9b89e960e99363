/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend on loopback: an echo server on percore (parking
 * workers, so I/O completions must wake them through the ring's eventfd)
 * and clients on plain sockets in a thread of the test. Only the test's
 * own thread asserts: client threads and server callbacks CHECK().
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

#include <liburing.h>

#include "pc_test.h"
#include "pc_knet.h"

/* ---- checks off the test's thread -------------------------------------------- */

/*
 * A cmocka assert longjmps to the test's own thread: from a client thread
 * or a worker's callback it would jump across stacks. Those call CHECK(),
 * which counts a failure and keeps the first one's text; the test's thread
 * asserts there was none once the run that started them has ended and the
 * client is joined (srv_run, checks_pass).
 */
static struct {
        _Atomic unsigned failed;
        char first[200]; /* written by the failure that made failed 1 */
} offthread;

#define CHECK(cond) check_at((cond), #cond, __LINE__)

static bool check_at(bool ok, const char *what, int line)
{
        int err = errno;

        if (!ok && atomic_fetch_add(&offthread.failed, 1) == 0)
                snprintf(offthread.first, sizeof(offthread.first),
                         "line %d: %s (errno then: %s)", line, what, strerror(err));
        return ok;
}

/* The test's thread, after every thread that may CHECK() was joined. */
static void checks_pass(void)
{
        unsigned n = atomic_load(&offthread.failed);

        if (n)
                fail_msg("%u check(s) failed off the test's thread, the first at %s", n,
                         offthread.first);
}

static void checks_reset(void)
{
        atomic_store(&offthread.failed, 0);
        offthread.first[0] = '\0';
}

/* ---- the server ------------------------------------------------------------ */

struct conn_rec {
        int worker; /* the worker that accepted it */
};

static _Atomic uint64_t wrong_worker, send_errors, opens, closes_clean, closes_err;

static void srv_accept(struct pc_conn *c, void *arg)
{
        struct conn_rec *r = malloc(sizeof(*r));

        (void)arg;
        atomic_fetch_add(&opens, 1);
        if (!CHECK(r != NULL)) {
                pc_conn_close(c);
                return;
        }
        r->worker = pc_worker_id();
        CHECK((unsigned)r->worker == pc_conn_worker(c));
        pc_conn_set_data(c, r);
}

static void srv_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct conn_rec *r = pc_conn_data(c);

        (void)arg;
        if (r == NULL) /* on_accept failed a CHECK() and closed it */
                return;
        if (r->worker != pc_worker_id())
                atomic_fetch_add(&wrong_worker, 1);
        if (len && pc_conn_send(c, data, len) != 0)
                atomic_fetch_add(&send_errors, 1);
}

static void srv_close(struct pc_conn *c, int err, void *arg)
{
        (void)arg;
        atomic_fetch_add(err ? &closes_err : &closes_clean, 1);
        free(pc_conn_data(c));
}

static const struct pc_tcp_callbacks echo_cb = {
        .on_accept = srv_accept,
        .on_data = srv_data,
        .on_close = srv_close,
};

static void reset_counts(void)
{
        wrong_worker = send_errors = opens = closes_clean = closes_err = 0;
}

static void noop_main(void *arg)
{
        (void)arg;
}

/* The same server blocking-style: a fiber per connection (pc_tcp_serve),
 * reading and writing; the counts are the handler's. */
static _Atomic uint64_t fib_cancels, fib_shutdowns, fib_misuse;

static void fiber_echo(struct pc_conn *c, void *arg)
{
        static const char tag[] = "x";
        char buf[6000]; /* smaller than a receive: reads split what came */
        unsigned worker = (unsigned)pc_worker_id();
        ssize_t n;

        (void)arg;
        atomic_fetch_add(&opens, 1);
        CHECK(worker == pc_conn_worker(c));
        if (pc_conn_read(c, NULL, 1) != -EINVAL || pc_conn_read(c, buf, 0) != -EINVAL ||
            pc_conn_write(c, NULL, 1) != -EINVAL)
                atomic_fetch_add(&fib_misuse, 1);
        CHECK(pc_conn_write(c, tag, 0) == 0);
        while ((n = pc_conn_read(c, buf, 1 + (size_t)(pc_now_ns() % sizeof(buf)))) > 0) {
                /* Sticky: elastic mode never moves a connection's fiber. */
                if ((unsigned)pc_worker_id() != worker)
                        atomic_fetch_add(&wrong_worker, 1);
                if (pc_conn_write(c, buf, (size_t)n) != n) {
                        atomic_fetch_add(&send_errors, 1);
                        break;
                }
        }
        if (n == -ECANCELED) {
                atomic_fetch_add(&fib_cancels, 1);
                if (pc_conn_read(c, buf, sizeof(buf)) == -ESHUTDOWN)
                        atomic_fetch_add(&fib_shutdowns, 1);
        }
        atomic_fetch_add(n == 0 ? &closes_clean : &closes_err, 1);
}

struct srv {
        struct pc_runtime *rt;
        uint16_t port;
        void *(*client)(void *);
        void *arg;
};

/* Test modes beside the backend's flags, in a test's prestate. */
#define T_FIBERS (1u << 16) /* serve with pc_tcp_serve(fiber_echo) */
#define T_ELASTIC (1u << 17) /* PC_MODE_ELASTIC */
#define T_MODES (T_FIBERS | T_ELASTIC)

static void srv_create(struct srv *s, unsigned workers, const struct pc_knet_opts *o)
{
        struct pc_config cfg;
        struct pc_tcp_listener *l;
        struct pc_knet_opts ko;
        unsigned modes = o ? o->flags & T_MODES : 0;

        reset_counts();
        fib_cancels = fib_shutdowns = fib_misuse = 0;
        pc_test_config(&cfg, workers);
        if (modes & T_ELASTIC)
                cfg.mode = PC_MODE_ELASTIC;
        assert_int_equal(pc_runtime_create(&cfg, &s->rt), 0);
        if (o) {
                ko = *o;
                ko.flags &= ~T_MODES;
                assert_int_equal(pc_knet_configure(s->rt, &ko), 0);
        }
        if (modes & T_FIBERS)
                assert_int_equal(pc_tcp_serve(s->rt, "127.0.0.1", 0, fiber_echo, NULL, &l), 0);
        else
                assert_int_equal(pc_tcp_listen(s->rt, "127.0.0.1", 0, &echo_cb, NULL, &l), 0);
        s->port = pc_tcp_listener_port(l);
        assert_true(s->port != 0);
}

static void *client_trampoline(void *arg)
{
        struct srv *s = arg;
        void *r = s->client(s->arg);

        pc_runtime_stop(s->rt);
        return r;
}

/* Run the server until @client returns, then assert that neither the
 * client nor a server callback failed a CHECK(). */
static void srv_run(struct srv *s, void *(*client)(void *), void *arg)
{
        pthread_t t;
        int rc;

        checks_reset();
        s->client = client;
        s->arg = arg;
        assert_int_equal(pthread_create(&t, NULL, client_trampoline, s), 0);
        rc = pc_runtime_run(s->rt, noop_main, NULL);
        pthread_join(t, NULL);
        assert_int_equal(rc, 0);
        checks_pass();
}

/* The server's counters, on the test's thread. */
static struct pc_knet_stats stats(struct pc_runtime *rt)
{
        struct pc_knet_stats st;

        assert_int_equal(pc_knet_stats(rt, -1, &st), 0);
        return st;
}

/* The same from a client thread: a failure is a CHECK() (and all zeros). */
static struct pc_knet_stats client_stats(struct pc_runtime *rt)
{
        struct pc_knet_stats st;

        if (!CHECK(pc_knet_stats(rt, -1, &st) == 0))
                memset(&st, 0, sizeof(st));
        return st;
}

/* Wait until @pred holds (polling the stats), up to 20 s. Client threads:
 * the caller CHECK()s the result. */
static bool wait_for(struct pc_runtime *rt, bool (*pred)(const struct pc_knet_stats *, void *),
                     void *arg)
{
        for (int i = 0; i < 20000; i++) {
                struct pc_knet_stats st = client_stats(rt);
                if (pred(&st, arg))
                        return true;
                usleep(1000);
        }
        return false;
}

/* ---- client helpers -------------------------------------------------------- */

/* A connected (or, @nonblock, connecting) socket, or -1 after a failed
 * CHECK(). */
static int tcp_client(uint16_t port, bool nonblock)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        int fd = socket(AF_INET, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);

        if (!CHECK(fd >= 0))
                return -1;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (!CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
                   errno == EINPROGRESS)) {
                close(fd);
                return -1;
        }
        return fd;
}

static uint8_t pattern(unsigned k, size_t i)
{
        return (uint8_t)(k * 131u + i * 7u + (i >> 9));
}

/* Whether this kernel takes a provided-buffer ring (5.19; multishot recv
 * came in 6.0, but a kernel with one and not the other is rare). */
static bool kernel_has_buf_ring(void)
{
        static int known = -1;
        struct io_uring ring;
        struct io_uring_buf_reg reg;
        void *br;

        if (known >= 0)
                return known;
        known = 0;
        if (io_uring_queue_init(8, &ring, 0))
                return false;
        if (posix_memalign(&br, 4096, 4096) == 0) {
                memset(br, 0, 4096);
                memset(&reg, 0, sizeof(reg));
                reg.ring_addr = (uint64_t)(uintptr_t)br;
                reg.ring_entries = 8;
                known = io_uring_register_buf_ring(&ring, &reg, 0) == 0;
                io_uring_queue_exit(&ring);
                free(br);
        } else {
                io_uring_queue_exit(&ring);
        }
        return known;
}

/* The receive mode a test asks for: PC_KNET_SINGLE_RECV or 0 (the
 * default, multishot where the kernel has it). */
static unsigned recv_flags(void **state)
{
        return *state ? *(const unsigned *)*state : 0;
}

static const unsigned single_recv = PC_KNET_SINGLE_RECV;
static const unsigned no_defer = PC_KNET_NO_DEFER;
static const unsigned efd_sleep = PC_KNET_EFD_SLEEP;
static const unsigned fibers_only = T_FIBERS;
static const unsigned fibers_single = T_FIBERS | PC_KNET_SINGLE_RECV;
static const unsigned fibers_elastic = T_FIBERS | T_ELASTIC;

/* Whether this kernel makes rings that defer task work (6.1 and later). */
static bool kernel_has_defer(void)
{
        struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER |
                                             IORING_SETUP_DEFER_TASKRUN};
        struct io_uring r;

        if (io_uring_queue_init_params(8, &r, &p))
                return false;
        io_uring_queue_exit(&r);
        return true;
}

/* The stats show the receive mode and the ring mode in use. */
static void check_recv_mode(const struct pc_knet_stats *st, unsigned flags)
{
        if ((flags & PC_KNET_SINGLE_RECV) || !kernel_has_buf_ring())
                assert_int_equal(st->recv_multishot, 0);
        else
                assert_true(st->recv_multishot > 0);
        if ((flags & PC_KNET_NO_DEFER) || !kernel_has_defer())
                assert_int_equal(st->rings_deferred, 0);
        else
                assert_true(st->rings_deferred > 0);
        /* Workers sleep in their ring (a multishot poll on the eventfd,
         * 5.13) unless told to sleep on the eventfd. */
        if (flags & PC_KNET_EFD_SLEEP)
                assert_int_equal(st->rings_sleeping, 0);
        else
                assert_true(st->rings_sleeping > 0);
        /* Rings are entered by their registered index where the kernel
         * has it (5.18, as SUBMIT_ALL, which DEFER_TASKRUN's 6.1 implies). */
        if (kernel_has_defer())
                assert_true(st->rings_fd_registered > 0);
}

static void raise_nofile(void)
{
        struct rlimit r;

        if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
                r.rlim_cur = r.rlim_max;
                setrlimit(RLIMIT_NOFILE, &r);
        }
}

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

/* Send pattern @k on non-blocking @fd from byte *@sent on, up to @total,
 * until the server says (@stopped, from its stats) that it stopped
 * reading and the socket takes no more: a full socket alone may be a
 * server that has not run yet, so no span of time counts as a stall.
 * Client threads. Returns whether it stalled so (false: all @total went,
 * or a 60 s guard against a server that never stops ran out). */
static bool send_until_stopped(struct pc_runtime *rt, int fd, unsigned k, size_t *sent,
                               size_t total,
                               bool (*stopped)(const struct pc_knet_stats *, void *))
{
        static uint8_t buf[65536];

        for (int polls = 0; *sent < total && polls < 6000;) {
                size_t want = total - *sent < sizeof(buf) ? total - *sent : sizeof(buf);
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                struct pc_knet_stats st;
                ssize_t w;

                for (size_t j = 0; j < want; j++)
                        buf[j] = pattern(k, *sent + j);
                w = send(fd, buf, want, MSG_NOSIGNAL);
                if (w > 0) {
                        *sent += (size_t)w;
                        continue;
                }
                if (!CHECK(errno == EAGAIN || errno == EWOULDBLOCK))
                        return false;
                st = client_stats(rt);
                if (stopped(&st, NULL))
                        return true;
                if (poll(&p, 1, 10) == 0)
                        polls++;
        }
        return false;
}

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
         * pauses reading too (read_paused). */
        return st->backpressure >= 1 || st->read_paused >= 1;
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

static void echo_once(uint16_t port, const char *msg, bool *ok)
{
        int fd = tcp_client(port, false);
        char buf[64];
        size_t len = strlen(msg), got = 0;

        *ok = false;
        if (fd < 0)
                return;
        if (!CHECK(send(fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len)) {
                close(fd);
                return;
        }
        while (got < len) {
                ssize_t r = recv(fd, buf + got, sizeof(buf) - got, 0);
                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        *ok = got == len && memcmp(buf, msg, len) == 0;
        close(fd);
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
        CHECK(pc_tcp_connect("nonsense", k->port, &cli_cb, k, NULL) == -EINVAL);
        if (!CHECK(pc_tcp_connect("127.0.0.1", k->port, &cli_cb, k, NULL) == 0))
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
        assert_int_equal(pc_tcp_connect("127.0.0.1", s.port, &cli_cb, &k, NULL), -EPERM);
        checks_reset();
        assert_int_equal(pc_runtime_run(s.rt, cli_main, &k), 0);
        checks_pass();
        assert_true(k.closed);
        assert_int_equal(k.close_err, 0);
        assert_int_equal(k.n, 5);
        assert_memory_equal(k.got, "hello", 5);
        pc_runtime_destroy(s.rt);
}

/* ---- UDP ------------------------------------------------------------------------ */

static void udp_echo(struct pc_kudp *u, const struct pc_udp_peer *from, uint16_t dport,
                     const void *data, size_t len, void *arg)
{
        (void)arg;
        CHECK(dport == pc_kudp_port(u));
        CHECK(pc_kudp_send(u, from, dport, data, len) == 0);
}

struct udpc {
        struct srv *s;
        uint16_t port;
        unsigned sent, ok;
};

static void *udp_client(void *arg)
{
        struct udpc *uc = arg;
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(uc->port)};
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        struct timeval tv = {.tv_sec = 5};
        char b[3000], r[3000];

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        /* In lock step, so loopback never drops; sizes cross the batch slot
         * (2 KB) so both send paths run. */
        for (unsigned k = 0; k < 200; k++) {
                size_t len = 1 + (k * 37) % sizeof(b);
                ssize_t n;
                for (size_t j = 0; j < len; j++)
                        b[j] = (char)pattern(k, j);
                if (!CHECK(sendto(fd, b, len, 0, (struct sockaddr *)&sa, sizeof(sa)) ==
                           (ssize_t)len))
                        break;
                uc->sent++;
                n = recv(fd, r, sizeof(r), 0);
                if (n == (ssize_t)len && memcmp(b, r, len) == 0)
                        uc->ok++;
        }
        close(fd);
        return NULL;
}

static void test_udp_echo(void **state)
{
        struct srv s;
        struct pc_kudp *u;
        struct udpc uc = {.s = &s};
        struct pc_knet_stats st;

        (void)state;
        srv_create(&s, 2, NULL);
        assert_int_equal(pc_kudp_bind(s.rt, "127.0.0.1", 0, udp_echo, NULL, &u), 0);
        assert_int_equal(pc_kudp_bind(s.rt, "not an address", 0, udp_echo, NULL, NULL), -EINVAL);
        uc.port = pc_kudp_port(u);
        srv_run(&s, udp_client, &uc);
        assert_int_equal(uc.ok, uc.sent);
        st = stats(s.rt);
        assert_int_equal(st.udp_rx, uc.sent);
        assert_int_equal(st.udp_tx, uc.sent);
        assert_int_equal(st.udp_drops, 0);
        pc_runtime_destroy(s.rt);
}

/* The same echo through the backend-neutral endpoint (pc_net.h). */
static void ep_echo(struct pc_udp_ep *ep, const struct pc_udp_peer *from, const void *data,
                    size_t len, void *arg)
{
        CHECK(arg == ep);
        CHECK(pc_udp_ep_send(ep, from, data, len) == 0);
}

static void test_udp_endpoint(void **state)
{
        static struct pc_udp_ep ep, unbound;
        struct srv s;
        struct udpc uc = {.s = &s};
        struct pc_knet_stats st;

        (void)state;
        srv_create(&s, 2, NULL);
        assert_int_equal(pc_udp_ep_kernel(&ep, s.rt, "127.0.0.1", 0, ep_echo, &ep), 0);
        assert_int_equal(pc_udp_ep_kernel(&unbound, s.rt, "x", 0, ep_echo, NULL), -EINVAL);
        assert_int_equal(pc_udp_ep_kernel(&unbound, s.rt, "127.0.0.1", 0, NULL, NULL), -EINVAL);
        assert_int_equal(pc_udp_ep_send(&unbound, NULL, "x", 1), -EINVAL);
        assert_int_equal(pc_udp_ep_port(&unbound), 0);
        uc.port = pc_udp_ep_port(&ep);
        assert_true(uc.port != 0);
        srv_run(&s, udp_client, &uc);
        assert_int_equal(uc.ok, uc.sent);
        st = stats(s.rt);
        assert_int_equal(st.udp_tx, uc.sent);
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
        assert_int_equal(pc_tcp_listen(s.rt, "127.0.0.1", 0, &prod_cb, NULL, &l), 0);
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
        assert_int_equal(pc_tcp_listen(s.rt, "127.0.0.1", 0, &pieces_cb, NULL, &l), 0);
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
                assert_int_equal(pc_tcp_listen(s.rt, "127.0.0.1", 0, &linger_cb, &linger, &l), 0);
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

        atomic_store(&x->connect_rc, pc_tcp_connect("127.0.0.1", x->s->port, &echo_cb, NULL, NULL));
        atomic_store(&x->connect_done, true);
}

/* The server started with no descriptor to spare: its accepts fail
 * (counted, retried) and pc_tcp_connect() says -EMFILE; once descriptors
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
        assert_int_equal(pc_tcp_listen(rt, "127.0.0.1", 0, &echo_cb, NULL, NULL), -EMFILE);
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
        assert_int_equal(pc_tcp_listen(s.rt, "127.0.0.1", 0, &echo_cb, NULL, &l2), 0);
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
        assert_int_equal(pc_tcp_serve(s.rt, "127.0.0.1", 0, lazy_reader, NULL, &l), 0);
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
        assert_int_equal(pc_tcp_serve(s.rt, "127.0.0.1", 0, NULL, NULL, &l), -EINVAL);
        assert_int_equal(pc_tcp_serve(s.rt, "256.0.0.1", 0, fiber_echo, NULL, &l), -EINVAL);
        assert_int_equal(pc_conn_read(NULL, b, sizeof(b)), -EPERM);
        assert_int_equal(pc_conn_write(NULL, b, sizeof(b)), -EPERM);
        assert_int_equal(pc_tcp_listen(s.rt, "127.0.0.1", 0, &misuse_cb, NULL, &l), 0);
        s.port = pc_tcp_listener_port(l);
        srv_run(&s, misuse_client, &s);
        assert_int_equal(atomic_load(&misuse_read), -EINVAL);
        assert_int_equal(atomic_load(&misuse_write), -EINVAL);
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
        assert_int_equal(pc_tcp_listen(rt, "256.0.0.1", 0, &echo_cb, NULL, NULL), -EINVAL);
        assert_int_equal(pc_knet_stats(rt, 1, &st), -EINVAL);
        assert_int_equal(pc_knet_stats(rt, 0, &st), 0);
        assert_int_equal(st.accepted, 0);
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_linger),
                cmocka_unit_test(test_udp_endpoint),
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
                cmocka_unit_test(test_slow_reader),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&fibers_single),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&single_recv),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&no_defer),
                cmocka_unit_test_prestate(test_slow_reader, (void *)&efd_sleep),
                cmocka_unit_test(test_resets),
                cmocka_unit_test_prestate(test_resets, (void *)&fibers_only),
                cmocka_unit_test_prestate(test_resets, (void *)&fibers_elastic),
                cmocka_unit_test(test_fiber_stop),
                cmocka_unit_test_prestate(test_fiber_stop, (void *)&single_recv),
                cmocka_unit_test(test_fiber_errors),
                cmocka_unit_test(test_fiber_lazy_reader),
                cmocka_unit_test_prestate(test_fiber_lazy_reader, (void *)&single_recv),
                cmocka_unit_test(test_conn_limit),
                cmocka_unit_test(test_connect),
                cmocka_unit_test(test_udp_echo),
                cmocka_unit_test(test_writable),
                cmocka_unit_test(test_send_pieces),
                cmocka_unit_test_prestate(test_send_pieces, (void *)&single_recv),
                cmocka_unit_test_prestate(test_writable, (void *)&single_recv),
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
