/* SPDX-License-Identifier: MIT */
/*
 * One request run on the store that owns its key, and the reply written in
 * the request's own protocol: memcached's ASCII lines or binary frames.
 * Runs on the owner worker (the item pointers the store returns are only
 * valid there), so the reply bytes are complete before they travel back.
 */
#include <stdlib.h>
#include <string.h>

#include "kv_pvt.h"

#define REPLY_OOM "SERVER_ERROR out of memory storing object\r\n"
#define REPLY_NON_NUMERIC "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

void buf_add(struct buf *b, const void *d, size_t n)
{
        if (n == 0)
                return;
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *p;

                while (cap < b->len + n)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, d, n);
        b->len += n;
}

void buf_free(struct buf *b)
{
        free(b->p);
        memset(b, 0, sizeof(*b));
}

/* ---- binary frames ----------------------------------------------------------------- */

/* The text memcached puts in the body of a binary error reply. */
static const char *bin_message(uint16_t status)
{
        switch (status) {
        case KV_BIN_ENOENT:
                return "Not found";
        case KV_BIN_EEXISTS:
                return "Data exists for key.";
        case KV_BIN_E2BIG:
                return "Too large.";
        case KV_BIN_EINVAL:
                return "Invalid arguments";
        case KV_BIN_NOT_STORED:
                return "Not stored.";
        case KV_BIN_DELTA_BADVAL:
                return "Non-numeric server-side value for incr or decr";
        case KV_BIN_ENOMEM:
                return "Out of memory";
        default:
                return "Unknown command";
        }
}

static void bin_frame(struct buf *out, const struct kv_req *r, uint16_t status, uint64_t cas,
                      const void *ext, uint8_t extlen, const char *key, size_t klen,
                      const void *val, size_t vlen)
{
        char h[24];

        kv_bin_put_header(h, r->opcode, (uint16_t)klen, extlen, status,
                          (uint32_t)(extlen + klen + vlen), r->opaque, cas);
        buf_add(out, h, sizeof(h));
        buf_add(out, ext, extlen);
        buf_add(out, key, klen);
        buf_add(out, val, vlen);
}

static void bin_ok(struct buf *out, const struct kv_req *r, uint64_t cas)
{
        if (!r->quiet)
                bin_frame(out, r, KV_BIN_OK, cas, NULL, 0, NULL, 0, NULL, 0);
}

void kv_reply_error(const struct kv_req *r, const char *ascii, uint16_t status,
                    struct buf *out)
{
        const char *m;

        if (r->proto == KV_PROTO_ASCII) {
                buf_str(out, ascii);
                return;
        }
        m = bin_message(status);
        bin_frame(out, r, status, 0, NULL, 0, NULL, 0, m, strlen(m));
}

void kv_reply_done(const struct kv_req *r, struct buf *out)
{
        static const char version[] = KV_VERSION_STRING;

        if (r->proto == KV_PROTO_BINARY) {
                if (r->cmd == KV_VERSION)
                        bin_frame(out, r, KV_BIN_OK, 0, NULL, 0, NULL, 0, version,
                                  sizeof(version) - 1);
                else
                        bin_ok(out, r, 0);
                return;
        }
        switch (r->cmd) {
        case KV_VERSION:
                buf_str(out, "VERSION " KV_VERSION_STRING "\r\n");
                break;
        case KV_VERBOSITY:
        case KV_FLUSH_ALL:
                if (!r->noreply)
                        buf_str(out, "OK\r\n");
                break;
        default: /* quit: nothing */
                break;
        }
}

/* ---- the get family ---------------------------------------------------------------- */


static void get_key(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
                    struct buf *out)
{
        bool touch = r->cmd == KV_GAT || r->cmd == KV_GATS;
        const struct kv_item *it;
        char hdr[KV_KEY_MAX + 80]; /* 6 + key + 3 spaces + 3 numbers + \r\n */
        int n;

        it = touch ? kv_store_gat(s, key, klen, r->exptime) : kv_store_get(s, key, klen);
        if (r->proto == KV_PROTO_BINARY) {
                unsigned char flags[4];

                if (it == NULL) {
                        if (r->quiet)
                                return;
                        if (r->want_key)
                                bin_frame(out, r, KV_BIN_ENOENT, 0, NULL, 0, key, klen, NULL,
                                          0);
                        else
                                kv_reply_error(r, NULL, KV_BIN_ENOENT, out);
                        return;
                }
                kv_bin_put32(flags, it->flags);
                bin_frame(out, r, KV_BIN_OK, it->cas, flags, 4, key, r->want_key ? klen : 0,
                          kv_item_value(it), it->vlen);
                return;
        }
        if (it == NULL)
                return;
        /* "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n", built by hand:
         * this is the hottest reply. */
        memcpy(hdr, "VALUE ", 6);
        memcpy(hdr + 6, key, klen);
        n = 6 + (int)klen;
        hdr[n++] = ' ';
        n += kv_fmt_u64(hdr + n, it->flags);
        hdr[n++] = ' ';
        n += kv_fmt_u64(hdr + n, it->vlen);
        if (r->cmd == KV_GETS || r->cmd == KV_GATS) {
                hdr[n++] = ' ';
                n += kv_fmt_u64(hdr + n, it->cas);
        }
        hdr[n++] = '\r';
        hdr[n++] = '\n';
        buf_add(out, hdr, (size_t)n);
        buf_add(out, kv_item_value(it), it->vlen);
        buf_add(out, "\r\n", 2);
}

