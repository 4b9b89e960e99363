/* SPDX-License-Identifier: MIT */
/*
 * Segments out: the header and checksum of every segment, the SYN, data
 * and FIN a connection may send now, bare ACKs, window updates and
 * probes, and the resets sent for no connection.
 *
 * What may be sent (RFC 9293 3.8.6.2.1, RFC 5681): at most
 * min(SND.WND, cwnd) beyond SND.UNA, in segments of at most the MSS; a
 * segment shorter than the MSS goes out only when it carries everything
 * queued (and, with Nagle on, nothing is unacknowledged), or fills half of
 * the largest window the peer offered, or the persist timer forces it. The
 * FIN rides on the last data segment, or alone once everything is sent.
 * A segment's payload is a few pieces (tcp_send.c): the ring's, and the
 * application's bytes held by reference; one that references cut short
 * goes as a full one would.
 * Every segment carries an ACK (the SYN of an active open excepted), and
 * so answers any ACK owed.
 */
#include <string.h>

#include "tcp_pvt.h"

/* The sum of consecutive pieces: a piece that starts at an odd offset
 * contributes its own sum byte-swapped (RFC 1071 2(B)). */
static uint32_t csum_pieces(uint32_t sum, const uint8_t *const *d, const size_t *l,
                            unsigned n)
{
        size_t off = 0;

        for (unsigned i = 0; i < n; i++) {
                uint32_t s;

                if (l[i] == 0)
                        continue;
                s = pc_csum_add(0, d[i], l[i]);
                if (off & 1)
                        s = (s & 0xff) << 8 | s >> 8;
                sum += s;
                sum = (sum & 0xffff) + (sum >> 16);
                off += l[i];
        }
        return sum;
}

void pc__tcp_emitv(struct pc_tcpe *e, struct pc_tcb *c, uint32_t saddr, uint32_t daddr,
                   uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                   uint16_t wnd, const uint8_t *opts, size_t optlen, const uint8_t *const *d,
                   const size_t *l, unsigned n)
{
        uint8_t h[TCP_HDR_MAX];
        uint8_t *t = h + PC_IPV4_HLEN;
        size_t thl = PC_TCP_HLEN + optlen, dlen = 0, tlen;
        struct pc_tcp_frame f;
        uint32_t sum;

        for (unsigned i = 0; i < n; i++) {
                f.data[i] = d[i];
                f.data_len[i] = l[i];
                dlen += l[i];
        }
        tlen = thl + dlen;
        pc_ipv4_build(h, PC_IPV4_HLEN + tlen, PC_IPPROTO_TCP, saddr, daddr);
        pc_wr16(t, sport);
        pc_wr16(t + 2, dport);
        pc_wr32(t + 4, seq);
        pc_wr32(t + 8, (flags & PC_TCP_ACK) ? ack : 0);
        t[12] = (uint8_t)(thl / 4 << 4);
        t[13] = flags;
        pc_wr16(t + 14, wnd);
        pc_wr16(t + 16, 0);
        pc_wr16(t + 18, 0);
        if (optlen)
                memcpy(t + PC_TCP_HLEN, opts, optlen);
        sum = pc_csum_add(pc_ipv4_pseudo(saddr, daddr, PC_IPPROTO_TCP, tlen), t, thl);
        pc_wr16(t + 16, pc_csum_fold(csum_pieces(sum, d, l, n)));

        f.saddr = saddr;
        f.daddr = daddr;
        f.hdr = h;
        f.hdr_len = PC_IPV4_HLEN + thl;
        f.pieces = n;
        f.len = PC_IPV4_HLEN + tlen;
        f.conn = c;
        e->st.segs_out++;
        e->st.bytes_out += dlen;
        if (flags & PC_TCP_RST)
                e->st.resets_out++;
        if (e->ops.emit(e->ctx, &f) != 0)
                e->st.tx_errors++;
}

void pc__tcp_emit(struct pc_tcpe *e, struct pc_tcb *c, uint32_t saddr, uint32_t daddr,
                  uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                  uint16_t wnd, const uint8_t *opts, size_t optlen, const uint8_t *d0,
                  size_t l0, const uint8_t *d1, size_t l1)
{
        const uint8_t *d[2];
        size_t l[2];
        unsigned n = 0;

        if (l0) {
                d[n] = d0;
                l[n++] = l0;
        }
        if (l1) {
                d[n] = d1;
                l[n++] = l1;
        }
        pc__tcp_emitv(e, c, saddr, daddr, sport, dport, seq, ack, flags, wnd, opts, optlen, d, l,
                      n);
}

bool pc__tcp_challenge_ok(struct pc_tcpe *e)
{
        if (e->now - e->chal_start >= 1000000000ull) {
                e->chal_start = e->now;
                e->chal_count = 0;
        }
        if (e->chal_count >= e->cfg.challenge_acks) {
                e->st.challenge_limited++;
                return false;
        }
        e->chal_count++;
        e->st.challenge_acks++;
        return true;
}

