/* SPDX-License-Identifier: MIT */
/*
 * The TCP engine, part four: the application's calls a service API sits
 * on. Gather sends with one cap check; bytes sent by reference (queued
 * without a copy, segments built from them, retransmissions reading them
 * again, given back once acknowledged or when the connection ends, before
 * on_close); the acknowledged-bytes callback; a listener that stops
 * (RFC 9293 3.10.7.1: a SYN to no listener is reset); keepalive probes
 * (RFC 9293 3.8.4, RFC 1122 4.2.3.6) timed on the virtual clock; and the
 * half-close (RFC 9293 3.10.4: CLOSE in ESTABLISHED, receiving goes on).
 */
#include <errno.h>
#include <string.h>

#include "pc_test.h"
#include "tcp_wire.h"

static struct wire w;
static struct tserver srv;
static struct tapp cli;

/* Drop side 0's data segments by ordinal, or a share of everything. */
struct loss {
        uint64_t n;
        uint64_t drop[4];
        unsigned pct;
        uint64_t rng;
        bool blackhole[2];
};

static struct loss loss;

static int loss_filter(struct wire *wr, int from, const struct pc_tcp_seg *s, uint64_t *extra,
                       void *arg)
{
        struct loss *l = arg;

        (void)wr;
        (void)extra;
        if (l->blackhole[from])
                return WIRE_DROP;
        if (from == 0 && s->len) {
                l->n++;
                for (int i = 0; i < 4; i++)
                        if (l->drop[i] == l->n)
                                return WIRE_DROP;
        }
        if (l->pct) {
                l->rng = l->rng * 6364136223846793005ull + 1442695040888963407ull;
                if ((l->rng >> 33) % 100 < l->pct)
                        return WIRE_DROP;
        }
        return WIRE_PASS;
}

static bool both_open(void *arg)
{
        (void)arg;
        return cli.accepted && srv.n == 1;
}

static bool cli_closed(void *arg)
{
        (void)arg;
        return cli.closed != 0;
}

static void setup_pair(const struct pc_tcpe_config *cfg)
{
        memset(&srv, 0, sizeof(srv));
        memset(&cli, 0, sizeof(cli));
        memset(&loss, 0, sizeof(loss));
        wire_init(&w, cfg, cfg, false);
        w.filter = loss_filter;
        w.filter_arg = &loss;
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        assert_int_equal(pc_tcpe_connect(w.e[0], IP_A, 40000, IP_B, 80, &tapp_cb, &cli, w.now,
                                         &cli.c),
                         0);
}

static void open_pair(const struct pc_tcpe_config *cfg)
{
        setup_pair(cfg);
        assert_true(wire_run(&w, both_open, NULL, w.now + 10 * SEC));
}

static void finish(void)
{
        tapp_free(&cli);
        tserver_free(&srv);
        wire_fini(&w);
}

static uint64_t srv_want;

static bool srv_has_all(void *arg)
{
        (void)arg;
        return srv.n && srv.apps[0].rx_len >= srv_want && cli.c && pc_tcb_buffered(cli.c) == 0;
}

/* The stream both sides agree on: pattern 0. */
static uint8_t stream[700000];

static void stream_fill(void)
{
        for (size_t i = 0; i < sizeof(stream); i++)
                stream[i] = tpattern(0, i);
}

/* ---- Gather sends --------------------------------------------------------- */

