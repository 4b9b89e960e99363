/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for pc-kv's ASCII parser: one input is the byte stream of a
 * connection, parsed as the server does (fuzz_kv.h) with a small item_max
 * so the too-large path is reached. Every result must describe itself
 * inside the bytes parsed: keys, values, the get family's key list; the
 * parser only asks for more while a request could still be incomplete; and
 * the stream split differently must parse to the same requests.
 */
#include "fuzz_kv.h"

#define ITEM_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum kv_parse_rc parse(struct kv_parser *p, const char *buf, size_t len,
                              struct kv_req *req, size_t *used, uint64_t *what)
{
        const char *err = NULL;
        enum kv_parse_rc rc = kv_parse(p, buf, len, req, used, &err);

        *what = (uintptr_t)err;
        return rc;
}

static int key_ok(const char *k, size_t n)
{
        if (n == 0 || n > KV_KEY_MAX)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (k[i] == ' ' || k[i] == '\0' || k[i] == '\n')
                        return 0; /* memcached 1.6 takes any other byte */
        return 1;
}

static void check(const struct kv_parser *p, enum kv_parse_rc rc, const struct kv_req *r,
                  const char *buf, size_t len, size_t used, uint64_t what)
{
        const char *err = (const char *)(uintptr_t)what;
        size_t pos = 0, kn;
        const char *k;
        unsigned nkeys = 0;

        switch (rc) {
        case KV_PARSE_NEED:
                CHECK(err == NULL);
                CHECK(len < KV_LINE_MAX + 2 + ITEM_MAX + 2);
                return;
        case KV_PARSE_SKIP:
                CHECK(used > 0);
                return;
        case KV_PARSE_ERROR:
        case KV_PARSE_CLOSE:
                CHECK(err != NULL);
                CHECK(strlen(err) >= 2 && strcmp(err + strlen(err) - 2, "\r\n") == 0);
                CHECK(rc == KV_PARSE_CLOSE || used > 0);
                return;
        case KV_PARSE_OK:
                break;
        default:
                CHECK(0);
        }
        CHECK(used > 0 && err == NULL);
        CHECK(r->proto == KV_PROTO_ASCII);
        CHECK((unsigned)r->cmd < KV_NOOP);
        /* A base64 key (meta b) is decoded into the parser. */
        if (r->keylen)
                CHECK(fuzz_inside(r->key, r->keylen, buf, used) ||
                      (r->b64 && fuzz_inside(r->key, r->keylen, p->key, sizeof(p->key))));
        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                CHECK(fuzz_inside(r->keys, r->keys_len, buf, used));
                while (kv_req_next_key(r, &pos, &k, &kn)) {
                        CHECK(fuzz_inside(k, kn, r->keys, r->keys_len));
                        CHECK(key_ok(k, kn));
                        if (nkeys++ == 0)
                                CHECK(k == r->key && kn == r->keylen);
                }
                /* "gat 10" with no key is an empty hit list in memcached. */
                CHECK(nkeys == r->nkeys &&
                      (nkeys > 0 || r->cmd == KV_GAT || r->cmd == KV_GATS));
                break;
        case KV_SET:
        case KV_ADD:
        case KV_REPLACE:
        case KV_APPEND:
        case KV_PREPEND:
        case KV_CAS:
                CHECK(key_ok(r->key, r->keylen));
                if (r->too_large) {
                        CHECK(r->dlen > ITEM_MAX && p->swallow == r->dlen + 2);
                        CHECK(r->data == NULL);
                } else {
                        CHECK(r->dlen <= ITEM_MAX);
                        CHECK(fuzz_inside(r->data, r->dlen + 2, buf, used));
                        CHECK(r->data + r->dlen + 2 == buf + used);
                        CHECK(r->data[r->dlen] == '\r' && r->data[r->dlen + 1] == '\n');
                }
                break;
        case KV_DELETE:
        case KV_INCR:
        case KV_DECR:
        case KV_TOUCH:
                CHECK(key_ok(r->key, r->keylen));
                break;
        default:
                break;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_kv_stream(data, size, ITEM_MAX, parse, check);
        return 0;
}