uint32_t pc__tcb_rcv_wnd(const struct pc_tcb *c)
{
        uint32_t edge = c->rcv_read + c->rcv_space, wnd;
        uint32_t step = min_u32(c->rcv_space / 2, c->mss);

        if (seq_ge(c->rcv_nxt, edge))
                return 0;
        wnd = edge - c->rcv_nxt;
        /* RFC 9293 3.8.6.2.2: move the right edge only by a real amount
         * (half the buffer or an MSS), so the peer never sees a sliver. */
        if (seq_gt(edge, c->rcv_adv) && edge - c->rcv_adv < step && seq_ge(c->rcv_adv, c->rcv_nxt))
                wnd = c->rcv_adv - c->rcv_nxt;
        if (wnd > (uint32_t)0xffff << c->rcv_ws)
                wnd = (uint32_t)0xffff << c->rcv_ws;
        return wnd & ~(((uint32_t)1 << c->rcv_ws) - 1);
}

static void ack_sent(struct pc_tcb *c, uint32_t wnd)
{
        uint32_t edge = c->rcv_nxt + wnd;

        c->flags &= ~(TF_ACK_NOW | TF_DELACK);
        c->rcv_unacked = 0;
        if (c->t_delack != TCP_NEVER) {
                c->t_delack = TCP_NEVER;
                pc__tcb_timers(c);
        }
        if (seq_gt(edge, c->rcv_adv))
                c->rcv_adv = edge;
}

static void emit_tcb(struct pc_tcb *c, uint32_t seq, uint8_t flags, uint32_t wnd,
                     const uint8_t *opts, size_t optlen, uint32_t dseq, uint32_t len)
{
        const uint8_t *d[PC_TCP_FRAME_PIECES] = {NULL};
        size_t l[PC_TCP_FRAME_PIECES] = {0};
        unsigned n = 0;
        uint32_t covered;

        /* The callers cut @len to what fits (seg_fit()). */
        if (len)
                n = pc__tcb_pieces(c, dseq, len, d, l, &covered);
        pc__tcp_emitv(c->e, c, c->laddr, c->raddr, c->lport, c->rport, seq, c->rcv_nxt, flags,
                      (uint16_t)((flags & PC_TCP_SYN) ? wnd : wnd >> c->rcv_ws), opts, optlen, d,
                      l, n);
}

/* How much of @len bytes from @seq one segment can carry: all of it
 * unless references split it into more than PC_TCP_FRAME_PIECES. */
static uint32_t seg_fit(const struct pc_tcb *c, uint32_t seq, uint32_t len)
{
        const uint8_t *d[PC_TCP_FRAME_PIECES];
        size_t l[PC_TCP_FRAME_PIECES];
        uint32_t covered;

        if (c->sref_n == 0 || len == 0)
                return len;
        pc__tcb_pieces(c, seq, len, d, l, &covered);
        return covered;
}

/* A segment without data, SYN or FIN carries SND.MAX, not SND.NXT: after
 * a timeout SND.NXT goes back to SND.UNA for the retransmission, and a
 * peer that already received up to SND.MAX would find SEG.SEQ below
 * RCV.NXT, take the segment for an old duplicate (RFC 9293 3.10.7.4) and
 * ignore its ACK; if both ends are retransmitting, neither ever hears the
 * other's ACKs (the livelock BSD's tcp_output() avoids the same way).
 * But SND.MAX may lie past the right edge of the window the peer offered:
 * a zero-window probe's byte the peer did not take. A segment there is
 * outside the peer's window, which at zero admits only SEG.SEQ = RCV.NXT,
 * and its ACK is ignored; Linux (6.17 on) also drops the probe itself
 * whole while its receive queue holds data. A peer whose window is shut
 * because it cannot send (its buffer full of data we have but have not
 * acknowledged) then never learns that we have it: both ends wait for
 * ever. So past the edge the segment carries SND.UNA, where the peer's
 * RCV.NXT is (BSD's tcp_output() likewise, in persist). */
static uint32_t bare_seq(const struct pc_tcb *c)
{
        if (tcb_synced(c) && seq_gt(c->snd_max, c->snd_wl2 + c->snd_wnd))
                return c->snd_una;
        return c->snd_max;
}

void pc__tcb_send_ack(struct pc_tcb *c)
{
        uint32_t wnd = pc__tcb_rcv_wnd(c);

        emit_tcb(c, bare_seq(c), PC_TCP_ACK, wnd, NULL, 0, 0, 0);
        ack_sent(c, wnd);
}

void pc__tcb_send_rst(struct pc_tcb *c)
{
        emit_tcb(c, bare_seq(c), PC_TCP_RST | PC_TCP_ACK, 0, NULL, 0, 0, 0);
}

