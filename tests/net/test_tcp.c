/* SPDX-License-Identifier: MIT */
/*
 * The TCP engine, part one: the header parser, the keyed hash, and two
 * engines over the test wire for the connection's life: the three-way
 * handshake (RFC 9293 3.5) and simultaneous open (figure 8), option
 * negotiation (RFC 7323, RFC 9293 3.7.1), data both ways byte for byte,
 * an echo, and the closes: active, passive, simultaneous (figure 13),
 * TIME-WAIT and its reopening, and a refused connect.
 */
#include <errno.h>
#include <string.h>

#include "pc_test.h"
#include "tcp_wire.h"

uint64_t pc__siphash(const uint64_t key[2], const void *msg, size_t len);

static struct wire w;

/* ---- Parsing -------------------------------------------------------------- */

static void test_parse_header(void **state)
{
        uint8_t b[128], opts[12] = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 1, 0};
        struct pc_tcp_seg s;
        size_t n;

        (void)state;
        n = tcp_seg_build(b, IP_A, IP_B, 1234, 80, 0x01020304, 0x0a0b0c0d,
                          PC_TCP_SYN | PC_TCP_ACK, 29200, opts, 12, "hi", 2);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_OK);
        assert_int_equal(s.sport, 1234);
        assert_int_equal(s.dport, 80);
        assert_int_equal(s.seq, 0x01020304);
        assert_int_equal(s.ack, 0x0a0b0c0d);
        assert_int_equal(s.flags, PC_TCP_SYN | PC_TCP_ACK);
        assert_int_equal(s.wnd, 29200);
        assert_int_equal(s.hlen, 32);
        assert_int_equal(s.len, 2);
        assert_memory_equal(s.data, "hi", 2);
        assert_int_equal(s.mss, 1460);
        assert_int_equal(s.wscale, 7);
        /* The pseudo-header is covered: other addresses, bad sum. */
        assert_int_equal(pc_tcp_parse(IP_A, IP_B + 1, b, n, &s), PC_TCP_CSUM);
        b[n - 1] ^= 1;
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_CSUM);
        /* Every truncation fails, each in a buffer of its own size. */
        for (size_t k = 0; k < n; k++) {
                uint8_t *t = malloc(k ? k : 1);
                memcpy(t, b, k);
                assert_int_not_equal(pc_tcp_parse(IP_A, IP_B, t, k, &s), PC_TCP_OK);
                free(t);
        }
}

