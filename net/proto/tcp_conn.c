/* SPDX-License-Identifier: MIT */
/*
 * The application's side of a connection: connect, close, abort and the
 * options, and the receive path that hands data to on_data (sending is
 * tcp_send.c's).
 *
 * Receiving costs no copy while the application keeps up: in-order data
 * goes to on_data straight from the caller's segment. Only what cannot be
 * delivered yet (out of order, or the application paused) is copied into
 * the receive ring, which exists only once needed and is rcv_cap bytes
 * (rounded up to a power of two), indexed by sequence number, so an
 * out-of-order byte lands where it will be read and filling a hole copies
 * nothing. Out-of-order ranges are kept sorted and merged, at most
 * TCP_OOO_MAX of them: a flood of tiny scattered segments costs one ring
 * and a fixed array, and what does not fit is dropped and counted.
 *
 * Backpressure, as the kernel backend has it: before each on_data the
 * engine checks that the send buffer has room for rx_chunk more bytes (so
 * a handler that answers each chunk with no more than it got never sees
 * -ENOBUFS); when it has not, reading stops (data is held and the window
 * closes as it fills) until the send buffer drains to half of snd_cap.
 * Two ends that both send on their own and both pause so stop each other
 * for good; such a service sets no_backpressure and paces its reading
 * itself with pc_tcb_pause().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_pvt.h"

static uint32_t pow2_at_least(uint32_t n)
{
        uint32_t p = 1;

        while (p < n)
                p <<= 1;
        return p;
}

void pc__tcb_free_rbuf(struct pc_tcb *c)
{
        if (c->rbuf) {
                pc__tcp_mem(c->e, -(int64_t)c->rbuf_size);
                free(c->rbuf);
                c->rbuf = NULL;
                c->rbuf_size = 0;
        }
        c->nooo = 0;
        c->rcv_read = rcv_data_end(c);
}

void pc__tcb_free_bufs(struct pc_tcb *c)
{
        if (c->sref_n)
                pc__tcb_refs_release(c, true);
        if (c->sref) {
                pc__tcp_mem(c->e, -(int64_t)(c->sref_cap * sizeof(*c->sref)));
                free(c->sref);
                c->sref = NULL;
                c->sref_cap = c->sref_n = c->sref_head = 0;
        }
        if (c->sbuf) {
                pc__tcp_mem(c->e, -(int64_t)c->sbuf_size);
                free(c->sbuf);
                c->sbuf = NULL;
                c->sbuf_size = 0;
        }
        pc__tcb_free_rbuf(c);
}

/* ---- Connect -------------------------------------------------------------- */

static bool port_taken(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                       uint16_t rport)
{
        return pc__tcp_lookup(e, laddr, lport, raddr, rport) != NULL ||
               pc__tcp_listener(e, laddr, lport) != NULL;
}

int pc_tcpe_connect(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                    uint16_t rport, const struct pc_tcpe_callbacks *cb, void *arg,
                    uint64_t now, struct pc_tcb **out)
{
        struct pc_tcb *c;
        uint8_t ws = 0;

        if (e == NULL || cb == NULL || laddr == 0 || rport == 0 || raddr == 0 ||
            raddr == 0xffffffffu || (raddr >> 28) == 0xe)
                return -EINVAL;
        e->now = now;
        if (lport == 0) {
                for (unsigned i = 0; i < 16384 && lport == 0; i++) {
                        uint16_t p = e->next_port;
                        e->next_port = p == 65535 ? 49152 : (uint16_t)(p + 1);
                        if (!port_taken(e, laddr, p, raddr, rport))
                                lport = p;
                }
                if (lport == 0)
                        return -EADDRNOTAVAIL;
        } else if (pc__tcp_lookup(e, laddr, lport, raddr, rport)) {
                return -EADDRINUSE;
        }
        if (!pc__tcp_make_room(e))
                return -EMFILE;
        c = pc__tcb_new(e, laddr, lport, raddr, rport);
        if (c == NULL)
                return -ENOMEM;
        c->cb = cb;
        c->arg = arg;
        c->iss = pc__tcp_isn(e, laddr, lport, raddr, rport);
        c->snd_una = c->snd_nxt = c->snd_max = c->recover = c->iss;
        c->snd_end = c->iss + 1;
        /* The smallest shift that lets the window cover rcv_cap. */
        while (!e->cfg.no_wscale && ws < 14 && (e->cfg.rcv_cap >> ws) > 0xffff)
                ws++;
        c->rcv_ws = ws;
        c->rcv_space = min_u32(e->cfg.rcv_cap, 0xffff);
        c->flags |= TF_OPEN;
        pc__tcb_set_state(c, PC_TCP_SYN_SENT_STATE);
        e->st.active_opens++;
        pc__tcb_pending(c);
        if (out)
                *out = c;
        return 0;
}

