/* SPDX-License-Identifier: MIT */
/*
 * The engine: configuration, listeners, the connection table (a chained
 * hash of the 4-tuple, keyed so that a remote host cannot aim its
 * connections at one chain), connection structs and their end, the output
 * and reap lists, flush, and the audit tests and the fuzzer run.
 *
 * A connection that ends is taken out of the table and the heap at once,
 * so no segment or timer reaches it again, but its memory lives until the
 * reap at the end of the engine call, after its on_close: code that runs
 * a callback can always look at its connection afterwards (and must see
 * TF_DEAD before touching anything else).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tcp_pvt.h"

static const char *const err_names[PC_TCP_NR] = {
        [PC_TCP_OK] = "ok",
        [PC_TCP_SHORT] = "short",
        [PC_TCP_HLEN_BAD] = "hlen",
        [PC_TCP_CSUM] = "csum",
        [PC_TCP_OPTIONS] = "options",
        [PC_TCP_PORT] = "port",
        [PC_TCP_ADDR] = "addr",
        [PC_TCP_FLAGS] = "flags",
        [PC_TCP_NO_CONN] = "no_conn",
        [PC_TCP_LISTEN] = "listen",
        [PC_TCP_COOKIE] = "cookie",
        [PC_TCP_CONN_LIMIT] = "conn_limit",
        [PC_TCP_NOMEM] = "nomem",
        [PC_TCP_SYN_SENT] = "syn_sent",
        [PC_TCP_WINDOW] = "window",
        [PC_TCP_RST_CHALLENGE] = "rst_challenge",
        [PC_TCP_SYN_CHALLENGE] = "syn_challenge",
        [PC_TCP_RST_TIME_WAIT] = "rst_time_wait",
        [PC_TCP_ACK_INVALID] = "ack_invalid",
        [PC_TCP_OOO_FULL] = "ooo_full",
        [PC_TCP_CLOSED] = "closed",
        [PC_TCP_DISCARD] = "discard",
};

static const char *const state_names[PC_TCP_STATE_NR] = {
        [PC_TCP_CLOSED_STATE] = "CLOSED",     [PC_TCP_LISTEN_STATE] = "LISTEN",
        [PC_TCP_SYN_SENT_STATE] = "SYN-SENT", [PC_TCP_SYN_RCVD_STATE] = "SYN-RECEIVED",
        [PC_TCP_ESTABLISHED] = "ESTABLISHED", [PC_TCP_FIN_WAIT_1] = "FIN-WAIT-1",
        [PC_TCP_FIN_WAIT_2] = "FIN-WAIT-2",   [PC_TCP_CLOSE_WAIT] = "CLOSE-WAIT",
        [PC_TCP_CLOSING] = "CLOSING",         [PC_TCP_LAST_ACK] = "LAST-ACK",
        [PC_TCP_TIME_WAIT] = "TIME-WAIT",
};

const char *pc_tcp_err_name(enum pc_tcp_err e)
{
        return (unsigned)e < PC_TCP_NR && err_names[e] ? err_names[e] : "?";
}

void pc_tcpe_drops_print(const struct pc_tcpe_stats *s, FILE *f)
{
        for (int r = PC_TCP_OK + 1; r < PC_TCP_NR; r++)
                if (s->drops[r])
                        fprintf(f, " %s=%" PRIu64, pc_tcp_err_name((enum pc_tcp_err)r),
                                s->drops[r]);
}

const char *pc_tcp_state_name(enum pc_tcp_state s)
{
        return (unsigned)s < PC_TCP_STATE_NR ? state_names[s] : "?";
}

void pc__tcp_count(struct pc_tcpe *e, enum pc_tcp_err why)
{
        if (why != PC_TCP_OK && (unsigned)why < PC_TCP_NR)
                e->st.drops[why]++;
}

void pc__tcp_mem(struct pc_tcpe *e, int64_t delta)
{
        e->st.mem += (uint64_t)delta;
}

static int set_defaults(struct pc_tcpe_config *c)
{
        bool chunk_default = c->rx_chunk == 0;

        if (c->max_conns == 0)
                c->max_conns = 4096;
        if (c->backlog == 0)
                c->backlog = 128;
        if (c->snd_cap == 0)
                c->snd_cap = 256 * 1024;
        if (c->rcv_cap == 0)
                c->rcv_cap = 256 * 1024;
        if (chunk_default)
                c->rx_chunk = min_u32(16 * 1024, c->snd_cap / 2);
        if (c->mss == 0)
                c->mss = 1460;
        if (c->rto_init_ns == 0)
                c->rto_init_ns = 1000000000ull;
        if (c->rto_min_ns == 0)
                c->rto_min_ns = 200000000ull;
        if (c->rto_max_ns == 0)
                c->rto_max_ns = 60000000000ull;
        if (c->max_retries == 0)
                c->max_retries = 15;
        if (c->syn_retries == 0)
                c->syn_retries = 6;
        if (c->delack_ns == 0)
                c->delack_ns = 40000000ull;
        if (c->time_wait_ns == 0)
                c->time_wait_ns = 2000000000ull;
        if (c->fin_wait2_ns == 0)
                c->fin_wait2_ns = 30000000000ull;
        if (c->challenge_acks == 0)
                c->challenge_acks = 1000;

        if (c->max_conns > (1u << 24) || c->backlog > c->max_conns)
                return -EINVAL;
        if (c->snd_cap < 2 || c->snd_cap > (1u << 30) || c->rcv_cap < TCP_DEFAULT_MSS ||
            c->rcv_cap > (1u << 30))
                return -EINVAL;
        if (c->rx_chunk == 0 || c->rx_chunk > c->snd_cap / 2)
                return -EINVAL;
        if (c->mss < TCP_MIN_MSS || c->mss > 0xffff - 40)
                return -EINVAL;
        if (c->rto_min_ns > c->rto_init_ns || c->rto_init_ns > c->rto_max_ns)
                return -EINVAL;
        if (c->max_retries > 100 || c->syn_retries > 100)
                return -EINVAL;
        /* RFC 1122 4.2.3.2: an ACK is delayed less than 0.5 s. */
        if (c->delack_ns >= 500000000ull)
                return -EINVAL;
        return 0;
}

