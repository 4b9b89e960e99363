/* SPDX-License-Identifier: MIT */
/*
 * Listeners of the service API on the DPDK backend, both ends percore's
 * TCP in this process (dtcp_pair.h): the per-listener limit (a connection
 * over it is reset with nothing sent, and counted refused), closing a
 * listener from a worker while the run goes on and from the creating
 * thread before it (a later SYN is answered with a reset, open
 * connections go on), and the counters.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "dtcp_pair.h"
#include "pc_test.h"

#define PORT_LIMIT 8100
#define PORT_SHUT 8101
#define LIMIT 2
#define CLIENTS 4

static struct pc_tcp_listener *lim_l, *shut_l;

/* ---- the server: greets each connection, echoes ------------------------------ */

static _Atomic unsigned srv_open, srv_closed;

static void s_accept(struct pc_conn *c, void *arg)
{
        (void)arg;
        atomic_fetch_add(&srv_open, 1);
        PAIR_CHECK(pc_conn_send(c, "hi", 2) == 0);
}

static void s_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len)
                PAIR_CHECK(pc_conn_send(c, data, len) == 0);
}

static void s_close(struct pc_conn *c, int err, void *arg)
{
        (void)c;
        (void)arg;
        PAIR_CHECK(err == 0);
        atomic_fetch_add(&srv_closed, 1);
}

static const struct pc_tcp_callbacks s_cb = {
        .on_accept = s_accept,
        .on_data = s_data,
        .on_close = s_close,
};

/* ---- clients ------------------------------------------------------------------- */

struct cli {
        struct pc_conn *c;
        uint16_t lport;
        unsigned got;     /* bytes received */
        bool greeted, pinged, closed;
        int err;
};

static struct cli cl[CLIENTS], late, early;
static _Atomic unsigned admitted, refused, finished;
/* Data B sent on each client's flow, by its port. */
static _Atomic unsigned b_data[65536];
static _Atomic unsigned b_rst[65536];

static bool watch(bool from_a, uint16_t sport, uint16_t dport, uint8_t flags, size_t len)
{
        (void)sport;
        if (from_a)
                return false;
        atomic_fetch_add(&b_data[dport], (unsigned)len);
        if (flags & PC_TCP_RST)
                atomic_fetch_add(&b_rst[dport], 1);
        return false;
}

static void c_accept(struct pc_conn *c, void *arg)
{
        struct cli *k = arg;
        struct sockaddr_storage ss;

        PAIR_CHECK(pc_conn_local(c, &ss) == 0);
        k->lport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void c_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct cli *k = arg;

        (void)data;
        PAIR_CHECK(len > 0);
        k->got += (unsigned)len;
        if (!k->greeted && k->got >= 2) {
                k->greeted = true;
                atomic_fetch_add(&admitted, 1);
        } else if (k->pinged && k->got == 2 + 4) {
                PAIR_CHECK(pc_conn_close(c) == 0);
        }
}

static void c_close(struct pc_conn *c, int err, void *arg)
{
        struct cli *k = arg;

        (void)c;
        k->closed = true;
        k->err = err;
        if (err == -ECONNRESET && k->got == 0)
                atomic_fetch_add(&refused, 1);
        atomic_fetch_add(&finished, 1);
}

static const struct pc_tcp_callbacks c_cb = {
        .on_accept = c_accept,
        .on_data = c_data,
        .on_close = c_close,
};

/* ---- the run -------------------------------------------------------------------- */

static _Atomic int phase;

static void connect_late(void *arg)
{
        (void)arg;
        /* After the close reached every engine: this SYN meets none. */
        PAIR_CHECK(pc_tcp_connect_dpdk(pair_a, PAIR_IP_B_STR, PORT_LIMIT, &c_cb, &late,
                                       &late.c) == 0);
}

/* On worker 1: close the listener while it has open connections, then
 * ping those (on their workers) and connect once more. */
static void close_from_worker(void *arg)
{
        struct pc_tcp_listener_stats st;

        (void)arg;
        PAIR_CHECK(pc_tcp_listener_stats(lim_l, &st) == 0);
        PAIR_CHECK(st.accepted == LIMIT && st.refused == CLIENTS - LIMIT && st.open == LIMIT);
        PAIR_CHECK(pc_tcp_listener_close(lim_l) == 0);
        PAIR_CHECK(pc_tcp_listener_close(lim_l) == 0);
        /* Each worker takes its engine off in a task this close queued:
         * worker 0 runs this one after it. */
        PAIR_CHECK(pc_spawn_on(0, connect_late, NULL) == 0);
        atomic_store(&phase, 2);
}

