/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's listeners and graceful stop: pc_tcp_listener_close()
 * before and during a run, pc_runtime_drain() ending early once the open
 * connections end and at its deadline when they do not, and IPv6 for TCP
 * (listen, connect, addresses) and UDP (IPv4 peers of a dual-stack socket
 * included). Harness: kconn_harness.h.
 */
#include "kconn_harness.h"

/* ---- listener close ---------------------------------------------------------- */

static struct pc_tcp_listener *L2;

static void echo_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len)
                pc_conn_send(c, data, len);
}

static const struct pc_tcp_callbacks echo_cb = {.on_data = echo_data};

static bool cli_echo(int fd, char ch)
{
        return send(fd, &ch, 1, 0) == 1 && cli_byte(fd) == ch;
}

static void close_task(void *arg)
{
        REC(1, pc_tcp_listener_close(arg));
        REC(2, pc_tcp_listener_close(arg)); /* idempotent */
}

static void *lclose_client(void *arg)
{
        struct pc_tcp_listener_stats st;
        int a = cli_connect("127.0.0.1", pc_tcp_listener_port(L), 0);

        (void)arg;
        EXPECT(a >= 0 && cli_echo(a, 'a'));
        /* Closed from a worker while the run goes on. */
        EXPECT(pc_runtime_inject(RT, close_task, L) == 0);
        EXPECT(cli_refused(pc_tcp_listener_port(L)));
        EXPECT(cli_echo(a, 'b')); /* open connections go on */
        EXPECT(pc_tcp_listener_stats(L, &st) == 0 && st.accepted == 1 && st.open == 1);
        close(a);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_listener_close(void **state)
{
        uint16_t p2;

        (void)state;
        mk();
        assert_int_equal(pc_tcp_listen_kernel(RT, "127.0.0.1", 0, &echo_cb, NULL, &L), 0);
        assert_int_equal(pc_tcp_listen_kernel(RT, "127.0.0.1", 0, &echo_cb, NULL, &L2), 0);
        /* Before the run: closed at once, its port still known. */
        p2 = pc_tcp_listener_port(L2);
        assert_int_equal(pc_tcp_listener_close(L2), 0);
        assert_int_equal(pc_tcp_listener_close(L2), 0);
        assert_int_equal(pc_tcp_listener_port(L2), p2);
        assert_int_equal(cli_connect("127.0.0.1", p2, 0), -ECONNREFUSED);
        run_client(lclose_client);
        no_bad();
        assert_int_equal(rec[1], 0);
        assert_int_equal(rec[2], 0);
        /* And in the next run it stays closed. */
        assert_int_equal(cli_connect("127.0.0.1", p2, 0), -ECONNREFUSED);
        pc_runtime_destroy(RT);
}

/* ---- drain ----------------------------------------------------------------- */

/* Echo until the read fails or ends: its last result in rec[5]. */
static void drain_handler(struct pc_conn *c, void *arg)
{
        char b[256];
        ssize_t n;

        (void)arg;
        while ((n = pc_conn_read(c, b, sizeof(b))) > 0)
                pc_conn_write(c, b, (size_t)n);
        REC(5, n);
}

static void *drain_early_client(void *arg)
{
        int a = cli_connect("127.0.0.1", pc_tcp_listener_port(L), 0);

        (void)arg;
        EXPECT(a >= 0 && cli_echo(a, 'a'));
        EXPECT(pc_runtime_drain(RT, LONG_NS) == 0);
        EXPECT(pc_runtime_drain(RT, LONG_NS) == -ESHUTDOWN);
        EXPECT(pc_runtime_draining(RT));
        EXPECT(cli_refused(pc_tcp_listener_port(L)));
        EXPECT(!pc_runtime_stopping(RT)); /* one connection is left */
        EXPECT(cli_echo(a, 'b'));
        close(a); /* the last one: the run ends */
        return NULL;
}

static void test_drain_early(void **state)
{
        uint64_t t0;

        (void)state;
        mk();
        assert_int_equal(pc_tcp_serve_kernel(RT, "127.0.0.1", 0, drain_handler, NULL, &L), 0);
        t0 = pc_now_ns();
        run_client(drain_early_client);
        no_bad();
        assert_true(pc_now_ns() - t0 < LONG_NS);
        assert_int_equal(rec[5], 0); /* the peer's EOF, not a cancel */
        pc_runtime_destroy(RT);
}

#define DEADLINE_NS (200 * MS)

static void *drain_deadline_client(void *arg)
{
        int a = cli_connect("127.0.0.1", pc_tcp_listener_port(L), 0);

        (void)arg;
        EXPECT(a >= 0 && cli_echo(a, 'a'));
        EXPECT(pc_runtime_drain(RT, DEADLINE_NS) == 0);
        while (atomic_load(&rec[5]) == LONG_MIN) /* held open until the end */
                usleep(1000);
        close(a);
        return NULL;
}

static void test_drain_deadline(void **state)
{
        uint64_t t0;

        (void)state;
        mk();
        assert_int_equal(pc_tcp_serve_kernel(RT, "127.0.0.1", 0, drain_handler, NULL, &L), 0);
        t0 = pc_now_ns();
        run_client(drain_deadline_client);
        no_bad();
        assert_true(pc_now_ns() - t0 >= DEADLINE_NS);
        assert_int_equal(rec[5], -ECANCELED);
        pc_runtime_destroy(RT);
}

/* ---- IPv6 ---------------------------------------------------------------- */

static struct pc_udp_ep u6, u4, udual;
static const uint8_t loop6[16] = {[15] = 1};

static void c6_accept(struct pc_conn *c, void *arg)
{
        struct sockaddr_storage p, l;

        (void)arg;
        if (pc_conn_peer(c, &p) == 0 && pc_conn_local(c, &l) == 0) {
                REC(10, p.ss_family);
                REC(11, ntohs(((struct sockaddr_in6 *)&p)->sin6_port));
                REC(12, l.ss_family);
                REC(13, memcmp(&((struct sockaddr_in6 *)&p)->sin6_addr, loop6, 16));
        }
        pc_conn_send(c, "hi", 2);
}

static void c6_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len) {
                REC(14, len == 2 && memcmp(data, "hi", 2) == 0);
                pc_conn_close(c);
        }
}

