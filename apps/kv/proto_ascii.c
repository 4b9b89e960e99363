/* SPDX-License-Identifier: MIT */
/*
 * memcached ASCII protocol parser, checked byte for byte against memcached
 * 1.6.18 (tests/apps/kv/test_pc_kv_diff.sh). A command with the wrong number
 * of tokens is "ERROR", a bad number or key is "CLIENT_ERROR bad command
 * line format", incr/decr and touch/gat/flush_all have their own messages
 * for a bad argument. The checks run in memcached's order, and where
 * memcached has already seen "noreply" when it refuses a request, the
 * refusal is silent.
 *
 * memcached reads the line as a C string and splits it on ' ' alone, so a
 * NUL ends the line early and a key is any other bytes up to KV_KEY_MAX
 * long: tabs, control bytes, '\r' and bytes over 0x7f included.
 */
#include "proto_ascii.h"

#include <string.h>

#include "proto_meta.h"
#include "token.h"

/* Tokens a non-get command may have; more makes the line an "ERROR". */
#define MAX_TOKENS 8

static const char *const cmd_names[] = {
        [KV_GET] = "get",         [KV_GETS] = "gets",       [KV_GAT] = "gat",
        [KV_GATS] = "gats",       [KV_SET] = "set",         [KV_ADD] = "add",
        [KV_REPLACE] = "replace", [KV_APPEND] = "append",   [KV_PREPEND] = "prepend",
        [KV_CAS] = "cas",         [KV_DELETE] = "delete",   [KV_INCR] = "incr",
        [KV_DECR] = "decr",       [KV_TOUCH] = "touch",     [KV_FLUSH_ALL] = "flush_all",
        [KV_VERSION] = "version", [KV_VERBOSITY] = "verbosity", [KV_QUIT] = "quit",
        [KV_STATS] = "stats",     [KV_SHUTDOWN] = "shutdown", [KV_CACHE_MEMLIMIT] = "cache_memlimit",
        [KV_MG] = "mg",           [KV_MS] = "ms",           [KV_MD] = "md",
        [KV_MA] = "ma",           [KV_MN] = "mn",           [KV_ME] = "me",
        [KV_NOOP] = "noop",
};

const char *kv_cmd_name(enum kv_cmd cmd)
{
        return (unsigned)cmd < sizeof(cmd_names) / sizeof(cmd_names[0]) ? cmd_names[cmd] : "?";
}

void kv_parser_init(struct kv_parser *p, size_t item_max)
{
        p->item_max = item_max;
        p->swallow = 0;
}

static bool last_is_noreply(const struct kv_tok *t, unsigned n)
{
        return n > 0 && kv__tok_is(&t[n - 1], "noreply");
}

static enum kv_parse_rc fail(const char **err, const char *msg)
{
        *err = msg;
        return KV_PARSE_ERROR;
}

/* An error found once memcached has read noreply: silent if it was set. */
static enum kv_parse_rc refuse(const struct kv_req *req, const char **err,
                               const char *msg)
{
        if (req->noreply)
                return KV_PARSE_SKIP;
        return fail(err, msg);
}

/* get, gets: "get <key>+"; gat, gats: "gat <exptime> <key>*" (no key is
 * an empty reply, "END"). The keys are checked here so the caller can
 * iterate them without a second look; memcached answers a key over
 * KV_KEY_MAX with the error alone, whatever came before it. */
static enum kv_parse_rc parse_get(const char *line, size_t len, const struct kv_tok *cmd,
                                  struct kv_req *req, const char **err)
{
        const char *p = cmd->s + cmd->n, *end = line + len;
        struct kv_tok t;
        size_t pos = 0;
        const char *k;
        size_t kn;