static void ping(void *arg)
{
        struct cli *k = arg;

        k->pinged = true;
        PAIR_CHECK(pc_conn_send(k->c, "ping", 4) == 0);
}

static void connect_one(void *arg)
{
        struct cli *k = arg;

        PAIR_CHECK(pc_tcp_connect_dpdk(pair_a, PAIR_IP_B_STR, PORT_LIMIT, &c_cb, k, &k->c) == 0);
}

static void limit_main(void *arg)
{
        (void)arg;
        pair_watch = watch;
        for (unsigned i = 0; i < CLIENTS; i++)
                PAIR_CHECK(pc_spawn_on(i % PAIR_WORKERS, connect_one, &cl[i]) == 0);
        /* The listener closed before the run refuses at once. */
        PAIR_CHECK(pc_tcp_connect_dpdk(pair_a, PAIR_IP_B_STR, PORT_SHUT, &c_cb, &early,
                                       &early.c) == 0);
        atomic_store(&phase, 1);
}

static bool limit_done(void)
{
        if (atomic_load(&phase) == 1 && atomic_load(&admitted) == LIMIT &&
            atomic_load(&refused) == CLIENTS - LIMIT && early.closed) {
                atomic_store(&phase, 0);
                PAIR_CHECK(pc_spawn_on(1, close_from_worker, NULL) == 0);
        }
        if (atomic_load(&phase) == 2 && late.closed) {
                atomic_store(&phase, 3);
                for (unsigned i = 0; i < CLIENTS; i++)
                        if (cl[i].greeted)
                                PAIR_CHECK(pc_spawn_on(pc_conn_worker(cl[i].c), ping, &cl[i]) ==
                                           0);
        }
        return atomic_load(&phase) == 3 && atomic_load(&finished) == CLIENTS + 2 &&
               atomic_load(&srv_closed) == LIMIT;
}

static void test_limit_and_close(void **state)
{
        struct pc_tcp_listener_stats st;

        (void)state;
        assert_true(pair_run(limit_main, limit_done, 60));
        pair_watch = NULL;
        assert_int_equal(atomic_load(&pair_failures), 0);
        /* Over the limit: accepted by the engine, then reset, nothing sent. */
        for (unsigned i = 0; i < CLIENTS; i++) {
                assert_true(cl[i].closed);
                if (cl[i].greeted) {
                        assert_int_equal(cl[i].err, 0);
                        assert_int_equal(cl[i].got, 2 + 4);
                } else {
                        assert_int_equal(cl[i].err, -ECONNRESET);
                        assert_int_equal(cl[i].got, 0);
                        assert_int_equal(atomic_load(&b_data[cl[i].lport]), 0);
                        assert_int_equal(atomic_load(&b_rst[cl[i].lport]), 1);
                }
        }
        /* Closed listeners answer the SYN with a reset. */
        assert_int_equal(late.err, -ECONNREFUSED);
        assert_int_equal(early.err, -ECONNREFUSED);
        assert_int_equal(atomic_load(&srv_open), LIMIT);
        assert_int_equal(pc_tcp_listener_stats(lim_l, &st), 0);
        assert_int_equal(st.accepted, LIMIT);
        assert_int_equal(st.refused, CLIENTS - LIMIT);
        assert_int_equal(st.open, 0);
        assert_int_equal(pc_tcp_listener_stats(shut_l, &st), 0);
        assert_int_equal(st.accepted + st.refused + st.open, 0);
        assert_int_equal(pc_tcp_listener_stats(NULL, &st), -EINVAL);
        assert_int_equal(pc_tcp_listener_set_limit(NULL, 1), -EINVAL);
        assert_int_equal(pc_tcp_listener_close(shut_l), 0);
        assert_int_equal(pc_tcp_listener_port(shut_l), PORT_SHUT);
}

static int setup(void **state)
{
        (void)state;
        if (pair_setup("pc_test_dtcp_listen"))
                return -1;
        if (pc_tcp_listen_dpdk(pair_b, PORT_LIMIT, &s_cb, NULL, &lim_l) ||
            pc_tcp_listener_set_limit(lim_l, LIMIT) ||
            pc_tcp_listen_dpdk(pair_b, PORT_SHUT, &s_cb, NULL, &shut_l))
                return -1;
        /* Before the run, from the creating thread. */
        return pc_tcp_listener_close(shut_l);
}

static int teardown(void **state)
{
        (void)state;
        pair_teardown();
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_limit_and_close),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