static uint32_t pow2_at_least(uint32_t n)
{
        uint32_t p = 1;

        while (p < n)
                p <<= 1;
        return p;
}

int pc_tcpe_create(const struct pc_tcpe_config *cfg, const struct pc_tcpe_ops *ops,
                   void *ctx, struct pc_tcpe **out)
{
        static const uint8_t zero[16];
        struct pc_tcpe *e;
        uint32_t nb;
        int rc;

        if (ops == NULL || ops->emit == NULL || out == NULL)
                return -EINVAL;
        e = calloc(1, sizeof(*e));
        if (e == NULL)
                return -ENOMEM;
        if (cfg)
                e->cfg = *cfg;
        rc = set_defaults(&e->cfg);
        if (rc) {
                free(e);
                return rc;
        }
        if (memcmp(e->cfg.secret, zero, 16) == 0 &&
            getrandom(e->cfg.secret, 16, 0) != 16) {
                free(e);
                return -EIO;
        }
        memcpy(e->key, e->cfg.secret, 16);
        e->hseed = pc__siphash(e->key, "table", 5);
        e->ops = *ops;
        e->ctx = ctx;
        nb = pow2_at_least(e->cfg.max_conns);
        e->tab = calloc(nb, sizeof(*e->tab));
        e->heap = calloc(e->cfg.max_conns, sizeof(*e->heap));
        if (e->tab == NULL || e->heap == NULL) {
                free(e->tab);
                free(e->heap);
                free(e);
                return -ENOMEM;
        }
        e->tab_mask = nb - 1;
        e->heap_cap = e->cfg.max_conns;
        e->next_port = (uint16_t)(49152 + (e->hseed & 0x3fff));
        e->out_tailp = &e->out_head;
        *out = e;
        return 0;
}

static void tcb_free(struct pc_tcpe *e, struct pc_tcb *c)
{
        pc__tcb_free_bufs(c);
        if (e->nfree < TCP_FREE_KEEP) {
                c->hnext = e->free_list;
                e->free_list = c;
                e->nfree++;
        } else {
                free(c);
        }
}

