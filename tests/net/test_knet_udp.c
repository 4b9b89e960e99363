/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's UDP on loopback: pc_kudp and the backend-neutral
 * endpoint (pc_net.h) echo in lock step.
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
        assert_int_equal(pc_udp_ep_bind_kernel(&ep, s.rt, "127.0.0.1", 0, ep_echo, &ep), 0);
        assert_int_equal(pc_udp_ep_bind_kernel(&unbound, s.rt, "x", 0, ep_echo, NULL), -EINVAL);
        assert_int_equal(pc_udp_ep_bind_kernel(&unbound, s.rt, "127.0.0.1", 0, NULL, NULL), -EINVAL);
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_udp_endpoint),
                cmocka_unit_test(test_udp_echo),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
