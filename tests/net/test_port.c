/* SPDX-License-Identifier: MIT */
/*
 * Ports over net_null and net_ring with 4 workers (unpinned): every worker
 * owns its queue of every port; packets are counted in and out exactly;
 * the stack drops and counts malformed frames of every kind and answers
 * ARP, ICMP echo and UDP over a looped-back ring; an ARP entry one worker
 * learned serves the others; the telemetry commands
 * answer on DPDK's socket.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "pc_test.h"
#include "pc_dpdk.h"

#define NW 4
#define PREFIX "pc_test_port"
#define EAL                                                                                     \
        "--no-huge --no-pci -m 256 --file-prefix " PREFIX " --log-level=lib.eal:warning "     \
        "--vdev net_null0 --vdev net_null1 --vdev net_ring0 --vdev net_ring1"
#define MY_IP 0x0a000001u
#define PEER_IP 0x0a000002u
#define UDP_PORT 7777

struct per_worker {
        uint64_t null0, null1, fwd, ring, foreign;
        char pad[24];
};

static struct pc_runtime *RT;
static struct pc_port *N0, *N1, *R0, *R1;
static struct per_worker cnt[NW];
static _Atomic unsigned failures;
static _Atomic uint64_t udp_got;
static struct pc_timer watch;
static uint64_t deadline;
static bool (*done_fn)(void);

static unsigned me(void)
{
        int w = pc_worker_id();
        if (w < 0 || w >= NW || rte_lcore_id() != (unsigned)w) {
                atomic_fetch_add(&failures, 1);
                return 0;
        }
        return (unsigned)w;
}

/* null0 -> null1, null1 -> freed: two ports on every worker. */
static void rx_null0(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        unsigned w = me();

        (void)p;
        (void)arg;
        cnt[w].null0 += n;
        for (uint16_t i = 0; i < n; i++)
                pc_port_tx(N1, pkts[i]);
        cnt[w].fwd += n;
}

static void rx_null1(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        (void)p;
        (void)arg;
        cnt[me()].null1 += n;
        rte_pktmbuf_free_bulk(pkts, n);
}

/* ring0 loops TX queue i to RX queue i: each packet must come back to the
 * worker that sent it. */
static void rx_ring0(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        unsigned w = me();

        (void)p;
        (void)arg;
        for (uint16_t i = 0; i < n; i++) {
                if (*rte_pktmbuf_mtod(pkts[i], uint32_t *) != w)
                        cnt[w].foreign++;
                cnt[w].ring++;
        }
        rte_pktmbuf_free_bulk(pkts, n);
}

static void watch_cb(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        if (done_fn() || pc_now_ns() > deadline) {
                pc_timer_cancel(&watch);
                pc_runtime_stop(RT);
        }
}

static void start_watch(bool (*fn)(void))
{
        done_fn = fn;
        deadline = pc_now_ns() + 5000000000ull;
        pc_timer_init(&watch, watch_cb, NULL);
        pc_timer_start(&watch, 1000000, 1000000);
}

/* ---- net_null ------------------------------------------------------------ */

static _Atomic uint64_t published[NW];

static void publish_count(void *arg)
{
        unsigned w = me();
        (void)arg;
        atomic_store(&published[w], cnt[w].null0);
        if (!pc_runtime_stopping(RT))
                pc_spawn(publish_count, NULL);
}

static bool null_done(void)
{
        for (unsigned w = 0; w < NW; w++)
                if (atomic_load(&published[w]) < 10000)
                        return false;
        return true;
}

static void null_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < NW; w++)
                pc_spawn_on(w, publish_count, NULL);
        start_watch(null_done);
}

static void test_null_forward(void **state)
{
        struct pc_port_stats s0, s1, t;
        uint64_t fwd = 0;

        (void)state;
        assert_int_equal(pc_runtime_run(RT, null_main, NULL), 0);
        assert_int_equal(atomic_load(&failures), 0);
        for (unsigned w = 0; w < NW; w++) {
                assert_int_equal(pc_port_stats(N0, (int)w, &s0), 0);
                assert_int_equal(pc_port_stats(N1, (int)w, &s1), 0);
                /* Every worker polled its own queue of both ports... */
                assert_true(cnt[w].null0 >= 10000);
                assert_true(cnt[w].null1 > 0);
                /* ...and the counters agree exactly with what the handlers
                 * saw: all received, all forwarded ones sent (null takes
                 * everything), nothing dropped. */
                assert_int_equal(s0.rx, cnt[w].null0);
                assert_int_equal(s1.rx, cnt[w].null1);
                assert_int_equal(s1.tx, cnt[w].fwd);
                assert_int_equal(s0.drops + s1.drops, 0);
                fwd += cnt[w].fwd;
        }
        assert_int_equal(pc_port_stats(N1, -1, &t), 0);
        assert_int_equal(t.tx, fwd);
        assert_int_equal(pc_port_stats(N1, NW, &t), -EINVAL);
}