/* ---- Closing -------------------------------------------------------------- */

/* Queue our FIN after the data; @reading false also stops delivery. */
static int tcb_fin(struct pc_tcb *c, bool reading)
{
        if (c->flags & TF_DEAD)
                return 0;
        if (!reading && !(c->flags & TF_APP_CLOSED)) {
                c->flags |= TF_APP_CLOSED;
                /* What was held for the application goes with its reader. */
                c->rcv_read = rcv_data_end(c);
                c->nooo = 0;
                if (c->state == PC_TCP_FIN_WAIT_2)
                        pc__tcb_2msl_start(c, c->e->cfg.fin_wait2_ns);
                else if (c->state != PC_TCP_TIME_WAIT && c->state != PC_TCP_SYN_SENT_STATE)
                        pc__tcb_2msl_start(c, TCP_LINGER_NS);
        }
        if (c->flags & TF_FIN_QUEUED)
                return 0;
        switch (c->state) {
        case PC_TCP_SYN_SENT_STATE:
                if (!reading)
                        pc__tcb_done(c, -ECANCELED);
                else
                        c->flags |= TF_FIN_QUEUED;
                return 0;
        case PC_TCP_SYN_RCVD_STATE:
                /* RFC 9293 3.10.4: the FIN waits for ESTABLISHED. */
                c->flags |= TF_FIN_QUEUED;
                break;
        case PC_TCP_ESTABLISHED:
                c->flags |= TF_FIN_QUEUED;
                pc__tcb_set_state(c, PC_TCP_FIN_WAIT_1);
                break;
        case PC_TCP_CLOSE_WAIT:
                c->flags |= TF_FIN_QUEUED;
                pc__tcb_set_state(c, PC_TCP_LAST_ACK);
                break;
        default:
                return 0;
        }
        pc__tcb_pending(c);
        return 0;
}

int pc__tcb_close(struct pc_tcb *c)
{
        return tcb_fin(c, false);
}

int pc_tcb_shutdown(struct pc_tcb *c)
{
        if (c == NULL)
                return -EINVAL;
        return tcb_fin(c, true);
}

int pc_tcb_close(struct pc_tcb *c)
{
        if (c == NULL)
                return -EINVAL;
        return pc__tcb_close(c);
}

int pc_tcb_abort(struct pc_tcb *c)
{
        if (c == NULL || (c->flags & TF_DEAD))
                return -EINVAL;
        if (c->state != PC_TCP_SYN_SENT_STATE)
                pc__tcb_send_rst(c);
        pc__tcb_done(c, -ECONNABORTED);
        return 0;
}

/* ---- Options -------------------------------------------------------------- */

int pc_tcb_linger(struct pc_tcb *c)
{
        if (c == NULL)
                return -EINVAL;
        if (c->flags & (TF_DEAD | TF_FIN_QUEUED))
                return -EPIPE;
        c->flags |= TF_LINGER;
        return 0;
}

int pc_tcb_nodelay(struct pc_tcb *c, bool nodelay)
{
        if (c == NULL || (c->flags & TF_DEAD))
                return -EINVAL;
        if (nodelay) {
                c->flags |= TF_NODELAY;
                pc__tcb_pending(c);
        } else {
                c->flags &= ~TF_NODELAY;
        }
        return 0;
}

int pc_tcb_keepalive(struct pc_tcb *c, uint64_t idle_ns, uint64_t intvl_ns, unsigned count)
{
        if (c == NULL || (c->flags & TF_DEAD))
                return -EINVAL;
        if (idle_ns == 0) {
                c->flags &= ~TF_KEEPALIVE;
                c->t_keep = TCP_NEVER;
                pc__tcb_timers(c);
                return 0;
        }
        if (intvl_ns == 0 || count == 0)
                return -EINVAL;
        c->flags |= TF_KEEPALIVE;
        c->ka_idle = idle_ns;
        c->ka_intvl = intvl_ns;
        c->ka_count = count;
        c->ka_sent = 0;
        if (tcb_synced(c))
                pc__tcb_keep_start(c);
        return 0;
}