void pc_tcpe_destroy(struct pc_tcpe *e)
{
        struct pc_tcb *c, *n;

        if (e == NULL)
                return;
        for (uint32_t i = 0; i <= e->tab_mask; i++)
                for (c = e->tab[i]; c; c = n) {
                        n = c->hnext;
                        pc__tcb_free_bufs(c);
                        free(c);
                }
        for (c = e->reap; c; c = n) {
                n = c->rnext;
                if (c->flags & TF_DEAD) {
                        pc__tcb_free_bufs(c);
                        free(c);
                }
        }
        for (c = e->free_list; c; c = n) {
                n = c->hnext;
                free(c);
        }
        free(e->tab);
        free(e->heap);
        free(e);
}

/* ---- Listeners ------------------------------------------------------------ */

int pc_tcpe_listen(struct pc_tcpe *e, uint32_t addr, uint16_t port,
                   const struct pc_tcpe_callbacks *cb, void *arg)
{
        struct tcp_listener *free_slot = NULL;

        if (e == NULL || port == 0 || cb == NULL)
                return -EINVAL;
        for (unsigned i = 0; i < TCP_MAX_LISTEN; i++) {
                struct tcp_listener *l = &e->lst[i];
                if (l->used && l->addr == addr && l->port == port)
                        return -EADDRINUSE;
                if (!l->used && free_slot == NULL)
                        free_slot = l;
        }
        if (free_slot == NULL)
                return -ENOSPC;
        memset(free_slot, 0, sizeof(*free_slot));
        free_slot->used = true;
        free_slot->addr = addr;
        free_slot->port = port;
        free_slot->cb = cb;
        free_slot->arg = arg;
        return 0;
}

int pc_tcpe_unlisten(struct pc_tcpe *e, uint32_t addr, uint16_t port)
{
        struct tcp_listener *l = NULL;

        if (e == NULL || port == 0)
                return -EINVAL;
        for (unsigned i = 0; i < TCP_MAX_LISTEN && l == NULL; i++)
                if (e->lst[i].used && e->lst[i].addr == addr && e->lst[i].port == port)
                        l = &e->lst[i];
        if (l == NULL)
                return -ENOENT;
        /* Its half-open connections would be accepted through it: reset
         * them (the application never heard of them). The others only
         * forget where they came from: the slot may serve another. */
        for (uint32_t i = 0; i <= e->tab_mask; i++) {
                struct pc_tcb *c = e->tab[i], *n;

                for (; c; c = n) {
                        n = c->hnext;
                        if (c->lst != l)
                                continue;
                        if (c->state == PC_TCP_SYN_RCVD_STATE) {
                                pc__tcb_send_rst(c);
                                pc__tcb_done(c, 0);
                        }
                        c->lst = NULL;
                }
        }
        memset(l, 0, sizeof(*l));
        return 0;
}

struct tcp_listener *pc__tcp_listener(struct pc_tcpe *e, uint32_t addr, uint16_t port)
{
        struct tcp_listener *any = NULL;

        for (unsigned i = 0; i < TCP_MAX_LISTEN; i++) {
                struct tcp_listener *l = &e->lst[i];
                if (!l->used || l->port != port)
                        continue;
                if (l->addr == addr)
                        return l;
                if (l->addr == 0)
                        any = l;
        }
        return any;
}

/* ---- The connection table ------------------------------------------------- */

static uint32_t tuple_hash(const struct pc_tcpe *e, uint32_t laddr, uint16_t lport,
                           uint32_t raddr, uint16_t rport)
{
        uint64_t h = ((uint64_t)raddr << 32 | (uint32_t)rport << 16 | lport) ^ e->hseed;

        h ^= (uint64_t)laddr * 0x9e3779b97f4a7c15ull;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return (uint32_t)h & e->tab_mask;
}

struct pc_tcb *pc__tcp_lookup(struct pc_tcpe *e, uint32_t laddr, uint16_t lport,
                              uint32_t raddr, uint16_t rport)
{
        struct pc_tcb *c = e->tab[tuple_hash(e, laddr, lport, raddr, rport)];

        for (; c; c = c->hnext)
                if (c->lport == lport && c->rport == rport && c->raddr == raddr &&
                    c->laddr == laddr)
                        return c;
        return NULL;
}