/* ---- net_ring: per-worker loopback ---------------------------------------- */

#define RING_PKTS 2000
#define RING_BATCH 32
static unsigned sent[NW];

static void ring_send(void *arg)
{
        unsigned w = me();
        struct rte_mempool *mp = pc_port_pool(R0);

        (void)arg;
        /* Keep at most 256 in flight, so the ring never overflows: tasks
         * run many times per loop iteration, the RX poller once. */
        for (int i = 0; i < RING_BATCH && sent[w] < RING_PKTS && sent[w] - cnt[w].ring < 256;
             i++) {
                struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
                if (m == NULL) {
                        atomic_fetch_add(&failures, 1);
                        return;
                }
                *(uint32_t *)rte_pktmbuf_append(m, 64) = w;
                pc_port_tx(R0, m);
                sent[w]++;
        }
        if (sent[w] < RING_PKTS)
                pc_spawn(ring_send, NULL); /* next iteration: RX keeps up */
}

static bool ring_done(void)
{
        struct pc_port_stats s;

        pc_port_stats(R0, -1, &s);
        return s.rx + s.drops >= (uint64_t)NW * RING_PKTS;
}

static void ring_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < NW; w++)
                pc_spawn_on(w, ring_send, NULL);
        start_watch(ring_done);
}

static void test_ring_per_worker_queues(void **state)
{
        struct pc_port_stats s;

        (void)state;
        assert_int_equal(pc_runtime_run(RT, ring_main, NULL), 0);
        assert_int_equal(atomic_load(&failures), 0);
        for (unsigned w = 0; w < NW; w++) {
                assert_int_equal(pc_port_stats(R0, (int)w, &s), 0);
                assert_int_equal(sent[w], RING_PKTS);
                /* Sent on queue w, received on queue w, by worker w. */
                assert_int_equal(cnt[w].foreign, 0);
                assert_int_equal(s.tx, RING_PKTS);
                assert_int_equal(s.drops, 0);
                assert_int_equal(s.rx, s.tx);
                assert_int_equal(s.rx, cnt[w].ring);
                assert_true(s.rx > 0);
        }
}

/* ---- the stack over a looped ring: every kind of bad frame ---------------- */

static const uint8_t PEER_MAC[6] = {0x02, 0, 0, 0, 0, 0x99};

static void on_udp(struct pc_port *p, const struct pc_udp_peer *from, uint16_t dport,
                   const void *data, size_t len, void *arg)
{
        (void)arg;
        if (pc_worker_id() != 0 || dport != UDP_PORT || len != 4 || memcmp(data, "ping", 4) ||
            from->addr != PEER_IP || from->port != 5000 || memcmp(from->mac, PEER_MAC, 6))
                atomic_fetch_add(&failures, 1);
        atomic_fetch_add(&udp_got, 1);
        /* The reply loops back to us: addressed to the peer, so "not ours". */
        if (pc_udp_send(p, from, dport, "pong", 4) != 0)
                atomic_fetch_add(&failures, 1);
}

static void fix_ip(uint8_t *f)
{
        uint8_t *ip = f + PC_ETH_HLEN;
        uint16_t c;

        ip[10] = ip[11] = 0;
        c = pc_csum_fold(pc_csum_add(0, ip, (size_t)(ip[0] & 0xf) * 4));
        ip[10] = (uint8_t)(c >> 8);
        ip[11] = (uint8_t)c;
}

struct bad {
        enum pc_pkt_err why;
        size_t len;
        uint8_t f[128];
};

static struct bad cases[32];
static unsigned ncases;
static uint64_t stack_expect_rx;

static size_t udp(uint8_t *f, uint16_t dport, const char *pl)
{
        return pc_udp_build(f, 128, PEER_MAC, pc_port_mac(R1), PEER_IP, MY_IP, 5000, dport, pl,
                            strlen(pl));
}

