/* SPDX-License-Identifier: MIT */
/*
 * TCP connections, on either backend (pc_net.h's TCP API: only the
 * listening differs). The first byte a client sends
 * picks the protocol for the whole connection, as memcached does: 0x80 is
 * the binary protocol's request magic, anything else is ASCII.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_pvt.h"
#include "pc_knet.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

/* An input buffer this much larger than what it holds is given back. */
#define IN_SHRINK 65536
/* Replies go to the backend in pieces of at most this much, so a reply
 * larger than its output cap still goes out, piece by piece. */
#define SEND_PIECE 65536

enum { PROTO_UNKNOWN = -1 };

struct conn {
        struct kv_sink sink; /* first: the sink callbacks cast back */
        struct conn *prev, *next; /* the worker's open connections */
        unsigned worker;
        struct pc_conn *pc;
        struct kv_parser parser;
        struct buf in;      /* bytes of an incomplete request */
        struct buf backlog; /* replies the backend refused (output full), in order */
        int proto;     /* enum kv_proto once the first byte came */
        bool quitting; /* parse no more; close once every reply is out */
};

/* Hand @p[0..@len) to the backend; what it refuses (-ENOBUFS: the client
 * is slow to read) waits in the backlog for on_writable. false: closed. */
static bool send_pieces(struct conn *c, const char *p, size_t len)
{
        while (len) {
                size_t n = len < SEND_PIECE ? len : SEND_PIECE;
                int rc = pc_conn_send(c->pc, p, n);

                if (rc == -ENOBUFS)
                        break;
                if (rc) {
                        kv_wstats[pc_worker_id()].send_failed++;
                        pc_conn_close(c->pc);
                        return false;
                }
                p += n;
                len -= n;
        }
        buf_add(&c->backlog, p, len);
        if (c->backlog.oom) {
                kv_wstats[pc_worker_id()].send_failed++;
                pc_conn_close(c->pc);
                return false;
        }
        return true;
}

static bool conn_send(struct kv_sink *k, const char *p, size_t len)
{
        struct conn *c = (struct conn *)k;

        if (p == NULL) { /* a reply could not be built */
                pc_conn_close(c->pc);
                return false;
        }
        if (c->backlog.len == 0)
                return send_pieces(c, p, len);
        buf_add(&c->backlog, p, len); /* behind what already waits: keep the order */
        if (!c->backlog.oom)
                return true;
        pc_conn_close(c->pc);
        return false;
}

static bool backlog_empty(const struct conn *c)
{
        return c->backlog.len == 0;
}

static void conn_drained(struct kv_sink *k)
{
        struct conn *c = (struct conn *)k;

        if (c->quitting && backlog_empty(c))
                pc_conn_close(c->pc);
}

/* The backend took some output: move the backlog along. */
static void on_writable(struct pc_conn *pc, void *arg)
{
        struct conn *c = pc_conn_data(pc);
        struct buf rest = {0};

        (void)arg;
        if (c == NULL || backlog_empty(c))
                return;
        rest = c->backlog;
        c->backlog = (struct buf){0};
        /* All out, and nothing left waiting on other workers: as a drain. */
        if (send_pieces(c, rest.p, rest.len) && backlog_empty(c) && c->sink.head == NULL)
                conn_drained(&c->sink);
        buf_free(&rest);
}

/* Each worker's connections, for kv_tcp_free(): pc_runtime_destroy()
 * closes the ones still open without an on_close. Touched by that worker
 * only, and by kv_tcp_free() once no worker runs. */
static struct conn *open_conns[PC_MAX_WORKERS];

static void conn_free(struct conn *c)
{
        kv_sink_fini(&c->sink);
        buf_free(&c->in);
        buf_free(&c->backlog);
        free(c);
}

static void conn_release(struct kv_sink *k)
{
        struct conn *c = (struct conn *)k;

        if (c->prev)
                c->prev->next = c->next;
        else
                open_conns[c->worker] = c->next;
        if (c->next)
                c->next->prev = c->prev;
        conn_free(c);
}

void kv_tcp_free(void)
{
        for (unsigned w = 0; w < PC_MAX_WORKERS; w++)
                while (open_conns[w]) {
                        struct conn *c = open_conns[w];

                        open_conns[w] = c->next;
                        conn_free(c);
                }
}


static const struct kv_sink_ops conn_ops = {
        .send = conn_send,
        .drained = conn_drained,
        .release = conn_release,
};

