/* SPDX-License-Identifier: MIT */
/*
 * An HTTP/1.1 connection, served by its own fiber: read into the input
 * buffer, parse, answer each whole request in turn, and write what the
 * answers gathered when the input runs dry. One request at a time, so
 * answers leave in order whatever the handlers do, and reading waits
 * while a write waits for room: a client that pipelines without reading
 * is no longer read.
 *
 * Timeouts: one pc_conn_set_timeout() per connection, half the shortest
 * of ours, makes a waiting read return every so often; we then
 * compare the clock with the phase we wait in: the next request
 * (idle_timeout, closed quietly), a head (head_timeout from its first
 * byte: a client sending a byte a second is still cut off), or a body
 * (body_timeout since its last byte).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_pvt.h"
#include "pc_module_pvt.h"
#include "percore.h"

/* Input room past the largest head: what one read may bring of a body or
 * of pipelined requests. */
#define IN_SLACK (16 * 1024)

enum phase { PH_NONE, PH_IDLE, PH_HEAD, PH_BODY };

/* How often a waiting read comes back to look at the clock: half the
 * shortest reading timeout, so each fires at most half its length late
 * (and a lingering close ends at most that long after its deadline). */
static uint64_t tick_of(const struct pc_http_opts *o)
{
        uint64_t t = o->idle_timeout_ns;

        if (o->head_timeout_ns < t)
                t = o->head_timeout_ns;
        if (o->body_timeout_ns < t)
                t = o->body_timeout_ns;
        t /= 2;
        return t < 1000000 ? 1000000 : t;
}

/* The bytes of the request being answered are no longer needed: move
 * what follows (pipelined requests) to the front. */
static void compact(struct pc__http_conn *hc)
{
        size_t rest = hc->in_len - hc->parsed;

        if (rest && hc->parsed)
                memmove(hc->in, hc->in + hc->parsed, rest);
        hc->in_len = rest;
        hc->parsed = 0;
        pc__h1p_next(&hc->h, 0);
}

/* In a body: everything the head needs lies before this offset, so the
 * body bytes after it, already copied out, may be overwritten. */
static size_t head_end(const struct pc__h1p *h)
{
        size_t end = (size_t)h->url.off + h->url.len;

        for (unsigned i = 0; i < h->nhdr; i++) {
                size_t e = (size_t)h->hdr[i].value.off + h->hdr[i].value.len;
                size_t n = (size_t)h->hdr[i].name.off + h->hdr[i].name.len;

                if (e > end)
                        end = e;
                if (n > end)
                        end = n;
        }
        return end;
}

static struct pc_http_slice sl(const struct pc__http_conn *hc, struct pc__h1span s)
{
        return (struct pc_http_slice){hc->in + s.off, s.len};
}

static void build_req(struct pc__http_conn *hc)
{
        struct pc__h1p *h = &hc->h;
        struct pc_http_req *q = &hc->req;
        const char *qm;

        q->conn = hc;
        q->method = h->method;
        q->version = h->version;
        q->target = sl(hc, h->url);
        q->path = q->target;
        q->query = (struct pc_http_slice){q->target.p + q->target.len, 0};
        qm = memchr(q->target.p, '?', q->target.len);
        if (qm) {
                q->path.len = (size_t)(qm - q->target.p);
                q->query = (struct pc_http_slice){qm + 1, q->target.len - q->path.len - 1};
        }
        q->body = (struct pc_http_slice){h->body ? h->body : "", h->body_len};
        for (unsigned i = 0; i < h->nhdr; i++) {
                hc->hdr[i][0] = sl(hc, h->hdr[i].name);
                hc->hdr[i][1] = sl(hc, h->hdr[i].value);
        }
        q->hdr = hc->hdr;
        q->nhdr = h->nhdr;
}

