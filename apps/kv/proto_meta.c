/* SPDX-License-Identifier: MIT */
/*
 * memcached's meta commands: the line's parser (called by kv_parse() for
 * a two-byte command starting with 'm') and the reply encoder. Checked
 * byte for byte against memcached 1.6.18 (tests/apps/kv/test_pc_kv_meta.py).
 *
 * The checks follow memcached's proto_text.c in its order: token count,
 * key length, flag count, then one pass over the flags that reads every
 * value (the last bad value names the error; an unknown or repeated flag
 * stops the pass at once), then the opaque's length and the mode. mg and
 * ma look at the opaque only while they write the reply, after they have
 * run, so theirs is an error that comes back from running (req->err).
 */
#include "proto_meta.h"

#include <string.h>

#include "token.h"

/* ---- base64, as memcached's own coder ---------------------------------------------- */

static const char b64_alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* A byte's six bits, 0 for the pad '=', -1 outside the alphabet. */
static int b64_value(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return c == '=' ? 0 : -1;
}

/*
 * memcached skips bytes outside the alphabet, wants the rest in whole
 * groups of four, and ends at the first group that holds a pad: one pad
 * drops its last byte, two its last two, more is not base64.
 */
size_t kv_b64_decode(const char *in, size_t n, char *out)
{
        unsigned char g[4];
        size_t count = 0, o = 0;
        unsigned pads = 0, k = 0;

        for (size_t i = 0; i < n; i++)
                count += b64_value((unsigned char)in[i]) >= 0;
        if (count == 0 || count % 4)
                return 0;
        for (size_t i = 0; i < n; i++) {
                int v = b64_value((unsigned char)in[i]);

                if (v < 0)
                        continue;
                pads += in[i] == '=';
                g[k++] = (unsigned char)v;
                if (k < 4)
                        continue;
                out[o++] = (char)(g[0] << 2 | g[1] >> 4);
                out[o++] = (char)(g[1] << 4 | g[2] >> 2);
                out[o++] = (char)(g[2] << 6 | g[3]);
                k = 0;
                if (pads == 0)
                        continue;
                if (pads > 2)
                        return 0;
                return o - pads;
        }
        return o;
}

size_t kv_b64_encode(const char *in, size_t n, char *out)
{
        const unsigned char *b = (const unsigned char *)in;
        size_t o = 0, i = 0;

        for (; n - i >= 3; i += 3) {
                out[o++] = b64_alphabet[b[i] >> 2];
                out[o++] = b64_alphabet[(b[i] & 3) << 4 | b[i + 1] >> 4];
                out[o++] = b64_alphabet[(b[i + 1] & 15) << 2 | b[i + 2] >> 6];
                out[o++] = b64_alphabet[b[i + 2] & 63];
        }
        if (i < n) {
                out[o++] = b64_alphabet[b[i] >> 2];
                if (n - i == 1) {
                        out[o++] = b64_alphabet[(b[i] & 3) << 4];
                        out[o++] = '=';
                } else {
                        out[o++] = b64_alphabet[(b[i] & 3) << 4 | b[i + 1] >> 4];
                        out[o++] = b64_alphabet[(b[i + 1] & 15) << 2];
                }
                out[o++] = '=';
        }
        return o;
}

/* ---- the line ------------------------------------------------------------------------ */

static enum kv_parse_rc fail(const char **err, const char *msg)
{
        *err = msg;
        return KV_PARSE_ERROR;
}

/* An ms refused after its length was read: its data block is skipped. */
static enum kv_parse_rc fail_ms(struct kv_parser *p, const struct kv_req *req,
                                const char **err, const char *msg)
{
        p->swallow = req->dlen + 2;
        return fail(err, msg);
}

/* The key, decoded from base64 into the parser. false: not base64. */
static bool decode_key(struct kv_parser *p, struct kv_req *req, const struct kv_tok *key)
{
        size_t n = kv_b64_decode(key->s, key->n, p->key);

        req->key = p->key;
        req->keylen = n;
        req->b64 = true;
        return n > 0;
}