static void c6_close(struct pc_conn *c, int err, void *arg)
{
        (void)c;
        (void)arg;
        REC(15, err);
}

static const struct pc_tcp_callbacks c6_cb = {
        .on_accept = c6_accept, .on_data = c6_data, .on_close = c6_close};

static void s6_accept(struct pc_conn *c, void *arg)
{
        struct sockaddr_storage p;

        (void)arg;
        REC(16, pc_conn_peer(c, &p) == 0 ? p.ss_family : -1);
}

static const struct pc_tcp_callbacks s6_cb = {.on_accept = s6_accept, .on_data = echo_data};

static void udp_echo(struct pc_udp_ep *ep, const struct pc_udp_peer *from, const void *data,
                     size_t len, void *arg)
{
        (void)arg;
        if (ep == &u6)
                REC(20, from->family == AF_INET6 && memcmp(from->addr6, loop6, 16) == 0);
        else
                REC(21, from->family == AF_INET && from->addr == INADDR_LOOPBACK);
        pc_udp_ep_send(ep, from, data, len);
}

static void v6_main(void *arg)
{
        struct pc_udp_peer p6 = {.family = AF_INET6, .port = 9, .addr6 = {[15] = 1}};

        (void)arg;
        REC(22, pc_udp_ep_send(&u4, &p6, "x", 1));
        REC(23, pc_tcp_connect_kernel("::1", pc_tcp_listener_port(L), &c6_cb, NULL, NULL));
}

static bool udp_round(int fam, const char *addr, uint16_t port)
{
        struct sockaddr_storage ss = {0};
        struct timeval tv = {.tv_sec = 30};
        socklen_t sl = fam == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        char b[16];
        int fd = socket(fam, SOCK_DGRAM, 0);
        bool ok;

        if (fam == AF_INET6) {
                ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
                ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
                inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr);
        } else {
                ((struct sockaddr_in *)&ss)->sin_family = AF_INET;
                ((struct sockaddr_in *)&ss)->sin_port = htons(port);
                inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr);
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ok = sendto(fd, "dgram", 5, 0, (struct sockaddr *)&ss, sl) == 5 &&
             recv(fd, b, sizeof(b), 0) == 5 && memcmp(b, "dgram", 5) == 0;
        close(fd);
        return ok;
}

static void *v6_client(void *arg)
{
        (void)arg;
        EXPECT(udp_round(AF_INET6, "::1", pc_udp_ep_port(&u6)));
        /* An IPv4 peer of a dual-stack socket is seen, and answered, as
         * IPv4. */
        EXPECT(udp_round(AF_INET, "127.0.0.1", pc_udp_ep_port(&udual)));
        while (atomic_load(&rec[15]) == LONG_MIN)
                usleep(1000);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_ipv6(void **state)
{
        pthread_t t;

        (void)state;
        mk();
        assert_int_equal(pc_tcp_listen_kernel(RT, "::1", 0, &s6_cb, NULL, &L), 0);
        assert_int_equal(pc_udp_ep_bind_kernel(&u6, RT, "::1", 0, udp_echo, NULL), 0);
        assert_int_equal(pc_udp_ep_bind_kernel(&u4, RT, "127.0.0.1", 0, udp_echo, NULL), 0);
        assert_int_equal(pc_udp_ep_bind_kernel(&udual, RT, "::", 0, udp_echo, NULL), 0);
        assert_int_equal(pc_tcp_listen_kernel(RT, "1.2.3", 0, &s6_cb, NULL, &L2), -EINVAL);
        assert_int_equal(pthread_create(&t, NULL, v6_client, NULL), 0);
        assert_int_equal(pc_runtime_run(RT, v6_main, NULL), 0);
        pthread_join(t, NULL);
        no_bad();
        assert_int_equal(rec[10], AF_INET6);
        assert_int_equal(rec[11], pc_tcp_listener_port(L));
        assert_int_equal(rec[12], AF_INET6);
        assert_int_equal(rec[13], 0);
        assert_int_equal(rec[14], 1);
        assert_int_equal(rec[15], 0);
        assert_int_equal(rec[16], AF_INET6);
        assert_int_equal(rec[20], 1);
        assert_int_equal(rec[21], 1);
        assert_int_equal(rec[22], -EAFNOSUPPORT);
        assert_int_equal(rec[23], 0);
        pc_runtime_destroy(RT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_listener_close),
                cmocka_unit_test(test_drain_early),
                cmocka_unit_test(test_drain_deadline),
                cmocka_unit_test(test_ipv6),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
