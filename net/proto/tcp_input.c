/* SPDX-License-Identifier: MIT */
/*
 * SEGMENT ARRIVES (RFC 9293 3.10.7), in the RFC's order: no connection,
 * LISTEN (with SYN cookies past the backlog), SYN-SENT, then for every
 * other state the sequence check, RST, SYN, ACK, text and FIN steps, with
 * RFC 5961's hardening (an RST or SYN that is not exactly where expected
 * earns a rate-limited challenge ACK; an ACK of too old or unsent data is
 * dropped) and RFC 5681/6582's congestion control in the ACK step.
 *
 * Each step that drops a segment returns why; the caller counts it.
 */
#include <errno.h>

#include "tcp_pvt.h"

#define CWND_MAX (1u << 30)

static uint32_t initial_window(const struct pc_tcb *c)
{
        /* RFC 6928: min(10 MSS, max(2 MSS, 14600)). */
        uint32_t w = 2u * c->mss > 14600 ? 2u * c->mss : 14600;

        return min_u32(TCP_IW_SEGS * (uint32_t)c->mss, w);
}

static uint16_t send_mss(const struct pc_tcpe *e, uint16_t peer)
{
        uint16_t m = peer ? peer : TCP_DEFAULT_MSS;

        if (m < TCP_MIN_MSS)
                m = TCP_MIN_MSS;
        return m < e->cfg.mss ? m : e->cfg.mss;
}

static uint8_t wanted_wscale(const struct pc_tcpe *e)
{
        uint8_t ws = 0;

        while (ws < 14 && (e->cfg.rcv_cap >> ws) > 0xffff)
                ws++;
        return ws;
}

/* Options of the peer's SYN: MSS, and window scaling when both offer it. */
static void take_syn_options(struct pc_tcb *c, const struct pc_tcp_seg *s, bool we_offered)
{
        c->mss = send_mss(c->e, s->mss);
        if (we_offered && s->wscale >= 0) {
                c->flags |= TF_WSCALE;
                c->snd_ws = (uint8_t)s->wscale;
        } else {
                c->flags &= ~TF_WSCALE;
                c->snd_ws = 0;
                c->rcv_ws = 0;
        }
        c->rcv_space = min_u32(c->e->cfg.rcv_cap, (uint32_t)0xffff << c->rcv_ws);
        /* The window of a SYN is never scaled (RFC 7323 2.2). */
        c->snd_wnd = s->wnd;
        c->max_sndwnd = s->wnd;
        c->snd_wl1 = s->seq;
        c->snd_wl2 = s->ack;
}

static bool app_gone(const struct pc_tcb *c)
{
        return (c->flags & (TF_OPEN | TF_NOTIFY)) != TF_OPEN;
}

static void establish(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;
        const struct pc_tcpe_callbacks *cb;

        c->cwnd = initial_window(c);
        c->ssthresh = CWND_MAX;
        c->retries = 0;
        pc__tcb_set_state(c, (c->flags & TF_FIN_QUEUED) ? PC_TCP_FIN_WAIT_1 : PC_TCP_ESTABLISHED);
        e->st.established++;
        if (c->flags & TF_PASSIVE)
                e->st.passive_opens++;
        c->flags |= TF_OPEN;
        if (c->flags & TF_KEEPALIVE)
                pc__tcb_keep_start(c);
        cb = c->cb;
        if (cb && cb->on_accept)
                cb->on_accept(c, c->arg);
}

static void enter_time_wait(struct pc_tcb *c)
{
        pc__tcb_set_state(c, PC_TCP_TIME_WAIT);
        c->t_rexmt = c->t_keep = c->t_delack = TCP_NEVER;
        c->flags &= ~(TF_PERSIST | TF_DELACK);
        c->flags |= TF_ACK_NOW;
        pc__tcb_2msl_start(c, c->e->cfg.time_wait_ns);
        pc__tcb_pending(c);
        /* A half-closed reader may still hold data and the EOF: it hears
         * on_close once it has read them (pc__tcb_deliver()). */
        if ((c->flags & (TF_EOF_DONE | TF_APP_CLOSED)) || app_gone(c)) {
                pc__tcb_free_bufs(c);
                pc__tcb_notify(c, 0);
        }
}