/*
 * memcached's one pass over the flags (_meta_flag_preparse): every flag's
 * letter and value into @req. Returns NULL, or the error: an unknown or
 * repeated flag (or one whose first byte is 127 or more, which memcached
 * calls repeated) at once, else the last bad value.
 */
static const char *read_flags(struct kv_parser *p, const struct kv_tok *t, unsigned first,
                              unsigned n, struct kv_req *req)
{
        bool seen[127] = {false};
        const char *bad = NULL;

        for (unsigned i = first; i < n; i++) {
                unsigned char c = (unsigned char)t[i].s[0];
                struct kv_tok v = {t[i].s + 1, t[i].n - 1};

                if (c >= 127 || seen[c])
                        return KV_ERR_META_DUP;
                seen[c] = true;
                switch (c) {
                case 'b':
                        if (!decode_key(p, req, &t[1]))
                                bad = KV_ERR_META_KEY;
                        break;
                case 'N':
                        req->vivify = true;
                        if (!kv__parse_i32(&v, &req->viv_exptime))
                                bad = KV_ERR_META_TOKEN;
                        break;
                case 'T':
                        if (!kv__parse_i32(&v, &req->exptime))
                                bad = KV_ERR_META_TOKEN;
                        break;
                case 'R':
                        if (!kv__parse_i32(&v, &req->recache))
                                bad = KV_ERR_META_TOKEN;
                        break;
                case 'O':
                        req->mopaque = t[i].s;
                        req->mopaque_len = (uint8_t)(t[i].n > 255 ? 255 : t[i].n);
                        break;
                case 'q':
                        req->quiet = true;
                        break;
                case 'F':
                        /* memcached sets no message of its own for this one. */
                        if (!kv__parse_u32(&v, &req->flags))
                                bad = KV_ERR_FORMAT;
                        break;
                case 'C':
                        req->has_cas = true;
                        if (!kv__parse_u64(&v, &req->cas))
                                bad = KV_ERR_META_TOKEN;
                        break;
                case 'M':
                        if (t[i].n != 2)
                                bad = "CLIENT_ERROR incorrect length for M token\r\n";
                        else
                                req->mode = t[i].s[1];
                        break;
                case 'J':
                        if (!kv__parse_u64(&v, &req->initial))
                                bad = "CLIENT_ERROR invalid numeric initial value\r\n";
                        break;
                case 'D':
                        if (!kv__parse_u64(&v, &req->delta))
                                bad = "CLIENT_ERROR invalid numeric delta value\r\n";
                        break;
                case 'k':
                case 's':
                case 't':
                case 'c':
                case 'f':
                case 'v':
                case 'h':
                case 'l':
                case 'u':
                case 'I':
                case 'P': /* memcached takes P and L and does nothing with them */
                case 'L':
                        break;
                default:
                        return KV_ERR_META_FLAG;
                }
                req->mflags[req->nmflags++] = (char)c;
        }
        return bad;
}

/* The O token is memcached's to refuse past KV_META_OPAQUE_MAX bytes:
 * where among the flags it is, or -1 when it is fine. */
static int opaque_too_long(const struct kv_req *req)
{
        if (req->mopaque == NULL || req->mopaque_len <= KV_META_OPAQUE_MAX)
                return -1;
        for (unsigned i = 0; i < req->nmflags; i++)
                if (req->mflags[i] == 'O')
                        return (int)i;
        return -1;
}

/* me <key> [b]: its own rules, every refusal the format error. */
static enum kv_parse_rc parse_me(struct kv_parser *p, const struct kv_tok *t, unsigned n,
                                 struct kv_req *req, const char **err)
{
        if (n < 2 || t[1].n > KV_KEY_MAX)
                return fail(err, KV_ERR_FORMAT);
        req->key = t[1].s;
        req->keylen = t[1].n;
        if (n >= 3 && t[2].n == 1 && t[2].s[0] == 'b' && !decode_key(p, req, &t[1]))
                return fail(err, KV_ERR_FORMAT);
        return KV_PARSE_OK;
}