static void test_parse_malformed(void **state)
{
        uint8_t b[128];
        struct pc_tcp_seg s;
        size_t n;

        (void)state;
        n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_ACK, 0, NULL, 0, NULL, 0);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, 19, &s), PC_TCP_SHORT);
        b[12] = 4 << 4; /* data offset 4 */
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_HLEN_BAD);
        b[12] = 6 << 4; /* 24 bytes of header in 20 */
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_HLEN_BAD);
        n = tcp_seg_build(b, IP_A, IP_B, 0, 2, 0, 0, PC_TCP_ACK, 0, NULL, 0, NULL, 0);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_PORT);
        n = tcp_seg_build(b, 0xe0000001u, IP_B, 1, 2, 0, 0, PC_TCP_ACK, 0, NULL, 0, NULL, 0);
        assert_int_equal(pc_tcp_parse(0xe0000001u, IP_B, b, n, &s), PC_TCP_ADDR);
        n = tcp_seg_build(b, IP_A, 0xffffffffu, 1, 2, 0, 0, PC_TCP_ACK, 0, NULL, 0, NULL, 0);
        assert_int_equal(pc_tcp_parse(IP_A, 0xffffffffu, b, n, &s), PC_TCP_ADDR);
        n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_SYN | PC_TCP_FIN, 0, NULL, 0, NULL,
                          0);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_FLAGS);
        n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_SYN | PC_TCP_RST, 0, NULL, 0, NULL,
                          0);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_FLAGS);
        n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_FIN | PC_TCP_PSH, 0, NULL, 0, NULL,
                          0);
        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_FLAGS);
        /* Options: zero length, past the header, a wrong MSS length. */
        {
                static const uint8_t bad[3][4] = {{8, 0, 1, 1}, {1, 1, 2, 8}, {2, 3, 5, 0}};
                for (int i = 0; i < 3; i++) {
                        n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_SYN, 0, bad[i], 4,
                                          NULL, 0);
                        assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_OPTIONS);
                }
        }
        /* A window scale over 14 is taken as 14 (RFC 7323 2.3); EOL ends. */
        {
                static const uint8_t ws[8] = {3, 3, 20, 0, 0, 0, 0, 0};
                n = tcp_seg_build(b, IP_A, IP_B, 1, 2, 0, 0, PC_TCP_SYN, 0, ws, 8, NULL, 0);
                assert_int_equal(pc_tcp_parse(IP_A, IP_B, b, n, &s), PC_TCP_OK);
                assert_int_equal(s.wscale, 14);
        }
        for (int e = 0; e < PC_TCP_NR; e++)
                assert_string_not_equal(pc_tcp_err_name((enum pc_tcp_err)e), "?");
        assert_true(pc_tcp_err_malformed(PC_TCP_CSUM));
        assert_false(pc_tcp_err_malformed(PC_TCP_NO_CONN));
        for (int st = 0; st < PC_TCP_STATE_NR; st++)
                assert_string_not_equal(pc_tcp_state_name((enum pc_tcp_state)st), "?");
        /* The drops by reason, as the tools print them. */
        {
                struct pc_tcpe_stats z = {0};
                char out[64] = {0};
                FILE *f = fmemopen(out, sizeof(out) - 1, "w");

                assert_non_null(f);
                pc_tcpe_drops_print(&z, f);
                z.drops[PC_TCP_CSUM] = 2;
                z.drops[PC_TCP_WINDOW] = 7;
                pc_tcpe_drops_print(&z, f);
                fclose(f);
                assert_string_equal(out, " csum=2 window=7");
        }
}

static void test_siphash_vectors(void **state)
{
        /* The reference vectors of the SipHash paper (appendix A): key
         * 00..0f, messages 00..(n-1). */
        uint64_t key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
        uint8_t m[15];

        (void)state;
        for (int i = 0; i < 15; i++)
                m[i] = (uint8_t)i;
        assert_true(pc__siphash(key, m, 0) == 0x726fdb47dd0e0e31ull);
        assert_true(pc__siphash(key, m, 15) == 0xa129ca6149be45e5ull);
}

/* ---- Connections ---------------------------------------------------------- */

static struct tserver srv;
static struct tapp cli;

static bool both_open(void *arg)
{
        (void)arg;
        return cli.accepted && srv.n == 1;
}

static bool both_closed(void *arg)
{
        (void)arg;
        return cli.closed && srv.n && srv.apps[0].closed;
}

static void setup_pair(const struct pc_tcpe_config *cfg)
{
        memset(&srv, 0, sizeof(srv));
        memset(&cli, 0, sizeof(cli));
        wire_init(&w, cfg, NULL, false);
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 40000, IP_B, 80, &tapp_cb, &cli, w.now,
                                         &cli.c),
                         0);
}

static void finish_pair(void)
{
        tapp_free(&cli);
        tserver_free(&srv);
        wire_fini(&w);
}