/* ---- No connection, LISTEN ------------------------------------------------ */

static enum pc_tcp_err no_conn(struct pc_tcpe *e, uint32_t saddr, uint32_t daddr,
                               const struct pc_tcp_seg *s)
{
        pc__tcp_reply_rst(e, saddr, daddr, s);
        return PC_TCP_NO_CONN;
}

static enum pc_tcp_err cookie_accept(struct pc_tcpe *e, struct tcp_listener *l,
                                     uint32_t saddr, uint32_t daddr, struct pc_tcp_seg *s,
                                     uint16_t mss)
{
        struct pc_tcb *c;

        if (!pc__tcp_make_room(e))
                return PC_TCP_CONN_LIMIT;
        c = pc__tcb_new(e, daddr, s->dport, saddr, s->sport);
        if (c == NULL)
                return PC_TCP_NOMEM;
        e->st.cookies_ok++;
        c->flags |= TF_PASSIVE;
        c->cb = l->cb;
        c->arg = l->arg;
        c->irs = s->seq - 1;
        c->rcv_nxt = c->rcv_read = s->seq;
        c->iss = s->ack - 1;
        c->snd_una = c->snd_nxt = c->snd_max = c->snd_end = s->ack;
        c->recover = c->iss;
        c->mss = send_mss(e, mss);
        c->rcv_space = min_u32(e->cfg.rcv_cap, 0xffff);
        c->rcv_adv = c->rcv_nxt + c->rcv_space;
        c->snd_wnd = c->max_sndwnd = s->wnd;
        c->snd_wl1 = s->seq;
        c->snd_wl2 = s->ack;
        establish(c);
        if (c->flags & TF_DEAD)
                return PC_TCP_OK;
        /* The ACK may carry data (and a FIN): the rest of the steps. */
        return pc__tcb_input(c, s);
}

static void cookie_syn_ack(struct pc_tcpe *e, struct tcp_listener *l, uint32_t saddr,
                           uint32_t daddr, const struct pc_tcp_seg *s)
{
        uint8_t opts[4];
        uint16_t mss = send_mss(e, s->mss);
        uint32_t iss = pc__tcp_cookie(e, daddr, s->dport, saddr, s->sport, s->seq, mss);

        pc__tcp_syn_opts(opts, e->cfg.mss, -1);
        pc__tcp_emit(e, NULL, daddr, saddr, s->dport, s->sport, iss, s->seq + 1,
                     PC_TCP_SYN | PC_TCP_ACK, (uint16_t)min_u32(e->cfg.rcv_cap, 0xffff), opts,
                     4, NULL, 0, NULL, 0);
        e->st.cookies_sent++;
        l->cookie_until = e->now + 2 * TCP_COOKIE_PERIOD_NS;
}