enum kv_parse_rc kv__meta_parse(struct kv_parser *p, const struct kv_tok *t, unsigned n,
                                struct kv_req *req, const char **err)
{
        unsigned first = 2;
        const char *bad;
        int64_t len;
        int stop;

        memset(req->mflags, 0, sizeof(*req) - KV_REQ_CLASSIC);
        req->proto = KV_PROTO_META;
        switch (t[0].s[1]) {
        case 'g':
                req->cmd = KV_MG;
                break;
        case 's':
                req->cmd = KV_MS;
                break;
        case 'd':
                req->cmd = KV_MD;
                break;
        case 'a':
                req->cmd = KV_MA;
                req->delta = 1;
                break;
        case 'e':
                req->cmd = KV_ME;
                return parse_me(p, t, n, req, err);
        case 'n':
                req->cmd = KV_MN;
                return KV_PARSE_OK;
        default:
                return fail(err, KV_ERR_UNKNOWN);
        }
        if (n < 2)
                return fail(err, KV_ERR_UNKNOWN);
        if (t[1].n > KV_KEY_MAX)
                return fail(err, KV_ERR_FORMAT);
        req->key = t[1].s;
        req->keylen = t[1].n;
        if (req->cmd == KV_MS && n == 2)
                return fail(err, KV_ERR_FORMAT);
        if (n > KV_META_TOKENS)
                return fail(err, req->cmd == KV_MG
                                         ? "CLIENT_ERROR options flags are too long\r\n"
                                         : "CLIENT_ERROR options flags too long\r\n");
        if (req->cmd == KV_MS) {
                /* memcached adds 2 for the "\r\n" to an int. */
                if (!kv__parse_i32(&t[2], &len) || len < 0 || len > INT32_MAX - 2)
                        return fail(err, KV_ERR_FORMAT);
                req->dlen = (size_t)len;
                first = 3;
        }
        bad = read_flags(p, t, first, n, req);
        if (bad && (req->cmd == KV_MD || req->cmd == KV_MA))
                bad = KV_ERR_META_FLAG_OR_DUP;
        if (bad)
                return req->cmd == KV_MS ? fail_ms(p, req, err, bad) : fail(err, bad);
        stop = opaque_too_long(req);
        req->mstop = stop < 0 ? req->nmflags : (uint8_t)stop;
        switch (req->cmd) {
        case KV_MS:
                if (req->mode && !strchr("EAPRS", req->mode))
                        return fail_ms(p, req, err,
                                       "CLIENT_ERROR invalid mode for ms M token\r\n");
                if (stop >= 0)
                        return fail_ms(p, req, err, KV_ERR_META_OPAQUE);
                break;
        case KV_MD:
                if (stop >= 0)
                        return fail(err, KV_ERR_META_OPAQUE);
                break;
        case KV_MA:
                if (req->mode && !strchr("I+D-", req->mode))
                        return fail(err, "CLIENT_ERROR invalid mode for ma M token\r\n");
                /* fall through */
        default: /* mg, ma: refused as the reply is written, after running */
                if (stop >= 0)
                        req->err = KV_ERR_META_OPAQUE;
                break;
        }
        return KV_PARSE_OK;
}

/* ---- replies ------------------------------------------------------------------------- */

static void put_char(struct buf *out, char c)
{
        char b[2] = {' ', c};

        buf_add(out, b, 2);
}

static void put_u64(struct buf *out, uint64_t v)
{
        char num[20];

        buf_add(out, num, (size_t)kv_fmt_u64(num, v));
}

/* " k<key>", in base64 with " b" after it for a binary key. */
static void put_key(struct buf *out, const char *key, size_t klen, bool binary)
{
        char enc[4 * ((KV_KEY_MAX + 2) / 3)];

        put_char(out, 'k');
        if (!binary) {
                buf_add(out, key, klen);
                return;
        }
        buf_add(out, enc, kv_b64_encode(key, klen, enc));
        put_char(out, 'b');
}

/* " t<seconds left>": -1 for none, else as memcached's unsigned 32 bits. */
static void put_ttl(struct buf *out, int64_t ttl)
{
        put_char(out, 't');
        if (ttl == -1)
                buf_add(out, "-1", 2);
        else
                put_u64(out, (uint32_t)ttl);
}

