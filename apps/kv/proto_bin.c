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
                req->no_create = be32(ext + 16) == UINT32_MAX;
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

        memset(req, 0, sizeof(*req));
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
