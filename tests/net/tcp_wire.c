/* SPDX-License-Identifier: MIT */
/* The in-memory wire and test application of tcp_wire.h. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tcp_wire.h"

static int wire_emit(void *ctx, const struct pc_tcp_frame *f);

static uint32_t wire_isn(void *ctx, uint32_t laddr, uint16_t lport, uint32_t raddr,
                         uint16_t rport)
{
        int *idx = ctx;
        struct wire *w = (struct wire *)((char *)(idx - *idx) - offsetof(struct wire, ctx));

        (void)laddr, (void)lport, (void)raddr, (void)rport;
        return w->isn[*idx];
}

void wire_init(struct wire *w, const struct pc_tcpe_config *cfg0,
               const struct pc_tcpe_config *cfg1, bool raw0)
{
        struct pc_tcpe_config def;
        struct pc_tcpe_ops ops = {.emit = wire_emit};
        uint32_t isn0 = w->isn[0], isn1 = w->isn[1];

        memset(w, 0, sizeof(*w));
        w->isn[0] = isn0;
        w->isn[1] = isn1;
        memset(&def, 0, sizeof(def));
        memset(def.secret, 0x5a, sizeof(def.secret));
        if (cfg0 == NULL)
                cfg0 = &def;
        if (cfg1 == NULL)
                cfg1 = cfg0;
        w->addr[0] = IP_A;
        w->addr[1] = IP_B;
        w->now = SEC;
        w->delay = MS;
        w->raw[0] = raw0;
        for (int i = 0; i < 2; i++) {
                w->ctx[i] = i;
                if (w->raw[i])
                        continue;
                ops.isn = w->isn[i] ? wire_isn : NULL;
                assert_int_equal(pc_tcpe_create(i ? cfg1 : cfg0, &ops, &w->ctx[i], &w->e[i]),
                                 0);
        }
}

void wire_fini(struct wire *w)
{
        for (int i = 0; i < 2; i++) {
                if (w->e[i]) {
                        assert_int_equal(pc_tcpe_audit(w->e[i]), 0);
                        pc_tcpe_destroy(w->e[i]);
                }
        }
        for (size_t i = 0; i < w->nq; i++)
                free(w->q[i].buf);
        free(w->q);
}

static struct wire *wire_of(void *ctx, int *from)
{
        int *idx = ctx;

        *from = *idx;
        return (struct wire *)((char *)(idx - *idx) - offsetof(struct wire, ctx));
}

static void enqueue(struct wire *w, int to, const uint8_t *buf, size_t len, uint64_t at)
{
        struct wire_pkt *p;

        if (w->nq == w->qcap) {
                w->qcap = w->qcap ? 2 * w->qcap : 256;
                w->q = realloc(w->q, w->qcap * sizeof(*w->q));
                assert_non_null(w->q);
        }
        p = &w->q[w->nq++];
        p->at = at;
        p->order = w->order++;
        p->to = to;
        p->len = len;
        p->buf = malloc(len);
        assert_non_null(p->buf);
        memcpy(p->buf, buf, len);
}

static int wire_emit(void *ctx, const struct pc_tcp_frame *f)
{
        static uint8_t buf[70000];
        int from, to, act = WIRE_PASS;
        struct wire *w = wire_of(ctx, &from);
        struct pc_tcp_seg s;
        uint64_t extra = 0;
        size_t n = 0;

        to = 1 - from;
        memcpy(buf, f->hdr, f->hdr_len);
        n = f->hdr_len;
        assert_true(f->pieces <= PC_TCP_FRAME_PIECES);
        if (f->pieces > w->max_pieces)
                w->max_pieces = f->pieces;
        for (unsigned i = 0; i < f->pieces; i++) {
                if (f->data_len[i])
                        memcpy(buf + n, f->data[i], f->data_len[i]);
                n += f->data_len[i];
        }
        assert_int_equal(n, f->len);
        /* What the engine sends must parse back, checksums included. */
        {
                struct pc_pkt p;
                memset(&p, 0, sizeof(p));
                assert_int_equal(pc_ipv4_parse(buf, n, &p), PC_PKT_OK);
                assert_int_equal(p.ip_proto, PC_IPPROTO_TCP);
                assert_int_equal(pc_tcp_parse(p.ip_src, p.ip_dst, buf + p.l4_off, p.l4_len, &s),
                                 PC_TCP_OK);
                assert_int_equal(p.ip_src, f->saddr);
        }
        if (getenv("WIRE_TRACE"))
                fprintf(stderr, "%10.6f %d->%d %s%s%s%s%s seq %u ack %u wnd %u len %zu\n",
                        (double)w->now / 1e9, from, to, s.flags & PC_TCP_SYN ? "S" : "",
                        s.flags & PC_TCP_FIN ? "F" : "", s.flags & PC_TCP_RST ? "R" : "",
                        s.flags & PC_TCP_PSH ? "P" : "", s.flags & PC_TCP_ACK ? "." : "", s.seq,
                        s.ack, s.wnd, s.len);
        w->sent[from]++;
        if (s.len)
                w->data_segs[from]++;
        if (w->filter)
                act = w->filter(w, from, &s, &extra, w->filter_arg);
        if (act == WIRE_DROP) {
                w->dropped++;
                return w->fail_drops ? -ENOBUFS : 0;
        }
        if (w->raw[to]) {
                struct wire_cap *k = &w->cap[w->ncap++ % WIRE_NCAP];
                k->s = s;
                k->s.data = NULL;
                k->flags = s.flags;
                k->len = s.len;
                return 0;
        }
        enqueue(w, to, buf, n, w->now + w->delay + (act == WIRE_DELAY ? extra : 0));
        if (act == WIRE_DUP) {
                w->duped++;
                enqueue(w, to, buf, n, w->now + w->delay);
        }
        return 0;
}