static void test_handshake(void **state)
{
        struct pc_tcb_info ia, ib;
        struct pc_tcpe_stats st;

        (void)state;
        setup_pair(NULL);
        pc_tcb_info(cli.c, &ia);
        assert_int_equal(ia.state, PC_TCP_SYN_SENT_STATE);
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        /* One RTT: SYN, SYN-ACK, ACK, and nothing else. */
        assert_int_equal(w.sent[0] + w.sent[1], 3);
        pc_tcb_info(cli.c, &ia);
        pc_tcb_info(srv.apps[0].c, &ib);
        assert_int_equal(ia.state, PC_TCP_ESTABLISHED);
        assert_int_equal(ib.state, PC_TCP_ESTABLISHED);
        assert_int_equal(ia.snd_nxt, ib.rcv_nxt);
        assert_int_equal(ib.snd_nxt, ia.rcv_nxt);
        assert_int_equal(ia.iss + 1, ia.snd_una);
        assert_int_equal(ib.irs, ia.iss);
        /* RFC 7323: both offered scaling; 256 KiB needs a shift of 3. */
        assert_int_equal(ia.snd_wscale, 3);
        assert_int_equal(ia.rcv_wscale, 3);
        assert_int_equal(ib.snd_wscale, 3);
        assert_int_equal(ia.mss, 1460);
        assert_int_equal(ia.rcv_wnd, 256 * 1024);
        /* The window of a SYN is not scaled: the client knows 64 KiB until
         * the server's first later segment; the server knows it all. */
        assert_int_equal(ia.snd_wnd, 65535);
        assert_int_equal(ib.snd_wnd, 256 * 1024);
        /* RFC 6928: IW10 for a 1460-byte MSS is 14600. */
        assert_int_equal(ia.cwnd, 14600);
        /* One RTT of 2 ms measured on each side (the SYN, the SYN-ACK). */
        assert_true(ia.srtt_ns == 2 * MS);
        assert_true(ib.srtt_ns == 2 * MS);
        assert_true(ia.rto_ns == 200 * MS); /* the floor */
        assert_int_equal(ia.lport, 40000);
        assert_int_equal(ib.rport, 40000);
        /* RFC 6528: the two ISNs are not related. */
        assert_int_not_equal(ia.iss, ib.iss);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.passive_opens, 1);
        assert_int_equal(st.conns, 1);
        assert_int_equal(st.syn_rcvd, 0);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.active_opens, 1);
        finish_pair();
}

static void test_options_negotiation(void **state)
{
        struct pc_tcpe_config a, b;
        struct pc_tcb_info ia, ib;

        (void)state;
        /* No scaling offered by one side: neither scales (RFC 7323 1.3);
         * the smaller MSS rules both directions' segments. */
        memset(&a, 0, sizeof(a));
        memset(a.secret, 1, 16);
        b = a;
        b.no_wscale = true;
        b.mss = 1000;
        memset(&srv, 0, sizeof(srv));
        memset(&cli, 0, sizeof(cli));
        wire_init(&w, &a, &b, false);
        assert_int_equal(pc_tcpe_listen(w.e[1], 0, 80, &tserver_cb, &srv), 0);
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 0, IP_B, 80, &tapp_cb, &cli, w.now,
                                         &cli.c),
                         0);
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        pc_tcb_info(cli.c, &ia);
        pc_tcb_info(srv.apps[0].c, &ib);
        assert_int_equal(ia.snd_wscale, 0);
        assert_int_equal(ia.rcv_wscale, 0);
        assert_int_equal(ib.snd_wscale, 0);
        assert_int_equal(ia.rcv_wnd, 65535);
        assert_int_equal(ia.mss, 1000);
        assert_int_equal(ib.mss, 1000);
        assert_true(ia.lport >= 49152);
        /* Data still flows in segments of at most 1000 bytes. */
        cli.tx_total = 100000;
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 10 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, 100000));
        assert_true(w.data_segs[0] >= 100);
        finish_pair();
}