/* A simple answer of ours (404, 405, 500) to a request that is kept. */
static void answer_status(struct pc_http_resp *r, int status, unsigned allow)
{
        char text[64], methods[64] = "";

        if (allow) {
                for (unsigned m = 1; m <= PC_HTTP_PATCH; m <<= 1) {
                        if (!(allow & m))
                                continue;
                        if (methods[0])
                                strcat(methods, ", ");
                        strcat(methods, pc__http_method_name(m));
                }
                pc_http_resp_header(r, "Allow", methods);
        }
        pc_http_resp_status(r, status);
        pc_http_resp_header(r, "Content-Type", "text/plain");
        snprintf(text, sizeof(text), "%d %s\n", status, pc__http_reason(status));
        pc_http_resp_body(r, text, strlen(text));
        r->in_handler = true; /* we answer in the connection's fiber */
        pc_http_resp_send(r);
        r->in_handler = false;
}

/* One whole request: route it, run its handler, wait for a later answer. */
static void dispatch(struct pc__http_conn *hc)
{
        struct pc_http_resp *r = &hc->resp;
        pc_http_handler_fn fn = NULL;
        void *arg = NULL;
        unsigned allow = 0;
        int status, rc;

        build_req(hc);
        hc->close = !hc->h.keep_alive || pc_runtime_draining(hc->srv->rt);
        pc__http_resp_reset(r, hc, hc->req.method == PC_HTTP_HEAD);
        status = pc__http_route_find(hc->srv, &hc->req, &fn, &arg, &allow);
        if (status) {
                answer_status(r, status, allow);
                return;
        }
        r->in_handler = true;
        rc = fn(&hc->req, r, arg);
        r->in_handler = false;
        if (rc == PC_HTTP_LATER && !r->sent) {
                r->later = true;
                r->waiter = pc_fiber_self();
                while (!r->sent && !hc->failed)
                        if (pc__fiber_wait() < 0)
                                hc->failed = true; /* the run stops */
                r->waiter = NULL;
                if (r->sent && !hc->failed)
                        hc->proto->send(r);
        } else if (!r->sent) {
                if (r->streaming) {
                        r->in_handler = true; /* still the connection's fiber */
                        pc_http_resp_end(r);
                        r->in_handler = false;
                } else {
                        pc__http_resp_release(r);
                        pc__http_resp_reset(r, hc, hc->req.method == PC_HTTP_HEAD);
                        answer_status(r, 500, 0);
                }
        }
        pc__http_resp_release(r);
}

/* After an error answer: shut our side, then read and discard what the
 * client still sends for a while, so that our reset (a close with
 * unread input) does not destroy the answer before the client read it. */
static void linger(struct pc__http_conn *hc)
{
        const struct pc_http_opts *o = &hc->srv->o;
        uint64_t start = pc_now_ns();
        size_t dropped = 0;
        char buf[4096];

        if (pc__h1_flush(hc) || pc_conn_shutdown(hc->c))
                return;
        while (dropped < o->linger_bytes) {
                ssize_t n = pc_conn_read(hc->c, buf, sizeof(buf));

                if (n > 0) {
                        dropped += (size_t)n;
                        pc__http_inc(&hc->ws->bytes_in, (uint64_t)n);
                } else if (n != -ETIMEDOUT) {
                        return;
                }
                if (pc_now_ns() - start >= o->linger_ns)
                        return;
        }
}

static void refuse(struct pc__http_conn *hc, int status)
{
        if (status == 408)
                pc__http_inc(&hc->ws->timeouts, 1);
        else
                pc__http_inc(&hc->ws->parse_errors, 1);
        if (pc__h1_error(hc, status) == 0)
                linger(hc);
}

