/* SPDX-License-Identifier: MIT */
/* memcached's meta commands without a store: base64 as memcached codes
 * it, each command's line, memcached 1.6.18's error for each refusal and
 * the order it checks in, an ms refused after its length skipping its
 * data, and the replies written from results (flags in the order sent,
 * quiet mode, mg's W/X/Z). tests/apps/kv/test_pc_kv_meta.py compares the
 * same against memcached itself. */
#include <stdio.h>
#include <string.h>

#include "pc_test.h"
#include "proto_ascii.h"
#include "proto_meta.h"

#define ITEM_MAX 1024

static struct kv_parser parser;

static enum kv_parse_rc parse_n(const char *in, size_t len, struct kv_req *r, size_t *used,
                                const char **err)
{
        kv_parser_init(&parser, ITEM_MAX);
        return kv_parse(&parser, in, len, r, used, err);
}

static void expect_ok(const char *in, enum kv_cmd cmd, struct kv_req *r)
{
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse_n(in, strlen(in), r, &used, &err);

        if (rc != KV_PARSE_OK)
                fail_msg("'%s': rc %d err %s", in, rc, err ? err : "-");
        assert_int_equal(r->cmd, cmd);
        assert_int_equal(r->proto, KV_PROTO_META);
        assert_int_equal(used, strlen(in));
}

/* @in is refused with @want; @swallow: the bytes the parser then skips. */
static void expect_err(const char *in, const char *want, size_t swallow)
{
        struct kv_req r;
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse_n(in, strlen(in), &r, &used, &err);

        if (rc != KV_PARSE_ERROR)
                fail_msg("'%s': rc %d, expected an error", in, rc);
        if (strcmp(err, want) != 0)
                fail_msg("'%s': got %s expected %s", in, err, want);
        if (parser.swallow != swallow)
                fail_msg("'%s': swallows %zu, expected %zu", in, parser.swallow, swallow);
}

static bool key_is(const struct kv_req *r, const char *k)
{
        return r->keylen == strlen(k) && memcmp(r->key, k, r->keylen) == 0;
}

static void test_base64(void **state)
{
        char out[64], enc[64];
        static const struct {
                const char *in, *out;
        } ok[] = {
                {"Zm9v", "foo"},    {"YQ==", "a"},  {"YWI=", "ab"},
                {"Z$m9v", "foo"},   /* bytes outside the alphabet are skipped */
                {"YQ==YWJj", "a"},  /* a padded group ends the key */
                {"YWJj\nZGVm", "abcdef"},
        };
        static const char *const bad[] = {"", "$$$", "Zm9", "Zm9v=", "A===", "====", "Zm"};

        (void)state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                size_t n = kv_b64_decode(ok[i].in, strlen(ok[i].in), out);

                if (n != strlen(ok[i].out) || memcmp(out, ok[i].out, n) != 0)
                        fail_msg("'%s' decoded to %zu bytes", ok[i].in, n);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (kv_b64_decode(bad[i], strlen(bad[i]), out) != 0)
                        fail_msg("'%s' taken as base64", bad[i]);
        for (size_t len = 0; len < 40; len++) {
                char raw[40];
                size_t n;

                for (size_t i = 0; i < len; i++)
                        raw[i] = (char)(i * 37 + len);
                n = kv_b64_encode(raw, len, enc);
                assert_int_equal(n, 4 * ((len + 2) / 3));
                if (len)
                        assert_int_equal(kv_b64_decode(enc, n, out), len);
                assert_memory_equal(out, raw, len);
        }
}