static void test_transfer_both_ways(void **state)
{
        uint64_t na = pc_test_scaled(8 << 20), nb = pc_test_scaled(5 << 20);
        struct pc_tcpe_config cfg;
        struct pc_tcpe_stats st;

        (void)state;
        /* Both ends send on their own: with the default backpressure each
         * would stop reading once its own output is full, and so stop the
         * other (see tcp_conn.c). */
        memset(&cfg, 0, sizeof(cfg));
        memset(cfg.secret, 3, 16);
        cfg.no_backpressure = true;
        setup_pair(&cfg);
        srv.tmpl.tx_total = nb;
        srv.tmpl.pattern_seed = 77;
        /* Each half-closes once its data is queued and reads on until the
         * other's FIN. */
        srv.tmpl.shut_when_sent = true;
        srv.tmpl.no_auto = true; /* no close at the other's EOF */
        cli.no_auto = true;
        cli.tx_total = na;
        cli.chunk = 3000; /* odd sizes: the ring wraps mid-segment */
        cli.shut_when_sent = true;
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        tapp_pump(&cli);
        assert_true(wire_run(&w, both_closed, NULL, w.now + 600 * SEC));
        if (!tapp_rx_is_pattern(&srv.apps[0], 0, na)) {
                size_t k = 0;
                while (k < srv.apps[0].rx_len && srv.apps[0].rx[k] == tpattern(0, k))
                        k++;
                fail_msg("server got %zu of %llu bytes, first bad at %zu; client sent %llu, "
                         "closed %u err %d refused %d writable %u; server closed %u err %d",
                         srv.apps[0].rx_len, (unsigned long long)na, k,
                         (unsigned long long)cli.tx_sent, cli.closed, cli.close_err,
                         cli.refused, cli.writable, srv.apps[0].closed,
                         srv.apps[0].close_err);
        }
        assert_true(tapp_rx_is_pattern(&cli, 77, nb));
        assert_int_equal(cli.close_err, 0);
        assert_int_equal(srv.apps[0].close_err, 0);
        assert_int_equal(cli.eof, 1);
        assert_int_equal(srv.apps[0].eof, 1);
        assert_true(cli.refused > 0 && cli.writable > 0); /* the cap held it back */
        wire_stats(&w, 0, &st);
        assert_int_equal(st.retransmits, 0);
        assert_int_equal(st.timeouts, 0);
        assert_true(st.mem <= 256 * 1024 + 512 * 1024);
        finish_pair();
}

static void test_echo(void **state)
{
        uint64_t n = pc_test_scaled(2 << 20);

        struct pc_tcpe_config ccfg, scfg;

        (void)state;
        /* The server answers what it reads (backpressure on, the default:
         * it never sees -ENOBUFS); the client sends on its own and reads
         * everything. */
        memset(&scfg, 0, sizeof(scfg));
        memset(scfg.secret, 5, 16);
        ccfg = scfg;
        ccfg.no_backpressure = true;
        memset(&srv, 0, sizeof(srv));
        memset(&cli, 0, sizeof(cli));
        wire_init(&w, &ccfg, &scfg, false);
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 40000, IP_B, 80, &tapp_cb, &cli, w.now,
                                         &cli.c),
                         0);
        srv.tmpl.echo = true;
        cli.tx_total = n;
        cli.chunk = 1000;
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        tapp_pump(&cli);
        assert_true(wire_run(&w, NULL, NULL, w.now + 600 * SEC));
        assert_true(tapp_rx_is_pattern(&cli, 0, n));
        assert_int_equal(srv.apps[0].refused, 0);
        finish_pair();
}

static void test_active_close_time_wait(void **state)
{
        struct pc_tcpe_config cfg;
        struct pc_tcb_info i;
        struct pc_tcpe_stats st;
        struct pc_tcb *c;

        (void)state;
        memset(&cfg, 0, sizeof(cfg));
        memset(cfg.secret, 2, 16);
        cfg.time_wait_ns = 5 * SEC;
        setup_pair(&cfg);
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        c = cli.c;
        assert_int_equal(pc_tcb_send(c, "bye", 3), 0);
        assert_int_equal(pc_tcb_close(c), 0);
        assert_int_equal(pc_tcb_close(c), 0); /* idempotent */
        assert_int_equal(pc_tcb_send(c, "x", 1), -EPIPE);
        pc_tcb_info(c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_1);
        /* The server gets the data and the EOF, closes on its own. */
        assert_true(wire_run(&w, both_closed, NULL, w.now + SEC));
        assert_int_equal(srv.apps[0].rx_len, 3);
        assert_int_equal(srv.apps[0].eof, 1);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.time_wait, 1);
        assert_int_equal(st.conns, 1);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.conns, 0);
        /* TIME-WAIT lasts time_wait_ns, then the connection is gone. */
        {
                uint64_t t0 = w.now;
                assert_true(wire_run(&w, NULL, NULL, t0 + 4 * SEC));
                wire_stats(&w, 0, &st);
                assert_int_equal(st.time_wait, 1);
                assert_true(wire_run(&w, NULL, NULL, t0 + 6 * SEC));
                wire_stats(&w, 0, &st);
                assert_int_equal(st.time_wait, 0);
                assert_int_equal(st.conns, 0);
                assert_int_equal(st.mem, 0);
        }
        finish_pair();
}