        if (req->cmd == KV_GAT || req->cmd == KV_GATS) {
                while (p < end && *p == ' ')
                        p++;
                t.s = p;
                while (p < end && *p != ' ')
                        p++;
                t.n = (size_t)(p - t.s);
                if (t.n == 0)
                        return fail(err, KV_ERR_UNKNOWN);
                if (!kv__parse_i32(&t, &req->exptime))
                        return fail(err, KV_ERR_EXPTIME);
        }
        req->keys = p;
        req->keys_len = (size_t)(end - p);
        req->nkeys = 0;
        while (kv_req_next_key(req, &pos, &k, &kn)) {
                if (!kv__key_ok(kn))
                        return fail(err, KV_ERR_FORMAT);
                if (req->nkeys == 0) {
                        req->key = k;
                        req->keylen = kn;
                }
                req->nkeys++;
        }
        if (req->nkeys == 0 && req->cmd != KV_GAT && req->cmd != KV_GATS)
                return fail(err, KV_ERR_UNKNOWN);
        return KV_PARSE_OK;
}

bool kv_req_next_key(const struct kv_req *req, size_t *pos, const char **key, size_t *keylen)
{
        size_t i = *pos, start;

        if (req->proto == KV_PROTO_BINARY) {
                /* A binary key is any bytes, spaces included: one key. */
                if (i > 0 || req->keys_len == 0)
                        return false;
                *key = req->keys;
                *keylen = req->keys_len;
                *pos = req->keys_len;
                return true;
        }
        while (i < req->keys_len && req->keys[i] == ' ')
                i++;
        if (i == req->keys_len) {
                *pos = i;
                return false;
        }
        start = i;
        while (i < req->keys_len && req->keys[i] != ' ')
                i++;
        *key = req->keys + start;
        *keylen = i - start;
        *pos = i;
        return true;
}

static const struct {
        const char *name;
        enum kv_cmd cmd;
} cmd_table[] = {
        {"get", KV_GET},         {"gets", KV_GETS},       {"gat", KV_GAT},
        {"gats", KV_GATS},       {"set", KV_SET},         {"add", KV_ADD},
        {"replace", KV_REPLACE}, {"append", KV_APPEND},   {"prepend", KV_PREPEND},
        {"cas", KV_CAS},         {"delete", KV_DELETE},   {"incr", KV_INCR},
        {"decr", KV_DECR},       {"touch", KV_TOUCH},     {"flush_all", KV_FLUSH_ALL},
        {"version", KV_VERSION}, {"verbosity", KV_VERBOSITY}, {"quit", KV_QUIT},
        {"stats", KV_STATS},     {"shutdown", KV_SHUTDOWN},
        {"cache_memlimit", KV_CACHE_MEMLIMIT},
};

static bool lookup(const struct kv_tok *t, enum kv_cmd *cmd)
{
        for (size_t i = 0; i < sizeof(cmd_table) / sizeof(cmd_table[0]); i++)
                if (kv__tok_is(t, cmd_table[i].name)) {
                        *cmd = cmd_table[i].cmd;
                        return true;
                }
        return false;
}

/* "<cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply]": the line's
 * part. Returns OK with req->dlen set, or an error; a refused line leaves
 * its data block to be read as commands, as memcached does. */
static enum kv_parse_rc parse_store_line(const struct kv_tok *t, unsigned n, struct kv_req *req,
                                         const char **err)
{
        unsigned want = req->cmd == KV_CAS ? 6 : 5;
        int64_t bytes;

        if (n != want && n != want + 1)
                return fail(err, KV_ERR_UNKNOWN);
        /* Whatever the token count, a last "noreply" counts: "set k 0 0
         * noreply" is a silent refusal. */
        req->noreply = last_is_noreply(t, n);
        req->key = t[1].s;
        req->keylen = t[1].n;
        if (!kv__key_ok(t[1].n))
                return refuse(req, err, KV_ERR_FORMAT);
        if (!kv__parse_u32(&t[2], &req->flags) || !kv__parse_i32(&t[3], &req->exptime) ||
            !kv__parse_i32(&t[4], &bytes))
                return refuse(req, err, KV_ERR_FORMAT);
        if (req->cmd == KV_CAS && !kv__parse_u64(&t[5], &req->cas))
                return refuse(req, err, KV_ERR_FORMAT);
        /* memcached adds 2 for the "\r\n" to an int. */
        if (bytes < 0 || bytes > INT32_MAX - 2)
                return refuse(req, err, KV_ERR_FORMAT);
        req->dlen = (size_t)bytes;
        return KV_PARSE_OK;
}

