/* SPDX-License-Identifier: MIT */
/*
 * The TCP engine, part two: what the network does to segments and what
 * the engine does about it, each test after the clause it checks. Loss:
 * retransmission timeout, backoff and the retry limit (RFC 6298 5, RFC
 * 9293 3.8.3), the SYN's own timer, fast retransmit (RFC 5681 3.2) and
 * NewReno's partial ACKs (RFC 6582 3.2), random loss both ways. Order:
 * reordering and duplication. Windows: zero window and persist (RFC 9293
 * 3.8.6.1), a lost window update, a slow reader closing the window, Nagle
 * (3.7.4), delayed ACKs (3.8.6.3). And RTT estimation (RFC 6298 2),
 * sequence numbers wrapping, keepalive (RFC 1122 4.2.3.6).
 */
#include <errno.h>
#include <string.h>

#include "pc_test.h"
#include "tcp_wire.h"

static struct wire w;
static struct tserver srv;
static struct tapp cli;

/* One filter for all the tests: each field turns one behaviour on. */
struct net {
        uint64_t data_n[2];    /* data segments seen from each side */
        uint64_t drop_nth[8];  /* ordinals (from 1) of side 0's data to drop once */
        unsigned ndrop;
        bool blackhole[2];     /* drop everything from side i */
        unsigned syn_drops;    /* drop this many SYNs from side 0 */
        unsigned dup_every, delay_every;
        uint64_t delay_ns;
        unsigned loss_pct;
        uint64_t rng;
        bool drop_pure_acks[2]; /* drop side i's segments without data */
        uint64_t times[256];   /* when side 0 sent data (or SYNs) */
        uint32_t seqs[256];
        unsigned ntimes;
        bool log_syn;
};

static struct net net;

static int net_filter(struct wire *wr, int from, const struct pc_tcp_seg *s, uint64_t *extra,
                      void *arg)
{
        struct net *n = arg;
        bool data = s->len > 0;

        if (from == 0 && (data || (n->log_syn && (s->flags & PC_TCP_SYN))) &&
            n->ntimes < 256) {
                n->times[n->ntimes] = wr->now;
                n->seqs[n->ntimes++] = s->seq;
        }
        if (n->blackhole[from])
                return WIRE_DROP;
        if (from == 0 && (s->flags & PC_TCP_SYN) && n->syn_drops) {
                n->syn_drops--;
                return WIRE_DROP;
        }
        if (!data && n->drop_pure_acks[from] && !(s->flags & (PC_TCP_SYN | PC_TCP_FIN)))
                return WIRE_DROP;
        if (data) {
                uint64_t k = ++n->data_n[from];
                if (from == 0)
                        for (unsigned i = 0; i < n->ndrop; i++)
                                if (n->drop_nth[i] == k) {
                                        n->drop_nth[i] = 0;
                                        return WIRE_DROP;
                                }
                if (n->dup_every && k % n->dup_every == 0)
                        return WIRE_DUP;
                if (n->delay_every && k % n->delay_every == 0) {
                        *extra = n->delay_ns;
                        return WIRE_DELAY;
                }
        }
        if (n->loss_pct) {
                n->rng = n->rng * 6364136223846793005ull + 1442695040888963407ull;
                if ((n->rng >> 33) % 100 < n->loss_pct)
                        return WIRE_DROP;
        }
        return WIRE_PASS;
}

static bool both_open(void *arg)
{
        (void)arg;
        return cli.accepted && srv.n == 1 && srv.apps[0].accepted;
}

static bool cli_closed(void *arg)
{
        (void)arg;
        return cli.closed != 0;
}

static struct pc_tcpe_config base_cfg(void)
{
        struct pc_tcpe_config c;

        memset(&c, 0, sizeof(c));
        memset(c.secret, 9, 16);
        return c;
}

static void setup(const struct pc_tcpe_config *c0, const struct pc_tcpe_config *c1)
{
        memset(&srv, 0, sizeof(srv));
        memset(&cli, 0, sizeof(cli));
        memset(&net, 0, sizeof(net));
        wire_init(&w, c0, c1, false);
        w.filter = net_filter;
        w.filter_arg = &net;
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 40000, IP_B, 80, &tapp_cb, &cli, w.now,
                                         &cli.c),
                         0);
}