static enum pc_tcp_err listen_input(struct pc_tcpe *e, struct tcp_listener *l, uint32_t saddr,
                                    uint32_t daddr, struct pc_tcp_seg *s, bool floor,
                                    uint32_t iss_floor)
{
        struct pc_tcb *c;
        uint32_t iss;

        if (s->flags & PC_TCP_RST)
                return PC_TCP_LISTEN;
        if (s->flags & PC_TCP_ACK) {
                /* The third step of a handshake we answered with a cookie? */
                if (!(s->flags & PC_TCP_SYN) && e->now < l->cookie_until) {
                        uint16_t mss = pc__tcp_cookie_check(e, daddr, s->dport, saddr, s->sport,
                                                            s->seq - 1, s->ack - 1);
                        if (mss)
                                return cookie_accept(e, l, saddr, daddr, s, mss);
                        pc__tcp_reply_rst(e, saddr, daddr, s);
                        return PC_TCP_COOKIE;
                }
                pc__tcp_reply_rst(e, saddr, daddr, s);
                return PC_TCP_LISTEN;
        }
        if (!(s->flags & PC_TCP_SYN))
                return PC_TCP_LISTEN;
        if (!pc__tcp_make_room(e))
                return PC_TCP_CONN_LIMIT;
        if (l->syn_rcvd >= e->cfg.backlog) {
                cookie_syn_ack(e, l, saddr, daddr, s);
                return PC_TCP_OK;
        }
        c = pc__tcb_new(e, daddr, s->dport, saddr, s->sport);
        if (c == NULL)
                return PC_TCP_NOMEM;
        c->flags |= TF_PASSIVE;
        c->lst = l;
        c->cb = l->cb;
        c->arg = l->arg;
        c->irs = s->seq;
        c->rcv_nxt = c->rcv_read = s->seq + 1;
        c->rcv_ws = e->cfg.no_wscale ? 0 : wanted_wscale(e);
        take_syn_options(c, s, !e->cfg.no_wscale);
        iss = pc__tcp_isn(e, daddr, s->dport, saddr, s->sport);
        /* A TIME-WAIT reopened: start past anything the old one sent. */
        if (floor && seq_lt(iss, iss_floor))
                iss = iss_floor;
        c->iss = iss;
        c->snd_una = c->snd_nxt = c->snd_max = c->recover = iss;
        c->snd_end = iss + 1;
        c->rcv_adv = c->rcv_nxt;
        pc__tcb_set_state(c, PC_TCP_SYN_RCVD_STATE);
        pc__tcb_pending(c);
        return PC_TCP_OK;
}

/* ---- SYN-SENT ------------------------------------------------------------- */

static enum pc_tcp_err syn_sent_input(struct pc_tcb *c, struct pc_tcp_seg *s)
{
        struct pc_tcpe *e = c->e;
        bool ack = s->flags & PC_TCP_ACK;

        if (ack && (seq_le(s->ack, c->iss) || seq_gt(s->ack, c->snd_max))) {
                pc__tcp_reply_rst(e, c->raddr, c->laddr, s);
                return PC_TCP_SYN_SENT;
        }
        if (s->flags & PC_TCP_RST) {
                /* RFC 5961 3.2 holds here through the ACK check above. */
                if (!ack)
                        return PC_TCP_SYN_SENT;
                e->st.resets_in++;
                pc__tcb_done(c, -ECONNREFUSED);
                return PC_TCP_OK;
        }
        if (!(s->flags & PC_TCP_SYN))
                return PC_TCP_SYN_SENT;
        c->irs = s->seq;
        c->rcv_nxt = c->rcv_read = s->seq + 1;
        c->rcv_adv = c->rcv_nxt;
        take_syn_options(c, s, !e->cfg.no_wscale);
        c->last_rx = e->now;
        if (ack) {
                c->snd_una = s->ack;
                if ((c->flags & TF_RTT) && seq_ge(s->ack, c->rtt_seq)) {
                        pc__tcb_rtt_sample(c, e->now - c->rtt_ts);
                        c->flags &= ~TF_RTT;
                }
                pc__tcb_rexmt_stop(c);
                c->flags |= TF_ACK_NOW;
                pc__tcb_pending(c);
                /* Data or a FIN on the SYN-ACK is not taken: the peer sends
                 * it again once we acknowledge only its SYN. */
                establish(c);
                return PC_TCP_OK;
        }
        /* Simultaneous open (RFC 9293 figure 8): our SYN again, now with
         * an ACK; the repeat makes its RTT sample ambiguous. */
        pc__tcb_set_state(c, PC_TCP_SYN_RCVD_STATE);
        c->flags &= ~TF_RTT;
        c->flags |= TF_SYN_REXMT;
        c->snd_nxt = c->iss;
        pc__tcb_pending(c);
        return PC_TCP_OK;
}

