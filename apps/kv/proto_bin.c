/* SPDX-License-Identifier: MIT */
/*
 * memcached binary protocol parser. Each opcode's shape (extras length,
 * key, value) is one row of a table; a frame is checked against its row
 * from the header alone, so an invalid or oversized frame is refused
 * before its body arrives and the body is then skipped through p->swallow.
 */
#include "proto_bin.h"

#include <string.h>

enum key_rule {
        KEY_NONE, /* no key allowed */
        KEY_MUST, /* a key of 1..KV_KEY_MAX bytes */
        KEY_MAY,  /* stat: an optional group name */
};

struct shape {
        bool known;
        uint8_t cmd;     /* enum kv_cmd */
        uint8_t extlen;  /* the extras it takes */
        bool ext_opt;    /* ...or none (flush) */
        uint8_t key;     /* enum key_rule */
        bool value;      /* a storage command: the rest of the body is its value */
        bool quiet;
        bool want_key;
};

#define OP(c, e, k, v, q, wk)                                                                   \
        {                                                                                       \
                .known = true, .cmd = (c), .extlen = (e), .key = (k), .value = (v),              \
                .quiet = (q), .want_key = (wk)                                                   \
        }

static const struct shape shapes[] = {
        [KV_BIN_OP_GET] = OP(KV_GET, 0, KEY_MUST, false, false, false),
        [KV_BIN_OP_GETQ] = OP(KV_GET, 0, KEY_MUST, false, true, false),
        [KV_BIN_OP_GETK] = OP(KV_GET, 0, KEY_MUST, false, false, true),
        [KV_BIN_OP_GETKQ] = OP(KV_GET, 0, KEY_MUST, false, true, true),
        [KV_BIN_OP_SET] = OP(KV_SET, 8, KEY_MUST, true, false, false),
        [KV_BIN_OP_SETQ] = OP(KV_SET, 8, KEY_MUST, true, true, false),
        [KV_BIN_OP_ADD] = OP(KV_ADD, 8, KEY_MUST, true, false, false),
        [KV_BIN_OP_ADDQ] = OP(KV_ADD, 8, KEY_MUST, true, true, false),
        [KV_BIN_OP_REPLACE] = OP(KV_REPLACE, 8, KEY_MUST, true, false, false),
        [KV_BIN_OP_REPLACEQ] = OP(KV_REPLACE, 8, KEY_MUST, true, true, false),
        [KV_BIN_OP_APPEND] = OP(KV_APPEND, 0, KEY_MUST, true, false, false),
        [KV_BIN_OP_APPENDQ] = OP(KV_APPEND, 0, KEY_MUST, true, true, false),
        [KV_BIN_OP_PREPEND] = OP(KV_PREPEND, 0, KEY_MUST, true, false, false),
        [KV_BIN_OP_PREPENDQ] = OP(KV_PREPEND, 0, KEY_MUST, true, true, false),
        [KV_BIN_OP_DELETE] = OP(KV_DELETE, 0, KEY_MUST, false, false, false),
        [KV_BIN_OP_DELETEQ] = OP(KV_DELETE, 0, KEY_MUST, false, true, false),
        [KV_BIN_OP_INCR] = OP(KV_INCR, 20, KEY_MUST, false, false, false),
        [KV_BIN_OP_INCRQ] = OP(KV_INCR, 20, KEY_MUST, false, true, false),
        [KV_BIN_OP_DECR] = OP(KV_DECR, 20, KEY_MUST, false, false, false),
        [KV_BIN_OP_DECRQ] = OP(KV_DECR, 20, KEY_MUST, false, true, false),
        [KV_BIN_OP_QUIT] = OP(KV_QUIT, 0, KEY_NONE, false, false, false),
        [KV_BIN_OP_QUITQ] = OP(KV_QUIT, 0, KEY_NONE, false, true, false),
        [KV_BIN_OP_FLUSH] = {.known = true, .cmd = KV_FLUSH_ALL, .extlen = 4, .ext_opt = true},
        [KV_BIN_OP_FLUSHQ] = {.known = true, .cmd = KV_FLUSH_ALL, .extlen = 4, .ext_opt = true,
                              .quiet = true},
        [KV_BIN_OP_NOOP] = OP(KV_NOOP, 0, KEY_NONE, false, false, false),
        [KV_BIN_OP_VERSION] = OP(KV_VERSION, 0, KEY_NONE, false, false, false),
        [KV_BIN_OP_STAT] = OP(KV_STATS, 0, KEY_MAY, false, false, false),
        [KV_BIN_OP_VERBOSITY] = OP(KV_VERBOSITY, 4, KEY_NONE, false, false, false),
        [KV_BIN_OP_TOUCH] = OP(KV_TOUCH, 4, KEY_MUST, false, false, false),
        [KV_BIN_OP_GAT] = OP(KV_GAT, 4, KEY_MUST, false, false, false),
        [KV_BIN_OP_GATQ] = OP(KV_GAT, 4, KEY_MUST, false, true, false),
        [KV_BIN_OP_GATK] = OP(KV_GAT, 4, KEY_MUST, false, false, true),
        [KV_BIN_OP_GATKQ] = OP(KV_GAT, 4, KEY_MUST, false, true, true),
};