static void tab_remove(struct pc_tcpe *e, struct pc_tcb *c)
{
        struct pc_tcb **pp = &e->tab[tuple_hash(e, c->laddr, c->lport, c->raddr, c->rport)];

        for (; *pp; pp = &(*pp)->hnext)
                if (*pp == c) {
                        *pp = c->hnext;
                        c->hnext = NULL;
                        return;
                }
}

static void tw_unlink(struct pc_tcpe *e, struct pc_tcb *c)
{
        if (c->tw_prev)
                c->tw_prev->tw_next = c->tw_next;
        else
                e->tw_head = c->tw_next;
        if (c->tw_next)
                c->tw_next->tw_prev = c->tw_prev;
        else
                e->tw_tail = c->tw_prev;
        c->tw_prev = c->tw_next = NULL;
}

bool pc__tcp_make_room(struct pc_tcpe *e)
{
        if (e->nconns < e->cfg.max_conns)
                return true;
        /* The oldest TIME-WAIT connection is the cheapest to give up: it
         * only guards against old duplicates, and it is the closest to its
         * natural end. */
        if (e->tw_head == NULL)
                return false;
        e->st.tw_recycled++;
        pc__tcb_done(e->tw_head, 0);
        return true;
}

struct pc_tcb *pc__tcb_new(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                           uint16_t rport)
{
        struct pc_tcb *c = e->free_list;
        uint32_t h;

        if (e->nconns >= e->cfg.max_conns)
                return NULL;
        if (c) {
                e->free_list = c->hnext;
                e->nfree--;
                memset(c, 0, sizeof(*c));
        } else if ((c = calloc(1, sizeof(*c))) == NULL) {
                return NULL;
        }
        c->e = e;
        c->heap_idx = UINT32_MAX;
        c->deadline = c->t_rexmt = c->t_delack = c->t_keep = c->t_2msl = TCP_NEVER;
        c->laddr = laddr;
        c->lport = lport;
        c->raddr = raddr;
        c->rport = rport;
        c->flags = TF_NODELAY;
        c->rto = e->cfg.rto_init_ns;
        c->mss = TCP_DEFAULT_MSS;
        c->rcv_mss = TCP_DEFAULT_MSS;
        c->last_rx = e->now;
        h = tuple_hash(e, laddr, lport, raddr, rport);
        c->hnext = e->tab[h];
        e->tab[h] = c;
        e->nconns++;
        e->st.conns++;
        return c;
}

void pc__tcb_set_state(struct pc_tcb *c, enum pc_tcp_state s)
{
        struct pc_tcpe *e = c->e;

        if (c->state == s)
                return;
        if (c->state == PC_TCP_SYN_RCVD_STATE) {
                e->st.syn_rcvd--;
                if (c->lst)
                        c->lst->syn_rcvd--;
        } else if (c->state == PC_TCP_TIME_WAIT) {
                e->st.time_wait--;
                tw_unlink(e, c);
        }
        c->state = (uint8_t)s;
        if (s == PC_TCP_SYN_RCVD_STATE) {
                e->st.syn_rcvd++;
                if (c->lst)
                        c->lst->syn_rcvd++;
        } else if (s == PC_TCP_TIME_WAIT) {
                e->st.time_wait++;
                c->tw_prev = e->tw_tail;
                if (e->tw_tail)
                        e->tw_tail->tw_next = c;
                else
                        e->tw_head = c;
                e->tw_tail = c;
        }
}

static void reap_add(struct pc_tcb *c)
{
        if (c->flags & TF_REAP)
                return;
        c->flags |= TF_REAP;
        c->rnext = c->e->reap;
        c->e->reap = c;
}

static void out_unlink(struct pc_tcpe *e, struct pc_tcb *c)
{
        *c->pprev = c->pnext;
        if (c->pnext)
                c->pnext->pprev = c->pprev;
        else
                e->out_tailp = c->pprev;
        c->pnext = NULL;
        c->pprev = NULL;
        c->flags &= ~TF_PENDING;
}

void pc__tcb_pending(struct pc_tcb *c)
{
        struct pc_tcpe *e = c->e;

        if (c->flags & (TF_PENDING | TF_DEAD))
                return;
        c->flags |= TF_PENDING;
        c->pnext = NULL;
        c->pprev = e->out_tailp;
        *e->out_tailp = c;
        e->out_tailp = &c->pnext;
}