static void put_opaque(struct buf *out, const struct kv_req *r)
{
        buf_add(out, " ", 1);
        buf_add(out, r->mopaque, r->mopaque_len);
}

/* The flags every reply may echo: the opaque, and the request's key. */
static void put_echo(struct buf *out, const struct kv_req *r, char c)
{
        if (c == 'O')
                put_opaque(out, r);
        else if (c == 'k')
                put_key(out, r->key, r->keylen, r->b64);
}

static void end_line(struct buf *out)
{
        buf_add(out, "\r\n", 2);
}

static void mg_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        const struct kv_item *it = res->it;

        if (it == NULL) {
                if (r->quiet)
                        return;
                buf_add(out, "EN", 2);
                for (unsigned i = 0; i < r->nmflags; i++)
                        put_echo(out, r, r->mflags[i]);
                end_line(out);
                return;
        }
        if (kv_req_mflag(r, 'v')) {
                buf_add(out, "VA ", 3);
                put_u64(out, it->vlen);
        } else {
                buf_add(out, "HD", 2);
        }
        for (unsigned i = 0; i < r->nmflags; i++) {
                char c = r->mflags[i];

                switch (c) {
                case 's':
                        put_char(out, 's');
                        put_u64(out, it->vlen);
                        break;
                case 't':
                        put_ttl(out, res->ttl);
                        break;
                case 'c':
                        put_char(out, 'c');
                        put_u64(out, it->cas);
                        break;
                case 'f':
                        put_char(out, 'f');
                        put_u64(out, it->flags);
                        break;
                case 'l':
                        put_char(out, 'l');
                        put_u64(out, (uint32_t)res->la);
                        break;
                case 'h':
                        put_char(out, 'h');
                        buf_add(out, res->fetched ? "1" : "0", 1);
                        break;
                case 'O':
                        put_opaque(out, r);
                        break;
                case 'k': /* the item's key, in base64 if it was stored so */
                        put_key(out, kv_item_key(it), it->klen,
                                (it->iflags & KV_IT_KEY_BINARY) != 0);
                        break;
                default:
                        break;
                }
        }
        if (res->win_sent)
                put_char(out, 'Z');
        if (res->stale)
                put_char(out, 'X');
        if (res->won)
                put_char(out, 'W');
        end_line(out);
        if (kv_req_mflag(r, 'v')) {
                buf_add(out, kv_item_value(it), it->vlen);
                end_line(out);
        }
}

/* The status code of ms, md and ma's outcomes. */
static const char *code_of(enum kv_store_rc rc)
{
        switch (rc) {
        case KV_OK:
        case KV_STORED:
        case KV_DELETED:
                return "HD";
        case KV_NOT_STORED:
                return "NS";
        case KV_EXISTS:
                return "EX";
        default:
                return "NF";
        }
}

static void ms_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        if (res->rc == KV_TOO_LARGE) {
                buf_str(out, KV_ERR_TOO_LARGE);
                return;
        }
        if (res->rc == KV_NO_MEMORY) {
                buf_str(out, "SERVER_ERROR out of memory storing object\r\n");
                return;
        }
        if (res->rc == KV_STORED && r->quiet)
                return;
        buf_str(out, code_of(res->rc));
        for (unsigned i = 0; i < r->nmflags; i++) {
                if (r->mflags[i] == 'c') { /* 0 when nothing was stored */
                        put_char(out, 'c');
                        put_u64(out, res->cas);
                } else {
                        put_echo(out, r, r->mflags[i]);
                }
        }
        end_line(out);
}

static void md_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        if (res->rc == KV_DELETED && r->quiet)
                return;
        buf_str(out, code_of(res->rc));
        for (unsigned i = 0; i < r->nmflags; i++)
                put_echo(out, r, r->mflags[i]);
        end_line(out);
}

/* ma: KV_OK is an incr or decr done, KV_STORED a key created by N (said
 * even when quiet, as memcached). */
