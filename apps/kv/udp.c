/* SPDX-License-Identifier: MIT */
/*
 * memcached's UDP service: each datagram starts with an 8-byte frame header
 * (request id, sequence number, datagram count, reserved) and carries
 * whole requests (ASCII, or binary when the payload starts with 0x80). The
 * replies to one datagram are gathered in request order, even when keys
 * live on other workers, and sent back in frames of the same request id:
 * each response numbered from 0 in datagrams of its own, as memcached
 * sends its responses. A datagram with a bad header is counted
 * (udp_dropped) and not answered, as memcached drops it.
 *
 * A response is a request's reply, but for an ASCII multi-key get, which
 * memcached (1.6.18, measured) answers with a response per key: a hit's
 * VALUE block, and END with the last key. A key that misses leaves its
 * response empty; memcached sends an empty response as a datagram of the
 * header alone (count 0) when it is the first of a batch of responses
 * sent together, and nothing otherwise. So "get x a b" with x missing is
 * [empty] [a] [b END] as a datagram's first request, and [a] [b END] after
 * a "version" in the same datagram. memcached sends a batch at the end of
 * the datagram, after each get, gets, gat or gats, after an mn, and at its
 * -R limits (kv_sink_count); a reply that says nothing (noreply, a quiet
 * miss) does not count.
 *
 * One handler for both backends through pc_net.h's endpoint: the
 * kernel's per-worker SO_REUSEPORT sockets, or our own stack on a DPDK
 * port.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv_pvt.h"
#include "pc_knet.h"
#include "pc_net.h"
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif
#include "proto_udp.h"

/* The replies to one datagram. */
struct udp_req {
        struct kv_sink sink; /* first: the sink callbacks cast back */
        struct buf reply;    /* every reply, in order */
        struct buf cuts;     /* where each response ends in reply (size_t each) */
        struct pc_udp_ep *ep;
        struct pc_udp_peer peer;
        uint16_t id;
        bool parsed;     /* every request in the datagram has been dispatched */
        bool batch_sent; /* a response is in memcached's batch being sent */
};

static bool udp_gather(struct kv_sink *k, const char *p, size_t len)
{
        struct udp_req *u = (struct udp_req *)k;

        if (p == NULL) { /* a reply could not be built: send nothing */
                u->reply.oom = true;
                return false;
        }
        buf_add(&u->reply, p, len);
        return true;
}

/* Where reply @i ends in u->reply. */
static size_t udp_cut(const struct udp_req *u, size_t i)
{
        size_t end;

        memcpy(&end, u->cuts.p + i * sizeof(end), sizeof(end));
        return end;
}

/* The bytes since the last cut are one response (maybe none). */
static void udp_cut_add(struct udp_req *u)
{
        buf_add(&u->cuts, &u->reply.len, sizeof(u->reply.len));
        u->batch_sent = true;
}

static size_t udp_uncut(const struct udp_req *u)
{
        size_t n = u->cuts.len / sizeof(size_t);

        return u->reply.len - (n ? udp_cut(u, n - 1) : 0);
}

static void udp_reply_end(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (udp_uncut(u))
                udp_cut_add(u);
}

/* A multi-key get's key other than the last: a response of its own. */
static void udp_key_end(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (udp_uncut(u) || !u->batch_sent)
                udp_cut_add(u);
}

/* memcached sends its responses so far: a new batch begins. */
static void udp_mark(struct kv_sink *k)
{
        ((struct udp_req *)k)->batch_sent = false;
}

static void udp_emit_one(struct udp_req *u, const char *reply, size_t len)
{
        char frame[KV_UDP_DGRAM_MAX];
        size_t n = kv_udp_frames(len);

        if (len == 0) {
                size_t fl = kv_udp_frame_empty(u->id, frame, sizeof(frame));

                if (fl == 0 || pc_udp_ep_send(u->ep, &u->peer, frame, fl))
                        kv_wstats[pc_worker_id()].send_failed++;
                return;
        }
        if (n == 0) { /* more than UDP frames can number */
                kv_wstats[pc_worker_id()].send_failed++;
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                size_t fl = kv_udp_frame(u->id, reply, len, i, frame, sizeof(frame));

                if (fl == 0 || pc_udp_ep_send(u->ep, &u->peer, frame, fl))
                        kv_wstats[pc_worker_id()].send_failed++;
        }
}

static void udp_emit(struct udp_req *u)
{
        size_t off = 0;

        if (u->reply.oom || u->cuts.oom)
                return;
        udp_reply_end(&u->sink); /* bytes after the last place, if any */
        for (size_t i = 0; i < u->cuts.len / sizeof(size_t); i++) {
                size_t end = udp_cut(u, i);

                udp_emit_one(u, u->reply.p + off, end - off);
                off = end;
        }
}