static void test_passive_close_linger(void **state)
{
        struct tapp *s;
        struct pc_tcb_info i;
        struct pc_tcpe_stats st;

        (void)state;
        setup_pair(NULL);
        srv.tmpl.no_auto = true; /* pc_tcb_linger() */
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        s = &srv.apps[0];
        assert_int_equal(pc_tcb_close(cli.c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        /* The server saw the EOF and stays in CLOSE-WAIT, free to send;
         * the client sits in FIN-WAIT-2. */
        assert_int_equal(s->eof, 1);
        assert_int_equal(s->closed, 0);
        pc_tcb_info(s->c, &i);
        assert_int_equal(i.state, PC_TCP_CLOSE_WAIT);
        pc_tcb_info(cli.c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_2);
        /* But the client closed its reading too: data that arrives after
         * its close is lost, which RFC 1122 4.2.2.13 says with a reset. */
        assert_int_equal(pc_tcb_send(s->c, "late reply", 10), 0);
        assert_true(wire_run(&w, both_closed, NULL, w.now + SEC));
        assert_int_equal(cli.rx_len, 0);
        assert_int_equal(cli.close_err, -ECONNABORTED);
        assert_int_equal(s->close_err, -ECONNRESET);
        assert_int_equal(wire_drops(&w, 0, PC_TCP_CLOSED), 1);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.conns, 0);
        finish_pair();
}

static void test_fin_wait_2_limit(void **state)
{
        struct pc_tcpe_config cfg;

        (void)state;
        memset(&cfg, 0, sizeof(cfg));
        memset(cfg.secret, 4, 16);
        cfg.fin_wait2_ns = 3 * SEC;
        setup_pair(&cfg);
        srv.tmpl.no_auto = true;
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        /* The server never closes: after our close, FIN-WAIT-2 ends after
         * fin_wait2_ns, not never. */
        assert_int_equal(pc_tcb_close(cli.c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + 2 * SEC));
        assert_int_equal(cli.closed, 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + 2 * SEC));
        assert_int_equal(cli.closed, 1);
        assert_int_equal(cli.close_err, -ETIMEDOUT);
        assert_int_equal(srv.apps[0].closed, 0);
        finish_pair();
}

static void test_simultaneous_close(void **state)
{
        struct pc_tcpe_stats s0, s1;

        (void)state;
        setup_pair(NULL);
        srv.tmpl.no_auto = true;
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        /* Both FINs leave before either arrives: FIN-WAIT-1 -> CLOSING ->
         * TIME-WAIT on both sides (RFC 9293 figure 13). */
        assert_int_equal(pc_tcb_close(cli.c), 0);
        assert_int_equal(pc_tcb_close(srv.apps[0].c), 0);
        wire_flush(&w);
        assert_true(wire_run(&w, both_closed, NULL, w.now + SEC));
        assert_int_equal(cli.close_err, 0);
        assert_int_equal(srv.apps[0].close_err, 0);
        wire_stats(&w, 0, &s0);
        wire_stats(&w, 1, &s1);
        assert_int_equal(s0.time_wait, 1);
        assert_int_equal(s1.time_wait, 1);
        assert_true(wire_run(&w, NULL, NULL, w.now + 10 * SEC));
        wire_stats(&w, 0, &s0);
        assert_int_equal(s0.conns, 0);
        finish_pair();
}

