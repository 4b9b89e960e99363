/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 request parser: libhttp-parser does the grammar (request
 * line, headers, chunked framing, keep-alive rules, duplicate
 * Content-Length and Content-Length with Transfer-Encoding); this wrapper
 * keeps where each piece lies, applies our limits and turns every refusal
 * into the status that answers it. It reads nothing but the buffer it is
 * given, so tests and the fuzz target feed it bytes directly.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_pvt.h"

/* A body buffer larger than this is freed between requests. */
#define BODY_KEEP (64 * 1024)
/* A method longer than this is garbage (400), not an unknown method. */
#define METHOD_MAX 32

static struct pc__h1p *of(http_parser *p)
{
        return p->data;
}

static int fail(struct pc__h1p *h, int status)
{
        if (h->status == 0)
                h->status = status;
        return -1;
}

/* Extend @s with @len bytes at @at; they follow what it holds, since the
 * connection appends input and keeps a head in place. */
static void span_add(struct pc__h1p *h, struct pc__h1span *s, const char *at, size_t len,
                     bool fresh)
{
        if (fresh) {
                s->off = (uint32_t)(at - h->base);
                s->len = 0;
        }
        s->len += (uint32_t)len;
}

static int on_begin(http_parser *p)
{
        of(p)->in_msg = true;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
        struct pc__h1p *h = of(p);

        span_add(h, &h->url, at, len, h->url.len == 0);
        if (h->url.len > h->lim.max_uri)
                return fail(h, 414);
        return 0;
}

static int on_field(http_parser *p, const char *at, size_t len)
{
        struct pc__h1p *h = of(p);

        h->line_done = true;
        if (h->head_done)
                return 0; /* a trailer: not kept */
        if (h->last != 1) {
                /* Too many lines are refused once the head is whole (the
                 * head's size bounds the work meanwhile), so the answer
                 * does not depend on where the reads happened to end. */
                if (++h->lines > h->lim.max_headers) {
                        h->last = 1;
                        return 0;
                }
                h->nhdr++;
                h->hdr[h->nhdr - 1].value = (struct pc__h1span){0, 0};
        } else if (h->lines > h->lim.max_headers) {
                return 0;
        }
        span_add(h, &h->hdr[h->nhdr - 1].name, at, len, h->last != 1);
        h->last = 1;
        return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
        struct pc__h1p *h = of(p);

        if (h->head_done || h->lines > h->lim.max_headers) {
                h->last = 2;
                return 0;
        }
        span_add(h, &h->hdr[h->nhdr - 1].value, at, len, h->last != 2);
        h->last = 2;
        return 0;
}

static bool is_name(const struct pc__h1p *h, const struct pc__h1hdr *x, const char *name)
{
        size_t n = strlen(name);

        return x->name.len == n && strncasecmp(h->base + x->name.off, name, n) == 0;
}

static bool value_is(const struct pc__h1p *h, const struct pc__h1hdr *x, const char *v)
{
        const char *s = h->base + x->value.off;
        size_t n = x->value.len, m = strlen(v);

        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        return n == m && strncasecmp(s, v, m) == 0;
}

static unsigned method_bit(unsigned m)
{
        switch (m) {
        case HTTP_GET: return PC_HTTP_GET;
        case HTTP_HEAD: return PC_HTTP_HEAD;
        case HTTP_POST: return PC_HTTP_POST;
        case HTTP_PUT: return PC_HTTP_PUT;
        case HTTP_DELETE: return PC_HTTP_DELETE;
        case HTTP_OPTIONS: return PC_HTTP_OPTIONS;
        case HTTP_PATCH: return PC_HTTP_PATCH;
        default: return 0;
        }
}

/*
 * The head is whole: the checks the grammar leaves to a server. The
 * parser already refuses a duplicate Content-Length and Content-Length
 * with a chunked Transfer-Encoding; we refuse any Transfer-Encoding with
 * a Content-Length and differing lengths ourselves as well, so no version
 * of the library lets a smuggled request through.
 */
static int on_head(http_parser *p)
{
        struct pc__h1p *h = of(p);
        unsigned hosts = 0, lengths = 0, encodings = 0;
        const struct pc__h1hdr *cl = NULL;

        h->head_done = h->line_done = true;
        if (h->lines > h->lim.max_headers)
                return fail(h, 431);
        if (p->http_major != 1 || p->http_minor > 1)
                return fail(h, 505);
        h->version = p->http_minor ? 11 : 10;
        h->method = method_bit(p->method);
        if (h->method == 0)
                return fail(h, 501);
        for (unsigned i = 0; i < h->nhdr; i++) {
                const struct pc__h1hdr *x = &h->hdr[i];

                if (is_name(h, x, "host")) {
                        hosts++;
                } else if (is_name(h, x, "content-length")) {
                        if (cl && (cl->value.len != x->value.len ||
                                   memcmp(h->base + cl->value.off, h->base + x->value.off,
                                          x->value.len)))
                                return fail(h, 400);
                        cl = x;
                        lengths++;
                } else if (is_name(h, x, "transfer-encoding")) {
                        encodings++;
                } else if (is_name(h, x, "expect") && h->version == 11) {
                        if (!value_is(h, x, "100-continue"))
                                return fail(h, 417);
                        h->expect_continue = true;
                }
        }
        if ((h->version == 11 && hosts != 1) || hosts > 1 || (lengths && encodings))
                return fail(h, 400);
        if ((p->flags & F_CONTENTLENGTH) && p->content_length > h->lim.max_body)
                return fail(h, 413);
        if (lengths && p->content_length && p->content_length != ULLONG_MAX) {
                /* The whole body at once: its size is known and bounded. */
                if (p->content_length > h->body_cap) {
                        char *b = realloc(h->body, p->content_length);

                        if (b == NULL)
                                return fail(h, 503);
                        h->body = b;
                        h->body_cap = p->content_length;
                }
        }
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
        struct pc__h1p *h = of(p);

        if (len > h->lim.max_body - h->body_len)
                return fail(h, 413);
        if (h->body_len + len > h->body_cap) {
                size_t cap = h->body_cap ? h->body_cap : 1024;
                char *b;

                while (cap < h->body_len + len)
                        cap *= 2;
                if (cap > h->lim.max_body)
                        cap = h->lim.max_body;
                b = realloc(h->body, cap);
                if (b == NULL)
                        return fail(h, 503);
                h->body = b;
                h->body_cap = cap;
        }
        memcpy(h->body + h->body_len, at, len);
        h->body_len += len;
        return 0;
}