static struct bad *add(enum pc_pkt_err why)
{
        struct bad *b = &cases[ncases++];
        b->why = why;
        b->len = udp(b->f, UDP_PORT, "ping");
        return b;
}

static void make_cases(void)
{
        struct bad *b;
        uint8_t *ip;

        ncases = 0;
        add(PC_PKT_ETH_SHORT)->len = 10;
        b = add(PC_PKT_ARP_SHORT);
        b->len = pc_arp_build(b->f, 128, PC_ARP_REQUEST, PEER_MAC, PEER_MAC, PEER_IP, NULL,
                              MY_IP) - 1;
        b = add(PC_PKT_ARP_FORMAT);
        b->len = pc_arp_build(b->f, 128, 9, PEER_MAC, PEER_MAC, PEER_IP, NULL, MY_IP);
        add(PC_PKT_IP_SHORT)->len = PC_ETH_HLEN + 10;
        b = add(PC_PKT_IP_VERSION);
        b->f[PC_ETH_HLEN] = 0x65;
        b = add(PC_PKT_IP_HLEN);
        b->f[PC_ETH_HLEN] = 0x43;
        b = add(PC_PKT_IP_TOTLEN);
        b->len -= 1;
        b = add(PC_PKT_IP_CSUM);
        b->f[PC_ETH_HLEN + 8] ^= 1;
        b = add(PC_PKT_UDP_LEN);
        b->f[PC_ETH_HLEN + 20 + 5] = 3;
        b = add(PC_PKT_UDP_CSUM);
        b->f[b->len - 1] ^= 0x40;
        b = add(PC_PKT_UDP_SHORT);
        ip = b->f + PC_ETH_HLEN;
        ip[3] = 24;
        fix_ip(b->f);
        b = add(PC_PKT_IP_FRAG);
        b->f[PC_ETH_HLEN + 6] = 0x20;
        fix_ip(b->f);
        b = add(PC_PKT_IP_TTL);
        b->f[PC_ETH_HLEN + 8] = 0;
        fix_ip(b->f);
        b = add(PC_PKT_IP_PROTO);
        b->f[PC_ETH_HLEN + 9] = 47; /* GRE */
        fix_ip(b->f);
        /* TCP goes to the worker's engine, which finds 12 bytes too short
         * for a TCP header; a well-formed segment to a closed port is
         * answered with a reset (which loops back: not ours). */
        b = add(PC_PKT_TCP_BAD);
        b->f[PC_ETH_HLEN + 9] = PC_IPPROTO_TCP;
        fix_ip(b->f);
        b = add(PC_PKT_ETHERTYPE);
        b->f[12] = 0x86, b->f[13] = 0xdd;
        b = add(PC_PKT_NO_LISTENER);
        b->len = udp(b->f, UDP_PORT + 1, "ping");
        /* ICMP: short, bad checksum, and a type we do not serve. */
        b = add(PC_PKT_ICMP_SHORT);
        ip = b->f + PC_ETH_HLEN;
        ip[9] = PC_IPPROTO_ICMP, ip[3] = 24;
        fix_ip(b->f);
        b = add(PC_PKT_ICMP_CSUM);
        ip = b->f + PC_ETH_HLEN;
        ip[9] = PC_IPPROTO_ICMP;
        fix_ip(b->f);
        /* Good frames the stack answers (the answers come back around). */
        add(PC_PKT_OK); /* UDP ping -> on_udp, reply pong */
        b = add(PC_PKT_OK);
        b->len = pc_arp_build(b->f, 128, PC_ARP_REQUEST, (const uint8_t *)"\xff\xff\xff\xff\xff\xff",
                              PEER_MAC, PEER_IP, NULL, MY_IP);
        b = add(PC_PKT_OK); /* echo request */
        ip = b->f + PC_ETH_HLEN;
        ip[9] = PC_IPPROTO_ICMP;
        fix_ip(b->f);
        {
                uint8_t *icmp = ip + 20;
                size_t l4 = b->len - PC_ETH_HLEN - 20;
                uint16_t c;
                memset(icmp, 0, l4);
                icmp[0] = PC_ICMP_ECHO_REQUEST;
                c = pc_csum_fold(pc_csum_add(0, icmp, l4));
                icmp[2] = (uint8_t)(c >> 8), icmp[3] = (uint8_t)c;
        }
        /* Each good frame's answer loops back addressed to the peer. */
        stack_expect_rx = ncases + 3;
}