int pc_tcb_pause(struct pc_tcb *c, bool paused)
{
        if (c == NULL || (c->flags & TF_DEAD))
                return -EINVAL;
        if (paused) {
                c->flags |= TF_PAUSED;
        } else if (c->flags & TF_PAUSED) {
                c->flags &= ~TF_PAUSED;
                c->flags |= TF_DELIVER;
                pc__tcb_pending(c);
        }
        return 0;
}

size_t pc_tcb_buffered(const struct pc_tcb *c)
{
        return c ? snd_buffered(c) : 0;
}

void pc_tcb_set_data(struct pc_tcb *c, void *data)
{
        c->data = data;
}

void *pc_tcb_data(const struct pc_tcb *c)
{
        return c->data;
}

void pc_tcb_info(const struct pc_tcb *c, struct pc_tcb_info *o)
{
        memset(o, 0, sizeof(*o));
        o->state = (enum pc_tcp_state)c->state;
        o->laddr = c->laddr;
        o->raddr = c->raddr;
        o->lport = c->lport;
        o->rport = c->rport;
        o->iss = c->iss;
        o->irs = c->irs;
        o->snd_una = c->snd_una;
        o->snd_nxt = c->snd_nxt;
        o->rcv_nxt = c->rcv_nxt;
        o->snd_wnd = c->snd_wnd;
        o->rcv_wnd = pc__tcb_rcv_wnd(c);
        o->cwnd = c->cwnd;
        o->ssthresh = c->ssthresh;
        o->mss = c->mss;
        o->snd_wscale = c->snd_ws;
        o->rcv_wscale = (c->flags & TF_WSCALE) ? c->rcv_ws : 0;
        o->srtt_ns = c->srtt;
        o->rto_ns = c->rto;
        o->retries = c->retries;
        o->buffered = snd_buffered(c);
        o->held = rcv_data_end(c) - c->rcv_read;
        o->ooo = c->nooo;
        o->refs = c->sref_n;
        o->nodelay = (c->flags & TF_NODELAY) != 0;
        o->keepalive = (c->flags & TF_KEEPALIVE) != 0;
}

void pc_tcb_addr(const struct pc_tcb *c, uint32_t *laddr, uint16_t *lport, uint32_t *raddr,
                 uint16_t *rport)
{
        *laddr = c->laddr;
        *lport = c->lport;
        *raddr = c->raddr;
        *rport = c->rport;
}

/* ---- Receiving ------------------------------------------------------------ */

static bool rbuf_get(struct pc_tcb *c)
{
        uint32_t size;

        if (c->rbuf)
                return true;
        size = pow2_at_least(c->rcv_space);
        c->rbuf = malloc(size);
        if (c->rbuf == NULL)
                return false;
        c->rbuf_size = size;
        pc__tcp_mem(c->e, size);
        return true;
}

static bool can_deliver(struct pc_tcb *c)
{
        const struct pc_tcpe_config *cfg = &c->e->cfg;
        uint32_t buffered;

        if ((c->flags & (TF_PAUSED | TF_APP_CLOSED)) || tcb_app(c) == NULL)
                return false;
        if (cfg->no_backpressure)
                return true;
        buffered = snd_buffered(c);
        if (c->flags & TF_BACKPRESSURE) {
                if (buffered > cfg->snd_cap / 2)
                        return false;
                c->flags &= ~TF_BACKPRESSURE;
        }
        if (cfg->snd_cap - buffered < cfg->rx_chunk) {
                c->flags |= TF_BACKPRESSURE;
                c->e->st.backpressure++;
                return false;
        }
        return true;
}

static enum pc_tcp_err ooo_store(struct pc_tcb *c, uint32_t seq, const uint8_t *data,
                                 size_t len)
{
        uint32_t end = seq + (uint32_t)len, start = seq;
        unsigned i = 0, j;

        while (i < c->nooo && seq_lt(c->ooo[i].end, seq))
                i++;
        for (j = i; j < c->nooo && seq_le(c->ooo[j].start, end); j++) {
                if (seq_lt(c->ooo[j].start, start))
                        start = c->ooo[j].start;
                end = seq_max(end, c->ooo[j].end);
        }
        if (j == i && c->nooo == TCP_OOO_MAX)
                return PC_TCP_OOO_FULL;
        if (!rbuf_get(c))
                return PC_TCP_NOMEM;
        pc__ring_copy_in(c->rbuf, c->rbuf_size, seq, data, len);
        if (j == i) {
                memmove(&c->ooo[i + 1], &c->ooo[i], (c->nooo - i) * sizeof(c->ooo[0]));
                c->nooo++;
        } else {
                memmove(&c->ooo[i + 1], &c->ooo[j], (c->nooo - j) * sizeof(c->ooo[0]));
                c->nooo -= j - i - 1;
        }
        c->ooo[i].start = start;
        c->ooo[i].end = end;
        c->e->st.ooo_segs++;
        /* RFC 5681 4.2: a segment past a hole is acknowledged at once, so
         * the sender counts duplicate ACKs. */
        c->flags |= TF_ACK_NOW;
        return PC_TCP_OK;
}