/* ---- The ACK step --------------------------------------------------------- */

static void dupack(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;
        uint32_t flight;

        c->dupacks++;
        if (c->flags & TF_RECOVERY) {
                /* RFC 5681 3.2 (4): each further one means a segment left. */
                c->cwnd = min_u32(c->cwnd + c->mss, CWND_MAX);
                pc__tcb_pending(c);
                return;
        }
        /* RFC 3042 (RFC 5681 3.2): the first and the second each let one
         * new segment out beyond cwnd (tcp_output.c), which the third's
         * ssthresh does not count. */
        if (c->dupacks == 1)
                c->lt_base = c->snd_max;
        if (c->dupacks < 3)
                pc__tcb_pending(c);
        /* RFC 6582 3.2 (1): not for what was outstanding at the last loss. */
        if (c->dupacks != 3 || !seq_gt(c->snd_una, c->recover))
                return;
        flight = c->lt_base - c->snd_una;
        c->ssthresh = flight / 2 > 2u * c->mss ? flight / 2 : 2u * c->mss;
        c->recover = c->snd_max;
        c->cwnd = c->ssthresh + 3u * c->mss;
        c->flags |= TF_RECOVERY | TF_REXMT_ONE;
        c->flags &= ~TF_PARTIAL_SEEN;
        e->st.fast_retransmits++;
        pc__tcb_pending(c);
}

static void new_ack(struct pc_tcb *c, uint32_t ack)
{
        struct pc_tcpe *e = c->e;
        uint32_t acked = ack - c->snd_una;
        bool restart = true;

        if ((c->flags & TF_RTT) && seq_ge(ack, c->rtt_seq)) {
                pc__tcb_rtt_sample(c, e->now - c->rtt_ts);
                c->flags &= ~TF_RTT;
        }
        c->snd_una = ack;
        if (seq_lt(c->snd_nxt, ack))
                c->snd_nxt = ack;
        c->retries = 0;
        if (c->flags & TF_APP_CLOSED)
                pc__tcb_2msl_start(c, TCP_LINGER_NS); /* progress */
        if (c->flags & TF_RECOVERY) {
                if (seq_ge(ack, c->recover)) {
                        /* RFC 6582 3.2 (3): a full ACK ends recovery. */
                        uint32_t flight = c->snd_max - c->snd_una;
                        c->flags &= ~(TF_RECOVERY | TF_PARTIAL_SEEN);
                        c->cwnd = min_u32(c->ssthresh,
                                          (flight > c->mss ? flight : c->mss) + c->mss);
                        c->dupacks = 0;
                } else {
                        /* (4) a partial one: the next hole goes now, and the
                         * window deflates by what left it. */
                        c->flags |= TF_REXMT_ONE;
                        c->cwnd = c->cwnd > acked ? c->cwnd - acked : 0;
                        if (acked >= c->mss)
                                c->cwnd += c->mss;
                        if (c->cwnd < c->mss)
                                c->cwnd = c->mss;
                        if (c->flags & TF_PARTIAL_SEEN)
                                restart = false;
                        c->flags |= TF_PARTIAL_SEEN;
                }
        } else {
                c->dupacks = 0;
                if (c->cwnd < c->ssthresh) {
                        c->cwnd += min_u32(acked, c->mss);
                } else {
                        c->bytes_acked += acked;
                        if (c->bytes_acked >= c->cwnd) {
                                c->bytes_acked -= c->cwnd;
                                c->cwnd += c->mss;
                        }
                }
                if (c->cwnd > CWND_MAX)
                        c->cwnd = CWND_MAX;
        }
        /* RFC 6298 (5.2), (5.3). */
        if (c->snd_una == c->snd_max)
                pc__tcb_rexmt_stop(c);
        else if (restart && !(c->flags & TF_PERSIST))
                pc__tcb_rexmt_start(c);
        pc__tcb_pending(c);
        pc__tcb_acked(c);
}