static void test_sendv_one_cap_check(void **state)
{
        struct pc_tcpe_config c = {.snd_cap = 10000};
        struct iovec v[3];

        (void)state;
        stream_fill();
        memset(c.secret, 3, 16);
        open_pair(&c);
        /* Three pieces, sent as their concatenation. */
        v[0] = (struct iovec){stream, 100};
        v[1] = (struct iovec){stream + 100, 0};
        v[2] = (struct iovec){stream + 100, 4900};
        assert_int_equal(pc_tcb_sendv(cli.c, v, 3), 0);
        assert_int_equal(pc_tcb_buffered(cli.c), 5000);
        /* Over the cap in total though each piece fits: nothing queued. */
        v[0] = (struct iovec){stream + 5000, 3000};
        v[1] = (struct iovec){stream + 8000, 3000};
        assert_int_equal(pc_tcb_sendv(cli.c, v, 2), -ENOBUFS);
        assert_int_equal(pc_tcb_buffered(cli.c), 5000);
        v[0] = (struct iovec){stream, 10001};
        assert_int_equal(pc_tcb_sendv(cli.c, v, 1), -EMSGSIZE);
        v[0] = (struct iovec){NULL, 1};
        assert_int_equal(pc_tcb_sendv(cli.c, v, 1), -EINVAL);
        assert_int_equal(pc_tcb_sendv(cli.c, v, -1), -EINVAL);
        assert_int_equal(pc_tcb_sendv(cli.c, NULL, 0), 0);
        srv_want = 5000;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 10 * SEC));
        /* The refusal asked for on_writable, which came with the ACK. */
        assert_int_equal(cli.writable, 1);
        v[0] = (struct iovec){stream + 5000, 3000};
        v[1] = (struct iovec){stream + 8000, 3000};
        assert_int_equal(pc_tcb_sendv(cli.c, v, 2), 0);
        srv_want = 11000;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 10 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, 11000));
        assert_int_equal(cli.acked, 11000);
        assert_int_equal(pc_tcb_close(cli.c), 0);
        assert_int_equal(pc_tcb_sendv(cli.c, v, 2), -EPIPE);
        finish();
}

/* ---- Bytes by reference --------------------------------------------------- */

/* One pc_tcb_send_ref(): its bytes are stream[off, end), and done must
 * come after the peer acknowledged them, before on_close, once. */
struct ref {
        uint32_t off, end;
        unsigned done;
        bool ack_checked;
};

static struct ref refs[4096];
static unsigned nrefs, refs_done, done_after_close;

static void ref_done(void *arg)
{
        struct ref *r = arg;
        struct pc_tcb_info i;

        r->done++;
        refs_done++;
        if (cli.closed)
                done_after_close++;
        if (cli.c && !cli.closed) {
                pc_tcb_info(cli.c, &i);
                r->ack_checked = i.snd_una - (i.iss + 1) >= r->end;
        }
}

static void refs_reset(void)
{
        memset(refs, 0, sizeof(refs));
        nrefs = refs_done = done_after_close = 0;
}

static int send_ref(uint32_t off, uint32_t len)
{
        struct ref *r = &refs[nrefs];
        int rc;

        assert_true(nrefs < 4096);
        r->off = off;
        r->end = off + len;
        rc = pc_tcb_send_ref(cli.c, stream + off, len, ref_done, r);
        if (rc == 0)
                nrefs++;
        return rc;
}

static bool below_half(void *arg)
{
        (void)arg;
        return cli.c == NULL || pc_tcb_buffered(cli.c) <= 128 * 1024;
}

static void test_send_ref_retransmit_reads_again(void **state)
{
        struct pc_tcpe_stats st;
        uint32_t off = 0;

        (void)state;
        stream_fill();
        refs_reset();
        open_pair(NULL);
        /* RFC 9293 3.8.1: what is lost goes again, here read again from
         * the application's memory: copies and references interleaved,
         * the second and fifth data segments lost. */
        loss.drop[0] = 2;
        loss.drop[1] = 5;
        assert_int_equal(pc_tcb_send(cli.c, stream, 1000), 0);
        off = 1000;
        assert_int_equal(send_ref(off, 5000), 0);
        off += 5000;
        assert_int_equal(pc_tcb_send(cli.c, stream + off, 3000), 0);
        off += 3000;
        assert_int_equal(send_ref(off, 20000), 0);
        off += 20000;
        assert_int_equal(pc_tcb_send(cli.c, stream + off, 10), 0);
        off += 10;
        /* The engine holds 4010 bytes of copies and two references, not
         * the 25000 referenced bytes. */
        wire_stats(&w, 0, &st);
        assert_true(st.mem < 16384);
        {
                struct pc_tcb_info i;
                pc_tcb_info(cli.c, &i);
                assert_int_equal(i.refs, 2);
                assert_int_equal(i.buffered, off);
        }
        assert_int_equal(refs_done, 0);
        srv_want = off;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 30 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, off));
        wire_stats(&w, 0, &st);
        assert_true(st.retransmits >= 2);
        assert_int_equal(refs_done, 2);
        for (unsigned i = 0; i < nrefs; i++) {
                assert_int_equal(refs[i].done, 1);
                assert_true(refs[i].ack_checked);
        }
        assert_int_equal(cli.acked, off);
        finish();
}