static void open_pair(void)
{
        assert_true(wire_run(&w, both_open, NULL, w.now + 30 * SEC));
}

static void finish(void)
{
        tapp_free(&cli);
        tserver_free(&srv);
        wire_fini(&w);
}

/* Send @n bytes from the client and run until the server has them all
 * and the client has their ACK. */
static bool srv_has(void *arg)
{
        return srv.n && srv.apps[0].rx_len >= *(uint64_t *)arg;
}

static bool all_acked(void *arg)
{
        return srv_has(arg) && cli.c && pc_tcb_buffered(cli.c) == 0;
}

static void send_and_check(uint64_t n, uint64_t limit)
{
        cli.tx_total += n;
        tapp_pump(&cli);
        assert_true(wire_run(&w, all_acked, &cli.tx_total, w.now + limit));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, cli.tx_total));
}

/* ---- Loss ----------------------------------------------------------------- */

static void test_rto_tail_loss(void **state)
{
        struct pc_tcpe_stats st;
        uint64_t t0;

        (void)state;
        /* RFC 6298 5.4-5.6: the last segment of a burst is lost, so no
         * duplicate ACK can follow; the timer resends it, once. */
        setup(NULL, NULL);
        open_pair();
        net.drop_nth[0] = 5;
        net.ndrop = 1;
        t0 = w.now;
        send_and_check(5 * 1460, 5 * SEC);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.timeouts, 1);
        assert_int_equal(st.retransmits, 1);
        assert_int_equal(st.fast_retransmits, 0);
        /* Not before the RTO's floor of 200 ms. */
        assert_true(w.now - t0 >= 200 * MS);
        assert_true(w.now - t0 < 300 * MS);
        finish();
}

static void test_rto_backoff_and_limit(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        struct pc_tcb_info i;

        (void)state;
        /* RFC 6298 5.5: each expiry doubles the RTO; RFC 9293 3.8.3: after
         * max_retries the connection fails (-ETIMEDOUT). */
        c.max_retries = 5;
        setup(&c, NULL);
        open_pair();
        net.blackhole[0] = true;
        assert_int_equal(pc_tcb_send(cli.c, "lost", 4), 0);
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 60 * SEC));
        assert_int_equal(cli.close_err, -ETIMEDOUT);
        /* The first send and 5 retransmissions, 200 ms apart, then 400... */
        assert_int_equal(net.ntimes, 6);
        for (unsigned k = 1; k < net.ntimes; k++) {
                assert_int_equal(net.seqs[k], net.seqs[0]);
                assert_true(net.times[k] - net.times[k - 1] == (200 * MS) << (k - 1));
        }
        /* The connection failed 6.4 s after the last retransmission. */
        assert_true(w.now - net.times[5] == 6400 * MS);
        (void)i;
        finish();
}

static void test_syn_retransmit(void **state)
{
        struct pc_tcpe_config c = base_cfg();

        (void)state;
        /* The SYN's timer starts at rto_init (1 s) and backs off too. */
        setup(&c, NULL);
        net.syn_drops = 2;
        net.log_syn = true;
        wire_flush(&w);
        open_pair();
        assert_int_equal(net.ntimes, 3);
        assert_true(net.times[1] - net.times[0] == SEC);
        assert_true(net.times[2] - net.times[1] == 2 * SEC);
        /* Karn: no RTT sample from a retransmitted SYN, so RTO is still
         * the backed-off 4 s... until data is timed. */
        {
                struct pc_tcb_info i;
                pc_tcb_info(cli.c, &i);
                assert_true(i.srtt_ns == 0);
                assert_true(i.rto_ns == 4 * SEC);
                /* Two full segments: the second is acknowledged at once. */
                send_and_check(2920, SEC);
                pc_tcb_info(cli.c, &i);
                assert_true(i.srtt_ns == 2 * MS);
                assert_true(i.rto_ns == 200 * MS);
        }
        finish();

        /* And gives up after syn_retries. */
        c.syn_retries = 2;
        setup(&c, NULL);
        net.blackhole[0] = true;
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 60 * SEC));
        assert_int_equal(cli.close_err, -ETIMEDOUT);
        assert_int_equal(cli.accepted, 0);
        finish();
}