static void test_simultaneous_open(void **state)
{
        struct tapp a, b;
        struct pc_tcb_info ia, ib;

        (void)state;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        wire_init(&w, NULL, NULL, false);
        /* No listener anywhere: each end connects to the other's port and
         * the SYNs cross (RFC 9293 3.5 figure 8). */
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 1000, IP_B, 2000, &tapp_cb, &a, w.now,
                                         &a.c),
                         0);
        assert_int_equal(pc_tcpe_connect(w.e[1], IP_B, 2000, IP_A, 1000, &tapp_cb, &b, w.now,
                                         &b.c),
                         0);
        wire_flush(&w);
        assert_true(wire_run(&w, NULL, NULL, w.now + 100 * MS));
        assert_int_equal(a.accepted, 1);
        assert_int_equal(b.accepted, 1);
        pc_tcb_info(a.c, &ia);
        pc_tcb_info(b.c, &ib);
        assert_int_equal(ia.state, PC_TCP_ESTABLISHED);
        assert_int_equal(ib.state, PC_TCP_ESTABLISHED);
        assert_int_equal(ia.snd_nxt, ib.rcv_nxt);
        a.tx_total = b.tx_total = 300000;
        tapp_pump(&a);
        tapp_pump(&b);
        assert_true(wire_run(&w, NULL, NULL, w.now + 60 * SEC));
        assert_true(tapp_rx_is_pattern(&a, 0, 300000));
        assert_true(tapp_rx_is_pattern(&b, 0, 300000));
        tapp_free(&a);
        tapp_free(&b);
        wire_fini(&w);
}

static void test_connect_refused(void **state)
{
        struct tapp a;
        struct pc_tcpe_stats st;

        (void)state;
        memset(&a, 0, sizeof(a));
        wire_init(&w, NULL, NULL, false);
        /* RFC 9293 3.10.7.1: a SYN to no listener gets a RST, and the RST
         * acknowledging our SYN refuses the connection (3.10.7.3). */
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 0, IP_B, 81, &tapp_cb, &a, w.now, &a.c),
                         0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(a.accepted, 0);
        assert_int_equal(a.closed, 1);
        assert_int_equal(a.close_err, -ECONNREFUSED);
        assert_int_equal(wire_drops(&w, 1, PC_TCP_NO_CONN), 1);
        wire_stats(&w, 0, &st);
        assert_int_equal(st.conns, 0);
        wire_fini(&w);
}

static void test_time_wait_reopen(void **state)
{
        struct tapp more[2], again;
        struct pc_tcpe_stats st;

        (void)state;
        /* The server closes first, so its side holds TIME-WAIT; the same
         * client port connects again at once: the new SYN lies above the
         * old sequence space, so TIME-WAIT gives way (RFC 9293 3.6.1).
         * Three are in TIME-WAIT; the middle one reopens. */
        setup_pair(NULL);
        memset(more, 0, sizeof(more));
        for (int k = 0; k < 2; k++)
                assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, (uint16_t)(40001 + k), IP_B, 80,
                                                 &tapp_cb, &more[k], w.now, &more[k].c),
                                 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(srv.n, 3);
        for (unsigned k = 0; k < 3; k++)
                assert_int_equal(pc_tcb_close(srv.apps[k].c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        wire_stats(&w, 1, &st);
        assert_int_equal(st.time_wait, 3);
        memset(&again, 0, sizeof(again));
        w.now += 10 * MS; /* the client's new ISN moves on with the clock */
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 40001, IP_B, 80, &tapp_cb, &again, w.now,
                                         &again.c),
                         0);
        wire_flush(&w);
        assert_true(wire_run(&w, NULL, NULL, w.now + 100 * MS));
        assert_int_equal(again.accepted, 1);
        assert_int_equal(srv.n, 4);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.tw_recycled, 1);
        assert_int_equal(st.time_wait, 2);
        /* The other two end on time. */
        assert_true(wire_run(&w, NULL, NULL, w.now + 3 * SEC));
        wire_stats(&w, 1, &st);
        assert_int_equal(st.time_wait, 0);
        assert_int_equal(st.conns, 1);
        tapp_free(&again);
        tapp_free(&more[0]);
        tapp_free(&more[1]);
        finish_pair();
}

