/* SPDX-License-Identifier: MIT */
/*
 * memcached ASCII protocol parser. Error choices follow memcached 1.6's
 * proto_text.c: a command with the wrong number of tokens is "ERROR", a bad
 * number or key is "CLIENT_ERROR bad command line format", incr/decr and
 * touch/gat have their own messages for a bad argument.
 */
#include "proto_ascii.h"

#include <string.h>

/* Tokens a non-get command may have; more makes the line an "ERROR". */
#define MAX_TOKENS 8

struct tok {
        const char *s;
        size_t n;
};

static const char *const cmd_names[] = {
        [KV_GET] = "get",         [KV_GETS] = "gets",       [KV_GAT] = "gat",
        [KV_GATS] = "gats",       [KV_SET] = "set",         [KV_ADD] = "add",
        [KV_REPLACE] = "replace", [KV_APPEND] = "append",   [KV_PREPEND] = "prepend",
        [KV_CAS] = "cas",         [KV_DELETE] = "delete",   [KV_INCR] = "incr",
        [KV_DECR] = "decr",       [KV_TOUCH] = "touch",     [KV_FLUSH_ALL] = "flush_all",
        [KV_VERSION] = "version", [KV_VERBOSITY] = "verbosity", [KV_QUIT] = "quit",
        [KV_STATS] = "stats",
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

static bool tok_is(const struct tok *t, const char *word)
{
        size_t n = strlen(word);

        return t->n == n && memcmp(t->s, word, n) == 0;
}

/* Split on spaces (runs of them count as one), at most @max tokens; returns
 * the count, or max + 1 when there are more. */
static unsigned tokenize(const char *line, size_t len, struct tok *t, unsigned max)
{
        unsigned n = 0;
        size_t i = 0;

        while (i < len) {
                size_t start;

                while (i < len && line[i] == ' ')
                        i++;
                if (i == len)
                        break;
                start = i;
                while (i < len && line[i] != ' ')
                        i++;
                if (n == max)
                        return max + 1;
                t[n].s = line + start;
                t[n].n = i - start;
                n++;
        }
        return n;
}

static bool key_ok(const char *k, size_t n)
{
        if (n == 0 || n > KV_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] == 0x7f)
                        return false;
        return true;
}