struct hdr {
        uint8_t opcode;
        uint8_t extlen;
        uint16_t keylen;
        uint32_t bodylen;
};

static uint32_t be16(const unsigned char *b)
{
        return (uint32_t)b[0] << 8 | b[1];
}

static uint32_t be32(const unsigned char *b)
{
        return be16(b) << 16 | be16(b + 2);
}

static uint64_t be64(const unsigned char *b)
{
        return (uint64_t)be32(b) << 32 | be32(b + 4);
}

void kv_bin_put_header(char out[KV_BIN_HDR_LEN], uint8_t opcode, uint16_t keylen,
                       uint8_t extlen, uint16_t status, uint32_t bodylen, uint32_t opaque,
                       uint64_t cas)
{
        unsigned char *b = (unsigned char *)out;

        b[0] = KV_BIN_MAGIC_RES;
        b[1] = opcode;
        kv_bin_put16(b + 2, keylen);
        b[4] = extlen;
        b[5] = 0;
        kv_bin_put16(b + 6, status);
        kv_bin_put32(b + 8, bodylen);
        kv_bin_put32(b + 12, opaque);
        kv_bin_put64(b + 16, cas);
}

static const struct shape *shape_of(uint8_t opcode)
{
        if (opcode >= sizeof(shapes) / sizeof(shapes[0]) || !shapes[opcode].known)
                return NULL;
        return &shapes[opcode];
}

/* The status for a frame of shape @s (NULL: unknown opcode) with header @h,
 * or KV_BIN_OK when it is a valid request. */
static uint16_t check(const struct shape *s, const struct hdr *h, size_t item_max)
{
        if (h->keylen > KV_KEY_MAX)
                return KV_BIN_EINVAL; /* memcached checks this before the opcode */
        if (s == NULL)
                return KV_BIN_UNKNOWN;
        if (h->extlen != s->extlen && !(s->ext_opt && h->extlen == 0))
                return KV_BIN_EINVAL;
        if ((s->key == KEY_MUST && h->keylen == 0) || (s->key == KEY_NONE && h->keylen > 0))
                return KV_BIN_EINVAL;
        if (!s->value && h->bodylen != (uint32_t)h->extlen + h->keylen)
                return KV_BIN_EINVAL;
        if (s->value && h->bodylen - h->extlen - h->keylen > item_max)
                return KV_BIN_E2BIG;
        return KV_BIN_OK;
}

