/* SPDX-License-Identifier: MIT */
/*
 * The service API's connection calls on the kernel backend: each call's
 * errors (-EINVAL, -EXDEV off the connection's worker, -EPIPE after our
 * close, -EPERM off-fiber), timeouts in the fiber and callback forms, and
 * send_ref's done (test_kdrain.c: listener close, drain, IPv6). Clients
 * are plain sockets in a thread of the test (kconn_harness.h).
 */
#include "kconn_harness.h"

/* ---- errors ----------------------------------------------------------------- */

static void test_null_and_off_fiber(void **state)
{
        struct pc_tcp_listener_stats st;
        struct sockaddr_storage ss;
        struct iovec v = {.iov_base = "x", .iov_len = 1};
        char b[4];

        (void)state;
        assert_int_equal(pc_conn_sendv(NULL, &v, 1), -EINVAL);
        assert_int_equal(pc_conn_send_ref(NULL, b, 1, (pc_conn_ref_fn)free, NULL), -EINVAL);
        assert_int_equal(pc_conn_shutdown(NULL), -EINVAL);
        assert_int_equal(pc_conn_abort(NULL), -EINVAL);
        assert_int_equal(pc_conn_set_timeout(NULL, 1), -EINVAL);
        assert_int_equal(pc_conn_set_write_timeout(NULL, 1), -EINVAL);
        assert_int_equal(pc_conn_peer(NULL, &ss), -EINVAL);
        assert_int_equal(pc_conn_local(NULL, &ss), -EINVAL);
        assert_int_equal(pc_conn_set_nodelay(NULL, true), -EINVAL);
        assert_int_equal(pc_conn_set_keepalive(NULL, 1, 1, 1), -EINVAL);
        assert_int_equal(pc_tcp_listener_close(NULL), -EINVAL);
        assert_int_equal(pc_tcp_listener_set_limit(NULL, 1), -EINVAL);
        assert_int_equal(pc_tcp_listener_stats(NULL, &st), -EINVAL);
        /* Off a fiber, -EPERM comes first, whatever the connection. */
        assert_int_equal(pc_conn_read(NULL, b, sizeof(b)), -EPERM);
        assert_int_equal(pc_conn_write(NULL, b, 1), -EPERM);
        assert_int_equal(pc_conn_writev(NULL, &v, 1), -EPERM);
}

/* Calls on @c from the worker that does not own it. */
static void other_worker(void *arg)
{
        struct pc_conn *c = arg;
        struct sockaddr_storage ss;
        struct iovec v[2] = {{.iov_base = "a", .iov_len = 1}, {.iov_base = "b", .iov_len = 1}};

        REC(10, pc_conn_shutdown(c));
        REC(11, pc_conn_abort(c));
        REC(12, pc_conn_set_timeout(c, MS));
        REC(13, pc_conn_set_write_timeout(c, MS));
        REC(14, pc_conn_set_nodelay(c, true));
        REC(15, pc_conn_set_keepalive(c, 1, 1, 1));
        REC(16, pc_conn_sendv(c, v, 2));
        REC(17, pc_conn_send_ref(c, "r", 1, (pc_conn_ref_fn)free, NULL));
        REC(18, pc_conn_peer(c, &ss)); /* allowed anywhere while open */
        REC(19, ss.ss_family);
        REC(20, 1); /* done: the owner may close */
}

static void ref_count(void *arg)
{
        atomic_fetch_add((_Atomic unsigned *)arg, 1);
}

static _Atomic unsigned refs_done;