static void stack_send(void *arg)
{
        struct rte_mempool *mp = pc_port_pool(R1);

        (void)arg;
        for (unsigned i = 0; i < ncases; i++) {
                struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
                if (m == NULL) {
                        atomic_fetch_add(&failures, 1);
                        return;
                }
                memcpy(rte_pktmbuf_append(m, (uint16_t)cases[i].len), cases[i].f, cases[i].len);
                pc_port_tx(R1, m);
        }
}

static bool stack_done(void)
{
        struct pc_port_stats s;

        pc_port_stats(R1, 0, &s);
        return s.rx >= stack_expect_rx;
}

static void stack_main(void *arg)
{
        (void)arg;
        stack_send(NULL);
        start_watch(stack_done);
}

static void test_stack_drops_every_kind(void **state)
{
        struct pc_port_stats s;
        uint64_t nmal = 0;

        (void)state;
        make_cases();
        assert_int_equal(pc_runtime_run(RT, stack_main, NULL), 0);
        assert_int_equal(atomic_load(&failures), 0);
        assert_int_equal(atomic_load(&udp_got), 1);
        for (unsigned i = 0; i < ncases; i++) {
                if (cases[i].why == PC_PKT_OK)
                        continue;
                if (pc_port_drop_reason(R1, cases[i].why) != 1)
                        fail_msg("reason %s counted %" PRIu64 " times, want 1",
                                 pc_pkt_err_name(cases[i].why),
                                 pc_port_drop_reason(R1, cases[i].why));
                nmal += pc_pkt_err_malformed(cases[i].why);
        }
        /* The three answers (ARP reply, echo reply, UDP pong) came back
         * around the ring addressed to the peer. */
        assert_int_equal(pc_port_drop_reason(R1, PC_PKT_NOT_OURS), 3);
        assert_int_equal(pc_port_stats(R1, 0, &s), 0);
        assert_int_equal(s.rx, stack_expect_rx);
        assert_int_equal(s.tx, stack_expect_rx);
        assert_int_equal(s.malformed, nmal);
        /* Of them, the one UDP checksum (no TCP case reaches a checksum). */
        assert_int_equal(s.bad_cksum, 1);
        assert_int_equal(s.drops, ncases - 3 + 3);
        /* Every malformed kind was among the cases. */
        assert_int_equal(nmal, PC_PKT_MALFORMED_END - 1);
}

/* ---- the ARP table is the port's, not a worker's -------------------------- */

/* Worker 1 receives an ARP reply from PEER2; worker 3, which never saw it,
 * must then reach PEER2 without asking again. Each step is a task that
 * starts the next once the previous one's effect is certain: no timing. */
#define PEER2_IP 0x0a000003u
static const uint8_t PEER2_MAC[6] = {0x02, 0, 0, 0, 0, 0x42};
static _Atomic int arp_step;
static uint64_t arp_rx1;

static int send_to_peer2(void)
{
        struct pc_udp_peer to = {.addr = PEER2_IP, .port = 6000};

        return pc_udp_send(R1, &to, UDP_PORT, "hi", 2);
}

static void arp_worker3_after(void *arg)
{
        (void)arg;
        if (me() != 3 || send_to_peer2() != 0)
                atomic_fetch_add(&failures, 1);
        atomic_store(&arp_step, 3);
}

static void arp_worker1_wait(void *arg)
{
        struct pc_port_stats s;

        (void)arg;
        pc_port_stats(R1, 1, &s);
        /* This task runs after the RX pass that took the reply: learned. */
        if (s.rx <= arp_rx1) {
                if (!pc_runtime_stopping(RT))
                        pc_spawn(arp_worker1_wait, NULL);
                return;
        }
        atomic_store(&arp_step, 2);
        pc_spawn_on(3, arp_worker3_after, NULL);
}

static void arp_worker1_reply(void *arg)
{
        struct rte_mbuf *m = rte_pktmbuf_alloc(pc_port_pool(R1));
        struct pc_port_stats s;
        size_t len;

        (void)arg;
        if (m == NULL || me() != 1) {
                atomic_fetch_add(&failures, 1);
                return;
        }
        pc_port_stats(R1, 1, &s);
        arp_rx1 = s.rx;
        len = pc_arp_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
                           PC_ARP_REPLY, pc_port_mac(R1), PEER2_MAC, PEER2_IP, pc_port_mac(R1),
                           MY_IP);
        rte_pktmbuf_append(m, (uint16_t)len);
        pc_port_tx(R1, m); /* loops back to worker 1's RX queue */
        pc_spawn(arp_worker1_wait, NULL);
}

