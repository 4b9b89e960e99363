/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for net/http's request path without a network: the parser
 * wrapper (libhttp-parser, our limits, the chunked decoder) fed a
 * connection's byte stream. The first byte says how the rest is split into
 * reads (1..255 bytes each, 0 = whole); the stream is parsed request after
 * request, as the connection does. Whatever the split, the same requests
 * come out with the same bodies, or the same refusal with the same status;
 * every piece of a head lies inside what was fed; a refusal is one of the
 * statuses the layer promises; a head never passes its limit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_pvt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQS 64

static const struct pc__h1lim lim = {
        .max_head = 1024, .max_uri = 256, .max_body = 2048, .max_headers = 16,
};

struct outcome {
        unsigned n;              /* requests parsed whole */
        int status;              /* the refusal that ended it, 0 none */
        uint64_t sum[MAX_REQS];  /* a digest of each request */
};

static uint64_t mix(uint64_t h, const void *p, size_t len)
{
        const uint8_t *b = p;

        for (size_t i = 0; i < len; i++)
                h = (h ^ b[i]) * 0x100000001b3ull;
        return h;
}

static bool known(int status)
{
        static const int ok[] = {400, 413, 414, 417, 431, 501, 503, 505};

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                if (status == ok[i])
                        return true;
        return false;
}

static void check_head(const struct pc__h1p *h, size_t fed)
{
        if ((size_t)h->url.off + h->url.len > fed || h->nhdr > lim.max_headers ||
            h->head_bytes > lim.max_head || h->body_len > lim.max_body)
                abort();
        for (unsigned i = 0; i < h->nhdr; i++)
                if ((size_t)h->hdr[i].name.off + h->hdr[i].name.len > fed ||
                    (size_t)h->hdr[i].value.off + h->hdr[i].value.len > fed)
                        abort();
}

static uint64_t digest(const struct pc__h1p *h, const char *buf)
{
        uint64_t d = 0xcbf29ce484222325ull;

        d = mix(d, &h->method, sizeof(h->method));
        d = mix(d, &h->version, sizeof(h->version));
        d = mix(d, &h->keep_alive, sizeof(h->keep_alive));
        d = mix(d, buf + h->url.off, h->url.len);
        for (unsigned i = 0; i < h->nhdr; i++) {
                d = mix(d, buf + h->hdr[i].name.off, h->hdr[i].name.len);
                d = mix(d, buf + h->hdr[i].value.off, h->hdr[i].value.len);
        }
        return mix(d, h->body ? h->body : "", h->body_len);
}

/* Parse @buf as a connection would, reads of @step bytes (0: all). */
static void run(const char *buf, size_t len, size_t step, struct outcome *o)
{
        struct pc__h1p h;
        size_t parsed = 0, have = 0;

        memset(o, 0, sizeof(*o));
        pc__h1p_init(&h, &lim);
        while (o->n < MAX_REQS) {
                size_t used;
                enum pc__h1ev ev;

                if (parsed == have) {
                        if (have == len)
                                break;
                        have = step && len - have > step ? have + step : len;
                }
                ev = pc__h1p_feed(&h, buf, parsed, have, &used);
                if (used > have - parsed)
                        abort();
                parsed += used;
                check_head(&h, have);
                if (ev == PC__H1_ERROR) {
                        if (!known(h.status))
                                abort();
                        o->status = h.status;
                        break;
                }
                if (ev == PC__H1_DONE) {
                        if (!h.msg_done || !h.head_done)
                                abort();
                        o->sum[o->n++] = digest(&h, buf);
                        if (!h.keep_alive)
                                break;
                        pc__h1p_next(&h, parsed);
                }
        }
        pc__h1p_fini(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct outcome whole, split;

        if (size < 1)
                return 0;
        run((const char *)data + 1, size - 1, 0, &whole);
        run((const char *)data + 1, size - 1, data[0], &split);
        if (whole.n != split.n || whole.status != split.status ||
            memcmp(whole.sum, split.sum, sizeof(whole.sum[0]) * whole.n))
                abort();
        return 0;
}