static void udp_drained(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (!u->parsed)
                return;
        udp_emit(u);
        kv_sink_kill(k);
}

static void udp_release(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        kv_sink_fini(k);
        buf_free(&u->reply);
        buf_free(&u->cuts);
        free(u);
}

static const struct kv_sink_ops udp_ops = {
        .send = udp_gather,
        .drained = udp_drained,
        .release = udp_release,
        .reply_end = udp_reply_end,
        .key_end = udp_key_end,
        .mark = udp_mark,
};

/* Does memcached send its responses so far once @cmd is answered? */
static bool udp_sends_batch(enum kv_cmd cmd)
{
        return cmd == KV_GET || cmd == KV_GETS || cmd == KV_GAT || cmd == KV_GATS ||
               cmd == KV_MN;
}

static void udp_datagram(struct pc_udp_ep *ep, const struct pc_udp_peer *from,
                         const void *data, size_t len, void *arg)
{
        struct kv_wstat *ws = &kv_wstats[pc_worker_id()];
        struct kv_parser parser;
        struct kv_udp_hdr h;
        struct udp_req *u;
        const char *p;
        size_t n, off = 0, used;
        bool binary;
        int rc;

        (void)arg;
        rc = kv_udp_parse(data, len, &h, &p, &n);
        if (rc == -EMSGSIZE) { /* a request over several datagrams */
                char frame[KV_UDP_DGRAM_MAX];
                size_t fl = kv_udp_frame(h.req_id, KV_UDP_ERR_MULTI,
                                         sizeof(KV_UDP_ERR_MULTI) - 1, 0, frame, sizeof(frame));

                ws->udp_dropped++;
                if (fl)
                        (void)pc_udp_ep_send(ep, from, frame, fl);
                return;
        }
        if (rc || n == 0) {
                ws->udp_dropped++;
                return;
        }
        u = calloc(1, sizeof(*u));
        if (u == NULL) {
                ws->udp_dropped++;
                return;
        }
        ws->udp_requests++;
        u->sink.ops = &udp_ops;
        u->ep = ep;
        u->peer = *from;
        u->id = h.req_id;
        kv_parser_init(&parser, kv_set.item_max);
        binary = (unsigned char)p[0] == KV_BIN_MAGIC_REQ;
        while (off < n) {
                struct kv_req req;
                const char *err = NULL;
                uint16_t status = 0;
                enum kv_parse_rc prc;
                struct buf *b;
                bool line = parser.swallow == 0; /* not a value's bytes */

                kv_sink_flush(&u->sink); /* the last request's reply ends there */
                if (binary)
                        prc = kv_bin_parse(&parser, p + off, n - off, &req, &used, &status);
                else
                        prc = kv_parse(&parser, p + off, n - off, &req, &used, &err);
                if (prc == KV_PARSE_NEED) /* cut short by the datagram's end: */
                        break;            /* memcached says nothing */
                if (line && kv_sink_count(&u->sink))
                        kv_sink_mark(&u->sink);
                off += used;
                if (prc == KV_PARSE_OK) {
                        if (req.cmd == KV_QUIT)
                                break;
                        kv_dispatch(&u->sink, &req);
                        if (kv_req_closes(&req))
                                break;
                        if (udp_sends_batch(req.cmd))
                                kv_sink_mark(&u->sink);
                } else if (prc == KV_PARSE_ERROR || prc == KV_PARSE_CLOSE) {
                        req.proto = binary ? KV_PROTO_BINARY : KV_PROTO_ASCII;
                        if (binary && req.too_large) {
                                kv_dispatch(&u->sink, &req);
                                continue;
                        }
                        req.quiet = false;
                        b = kv_sink_slot(&u->sink);
                        if (b && (binary ? status != KV_BIN_OK : err != NULL))
                                kv_reply_error(&req, err, status, b);
                        if (prc == KV_PARSE_CLOSE)
                                break;
                }
        }
        u->parsed = true;
        kv_sink_flush(&u->sink);
}

static struct pc_udp_ep kv_ep;

int kv_udp_start_kernel(void)
{
        return pc_udp_ep_bind_kernel(&kv_ep, kv_rt, kv_set.addr, (uint16_t)kv_set.udp_port,
                                     udp_datagram, NULL);
}

#ifdef PC_HAVE_DPDK
int kv_udp_start_dpdk(struct pc_port *p)
{
        return pc_udp_ep_bind_dpdk(&kv_ep, p, (uint16_t)kv_set.udp_port, udp_datagram, NULL);
}
#endif
