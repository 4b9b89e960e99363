/* SPDX-License-Identifier: MIT */
/*
 * TCP connections, on either backend (pc_net.h's TCP API: only the
 * listening differs). The first byte a client sends
 * picks the protocol for the whole connection, as memcached does: 0x80 is
 * the binary protocol's request magic, anything else is ASCII.
 *
 * A connection is a bounded sink (kv_pvt.h, kv_sink_full()): while the
 * replies its client has not read fill it, requests wait as bytes in the
 * input buffer and a multi-key get keeps its remaining keys (a copy of
 * them), and both go on as the client reads (on_writable) or other
 * workers answer (conn_room). While they wait, the backend's output
 * stays full and it stops reading the socket, so the input waits in the
 * kernel too; and while they wait on other workers, with IN_HIGH bytes of
 * requests kept here, reading pauses (pc_conn_pause_read) until the
 * connection runs again.
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
/* Requests kept while stalled before reading pauses. */
#define IN_HIGH 65536
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
        struct buf in;      /* bytes of requests not run yet (incomplete, or waiting) */
        size_t in_off;      /* in's bytes before this are used */
        struct buf backlog; /* replies the backend refused (output full), in order */
        struct kv_req get;  /* a multi-key get stopped part way (get_open) */
        struct buf get_keys; /* its keys, copied out of the input */
        size_t get_pos;     /* where its next key starts in get_keys */
        int proto;     /* enum kv_proto once the first byte came */
        bool quitting; /* parse no more; close once every reply is out */
        bool closing;  /* we closed it: run nothing more */
        bool get_open; /* get holds keys still to run */
        bool stalled;  /* stopped while the sink was full: something waits */
        bool busy;     /* in pump(): a call from inside it returns at once */
        bool eof;      /* the client shut its write side */
        bool rd_paused; /* pc_conn_pause_read() holds the input */
};

static void conn_close(struct conn *c)
{
        c->closing = true;
        pc_conn_close(c->pc);
}

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
                        conn_close(c);
                        return false;
                }
                p += n;
                len -= n;
        }
        buf_add(&c->backlog, p, len);
        if (c->backlog.oom) {
                kv_wstats[pc_worker_id()].send_failed++;
                conn_close(c);
                return false;
        }
        return true;
}

static bool conn_send(struct kv_sink *k, const char *p, size_t len)
{
        struct conn *c = (struct conn *)k;

        if (p == NULL) { /* a reply could not be built */
                conn_close(c);
                return false;
        }
        if (c->backlog.len == 0)
                return send_pieces(c, p, len);
        buf_add(&c->backlog, p, len); /* behind what already waits: keep the order */
        if (!c->backlog.oom)
                return true;
        conn_close(c);
        return false;
}

static bool backlog_empty(const struct conn *c)
{
        return c->backlog.len == 0;
}

static void conn_drained(struct kv_sink *k)
{
        struct conn *c = (struct conn *)k;

        if (c->quitting && backlog_empty(c) && !c->closing)
                conn_close(c);
}

static size_t conn_backlog(struct kv_sink *k)
{
        return ((struct conn *)k)->backlog.len;
}

static void pump(struct conn *c, const char *data, size_t len);

/* Another worker answered: go on if that made room. */
static void conn_room(struct kv_sink *k)
{
        struct conn *c = (struct conn *)k;

        if (c->stalled && !c->closing && !kv_sink_full(k))
                pump(c, NULL, 0);
}

/* The backend took some output: move the backlog along, then what waits. */
static void on_writable(struct pc_conn *pc, void *arg)
{
        struct conn *c = pc_conn_data(pc);
        struct buf rest = {0};
        bool sent;

        (void)arg;
        if (c == NULL || c->closing)
                return;
        if (!backlog_empty(c)) {
                rest = c->backlog;
                c->backlog = (struct buf){0};
                sent = send_pieces(c, rest.p, rest.len);
                buf_free(&rest);
                if (!sent)
                        return;
        }
        if (c->stalled)
                pump(c, NULL, 0);
        else if (backlog_empty(c) && c->sink.head == NULL)
                conn_drained(&c->sink); /* all out, nothing waits on other workers */
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
        buf_free(&c->get_keys);
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
        .backlog = conn_backlog,
        .room = conn_room,
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
        /* -o idle_timeout: no request byte for that long while no reply
         * waits, or a reply the client takes nothing of for that long,
         * ends the connection (on_close, -ETIMEDOUT). */
        if (kv_set.idle_timeout &&
            pc_conn_set_timeout(pc, (uint64_t)kv_set.idle_timeout * 1000000000u))
                conn_close(c);
}

/* A multi-key get that stopped part way (@pos: where it goes on) keeps
 * its keys: the input they are in moves on. */
static void get_keep(struct conn *c, const struct kv_req *r, size_t pos)
{
        c->get_keys.len = 0;
        buf_add(&c->get_keys, r->keys, r->keys_len);
        if (c->get_keys.oom) {
                c->sink.out.oom = true; /* the flush closes the connection */
                return;
        }
        c->get = *r;
        c->get.keys = c->get_keys.p;
        c->get.key = r->key >= r->keys && r->key < r->keys + r->keys_len
                             ? c->get_keys.p + (r->key - r->keys)
                             : NULL;
        c->get_pos = pos;
        c->get_open = true;
        c->stalled = true;
}

/* Parse and run the complete requests in @p[0..@n) while the sink has
 * room (else c->stalled); returns the bytes used. */