/* Fill @req from a frame whose header, extras and key are in @b. */
static void fill(struct kv_req *req, const struct shape *s, const struct hdr *h,
                 const unsigned char *b)
{
        const unsigned char *ext = b + KV_BIN_HDR_LEN;
        const char *key = (const char *)ext + h->extlen;

        req->cmd = (enum kv_cmd)s->cmd;
        req->quiet = s->quiet;
        req->want_key = s->want_key;
        if (h->keylen > 0) {
                req->key = key;
                req->keylen = h->keylen;
        }
        switch (s->cmd) {
        case KV_GET:
        case KV_GAT:
                req->keys = key;
                req->keys_len = h->keylen;
                req->nkeys = 1;
                if (s->cmd == KV_GAT)
                        req->exptime = be32(ext);
                break;
        case KV_SET:
        case KV_ADD:
        case KV_REPLACE:
                req->flags = be32(ext);
                req->exptime = be32(ext + 4);
                if (req->cas != 0) {
                        req->base_cmd = s->cmd;
                        req->cmd = KV_CAS;
                }
                break;
        case KV_INCR:
        case KV_DECR:
                req->delta = be64(ext);
                req->initial = be64(ext + 8);
                req->exptime = be32(ext + 16);
                req->vivify = be32(ext + 16) != UINT32_MAX;
                break;
        case KV_TOUCH:
                req->exptime = be32(ext);
                break;
        case KV_FLUSH_ALL:
                req->delay = h->extlen ? be32(ext) : 0;
                break;
        case KV_VERBOSITY:
                req->level = be32(ext);
                break;
        default:
                break;
        }
        if (s->value) {
                req->data = key + h->keylen;
                req->dlen = h->bodylen - h->extlen - h->keylen;
        }
}

/* Refuse the frame of @frame bytes at the head of a @len-byte buffer: drop
 * what is there, swallow the rest later. */
static enum kv_parse_rc refuse(struct kv_parser *p, size_t len, uint64_t frame,
                               size_t *consumed, uint16_t *status, uint16_t st)
{
        *consumed = len < frame ? len : (size_t)frame;
        p->swallow = (size_t)(frame - *consumed);
        *status = st;
        return KV_PARSE_ERROR;
}

enum kv_parse_rc kv_bin_parse(struct kv_parser *p, const char *buf, size_t len,
                              struct kv_req *req, size_t *consumed, uint16_t *status)
{
        const unsigned char *b = (const unsigned char *)buf;
        const struct shape *s;
        struct hdr h;
        uint64_t frame;
        uint16_t st;

        *consumed = 0;
        *status = KV_BIN_OK;
        if (p->swallow) {
                if (len == 0)
                        return KV_PARSE_NEED;
                *consumed = len < p->swallow ? len : p->swallow;
                p->swallow -= *consumed;
                return KV_PARSE_SKIP;
        }
        if (len == 0)
                return KV_PARSE_NEED;
        /* Checked on the first byte so a stray text line closes at once. */
        if (b[0] != KV_BIN_MAGIC_REQ)
                return KV_PARSE_CLOSE;
        if (len < KV_BIN_HDR_LEN)
                return KV_PARSE_NEED;
        h.opcode = b[1];
        h.keylen = (uint16_t)be16(b + 2);
        h.extlen = b[4];
        h.bodylen = be32(b + 8);
        frame = (uint64_t)KV_BIN_HDR_LEN + h.bodylen;

        memset(req, 0, KV_REQ_CLASSIC); /* a binary request has no meta fields */
        req->proto = KV_PROTO_BINARY;
        req->opcode = h.opcode;
        req->opaque = be32(b + 12);
        req->cas = be64(b + 16);
        s = shape_of(h.opcode);

        if ((uint32_t)h.keylen + h.extlen > h.bodylen) {
                *status = KV_BIN_UNKNOWN;
                return KV_PARSE_CLOSE;
        }
        if ((s == NULL || !s->value) && h.bodylen > KV_BIN_BODY_SLACK &&
            h.bodylen - KV_BIN_BODY_SLACK > p->item_max) {
                *status = KV_BIN_EINVAL;
                return KV_PARSE_CLOSE;
        }
        st = check(s, &h, p->item_max);
        if (st == KV_BIN_OK && s->value) {
                /* memcached counts its item header and the flags in -I. */
                if (len < KV_BIN_HDR_LEN + (size_t)h.extlen + h.keylen)
                        return KV_PARSE_NEED;
                fill(req, s, &h, b);
                if (kv_mc_item_size(req->keylen, req->dlen, req->flags) > p->item_max)
                        st = KV_BIN_E2BIG;
        }
        if (st == KV_BIN_E2BIG) {
                /* Keep the key: a refused set drops the key's old value. */
                if (len < KV_BIN_HDR_LEN + (size_t)h.extlen + h.keylen)
                        return KV_PARSE_NEED;
                fill(req, s, &h, b);
                req->data = NULL;
                req->dlen = 0;
                req->too_large = true;
        }
        if (st != KV_BIN_OK)
                return refuse(p, len, frame, consumed, status, st);
        if (len < frame)
                return KV_PARSE_NEED;
        fill(req, s, &h, b);
        *consumed = (size_t)frame;
        return KV_PARSE_OK;
}