static void test_commands(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("mg foo v k f t c s\r\n", KV_MG, &r);
        assert_true(key_is(&r, "foo"));
        assert_int_equal(r.nmflags, 6);
        assert_memory_equal(r.mflags, "vkftcs", 6);
        assert_false(r.quiet);
        expect_ok("mg foo q T30 N-1 R5 O123 u h l\n", KV_MG, &r);
        assert_true(r.quiet && r.vivify);
        assert_int_equal(r.exptime, 30);
        assert_int_equal(r.viv_exptime, -1);
        assert_int_equal(r.recache, 5);
        assert_int_equal(r.mopaque_len, 4);
        assert_memory_equal(r.mopaque, "O123", 4);
        assert_int_equal(r.mstop, r.nmflags);
        assert_null(r.err);
        expect_ok("mg  foo   v  \r\n", KV_MG, &r); /* runs of spaces, as memcached */
        assert_int_equal(r.nmflags, 1);
        expect_ok("mg a\x01\x7f v\r\n", KV_MG, &r); /* any key bytes but ' ' */
        assert_true(key_is(&r, "a\x01\x7f"));

        expect_ok("ms k 5 T100 F7 C12 MA I q c k O9\r\nhello\r\n", KV_MS, &r);
        assert_int_equal(r.dlen, 5);
        assert_memory_equal(r.data, "hello", 5);
        assert_int_equal(r.exptime, 100);
        assert_int_equal(r.flags, 7);
        assert_true(r.has_cas);
        assert_int_equal(r.cas, 12);
        assert_int_equal(r.mode, 'A');
        assert_true(r.quiet && !r.b64);
        expect_ok("ms k 0\r\n\r\n", KV_MS, &r);
        assert_int_equal(r.dlen, 0);
        assert_int_equal(r.mode, 0);

        expect_ok("md k q I T30 C5 k O1\r\n", KV_MD, &r);
        assert_true(r.quiet && r.has_cas);
        expect_ok("ma k\r\n", KV_MA, &r);
        assert_int_equal(r.delta, 1); /* memcached's default delta */
        expect_ok("ma k N0 J10 D3 MD v t c\r\n", KV_MA, &r);
        assert_true(r.vivify);
        assert_int_equal(r.initial, 10);
        assert_int_equal(r.delta, 3);
        assert_int_equal(r.mode, 'D');
        expect_ok("mn\r\n", KV_MN, &r);
        expect_ok("mn anything after\r\n", KV_MN, &r);
        expect_ok("me foo\r\n", KV_ME, &r);
        expect_ok("me foo x y\r\n", KV_ME, &r);
        assert_false(r.b64);
        expect_ok("me Zm9v b\r\n", KV_ME, &r);
        assert_true(r.b64 && key_is(&r, "foo"));
}

static void test_base64_keys(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("mg Zm9v b v\r\n", KV_MG, &r);
        assert_true(r.b64 && key_is(&r, "foo"));
        expect_ok("ms AAEC 1 b\r\nx\r\n", KV_MS, &r);
        assert_int_equal(r.keylen, 3);
        assert_memory_equal(r.key, "\0\1\2", 3);
        expect_err("mg $$$ b\r\n", KV_ERR_META_KEY, 0);
        expect_err("ms Zm9 2 b\r\nhi\r\n", KV_ERR_META_KEY, 4);
        expect_err("md Zm9 b\r\n", KV_ERR_META_FLAG_OR_DUP, 0);
        expect_err("me Zm9 b\r\n", KV_ERR_FORMAT, 0);
}

/* Each refusal in memcached 1.6.18's words and order. */
static void test_errors(void **state)
{
        char line[512];
        int n;

        (void)state;
        expect_err("mg\r\n", KV_ERR_UNKNOWN, 0);
        expect_err("mx foo\r\n", KV_ERR_UNKNOWN, 0);
        expect_err("md\r\n", KV_ERR_UNKNOWN, 0);
        expect_err("me\r\n", KV_ERR_FORMAT, 0);
        expect_err("ms foo\r\n", KV_ERR_FORMAT, 0);
        expect_err("ms foo x\r\n", KV_ERR_FORMAT, 0);
        expect_err("ms foo -1\r\n", KV_ERR_FORMAT, 0);
        expect_err("ms foo 2147483646\r\n", KV_ERR_FORMAT, 0);
        expect_err("mg foo E5\r\n", KV_ERR_META_FLAG, 0); /* no E in 1.6.18 */
        expect_err("mg foo v v\r\n", KV_ERR_META_DUP, 0);
        expect_err("mg foo \x80\r\n", KV_ERR_META_DUP, 0);
        expect_err("mg foo T\r\n", KV_ERR_META_TOKEN, 0);
        expect_err("mg foo Tx\r\n", KV_ERR_META_TOKEN, 0);
        expect_err("mg foo N1x\r\n", KV_ERR_META_TOKEN, 0);
        /* The last bad value names the error; an unknown flag ends the pass. */
        expect_err("mg $$ b Tx\r\n", KV_ERR_META_TOKEN, 0);
        expect_err("mg $$ Tx b\r\n", KV_ERR_META_KEY, 0);
        expect_err("mg foo Tx Z\r\n", KV_ERR_META_FLAG, 0);
        expect_err("ms foo 2 Fx\r\nhi\r\n", KV_ERR_FORMAT, 4);
        expect_err("ms foo 2 Z\r\nhi\r\n", KV_ERR_META_FLAG, 4);
        expect_err("ms foo 2 MX\r\nhi\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n", 4);
        expect_err("ms foo 2 MSS\r\nhi\r\n", "CLIENT_ERROR incorrect length for M token\r\n",
                   4);
        expect_err("ma foo Mx\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n", 0);
        expect_err("ma foo MII\r\n", KV_ERR_META_FLAG_OR_DUP, 0);
        expect_err("ma foo Jx\r\n", KV_ERR_META_FLAG_OR_DUP, 0);
        expect_err("md foo C\r\n", KV_ERR_META_FLAG_OR_DUP, 0);
        expect_err("md foo O123456789012345678901234567890123\r\n", KV_ERR_META_OPAQUE, 0);
        expect_err("ms foo 1 O123456789012345678901234567890123\r\nx\r\n", KV_ERR_META_OPAQUE,
                   3);
        /* A key over 250 bytes is the format error, before anything else. */
        n = snprintf(line, sizeof(line), "ms %0251d 2 Z\r\nhi\r\n", 0);
        assert_true(n > 0);
        expect_err(line, KV_ERR_FORMAT, 0);
        n = snprintf(line, sizeof(line), "mg %0251d Z\r\n", 0);
        expect_err(line, KV_ERR_FORMAT, 0);
        /* 17 flags fit, 18 are too many (ms: 16 after its length). */
        expect_err("mg k a b c d e f g h i j k l m n o p q r\r\n",
                   "CLIENT_ERROR options flags are too long\r\n", 0);
        expect_err("mg k v k f t c s h l u q P L T1 R1 O1 x\r\n", KV_ERR_META_FLAG, 0);
        expect_err("md k a b c d e f g h i j k l m n o p q r\r\n",
                   "CLIENT_ERROR options flags too long\r\n", 0);
        expect_err("ms k 1 a b c d e f g h i j k l m n o p q\r\nx\r\n",
                   "CLIENT_ERROR options flags too long\r\n", 0);
}