static void test_fast_retransmit(void **state)
{
        struct pc_tcpe_stats st;

        (void)state;
        /* RFC 5681 3.2: a hole mid-window brings three duplicate ACKs; the
         * segment is resent at once, with no timeout. */
        setup(NULL, NULL);
        open_pair();
        net.drop_nth[0] = 30;
        net.ndrop = 1;
        send_and_check(1 << 20, 30 * SEC);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.fast_retransmits, 1);
        assert_int_equal(st.timeouts, 0);
        assert_int_equal(st.retransmits, 1);
        wire_stats(&w, 1, &st);
        assert_true(st.ooo_segs >= 3);
        finish();
}

static void test_newreno_partial_ack(void **state)
{
        struct pc_tcpe_stats st;

        (void)state;
        /* RFC 6582 3.2: two holes in one window. The first retransmission
         * brings a partial ACK, which resends the second hole at once:
         * one recovery, no timeout. */
        setup(NULL, NULL);
        open_pair();
        net.drop_nth[0] = 30;
        net.drop_nth[1] = 34;
        net.ndrop = 2;
        send_and_check(1 << 20, 30 * SEC);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.fast_retransmits, 1);
        assert_int_equal(st.timeouts, 0);
        assert_int_equal(st.retransmits, 2);
        finish();
}

static void test_random_loss_both_ways(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        uint64_t n = pc_test_scaled(2 << 20);

        (void)state;
        c.no_backpressure = true;
        setup(&c, NULL);
        open_pair();
        net.loss_pct = 3;
        net.rng = 42;
        srv.apps[0].tx_total = n;
        srv.apps[0].pattern_seed = 5;
        srv.apps[0].shut_when_sent = true;
        srv.apps[0].no_auto = true;
        assert_int_equal(pc_tcb_linger(srv.apps[0].c), 0);
        cli.shut_when_sent = true;
        assert_int_equal(pc_tcb_linger(cli.c), 0);
        cli.tx_total = n;
        tapp_pump(&srv.apps[0]);
        tapp_pump(&cli);
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 3600 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, n));
        assert_true(tapp_rx_is_pattern(&cli, 5, n));
        assert_int_equal(cli.close_err, 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + 120 * SEC));
        assert_int_equal(srv.apps[0].closed, 1);
        /* Losses both ways, each side repaired its own. */
        assert_true(w.dropped > 0);
        for (int side = 0; side < 2; side++) {
                struct pc_tcpe_stats st;
                wire_stats(&w, side, &st);
                assert_true(st.retransmits > 0);
        }
        finish();
}

/* ---- Order ---------------------------------------------------------------- */

static void test_reorder_and_duplicate(void **state)
{
        struct pc_tcpe_stats st;

        (void)state;
        /* Every 7th segment arrives 2.5 ms late (behind its successors),
         * every 5th twice: every byte arrives once, in order. */
        setup(NULL, NULL);
        open_pair();
        net.dup_every = 5;
        net.delay_every = 7;
        net.delay_ns = 2500 * 1000;
        send_and_check(pc_test_scaled(2 << 20), 60 * SEC);
        wire_stats(&w, 1, &st);
        assert_true(st.ooo_segs > 0);
        assert_true(w.duped > 0);
        finish();
}

/* ---- Windows -------------------------------------------------------------- */

