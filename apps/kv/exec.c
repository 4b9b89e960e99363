/* SPDX-License-Identifier: MIT */
/*
 * One request run on the store that owns its key: what it asks of the
 * store, and what came of it as a struct kv_result. No reply is written
 * here; kv_run() hands the result to the request's protocol encoder.
 * Runs on the owner worker (or a worker holding the owner's shard): the
 * item pointers the store returns are only valid there, so the reply is
 * encoded before anything travels back.
 */
#include "kv_pvt.h"

/* get, gets, gat, gats: the item, counted and bumped by the store. */
static void exec_get(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
                     struct kv_result *res)
{
        if (r->cmd == KV_GAT || r->cmd == KV_GATS)
                res->it = kv_store_gat(s, key, klen, r->exptime);
        else
                res->it = kv_store_get(s, key, klen);
        res->rc = res->it ? KV_OK : KV_NOT_FOUND;
}

/* incr, decr; a request that may create its key (binary) stores its
 * initial value on a miss. */
static void exec_arith(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
                       struct kv_result *res)
{
        char num[24];
        int n;

        res->rc = kv_store_arith(s, key, klen, r->cmd == KV_INCR, r->delta, 0, r->batch,
                                 &res->number, NULL);
        if (res->rc == KV_NOT_FOUND && r->vivify) {
                n = kv_fmt_u64(num, r->initial);
                res->rc = kv_store_update(s, KV_ADD, key, klen, 0, r->exptime, num, (size_t)n,
                                          0, 0);
                res->number = r->initial;
        }
        if (res->rc == KV_STORED) {
                res->rc = KV_OK;
                res->cas = kv_store_last_cas(s);
        }
}

/* A storage command whose value was refused as too large: memcached drops
 * a set's old value rather than keep a stale one. */
static void exec_too_large(struct kv_store *s, const struct kv_req *r, const char *key,
                           size_t klen, struct kv_result *res)
{
        if (r->cmd == KV_SET || (r->cmd == KV_CAS && r->base_cmd == KV_SET))
                kv_store_delete(s, key, klen, 0);
        res->rc = KV_TOO_LARGE;
}

void kv_exec(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
             struct kv_result *res)
{
        res->it = NULL;
        res->cas = 0;
        if (r->proto == KV_PROTO_META) {
                kv_exec_meta(s, r, res);
                return;
        }
        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                exec_get(s, r, key, klen, res);
                return;
        case KV_DELETE:
                res->rc = kv_store_delete(s, key, klen, r->cas);
                return;
        case KV_TOUCH:
                /* The binary reply carries the item's flags and cas. */
                res->rc = kv_store_touch(s, key, klen, r->exptime, &res->it);
                return;
        case KV_INCR:
        case KV_DECR:
                exec_arith(s, r, key, klen, res);
                return;
        default: /* storage commands */
                if (r->too_large) {
                        exec_too_large(s, r, key, klen, res);
                        return;
                }
                res->rc = kv_store_update(s, (int)r->cmd, key, klen, r->flags, r->exptime,
                                          r->data, r->dlen, r->cas, 0);
                if (res->rc == KV_STORED)
                        res->cas = kv_store_last_cas(s);
                return;
        }
}

/* ---- the reply, in the request's protocol ------------------------------------------ */

void kv_reply(const struct kv_req *r, const char *key, size_t klen, const struct kv_result *res,
              struct buf *out)
{
        if (r->proto == KV_PROTO_BINARY)
                kv_bin_reply(r, key, klen, res, out);
        else if (r->proto == KV_PROTO_META)
                kv_meta_reply(r, res, out);
        else
                kv_ascii_reply(r, key, klen, res, out);
}

void kv_run(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
            struct buf *out)
{
        struct kv_result res;

        if (key == NULL) {
                key = r->key;
                klen = r->keylen;
        }
        kv_exec(s, r, key, klen, &res);
        kv_reply(r, key, klen, &res, out);
}

void kv_reply_done(const struct kv_req *r, struct buf *out)
{
        struct kv_result res = {.rc = KV_OK};

        kv_reply(r, NULL, 0, &res, out);
}

void kv_reply_error(const struct kv_req *r, const char *ascii, uint16_t status,
                    struct buf *out)
{
        if (r->proto == KV_PROTO_BINARY)
                kv_bin_error(r, status, out);
        else
                buf_str(out, ascii);
}

void kv_reply_stat(const struct kv_req *r, const char *name, const char *val, size_t vlen,
                   struct buf *out)
{
        if (r->proto == KV_PROTO_BINARY)
                kv_bin_stat(r, name, val, vlen, out);
        else
                kv_ascii_stat(name, val, vlen, out);
}

void kv_reply_stats_end(const struct kv_req *r, struct buf *out)
{
        if (r->proto == KV_PROTO_BINARY)
                kv_bin_stat(r, NULL, NULL, 0, out);
        else
                buf_str(out, "END\r\n");
}