static size_t run_requests(struct conn *c, const char *p, size_t n)
{
        size_t off = 0, used, pos;
        struct kv_req req;
        enum kv_parse_rc rc;

        while (!c->quitting && !c->closing && !c->get_open && off < n) {
                struct buf *b;
                const char *err = NULL;
                uint16_t status = 0;
                bool line = c->parser.swallow == 0; /* not a value's bytes */

                if (kv_sink_full(&c->sink)) {
                        c->stalled = true;
                        break;
                }
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
                        pos = 0;
                        if (!kv_dispatch_from(&c->sink, &req, &pos))
                                get_keep(c, &req, pos);
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

/* What run_requests() left of @p[0..@n) (it used @off) waits in c->in.
 * Used bytes of c->in move out once they are half of it: requests that
 * wait for room are taken a few at a time, and moving the rest each time
 * would cost the square of what waits. */
static void in_keep(struct conn *c, const char *p, size_t n, size_t off)
{
        if (c->quitting) {
                c->in.len = c->in_off = 0;
        } else if (c->in.p && p == c->in.p + c->in_off) {
                c->in_off += off;
                if (c->in_off == c->in.len) {
                        c->in.len = c->in_off = 0;
                } else if (c->in_off >= c->in.len / 2) {
                        memmove(c->in.p, c->in.p + c->in_off, c->in.len - c->in_off);
                        c->in.len -= c->in_off;
                        c->in_off = 0;
                }
        } else if (off < n) {
                buf_add(&c->in, p + off, n - off);
        }
        if (c->in_off == 0 && c->in.cap > IN_SHRINK && c->in.len < IN_SHRINK / 4) {
                char *q = realloc(c->in.p, IN_SHRINK);

                if (q) {
                        c->in.p = q;
                        c->in.cap = IN_SHRINK;
                }
        }
        if (c->in.oom)
                c->sink.out.oom = true;
}

/* The keys left of the get that stopped, while the sink has room. */
static void get_resume(struct conn *c)
{
        while (!kv_sink_full(&c->sink)) {
                if (kv_dispatch_from(&c->sink, &c->get, &c->get_pos)) {
                        c->get_open = false;
                        if (c->get_keys.cap > IN_SHRINK)
                                buf_free(&c->get_keys);
                        return;
                }
        }
        c->stalled = true;
}

/*
 * Run what waits (a get's remaining keys, the requests in c->in, then
 * @data's: straight from the receive buffer when nothing else waits)
 * while the sink has room, and send the replies. Once the client is done
 * sending and nothing waits but an incomplete request, close after the
 * last reply.
 */
static void pump(struct conn *c, const char *data, size_t len)
{
        size_t off;

        if (c->busy) { /* an inner call: the outer one goes on */
                buf_add(&c->in, data, len);
                return;
        }
        c->busy = true;
        do {
                c->stalled = false;
                if (c->get_open)
                        get_resume(c);
                if (c->stalled || c->quitting || c->closing) {
                        if (!c->quitting)
                                buf_add(&c->in, data, len);
                } else if (c->in.len == 0 && len) {
                        off = run_requests(c, data, len);
                        in_keep(c, data, len, off);
                } else if (c->in.len + len > c->in_off) {
                        buf_add(&c->in, data, len);
                        off = run_requests(c, c->in.p + c->in_off, c->in.len - c->in_off);
                        in_keep(c, c->in.p + c->in_off, c->in.len - c->in_off, off);
                }
                len = 0;
                if (c->in.oom)
                        c->sink.out.oom = true;
                if (c->closing || c->sink.dead)
                        break;
                /* A stall is ours, not the client's: the requests read at
                 * once stay one batch (kv_sink_batch_end()) across it. */
                if (c->stalled)
                        kv_sink_flush(&c->sink);
                else
                        kv_sink_batch_end(&c->sink);
        } while (c->stalled && !c->closing && !c->sink.dead && !kv_sink_full(&c->sink));
        c->busy = false;
        /* A stalled connection keeps little input; a running one reads
         * (it may need more bytes to complete a request). */
        if (!c->closing && !c->sink.dead &&
            (c->stalled && c->in.len - c->in_off > IN_HIGH) != c->rd_paused &&
            pc_conn_pause_read(c->pc, !c->rd_paused) == 0)
                c->rd_paused = !c->rd_paused;
        if (c->eof && !c->stalled && !c->get_open && !c->quitting && !c->closing &&
            !c->sink.dead) {
                /* The client is done sending: answer, then close. */
                c->quitting = true;
                c->in.len = c->in_off = 0;
                kv_sink_flush(&c->sink);
        }
}

static void on_data(struct pc_conn *pc, const void *data, size_t len, void *arg)
{
        struct conn *c = pc_conn_data(pc);

        (void)arg;
        if (c == NULL || c->quitting || c->closing)
                return;
        if (len == 0)
                c->eof = true;
        pump(c, data, len);
}

static void on_close(struct pc_conn *pc, int err, void *arg)
{
        struct conn *c = pc_conn_data(pc);

        (void)arg;
        if (c == NULL)
                return;
        kv_wstats[pc_worker_id()].curr_conns--;
        /* -ETIMEDOUT is also TCP's own give-up (DPDK); counted only with
         * idle timeouts on, where the idle timer comes first. */
        if (err == -ETIMEDOUT && kv_set.idle_timeout)
                kv_wstats[pc_worker_id()].idle_kicks++;
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