static enum pc_tcp_err ack_step(struct pc_tcb *c, const struct pc_tcp_seg *s, uint32_t seq,
                                size_t dlen, bool fin)
{
        uint32_t ack = s->ack, wnd = (uint32_t)s->wnd << c->snd_ws;
        uint32_t oldest = c->snd_una - (c->max_sndwnd > 1 ? c->max_sndwnd : 1);

        if (seq_gt(ack, c->snd_max) || seq_lt(ack, oldest)) {
                if (pc__tcp_challenge_ok(c->e))
                        pc__tcb_send_ack(c);
                return PC_TCP_ACK_INVALID;
        }
        if (c->flags & TF_PERSIST)
                c->retries = 0; /* the peer answers our probes */
        if (seq_gt(ack, c->snd_una)) {
                new_ack(c, ack);
                if (c->flags & TF_DEAD)
                        return PC_TCP_OK;
        } else if (ack == c->snd_una && dlen == 0 && !fin && wnd == c->snd_wnd &&
                   c->snd_wnd != 0 && c->snd_max != c->snd_una) {
                /* RFC 5681 2's duplicate ACK: nothing new, nothing else. */
                dupack(c);
        }
        if (seq_lt(c->snd_wl1, seq) || (c->snd_wl1 == seq && seq_le(c->snd_wl2, ack))) {
                uint32_t old = c->snd_wnd;
                c->snd_wnd = wnd;
                c->snd_wl1 = seq;
                c->snd_wl2 = ack;
                if (wnd > c->max_sndwnd)
                        c->max_sndwnd = wnd;
                if (old == 0 && wnd) {
                        c->persist_n = 0;
                        if (c->flags & TF_PERSIST) {
                                if (c->snd_max != c->snd_una)
                                        pc__tcb_rexmt_start(c);
                                else
                                        pc__tcb_rexmt_stop(c);
                        }
                }
                if (wnd != old)
                        pc__tcb_pending(c);
        }
        return PC_TCP_OK;
}

/* ---- The other states ----------------------------------------------------- */

static void fin_in_order(struct pc_tcb *c)
{
        c->rcv_nxt = c->fin_seq + 1;
        c->flags |= TF_FIN_RCVD | TF_ACK_NOW;
        switch (c->state) {
        case PC_TCP_ESTABLISHED:
                pc__tcb_set_state(c, PC_TCP_CLOSE_WAIT);
                break;
        case PC_TCP_FIN_WAIT_1:
                if (fin_acked(c))
                        enter_time_wait(c);
                else
                        pc__tcb_set_state(c, PC_TCP_CLOSING);
                break;
        case PC_TCP_FIN_WAIT_2:
                enter_time_wait(c);
                break;
        default:
                break;
        }
        pc__tcb_pending(c);
        pc__tcb_deliver(c);
}

static bool oow_ack_ok(struct pc_tcb *c)
{
        uint64_t now = c->e->now;

        if (c->oow_ts && now - c->oow_ts < TCP_OOW_ACK_NS)
                return false;
        c->oow_ts = now ? now : 1;
        return true;
}

static bool in_rcv_window(const struct pc_tcb *c, uint32_t x, uint32_t wnd)
{
        return seq_ge(x, c->rcv_nxt) && seq_lt(x, c->rcv_nxt + wnd);
}

/* How much we can take beyond RCV.NXT: what the ring can store, which is
 * at least anything we advertised. */
static uint32_t rcv_room(const struct pc_tcb *c)
{
        uint32_t edge = c->rcv_read + c->rcv_space;

        return seq_lt(c->rcv_nxt, edge) ? edge - c->rcv_nxt : 0;
}