void pc__tcb_notify(struct pc_tcb *c, int err)
{
        if ((c->flags & (TF_OPEN | TF_NOTIFY)) != TF_OPEN)
                return;
        c->flags |= TF_NOTIFY;
        c->close_err = err;
        reap_add(c);
}

void pc__tcb_done(struct pc_tcb *c, int err)
{
        struct pc_tcpe *e = c->e;

        if (c->flags & TF_DEAD)
                return;
        pc__tcb_notify(c, err);
        pc__tcb_set_state(c, PC_TCP_CLOSED_STATE);
        c->flags |= TF_DEAD;
        tab_remove(e, c);
        pc__tcp_heap_remove(e, c);
        if (c->flags & TF_PENDING)
                out_unlink(e, c);
        /* The buffers go at the reap: a handler may be reading the receive
         * ring when it aborts. */
        e->nconns--;
        e->st.conns--;
        e->st.closed++;
        reap_add(c);
}

void pc__tcp_reap(struct pc_tcpe *e)
{
        struct pc_tcb *c;

        while ((c = e->reap) != NULL) {
                e->reap = c->rnext;
                c->flags &= ~TF_REAP;
                /* What the application lent us goes back before it hears
                 * the end. */
                if (c->sref_n && (c->flags & (TF_DEAD | TF_NOTIFY)))
                        pc__tcb_refs_release(c, true);
                if (c->flags & TF_NOTIFY) {
                        const struct pc_tcpe_callbacks *cb = c->cb;
                        c->flags &= ~(TF_NOTIFY | TF_OPEN);
                        c->cb = NULL;
                        if (cb && cb->on_close)
                                cb->on_close(c, c->close_err, c->arg);
                }
                if (c->flags & TF_DEAD)
                        tcb_free(e, c);
        }
}

/* ---- Driving it ----------------------------------------------------------- */

void pc_tcpe_flush(struct pc_tcpe *e, uint64_t now)
{
        struct pc_tcb *c;

        e->now = now;
        while ((c = e->out_head) != NULL) {
                out_unlink(e, c);
                if (c->flags & TF_DELIVER) {
                        c->flags &= ~TF_DELIVER;
                        pc__tcb_deliver(c);
                }
                if (!(c->flags & TF_DEAD))
                        pc__tcb_output(c);
        }
        pc__tcp_reap(e);
}

void pc_tcpe_tick(struct pc_tcpe *e, uint64_t now)
{
        e->now = now;
        pc__tcp_timers_run(e, now);
        pc_tcpe_flush(e, now);
}

uint64_t pc_tcpe_next_deadline(const struct pc_tcpe *e)
{
        return e->heap_len ? e->heap[0]->deadline : TCP_NEVER;
}

bool pc_tcpe_pending(const struct pc_tcpe *e)
{
        return e->out_head != NULL || e->reap != NULL;
}

void pc_tcpe_stats(const struct pc_tcpe *e, struct pc_tcpe_stats *out)
{
        *out = e->st;
}

/* ---- Audit ---------------------------------------------------------------- */