static void test_zero_window_persist(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        struct pc_tcpe_stats st;
        struct pc_tcb_info i;
        uint64_t n = 1 << 20;

        (void)state;
        /* RFC 9293 3.8.6.1: the receiver stops reading; its window closes;
         * the sender probes (backing off) for as long as the receiver
         * answers, well past max_retries, and the data flows again when
         * reading resumes. */
        c.rcv_cap = 64 * 1024;
        c.max_retries = 3;
        setup(&c, NULL);
        srv.tmpl.pause_at_accept = true;
        open_pair();
        cli.tx_total = n;
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 600 * SEC));
        pc_tcb_info(srv.apps[0].c, &i);
        assert_int_equal(i.rcv_wnd, 0);
        assert_int_equal(i.held, 64 * 1024);
        assert_int_equal(srv.apps[0].rx_len, 0);
        pc_tcb_info(cli.c, &i);
        assert_int_equal(i.snd_wnd, 0);
        wire_stats(&w, 0, &st);
        assert_true(st.persist_probes >= 10);
        assert_int_equal(cli.closed, 0);
        assert_int_equal(pc_tcb_pause(srv.apps[0].c, false), 0);
        assert_true(wire_run(&w, srv_has, &cli.tx_total, w.now + 120 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, n));
        finish();
}

static void test_persist_timeout(void **state)
{
        struct pc_tcpe_config c = base_cfg();

        (void)state;
        /* The window shuts and then the peer vanishes: probes that nothing
         * answers count, and max_retries of them fail the connection. */
        c.rcv_cap = 16 * 1024;
        c.max_retries = 4;
        setup(&c, NULL);
        srv.tmpl.pause_at_accept = true;
        open_pair();
        cli.tx_total = 100000;
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 2 * SEC));
        net.blackhole[1] = true;
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 3600 * SEC));
        assert_int_equal(cli.close_err, -ETIMEDOUT);
        finish();
}

static void test_emit_failure(void **state)
{
        struct pc_tcpe_stats st;

        (void)state;
        /* The caller may fail to send a segment (no mbuf, no ARP entry yet):
         * counted, and repaired like a loss. */
        setup(NULL, NULL);
        open_pair();
        net.drop_nth[0] = 3;
        net.ndrop = 1;
        w.fail_drops = true;
        send_and_check(20000, 5 * SEC);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.tx_errors, 1);
        assert_true(st.retransmits >= 1);
        finish();
}

static void test_lost_window_update(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        struct pc_tcpe_stats st0, st1;
        uint64_t n = 256 * 1024;

        (void)state;
        /* The receiver's window update after it reads again is lost; the
         * sender's next persist probe learns that the window opened. */
        c.rcv_cap = 32 * 1024;
        setup(&c, NULL);
        srv.tmpl.pause_at_accept = true;
        open_pair();
        cli.tx_total = n;
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 5 * SEC));
        wire_stats(&w, 0, &st0);
        net.drop_pure_acks[1] = true;
        assert_int_equal(pc_tcb_pause(srv.apps[0].c, false), 0);
        wire_flush(&w);
        net.drop_pure_acks[1] = false;
        assert_true(wire_run(&w, srv_has, &cli.tx_total, w.now + 300 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, n));
        wire_stats(&w, 0, &st1);
        assert_true(st1.persist_probes > st0.persist_probes);
        assert_true(w.dropped >= 1);
        finish();
}

static void test_slow_reader_backpressure(void **state)
{
        struct pc_tcpe_config cc = base_cfg(), sc = base_cfg();
        struct pc_tcpe_stats st;
        uint64_t n = 4 << 20;

        (void)state;
        /* An echo server (backpressure on) and a client that stops reading:
         * the server's output fills, so it stops reading, so its window
         * closes, so the client's sends are refused. The server's memory
         * stays within its caps, it never sees -ENOBUFS, and once the
         * client reads again every byte comes back. */
        sc.snd_cap = 128 * 1024;
        sc.rcv_cap = 64 * 1024;
        cc.no_backpressure = true;
        setup(&cc, &sc);
        srv.tmpl.echo = true;
        open_pair();
        assert_int_equal(pc_tcb_pause(cli.c, true), 0);
        cli.tx_total = n;
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 100 * SEC));
        assert_true(cli.refused > 0);
        assert_true(cli.tx_sent < n);
        wire_stats(&w, 1, &st);
        assert_true(st.backpressure > 0);
        assert_true(st.mem <= 128 * 1024 + 64 * 1024);
        assert_int_equal(srv.apps[0].refused, 0);
        assert_int_equal(pc_tcb_pause(cli.c, false), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + 600 * SEC));
        assert_true(tapp_rx_is_pattern(&cli, 0, n));
        assert_int_equal(srv.apps[0].refused, 0);
        finish();
}