static void arp_worker3_before(void *arg)
{
        (void)arg;
        /* Not learned yet: a miss (and an ARP request). */
        if (me() != 3 || send_to_peer2() != -EHOSTUNREACH)
                atomic_fetch_add(&failures, 1);
        atomic_store(&arp_step, 1);
        pc_spawn_on(1, arp_worker1_reply, NULL);
}

static bool arp_done(void)
{
        return atomic_load(&arp_step) == 3;
}

static void arp_main(void *arg)
{
        (void)arg;
        pc_spawn_on(3, arp_worker3_before, NULL);
        start_watch(arp_done);
}

static void test_arp_shared_by_workers(void **state)
{
        (void)state;
        assert_int_equal(pc_runtime_run(RT, arp_main, NULL), 0);
        assert_int_equal(atomic_load(&arp_step), 3);
        assert_int_equal(atomic_load(&failures), 0);
}

/* ---- routing --------------------------------------------------------------- */

#define FAR_IP 0xc6336407u /* 198.51.100.7: off 10.0.0.0/24 */
static _Atomic int route_rc[2];

static void route_send(void *arg)
{
        struct pc_udp_peer far = {.addr = FAR_IP, .port = 6000};

        (void)arg;
        /* Off the subnet, no link address given: through the gateway. */
        atomic_store(&route_rc[0], pc_udp_send(R1, &far, UDP_PORT, "far", 3));
        atomic_store(&route_rc[1], send_to_peer2());
        pc_runtime_stop(RT);
}

static void route_main(void *arg)
{
        (void)arg;
        pc_spawn_on(2, route_send, NULL);
}

/* Runs after test_arp_shared_by_workers: PEER2's link address is known,
 * FAR_IP's never is. */
static void test_route(void **state)
{
        (void)state;
        assert_int_equal(pc_port_set_route(NULL, 24, 0), -EINVAL);
        assert_int_equal(pc_port_set_route(R0, 24, 0), -EINVAL); /* no address */
        assert_int_equal(pc_port_set_route(R1, 33, 0), -EINVAL);
        assert_int_equal(pc_port_set_route(R1, 0, PEER2_IP), -EINVAL);
        assert_int_equal(pc_port_set_route(R1, 24, 0x0a000103u), -EINVAL); /* off subnet */
        assert_int_equal(pc_port_set_route(R1, 24, MY_IP), -EINVAL);
        assert_int_equal(pc_port_set_route(R1, 24, 0x0a000000u), -EINVAL); /* network */
        assert_int_equal(pc_port_set_route(R1, 24, 0x0a0000ffu), -EINVAL); /* broadcast */

        /* Every address on the link: FAR_IP needs its own ARP answer. */
        assert_int_equal(pc_runtime_run(RT, route_main, NULL), 0);
        assert_int_equal(atomic_load(&route_rc[0]), -EHOSTUNREACH);
        assert_int_equal(atomic_load(&route_rc[1]), 0);

        /* PEER2 as the gateway: FAR_IP goes to PEER2's link address. */
        assert_int_equal(pc_port_set_route(R1, 24, PEER2_IP), 0);
        assert_int_equal(pc_runtime_run(RT, route_main, NULL), 0);
        assert_int_equal(atomic_load(&route_rc[0]), 0);
        assert_int_equal(atomic_load(&route_rc[1]), 0);

        /* A subnet without a gateway: nothing off it is reachable. */
        assert_int_equal(pc_port_set_route(R1, 24, 0), 0);
        assert_int_equal(pc_runtime_run(RT, route_main, NULL), 0);
        assert_int_equal(atomic_load(&route_rc[0]), -EHOSTUNREACH);
        assert_int_equal(atomic_load(&route_rc[1]), 0);

        assert_int_equal(pc_port_set_route(R1, 0, 0), 0);
        assert_int_equal(atomic_load(&failures), 0);
}

/* ---- telemetry -------------------------------------------------------------- */