/* mg and ma meet a long opaque while they write their reply, after they
 * have run: the request parses, with the error and where the flags stop. */
static void test_late_opaque(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("mg foo T10 O123456789012345678901234567890123 t\r\n", KV_MG, &r);
        assert_int_equal(r.mstop, 1);
        assert_string_equal(r.err, KV_ERR_META_OPAQUE);
        expect_ok("ma foo O123456789012345678901234567890123\r\n", KV_MA, &r);
        assert_int_equal(r.mstop, 0);
        assert_string_equal(r.err, KV_ERR_META_OPAQUE);
        expect_ok("mg foo O1234567890123456789012345678901\r\n", KV_MG, &r); /* 32: fits */
        assert_null(r.err);
}

/* An ms value over the item maximum is refused as a classic set's is. */
static void test_too_large(void **state)
{
        static char in[ITEM_MAX + 64];
        struct kv_req r;
        size_t used;
        const char *err;
        int n = snprintf(in, sizeof(in), "ms big %d T0\r\n", ITEM_MAX + 1);

        (void)state;
        assert_int_equal(parse_n(in, (size_t)n, &r, &used, &err), KV_PARSE_OK);
        assert_int_equal(r.cmd, KV_MS);
        assert_true(r.too_large);
        assert_int_equal(parser.swallow, ITEM_MAX + 3);
        assert_int_equal(parse_n("ms k 2 q\r\nabcd\r\n", 14, &r, &used, &err),
                         KV_PARSE_ERROR);
        assert_string_equal(err, KV_ERR_CHUNK); /* said even with q */
}

/* ---- replies --------------------------------------------------------------------------- */

static union {
        struct kv_item it;
        char bytes[sizeof(struct kv_item) + 16];
} item;

static const struct kv_item *mk_item(const char *key, const char *val, uint32_t flags,
                                     uint64_t cas)
{
        memset(&item, 0, sizeof(item));
        item.it.klen = (uint8_t)strlen(key);
        item.it.vlen = (uint32_t)strlen(val);
        item.it.flags = flags;
        item.it.cas = cas;
        memcpy(item.it.data, key, item.it.klen);
        memcpy(item.it.data + item.it.klen, val, item.it.vlen);
        return &item.it;
}

/* The reply to @line (a @cmd) given @res. */
static void expect_reply(const char *line, enum kv_cmd cmd, const struct kv_result *res,
                         const char *want)
{
        struct buf out = {0};
        struct kv_req r;

        expect_ok(line, cmd, &r);
        kv_meta_reply(&r, res, &out);
        buf_add(&out, "", 1);
        if (out.oom || strcmp(out.p, want) != 0)
                fail_msg("'%s': got '%s' expected '%s'", line, out.p, want);
        buf_free(&out);
}