/* Inlined into kv_parse(), its one caller: as a call of its own (it grew
 * with the meta commands) it cost every request a frame, ~30 instructions. */
#define PARSE_INLINE inline __attribute__((always_inline))
static PARSE_INLINE enum kv_parse_rc parse_line(struct kv_parser *p, const char *line,
                                                size_t len, struct kv_req *req,
                                                const char **err)
{
        struct kv_tok t[KV_META_TOKENS + 1];
        unsigned n;

        n = kv__tokenize(line, len, t, MAX_TOKENS);
        if (n > 0 && t[0].n == 2 && t[0].s[0] == 'm') {
                /* Every two-byte command starting with 'm' is memcached's
                 * meta family, with its own token limit. */
                n = kv__tokenize(line, len, t, KV_META_TOKENS);
                return kv__meta_parse(p, t, n, req, err);
        }
        if (n == 0 || !lookup(&t[0], &req->cmd))
                return fail(err, KV_ERR_UNKNOWN);
        switch (req->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                return parse_get(line, len, &t[0], req, err);
        case KV_SET:
        case KV_ADD:
        case KV_REPLACE:
        case KV_APPEND:
        case KV_PREPEND:
        case KV_CAS:
                return parse_store_line(t, n, req, err);
        case KV_VERSION:
        case KV_QUIT:
                /* memcached 1.6 ignores whatever follows these two. */
                return KV_PARSE_OK;
        case KV_SHUTDOWN:
                /* "shutdown [graceful]": whether it is allowed (-A) and the
                 * mode are the server's to judge; the mode, if any, in key. */
                req->nkeys = n - 1;
                req->key = n > 1 ? t[1].s : NULL;
                req->keylen = n > 1 ? t[1].n : 0;
                return KV_PARSE_OK;
        case KV_STATS:
                /* The subcommand, if any, is left to the caller in key. */
                req->key = n > 1 ? t[1].s : NULL;
                req->keylen = n > 1 ? t[1].n : 0;
                if (n > 3)
                        return fail(err, KV_ERR_UNKNOWN);
                return KV_PARSE_OK;
        default:
                break;
        }
        if (n > MAX_TOKENS)
                return fail(err, KV_ERR_UNKNOWN);
        req->noreply = last_is_noreply(t, n);
        switch (req->cmd) {
        case KV_DELETE:
                /* "delete <key> [0] [noreply]": memcached still accepts the
                 * legacy zero hold time and nothing else. It looks for
                 * noreply only after the key, so "delete noreply" deletes. */
                if (n < 2 || n > 4)
                        return fail(err, KV_ERR_UNKNOWN);
                if (n == 2) {
                        req->noreply = false;
                } else {
                        bool zero = kv__tok_is(&t[2], "0");

                        if (!(n == 3 ? zero || req->noreply : zero && req->noreply))
                                return refuse(req, err, KV_ERR_DELETE);
                }
                break;
        case KV_INCR:
        case KV_DECR:
                /* A fourth token that is not noreply is ignored. A bad key
                 * is the error even when the number is bad too (below). */
                if (n != 3 && n != 4)
                        return fail(err, KV_ERR_UNKNOWN);
                if (kv__key_ok(t[1].n) && !kv__parse_u64(&t[2], &req->delta))
                        return refuse(req, err, KV_ERR_DELTA);
                break;
        case KV_TOUCH:
                if (n != 3 && n != 4)
                        return fail(err, KV_ERR_UNKNOWN);
                if (kv__key_ok(t[1].n) && !kv__parse_i32(&t[2], &req->exptime))
                        return refuse(req, err, KV_ERR_EXPTIME);
                break;
        case KV_FLUSH_ALL:
                /* The delay is read whenever there is a token besides
                 * noreply: "flush_all 0 x" flushes now. */
                if (n > 3)
                        return fail(err, KV_ERR_UNKNOWN);
                req->delay = 0;
                if (n != (req->noreply ? 2u : 1u) && !kv__parse_i32(&t[1], &req->delay))
                        return refuse(req, err, KV_ERR_EXPTIME);
                return KV_PARSE_OK;
        case KV_VERBOSITY:
                /* "verbosity noreply" is memcached's way to say nothing at
                 * all: its level does not parse, and noreply silences that. */
                if (n != 2 && n != 3)
                        return fail(err, KV_ERR_UNKNOWN);
                if (!kv__parse_u32(&t[1], &req->level))
                        return refuse(req, err, KV_ERR_FORMAT);
                return KV_PARSE_OK;
        case KV_CACHE_MEMLIMIT:
                /* "cache_memlimit <megabytes> [noreply]", in memcached's
                 * words, whose checks of the number come before any shard. */
                if (n != 2 && n != 3)
                        return fail(err, KV_ERR_UNKNOWN);
                if (!kv__parse_u32(&t[1], &req->level))
                        return refuse(req, err, KV_ERR_UNKNOWN);
                if (req->level < 8)
                        return refuse(req, err, "MEMLIMIT_TOO_SMALL cannot set maxbytes to "
                                                "less than 8m\r\n");
                if (req->level > 1000000000)
                        return refuse(req, err, "MEMLIMIT_ADJUST_FAILED input value is "
                                                "megabytes not bytes\r\n");
                return KV_PARSE_OK;
        default:
                return fail(err, KV_ERR_UNKNOWN);
        }
        /* delete, incr, decr, touch: one key, checked before the number. */
        if (!kv__key_ok(t[1].n))
                return refuse(req, err, KV_ERR_FORMAT);
        req->key = t[1].s;
        req->keylen = t[1].n;
        return KV_PARSE_OK;
}