static void e_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct iovec v[2] = {{.iov_base = NULL, .iov_len = 1}, {.iov_base = "b", .iov_len = 1}};
        const struct pc_spawn_opts o = {
                .affinity = PC_STICKY, .place = PC_SPAWN_WORKER,
                .worker = 1 - pc_conn_worker(c)};

        (void)arg;
        if (len == 0 || ((const char *)data)[0] != 'x') {
                if (len && ((const char *)data)[0] == 'y') {
                        /* The client sent 'y' after other_worker's last
                         * record; this load orders its calls on @c before
                         * our close for ThreadSanitizer, which does not see
                         * the socket between them. */
                        EXPECT(atomic_load(&rec[20]) == 1);
                        /* After our close: -EPIPE, and no done for a refused
                         * reference. The callback's reference keeps @c. */
                        REC(30, pc_conn_close(c));
                        REC(31, pc_conn_set_timeout(c, MS));
                        REC(32, pc_conn_shutdown(c));
                        REC(33, pc_conn_set_nodelay(c, false));
                        REC(34, pc_conn_set_keepalive(c, 1, 1, 1));
                        REC(35, pc_conn_send(c, "z", 1));
                        REC(36, pc_conn_sendv(c, v + 1, 1));
                        REC(37, pc_conn_send_ref(c, "z", 1, ref_count, &refs_done));
                        REC(38, pc_conn_close(c)); /* idempotent */
                }
                return;
        }
        REC(1, pc_conn_sendv(c, v, -1));
        REC(2, pc_conn_sendv(c, v, 2)); /* NULL base with a length */
        REC(3, pc_conn_sendv(c, v + 1, IOV_MAX + 1));
        REC(4, pc_conn_send_ref(c, "r", 1, NULL, NULL));
        REC(5, pc_conn_set_keepalive(c, 10, 0, 3));
        REC(6, pc_conn_set_keepalive(c, 100000, 1, 1));
        REC(7, pc_conn_set_keepalive(c, 10, 5, 3));
        REC(8, pc_conn_set_keepalive(c, 0, 0, 0));
        REC(9, pc_spawn_ex(other_worker, c, &o) >= 0);
}

static const struct pc_tcp_callbacks e_cb = {.on_data = e_data};