static void test_send_ref_stream_with_loss(void **state)
{
        uint32_t off = 0, total = pc_test_scaled(600000);
        unsigned k = 0;

        (void)state;
        stream_fill();
        refs_reset();
        open_pair(NULL);
        loss.pct = 2;
        loss.rng = 11;
        /* Copies and references of 1 byte to 20 KB, mixed, past the cap
         * (the ring wraps between references) and through 2 % loss both
         * ways. */
        while (off < total) {
                uint32_t len = (uint32_t)((k * 7919u + 13) % 20000u) + 1;
                int rc;

                if (len > total - off)
                        len = total - off;
                rc = (k % 3 == 1) ? pc_tcb_send(cli.c, stream + off, len) : send_ref(off, len);
                if (rc == -ENOBUFS) {
                        assert_true(wire_run(&w, below_half, NULL, w.now + 60 * SEC));
                        continue;
                }
                assert_int_equal(rc, 0);
                off += len;
                k++;
        }
        srv_want = total;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 600 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, total));
        assert_int_equal(refs_done, nrefs);
        for (unsigned i = 0; i < nrefs; i++) {
                assert_int_equal(refs[i].done, 1);
                assert_true(refs[i].ack_checked);
        }
        assert_int_equal(cli.acked, total);
        finish();
}

static void test_send_ref_many_small_pieces(void **state)
{
        uint32_t off = 0;
        unsigned k;

        (void)state;
        stream_fill();
        refs_reset();
        setup_pair(NULL);
        /* Queued before the handshake ends: 1-byte references up to the
         * limit, then the next is refused. */
        for (k = 0; k < PC_TCP_SREF_MAX; k++, off++)
                assert_int_equal(send_ref(off, 1), 0);
        assert_int_equal(send_ref(off, 1), -ENOBUFS);
        assert_true(wire_run(&w, both_open, NULL, w.now + 10 * SEC));
        srv_want = off;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 30 * SEC));
        assert_int_equal(cli.writable, 1);
        assert_int_equal(refs_done, PC_TCP_SREF_MAX);
        /* Tiny references between tiny copies: each segment carries at
         * most PC_TCP_FRAME_PIECES pieces and leaves at once, as a full one
         * would. */
        w.max_pieces = 0;
        for (k = 0; k < 300; k++) {
                uint32_t len = k % 5 + 1;
                if (k & 1)
                        assert_int_equal(pc_tcb_send(cli.c, stream + off, len), 0);
                else
                        assert_int_equal(send_ref(off, len), 0);
                off += len;
        }
        srv_want = off;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 30 * SEC));
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, off));
        assert_int_equal(w.max_pieces, PC_TCP_FRAME_PIECES);
        assert_int_equal(refs_done, nrefs);
        finish();
}