/* Digits only, no sign, no spaces, fits in @max. */
static bool parse_u64(const struct tok *t, uint64_t max, uint64_t *out)
{
        uint64_t v = 0;

        if (t->n == 0 || t->n > 20)
                return false;
        for (size_t i = 0; i < t->n; i++) {
                unsigned d = (unsigned char)t->s[i] - '0';

                if (d > 9 || v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        if (v > max)
                return false;
        *out = v;
        return true;
}

/* An optional '-', then digits; in the int32 range as memcached's safe_strtol. */
static bool parse_i32(const struct tok *t, int64_t *out)
{
        struct tok u = *t;
        uint64_t v;
        bool neg = u.n > 0 && u.s[0] == '-';

        if (neg) {
                u.s++;
                u.n--;
        }
        if (!parse_u64(&u, neg ? (uint64_t)INT32_MAX + 1 : INT32_MAX, &v))
                return false;
        *out = neg ? -(int64_t)v : (int64_t)v;
        return true;
}

static bool last_is_noreply(const struct tok *t, unsigned n)
{
        return n > 0 && tok_is(&t[n - 1], "noreply");
}

static enum kv_parse_rc fail(const char **err, const char *msg)
{
        *err = msg;
        return KV_PARSE_ERROR;
}

/* get, gets: "get <key>*"; gat, gats: "gat <exptime> <key>*". The keys
 * are checked here so the caller can iterate them without a second look. */
static enum kv_parse_rc parse_get(const char *line, size_t len, const struct tok *cmd,
                                  struct kv_req *req, const char **err)
{
        const char *p = cmd->s + cmd->n, *end = line + len;
        struct tok t;
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
                if (!parse_i32(&t, &req->exptime))
                        return fail(err, KV_ERR_EXPTIME);
        }
        req->keys = p;
        req->keys_len = (size_t)(end - p);
        req->nkeys = 0;
        while (kv_req_next_key(req, &pos, &k, &kn)) {
                if (!key_ok(k, kn))
                        return fail(err, KV_ERR_FORMAT);
                if (req->nkeys == 0) {
                        req->key = k;
                        req->keylen = kn;
                }
                req->nkeys++;
        }
        if (req->nkeys == 0)
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
        {"stats", KV_STATS},
};

static bool lookup(const struct tok *t, enum kv_cmd *cmd)
{
        for (size_t i = 0; i < sizeof(cmd_table) / sizeof(cmd_table[0]); i++)
                if (tok_is(t, cmd_table[i].name)) {
                        *cmd = cmd_table[i].cmd;
                        return true;
                }
        return false;
}

/* "<cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply]": the line's
 * part. Returns OK with req->dlen set, or an error. */
static enum kv_parse_rc parse_store_line(const struct tok *t, unsigned n, struct kv_req *req,
                                         const char **err)
{
        unsigned want = req->cmd == KV_CAS ? 6 : 5;
        uint64_t v;
        int64_t bytes;

        if (n != want && n != want + 1)
                return fail(err, KV_ERR_UNKNOWN);
        req->noreply = n == want + 1 && last_is_noreply(t, n);
        if (!parse_u64(&t[2], UINT32_MAX, &v) || !parse_i32(&t[3], &req->exptime) ||
            !parse_i32(&t[4], &bytes) || bytes < 0)
                return fail(err, KV_ERR_FORMAT);
        req->flags = (uint32_t)v;
        req->dlen = (size_t)bytes;
        if (req->cmd == KV_CAS && !parse_u64(&t[5], UINT64_MAX, &req->cas))
                return fail(err, KV_ERR_FORMAT);
        req->key = t[1].s;
        req->keylen = t[1].n;
        return KV_PARSE_OK;
}

static enum kv_parse_rc parse_line(const char *line, size_t len, struct kv_req *req,
                                   const char **err)
{
        struct tok t[MAX_TOKENS];
        unsigned n;
        uint64_t v;

        n = tokenize(line, len, t, MAX_TOKENS);
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
                return parse_store_line(t, n, req, err); /* caller checks the key */
        default:
                break;
        }
        if (n > MAX_TOKENS)
                return fail(err, KV_ERR_UNKNOWN);
        req->noreply = last_is_noreply(t, n);
        switch (req->cmd) {
        case KV_DELETE:
                /* "delete <key> [0] [noreply]": memcached still accepts the
                 * legacy zero hold time and nothing else. */
                if (n < 2)
                        return fail(err, KV_ERR_UNKNOWN);
                if (n - req->noreply > 3 || (n - req->noreply == 3 && !tok_is(&t[2], "0")))
                        return fail(err, KV_ERR_DELETE);
                break;
        case KV_INCR:
        case KV_DECR:
                if (n != 3 && !(n == 4 && req->noreply))
                        return fail(err, KV_ERR_UNKNOWN);
                if (!parse_u64(&t[2], UINT64_MAX, &req->delta))
                        return fail(err, KV_ERR_DELTA);
                break;
        case KV_TOUCH:
                if (n != 3 && !(n == 4 && req->noreply))
                        return fail(err, KV_ERR_UNKNOWN);
                if (!parse_i32(&t[2], &req->exptime))
                        return fail(err, KV_ERR_EXPTIME);
                break;
        case KV_FLUSH_ALL:
                if (n - req->noreply > 2)
                        return fail(err, KV_ERR_UNKNOWN);
                req->delay = 0;
                if (n - req->noreply == 2 && !parse_i32(&t[1], &req->delay))
                        return fail(err, KV_ERR_FORMAT);
                return KV_PARSE_OK;
        case KV_VERBOSITY:
                /* "verbosity noreply" is memcached's way to say nothing at all:
                 * its bad level is an error that noreply silences. */
                if (n == 2 && req->noreply)
                        return KV_PARSE_OK;
                if (n - req->noreply != 2)
                        return fail(err, KV_ERR_UNKNOWN);
                if (!parse_u64(&t[1], UINT32_MAX, &v))
                        return fail(err, KV_ERR_FORMAT);
                req->level = (uint32_t)v;
                return KV_PARSE_OK;
        case KV_VERSION:
        case KV_QUIT:
                /* memcached 1.6 ignores whatever follows these two. */
                req->noreply = false;
                return KV_PARSE_OK;
        case KV_STATS:
                /* The subcommand, if any, is left to the caller in key. */
                req->noreply = false;
                req->key = n > 1 ? t[1].s : NULL;
                req->keylen = n > 1 ? t[1].n : 0;
                if (n > 3)
                        return fail(err, KV_ERR_UNKNOWN);
                return KV_PARSE_OK;
        default:
                return fail(err, KV_ERR_UNKNOWN);
        }
        /* delete, incr, decr, touch: one key. */
        if (!key_ok(t[1].s, t[1].n))
                return fail(err, KV_ERR_FORMAT);
        req->key = t[1].s;
        req->keylen = t[1].n;
        return KV_PARSE_OK;
}

static bool is_store(enum kv_cmd c)
{
        return c >= KV_SET && c <= KV_CAS;
}

enum kv_parse_rc kv_parse(struct kv_parser *p, const char *buf, size_t len, struct kv_req *req,
                          size_t *consumed, const char **err)
{
        const char *nl;
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
        memset(req, 0, sizeof(*req));
        rc = parse_line(buf, line_len, req, err);
        if (rc != KV_PARSE_OK || !is_store(req->cmd)) {
                *consumed = total;
                return rc;
        }
        /* A storage command: its data block follows the line. */
        if (req->dlen > p->item_max || !key_ok(req->key, req->keylen)) {
                /* Skip the value so it is not read as commands. */
                p->swallow = req->dlen + 2;
                *consumed = total;
                if (!key_ok(req->key, req->keylen))
                        return fail(err, KV_ERR_FORMAT);
                req->too_large = true;
                return KV_PARSE_OK;
        }
        if (len - total < req->dlen + 2)
                return KV_PARSE_NEED;
        *consumed = total + req->dlen + 2;
        if (buf[total + req->dlen] != '\r' || buf[total + req->dlen + 1] != '\n')
                return fail(err, KV_ERR_CHUNK);
        req->data = buf + total;
        return KV_PARSE_OK;
}
