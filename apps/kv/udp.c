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
 * Each response goes out as soon as it and those before it are complete,
 * so a datagram holds at most one response's bytes beside its sink's
 * places; its sink is bounded like a connection's (kv_sink_full()): while
 * full, the datagram's requests wait (a copy of the datagram) until a call
 * returns. At most UDP_INFLIGHT datagrams per worker wait so; more are
 * dropped and counted (udp_dropped), as memcached drops what it cannot
 * take. A get naming thousands of large values thus costs what it costs
 * on TCP, not their sum.
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

/* Datagrams per worker whose requests wait on other workers' replies. */
#define UDP_INFLIGHT 64

static struct {
        _Alignas(64) unsigned n;
} inflight[PC_MAX_WORKERS];

/* One datagram's requests and the replies not yet sent. */
struct udp_req {
        struct kv_sink sink; /* first: the sink callbacks cast back */
        struct buf reply;    /* the response being gathered */
        struct pc_udp_ep *ep;
        struct pc_udp_peer peer;
        struct kv_parser parser;
        struct kv_req get; /* a get stopped part way (get_open) */
        size_t get_pos;
        size_t off, n; /* requests parsed from dgram[0..off) of n */
        uint16_t id;
        bool binary;
        bool get_open;
        bool busy;       /* udp_run() is on the stack */
        bool counted;    /* in inflight[] */
        bool failed;     /* a reply could not be built: send no more */
        bool parsed;     /* every request in the datagram has been dispatched */
        bool batch_sent; /* a response is in memcached's batch being sent */
        char dgram[];    /* the datagram's payload */
};

static void udp_emit_one(struct udp_req *u, const char *reply, size_t len);

static bool udp_gather(struct kv_sink *k, const char *p, size_t len)
{
        struct udp_req *u = (struct udp_req *)k;

        if (p == NULL || u->failed) { /* a reply could not be built */
                u->failed = true;
                return false;
        }
        buf_add(&u->reply, p, len);
        return true;
}

/* The bytes gathered since the last response are one (maybe empty): out. */
static void udp_cut_add(struct udp_req *u)
{
        if (u->reply.oom)
                u->failed = true;
        if (u->failed)
                return;
        udp_emit_one(u, u->reply.p, u->reply.len);
        u->reply.len = 0;
        if (u->reply.cap > (64u << 10))
                buf_free(&u->reply);
        u->batch_sent = true;
}

static void udp_reply_end(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (u->reply.len)
                udp_cut_add(u);
}