/* Count side 1's pure ACKs and when the last one left. */
static int ack_watch(struct wire *wr, int from, const struct pc_tcp_seg *s, uint64_t *extra,
                     void *arg)
{
        struct net *n = arg;

        (void)extra;
        if (from == 1 && s->len == 0 && n->ntimes < 256) {
                n->times[n->ntimes] = wr->now;
                n->seqs[n->ntimes++] = s->ack;
        }
        return WIRE_PASS;
}

static void test_delayed_ack(void **state)
{
        struct pc_tcb_info i;
        uint8_t buf[2920];
        uint64_t t0;

        (void)state;
        /* RFC 9293 3.8.6.3 / RFC 5681 4.2: one segment is acknowledged
         * within 40 ms, not at once; the second full segment at once. */
        setup(NULL, NULL);
        open_pair();
        w.filter = ack_watch;
        memset(buf, 'x', sizeof(buf));
        assert_int_equal(pc_tcb_send(cli.c, buf, 100), 0);
        t0 = w.now;
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(net.ntimes, 1);
        assert_true(net.times[0] - t0 == 1 * MS + 40 * MS);
        net.ntimes = 0;
        srv.apps[0].rx_len = 0;
        assert_int_equal(pc_tcb_send(cli.c, buf, 2920), 0);
        t0 = w.now;
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(net.ntimes, 1);
        assert_true(net.times[0] - t0 == 1 * MS);
        pc_tcb_info(cli.c, &i);
        assert_int_equal(net.seqs[0], i.snd_nxt);
        finish();
}

static void test_nagle(void **state)
{
        unsigned segs;

        (void)state;
        /* RFC 9293 3.7.4: with Nagle on, a small segment waits while data is
         * unacknowledged; off (the default) each flush sends what it has. */
        setup(NULL, NULL);
        open_pair();
        for (int i = 0; i < 10; i++) {
                assert_int_equal(pc_tcb_send(cli.c, "0123456789", 10), 0);
                wire_flush(&w);
        }
        assert_int_equal(w.data_segs[0], 10);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(pc_tcb_nodelay(cli.c, false), 0);
        segs = (unsigned)w.data_segs[0];
        for (int i = 0; i < 10; i++) {
                assert_int_equal(pc_tcb_send(cli.c, "0123456789", 10), 0);
                wire_flush(&w);
        }
        /* The first goes; the other nine wait for its ACK, then go as one. */
        assert_int_equal(w.data_segs[0], segs + 1);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(w.data_segs[0], segs + 2);
        assert_int_equal(srv.apps[0].rx_len, 200);
        finish();
}

/* ---- Clocks and numbers --------------------------------------------------- */

static void test_rtt_estimate(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        struct pc_tcb_info i;

        (void)state;
        /* RFC 6298 2.2: the first sample R sets SRTT = R, RTTVAR = R/2, RTO
         * = SRTT + 4 RTTVAR; 2.3: later ones with gains 1/8 and 1/4. */
        c.rto_min_ns = MS;
        setup(&c, NULL);
        w.delay = 10 * MS;
        open_pair();
        pc_tcb_info(cli.c, &i);
        assert_true(i.srtt_ns == 20 * MS);
        assert_true(i.rto_ns == 60 * MS);
        /* A second sample of 20 ms (two full segments, acknowledged at
         * once): RTTVAR 3/4 of 10 ms, SRTT stays. */
        send_and_check(2920, SEC);
        pc_tcb_info(cli.c, &i);
        assert_true(i.srtt_ns == 20 * MS);
        assert_true(i.rto_ns == 20 * MS + 4 * 7500 * 1000);
        /* One small segment: the peer delays its ACK 40 ms, so the 50 ms RTO
         * fires first and the segment goes again. Karn: the ACK that follows
         * could be for either copy, so no sample, and the backed-off RTO
         * (100 ms) stays (RFC 6298 3, 5.7). */
        send_and_check(100, SEC);
        pc_tcb_info(cli.c, &i);
        assert_true(i.srtt_ns == 20 * MS);
        assert_true(i.rto_ns == 100 * MS);
        /* Until a segment sent once is timed. After the timeout the window
         * is one segment, which the peer acknowledges after its delay: R =
         * 60 ms, SRTT = 7/8 20 + 1/8 60, RTTVAR = 3/4 7.5 + 1/4 40. */
        send_and_check(1460, SEC);
        pc_tcb_info(cli.c, &i);
        assert_true(i.srtt_ns == 25 * MS);
        assert_true(i.rto_ns == 25 * MS + 4 * 15625 * 1000);
        finish();
}