static void *errors_client(void *arg)
{
        int fd = cli_connect("127.0.0.1", pc_tcp_listener_port(L), 0);

        (void)arg;
        EXPECT(fd >= 0);
        EXPECT(send(fd, "x", 1, 0) == 1);
        while (atomic_load(&rec[20]) != 1)
                usleep(1000);
        EXPECT(send(fd, "y", 1, 0) == 1);
        EXPECT(cli_end(fd) == 0); /* our close was graceful */
        close(fd);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_conn_errors(void **state)
{
        (void)state;
        mk();
        assert_int_equal(pc_tcp_listen_kernel(RT, "127.0.0.1", 0, &e_cb, NULL, &L), 0);
        run_client(errors_client);
        no_bad();
        for (int i = 1; i <= 6; i++)
                assert_int_equal(rec[i], -EINVAL);
        assert_int_equal(rec[7], 0);
        assert_int_equal(rec[8], 0);
        assert_int_equal(rec[9], 1);
        for (int i = 10; i <= 17; i++)
                assert_int_equal(rec[i], -EXDEV);
        assert_int_equal(rec[18], 0);
        assert_int_equal(rec[19], AF_INET);
        assert_int_equal(rec[30], 0);
        for (int i = 31; i <= 37; i++)
                assert_int_equal(rec[i], -EPIPE);
        assert_int_equal(rec[38], 0);
        assert_int_equal(atomic_load(&refs_done), 0);
        pc_runtime_destroy(RT);
}

/* ---- timeouts, fibers ------------------------------------------------------- */

/* A fiber of the other worker: reads and writes of @c are refused. */
static void *cross_fiber(void *arg)
{
        struct iovec v = {.iov_base = "a", .iov_len = 1};
        char b[4];

        REC(40, pc_conn_read(arg, b, sizeof(b)));
        REC(41, pc_conn_writev(arg, &v, 1));
        return NULL;
}

static void cross_task(void *arg)
{
        pc_fiber_spawn_flags(cross_fiber, arg, PC_FIBER_STICKY, NULL);
}

static void t_handler(struct pc_conn *c, void *arg)
{
        const struct pc_spawn_opts o = {
                .affinity = PC_STICKY, .place = PC_SPAWN_WORKER,
                .worker = 1 - pc_conn_worker(c)};
        struct iovec neg = {.iov_base = "a", .iov_len = 1};
        char b[64];
        ssize_t n;

        (void)arg;
        REC(42, pc_conn_read(c, NULL, 1));
        REC(43, pc_conn_writev(c, &neg, -1));
        pc_spawn_ex(cross_task, c, &o);
        while (atomic_load(&rec[41]) == LONG_MIN)
                pc_fiber_sleep_ns(MS);
        /* A read timeout, then the connection is still usable. */
        REC(44, pc_conn_set_timeout(c, 30 * MS));
        REC(45, pc_conn_read(c, b, sizeof(b)));
        pc_conn_write(c, "T", 1);
        n = pc_conn_read(c, b, sizeof(b));
        REC(46, n > 0 ? b[0] : n);
        /* Turned off: a read that waits longer returns the byte. */
        pc_conn_set_timeout(c, 30 * MS);
        REC(47, pc_conn_set_timeout(c, 0));
        pc_conn_write(c, "U", 1);
        n = pc_conn_read(c, b, sizeof(b));
        REC(48, n > 0 ? b[0] : n);
        /* The peer stops reading: a write that waits for room times out. */
        REC(49, pc_conn_set_write_timeout(c, 30 * MS));
        pc_conn_write(c, "W", 1);
        do {
                static char big[256 << 10];

                n = pc_conn_write(c, big, sizeof(big));
        } while (n > 0);
        REC(50, n);
        REC(51, pc_conn_buffered(c) <= (1u << 20));
        REC(52, pc_conn_abort(c));
        REC(53, pc_conn_read(c, b, sizeof(b)));
        REC(54, pc_conn_set_timeout(c, MS));
        REC(55, pc_conn_abort(c)); /* idempotent */
}

static void *timeouts_client(void *arg)
{
        int fd = cli_connect("127.0.0.1", pc_tcp_listener_port(L), 4096);

        (void)arg;
        EXPECT(fd >= 0);
        EXPECT(cli_byte(fd) == 'T');
        EXPECT(send(fd, "a", 1, 0) == 1);
        EXPECT(cli_byte(fd) == 'U');
        usleep(200000); /* past the timeout that was turned off */
        EXPECT(send(fd, "b", 1, 0) == 1);
        EXPECT(cli_byte(fd) == 'W');
        /* ... and read no more: the abort resets. */
        while (atomic_load(&rec[55]) == LONG_MIN)
                usleep(1000);
        EXPECT(cli_end(fd) == -ECONNRESET);
        close(fd);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_fiber_timeouts(void **state)
{
        (void)state;
        mk();
        assert_int_equal(pc_tcp_serve_kernel(RT, "127.0.0.1", 0, t_handler, NULL, &L), 0);
        run_client(timeouts_client);
        no_bad();
        assert_int_equal(rec[40], -EXDEV);
        assert_int_equal(rec[41], -EXDEV);
        assert_int_equal(rec[42], -EINVAL);
        assert_int_equal(rec[43], -EINVAL);
        assert_int_equal(rec[44], 0);
        assert_int_equal(rec[45], -ETIMEDOUT);
        assert_int_equal(rec[46], 'a');
        assert_int_equal(rec[47], 0);
        assert_int_equal(rec[48], 'b');
        assert_int_equal(rec[49], 0);
        assert_int_equal(rec[50], -ETIMEDOUT);
        assert_int_equal(rec[51], 1);
        assert_int_equal(rec[52], 0);
        assert_int_equal(rec[53], -ECONNABORTED);
        assert_int_equal(rec[54], -EPIPE);
        assert_int_equal(rec[55], 0);
        pc_runtime_destroy(RT);
}

/* ---- timeouts and references, callbacks ---------------------------------------- */

static char blob[300 << 10];
static _Atomic unsigned order_n;
static char order[16];

static void ref_logged(void *arg)
{
        order[atomic_fetch_add(&order_n, 1) % 15] = (char)(uintptr_t)arg;
}

static void cb_pump(struct pc_conn *c)
{
        while (pc_conn_send(c, blob, sizeof(blob)) == 0)
                ;
}

static void cb_accept(struct pc_conn *c, void *arg)
{
        (void)arg;
        pc_conn_set_data(c, NULL);
}

/* The first byte picks: 'i' idle timeout, 'w' write timeout, 'r'
 * references then an abort. */
static void cb_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct iovec big[4];

        (void)arg;
        if (len == 0 || pc_conn_data(c))
                return;
        pc_conn_set_data(c, (void *)(uintptr_t)((const char *)data)[0]);
        switch (((const char *)data)[0]) {
        case 'i':
                REC(60, pc_conn_set_timeout(c, 30 * MS));
                break;
        case 'w':
                REC(61, pc_conn_set_write_timeout(c, 30 * MS));
                cb_pump(c);
                break;
        case 'r':
                for (int i = 0; i < 3; i++)
                        REC(62 + i, pc_conn_send_ref(c, blob, sizeof(blob), ref_logged,
                                                     (void *)(uintptr_t)('1' + i)));
                /* Over the cap: refused, no done; a gather likewise, whole. */
                REC(56, pc_conn_send_ref(c, blob, sizeof(blob), ref_logged, (void *)'X'));
                for (int i = 0; i < 4; i++)
                        big[i] = (struct iovec){.iov_base = blob, .iov_len = 100 << 10};
                REC(57, pc_conn_sendv(c, big, 4));
                REC(58, pc_conn_buffered(c));
                REC(59, pc_conn_abort(c));
                break;
        }
}

static void cb_writable(struct pc_conn *c, void *arg)
{
        (void)arg;
        if (pc_conn_data(c) == (void *)'w')
                cb_pump(c);
}

static void cb_close(struct pc_conn *c, int err, void *arg)
{
        char k = (char)(uintptr_t)pc_conn_data(c);

        (void)arg;
        if (k == 'i')
                REC(0, err);
        else if (k == 'w')
                REC(1, err);
        else if (k == 'r') {
                REC(2, err);
                ref_logged((void *)'C');
        }
}

static const struct pc_tcp_callbacks cbs = {
        .on_accept = cb_accept, .on_data = cb_data, .on_close = cb_close,
        .on_writable = cb_writable};

static void *cb_client(void *arg)
{
        uint16_t port = pc_tcp_listener_port(L);
        int i = cli_connect("127.0.0.1", port, 0), w = cli_connect("127.0.0.1", port, 4096),
            r = cli_connect("127.0.0.1", port, 4096);

        (void)arg;
        EXPECT(i >= 0 && w >= 0 && r >= 0);
        EXPECT(send(i, "i", 1, 0) == 1);
        EXPECT(send(w, "w", 1, 0) == 1);
        EXPECT(send(r, "r", 1, 0) == 1);
        EXPECT(cli_end(i) == -ECONNRESET);
        while (atomic_load(&rec[1]) == LONG_MIN || atomic_load(&rec[2]) == LONG_MIN)
                usleep(1000);
        close(i);
        close(w);
        close(r);
        pc_runtime_stop(RT);
        return NULL;
}

static void test_callback_timeouts_refs(void **state)
{
        (void)state;
        mk();
        assert_int_equal(pc_tcp_listen_kernel(RT, "127.0.0.1", 0, &cbs, NULL, &L), 0);
        run_client(cb_client);
        no_bad();
        assert_int_equal(rec[60], 0);
        assert_int_equal(rec[61], 0);
        assert_int_equal(rec[0], -ETIMEDOUT);
        assert_int_equal(rec[1], -ETIMEDOUT);
        assert_int_equal(rec[2], -ECONNABORTED);
        for (int i = 62; i <= 64; i++)
                assert_int_equal(rec[i], 0);
        assert_int_equal(rec[56], -ENOBUFS);
        assert_int_equal(rec[57], -ENOBUFS);
        assert_int_equal(rec[58], 3 * sizeof(blob));
        assert_int_equal(rec[59], 0);
        /* Every done, in order, before on_close; none for the refused one. */
        assert_int_equal(atomic_load(&order_n), 4);
        assert_memory_equal(order, "123C", 4);
        pc_runtime_destroy(RT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_null_and_off_fiber),
                cmocka_unit_test(test_conn_errors),
                cmocka_unit_test(test_fiber_timeouts),
                cmocka_unit_test(test_callback_timeouts_refs),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
