/* SPDX-License-Identifier: MIT */
/*
 * Timers. Each connection has four deadlines: t_rexmt (retransmission, or
 * persist while the peer's window is shut: the two never run together),
 * t_delack, t_keep (keepalive) and t_2msl (TIME-WAIT, FIN-WAIT-2's limit,
 * or the linger limit of the other states after our close). Its earliest
 * is its key in the engine's min-heap, so the caller needs a single timer
 * for the whole engine (pc_tcpe_next_deadline()).
 *
 * RTO per RFC 6298: the first sample sets SRTT and RTTVAR = R/2, later
 * ones the 1/8 and 1/4 gains; RTO = SRTT + 4 RTTVAR within [rto_min,
 * rto_max]; Karn's rule (no sample from a retransmitted segment, and the
 * backed-off RTO stays until a new sample) lives in the output and input
 * code that starts and stops timing.
 */
#include <errno.h>

#include "tcp_pvt.h"

/* ---- The heap ------------------------------------------------------------- */

static void heap_set(struct pc_tcpe *e, uint32_t i, struct pc_tcb *c)
{
        e->heap[i] = c;
        c->heap_idx = i;
}

static void sift_up(struct pc_tcpe *e, uint32_t i)
{
        struct pc_tcb *c = e->heap[i];

        while (i > 0) {
                uint32_t p = (i - 1) / 2;
                if (e->heap[p]->deadline <= c->deadline)
                        break;
                heap_set(e, i, e->heap[p]);
                i = p;
        }
        heap_set(e, i, c);
}

static void sift_down(struct pc_tcpe *e, uint32_t i)
{
        struct pc_tcb *c = e->heap[i];

        for (;;) {
                uint32_t l = 2 * i + 1, m = l;
                if (l >= e->heap_len)
                        break;
                if (l + 1 < e->heap_len && e->heap[l + 1]->deadline < e->heap[l]->deadline)
                        m = l + 1;
                if (e->heap[m]->deadline >= c->deadline)
                        break;
                heap_set(e, i, e->heap[m]);
                i = m;
        }
        heap_set(e, i, c);
}

void pc__tcp_heap_remove(struct pc_tcpe *e, struct pc_tcb *c)
{
        uint32_t i = c->heap_idx;
        struct pc_tcb *last;

        if (i == UINT32_MAX)
                return;
        c->heap_idx = UINT32_MAX;
        c->deadline = TCP_NEVER;
        last = e->heap[--e->heap_len];
        if (last == c)
                return;
        heap_set(e, i, last);
        sift_up(e, i);
        sift_down(e, last->heap_idx);
}

void pc__tcb_timers(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;
        uint64_t d = min_u64(min_u64(c->t_rexmt, c->t_delack), min_u64(c->t_keep, c->t_2msl));
        uint64_t old = c->deadline;

        if (c->flags & TF_DEAD)
                return;
        if (d == TCP_NEVER) {
                pc__tcp_heap_remove(e, c);
                return;
        }
        c->deadline = d;
        if (c->heap_idx == UINT32_MAX) {
                /* Every connection fits: the heap holds max_conns. */
                heap_set(e, e->heap_len++, c);
                sift_up(e, c->heap_idx);
        } else if (d < old) {
                sift_up(e, c->heap_idx);
        } else if (d > old) {
                sift_down(e, c->heap_idx);
        }
}

/* ---- Starting and stopping ------------------------------------------------ */

void pc__tcb_rexmt_start(struct pc_tcb *c)
{
        c->flags &= ~TF_PERSIST;
        c->t_rexmt = c->e->now + c->rto;
        pc__tcb_timers(c);
}

void pc__tcb_rexmt_stop(struct pc_tcb *c)
{
        c->flags &= ~TF_PERSIST;
        c->t_rexmt = TCP_NEVER;
        pc__tcb_timers(c);
}

void pc__tcb_persist_start(struct pc_tcb *c)
{
        uint64_t max = c->e->cfg.rto_max_ns;
        uint64_t t = c->rto > TCP_PERSIST_MIN_NS ? c->rto : TCP_PERSIST_MIN_NS;

        /* Backed off like the RTO, once per probe since the window shut. */
        for (unsigned i = 0; i < c->persist_n && t < max; i++)
                t *= 2;
        c->flags |= TF_PERSIST;
        c->t_rexmt = c->e->now + (t < max ? t : max);
        pc__tcb_timers(c);
}

void pc__tcb_delack_start(struct pc_tcb *c)
{
        if (c->t_delack != TCP_NEVER)
                return;
        c->t_delack = c->e->now + c->e->cfg.delack_ns;
        pc__tcb_timers(c);
}

void pc__tcb_keep_start(struct pc_tcb *c)
{
        c->t_keep = (c->flags & TF_KEEPALIVE) ? c->last_rx + c->ka_idle : TCP_NEVER;
        pc__tcb_timers(c);
}

void pc__tcb_2msl_start(struct pc_tcb *c, uint64_t ns)
{
        c->t_2msl = c->e->now + ns;
        pc__tcb_timers(c);
}