static void test_send_ref_empty(void **state)
{
        (void)state;
        stream_fill();
        refs_reset();
        open_pair(NULL);
        /* Nothing queued: done at the next flush, never inside the call. */
        assert_int_equal(send_ref(0, 0), 0);
        assert_int_equal(refs_done, 0);
        wire_flush(&w);
        assert_int_equal(refs_done, 1);
        /* Behind data: once that data is acknowledged. */
        assert_int_equal(pc_tcb_send(cli.c, stream, 100), 0);
        assert_int_equal(send_ref(100, 0), 0);
        wire_flush(&w);
        assert_int_equal(refs_done, 1);
        srv_want = 100;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 10 * SEC));
        assert_int_equal(refs_done, 2);
        assert_true(refs[1].ack_checked);
        assert_int_equal(pc_tcb_send_ref(cli.c, stream, 1, NULL, NULL), -EINVAL);
        assert_int_equal(pc_tcb_send_ref(cli.c, NULL, 1, ref_done, NULL), -EINVAL);
        finish();
}

static void test_send_ref_done_before_on_close(void **state)
{
        (void)state;
        stream_fill();
        /* Our abort: the peer never acknowledged; done runs at the flush
         * that reports the end, before on_close. */
        refs_reset();
        open_pair(NULL);
        loss.blackhole[1] = true;
        assert_int_equal(send_ref(0, 3000), 0);
        assert_int_equal(send_ref(3000, 3000), 0);
        wire_flush(&w);
        assert_int_equal(pc_tcb_abort(cli.c), 0);
        assert_int_equal(refs_done, 0);
        wire_flush(&w);
        assert_int_equal(refs_done, 2);
        assert_int_equal(done_after_close, 0);
        assert_int_equal(cli.closed, 1);
        assert_int_equal(cli.close_err, -ECONNABORTED);
        finish();

        /* The peer's reset. */
        refs_reset();
        open_pair(NULL);
        loss.blackhole[1] = true;
        assert_int_equal(send_ref(0, 3000), 0);
        wire_flush(&w);
        loss.blackhole[1] = false;
        assert_int_equal(pc_tcb_abort(srv.apps[0].c), 0);
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 10 * SEC));
        assert_int_equal(cli.close_err, -ECONNRESET);
        assert_int_equal(refs_done, 1);
        assert_int_equal(done_after_close, 0);
        finish();

        /* The retry limit. */
        refs_reset();
        open_pair(NULL);
        loss.blackhole[1] = true;
        assert_int_equal(send_ref(0, 3000), 0);
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 3600 * SEC));
        assert_int_equal(cli.close_err, -ETIMEDOUT);
        assert_int_equal(refs_done, 1);
        assert_int_equal(done_after_close, 0);
        finish();

        /* An engine destroyed with references held gives them back. */
        refs_reset();
        open_pair(NULL);
        loss.blackhole[1] = true;
        assert_int_equal(send_ref(0, 3000), 0);
        wire_flush(&w);
        assert_int_equal(refs_done, 0);
        finish();
        assert_int_equal(refs_done, 1);
}

/* ---- Acknowledged bytes --------------------------------------------------- */

static void test_on_acked_counts_data_only(void **state)
{
        (void)state;
        stream_fill();
        refs_reset();
        open_pair(NULL);
        /* The SYN took no count; data does, once, however often it went. */
        assert_int_equal(cli.acked, 0);
        loss.drop[0] = 1;
        assert_int_equal(pc_tcb_send(cli.c, stream, 3000), 0);
        srv_want = 3000;
        assert_true(wire_run(&w, srv_has_all, NULL, w.now + 10 * SEC));
        assert_int_equal(cli.acked, 3000);
        /* Nor does the FIN. */
        assert_int_equal(pc_tcb_close(cli.c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + 10 * SEC));
        assert_int_equal(cli.acked, 3000);
        finish();
}

/* ---- Listeners that stop -------------------------------------------------- */

