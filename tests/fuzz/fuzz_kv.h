/* SPDX-License-Identifier: MIT */
/*
 * The connection loop shared by fuzz_kvascii and fuzz_kvbin: bytes arrive
 * @step at a time into a buffer, the parser is called until it asks for
 * more, and what it consumed is dropped, as pc-kv's server does. The bytes
 * past those received are poisoned under ASan, so a parser reading beyond
 * the length it was given is a report even mid-buffer. Each run returns a
 * hash of the requests and errors seen, so a target can check that the
 * way the stream was split changes nothing.
 */
#ifndef FUZZ_KV_H
#define FUZZ_KV_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_ascii.h"

#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#endif

#define CHECK(c)                                                                                \
        do {                                                                                    \
                if (!(c)) {                                                                     \
                        fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                 \
                        abort();                                                                \
                }                                                                               \
        } while (0)

/* One parser call: the rc, and in *@what the error reply (ASCII, as a
 * pointer) or status (binary) for the event hash. */
typedef enum kv_parse_rc (*fuzz_kv_parse_fn)(struct kv_parser *p, const char *buf, size_t len,
                                             struct kv_req *req, size_t *used, uint64_t *what);
/* The target's invariants for one call's result. */
typedef void (*fuzz_kv_check_fn)(const struct kv_parser *p, enum kv_parse_rc rc,
                                 const struct kv_req *req, const char *buf, size_t len,
                                 size_t used, uint64_t what);

/* Does [@s, @s + @n) lie inside [@buf, @buf + @len)? */
static inline int fuzz_inside(const char *s, size_t n, const char *buf, size_t len)
{
        return s >= buf && s <= buf + len && n <= (size_t)(buf + len - s);
}

static inline uint64_t fuzz_mix(uint64_t h, const void *v, size_t n)
{
        const unsigned char *b = v;

        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * 0x100000001b3ull;
        return h;
}

static inline uint64_t fuzz_kv_event(uint64_t h, enum kv_parse_rc rc, const struct kv_req *r,
                                     uint64_t what)
{
        /* The meta fields mean something (and are set) for meta requests only. */
        bool meta = r->proto == KV_PROTO_META;
        uint64_t v[] = {rc, what, r->cmd, r->keylen, r->dlen, r->nkeys, r->too_large,
                        meta ? r->nmflags : 0, meta ? r->mstop : 0,
                        meta ? (uintptr_t)r->err : 0};

        if (rc == KV_PARSE_OK || (rc == KV_PARSE_ERROR && r->too_large)) {
                h = fuzz_mix(h, v, sizeof(v));
                if (r->key)
                        h = fuzz_mix(h, r->key, r->keylen);
                if (r->data)
                        h = fuzz_mix(h, r->data, r->dlen);
                if (meta)
                        h = fuzz_mix(h, r->mflags, r->nmflags);
                if (meta && r->mopaque)
                        h = fuzz_mix(h, r->mopaque, r->mopaque_len);
        } else {
                h = fuzz_mix(h, v, 2 * sizeof(v[0]));
        }
        return h;
}

/* Feed @in[0..@n) to @parse @step bytes at a time (0: all at once). */
static inline uint64_t fuzz_kv_run(const uint8_t *in, size_t n, size_t step, size_t item_max,
                                   fuzz_kv_parse_fn parse, fuzz_kv_check_fn check)
{
        char *held = malloc(n ? n : 1);
        size_t have = 0, fed = 0;
        struct kv_parser p;
        uint64_t h = 0xcbf29ce484222325ull;

        CHECK(held != NULL);
        kv_parser_init(&p, item_max);
        for (;;) {
                struct kv_req r;
                size_t used = 0;
                uint64_t what = 0;
                enum kv_parse_rc rc;

                memset(&r, 0, sizeof(r));
                ASAN_POISON_MEMORY_REGION(held + have, (n ? n : 1) - have);
                rc = parse(&p, held, have, &r, &used, &what);
                ASAN_UNPOISON_MEMORY_REGION(held, n ? n : 1);
                CHECK(used <= have);
                check(&p, rc, &r, held, have, used, what);
                if (rc == KV_PARSE_NEED) {
                        size_t k = step && n - fed > step ? step : n - fed;

                        CHECK(used == 0);
                        if (k == 0)
                                break;
                        memcpy(held + have, in + fed, k);
                        have += k;
                        fed += k;
                        continue;
                }
                if (rc != KV_PARSE_SKIP)
                        h = fuzz_kv_event(h, rc, &r, what);
                if (rc == KV_PARSE_CLOSE)
                        break;
                CHECK(used > 0); /* anything but NEED and CLOSE makes progress */
                memmove(held, held + used, have - used);
                have -= used;
        }
        free(held);
        return h;
}

/* Run @in whole and split as its last byte says; both must agree. */
static inline void fuzz_kv_stream(const uint8_t *in, size_t n, size_t item_max,
                                  fuzz_kv_parse_fn parse, fuzz_kv_check_fn check)
{
        uint64_t whole = fuzz_kv_run(in, n, 0, item_max, parse, check);
        size_t step = n ? 1 + in[n - 1] % 64 : 1;

        CHECK(fuzz_kv_run(in, n, step, item_max, parse, check) == whole);
}

#endif