static void test_seq_wraparound(void **state)
{
        struct pc_tcpe_config c = base_cfg();
        uint64_t n = pc_test_scaled(1 << 20);
        struct pc_tcb_info i;

        (void)state;
        /* RFC 9293 3.4: sequence space is modular. Both ISNs sit just below
         * 2^32, so the transfer crosses 0 both ways, with loss. */
        c.no_backpressure = true;
        w.isn[0] = 0xfffff000u;
        w.isn[1] = 0xffffff00u;
        setup(&c, NULL);
        open_pair();
        pc_tcb_info(cli.c, &i);
        assert_int_equal(i.iss, 0xfffff000u);
        net.loss_pct = 2;
        net.rng = 7;
        srv.apps[0].tx_total = n;
        tapp_pump(&srv.apps[0]);
        send_and_check(n, 600 * SEC);
        assert_true(wire_run(&w, NULL, NULL, w.now + 60 * SEC));
        assert_true(tapp_rx_is_pattern(&cli, 0, n));
        pc_tcb_info(cli.c, &i);
        assert_true(i.snd_una < 0x10000000u); /* wrapped */
        w.isn[0] = w.isn[1] = 0;
        finish();
}

static void test_keepalive(void **state)
{
        struct pc_tcpe_stats st;

        (void)state;
        /* RFC 1122 4.2.3.6: probes after idle_ns, answered by a live peer;
         * count unanswered ones end the connection. */
        setup(NULL, NULL);
        open_pair();
        assert_int_equal(pc_tcb_keepalive(cli.c, 10 * SEC, SEC, 3), 0);
        assert_int_equal(pc_tcb_keepalive(cli.c, SEC, 0, 3), -EINVAL);
        assert_true(wire_run(&w, NULL, NULL, w.now + 100 * SEC));
        wire_stats(&w, 0, &st);
        assert_true(st.keepalive_probes >= 9 && st.keepalive_probes <= 10);
        assert_int_equal(cli.closed, 0);
        net.blackhole[1] = true;
        {
                uint64_t t0 = w.now;
                assert_true(wire_run(&w, cli_closed, NULL, w.now + 100 * SEC));
                assert_int_equal(cli.close_err, -ETIMEDOUT);
                assert_true(w.now - t0 <= 10 * SEC + 3 * SEC);
        }
        finish();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rto_tail_loss),
                cmocka_unit_test(test_rto_backoff_and_limit),
                cmocka_unit_test(test_syn_retransmit),
                cmocka_unit_test(test_fast_retransmit),
                cmocka_unit_test(test_newreno_partial_ack),
                cmocka_unit_test(test_random_loss_both_ways),
                cmocka_unit_test(test_reorder_and_duplicate),
                cmocka_unit_test(test_zero_window_persist),
                cmocka_unit_test(test_persist_timeout),
                cmocka_unit_test(test_emit_failure),
                cmocka_unit_test(test_lost_window_update),
                cmocka_unit_test(test_slow_reader_backpressure),
                cmocka_unit_test(test_delayed_ack),
                cmocka_unit_test(test_nagle),
                cmocka_unit_test(test_rtt_estimate),
                cmocka_unit_test(test_seq_wraparound),
                cmocka_unit_test(test_keepalive),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
