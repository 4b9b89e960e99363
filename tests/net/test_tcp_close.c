/* SPDX-License-Identifier: MIT */
/*
 * The TCP engine, part four: closing while the peer still sends. RFC 1122
 * 4.2.2.13 has data that arrives after our close answered with a reset;
 * these tests check that the reset never overtakes what the application
 * queued before closing (a short error reply to a request that is still
 * arriving is the common case): such data is dropped unacknowledged while
 * our output and FIN are outstanding, they keep flowing, and the reset
 * follows the ACK of our FIN. A close with nothing outstanding still
 * resets at once; memory stays bounded while the peer keeps sending; and
 * a peer that takes nothing more after our close is reset after
 * TCP_LINGER_NS (60 s). End 0 of the wire is a raw host: the test writes
 * its segments and reads what the engine answers.
 */
#include <errno.h>
#include <string.h>

#include "pc_test.h"
#include "tcp_wire.h"

#define SPORT 5555
#define LINGER (60 * SEC) /* TCP_LINGER_NS */

static const uint8_t syn_opts[8] = {2, 4, 0x05, 0xb4, 1, 3, 3, 2}; /* MSS 1460, WS 2 */

/* The service: answers the first bytes of a request with a reply of
 * reply_len bytes and closes, unless told to wait (manual). */
struct svc {
        struct pc_tcb *c;
        size_t got, reply_len;
        unsigned closed, eof;
        int close_err;
        bool manual, pause_at_accept;
};

static struct wire w;
static struct svc svc;

static void svc_reply_and_close(struct svc *s)
{
        static uint8_t reply[32768];

        assert_true(s->reply_len <= sizeof(reply));
        memset(reply, 'R', s->reply_len);
        if (s->reply_len)
                assert_int_equal(pc_tcb_send(s->c, reply, s->reply_len), 0);
        assert_int_equal(pc_tcb_close(s->c), 0);
}

static void svc_accept(struct pc_tcb *c, void *arg)
{
        struct svc *s = arg;

        s->c = c;
        if (s->pause_at_accept)
                assert_int_equal(pc_tcb_pause(c, true), 0);
}

static void svc_data(struct pc_tcb *c, const void *data, size_t len, void *arg)
{
        struct svc *s = arg;

        (void)data;
        assert_ptr_equal(s->c, c);
        if (len == 0) {
                s->eof++;
                return;
        }
        s->got += len;
        if (!s->manual)
                svc_reply_and_close(s);
}

static void svc_close(struct pc_tcb *c, int err, void *arg)
{
        struct svc *s = arg;

        assert_ptr_equal(s->c, c);
        s->closed++;
        s->close_err = err;
        s->c = NULL;
}

static const struct pc_tcpe_callbacks svc_cb = {
        .on_accept = svc_accept,
        .on_data = svc_data,
        .on_close = svc_close,
};

static void setup(void)
{
        struct pc_tcpe_config c;

        memset(&svc, 0, sizeof(svc));
        memset(&c, 0, sizeof(c));
        memset(c.secret, 9, 16);
        wire_init(&w, &c, &c, true);
        assert_int_equal(pc_tcpe_listen(w.e[1], IP_B, 80, &svc_cb, &svc), 0);
}

static void finish(void)
{
        wire_fini(&w);
}

/* A segment from the raw end, flushed as a poller pass would. */
static enum pc_tcp_err inject(uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
                              const void *data, size_t len)
{
        return wire_inject(&w, 0, SPORT, 80, seq, ack, flags, wnd, NULL, 0, data, len);
}

/* A segment taken in without the flush: the next of one RX burst, which
 * the DPDK stack takes in before it flushes. */
static enum pc_tcp_err take_in(uint32_t seq, uint32_t ack, const void *data, size_t len)
{
        static uint8_t buf[2048];
        size_t n;

        assert_true(len + PC_TCP_HLEN <= sizeof(buf));
        n = tcp_seg_build(buf, IP_A, IP_B, SPORT, 80, seq, ack, PC_TCP_ACK, 0xffff, NULL, 0,
                          data, len);
        return pc_tcpe_input(w.e[1], IP_A, IP_B, buf, n, w.now);
}

/* The handshake by hand, our ISN 1000; returns the server's. */
static uint32_t raw_connect(void)
{
        const struct wire_cap *k;

        assert_int_equal(wire_inject(&w, 0, SPORT, 80, 1000, 0, PC_TCP_SYN, 0xffff, syn_opts, 8,
                                     NULL, 0),
                         PC_TCP_OK);
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_SYN | PC_TCP_ACK);
        assert_int_equal(inject(1001, k->s.seq + 1, PC_TCP_ACK, 0xffff, NULL, 0), PC_TCP_OK);
        assert_non_null(svc.c);
        return k->s.seq;
}