void pc__tcp_reply_rst(struct pc_tcpe *e, uint32_t saddr, uint32_t daddr,
                       const struct pc_tcp_seg *s)
{
        uint32_t ack;

        if (s->flags & PC_TCP_RST)
                return;
        /* RFC 9293 3.10.7.1: take the ACK's number as ours, or acknowledge
         * everything the segment occupied. */
        if (s->flags & PC_TCP_ACK) {
                pc__tcp_emit(e, NULL, daddr, saddr, s->dport, s->sport, s->ack, 0, PC_TCP_RST, 0,
                             NULL, 0, NULL, 0, NULL, 0);
                return;
        }
        ack = s->seq + (uint32_t)s->len + ((s->flags & PC_TCP_SYN) ? 1 : 0) +
              ((s->flags & PC_TCP_FIN) ? 1 : 0);
        pc__tcp_emit(e, NULL, daddr, saddr, s->dport, s->sport, 0, ack, PC_TCP_RST | PC_TCP_ACK,
                     0, NULL, 0, NULL, 0, NULL, 0);
}

static void send_syn(struct pc_tcb *c)
{
        const struct pc_tcpe_config *cfg = &c->e->cfg;
        bool passive = c->state == PC_TCP_SYN_RCVD_STATE;
        uint8_t opts[8];
        size_t n;
        /* The active side offers scaling unless configured off; the passive
         * side answers only an offer (RFC 7323 1.3). */
        int ws = (passive ? (c->flags & TF_WSCALE) != 0 : !cfg->no_wscale) ? c->rcv_ws : -1;
        uint32_t wnd = min_u32(c->rcv_space, 0xffff);

        n = pc__tcp_syn_opts(opts, cfg->mss, ws);
        emit_tcb(c, c->iss, PC_TCP_SYN | (passive ? PC_TCP_ACK : 0), wnd, opts, n, 0, 0);
        if (passive)
                ack_sent(c, wnd);
        if (c->flags & TF_SYN_REXMT) {
                c->e->st.retransmits++;
        } else if (!(c->flags & TF_RTT)) {
                c->flags |= TF_RTT;
                c->rtt_seq = c->iss + 1;
                c->rtt_ts = c->e->now;
        }
        c->snd_nxt = c->iss + 1;
        c->snd_max = seq_max(c->snd_max, c->snd_nxt);
        if (c->t_rexmt == TCP_NEVER)
                pc__tcb_rexmt_start(c);
}

/* Send @len bytes from @seq, and the FIN after them if @fin. */
static void send_segment(struct pc_tcb *c, uint32_t seq, uint32_t len, bool fin, bool probe)
{
        uint32_t wnd = pc__tcb_rcv_wnd(c), end = seq + len + (fin ? 1 : 0);
        uint8_t flags = PC_TCP_ACK;

        if (fin)
                flags |= PC_TCP_FIN;
        if (len && seq + len == c->snd_end)
                flags |= PC_TCP_PSH;
        emit_tcb(c, seq, flags, wnd, NULL, 0, seq, len);
        ack_sent(c, wnd);
        if (seq_lt(seq, c->snd_max)) {
                /* Karn: a retransmission makes the timed sample ambiguous. */
                c->e->st.retransmits++;
                c->flags &= ~TF_RTT;
        } else if (!(c->flags & TF_RTT)) {
                c->flags |= TF_RTT;
                c->rtt_seq = end;
                c->rtt_ts = c->e->now;
        }
        if (seq_gt(end, c->snd_nxt))
                c->snd_nxt = end;
        c->snd_max = seq_max(c->snd_max, end);
        if (c->t_rexmt == TCP_NEVER || ((c->flags & TF_PERSIST) && !probe))
                pc__tcb_rexmt_start(c);
}

/* Whether a segment of @len bytes (less than a full one) may leave now. */
static bool sws_ok(const struct pc_tcb *c, uint32_t len, uint32_t avail)
{
        if (len >= c->mss)
                return true;
        if (len == avail)
                return (c->flags & (TF_NODELAY | TF_FIN_QUEUED)) || c->snd_nxt == c->snd_una;
        return c->max_sndwnd && len >= c->max_sndwnd / 2;
}

/* The persist timer fired: force one segment into (or one byte past) the
 * window the peer offers. */
static void send_probe(struct pc_tcb *c)
{
        uint32_t off = c->snd_nxt - c->snd_una;
        uint32_t usable = c->snd_wnd > off ? c->snd_wnd - off : 0;
        uint32_t avail = seq_lt(c->snd_nxt, c->snd_end) ? c->snd_end - c->snd_nxt : 0;
        uint32_t len;

        if (usable == 0 || avail == 0) {
                /* A zero window: one byte from SND.UNA, again and again. */
                if (!seq_lt(c->snd_una, c->snd_end))
                        return;
                send_segment(c, c->snd_una, 1,
                             (c->flags & TF_FIN_QUEUED) && c->snd_una + 1 == c->snd_end, true);
                return;
        }
        len = seg_fit(c, c->snd_nxt, min_u32(min_u32(usable, avail), c->mss));
        send_segment(c, c->snd_nxt, len,
                     (c->flags & TF_FIN_QUEUED) && c->snd_nxt + len == c->snd_end, true);
}