enum pc_tcp_err pc__tcb_rcv_data(struct pc_tcb *c, uint32_t seq, const uint8_t *data,
                                 size_t len)
{
        const struct pc_tcpe_callbacks *cb;
        uint32_t rx_chunk = c->e->cfg.rx_chunk;
        size_t off = 0;

        if (seq != c->rcv_nxt)
                return ooo_store(c, seq, data, len);
        /* The peer's segment size, as far as our MSS lets it be. */
        if (len > c->rcv_mss)
                c->rcv_mss = (uint16_t)min_u32((uint32_t)len, c->e->cfg.mss);
        /* Straight from the segment while nothing is held before it. */
        while (off < len && c->rcv_read == c->rcv_nxt && can_deliver(c)) {
                uint32_t n = min_u32((uint32_t)(len - off), rx_chunk);
                c->rcv_nxt += n;
                c->rcv_read += n;
                c->rcv_unacked += n;
                cb = tcb_app(c);
                if (cb && cb->on_data)
                        cb->on_data(c, data + off, n, c->arg);
                if (c->flags & (TF_DEAD | TF_APP_CLOSED))
                        return PC_TCP_OK;
                off += n;
        }
        if (off < len) {
                if (!rbuf_get(c))
                        return PC_TCP_NOMEM;
                pc__ring_copy_in(c->rbuf, c->rbuf_size, c->rcv_nxt, data + off, len - off);
                c->rcv_nxt += (uint32_t)(len - off);
                c->rcv_unacked += (uint32_t)(len - off);
        }
        /* Ranges the segment reached are in order now: a hole was filled,
         * which RFC 5681 4.2 also wants acknowledged at once. */
        while (c->nooo && seq_le(c->ooo[0].start, c->rcv_nxt)) {
                c->rcv_nxt = seq_max(c->rcv_nxt, c->ooo[0].end);
                memmove(&c->ooo[0], &c->ooo[1], (c->nooo - 1) * sizeof(c->ooo[0]));
                c->nooo--;
                c->flags |= TF_ACK_NOW;
        }
        if (c->rcv_read != c->rcv_nxt)
                pc__tcb_deliver(c);
        return PC_TCP_OK;
}

void pc__tcb_deliver(struct pc_tcb *c)
{
        const struct pc_tcpe_callbacks *cb;
        uint32_t end, rx_chunk = c->e->cfg.rx_chunk;
        bool moved = false;

        while ((end = rcv_data_end(c)) != c->rcv_read && can_deliver(c)) {
                uint32_t off = c->rcv_read & (c->rbuf_size - 1);
                uint32_t n = min_u32(min_u32(end - c->rcv_read, rx_chunk), c->rbuf_size - off);
                c->rcv_read += n;
                moved = true;
                cb = tcb_app(c);
                if (cb && cb->on_data)
                        cb->on_data(c, c->rbuf + off, n, c->arg);
                if (c->flags & TF_DEAD)
                        return;
        }
        if (moved) {
                /* The window may have opened. */
                c->flags |= TF_WND_CHECK;
                pc__tcb_pending(c);
        }
        if ((c->flags & (TF_FIN_RCVD | TF_EOF_DONE)) != TF_FIN_RCVD || c->rcv_read != c->fin_seq)
                return;
        if ((c->flags & (TF_PAUSED | TF_APP_CLOSED)) || (cb = tcb_app(c)) == NULL)
                return;
        c->flags |= TF_EOF_DONE;
        if (cb->on_data) {
                cb->on_data(c, NULL, 0, c->arg);
                if (c->flags & TF_DEAD)
                        return;
        }
        if (c->state == PC_TCP_TIME_WAIT) {
                /* Both directions were done; only the reading was left. */
                pc__tcb_free_bufs(c);
                pc__tcb_notify(c, 0);
        } else if (!(c->flags & TF_LINGER)) {
                pc__tcb_close(c);
        }
}