/* The commands a data block follows. */
static bool is_store(enum kv_cmd c)
{
        return (c >= KV_SET && c <= KV_CAS) || c == KV_MS;
}

enum kv_parse_rc kv_parse(struct kv_parser *p, const char *buf, size_t len, struct kv_req *req,
                          size_t *consumed, const char **err)
{
        const char *nl, *nul;
        size_t line_len, scan, total;
        enum kv_parse_rc rc;

        *consumed = 0;
        *err = NULL;
        if (p->swallow) {
                if (len == 0)
                        return KV_PARSE_NEED;
                *consumed = len < p->swallow ? len : p->swallow;
                p->swallow -= *consumed;
                return KV_PARSE_SKIP;
        }
        scan = len < KV_LINE_MAX + 2 ? len : KV_LINE_MAX + 2;
        nl = memchr(buf, '\n', scan);
        if (nl == NULL) {
                if (len >= KV_LINE_MAX + 2) {
                        *err = KV_ERR_LINE_TOO_LONG;
                        return KV_PARSE_CLOSE;
                }
                return KV_PARSE_NEED;
        }
        line_len = (size_t)(nl - buf);
        total = line_len + 1;
        if (line_len > 0 && buf[line_len - 1] == '\r')
                line_len--;
        if (line_len > KV_LINE_MAX) {
                *err = KV_ERR_LINE_TOO_LONG;
                return KV_PARSE_CLOSE;
        }
        /* memcached parses the line as a C string: it ends at a NUL (after
         * the '\r' is gone, so "a\r\0\r\n" is the key "a\r"). */
        nul = memchr(buf, '\0', line_len);
        if (nul != NULL)
                line_len = (size_t)(nul - buf);
        memset(req, 0, KV_REQ_CLASSIC);
        rc = parse_line(p, buf, line_len, req, err);
        if (rc != KV_PARSE_OK || !is_store(req->cmd)) {
                *consumed = total;
                return rc;
        }
        /* A storage command: its data block follows the line. memcached
         * refuses an item over -I bytes, its header counted. */
        if (kv_mc_item_size(req->keylen, req->dlen, req->flags) > p->item_max) {
                /* Skip the value so it is not read as commands. */
                p->swallow = req->dlen + 2;
                *consumed = total;
                req->too_large = true;
                return KV_PARSE_OK;
        }
        if (len - total < req->dlen + 2)
                return KV_PARSE_NEED;
        *consumed = total + req->dlen + 2;
        if (buf[total + req->dlen] != '\r' || buf[total + req->dlen + 1] != '\n')
                return refuse(req, err, KV_ERR_CHUNK);
        req->data = buf + total;
        return KV_PARSE_OK;
}