static int tel_query(int fd, const char *cmd, char *buf, size_t len)
{
        ssize_t n;

        if (write(fd, cmd, strlen(cmd)) < 0)
                return -errno;
        n = read(fd, buf, len - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return 0;
}

static void test_telemetry(void **state)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char buf[16384];
        int fd;

        (void)state;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/var/run/dpdk/%s/dpdk_telemetry.v2", PREFIX);
        fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        assert_true(fd >= 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
                fail_msg("connect %s: %s", sa.sun_path, strerror(errno));
        assert_true(read(fd, buf, sizeof(buf)) > 0); /* the greeting */
        assert_int_equal(tel_query(fd, "/percore/ports", buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "\"net_ring1\":{\"port_id\":3,\"queues\":4,\"rx\":"));
        assert_non_null(strstr(buf, "\"malformed\":"));
        assert_int_equal(tel_query(fd, "/percore/ports,3", buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "\"queue3\":{\"rx\":"));
        assert_int_equal(tel_query(fd, "/percore/workers", buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "\"worker3\":{\"cpu\":"));
        assert_non_null(strstr(buf, "\"lcore\":3"));
        assert_non_null(strstr(buf, "\"stalls\":0"));
        assert_non_null(strstr(buf, "\"roams\":"));
        assert_non_null(strstr(buf, "\"roaming\":"));
        assert_non_null(strstr(buf, "\"packed\":"));
        assert_non_null(strstr(buf, "\"yields\":"));
        assert_int_equal(tel_query(fd, "/percore/steals", buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "\"injector\":[0,0,0,0]"));
        assert_non_null(strstr(buf, "\"from3\":["));
        assert_int_equal(tel_query(fd, "/percore/config", buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "\"mode\":\"tpc\",\"workers\":4"));
        /* The mode: read, switched, refused a bad one, switched back. */
        assert_int_equal(tel_query(fd, "/percore/mode", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "{\"/percore/mode\":{\"mode\":\"tpc\"}}");
        assert_int_equal(tel_query(fd, "/percore/mode,elastic", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "{\"/percore/mode\":{\"mode\":\"elastic\"}}");
        assert_int_equal(pc_runtime_mode(RT), PC_MODE_ELASTIC);
        assert_int_equal(tel_query(fd, "/percore/mode,fast", buf, sizeof(buf)), 0);
        assert_null(strstr(buf, "\"mode\":"));
        assert_int_equal(pc_runtime_mode(RT), PC_MODE_ELASTIC);
        assert_int_equal(tel_query(fd, "/percore/mode,tpc", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "{\"/percore/mode\":{\"mode\":\"tpc\"}}");
        assert_int_equal(pc_runtime_mode(RT), PC_MODE_TPC);
        close(fd);
}

static int setup(void **state)
{
        struct pc_config cfg;
        struct pc_port_opts o = {0};

        (void)state;
        pc_test_config(&cfg, NW);
        cfg.eal_args = EAL;
        if (pc_runtime_create(&cfg, &RT) != 0)
                return -1;
        o.rx = rx_null0;
        if (pc_port_open(RT, "net_null0", &o, &N0))
                return -1;
        o.rx = rx_null1;
        if (pc_port_open(RT, "net_null1", &o, &N1))
                return -1;
        o.rx = rx_ring0;
        if (pc_port_open(RT, "2", &o, &R0))
                return -1;
        if (pc_port_open(RT, "net_ring1", NULL, &R1) || pc_port_set_ipv4(R1, MY_IP) ||
            pc_udp_bind(R1, UDP_PORT, on_udp, NULL))
                return -1;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        pc_port_stats_print(RT, stderr);
        pc_runtime_destroy(RT);
        return 0;
}

static void test_open_errors(void **state)
{
        struct pc_port *p;

        (void)state;
        assert_int_equal(pc_port_open(RT, "net_nosuch0", NULL, &p), -ENODEV);
        assert_int_equal(pc_port_open(RT, "77", NULL, &p), -ENODEV);
        assert_int_equal(pc_port_open(RT, "net_null0", NULL, &p), -EBUSY);
        assert_int_equal(pc_udp_bind(R1, UDP_PORT, on_udp, NULL), -EADDRINUSE);
        assert_int_equal(pc_port_count(RT), 4);
        assert_ptr_equal(pc_port_get(RT, 3), R1);
        assert_string_equal(pc_port_name(R1), "net_ring1");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open_errors),
                cmocka_unit_test(test_null_forward),
                cmocka_unit_test(test_ring_per_worker_queues),
                cmocka_unit_test(test_stack_drops_every_kind),
                cmocka_unit_test(test_arp_shared_by_workers),
                cmocka_unit_test(test_route),
                cmocka_unit_test(test_telemetry),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