static void test_send_before_connected(void **state)
{
        struct tapp a;

        (void)state;
        /* RFC 9293 3.10.2: data queued in SYN-SENT goes once established;
         * a close there cancels the open. */
        setup_pair(NULL);
        assert_int_equal(pc_tcb_send(cli.c, "early", 5), 0);
        assert_int_equal(pc_tcb_shutdown(cli.c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(srv.n, 1);
        assert_int_equal(srv.apps[0].rx_len, 5);
        assert_memory_equal(srv.apps[0].rx, "early", 5);
        assert_int_equal(srv.apps[0].eof, 1);
        assert_int_equal(cli.closed, 1);
        assert_int_equal(cli.close_err, 0);

        memset(&a, 0, sizeof(a));
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 0, IP_B, 80, &tapp_cb, &a, w.now, &a.c),
                         0);
        assert_int_equal(pc_tcb_close(a.c), 0);
        assert_int_equal(a.closed, 0);
        wire_flush(&w);
        assert_int_equal(a.closed, 1);
        assert_int_equal(a.close_err, -ECANCELED);
        assert_int_equal(srv.n, 1);
        finish_pair();
}

static void test_abort(void **state)
{
        struct tapp a;

        (void)state;
        setup_pair(NULL);
        assert_true(wire_run(&w, both_open, NULL, w.now + SEC));
        assert_false(pc_tcpe_pending(w.e[0]));
        assert_int_equal(pc_tcb_abort(cli.c), 0);
        assert_int_equal(pc_tcb_abort(cli.c), -EINVAL);
        assert_int_equal(pc_tcb_send(cli.c, "x", 1), -EPIPE);
        /* on_close comes at the next engine call, not inside the abort. */
        assert_int_equal(cli.closed, 0);
        assert_true(pc_tcpe_pending(w.e[0]));
        assert_true(wire_run(&w, both_closed, NULL, w.now + SEC));
        assert_false(pc_tcpe_pending(w.e[0]));
        assert_int_equal(cli.close_err, -ECONNABORTED);
        assert_int_equal(srv.apps[0].close_err, -ECONNRESET);
        /* Destroying an engine with an abort not yet reaped frees it all,
         * without callbacks (ASan would see a leak). */
        memset(&a, 0, sizeof(a));
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 0, IP_B, 80, &tapp_cb, &a, w.now, &a.c),
                         0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(a.accepted, 1);
        assert_int_equal(pc_tcb_send(a.c, "queued", 6), 0);
        assert_int_equal(pc_tcb_abort(a.c), 0);
        finish_pair();
        assert_int_equal(a.closed, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_header),
                cmocka_unit_test(test_parse_malformed),
                cmocka_unit_test(test_siphash_vectors),
                cmocka_unit_test(test_handshake),
                cmocka_unit_test(test_options_negotiation),
                cmocka_unit_test(test_transfer_both_ways),
                cmocka_unit_test(test_echo),
                cmocka_unit_test(test_active_close_time_wait),
                cmocka_unit_test(test_passive_close_linger),
                cmocka_unit_test(test_fin_wait_2_limit),
                cmocka_unit_test(test_simultaneous_close),
                cmocka_unit_test(test_simultaneous_open),
                cmocka_unit_test(test_connect_refused),
                cmocka_unit_test(test_time_wait_reopen),
                cmocka_unit_test(test_send_before_connected),
                cmocka_unit_test(test_abort),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