/* Whether a reset is among the segments captured since @from. */
static bool rst_since(size_t from)
{
        for (size_t i = from; i < w.ncap; i++)
                if (w.cap[i % WIRE_NCAP].flags & PC_TCP_RST)
                        return true;
        return false;
}

/* The highest sequence end (data and FIN) captured since @from, and the
 * data bytes among them, each byte once. */
static uint32_t sent_end(size_t from, uint32_t start, size_t *bytes)
{
        uint32_t end = start;

        *bytes = 0;
        for (size_t i = from; i < w.ncap; i++) {
                const struct wire_cap *k = &w.cap[i % WIRE_NCAP];
                uint32_t e = k->s.seq + (uint32_t)k->len;

                if (k->len && (int32_t)(e - end) > 0)
                        *bytes += e - end - ((int32_t)(k->s.seq - end) > 0 ? k->s.seq - end : 0);
                if (k->flags & PC_TCP_FIN)
                        e++;
                if ((int32_t)(e - end) > 0)
                        end = e;
        }
        return end;
}

static uint8_t chunk[1460];

/* ---- The reply goes first ------------------------------------------------- */

static void test_rfc1122_4_2_2_13_reply_before_reset(void **state)
{
        const struct wire_cap *k;
        struct pc_tcb_info i;
        size_t n0, bytes;
        uint32_t s, fin;

        (void)state;
        setup();
        svc.reply_len = 100;
        s = raw_connect();
        memset(chunk, 'G', sizeof(chunk));
        /* One RX burst: the request's first segment, whose reader answers
         * 431 and closes, then the next segment of the same request. The
         * second arrives after the close with the reply still queued: it
         * is dropped, unacknowledged, and no reset is sent. */
        n0 = w.ncap;
        assert_int_equal(take_in(1001, s + 1, chunk, 1000), PC_TCP_OK);
        assert_int_equal(svc.got, 1000);
        assert_non_null(svc.c);
        assert_int_equal(take_in(2001, s + 1, chunk, 1000), PC_TCP_DISCARD);
        assert_int_equal(w.ncap, n0);
        assert_non_null(svc.c);
        /* The flush sends the reply and the FIN, acknowledging only the
         * first segment. */
        pc_tcpe_flush(w.e[1], w.now);
        fin = sent_end(n0, s + 1, &bytes);
        assert_int_equal(bytes, 100);
        assert_int_equal(fin, s + 1 + 100 + 1);
        assert_false(rst_since(n0));
        k = wire_last(&w);
        assert_true(k->flags & PC_TCP_FIN);
        assert_int_equal(k->s.ack, 2001);
        /* More of the request, acknowledging part of the reply: dropped,
         * and the connection waits for the rest to be acknowledged. */
        n0 = w.ncap;
        assert_int_equal(inject(2001, s + 51, PC_TCP_ACK, 0xffff, chunk, 1000), PC_TCP_DISCARD);
        assert_int_equal(inject(3001, s + 101, PC_TCP_ACK, 0xffff, chunk, 1000), PC_TCP_DISCARD);
        assert_false(rst_since(n0));
        assert_int_equal(svc.closed, 0);
        pc_tcb_info(svc.c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_1);
        assert_int_equal(i.rcv_nxt, 2001);
        assert_int_equal(i.held, 0);
        assert_int_equal(svc.got, 1000);
        /* The segment that acknowledges our FIN brings the reset, at
         * SND.NXT, where the peer's RCV.NXT now is (RFC 5961 3.2). */
        n0 = w.ncap;
        assert_int_equal(inject(2001, fin, PC_TCP_ACK, 0xffff, chunk, 1000), PC_TCP_CLOSED);
        assert_true(rst_since(n0));
        k = wire_last(&w);
        assert_true(k->flags & PC_TCP_RST);
        assert_int_equal(k->s.seq, fin);
        assert_int_equal(svc.closed, 1);
        assert_int_equal(svc.close_err, -ECONNABORTED);
        assert_int_equal(wire_drops(&w, 1, PC_TCP_DISCARD), 3);
        assert_int_equal(wire_drops(&w, 1, PC_TCP_CLOSED), 1);
        finish();
}