/* A multi-key get's key other than the last: a response of its own. */
static void udp_key_end(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (u->reply.len || !u->batch_sent)
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

static void udp_drained(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (!u->parsed || u->busy)
                return;
        udp_reply_end(k); /* bytes after the last place, if any */
        kv_sink_kill(k);
}

static void udp_release(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (u->counted)
                inflight[pc_worker_id()].n--;
        kv_sink_fini(k);
        buf_free(&u->reply);
        free(u);
}


/* Does memcached send its responses so far once @cmd is answered? */
static bool udp_sends_batch(enum kv_cmd cmd)
{
        return cmd == KV_GET || cmd == KV_GETS || cmd == KV_GAT || cmd == KV_GATS ||
               cmd == KV_MN;
}

/* A request is answered: does the datagram's work stop here? */
static bool udp_req_done(struct udp_req *u, const struct kv_req *req)
{
        if (kv_req_closes(req))
                return true;
        if (udp_sends_batch(req->cmd))
                kv_sink_mark(&u->sink);
        return false;
}

/* Run the datagram's requests from where they stopped while the sink has
 * room; once all are dispatched, the last replies go as they complete. */
static void udp_run(struct udp_req *u)
{
        struct kv_sink *k = &u->sink;
        bool stop = false;

        u->busy = true;
        for (;;) {
                const char *p = u->dgram;
                struct kv_req req;
                const char *err = NULL;
                uint16_t status = 0;
                enum kv_parse_rc prc;
                struct buf *b;
                size_t used;
                bool line = u->parser.swallow == 0; /* not a value's bytes */

                /* A get's keys left from a round that filled the sink go
                 * first, as the sent replies make room. */
                while (u->get_open && !kv_sink_full(k)) {
                        if (kv_dispatch_from(k, &u->get, &u->get_pos)) {
                                u->get_open = false;
                                stop = udp_req_done(u, &u->get);
                        }
                        kv_sink_flush(k);
                }
                if (stop || u->get_open || u->off >= u->n || u->failed || kv_sink_full(k))
                        break;
                if (u->binary)
                        prc = kv_bin_parse(&u->parser, p + u->off, u->n - u->off, &req, &used,
                                           &status);
                else
                        prc = kv_parse(&u->parser, p + u->off, u->n - u->off, &req, &used, &err);
                if (prc == KV_PARSE_NEED) { /* cut short by the datagram's end: */
                        stop = true;        /* memcached says nothing */
                        break;
                }
                if (line && kv_sink_count(k))
                        kv_sink_mark(k);
                u->off += used;
                if (prc == KV_PARSE_OK) {
                        if (req.cmd == KV_QUIT) {
                                stop = true;
                                break;
                        }
                        u->get_pos = 0;
                        if (kv_dispatch_from(k, &req, &u->get_pos))
                                stop = udp_req_done(u, &req);
                        else {
                                u->get = req; /* its keys point into u->dgram */
                                u->get_open = true;
                        }
                } else if (prc == KV_PARSE_ERROR || prc == KV_PARSE_CLOSE) {
                        req.proto = u->binary ? KV_PROTO_BINARY : KV_PROTO_ASCII;
                        if (u->binary && req.too_large) {
                                kv_dispatch(k, &req);
                        } else {
                                req.quiet = false;
                                b = kv_sink_slot(k);
                                if (b && (u->binary ? status != KV_BIN_OK : err != NULL))
                                        kv_reply_error(&req, err, status, b);
                                stop = prc == KV_PARSE_CLOSE;
                        }
                }
                kv_sink_flush(k); /* this request's reply ends there */
        }
        u->busy = false;
        if (stop || u->failed || (!u->get_open && u->off >= u->n)) {
                u->parsed = true;
                if (u->failed && !k->dead) {
                        kv_sink_kill(k);
                        return;
                }
                kv_sink_flush(k);
                return;
        }
        if (!u->counted) { /* waits for room: one of this worker's few */
                u->counted = true;
                inflight[pc_worker_id()].n++;
        }
}

static size_t udp_backlog(struct kv_sink *k)
{
        return ((struct udp_req *)k)->reply.len;
}

/* A call on another worker returned: go on if that made room. */
static void udp_room(struct kv_sink *k)
{
        struct udp_req *u = (struct udp_req *)k;

        if (!u->busy && !u->parsed && !kv_sink_full(k))
                udp_run(u);
}

static const struct kv_sink_ops udp_ops = {
        .send = udp_gather,
        .drained = udp_drained,
        .release = udp_release,
        .reply_end = udp_reply_end,
        .key_end = udp_key_end,
        .mark = udp_mark,
        .backlog = udp_backlog,
        .room = udp_room,
};

static void udp_datagram(struct pc_udp_ep *ep, const struct pc_udp_peer *from,
                         const void *data, size_t len, void *arg)
{
        struct kv_wstat *ws = &kv_wstats[pc_worker_id()];
        struct kv_udp_hdr h;
        struct udp_req *u;
        const char *p;
        size_t n;
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
        if (rc || n == 0 || inflight[pc_worker_id()].n >= UDP_INFLIGHT) {
                ws->udp_dropped++;
                return;
        }
        u = calloc(1, sizeof(*u) + n);
        if (u == NULL) {
                ws->udp_dropped++;
                return;
        }
        ws->udp_requests++;
        u->sink.ops = &udp_ops;
        u->ep = ep;
        u->peer = *from;
        u->id = h.req_id;
        u->n = n;
        memcpy(u->dgram, p, n);
        kv_parser_init(&u->parser, kv_set.item_max);
        u->binary = (unsigned char)p[0] == KV_BIN_MAGIC_REQ;
        udp_run(u);
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