void pc__tcb_rtt_sample(struct pc_tcb *c, uint64_t r)
{
        const struct pc_tcpe_config *cfg = &c->e->cfg;
        uint64_t rto;

        if (r == 0)
                r = 1;
        if (c->srtt == 0) {
                c->srtt = r;
                c->rttvar = r / 2;
        } else {
                uint64_t d = c->srtt > r ? c->srtt - r : r - c->srtt;
                c->rttvar = (3 * c->rttvar + d) / 4;
                c->srtt = (7 * c->srtt + r) / 8;
        }
        rto = c->srtt + 4 * c->rttvar;
        if (rto < cfg->rto_min_ns)
                rto = cfg->rto_min_ns;
        if (rto > cfg->rto_max_ns)
                rto = cfg->rto_max_ns;
        c->rto = rto;
}

/* ---- Expiry --------------------------------------------------------------- */

static void on_rexmt(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;
        bool syn = c->state == PC_TCP_SYN_SENT_STATE || c->state == PC_TCP_SYN_RCVD_STATE;
        unsigned limit = syn ? e->cfg.syn_retries : e->cfg.max_retries;
        uint32_t flight;

        if (!syn && c->snd_una == c->snd_max)
                return;
        e->st.timeouts++;
        if (++c->retries > limit) {
                if (c->state == PC_TCP_SYN_RCVD_STATE && (c->flags & TF_PASSIVE))
                        e->st.syn_timeouts++;
                pc__tcb_done(c, -ETIMEDOUT);
                return;
        }
        /* RFC 5681 (4): half the flight, at least two segments, and a loss
         * window of one segment; RFC 6582: no fast retransmit for
         * duplicate ACKs of what was sent before this timeout. */
        flight = c->snd_max - c->snd_una;
        c->ssthresh = flight / 2 > 2u * c->mss ? flight / 2 : 2u * c->mss;
        c->cwnd = c->mss;
        c->recover = c->snd_max;
        c->dupacks = 0;
        c->bytes_acked = 0;
        c->flags &= ~(TF_RECOVERY | TF_RTT | TF_PARTIAL_SEEN | TF_REXMT_ONE);
        /* RFC 6298 (5.5): back off. */
        c->rto = c->rto * 2 < e->cfg.rto_max_ns ? c->rto * 2 : e->cfg.rto_max_ns;
        if (syn)
                c->flags |= TF_SYN_REXMT;
        c->snd_nxt = c->snd_una;
        pc__tcb_rexmt_start(c);
        pc__tcb_pending(c);
}

static void on_persist(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;

        /* RFC 1122 4.2.2.17: probe for as long as the peer answers; only
         * probes that no ACK answered count towards the limit. */
        if (++c->retries > e->cfg.max_retries) {
                pc__tcb_done(c, -ETIMEDOUT);
                return;
        }
        e->st.persist_probes++;
        c->persist_n++;
        c->flags |= TF_PROBE;
        pc__tcb_persist_start(c);
        pc__tcb_pending(c);
}

static void on_keep(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;

        if (!(c->flags & TF_KEEPALIVE) ||
            (c->state != PC_TCP_ESTABLISHED && c->state != PC_TCP_CLOSE_WAIT))
                return;
        if (e->now < c->last_rx + c->ka_idle) {
                c->t_keep = c->last_rx + c->ka_idle;
                return;
        }
        if (c->ka_sent >= c->ka_count) {
                pc__tcb_done(c, -ETIMEDOUT);
                return;
        }
        /* RFC 1122 4.2.3.6: a segment one below SND.UNA, which the peer
         * must answer with an ACK. */
        e->st.keepalive_probes++;
        c->ka_sent++;
        pc__tcp_emit(e, c, c->laddr, c->raddr, c->lport, c->rport, c->snd_una - 1, c->rcv_nxt,
                     PC_TCP_ACK, (uint16_t)(pc__tcb_rcv_wnd(c) >> c->rcv_ws), NULL, 0, NULL, 0,
                     NULL, 0);
        c->t_keep = e->now + c->ka_intvl;
}

static void on_2msl(struct pc_tcb *c)
{
        /* The end of TIME-WAIT; of FIN-WAIT-2 after our close (the peer
         * never sent its FIN); or of the linger after our close, the peer
         * taking nothing more of what we sent (TCP_LINGER_NS), which a
         * reset tells a peer that is still there. */
        if (c->state == PC_TCP_TIME_WAIT) {
                pc__tcb_done(c, 0);
                return;
        }
        if (tcb_synced(c) && c->state != PC_TCP_FIN_WAIT_2)
                pc__tcb_send_rst(c);
        pc__tcb_done(c, -ETIMEDOUT);
}

void pc__tcp_timers_run(struct pc_tcpe *e, uint64_t now)
{
        while (e->heap_len && e->heap[0]->deadline <= now) {
                struct pc_tcb *c = e->heap[0];

                if (c->t_2msl <= now) {
                        c->t_2msl = TCP_NEVER;
                        on_2msl(c);
                        continue;
                }
                if (c->t_rexmt <= now) {
                        c->t_rexmt = TCP_NEVER;
                        if (c->flags & TF_PERSIST) {
                                c->flags &= ~TF_PERSIST;
                                on_persist(c);
                        } else {
                                on_rexmt(c);
                        }
                        if (c->flags & TF_DEAD)
                                continue;
                }
                if (c->t_delack <= now) {
                        c->t_delack = TCP_NEVER;
                        if (c->flags & TF_DELACK) {
                                c->flags |= TF_ACK_NOW;
                                pc__tcb_pending(c);
                        }
                }
                if (c->t_keep <= now) {
                        c->t_keep = TCP_NEVER;
                        on_keep(c);
                        if (c->flags & TF_DEAD)
                                continue;
                }
                pc__tcb_timers(c);
        }
}