#define AUDIT(cond)                                                                             \
        do {                                                                                    \
                if (!(cond)) {                                                                  \
                        fprintf(stderr, "pc_tcpe_audit: %s:%d: %s\n", __FILE__, __LINE__,      \
                                #cond);                                                         \
                        return -EFAULT;                                                         \
                }                                                                               \
        } while (0)

static int audit_tcb(const struct pc_tcpe *e, const struct pc_tcb *c)
{
        uint32_t edge = c->rcv_read + c->rcv_space;

        AUDIT(c->e == e && !(c->flags & TF_DEAD));
        AUDIT(c->state > PC_TCP_LISTEN_STATE && c->state < PC_TCP_STATE_NR);
        AUDIT(seq_le(c->snd_una, c->snd_nxt) && seq_le(c->snd_nxt, c->snd_max));
        AUDIT(seq_le(c->snd_max, c->snd_end + ((c->flags & TF_FIN_QUEUED) ? 1 : 0)));
        AUDIT(snd_buffered(c) <= e->cfg.snd_cap);
        AUDIT(c->sref_n <= c->sref_cap && c->sref_n <= PC_TCP_SREF_MAX);
        {
                /* Every byte queued is in the ring or in a reference. */
                uint32_t refs = 0, start = snd_data_start(c), ring;

                for (uint32_t k = 0; k < c->sref_n; k++) {
                        const struct tcp_sref *r = &c->sref[(c->sref_head + k) &
                                                            (c->sref_cap - 1)];
                        uint32_t from = seq_gt(start, r->seq) ? start : r->seq;
                        AUDIT(seq_le(r->seq + r->len, c->snd_end));
                        AUDIT(k == 0 || seq_ge(r->seq, c->sref[(c->sref_head + k - 1) &
                                                               (c->sref_cap - 1)].seq));
                        if (seq_gt(r->seq + r->len, from))
                                refs += r->seq + r->len - from;
                }
                ring = snd_buffered(c) - refs;
                AUDIT(refs <= snd_buffered(c));
                AUDIT(ring == 0 || (c->sbuf && ring <= c->sbuf_size));
        }
        if (c->state == PC_TCP_SYN_SENT_STATE)
                return 0;
        AUDIT(seq_le(c->rcv_read, c->rcv_nxt));
        AUDIT(seq_le(rcv_data_end(c), edge));
        AUDIT(c->rcv_space <= e->cfg.rcv_cap && (c->rbuf == NULL || c->rcv_space <= c->rbuf_size));
        AUDIT(c->rcv_read == rcv_data_end(c) || c->rbuf != NULL);
        AUDIT(c->nooo <= TCP_OOO_MAX && (c->nooo == 0 || c->rbuf != NULL));
        for (unsigned i = 0; i < c->nooo; i++) {
                AUDIT(seq_gt(c->ooo[i].start, c->rcv_nxt));
                AUDIT(seq_lt(c->ooo[i].start, c->ooo[i].end) && seq_le(c->ooo[i].end, edge));
                AUDIT(i == 0 || seq_gt(c->ooo[i].start, c->ooo[i - 1].end));
        }
        if (c->heap_idx != UINT32_MAX)
                AUDIT(c->heap_idx < e->heap_len && e->heap[c->heap_idx] == c);
        AUDIT((c->heap_idx != UINT32_MAX) == (c->deadline != TCP_NEVER));
        AUDIT(c->deadline == min_u64(min_u64(c->t_rexmt, c->t_delack),
                                     min_u64(c->t_keep, c->t_2msl)));
        return 0;
}

int pc_tcpe_audit(const struct pc_tcpe *e)
{
        unsigned n = 0, syn = 0, tw = 0, twl = 0;
        uint64_t mem = 0;

        for (uint32_t i = 0; i <= e->tab_mask; i++)
                for (const struct pc_tcb *c = e->tab[i]; c; c = c->hnext) {
                        if (audit_tcb(e, c))
                                return -EFAULT;
                        n++;
                        syn += c->state == PC_TCP_SYN_RCVD_STATE;
                        tw += c->state == PC_TCP_TIME_WAIT;
                        mem += (c->sbuf ? c->sbuf_size : 0) + (c->rbuf ? c->rbuf_size : 0) +
                               c->sref_cap * sizeof(struct tcp_sref);
                }
        for (const struct pc_tcb *c = e->tw_head; c; c = c->tw_next)
                twl++;
        for (const struct pc_tcb *c = e->reap; c; c = c->rnext)
                if (c->flags & TF_DEAD)
                        mem += (c->sbuf ? c->sbuf_size : 0) + (c->rbuf ? c->rbuf_size : 0) +
                               c->sref_cap * sizeof(struct tcp_sref);
        AUDIT(n == e->nconns && n == e->st.conns && n <= e->cfg.max_conns);
        AUDIT(syn == e->st.syn_rcvd && tw == e->st.time_wait && tw == twl);
        AUDIT(mem == e->st.mem);
        AUDIT(e->heap_len <= n);
        for (uint32_t i = 1; i < e->heap_len; i++)
                AUDIT(e->heap[(i - 1) / 2]->deadline <= e->heap[i]->deadline);
        for (unsigned i = 0; i < TCP_MAX_LISTEN; i++)
                AUDIT(!e->lst[i].used || e->lst[i].syn_rcvd <= e->cfg.backlog);
        return 0;
}