static void test_rfc1122_4_2_2_13_reset_at_fin_ack(void **state)
{
        struct pc_tcpe_stats st;
        const struct wire_cap *k;
        size_t n0, bytes;
        uint32_t s, fin;

        (void)state;
        setup();
        svc.reply_len = 3000; /* three segments */
        s = raw_connect();
        memset(chunk, 'G', sizeof(chunk));
        assert_int_equal(take_in(1001, s + 1, chunk, 500), PC_TCP_OK);
        assert_int_equal(take_in(1501, s + 1, chunk, 500), PC_TCP_DISCARD);
        n0 = w.ncap;
        pc_tcpe_flush(w.e[1], w.now);
        fin = sent_end(n0, s + 1, &bytes);
        assert_int_equal(bytes, 3000);
        assert_int_equal(fin, s + 3002);
        /* The peer stops sending and acknowledges the data, not the FIN:
         * still no reset. Then a bare ACK of the FIN: the reset, at once,
         * for the data that was dropped. */
        n0 = w.ncap;
        assert_int_equal(inject(1501, s + 3001, PC_TCP_ACK, 0xffff, NULL, 0), PC_TCP_OK);
        assert_false(rst_since(n0));
        assert_int_equal(svc.closed, 0);
        assert_int_equal(inject(1501, fin, PC_TCP_ACK, 0xffff, NULL, 0), PC_TCP_OK);
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_RST | PC_TCP_ACK);
        assert_int_equal(k->s.seq, fin);
        assert_int_equal(svc.close_err, -ECONNABORTED);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.conns, 0);
        assert_int_equal(st.resets_out, 1);
        finish();
}

static void test_rfc1122_4_2_2_13_output_retransmitted(void **state)
{
        size_t n0, bytes;
        uint32_t s, fin;

        (void)state;
        /* The peer keeps sending and acknowledges nothing (our reply was
         * lost, say): the retransmission timer sends the reply and FIN
         * again, and still no reset leaves. */
        setup();
        svc.reply_len = 100;
        s = raw_connect();
        memset(chunk, 'G', sizeof(chunk));
        assert_int_equal(take_in(1001, s + 1, chunk, 1000), PC_TCP_OK);
        pc_tcpe_flush(w.e[1], w.now);
        n0 = w.ncap;
        for (int r = 0; r < 3; r++) {
                assert_int_equal(inject(2001, s + 1, PC_TCP_ACK, 0xffff, chunk, 1000),
                                 PC_TCP_DISCARD);
                assert_true(wire_step(&w, w.now + 10 * SEC)); /* the RTO */
        }
        fin = sent_end(n0, s + 1, &bytes);
        assert_int_equal(bytes, 100);
        assert_int_equal(fin, s + 102);
        assert_false(rst_since(n0));
        assert_int_equal(svc.closed, 0);
        assert_int_equal(inject(2001, fin, PC_TCP_ACK, 0xffff, chunk, 1000), PC_TCP_CLOSED);
        assert_true(rst_since(n0));
        assert_int_equal(svc.close_err, -ECONNABORTED);
        finish();
}

/* ---- Nothing outstanding -------------------------------------------------- */

static void test_rfc1122_4_2_2_13_nothing_outstanding_resets_at_once(void **state)
{
        const struct wire_cap *k;
        struct pc_tcb_info i;
        uint32_t s;

        (void)state;
        /* A close with nothing queued, its FIN acknowledged (FIN-WAIT-2):
         * data that arrives is reset at once. */
        setup();
        svc.manual = true;
        s = raw_connect();
        assert_int_equal(pc_tcb_close(svc.c), 0);
        wire_flush(&w);
        assert_int_equal(wire_last(&w)->flags, PC_TCP_FIN | PC_TCP_ACK);
        assert_int_equal(inject(1001, s + 2, PC_TCP_ACK, 0xffff, NULL, 0), PC_TCP_OK);
        pc_tcb_info(svc.c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_2);
        assert_int_equal(inject(1001, s + 2, PC_TCP_ACK, 0xffff, "late", 4), PC_TCP_CLOSED);
        k = wire_last(&w);
        assert_int_equal(k->flags, PC_TCP_RST | PC_TCP_ACK);
        assert_int_equal(k->s.seq, s + 2);
        assert_int_equal(svc.close_err, -ECONNABORTED);
        assert_int_equal(svc.got, 0);
        assert_int_equal(wire_drops(&w, 1, PC_TCP_DISCARD), 0);
        finish();

        /* Likewise when the data itself acknowledges our FIN. */
        setup();
        svc.manual = true;
        s = raw_connect();
        assert_int_equal(pc_tcb_close(svc.c), 0);
        wire_flush(&w);
        assert_int_equal(inject(1001, s + 2, PC_TCP_ACK, 0xffff, "late", 4), PC_TCP_CLOSED);
        assert_int_equal(wire_last(&w)->flags, PC_TCP_RST | PC_TCP_ACK);
        assert_int_equal(svc.close_err, -ECONNABORTED);
        finish();
}

/* ---- Bounds --------------------------------------------------------------- */