/* ---- replies ------------------------------------------------------------------------ */

/* The text memcached puts in the body of an error response. */
static const char *message(uint16_t status)
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

static void frame(struct buf *out, const struct kv_req *r, uint16_t status, uint64_t cas,
                  const void *ext, uint8_t extlen, const char *key, size_t klen, const void *val,
                  size_t vlen)
{
        char h[KV_BIN_HDR_LEN];

        kv_bin_put_header(h, r->opcode, (uint16_t)klen, extlen, status,
                          (uint32_t)(extlen + klen + vlen), r->opaque, cas);
        buf_add(out, h, sizeof(h));
        buf_add(out, ext, extlen);
        buf_add(out, key, klen);
        buf_add(out, val, vlen);
}

void kv_bin_error(const struct kv_req *r, uint16_t status, struct buf *out)
{
        const char *m = message(status);

        frame(out, r, status, 0, NULL, 0, NULL, 0, m, strlen(m));
}

void kv_bin_stat(const struct kv_req *r, const char *name, const char *val, size_t vlen,
                 struct buf *out)
{
        frame(out, r, KV_BIN_OK, 0, NULL, 0, name, name ? strlen(name) : 0, val, vlen);
}

/* An outcome as memcached's status for @r's command. */
static uint16_t status_of(const struct kv_req *r, enum kv_store_rc rc)
{
        switch (rc) {
        case KV_OK:
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
        case KV_TOO_LARGE:
                return KV_BIN_E2BIG;
        default:
                return KV_BIN_ENOMEM;
        }
}

/* get, getk, gat, gatk and their quiet forms. */
static void value(const struct kv_req *r, const char *key, size_t klen,
                  const struct kv_result *res, struct buf *out)
{
        const struct kv_item *it = res->it;
        unsigned char flags[4];

        if (it == NULL) {
                if (r->quiet)
                        return;
                if (r->want_key)
                        frame(out, r, KV_BIN_ENOENT, 0, NULL, 0, key, klen, NULL, 0);
                else
                        kv_bin_error(r, KV_BIN_ENOENT, out);
                return;
        }
        kv_bin_put32(flags, it->flags);
        frame(out, r, KV_BIN_OK, it->cas, flags, 4, key, r->want_key ? klen : 0,
              kv_item_value(it), it->vlen);
}

void kv_bin_reply(const struct kv_req *r, const char *key, size_t klen,
                  const struct kv_result *res, struct buf *out)
{
        static const char version[] = KV_VERSION_STRING;
        unsigned char b[8];
        uint16_t st;

        switch (r->cmd) {
        case KV_GET:
        case KV_GAT:
                value(r, key, klen, res, out);
                return;
        case KV_VERSION:
                frame(out, r, KV_BIN_OK, 0, NULL, 0, NULL, 0, version, sizeof(version) - 1);
                return;
        default:
                break;
        }
        st = status_of(r, res->rc);
        if (st != KV_BIN_OK) {
                kv_bin_error(r, st, out);
                return;
        }
        if (r->quiet)
                return;
        switch (r->cmd) {
        case KV_INCR:
        case KV_DECR:
                kv_bin_put64(b, res->number);
                frame(out, r, KV_BIN_OK, res->cas, NULL, 0, NULL, 0, b, 8);
                return;
        case KV_TOUCH: /* answered with the item's flags, as memcached */
                kv_bin_put32(b, res->it->flags);
                frame(out, r, KV_BIN_OK, res->it->cas, b, 4, NULL, 0, NULL, 0);
                return;
        default:
                frame(out, r, KV_BIN_OK, res->cas, NULL, 0, NULL, 0, NULL, 0);
                return;
        }
}