static void run(struct pc__http_conn *hc)
{
        const struct pc_http_opts *o = &hc->srv->o;
        struct pc__h1p *h = &hc->h;
        enum phase ph = PH_NONE;
        uint64_t since = 0;
        bool sent_continue = false;

        for (;;) {
                enum phase now_ph;
                uint64_t now, limit;
                ssize_t n;

                if (hc->parsed < hc->in_len) {
                        size_t used;
                        enum pc__h1ev ev = pc__h1p_feed(h, hc->in, hc->parsed, hc->in_len, &used);

                        hc->parsed += used;
                        if (ev == PC__H1_ERROR) {
                                refuse(hc, h->status);
                                return;
                        }
                        if (ev == PC__H1_DONE) {
                                dispatch(hc);
                                if (hc->failed || hc->close)
                                        break;
                                compact(hc);
                                sent_continue = false;
                                continue;
                        }
                        if (h->head_done)
                                hc->in_len = hc->parsed = head_end(h);
                }
                /* Everything is parsed and more is needed: what the
                 * answers gathered goes first, then a 100 Continue if the
                 * client waits for one. */
                if (h->head_done && h->expect_continue && !sent_continue) {
                        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

                        sent_continue = true;
                        if (pc__h1_out_add(hc, cont, sizeof(cont) - 1))
                                break;
                        pc__http_inc(&hc->ws->responses[0], 1);
                }
                if (hc->out_len && pc__h1_flush(hc))
                        break;
                now_ph = h->head_done ? PH_BODY : (h->head_bytes || h->in_msg) ? PH_HEAD : PH_IDLE;
                /* A drain ends a connection between requests; one that
                 * waits for its next request sees it at its next tick. */
                if (now_ph == PH_IDLE && pc_runtime_draining(hc->srv->rt))
                        break;
                now = pc_now_ns();
                if (now_ph != ph || now_ph == PH_BODY) {
                        /* A body's timeout counts from its last byte. */
                        if (now_ph != ph || since == 0)
                                since = now;
                        ph = now_ph;
                }
                limit = ph == PH_IDLE ? o->idle_timeout_ns
                        : ph == PH_HEAD ? o->head_timeout_ns : o->body_timeout_ns;
                n = pc_conn_read(hc->c, hc->in + hc->in_len, hc->in_cap - hc->in_len);
                if (n > 0) {
                        hc->in_len += (size_t)n;
                        pc__http_inc(&hc->ws->bytes_in, (uint64_t)n);
                        if (ph == PH_BODY)
                                since = 0;
                        else if (ph == PH_HEAD && pc_now_ns() - since >= limit)
                                goto timeout;
                        continue;
                }
                if (n != -ETIMEDOUT)
                        break; /* the peer's end, an error, the run stopping */
                if (ph == PH_IDLE && pc_runtime_draining(hc->srv->rt))
                        break;
                if (pc_now_ns() - since < limit)
                        continue;
timeout:
                if (ph == PH_IDLE) {
                        pc__http_inc(&hc->ws->timeouts, 1);
                        break;
                }
                refuse(hc, 408);
                return;
        }
        if (hc->out_len)
                pc__h1_flush(hc);
}

void pc_http_serve(struct pc_conn *c, void *arg)
{
        struct pc_http_server *s = arg;
        struct pc__http_conn *hc;
        struct pc__http_conn_list *list;
        unsigned w = pc_conn_worker(c);

        if (s == NULL || (hc = calloc(1, sizeof(*hc))) == NULL)
                return;
        hc->proto = &pc__h1_proto;
        hc->srv = s;
        hc->c = c;
        hc->ws = &s->ws[w];
        hc->in_cap = s->o.max_head + IN_SLACK;
        hc->in = malloc(hc->in_cap);
        if (hc->in == NULL) {
                free(hc);
                return;
        }
        pc__h1p_init(&hc->h, &s->lim);
        list = &s->conns[w];
        hc->next = list->head;
        if (list->head)
                list->head->prev = hc;
        list->head = hc;
        pc__http_inc(&hc->ws->conns_open, 1);
        pc__http_inc(&hc->ws->conns_total, 1);
        pc_conn_set_timeout(c, tick_of(&s->o));
        pc_conn_set_write_timeout(c, s->o.write_timeout_ns);
        run(hc);
        if (hc->prev)
                hc->prev->next = hc->next;
        else
                list->head = hc->next;
        if (hc->next)
                hc->next->prev = hc->prev;
        __atomic_store_n(&hc->ws->conns_open, hc->ws->conns_open - 1, __ATOMIC_RELAXED);
        pc__http_resp_fini(&hc->resp);
        pc__h1p_fini(&hc->h);
        free(hc->out);
        free(hc->in);
        free(hc);
}