static void test_rfc1122_4_2_2_13_memory_bounded(void **state)
{
        struct pc_tcpe_stats st;
        struct pc_tcb_info i0, i;
        size_t n0;
        uint32_t s;

        (void)state;
        /* The service paused: what arrives is held in the receive ring.
         * It then queues a 20 KB reply and closes; the peer acknowledges
         * nothing and sends a flood. Nothing of it is stored (the ring
         * goes with the reader), nothing acknowledged, nothing answered;
         * only the send ring stays. */
        setup();
        svc.manual = true;
        svc.pause_at_accept = true;
        s = raw_connect();
        memset(chunk, 'G', sizeof(chunk));
        assert_int_equal(inject(1001, s + 1, PC_TCP_ACK, 0xffff, chunk, 1000), PC_TCP_OK);
        wire_stats(&w, 1, &st);
        assert_true(st.mem >= 256 * 1024); /* the receive ring */
        svc.reply_len = 20000;
        svc_reply_and_close(&svc);
        wire_flush(&w);
        pc_tcb_info(svc.c, &i0);
        n0 = w.ncap;
        for (uint32_t k = 0; k < 5000; k++) {
                uint32_t seq = 2001 + (k % 150) * 1460; /* in the window */
                enum pc_tcp_err r = inject(seq, s + 1, PC_TCP_ACK, 0xffff, chunk, 1460);

                assert_true(r == PC_TCP_DISCARD || r == PC_TCP_WINDOW);
        }
        wire_stats(&w, 1, &st);
        assert_int_equal(st.mem, 32768); /* the send ring */
        assert_true(st.drops[PC_TCP_DISCARD] > 0);
        pc_tcb_info(svc.c, &i);
        assert_int_equal(i.rcv_nxt, i0.rcv_nxt);
        assert_int_equal(i.rcv_wnd, i0.rcv_wnd);
        assert_int_equal(i.held, 0);
        assert_int_equal(i.ooo, 0);
        assert_int_equal(w.ncap, n0); /* no ACK, no reset */
        assert_int_equal(svc.got, 0);
        finish();
}

/* Answer each window probe with an ACK that keeps the window shut. */
static void answer_probes_until(uint32_t seq, uint32_t una, uint64_t until)
{
        size_t seen = w.ncap;

        while (svc.c && wire_step(&w, until)) {
                for (; seen < w.ncap; seen++) {
                        const struct wire_cap *k = &w.cap[seen % WIRE_NCAP];
                        if (k->len == 1 && !(k->flags & PC_TCP_RST))
                                assert_int_equal(inject(seq, una, PC_TCP_ACK, 0, NULL, 0),
                                                 PC_TCP_OK);
                }
        }
        if (w.now < until)
                w.now = until;
}

static void test_linger_limit_after_close(void **state)
{
        const struct wire_cap *k;
        struct pc_tcpe_stats st;
        struct pc_tcb_info i;
        uint64_t t;
        uint32_t s;

        (void)state;
        /* The peer takes the first flight of a 20 KB reply, then keeps its
         * window shut and answers every probe: it would hold the
         * connection for ever. After our close, TCP_LINGER_NS without
         * anything new acknowledged ends it, with a reset. */
        setup();
        svc.manual = true;
        s = raw_connect();
        svc.reply_len = 20000;
        svc_reply_and_close(&svc);
        wire_flush(&w);
        /* 30 s of silence (retransmissions), then the first flight is
         * acknowledged: progress, the limit starts again. */
        assert_true(wire_run(&w, NULL, NULL, w.now + 30 * SEC));
        assert_int_equal(svc.closed, 0);
        assert_int_equal(inject(1001, s + 1 + 14600, PC_TCP_ACK, 0, NULL, 0), PC_TCP_OK);
        t = w.now;
        answer_probes_until(1001, s + 1 + 14600, t + LINGER - SEC);
        assert_int_equal(svc.closed, 0);
        pc_tcb_info(svc.c, &i);
        assert_int_equal(i.state, PC_TCP_FIN_WAIT_1);
        wire_stats(&w, 1, &st);
        assert_true(st.persist_probes >= 1);
        answer_probes_until(1001, s + 1 + 14600, t + LINGER + SEC);
        assert_int_equal(svc.closed, 1);
        assert_int_equal(svc.close_err, -ETIMEDOUT);
        k = wire_last(&w);
        assert_true(k->flags & PC_TCP_RST);
        wire_stats(&w, 1, &st);
        assert_int_equal(st.conns, 0);
        assert_int_equal(st.mem, 0);
        finish();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rfc1122_4_2_2_13_reply_before_reset),
                cmocka_unit_test(test_rfc1122_4_2_2_13_reset_at_fin_ack),
                cmocka_unit_test(test_rfc1122_4_2_2_13_output_retransmitted),
                cmocka_unit_test(test_rfc1122_4_2_2_13_nothing_outstanding_resets_at_once),
                cmocka_unit_test(test_rfc1122_4_2_2_13_memory_bounded),
                cmocka_unit_test(test_linger_limit_after_close),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