/* Held data was read: does the peer need to hear of the room? */
static bool want_window_update(const struct pc_tcb *c)
{
        uint32_t cur = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
        uint32_t wnd = pc__tcb_rcv_wnd(c);

        /* The window the peer sees has shrunk to half or less and would
         * at least double: tell it, or it may sit in persist. */
        return cur <= c->rcv_space / 2 && wnd >= 2 * cur && wnd - cur >= c->rcv_mss;
}

/* RFC 3042 (RFC 5681 3.2 SHOULD): on the first and the second duplicate
 * ACK outside recovery, one segment of new data each beyond cwnd, so that
 * a loss with few segments in flight still draws the three duplicates of
 * fast retransmit instead of waiting for the timer. Only new data: after
 * a timeout, while SND.NXT is below SND.MAX, it adds nothing. */
static uint32_t limited_transmit(const struct pc_tcb *c)
{
        if (c->dupacks == 0 || c->dupacks >= 3 || (c->flags & TF_RECOVERY) ||
            c->snd_nxt != c->snd_max)
                return 0;
        return c->dupacks * (uint32_t)c->mss;
}

void pc__tcb_output(struct pc_tcb *c)
{
        bool sent = false;
        uint32_t avail = 0;

        /* A reference of no bytes waits only for what was queued before
         * it, which may all be acknowledged already. */
        if (c->sref_n) {
                pc__tcb_refs_release(c, false);
                if (c->flags & TF_DEAD)
                        return;
        }
        switch (c->state) {
        case PC_TCP_SYN_SENT_STATE:
        case PC_TCP_SYN_RCVD_STATE:
                if (c->snd_nxt == c->iss)
                        send_syn(c);
                return;
        case PC_TCP_TIME_WAIT:
                if (c->flags & TF_ACK_NOW)
                        pc__tcb_send_ack(c);
                return;
        case PC_TCP_CLOSED_STATE:
        case PC_TCP_LISTEN_STATE:
                return;
        default:
                break;
        }
        if (c->flags & TF_REXMT_ONE) {
                /* Fast retransmit, or NewReno's partial ACK: the first
                 * unacknowledged segment, whatever the windows say. */
                uint32_t n = seq_lt(c->snd_una, c->snd_end) ? c->snd_end - c->snd_una : 0;
                n = seg_fit(c, c->snd_una, min_u32(n, c->mss));
                c->flags &= ~TF_REXMT_ONE;
                if (n || ((c->flags & TF_FIN_QUEUED) && c->snd_una == c->snd_end)) {
                        send_segment(c, c->snd_una, n,
                                     (c->flags & TF_FIN_QUEUED) && c->snd_una + n == c->snd_end,
                                     false);
                        sent = true;
                }
        }
        if (c->flags & TF_PROBE) {
                c->flags &= ~TF_PROBE;
                send_probe(c);
                sent = true;
        }
        for (;;) {
                uint32_t win = min_u32(c->snd_wnd, c->cwnd + limited_transmit(c));
                uint32_t off = c->snd_nxt - c->snd_una;
                uint32_t usable = win > off ? win - off : 0, len, fit;
                bool fin;

                avail = seq_lt(c->snd_nxt, c->snd_end) ? c->snd_end - c->snd_nxt : 0;
                len = min_u32(min_u32(avail, usable), c->mss);
                /* A segment cut short by its pieces goes as a full one:
                 * more follows at once. */
                fit = seg_fit(c, c->snd_nxt, len);
                if (fit < len)
                        len = fit;
                else if (len && !sws_ok(c, len, avail))
                        len = 0;
                fin = (c->flags & TF_FIN_QUEUED) && c->snd_nxt + len == c->snd_end;
                if (len == 0 && !fin)
                        break;
                send_segment(c, c->snd_nxt, len, fin, false);
                sent = true;
        }
        if (!sent && ((c->flags & TF_ACK_NOW) ||
                      ((c->flags & TF_WND_CHECK) && want_window_update(c))))
                pc__tcb_send_ack(c);
        c->flags &= ~TF_WND_CHECK;
        /* Data waits, none is in flight, and the window (or silly-window
         * avoidance) holds it back: only a probe can learn that the window
         * opened if the update that says so is lost. */
        if (c->snd_nxt == c->snd_una && avail && !(c->flags & TF_PERSIST))
                pc__tcb_persist_start(c);
}