static void test_unlisten_rfc9293_3_10_7_1(void **state)
{
        static const uint8_t syn_opts[4] = {2, 4, 0x05, 0xb4};
        const struct wire_cap *k;
        struct pc_tcpe_stats st;
        uint32_t isn;

        (void)state;
        memset(&srv, 0, sizeof(srv));
        wire_init(&w, NULL, NULL, true);
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        /* One connection open, one half-open. */
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 100, 0, PC_TCP_SYN, 0xffff, syn_opts, 4,
                                     NULL, 0),
                         PC_TCP_OK);
        isn = wire_last(&w)->s.seq;
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 101, isn + 1, PC_TCP_ACK, 0xffff, NULL, 0,
                                     NULL, 0),
                         PC_TCP_OK);
        assert_int_equal(srv.n, 1);
        assert_int_equal(wire_inject(&w, 0, 5001, 80, 500, 0, PC_TCP_SYN, 0xffff, syn_opts, 4,
                                     NULL, 0),
                         PC_TCP_OK);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.syn_rcvd, 1);
        assert_int_equal(pc_tcpe_unlisten(w.e[1], IP_B, 80), 0);
        assert_int_equal(pc_tcpe_unlisten(w.e[1], IP_B, 80), -ENOENT);
        assert_int_equal(pc_tcpe_unlisten(w.e[1], IP_B, 0), -EINVAL);
        /* The half-open one was reset at its sequence numbers. */
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_RST | PC_TCP_ACK);
        assert_int_equal(k->s.dport, 5001);
        assert_int_equal(k->s.ack, 501);
        wire_flush(&w);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.syn_rcvd, 0);
        assert_int_equal(st.conns, 1);
        /* A new SYN meets no listener: <SEQ=0><ACK=SEG.SEQ+1><CTL=RST,ACK>. */
        assert_int_equal(wire_inject(&w, 0, 5002, 80, 900, 0, PC_TCP_SYN, 0xffff, syn_opts, 4,
                                     NULL, 0),
                         PC_TCP_NO_CONN);
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_RST | PC_TCP_ACK);
        assert_int_equal(k->s.ack, 901);
        /* The open connection goes on. */
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 101, isn + 1, PC_TCP_ACK | PC_TCP_PSH,
                                     0xffff, NULL, 0, "hello", 5),
                         PC_TCP_OK);
        assert_int_equal(srv.apps[0].rx_len, 5);
        assert_int_equal(srv.apps[0].closed, 0);
        /* And the port can be listened on again. */
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        tserver_free(&srv);
        wire_fini(&w);
}

/* ---- Keepalive ------------------------------------------------------------ */

static void test_keepalive_probe_rfc9293_3_8_4(void **state)
{
        static const uint8_t syn_opts[4] = {2, 4, 0x05, 0xb4};
        const struct wire_cap *k;
        struct pc_tcb_info i;
        struct tapp *a;
        uint32_t isn;
        uint64_t t0;
        size_t n0;

        (void)state;
        memset(&srv, 0, sizeof(srv));
        wire_init(&w, NULL, NULL, true);
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &tserver_cb, &srv), 0);
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 100, 0, PC_TCP_SYN, 0xffff, syn_opts, 4,
                                     NULL, 0),
                         PC_TCP_OK);
        isn = wire_last(&w)->s.seq;
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 101, isn + 1, PC_TCP_ACK, 0xffff, NULL, 0,
                                     NULL, 0),
                         PC_TCP_OK);
        a = &srv.apps[0];
        t0 = w.now;
        assert_int_equal(pc_tcb_keepalive(a->c, 10 * SEC, 2 * SEC, 3), 0);
        assert_int_equal(pc_tcb_keepalive(a->c, 10 * SEC, 2 * SEC, 0), -EINVAL);
        pc_tcb_info(a->c, &i);
        assert_true(i.keepalive);
        n0 = w.ncap;
        /* Quiet for the idle time, to the nanosecond. */
        assert_true(wire_run(&w, NULL, NULL, t0 + 10 * SEC - 1));
        assert_int_equal(w.ncap, n0);
        assert_true(wire_run(&w, NULL, NULL, t0 + 10 * SEC));
        assert_int_equal(w.ncap, n0 + 1);
        /* The probe: no data, SEQ = SND.UNA - 1, an ACK. */
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_ACK);
        assert_int_equal(k->len, 0);
        assert_int_equal(k->s.seq, isn);
        assert_int_equal(k->s.ack, 101);
        /* Answered one interval later: the idle time starts again. */
        assert_true(wire_run(&w, NULL, NULL, t0 + 11 * SEC));
        assert_int_equal(w.ncap, n0 + 1);
        assert_int_equal(wire_inject(&w, 0, 5000, 80, 101, isn + 1, PC_TCP_ACK, 0xffff, NULL, 0,
                                     NULL, 0),
                         PC_TCP_OK);
        assert_true(wire_run(&w, NULL, NULL, t0 + 21 * SEC - 1));
        assert_int_equal(w.ncap, n0 + 1);
        /* Unanswered: probes at 21, 23, 25 s; after the third and one more
         * interval (27 s), the connection fails. */
        assert_true(wire_run(&w, NULL, NULL, t0 + 21 * SEC));
        assert_int_equal(w.ncap, n0 + 2);
        assert_true(wire_run(&w, NULL, NULL, t0 + 23 * SEC));
        assert_int_equal(w.ncap, n0 + 3);
        assert_true(wire_run(&w, NULL, NULL, t0 + 25 * SEC));
        assert_int_equal(w.ncap, n0 + 4);
        assert_int_equal(wire_last(&w)->s.seq, isn);
        assert_true(wire_run(&w, NULL, NULL, t0 + 27 * SEC - 1));
        assert_int_equal(a->closed, 0);
        assert_true(wire_run(&w, NULL, NULL, t0 + 27 * SEC));
        assert_int_equal(a->closed, 1);
        assert_int_equal(a->close_err, -ETIMEDOUT);
        {
                struct pc_tcpe_stats st;
                wire_stats(&w, 1, &st);
                assert_int_equal(st.keepalive_probes, 4);
        }
        tserver_free(&srv);
        wire_fini(&w);
}