static int on_complete(http_parser *p)
{
        struct pc__h1p *h = of(p);

        h->msg_done = true;
        h->keep_alive = http_should_keep_alive(p) != 0;
        /* Stop here: the next request's bytes wait until this one is
         * answered, its head still in place. */
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings settings = {
        .on_message_begin = on_begin,
        .on_url = on_url,
        .on_header_field = on_field,
        .on_header_value = on_value,
        .on_headers_complete = on_head,
        .on_body = on_body,
        .on_message_complete = on_complete,
};

void pc__h1p_init(struct pc__h1p *h, const struct pc__h1lim *lim)
{
        memset(h, 0, sizeof(*h));
        h->lim = *lim;
        if (h->lim.max_headers > PC_HTTP_MAX_HEADERS)
                h->lim.max_headers = PC_HTTP_MAX_HEADERS;
        http_parser_init(&h->p, HTTP_REQUEST);
        h->p.data = h;
}

void pc__h1p_fini(struct pc__h1p *h)
{
        free(h->body);
        h->body = NULL;
        h->body_cap = h->body_len = 0;
}

void pc__h1p_next(struct pc__h1p *h, size_t start)
{
        bool dead = h->status != 0;

        if (h->body_cap > BODY_KEEP)
                pc__h1p_fini(h);
        h->start = start;
        h->head_bytes = 0;
        h->url = (struct pc__h1span){0, 0};
        h->nhdr = h->lines = 0;
        h->last = 0;
        h->in_msg = h->line_done = h->head_done = h->msg_done = false;
        h->scan_method = h->expect_continue = h->keep_alive = false;
        h->method = 0;
        h->version = 0;
        h->status = 0;
        h->body_len = 0;
        if (dead)
                http_parser_init(&h->p, HTTP_REQUEST);
        else
                http_parser_pause(&h->p, 0);
}

/* tchar of RFC 9110 5.6.2. */
static bool tchar(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/*
 * The parser knows a fixed list of methods and refuses any other at its
 * first unexpected letter. A token followed by a space is a method we do
 * not implement (501); anything else is garbage (400). Until the space or
 * a bad byte arrives, we cannot tell.
 */
static enum pc__h1ev scan_method(struct pc__h1p *h, const char *base, size_t to)
{
        size_t i = h->start, tok = 0;

        while (i < to && (base[i] == '\r' || base[i] == '\n'))
                i++;
        for (; i < to; i++) {
                unsigned char c = (unsigned char)base[i];

                if (c == ' ') {
                        h->status = tok ? 501 : 400;
                        return PC__H1_ERROR;
                }
                if (!tchar(c) || ++tok > METHOD_MAX) {
                        h->status = 400;
                        return PC__H1_ERROR;
                }
        }
        return PC__H1_MORE;
}

static int errno_status(enum http_errno e)
{
        switch (e) {
        case HPE_HEADER_OVERFLOW:
                return 431;
        default:
                return 400;
        }
}

enum pc__h1ev pc__h1p_feed(struct pc__h1p *h, const char *base, size_t from, size_t to,
                           size_t *used)
{
        size_t at = from;

        *used = to - from;
        if (h->status)
                return PC__H1_ERROR;
        if (h->msg_done) {
                *used = 0;
                return PC__H1_DONE;
        }
        if (h->scan_method)
                return scan_method(h, base, to);
        h->base = base;
        while (at < to) {
                size_t n = to - at, got;
                enum http_errno e;

                /* Feed a head no further than its limit, so it is refused
                 * there rather than wherever the reads happen to end. */
                if (!h->head_done && n > h->lim.max_head - h->head_bytes)
                        n = h->lim.max_head - h->head_bytes;
                /* Likewise the request target: the parser reports it at
                 * the end of each piece, so no piece goes past the byte
                 * that makes it too long. */
                if (!h->line_done && n > h->lim.max_uri + 1 - h->url.len)
                        n = h->lim.max_uri + 1 - h->url.len;
                got = http_parser_execute(&h->p, &settings, base + at, n);
                e = HTTP_PARSER_ERRNO(&h->p);
                if (!h->head_done)
                        h->head_bytes += got;
                at += got;
                if (e == HPE_PAUSED) {
                        *used = at - from;
                        return PC__H1_DONE;
                }
                if (e != HPE_OK) {
                        if (h->status)
                                return PC__H1_ERROR;
                        if (e == HPE_INVALID_METHOD) {
                                h->scan_method = true;
                                return scan_method(h, base, to);
                        }
                        h->status = errno_status(e);
                        return PC__H1_ERROR;
                }
                if (!h->head_done && h->head_bytes >= h->lim.max_head) {
                        h->status = h->line_done ? 431 : 414;
                        return PC__H1_ERROR;
                }
        }
        return PC__H1_MORE;
}