/* ---- replies ------------------------------------------------------------------------ */

#define LINE(s) {s, sizeof(s) - 1}
/* With their lengths: a set's reply is a table look-up and one copy. */
static const struct {
        const char *s;
        size_t n;
} outcome_lines[] = {
        [KV_STORED] = LINE("STORED\r\n"),
        [KV_NOT_STORED] = LINE("NOT_STORED\r\n"),
        [KV_EXISTS] = LINE("EXISTS\r\n"),
        [KV_NOT_FOUND] = LINE("NOT_FOUND\r\n"),
        [KV_DELETED] = LINE("DELETED\r\n"),
        [KV_TOUCHED] = LINE("TOUCHED\r\n"),
        [KV_NON_NUMERIC] =
                LINE("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
        [KV_NO_MEMORY] = LINE("SERVER_ERROR out of memory storing object\r\n"),
        [KV_TOO_LARGE] = LINE(KV_ERR_TOO_LARGE),
};
#undef LINE

/* "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n", built by hand: this
 * is the hottest reply. Not inlined: its 330-byte line would make every
 * other reply pay for the stack frame. */
static __attribute__((noinline)) void value_block(const struct kv_req *r, const char *key,
                                                  size_t klen, const struct kv_item *it,
                                                  struct buf *out)
{
        char hdr[KV_KEY_MAX + 80]; /* 6 + key + 3 spaces + 3 numbers + \r\n */
        int n;

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

void kv_ascii_reply(const struct kv_req *r, const char *key, size_t klen,
                    const struct kv_result *res, struct buf *out)
{
        char num[24];
        int n;

        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                if (res->it)
                        value_block(r, key, klen, res->it, out);
                return;
        case KV_VERSION:
                buf_str(out, "VERSION " KV_VERSION_STRING "\r\n");
                return;
        case KV_QUIT:
                return;
        default:
                break;
        }
        /* memcached's noreply silences every outcome, errors included. */
        if (r->noreply)
                return;
        switch (r->cmd) {
        case KV_VERBOSITY:
        case KV_FLUSH_ALL:
        case KV_CACHE_MEMLIMIT:
                buf_str(out, "OK\r\n");
                return;
        default:
                break;
        }
        if (res->rc == KV_OK) { /* incr, decr */
                n = kv_fmt_u64(num, res->number);
                num[n++] = '\r';
                num[n++] = '\n';
                buf_add(out, num, (size_t)n);
                return;
        }
        buf_add(out, outcome_lines[res->rc].s, outcome_lines[res->rc].n);
}

void kv_ascii_stat(const char *name, const char *val, size_t vlen, struct buf *out)
{
        buf_str(out, "STAT ");
        buf_str(out, name);
        buf_add(out, " ", 1);
        buf_add(out, val, vlen);
        buf_add(out, "\r\n", 2);
}