void wire_flush(struct wire *w)
{
        for (int i = 0; i < 2; i++)
                if (w->e[i])
                        pc_tcpe_flush(w->e[i], w->now);
}

static void deliver(struct wire *w, struct wire_pkt *p)
{
        struct pc_pkt ip;

        memset(&ip, 0, sizeof(ip));
        assert_int_equal(pc_ipv4_parse(p->buf, p->len, &ip), PC_PKT_OK);
        pc_tcpe_input(w->e[p->to], ip.ip_src, ip.ip_dst, p->buf + ip.l4_off, ip.l4_len, w->now);
        pc_tcpe_flush(w->e[p->to], w->now);
}

bool wire_step(struct wire *w, uint64_t limit)
{
        size_t best = SIZE_MAX;
        uint64_t t = UINT64_MAX;
        int tick = -1;

        for (size_t i = 0; i < w->nq; i++)
                if (best == SIZE_MAX || w->q[i].at < w->q[best].at ||
                    (w->q[i].at == w->q[best].at && w->q[i].order < w->q[best].order))
                        best = i;
        if (best != SIZE_MAX)
                t = w->q[best].at;
        for (int i = 0; i < 2; i++) {
                uint64_t d = w->e[i] ? pc_tcpe_next_deadline(w->e[i]) : UINT64_MAX;
                if (d < t) {
                        t = d;
                        tick = i;
                }
        }
        if (t == UINT64_MAX || t > limit)
                return false;
        if (t > w->now)
                w->now = t;
        if (tick >= 0) {
                pc_tcpe_tick(w->e[tick], w->now);
        } else {
                struct wire_pkt p = w->q[best];
                w->q[best] = w->q[--w->nq];
                deliver(w, &p);
                free(p.buf);
        }
        for (int i = 0; i < 2; i++)
                if (w->e[i])
                        assert_int_equal(pc_tcpe_audit(w->e[i]), 0);
        return true;
}

bool wire_run(struct wire *w, bool (*cond)(void *), void *arg, uint64_t limit)
{
        wire_flush(w);
        for (;;) {
                if (cond && cond(arg))
                        return true;
                if (!wire_step(w, limit)) {
                        if (limit != UINT64_MAX && limit > w->now)
                                w->now = limit;
                        return cond ? cond(arg) : true;
                }
        }
}