static void ma_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        bool value = kv_req_mflag(r, 'v');
        char num[20];
        int n = kv_fmt_u64(num, res->number);

        if (res->rc == KV_NON_NUMERIC) {
                buf_str(out, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
                return;
        }
        if (res->rc == KV_NO_MEMORY) {
                buf_str(out, "SERVER_ERROR out of memory\r\n");
                return;
        }
        /* memcached meets a long opaque while writing the reply: after
         * the errors above, before a quiet success is dropped. */
        if (r->err) {
                buf_str(out, r->err);
                return;
        }
        if (res->rc == KV_OK && r->quiet)
                return;
        if (res->rc != KV_OK && res->rc != KV_STORED) {
                md_reply(r, res, out);
                return;
        }
        if (value) {
                buf_add(out, "VA ", 3);
                put_u64(out, (uint64_t)n);
        } else {
                buf_add(out, "HD", 2);
        }
        for (unsigned i = 0; i < r->nmflags; i++) {
                char c = r->mflags[i];

                if (c == 'c') {
                        put_char(out, 'c');
                        put_u64(out, res->cas);
                } else if (c == 't') {
                        put_ttl(out, res->ttl);
                } else {
                        put_echo(out, r, c);
                }
        }
        end_line(out);
        if (value) {
                buf_add(out, num, (size_t)n);
                end_line(out);
        }
}

/* memcached's slab classes from its defaults: 96 bytes (a 48-byte header
 * and 48 of data), each next 1.25 times larger and rounded up to 8, while
 * that stays under 512 KB / 1.25; then one class of 512 KB, where larger
 * items are chained from. */
#define MC_CHUNK_MIN 96
#define MC_CHUNK_MAX (512 * 1024)

/* me's cls= for an item of kv_mc_item_size() @size. */
static unsigned mc_slab_class(size_t size)
{
        size_t chunk = MC_CHUNK_MIN;
        unsigned cls = 1;

        for (; chunk * 5 <= MC_CHUNK_MAX * 4; cls++) {
                if (size <= chunk)
                        return cls;
                chunk = (chunk * 5 / 4 + 7) & ~(size_t)7;
        }
        return cls;
}

/* ME <key> exp=<-seconds left, -1 never> la=<seconds> cas=<cas> fetch=<yes|no>
 * cls=<class> size=<bytes>: the size and slab class are memcached's for the
 * item (kv_mc_item_size, mc_slab_class), not what pc-kv allocates. */
static void me_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        const struct kv_item *it = res->it;
        char enc[4 * ((KV_KEY_MAX + 2) / 3)];

        (void)r;
        if (it == NULL) {
                buf_str(out, "EN\r\n");
                return;
        }
        buf_add(out, "ME ", 3);
        if (it->iflags & KV_IT_KEY_BINARY)
                buf_add(out, enc, kv_b64_encode(kv_item_key(it), it->klen, enc));
        else
                buf_add(out, kv_item_key(it), it->klen);
        buf_str(out, " exp=");
        if (res->ttl == -1) {
                buf_str(out, "-1");
        } else {
                if (res->ttl > 0)
                        buf_add(out, "-", 1);
                put_u64(out, (uint64_t)(res->ttl > 0 ? res->ttl : -res->ttl));
        }
        buf_str(out, " la=");
        put_u64(out, (uint64_t)res->la);
        buf_str(out, " cas=");
        put_u64(out, it->cas);
        buf_str(out, res->fetched ? " fetch=yes" : " fetch=no");
        buf_str(out, " cls=");
        put_u64(out, mc_slab_class(res->number));
        buf_str(out, " size=");
        put_u64(out, res->number);
        end_line(out);
}

void kv_meta_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out)
{
        switch (r->cmd) {
        case KV_MG:
                if (r->err)
                        buf_str(out, r->err);
                else
                        mg_reply(r, res, out);
                return;
        case KV_MS:
                ms_reply(r, res, out);
                return;
        case KV_MD:
                md_reply(r, res, out);
                return;
        case KV_MA:
                ma_reply(r, res, out);
                return;
        case KV_ME:
                me_reply(r, res, out);
                return;
        default: /* mn */
                buf_str(out, "MN\r\n");
                return;
        }
}