/* ---- Half-close ----------------------------------------------------------- */

static void test_shutdown_reads_on_rfc9293_3_10_4(void **state)
{
        struct pc_tcb_info i;

        (void)state;
        open_pair(NULL);
        /* CLOSE in ESTABLISHED: our FIN after what is queued, and the
         * connection still receives (FIN-WAIT-1, FIN-WAIT-2). */
        cli.tx_total = 5000;
        tapp_pump(&cli);
        assert_int_equal(pc_tcb_shutdown(cli.c), 0);
        assert_int_equal(pc_tcb_send(cli.c, "x", 1), -EPIPE);
        assert_int_equal(pc_tcb_shutdown(cli.c), 0);
        assert_int_equal(pc_tcb_linger(srv.apps[0].c), 0);
        assert_true(wire_run(&w, NULL, NULL, w.now + SEC));
        assert_int_equal(srv.apps[0].eof, 1);
        assert_true(tapp_rx_is_pattern(&srv.apps[0], 0, 5000));
        pc_tcb_info(cli.c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_2);
        srv.apps[0].tx_total = 7000;
        srv.apps[0].pattern_seed = 5;
        srv.apps[0].close_when_sent = true;
        tapp_pump(&srv.apps[0]);
        assert_true(wire_run(&w, cli_closed, NULL, w.now + 10 * SEC));
        assert_true(tapp_rx_is_pattern(&cli, 5, 7000));
        assert_int_equal(cli.eof, 1);
        assert_int_equal(cli.close_err, 0);
        finish();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sendv_one_cap_check),
                cmocka_unit_test(test_send_ref_retransmit_reads_again),
                cmocka_unit_test(test_send_ref_stream_with_loss),
                cmocka_unit_test(test_send_ref_many_small_pieces),
                cmocka_unit_test(test_send_ref_empty),
                cmocka_unit_test(test_send_ref_done_before_on_close),
                cmocka_unit_test(test_on_acked_counts_data_only),
                cmocka_unit_test(test_unlisten_rfc9293_3_10_7_1),
                cmocka_unit_test(test_keepalive_probe_rfc9293_3_8_4),
                cmocka_unit_test(test_shutdown_reads_on_rfc9293_3_10_4),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
