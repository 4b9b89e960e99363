/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend tests' harness (knet_harness.h): CHECK(), the echo
 * server and the clients' helpers, shared by tests/net/test_knet_*.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <liburing.h>

#include "knet_harness.h"

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

bool check_at(bool ok, const char *what, int line)
{
        int err = errno;

        if (!ok && atomic_fetch_add(&offthread.failed, 1) == 0)
                snprintf(offthread.first, sizeof(offthread.first),
                         "line %d: %s (errno then: %s)", line, what, strerror(err));
        return ok;
}

/* The test's thread, after every thread that may CHECK() was joined. */
void checks_pass(void)
{
        unsigned n = atomic_load(&offthread.failed);

        if (n)
                fail_msg("%u check(s) failed off the test's thread, the first at %s", n,
                         offthread.first);
}

void checks_reset(void)
{
        atomic_store(&offthread.failed, 0);
        offthread.first[0] = '\0';
}

/* ---- the server ------------------------------------------------------------ */

struct conn_rec {
        int worker; /* the worker that accepted it */
};

_Atomic uint64_t wrong_worker, send_errors, opens, closes_clean, closes_err;

void srv_accept(struct pc_conn *c, void *arg)
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

void srv_data(struct pc_conn *c, const void *data, size_t len, void *arg)
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

void srv_close(struct pc_conn *c, int err, void *arg)
{
        (void)arg;
        atomic_fetch_add(err ? &closes_err : &closes_clean, 1);
        free(pc_conn_data(c));
}

const struct pc_tcp_callbacks echo_cb = {
        .on_accept = srv_accept,
        .on_data = srv_data,
        .on_close = srv_close,
};

void reset_counts(void)
{
        wrong_worker = send_errors = opens = closes_clean = closes_err = 0;
}

static void noop_main(void *arg)
{
        (void)arg;
}

/* The same server blocking-style: a fiber per connection (pc_tcp_serve_kernel),
 * reading and writing; the counts are the handler's. */
_Atomic uint64_t fib_cancels, fib_shutdowns, fib_misuse;

void fiber_echo(struct pc_conn *c, void *arg)
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

void srv_create(struct srv *s, unsigned workers, const struct pc_knet_opts *o)
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
                assert_int_equal(pc_tcp_serve_kernel(s->rt, "127.0.0.1", 0, fiber_echo, NULL, &l), 0);
        else
                assert_int_equal(pc_tcp_listen_kernel(s->rt, "127.0.0.1", 0, &echo_cb, NULL, &l), 0);
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
void srv_run(struct srv *s, void *(*client)(void *), void *arg)
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
struct pc_knet_stats stats(struct pc_runtime *rt)
{
        struct pc_knet_stats st;

        assert_int_equal(pc_knet_stats(rt, -1, &st), 0);
        return st;
}

/* The same from a client thread: a failure is a CHECK() (and all zeros). */
struct pc_knet_stats client_stats(struct pc_runtime *rt)
{
        struct pc_knet_stats st;

        if (!CHECK(pc_knet_stats(rt, -1, &st) == 0))
                memset(&st, 0, sizeof(st));
        return st;
}

/* Wait until @pred holds (polling the stats), up to 20 s. Client threads:
 * the caller CHECK()s the result. */
bool wait_for(struct pc_runtime *rt, bool (*pred)(const struct pc_knet_stats *, void *),
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
int tcp_client(uint16_t port, bool nonblock)
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

uint8_t pattern(unsigned k, size_t i)
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
unsigned recv_flags(void **state)
{
        return *state ? *(const unsigned *)*state : 0;
}

const unsigned single_recv = PC_KNET_SINGLE_RECV;
const unsigned no_defer = PC_KNET_NO_DEFER;
const unsigned efd_sleep = PC_KNET_EFD_SLEEP;
const unsigned fibers_only = T_FIBERS;
const unsigned fibers_single = T_FIBERS | PC_KNET_SINGLE_RECV;
const unsigned fibers_elastic = T_FIBERS | T_ELASTIC;

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
void check_recv_mode(const struct pc_knet_stats *st, unsigned flags)
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

void raise_nofile(void)
{
        struct rlimit r;

        if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
                r.rlim_cur = r.rlim_max;
                setrlimit(RLIMIT_NOFILE, &r);
        }
}

/* Send pattern @k on non-blocking @fd from byte *@sent on, up to @total,
 * until the server says (@stopped, from its stats) that it stopped
 * reading and the socket takes no more: a full socket alone may be a
 * server that has not run yet, so no span of time counts as a stall.
 * Client threads. Returns whether it stalled so (false: all @total went,
 * or a 60 s guard against a server that never stops ran out). */
bool send_until_stopped(struct pc_runtime *rt, int fd, unsigned k, size_t *sent,
                        size_t total, bool (*stopped)(const struct pc_knet_stats *, void *))
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

void echo_once(uint16_t port, const char *msg, bool *ok)
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

void udp_echo(struct pc_kudp *u, const struct pc_udp_peer *from, uint16_t dport,
              const void *data, size_t len, void *arg)
{
        (void)arg;
        CHECK(dport == pc_kudp_port(u));
        CHECK(pc_kudp_send(u, from, dport, data, len) == 0);
}