static void test_replies(void **state)
{
        const struct kv_item *it = mk_item("foo", "hi", 5, 42);
        struct kv_result hit = {.rc = KV_OK, .it = it, .ttl = -1};
        struct kv_result miss = {.rc = KV_NOT_FOUND, .ttl = -1};
        struct kv_result res;
        char want[128];

        (void)state;
        /* mg: the flags in the order sent; q hides a miss only. */
        expect_reply("mg foo v k f t c s\r\n", KV_MG, &hit, "VA 2 kfoo f5 t-1 c42 s2\r\nhi\r\n");
        expect_reply("mg foo s O9 k q\r\n", KV_MG, &hit, "HD s2 O9 kfoo\r\n");
        expect_reply("mg foo\r\n", KV_MG, &hit, "HD\r\n");
        expect_reply("mg foo k O1 v s\r\n", KV_MG, &miss, "EN kfoo O1\r\n");
        expect_reply("mg foo k q\r\n", KV_MG, &miss, "");
        res = hit;
        res.ttl = 30;
        res.fetched = true;
        res.la = 3;
        expect_reply("mg foo h l t\r\n", KV_MG, &res, "HD h1 l3 t30\r\n");
        res.win_sent = res.stale = true;
        expect_reply("mg foo c\r\n", KV_MG, &res, "HD c42 Z X\r\n");
        res.win_sent = res.stale = false;
        res.won = true;
        expect_reply("mg foo c\r\n", KV_MG, &res, "HD c42 W\r\n");
        item.it.iflags = KV_IT_KEY_BINARY;
        expect_reply("mg Zm9v b k\r\n", KV_MG, &hit, "HD kZm9v b\r\n");
        item.it.iflags = 0;
        expect_reply("mg Zm9v b k\r\n", KV_MG, &hit, "HD kfoo\r\n"); /* the item's way */
        expect_reply("mg Zm9v b k\r\n", KV_MG, &miss, "EN kZm9v b\r\n");
        expect_reply("mg foo O123456789012345678901234567890123\r\n", KV_MG, &hit,
                     KV_ERR_META_OPAQUE);

        /* ms: c is the new cas, 0 when nothing was stored. */
        res = (struct kv_result){.rc = KV_STORED, .cas = 7};
        expect_reply("ms foo 2 c k O1\r\nhi\r\n", KV_MS, &res, "HD c7 kfoo O1\r\n");
        expect_reply("ms foo 2 c q\r\nhi\r\n", KV_MS, &res, "");
        res = (struct kv_result){.rc = KV_NOT_STORED};
        expect_reply("ms foo 2 c q\r\nhi\r\n", KV_MS, &res, "NS c0\r\n");
        res.rc = KV_EXISTS;
        expect_reply("ms foo 2\r\nhi\r\n", KV_MS, &res, "EX\r\n");
        res.rc = KV_NOT_FOUND;
        expect_reply("ms foo 2 MS C1\r\nhi\r\n", KV_MS, &res, "NF\r\n");
        res.rc = KV_TOO_LARGE;
        expect_reply("ms foo 2 q\r\nhi\r\n", KV_MS, &res, KV_ERR_TOO_LARGE);

        /* md: q hides HD, not NF or EX. */
        res = (struct kv_result){.rc = KV_DELETED};
        expect_reply("md foo k\r\n", KV_MD, &res, "HD kfoo\r\n");
        expect_reply("md foo q\r\n", KV_MD, &res, "");
        res.rc = KV_NOT_FOUND;
        expect_reply("md foo q O5\r\n", KV_MD, &res, "NF O5\r\n");

        /* ma: VA with the number; a key N created is said even when quiet. */
        res = (struct kv_result){.rc = KV_OK, .number = 11, .cas = 8, .ttl = -1};
        expect_reply("ma n v t c\r\n", KV_MA, &res, "VA 2 t-1 c8\r\n11\r\n");
        expect_reply("ma n q v\r\n", KV_MA, &res, "");
        res.rc = KV_STORED;
        expect_reply("ma n q N0\r\n", KV_MA, &res, "HD\r\n");
        res.rc = KV_NOT_FOUND;
        expect_reply("ma n q k\r\n", KV_MA, &res, "NF kn\r\n");
        res.rc = KV_NON_NUMERIC;
        expect_reply("ma n q\r\n", KV_MA, &res,
                     "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");

        /* me, mn */
        res = (struct kv_result){.rc = KV_OK, .it = it, .ttl = 100, .number = 77};
        snprintf(want, sizeof(want), "ME foo exp=-100 la=0 cas=42 fetch=no cls=1 size=77\r\n");
        expect_reply("me foo\r\n", KV_ME, &res, want);
        expect_reply("me foo\r\n", KV_ME, &miss, "EN\r\n");
        expect_reply("mn\r\n", KV_MN, &miss, "MN\r\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_base64),      cmocka_unit_test(test_commands),
                cmocka_unit_test(test_base64_keys), cmocka_unit_test(test_errors),
                cmocka_unit_test(test_late_opaque), cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_replies),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