/* ---- ASCII replies to writes ------------------------------------------------------- */

static const char *const ascii_replies[] = {
        [KV_STORED] = "STORED\r\n",       [KV_NOT_STORED] = "NOT_STORED\r\n",
        [KV_EXISTS] = "EXISTS\r\n",       [KV_NOT_FOUND] = "NOT_FOUND\r\n",
        [KV_DELETED] = "DELETED\r\n",     [KV_TOUCHED] = "TOUCHED\r\n",
        [KV_NON_NUMERIC] = REPLY_NON_NUMERIC, [KV_NO_MEMORY] = REPLY_OOM,
};

/* A write's outcome as memcached's binary status. */
static uint16_t bin_status(const struct kv_req *r, enum kv_store_rc rc)
{
        switch (rc) {
        case KV_STORED:
        case KV_DELETED:
        case KV_TOUCHED:
                return KV_BIN_OK;
        case KV_NOT_STORED:
                /* add finds the key, replace misses it: said as such. */
                if (r->cmd == KV_ADD)
                        return KV_BIN_EEXISTS;
                if (r->cmd == KV_REPLACE)
                        return KV_BIN_ENOENT;
                return KV_BIN_NOT_STORED;
        case KV_EXISTS:
                return KV_BIN_EEXISTS;
        case KV_NOT_FOUND:
                return KV_BIN_ENOENT;
        case KV_NON_NUMERIC:
                return KV_BIN_DELTA_BADVAL;
        default:
                return KV_BIN_ENOMEM;
        }
}

static void write_reply(struct kv_store *s, const struct kv_req *r, enum kv_store_rc rc,
                        struct buf *out)
{
        uint16_t st;

        if (r->proto == KV_PROTO_ASCII) {
                /* noreply silences every outcome but a non-numeric incr. */
                if (!r->noreply || rc == KV_NON_NUMERIC)
                        buf_str(out, ascii_replies[rc]);
                return;
        }
        st = bin_status(r, rc);
        if (st == KV_BIN_OK)
                bin_ok(out, r, rc == KV_STORED ? kv_store_last_cas(s) : 0);
        else
                kv_reply_error(r, NULL, st, out);
}

/* incr/decr. Binary adds a create-on-miss with the initial value. */
static void arith(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
                  struct buf *out)
{
        uint64_t v = 0;
        enum kv_store_rc rc;
        char num[24];
        int n;

        rc = kv_store_arith(s, key, klen, r->cmd == KV_INCR, r->delta, &v);
        if (rc == KV_NOT_FOUND && r->proto == KV_PROTO_BINARY && !r->no_create) {
                n = kv_fmt_u64(num, r->initial);
                rc = kv_store_update(s, KV_ADD, key, klen, 0, r->exptime, num, (size_t)n, 0);
                v = r->initial;
        }
        if (rc != KV_STORED) {
                write_reply(s, r, rc, out);
                return;
        }
        if (r->proto == KV_PROTO_ASCII) {
                if (!r->noreply) {
                        n = kv_fmt_u64(num, v);
                        num[n++] = '\r';
                        num[n++] = '\n';
                        buf_add(out, num, (size_t)n);
                }
                return;
        }
        if (!r->quiet) {
                unsigned char be[8];

                kv_bin_put64(be, v);
                bin_frame(out, r, KV_BIN_OK, kv_store_last_cas(s), NULL, 0, NULL, 0, be, 8);
        }
}

/* Binary touch answers with the item's flags, as memcached. */
static void bin_touch(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
                      struct buf *out)
{
        const struct kv_item *it;
        unsigned char flags[4];

        if (kv_store_touch(s, key, klen, r->exptime) != KV_TOUCHED ||
            (it = kv_store_peek(s, key, klen)) == NULL) {
                kv_reply_error(r, NULL, KV_BIN_ENOENT, out);
                return;
        }
        if (r->quiet)
                return;
        kv_bin_put32(flags, it->flags);
        bin_frame(out, r, KV_BIN_OK, it->cas, flags, 4, NULL, 0, NULL, 0);
}

void kv_exec(struct kv_store *s, const struct kv_req *r, const char *key, size_t klen,
             struct buf *out)
{
        enum kv_store_rc rc;
        int mode;

        if (key == NULL) {
                key = r->key;
                klen = r->keylen;
        }
        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                get_key(s, r, key, klen, out);
                return;
        case KV_DELETE:
                rc = kv_store_delete(s, key, klen, r->cas);
                break;
        case KV_TOUCH:
                if (r->proto == KV_PROTO_BINARY) {
                        bin_touch(s, r, key, klen, out);
                        return;
                }
                rc = kv_store_touch(s, key, klen, r->exptime);
                break;
        case KV_INCR:
        case KV_DECR:
                arith(s, r, key, klen, out);
                return;
        default: /* storage commands */
                if (r->too_large) {
                        /* memcached drops the old value rather than keep a stale one. */
                        if (r->cmd == KV_SET || (r->cmd == KV_CAS && r->base_cmd == KV_SET))
                                kv_store_delete(s, key, klen, 0);
                        if (r->proto == KV_PROTO_BINARY || !r->noreply)
                                kv_reply_error(r, KV_ERR_TOO_LARGE, KV_BIN_E2BIG, out);
                        return;
                }
                mode = (int)r->cmd;
                rc = kv_store_update(s, mode, key, klen, r->flags, r->exptime, r->data, r->dlen,
                                     r->cas);
                break;
        }
        write_reply(s, r, rc, out);
}