size_t tcp_seg_build(uint8_t *buf, uint32_t saddr, uint32_t daddr, uint16_t sport,
                     uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
                     const uint8_t *opts, size_t optlen, const void *data, size_t len)
{
        size_t hl = PC_TCP_HLEN + optlen, n = hl + len;
        uint16_t c;

        memset(buf, 0, hl);
        buf[0] = (uint8_t)(sport >> 8), buf[1] = (uint8_t)sport;
        buf[2] = (uint8_t)(dport >> 8), buf[3] = (uint8_t)dport;
        for (int i = 0; i < 4; i++) {
                buf[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
                buf[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
        }
        buf[12] = (uint8_t)(hl / 4 << 4);
        buf[13] = flags;
        buf[14] = (uint8_t)(wnd >> 8), buf[15] = (uint8_t)wnd;
        if (optlen)
                memcpy(buf + PC_TCP_HLEN, opts, optlen);
        if (len)
                memcpy(buf + hl, data, len);
        c = pc_csum_fold(pc_csum_add(pc_ipv4_pseudo(saddr, daddr, PC_IPPROTO_TCP, n), buf, n));
        buf[16] = (uint8_t)(c >> 8), buf[17] = (uint8_t)c;
        return n;
}

enum pc_tcp_err wire_inject(struct wire *w, int from, uint16_t sport, uint16_t dport,
                            uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
                            const uint8_t *opts, size_t optlen, const void *data, size_t len)
{
        static uint8_t buf[70000];
        int to = 1 - from;
        size_t n = tcp_seg_build(buf, w->addr[from], w->addr[to], sport, dport, seq, ack, flags,
                                 wnd, opts, optlen, data, len);
        enum pc_tcp_err r = pc_tcpe_input(w->e[to], w->addr[from], w->addr[to], buf, n, w->now);

        pc_tcpe_flush(w->e[to], w->now);
        assert_int_equal(pc_tcpe_audit(w->e[to]), 0);
        return r;
}

const struct wire_cap *wire_last(const struct wire *w)
{
        return w->ncap ? &w->cap[(w->ncap - 1) % WIRE_NCAP] : NULL;
}

uint64_t wire_drops(const struct wire *w, int i, enum pc_tcp_err why)
{
        struct pc_tcpe_stats st;

        pc_tcpe_stats(w->e[i], &st);
        return st.drops[why];
}

void wire_stats(const struct wire *w, int i, struct pc_tcpe_stats *st)
{
        pc_tcpe_stats(w->e[i], st);
}

/* ---- The test application ------------------------------------------------- */

uint8_t tpattern(uint64_t seed, uint64_t i)
{
        uint64_t x = (i + seed) * 0x9e3779b97f4a7c15ull;

        return (uint8_t)(x >> 56 ^ i);
}

void tapp_pump(struct tapp *a)
{
        uint8_t buf[65536];
        size_t chunk = a->chunk ? a->chunk : 8192;

        if (chunk > sizeof(buf))
                chunk = sizeof(buf);
        while (a->c && a->tx_sent < a->tx_total) {
                size_t n = a->tx_total - a->tx_sent < chunk ? a->tx_total - a->tx_sent : chunk;
                int rc;
                for (size_t i = 0; i < n; i++)
                        buf[i] = tpattern(a->pattern_seed, a->tx_sent + i);
                rc = pc_tcb_send(a->c, buf, n);
                if (rc == -ENOBUFS) {
                        a->refused++;
                        return;
                }
                assert_int_equal(rc, 0);
                a->tx_sent += n;
        }
        if (a->c && a->close_when_sent && a->tx_sent == a->tx_total) {
                a->close_when_sent = false;
                assert_int_equal(pc_tcb_close(a->c), 0);
        }
        if (a->c && a->shut_when_sent && a->tx_sent == a->tx_total) {
                a->shut_when_sent = false;
                assert_int_equal(pc_tcb_shutdown(a->c), 0);
        }
}

static void rx_append(struct tapp *a, const void *data, size_t len)
{
        if (a->rx_len + len > a->rx_cap) {
                a->rx_cap = (a->rx_len + len) * 2;
                a->rx = realloc(a->rx, a->rx_cap);
                assert_non_null(a->rx);
        }
        memcpy(a->rx + a->rx_len, data, len);
        a->rx_len += len;
}

bool tapp_rx_is_pattern(const struct tapp *a, uint64_t seed, uint64_t n)
{
        if (a->rx_len != n)
                return false;
        for (uint64_t i = 0; i < n; i++)
                if (a->rx[i] != tpattern(seed, i))
                        return false;
        return true;
}

void tapp_free(struct tapp *a)
{
        free(a->rx);
        a->rx = NULL;
}

void tserver_free(struct tserver *s)
{
        for (unsigned i = 0; i < s->n; i++)
                tapp_free(&s->apps[i]);
}

static void app_accept(struct pc_tcb *c, void *arg)
{
        struct tapp *a = arg;

        a->c = c;
        a->accepted++;
        pc_tcb_set_data(c, a);
        if (a->no_auto)
                assert_int_equal(pc_tcb_linger(c), 0);
        if (a->pause_at_accept)
                assert_int_equal(pc_tcb_pause(c, true), 0);
        tapp_pump(a);
}

static void app_data(struct pc_tcb *c, const void *data, size_t len, void *arg)
{
        struct tapp *a = arg;

        assert_ptr_equal(a->c, c);
        if (len == 0) {
                a->eof++;
                return;
        }
        rx_append(a, data, len);
        if (a->echo)
                assert_int_equal(pc_tcb_send(c, data, len), 0);
        if (a->pause_each_chunk)
                assert_int_equal(pc_tcb_pause(c, true), 0);
}

static void app_close(struct pc_tcb *c, int err, void *arg)
{
        struct tapp *a = arg;

        assert_ptr_equal(a->c, c);
        a->closed++;
        a->close_err = err;
        a->c = NULL;
}

static void app_writable(struct pc_tcb *c, void *arg)
{
        struct tapp *a = arg;

        assert_ptr_equal(a->c, c);
        a->writable++;
        tapp_pump(a);
}

static void app_acked(struct pc_tcb *c, size_t n, void *arg)
{
        struct tapp *a = arg;

        assert_ptr_equal(a->c, c);
        assert_true(n > 0);
        a->acked += n;
}

const struct pc_tcpe_callbacks tapp_cb = {
        .on_accept = app_accept,
        .on_data = app_data,
        .on_close = app_close,
        .on_writable = app_writable,
        .on_acked = app_acked,
};

static struct tapp *srv_app(struct pc_tcb *c)
{
        return pc_tcb_data(c);
}

static void srv_accept(struct pc_tcb *c, void *arg)
{
        struct tserver *s = arg;
        struct tapp *a;

        assert_true(s->n < 64);
        a = &s->apps[s->n++];
        *a = s->tmpl;
        a->rx = NULL;
        a->rx_len = a->rx_cap = 0;
        app_accept(c, a);
}

static void srv_data(struct pc_tcb *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        app_data(c, data, len, srv_app(c));
}

static void srv_close(struct pc_tcb *c, int err, void *arg)
{
        (void)arg;
        app_close(c, err, srv_app(c));
}

static void srv_writable(struct pc_tcb *c, void *arg)
{
        (void)arg;
        app_writable(c, srv_app(c));
}

static void srv_acked(struct pc_tcb *c, size_t n, void *arg)
{
        (void)arg;
        app_acked(c, n, srv_app(c));
}

const struct pc_tcpe_callbacks tserver_cb = {
        .on_accept = srv_accept,
        .on_data = srv_data,
        .on_close = srv_close,
        .on_writable = srv_writable,
        .on_acked = srv_acked,
};