enum pc_tcp_err pc__tcb_input(struct pc_tcb *c, struct pc_tcp_seg *s)
{
        struct pc_tcpe *e = c->e;
        uint32_t seq = s->seq, wnd, slen;
        const uint8_t *data = s->data;
        size_t dlen = s->len;
        bool syn = s->flags & PC_TCP_SYN, fin = s->flags & PC_TCP_FIN;
        bool rst = s->flags & PC_TCP_RST, ack = s->flags & PC_TCP_ACK, ok;
        enum pc_tcp_err r;

        if (c->state == PC_TCP_SYN_SENT_STATE)
                return syn_sent_input(c, s);

        if (c->state == PC_TCP_SYN_RCVD_STATE && syn && seq == c->irs) {
                if (!ack) {
                        /* The peer's SYN again: our SYN-ACK was lost. */
                        c->snd_nxt = c->iss;
                        c->flags |= TF_SYN_REXMT;
                        c->flags &= ~TF_RTT;
                        pc__tcb_pending(c);
                        return PC_TCP_OK;
                }
                /* Simultaneous open: the peer's SYN-ACK; its SYN we have. */
                syn = false;
                seq++;
        }

        /* 1. The sequence number (RFC 9293 3.10.7.4, first). */
        wnd = rcv_room(c);
        slen = (uint32_t)dlen + syn + fin;
        if (slen == 0)
                ok = wnd == 0 ? seq == c->rcv_nxt : in_rcv_window(c, seq, wnd);
        else
                ok = wnd != 0 && (in_rcv_window(c, seq, wnd) ||
                                  in_rcv_window(c, seq + slen - 1, wnd));
        if (!ok && wnd == 0 && seq == c->rcv_nxt && ack && !rst) {
                /* At our shut window: the ACK counts, and so does a bare FIN,
                 * which needs no room; data (a window probe) does not, and
                 * is answered. */
                ok = true;
                if (dlen) {
                        dlen = 0;
                        fin = false;
                        c->flags |= TF_ACK_NOW;
                }
        }
        if (!ok) {
                if (rst)
                        return PC_TCP_WINDOW;
                if (c->state == PC_TCP_TIME_WAIT && fin)
                        pc__tcb_2msl_start(c, e->cfg.time_wait_ns);
                /* An old duplicate with data is answered: the peer missed our
                 * ACK. Anything else only at a limited rate, or two ends that
                 * each find the other's ACKs out of window would answer each
                 * other forever. */
                if ((slen && seq_lt(seq, c->rcv_nxt)) || oow_ack_ok(c))
                        pc__tcb_send_ack(c);
                return PC_TCP_WINDOW;
        }
        if (seq_lt(seq, c->rcv_nxt)) {
                uint32_t cut = c->rcv_nxt - seq;
                /* The SYN's place is cut, the flag stays: step 4 challenges
                 * a SYN whatever its sequence number (RFC 5961 4.2). */
                if (syn)
                        cut--;
                if (cut >= dlen) {
                        if (cut > dlen)
                                fin = false;
                        data += dlen;
                        dlen = 0;
                } else {
                        data += cut;
                        dlen -= cut;
                }
                seq = c->rcv_nxt;
        }
        if (dlen > wnd - (seq - c->rcv_nxt)) {
                dlen = wnd - (seq - c->rcv_nxt);
                fin = false;
        }
        c->last_rx = e->now;
        c->ka_sent = 0;

        /* 2. RST (RFC 5961 3.2: only at exactly RCV.NXT). */
        if (rst) {
                if (c->state == PC_TCP_TIME_WAIT)
                        return PC_TCP_RST_TIME_WAIT;
                if (seq != c->rcv_nxt) {
                        if (pc__tcp_challenge_ok(e))
                                pc__tcb_send_ack(c);
                        return PC_TCP_RST_CHALLENGE;
                }
                e->st.resets_in++;
                if (c->state == PC_TCP_SYN_RCVD_STATE)
                        pc__tcb_done(c, (c->flags & TF_PASSIVE) ? 0 : -ECONNREFUSED);
                else
                        pc__tcb_done(c, -ECONNRESET);
                return PC_TCP_OK;
        }

