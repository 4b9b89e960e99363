/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for pc-kv's ASCII parser, the classic commands and the meta
 * ones: one input is the byte stream of a connection, parsed as the server
 * does (fuzz_kv.h) with a small item_max so the too-large path is reached.
 * Every result must describe itself inside the bytes parsed (keys, values,
 * the get family's key list, a meta opaque; a base64 key inside the
 * parser); a meta request's flags must be the letters memcached takes,
 * each once, with a deferred error only at a long opaque; the parser only
 * asks for more while a request could still be incomplete; the stream
 * split differently must parse to the same requests. Each meta request's
 * reply is then encoded for a hit and a miss, and must be whole lines.
 */
#include "fuzz_kv.h"
#include "proto_meta.h"

#define ITEM_MAX 64
/* The parser's limit, memcached's item size (kv_mc_item_size): ITEM_MAX
 * is the largest value of a 1-byte key with flags 0. */
#define PARSE_MAX kv_mc_item_size(1, ITEM_MAX, 0)

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

/* The reply to @r for a hit on an item made of its key and value, and for
 * a miss: empty (quiet) or whole "\r\n" lines. */
static void check_meta_reply(const struct kv_req *r)
{
        static union {
                struct kv_item it;
                char bytes[sizeof(struct kv_item) + KV_KEY_MAX + ITEM_MAX];
        } item;
        struct kv_result res = {.rc = KV_OK, .ttl = -1};
        struct buf out = {0};
        size_t vlen = r->cmd == KV_MS && !r->too_large ? r->dlen : 0;

        memset(&item.it, 0, sizeof(item.it));
        item.it.klen = (uint8_t)r->keylen;
        item.it.vlen = (uint32_t)vlen;
        item.it.iflags = r->b64 ? KV_IT_KEY_BINARY : 0;
        if (r->keylen)
                memcpy(item.it.data, r->key, r->keylen);
        if (vlen)
                memcpy(item.it.data + r->keylen, r->data, vlen);
        res.it = &item.it;
        res.number = UINT64_MAX;
        res.won = res.stale = res.win_sent = true;
        for (int pass = 0; pass < 2; pass++) {
                kv_meta_reply(r, &res, &out);
                CHECK(!out.oom);
                CHECK(out.len == 0 || (out.len >= 2 && out.p[out.len - 2] == '\r' &&
                                       out.p[out.len - 1] == '\n'));
                out.len = 0;
                res = (struct kv_result){.rc = KV_NOT_FOUND, .ttl = -1};
        }
        buf_free(&out);
}

static void check_meta(const struct kv_parser *p, const struct kv_req *r, const char *buf,
                       size_t used)
{
        static const char known[] = "bNTRlOPLkstcfvhuqFCMJDI";

        CHECK(r->proto == KV_PROTO_META);
        CHECK(r->nmflags <= KV_META_FLAGS_MAX && r->mstop <= r->nmflags);
        for (unsigned i = 0; i < r->nmflags; i++) {
                CHECK(r->mflags[i] && strchr(known, r->mflags[i]));
                for (unsigned j = 0; j < i; j++)
                        CHECK(r->mflags[j] != r->mflags[i]);
        }
        if (r->err) {
                CHECK(r->cmd == KV_MG || r->cmd == KV_MA);
                CHECK(r->mstop < r->nmflags && r->mflags[r->mstop] == 'O');
                CHECK(r->mopaque_len > KV_META_OPAQUE_MAX);
        } else {
                CHECK(r->mstop == r->nmflags);
        }
        if (r->mopaque_len)
                CHECK(fuzz_inside(r->mopaque, r->mopaque_len, buf, used) &&
                      r->mopaque[0] == 'O');
        if (r->cmd == KV_MN)
                return;
        CHECK(r->keylen > 0 && r->keylen <= KV_KEY_MAX);
        CHECK(r->b64 ? fuzz_inside(r->key, r->keylen, p->key, sizeof(p->key))
                     : fuzz_inside(r->key, r->keylen, buf, used));
        for (size_t i = 0; !r->b64 && i < r->keylen; i++)
                CHECK(r->key[i] != ' ' && r->key[i] != '\0' && r->key[i] != '\n');
        if (r->cmd == KV_MS && !r->too_large) {
                CHECK(r->dlen <= ITEM_MAX);
                CHECK(fuzz_inside(r->data, r->dlen + 2, buf, used));
                CHECK(r->data + r->dlen + 2 == buf + used);
        }
        if (r->cmd == KV_MS && r->too_large)
                CHECK(kv_mc_item_size(r->keylen, r->dlen, r->flags) > PARSE_MAX &&
                      p->swallow == r->dlen + 2 && r->data == NULL);
        check_meta_reply(r);
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
        CHECK((unsigned)r->cmd < KV_NOOP);
        if (r->cmd >= KV_MG) {
                check_meta(p, r, buf, used);
                return;
        }
        CHECK(r->proto == KV_PROTO_ASCII);
        if (r->keylen)
                CHECK(fuzz_inside(r->key, r->keylen, buf, used));
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
                        CHECK(kv_mc_item_size(r->keylen, r->dlen, r->flags) > PARSE_MAX);
                        CHECK(p->swallow == r->dlen + 2);
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
        fuzz_kv_stream(data, size, PARSE_MAX, parse, check);
        return 0;
}