static void on_accept(struct pc_conn *pc, void *arg)
{
        struct conn *c = calloc(1, sizeof(*c));
        int w = pc_worker_id();

        (void)arg;
        if (c == NULL) {
                pc_conn_close(pc);
                return;
        }
        c->sink.ops = &conn_ops;
        c->pc = pc;
        c->proto = PROTO_UNKNOWN;
        c->worker = (unsigned)w;
        c->next = open_conns[w];
        if (c->next)
                c->next->prev = c;
        open_conns[w] = c;
        kv_parser_init(&c->parser, kv_set.item_max);
        pc_conn_set_data(pc, c);
        /* Replies still on other workers when the client shuts its write
         * side (printf ... | nc) are sent before we close. */
        pc_conn_linger(pc);
        kv_wstats[w].curr_conns++;
        kv_wstats[w].total_conns++;
        if (kv_set.verbose > 1)
                pc_log(PC_LOG_INFO, "pc-kv: worker %d: new connection", w);
}

/* Parse and run every complete request in @p[0..@n); returns the bytes used. */
static size_t run_requests(struct conn *c, const char *p, size_t n)
{
        size_t off = 0, used;
        struct kv_req req;
        enum kv_parse_rc rc;

        while (!c->quitting && off < n) {
                struct buf *b;
                const char *err = NULL;
                uint16_t status = 0;
                bool line = c->parser.swallow == 0; /* not a value's bytes */

                if (c->proto == PROTO_UNKNOWN)
                        c->proto = (unsigned char)p[off] == KV_BIN_MAGIC_REQ ? KV_PROTO_BINARY
                                                                              : KV_PROTO_ASCII;
                if (c->proto == KV_PROTO_BINARY)
                        rc = kv_bin_parse(&c->parser, p + off, n - off, &req, &used, &status);
                else
                        rc = kv_parse(&c->parser, p + off, n - off, &req, &used, &err);
                if (rc == KV_PARSE_NEED)
                        break;
                if (line)
                        kv_sink_count(&c->sink);
                off += used;
                switch (rc) {
                case KV_PARSE_OK:
                        kv_dispatch(&c->sink, &req);
                        if (kv_req_closes(&req))
                                c->quitting = true;
                        break;
                case KV_PARSE_ERROR:
                case KV_PARSE_CLOSE:
                        req.proto = (uint8_t)c->proto;
                        if (c->proto == KV_PROTO_BINARY && req.too_large) {
                                /* Refused as too large: run, to drop the old value. */
                                kv_dispatch(&c->sink, &req);
                                break;
                        }
                        req.quiet = false;
                        b = kv_sink_slot(&c->sink);
                        /* A binary stream that lost its framing may close unanswered. */
                        if (b && (c->proto == KV_PROTO_ASCII ? err != NULL : status != KV_BIN_OK))
                                kv_reply_error(&req, err, status, b);
                        if (rc == KV_PARSE_CLOSE)
                                c->quitting = true;
                        break;
                default: /* KV_PARSE_SKIP */
                        break;
                }
        }
        return off;
}

static void on_data(struct pc_conn *pc, const void *data, size_t len, void *arg)
{
        struct conn *c = pc_conn_data(pc);
        const char *p;
        size_t n, off;

        (void)arg;
        if (c == NULL || c->quitting)
                return;
        if (len == 0) { /* the client is done sending: answer, then close */
                c->quitting = true;
                kv_sink_flush(&c->sink);
                return;
        }
        if (c->in.len) {
                buf_add(&c->in, data, len);
                p = c->in.p;
                n = c->in.len;
        } else {
                p = data;
                n = len;
        }
        off = run_requests(c, p, n);
        if (c->quitting) {
                c->in.len = 0;
        } else if (p == c->in.p) {
                memmove(c->in.p, c->in.p + off, n - off);
                c->in.len = n - off;
        } else if (off < n) {
                buf_add(&c->in, p + off, n - off);
        }
        if (c->in.cap > IN_SHRINK && c->in.len < IN_SHRINK / 4) {
                char *q = realloc(c->in.p, IN_SHRINK);

                if (q) {
                        c->in.p = q;
                        c->in.cap = IN_SHRINK;
                }
        }
        if (c->in.oom)
                c->sink.out.oom = true;
        kv_sink_batch_end(&c->sink);
}

static void on_close(struct pc_conn *pc, int err, void *arg)
{
        struct conn *c = pc_conn_data(pc);

        (void)err;
        (void)arg;
        if (c == NULL)
                return;
        kv_wstats[pc_worker_id()].curr_conns--;
        kv_sink_kill(&c->sink);
}

static const struct pc_tcp_callbacks tcp_cb = {
        .on_accept = on_accept,
        .on_data = on_data,
        .on_close = on_close,
        .on_writable = on_writable,
};

int kv_tcp_start(void)
{
        struct pc_tcp_listener *l;

        return pc_tcp_listen_kernel(kv_rt, kv_set.addr, (uint16_t)kv_set.tcp_port, &tcp_cb,
                                    NULL, &l);
}

#ifdef PC_HAVE_DPDK
int kv_tcp_start_dpdk(struct pc_port *p)
{
        struct pc_tcp_listener *l;

        return pc_tcp_listen_dpdk(p, (uint16_t)kv_set.tcp_port, &tcp_cb, NULL, &l);
}
#endif