        /* 4. SYN (RFC 5961 4.2: wherever it is, a challenge ACK). */
        if (syn) {
                if (pc__tcp_challenge_ok(e))
                        pc__tcb_send_ack(c);
                return PC_TCP_SYN_CHALLENGE;
        }

        /* 5. ACK. (Without one, a segment here would carry neither SYN nor
         * RST, which pc_tcp_parse() already refused.) */
        if (!ack)
                return PC_TCP_FLAGS;
        if (c->state == PC_TCP_SYN_RCVD_STATE) {
                if (!seq_gt(s->ack, c->snd_una) || seq_gt(s->ack, c->snd_max)) {
                        pc__tcp_reply_rst(e, c->raddr, c->laddr, s);
                        return PC_TCP_ACK_INVALID;
                }
                c->snd_una = s->ack;
                if (seq_lt(c->snd_nxt, c->snd_una))
                        c->snd_nxt = c->snd_una;
                if ((c->flags & TF_RTT) && seq_ge(s->ack, c->rtt_seq)) {
                        pc__tcb_rtt_sample(c, e->now - c->rtt_ts);
                        c->flags &= ~TF_RTT;
                }
                c->snd_wnd = (uint32_t)s->wnd << c->snd_ws;
                c->max_sndwnd = c->snd_wnd;
                c->snd_wl1 = seq;
                c->snd_wl2 = s->ack;
                pc__tcb_rexmt_stop(c);
                establish(c);
                if (c->flags & TF_DEAD)
                        return PC_TCP_OK;
                pc__tcb_pending(c);
        } else {
                r = ack_step(c, s, seq, dlen, fin);
                if (r != PC_TCP_OK || (c->flags & TF_DEAD))
                        return r;
                if (fin_acked(c)) {
                        if (c->state == PC_TCP_FIN_WAIT_1 && (c->flags & TF_DISCARDED)) {
                                /* All we sent has arrived: now the reset
                                 * owed for the data we dropped after our
                                 * close (step 7) can cost nothing. */
                                pc__tcb_send_rst(c);
                                pc__tcb_done(c, -ECONNABORTED);
                                return dlen ? PC_TCP_CLOSED : PC_TCP_OK;
                        }
                        if (c->state == PC_TCP_FIN_WAIT_1) {
                                pc__tcb_set_state(c, PC_TCP_FIN_WAIT_2);
                                pc__tcb_rexmt_stop(c);
                                if (c->flags & TF_APP_CLOSED)
                                        pc__tcb_2msl_start(c, e->cfg.fin_wait2_ns);
                        } else if (c->state == PC_TCP_CLOSING) {
                                enter_time_wait(c);
                                return PC_TCP_OK;
                        } else if (c->state == PC_TCP_LAST_ACK) {
                                pc__tcb_done(c, 0);
                                return PC_TCP_OK;
                        }
                }
        }

        /* 7. Text: only while the peer may still send. */
        if (c->state != PC_TCP_ESTABLISHED && c->state != PC_TCP_FIN_WAIT_1 &&
            c->state != PC_TCP_FIN_WAIT_2)
                return PC_TCP_OK;
        if (dlen) {
                if (c->flags & TF_APP_CLOSED) {
                        /* RFC 1122 4.2.2.13: data after our close is lost;
                         * say so with a reset. But the reset ends the
                         * connection, and with it whatever we queued that
                         * the peer has not acknowledged (often the reply
                         * to what it is still sending). Until our output
                         * and FIN are acknowledged, the data is dropped
                         * instead, unacknowledged: the window we offered
                         * bounds what the peer sends meanwhile, none of it
                         * is stored, and the reset follows the ACK of our
                         * FIN (step 5). */
                        if (!fin_acked(c)) {
                                c->flags |= TF_DISCARDED;
                                pc__tcb_free_rbuf(c);
                                return PC_TCP_DISCARD;
                        }
                        pc__tcb_send_rst(c);
                        pc__tcb_done(c, -ECONNABORTED);
                        return PC_TCP_CLOSED;
                }
                if ((c->flags & TF_FIN_SEEN) && seq_gt(seq + (uint32_t)dlen, c->fin_seq)) {
                        /* Nothing lies past a FIN. */
                        dlen = seq_gt(c->fin_seq, seq) ? c->fin_seq - seq : 0;
                }
                r = dlen ? pc__tcb_rcv_data(c, seq, data, dlen) : PC_TCP_OK;
                if (c->flags & TF_DEAD)
                        return PC_TCP_OK;
                if (r != PC_TCP_OK) {
                        c->flags |= TF_ACK_NOW;
                        pc__tcb_pending(c);
                        return r;
                }
        }

        /* 8. FIN, perhaps beyond a hole: remembered until it is in order. */
        if (fin && !(c->flags & TF_FIN_SEEN)) {
                c->fin_seq = seq + (uint32_t)dlen;
                c->flags |= TF_FIN_SEEN;
                c->flags |= TF_ACK_NOW;
        }
        if ((c->flags & (TF_FIN_SEEN | TF_FIN_RCVD)) == TF_FIN_SEEN &&
            c->rcv_nxt == c->fin_seq) {
                fin_in_order(c);
                if (c->flags & TF_DEAD)
                        return PC_TCP_OK;
        }

        /* Acknowledge every second full segment at once, else within
         * delack_ns (RFC 5681 4.2, RFC 9293 3.8.6.3). */
        if (c->rcv_unacked > c->rcv_mss) {
                c->flags |= TF_ACK_NOW;
        } else if (c->rcv_unacked) {
                c->flags |= TF_DELACK;
                pc__tcb_delack_start(c);
        }
        if (c->flags & TF_ACK_NOW)
                pc__tcb_pending(c);
        return PC_TCP_OK;
}

/* ---- The entry point ------------------------------------------------------ */

enum pc_tcp_err pc_tcpe_input(struct pc_tcpe *e, uint32_t saddr, uint32_t daddr,
                              const uint8_t *seg, size_t len, uint64_t now)
{
        struct pc_tcp_seg s;
        struct tcp_listener *l;
        struct pc_tcb *c;
        enum pc_tcp_err r;

        e->now = now;
        e->st.segs_in++;
        r = pc_tcp_parse(saddr, daddr, seg, len, &s);
        if (r == PC_TCP_OK) {
                e->st.bytes_in += s.len;
                c = pc__tcp_lookup(e, daddr, s.dport, saddr, s.sport);
                l = c && c->state != PC_TCP_TIME_WAIT ? NULL : pc__tcp_listener(e, daddr, s.dport);
                if (c && c->state == PC_TCP_TIME_WAIT && l &&
                    (s.flags & (PC_TCP_SYN | PC_TCP_ACK)) == PC_TCP_SYN &&
                    seq_gt(s.seq, c->rcv_nxt)) {
                        /* RFC 9293 3.6.1 (RFC 1122 4.2.2.13): a new SYN
                         * above the old sequence space reopens. */
                        uint32_t floor = c->snd_max + 1;
                        e->st.tw_recycled++;
                        pc__tcb_done(c, 0);
                        r = listen_input(e, l, saddr, daddr, &s, true, floor);
                } else if (c) {
                        r = pc__tcb_input(c, &s);
                } else if (l) {
                        r = listen_input(e, l, saddr, daddr, &s, false, 0);
                } else {
                        r = no_conn(e, saddr, daddr, &s);
                }
        }
        pc__tcp_count(e, r);
        pc__tcp_reap(e);
        return r;
}
