/* SPDX-License-Identifier: MIT */
/* The memcached binary parser: every opcode and its quiet variant, each
 * refusal and its status, oversized values skipped across calls, and a
 * pipelined stream fed a byte at a time parsing as the whole stream does. */
#include <stdio.h>
#include <string.h>

#include "pc_test.h"
#include "proto_bin.h"

#define ITEM_MAX 64
/* The parser's limit counts memcached's item header: ITEM_MAX is the
 * largest value of a one-byte key with flags. */
#define PARSER_MAX kv_mc_item_size(1, ITEM_MAX, 1)

struct frame {
        uint8_t magic;
        uint8_t op;
        const void *ext;
        uint8_t extlen;
        const char *key;
        size_t keylen;
        const char *val;
        size_t vlen;
        uint32_t opaque;
        uint64_t cas;
};

static void be(unsigned char *b, uint64_t v, int n)
{
        for (int i = n - 1; i >= 0; i--, v >>= 8)
                b[i] = (unsigned char)v;
}

/* Encode @f (with lengths taken from the strings when not given) at @out. */
static size_t encode(char *out, struct frame f)
{
        unsigned char *b = (unsigned char *)out;
        size_t klen = f.key && !f.keylen ? strlen(f.key) : f.keylen;
        size_t vlen = f.val && !f.vlen ? strlen(f.val) : f.vlen;

        memset(b, 0, KV_BIN_HDR_LEN);
        b[0] = f.magic ? f.magic : KV_BIN_MAGIC_REQ;
        b[1] = f.op;
        be(b + 2, klen, 2);
        b[4] = f.extlen;
        be(b + 8, f.extlen + klen + vlen, 4);
        be(b + 12, f.opaque, 4);
        be(b + 16, f.cas, 8);
        if (f.extlen)
                memcpy(b + 24, f.ext, f.extlen);
        if (klen)
                memcpy(b + 24 + f.extlen, f.key, klen);
        if (vlen && f.val)
                memcpy(b + 24 + f.extlen + klen, f.val, vlen);
        return 24 + f.extlen + klen + vlen;
}

static char fbuf[8192];
static struct kv_parser parser;

static enum kv_parse_rc parse1(struct frame f, struct kv_req *r, size_t *used,
                               uint16_t *st, size_t *flen)
{
        *flen = encode(fbuf, f);
        kv_parser_init(&parser, PARSER_MAX);
        return kv_bin_parse(&parser, fbuf, *flen, r, used, st);
}

static void expect_ok(struct frame f, enum kv_cmd cmd, struct kv_req *r)
{
        size_t used, flen;
        uint16_t st;
        enum kv_parse_rc rc = parse1(f, r, &used, &st, &flen);

        if (rc != KV_PARSE_OK)
                fail_msg("opcode 0x%02x: rc %d status 0x%04x", f.op, rc, st);
        assert_int_equal(r->cmd, cmd);
        assert_int_equal(r->proto, KV_PROTO_BINARY);
        assert_int_equal(r->opcode, f.op);
        assert_int_equal(r->opaque, f.opaque);
        assert_true(r->cas == f.cas);
        assert_false(r->noreply);
        assert_int_equal(used, flen);
        assert_int_equal(parser.swallow, 0);
}

static void expect_err(struct frame f, uint16_t want)
{
        struct kv_req r;
        size_t used, flen;
        uint16_t st;
        enum kv_parse_rc rc = parse1(f, &r, &used, &st, &flen);

        if (rc != KV_PARSE_ERROR)
                fail_msg("opcode 0x%02x: rc %d, expected an error", f.op, rc);
        if (st != want)
                fail_msg("opcode 0x%02x: status 0x%04x, expected 0x%04x", f.op, st, want);
        assert_int_equal(r.opcode, f.op);
        assert_int_equal(r.opaque, f.opaque);
        assert_int_equal(used, flen);
        assert_int_equal(parser.swallow, 0);
}

static bool key_is(const struct kv_req *r, const char *k)
{
        return r->keylen == strlen(k) && memcmp(r->key, k, r->keylen) == 0;
}

static void test_get_family(void **state)
{
        static const struct {
                uint8_t op;
                bool quiet, want_key;
        } ops[] = {
                {KV_BIN_OP_GET, false, false},
                {KV_BIN_OP_GETQ, true, false},
                {KV_BIN_OP_GETK, false, true},
                {KV_BIN_OP_GETKQ, true, true},
        };
        struct kv_req r;
        size_t pos = 0, kn;
        const char *k;

        (void)state;
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
                expect_ok((struct frame){.op = ops[i].op, .key = "foo", .opaque = 0xdeadbeef},
                          KV_GET, &r);
                assert_true(key_is(&r, "foo"));
                assert_int_equal(r.quiet, ops[i].quiet);
                assert_int_equal(r.want_key, ops[i].want_key);
                assert_int_equal(r.nkeys, 1);
                assert_ptr_equal(r.keys, r.key);
                assert_int_equal(r.keys_len, 3);
        }
        /* A binary key may hold spaces; it is still one key. */
        expect_ok((struct frame){.op = KV_BIN_OP_GET, .key = "a b\x01"}, KV_GET, &r);
        assert_true(kv_req_next_key(&r, &pos, &k, &kn));
        assert_int_equal(kn, 4);
        assert_memory_equal(k, "a b\x01", 4);
        assert_false(kv_req_next_key(&r, &pos, &k, &kn));
        /* A key of exactly KV_KEY_MAX bytes. */
        memset(fbuf + 4096, 'k', KV_KEY_MAX);
        expect_ok((struct frame){.op = KV_BIN_OP_GET, .key = fbuf + 4096, .keylen = KV_KEY_MAX},
                  KV_GET, &r);
        assert_int_equal(r.keylen, KV_KEY_MAX);
}

static void test_storage(void **state)
{
        static const struct {
                uint8_t op;
                enum kv_cmd cmd;
                bool quiet;
        } ops[] = {
                {KV_BIN_OP_SET, KV_SET, false},         {KV_BIN_OP_SETQ, KV_SET, true},
                {KV_BIN_OP_ADD, KV_ADD, false},         {KV_BIN_OP_ADDQ, KV_ADD, true},
                {KV_BIN_OP_REPLACE, KV_REPLACE, false}, {KV_BIN_OP_REPLACEQ, KV_REPLACE, true},
        };
        unsigned char ext[8];
        struct kv_req r;

        (void)state;
        be(ext, 0xcafef00d, 4);
        be(ext + 4, 0xfffffff0, 4);
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
                struct frame f = {.op = ops[i].op, .ext = ext, .extlen = 8, .key = "k",
                                  .val = "hello", .opaque = (uint32_t)i};

                expect_ok(f, ops[i].cmd, &r);
                assert_true(key_is(&r, "k"));
                assert_int_equal(r.flags, 0xcafef00d);
                assert_true(r.exptime == 0xfffffff0); /* unsigned, as memcached */
                assert_int_equal(r.dlen, 5);
                assert_memory_equal(r.data, "hello", 5);
                assert_int_equal(r.quiet, ops[i].quiet);
                assert_false(r.too_large);
                /* With a cas it is a compare-and-swap of that command. */
                f.cas = 0x0102030405060708ull;
                expect_ok(f, KV_CAS, &r);
                assert_int_equal(r.base_cmd, ops[i].cmd);
                assert_true(r.cas == 0x0102030405060708ull);
                assert_int_equal(r.quiet, ops[i].quiet);
        }
        /* An empty value; a value of exactly item_max. */
        expect_ok((struct frame){.op = KV_BIN_OP_SET, .ext = ext, .extlen = 8, .key = "k"},
                  KV_SET, &r);
        assert_int_equal(r.dlen, 0);
        memset(fbuf + 4096, 'v', ITEM_MAX);
        expect_ok((struct frame){.op = KV_BIN_OP_SET, .ext = ext, .extlen = 8, .key = "k",
                                 .val = fbuf + 4096, .vlen = ITEM_MAX},
                  KV_SET, &r);
        assert_int_equal(r.dlen, ITEM_MAX);

        expect_ok((struct frame){.op = KV_BIN_OP_APPEND, .key = "k", .val = "xy", .cas = 7},
                  KV_APPEND, &r);
        assert_int_equal(r.dlen, 2);
        assert_memory_equal(r.data, "xy", 2);
        assert_true(r.cas == 7);
        expect_ok((struct frame){.op = KV_BIN_OP_APPENDQ, .key = "k", .val = "xy"}, KV_APPEND,
                  &r);
        assert_true(r.quiet);
        expect_ok((struct frame){.op = KV_BIN_OP_PREPEND, .key = "k", .val = "z"}, KV_PREPEND,
                  &r);
        assert_false(r.quiet);
        expect_ok((struct frame){.op = KV_BIN_OP_PREPENDQ, .key = "k", .val = "z"},
                  KV_PREPEND, &r);
        assert_true(r.quiet);
}

static void test_delete_arith(void **state)
{
        unsigned char ext[20];
        struct kv_req r;

        (void)state;
        expect_ok((struct frame){.op = KV_BIN_OP_DELETE, .key = "gone", .cas = 9}, KV_DELETE,
                  &r);
        assert_true(key_is(&r, "gone"));
        assert_true(r.cas == 9);
        expect_ok((struct frame){.op = KV_BIN_OP_DELETEQ, .key = "gone"}, KV_DELETE, &r);
        assert_true(r.quiet);

        be(ext, UINT64_MAX, 8);
        be(ext + 8, 42, 8);
        be(ext + 16, 100, 4);
        expect_ok((struct frame){.op = KV_BIN_OP_INCR, .ext = ext, .extlen = 20, .key = "n"},
                  KV_INCR, &r);
        assert_true(r.delta == UINT64_MAX);
        assert_true(r.initial == 42);
        assert_int_equal(r.exptime, 100);
        assert_true(r.vivify);
        assert_false(r.quiet);
        expect_ok((struct frame){.op = KV_BIN_OP_INCRQ, .ext = ext, .extlen = 20, .key = "n"},
                  KV_INCR, &r);
        assert_true(r.quiet);
        be(ext + 16, 0xffffffff, 4);
        expect_ok((struct frame){.op = KV_BIN_OP_DECR, .ext = ext, .extlen = 20, .key = "n"},
                  KV_DECR, &r);
        assert_false(r.vivify);
        expect_ok((struct frame){.op = KV_BIN_OP_DECRQ, .ext = ext, .extlen = 20, .key = "n"},
                  KV_DECR, &r);
        assert_true(r.quiet && !r.vivify);
}

static void test_other_commands(void **state)
{
        static const struct {
                uint8_t op;
                bool quiet, want_key;
        } gats[] = {
                {KV_BIN_OP_GAT, false, false},
                {KV_BIN_OP_GATQ, true, false},
                {KV_BIN_OP_GATK, false, true},
                {KV_BIN_OP_GATKQ, true, true},
        };
        unsigned char ext[4];
        struct kv_req r;

        (void)state;
        expect_ok((struct frame){.op = KV_BIN_OP_QUIT}, KV_QUIT, &r);
        assert_false(r.quiet);
        expect_ok((struct frame){.op = KV_BIN_OP_QUITQ}, KV_QUIT, &r);
        assert_true(r.quiet);
        expect_ok((struct frame){.op = KV_BIN_OP_NOOP, .opaque = 77}, KV_NOOP, &r);
        expect_ok((struct frame){.op = KV_BIN_OP_VERSION}, KV_VERSION, &r);

        expect_ok((struct frame){.op = KV_BIN_OP_FLUSH}, KV_FLUSH_ALL, &r);
        assert_int_equal(r.delay, 0);
        be(ext, 30, 4);
        expect_ok((struct frame){.op = KV_BIN_OP_FLUSHQ, .ext = ext, .extlen = 4}, KV_FLUSH_ALL,
                  &r);
        assert_int_equal(r.delay, 30);
        assert_true(r.quiet);

        expect_ok((struct frame){.op = KV_BIN_OP_STAT}, KV_STATS, &r);
        assert_null(r.key);
        assert_int_equal(r.keylen, 0);
        expect_ok((struct frame){.op = KV_BIN_OP_STAT, .key = "settings"}, KV_STATS, &r);
        assert_true(key_is(&r, "settings"));

        be(ext, 3, 4);
        expect_ok((struct frame){.op = KV_BIN_OP_VERBOSITY, .ext = ext, .extlen = 4},
                  KV_VERBOSITY, &r);
        assert_int_equal(r.level, 3);

        be(ext, 0x80000000u, 4);
        expect_ok((struct frame){.op = KV_BIN_OP_TOUCH, .ext = ext, .extlen = 4, .key = "t"},
                  KV_TOUCH, &r);
        assert_true(key_is(&r, "t"));
        assert_true(r.exptime == 0x80000000ll);
        for (size_t i = 0; i < sizeof(gats) / sizeof(gats[0]); i++) {
                expect_ok((struct frame){.op = gats[i].op, .ext = ext, .extlen = 4, .key = "g"},
                          KV_GAT, &r);
                assert_true(key_is(&r, "g"));
                assert_int_equal(r.nkeys, 1);
                assert_int_equal(r.keys_len, 1);
                assert_true(r.exptime == 0x80000000ll);
                assert_int_equal(r.quiet, gats[i].quiet);
                assert_int_equal(r.want_key, gats[i].want_key);
        }
}

static void test_invalid(void **state)
{
        unsigned char ext[20] = {0};
        static char longkey[KV_KEY_MAX + 1];

        (void)state;
        memset(longkey, 'k', sizeof(longkey));
        /* get family: key required, no extras, no value. */
        expect_err((struct frame){.op = KV_BIN_OP_GET}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_GETQ, .ext = ext, .extlen = 4, .key = "k",
                                  .opaque = 5},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_GETK, .key = "k", .val = "v"}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_GET, .key = longkey, .keylen = KV_KEY_MAX + 1},
                   KV_BIN_EINVAL);
        /* storage: 8 bytes of extras (none for append/prepend), a key. */
        expect_err((struct frame){.op = KV_BIN_OP_SET, .key = "k", .val = "v"}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_ADD, .ext = ext, .extlen = 8, .val = "v"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_REPLACEQ, .ext = ext, .extlen = 4, .key = "k"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_APPEND, .ext = ext, .extlen = 8, .key = "k"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_PREPENDQ, .val = "v"}, KV_BIN_EINVAL);
        /* delete: a key only. */
        expect_err((struct frame){.op = KV_BIN_OP_DELETE, .key = "k", .val = "v"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_DELETE, .ext = ext, .extlen = 4, .key = "k"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_DELETEQ}, KV_BIN_EINVAL);
        /* incr/decr: 20 bytes of extras, a key, no value. */
        expect_err((struct frame){.op = KV_BIN_OP_INCR, .ext = ext, .extlen = 8, .key = "n"},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_DECR, .ext = ext, .extlen = 20},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_INCRQ, .ext = ext, .extlen = 20, .key = "n",
                                  .val = "1"},
                   KV_BIN_EINVAL);
        /* no-argument commands take nothing. */
        expect_err((struct frame){.op = KV_BIN_OP_NOOP, .key = "k"}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_VERSION, .ext = ext, .extlen = 4},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_QUIT, .val = "x"}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_QUITQ, .key = "k"}, KV_BIN_EINVAL);
        /* flush: 0 or 4 bytes of extras, nothing else. */
        expect_err((struct frame){.op = KV_BIN_OP_FLUSH, .ext = ext, .extlen = 8},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_FLUSHQ, .key = "k"}, KV_BIN_EINVAL);
        /* stat: no extras, no value. */
        expect_err((struct frame){.op = KV_BIN_OP_STAT, .ext = ext, .extlen = 4},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_STAT, .key = "items", .val = "x"},
                   KV_BIN_EINVAL);
        /* verbosity: 4 bytes of extras only. */
        expect_err((struct frame){.op = KV_BIN_OP_VERBOSITY}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_VERBOSITY, .ext = ext, .extlen = 4,
                                  .key = "k"},
                   KV_BIN_EINVAL);
        /* touch, gat: 4 bytes of extras, a key, no value. */
        expect_err((struct frame){.op = KV_BIN_OP_TOUCH, .ext = ext, .extlen = 4},
                   KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_GAT, .key = "k"}, KV_BIN_EINVAL);
        expect_err((struct frame){.op = KV_BIN_OP_GATKQ, .ext = ext, .extlen = 4, .key = "k",
                                  .val = "v"},
                   KV_BIN_EINVAL);
        /* Unknown opcodes, with and without a body; the key limit comes first. */
        expect_err((struct frame){.op = 0x1f, .opaque = 0x01020304}, KV_BIN_UNKNOWN);
        expect_err((struct frame){.op = 0x20, .ext = ext, .extlen = 3, .key = "k", .val = "v"},
                   KV_BIN_UNKNOWN);
        expect_err((struct frame){.op = 0x25}, KV_BIN_UNKNOWN);
        expect_err((struct frame){.op = 0xff, .val = "body"}, KV_BIN_UNKNOWN);
        expect_err((struct frame){.op = 0x30, .key = longkey, .keylen = KV_KEY_MAX + 1},
                   KV_BIN_EINVAL);
}

/* A refused frame whose body has not all arrived: the rest is skipped. */
static void test_refused_partial(void **state)
{
        struct kv_req r;
        size_t used, flen;
        uint16_t st;

        (void)state;
        flen = encode(fbuf, (struct frame){.op = 0x40, .val = "0123456789"});
        kv_parser_init(&parser, PARSER_MAX);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 30, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_UNKNOWN);
        assert_int_equal(used, 30);
        assert_int_equal(parser.swallow, flen - 30);
        assert_int_equal(kv_bin_parse(&parser, fbuf + 30, 0, &r, &used, &st), KV_PARSE_NEED);
        assert_int_equal(kv_bin_parse(&parser, fbuf + 30, 3, &r, &used, &st), KV_PARSE_SKIP);
        assert_int_equal(used, 3);
        /* The next frame right behind the skipped bytes. */
        encode(fbuf + flen, (struct frame){.op = KV_BIN_OP_NOOP});
        assert_int_equal(kv_bin_parse(&parser, fbuf + 33, flen - 33 + 24, &r, &used, &st),
                         KV_PARSE_SKIP);
        assert_int_equal(used, flen - 33);
        assert_int_equal(kv_bin_parse(&parser, fbuf + flen, 24, &r, &used, &st), KV_PARSE_OK);
        assert_int_equal(r.cmd, KV_NOOP);
}

static void test_too_large(void **state)
{
        static char val[4096];
        unsigned char ext[8];
        struct kv_req r;
        size_t used, flen, off;
        uint16_t st;
        enum kv_parse_rc rc;
        unsigned skips = 0;

        (void)state;
        be(ext, 1, 4);
        be(ext + 4, 2, 4);
        memset(val, 'v', sizeof(val));
        flen = encode(fbuf, (struct frame){.op = KV_BIN_OP_SET, .ext = ext, .extlen = 8,
                                           .key = "big", .val = val, .vlen = ITEM_MAX + 1,
                                           .opaque = 99});
        encode(fbuf + flen, (struct frame){.op = KV_BIN_OP_GET, .key = "after"});
        kv_parser_init(&parser, PARSER_MAX);
        /* Refused only once the key has arrived, not before. */
        for (size_t n = 0; n < 24 + 8 + 3; n++)
                assert_int_equal(kv_bin_parse(&parser, fbuf, n, &r, &used, &st), KV_PARSE_NEED);
        rc = kv_bin_parse(&parser, fbuf, 24 + 8 + 3, &r, &used, &st);
        assert_int_equal(rc, KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_E2BIG);
        assert_int_equal(used, 24 + 8 + 3);
        assert_int_equal(parser.swallow, ITEM_MAX + 1);
        assert_int_equal(r.cmd, KV_SET);
        assert_true(r.too_large);
        assert_true(key_is(&r, "big"));
        assert_int_equal(r.flags, 1);
        assert_int_equal(r.exptime, 2);
        assert_int_equal(r.opaque, 99);
        assert_null(r.data);
        /* The value goes a few bytes at a time, then the next request parses. */
        off = used;
        while (parser.swallow) {
                assert_int_equal(kv_bin_parse(&parser, fbuf + off, 7, &r, &used, &st),
                                 KV_PARSE_SKIP);
                assert_true(used <= 7);
                off += used;
                skips++;
        }
        assert_int_equal(off, flen);
        assert_int_equal(skips, (ITEM_MAX + 1 + 6) / 7);
        assert_int_equal(kv_bin_parse(&parser, fbuf + off, 24 + 5, &r, &used, &st), KV_PARSE_OK);
        assert_true(key_is(&r, "after"));

        /* Whole frame at once: consumed covers it all, nothing to skip. */
        kv_parser_init(&parser, PARSER_MAX);
        assert_int_equal(kv_bin_parse(&parser, fbuf, flen, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(used, flen);
        assert_int_equal(parser.swallow, 0);

        /* A value far beyond item_max, as a cas and as an append. */
        flen = encode(fbuf, (struct frame){.op = KV_BIN_OP_SETQ, .ext = ext, .extlen = 8,
                                           .key = "k", .val = val, .vlen = sizeof(val),
                                           .cas = 5});
        assert_int_equal(kv_bin_parse(&parser, fbuf, flen, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_E2BIG);
        assert_int_equal(r.cmd, KV_CAS);
        assert_int_equal(r.base_cmd, KV_SET);
        assert_true(r.quiet);
        flen = encode(fbuf, (struct frame){.op = KV_BIN_OP_APPEND, .key = "k", .val = val,
                                           .vlen = ITEM_MAX + 5}); /* flags 0: 4 more */
        assert_int_equal(kv_bin_parse(&parser, fbuf, flen, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_E2BIG);
        assert_int_equal(r.cmd, KV_APPEND);
}

static void test_close(void **state)
{
        unsigned char *b = (unsigned char *)fbuf;
        struct kv_req r;
        size_t used, flen;
        uint16_t st;

        (void)state;
        kv_parser_init(&parser, PARSER_MAX);
        /* Not a request magic: closed on the first byte, nothing to send. */
        assert_int_equal(kv_bin_parse(&parser, "get k\r\n", 7, &r, &used, &st), KV_PARSE_CLOSE);
        assert_int_equal(st, KV_BIN_OK);
        assert_int_equal(used, 0);
        flen = encode(fbuf, (struct frame){.magic = KV_BIN_MAGIC_RES, .op = KV_BIN_OP_NOOP});
        assert_int_equal(kv_bin_parse(&parser, fbuf, 1, &r, &used, &st), KV_PARSE_CLOSE);
        assert_int_equal(kv_bin_parse(&parser, fbuf, flen, &r, &used, &st), KV_PARSE_CLOSE);

        /* Extras and key longer than the body. */
        encode(fbuf, (struct frame){.op = KV_BIN_OP_GET, .key = "key", .opaque = 3});
        be(b + 8, 2, 4);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_CLOSE);
        assert_int_equal(st, KV_BIN_UNKNOWN);
        assert_int_equal(r.opaque, 3);
        encode(fbuf, (struct frame){.op = KV_BIN_OP_FLUSH});
        b[4] = 4;
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_CLOSE);

        /* A body no non-storage request could have, decided on the header. */
        encode(fbuf, (struct frame){.op = KV_BIN_OP_GET, .key = "k"});
        be(b + 8, PARSER_MAX + KV_BIN_BODY_SLACK + 1, 4);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_CLOSE);
        assert_int_equal(st, KV_BIN_EINVAL);
        b[1] = 0x77; /* unknown opcodes too */
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_CLOSE);
        be(b + 8, 0xffffffff, 4);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_CLOSE);
        /* Just under the limit it is an ordinary refusal. */
        be(b + 8, ITEM_MAX + KV_BIN_BODY_SLACK, 4);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 24, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_UNKNOWN);
        assert_int_equal(parser.swallow, ITEM_MAX + KV_BIN_BODY_SLACK);

        /* A storage frame that long is a value too large, not a closed stream. */
        kv_parser_init(&parser, PARSER_MAX);
        encode(fbuf, (struct frame){.op = KV_BIN_OP_SET, .ext = "\0\0\0\0\0\0\0\0", .extlen = 8,
                                    .key = "k"});
        be(b + 8, 0xffffffff, 4);
        assert_int_equal(kv_bin_parse(&parser, fbuf, 33, &r, &used, &st), KV_PARSE_ERROR);
        assert_int_equal(st, KV_BIN_E2BIG);
        assert_int_equal(used, 33);
        assert_true(parser.swallow == 0xffffffffull + 24 - 33);
}

static void test_header(void **state)
{
        static const unsigned char want[24] = {
                0x81, 0x0c, 0x00, 0x03, 0x04, 0x00, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03,
                0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        };
        char out[KV_BIN_HDR_LEN];
        struct kv_req r;
        size_t used, flen;
        uint16_t st;

        (void)state;
        kv_bin_put_header(out, KV_BIN_OP_GETK, 3, 4, KV_BIN_ENOENT, 0x010203, 0xdeadbeef,
                          0x0102030405060708ull);
        assert_memory_equal(out, want, sizeof(want));
        /* The opaque a request carried goes back byte for byte. */
        flen = encode(fbuf, (struct frame){.op = KV_BIN_OP_NOOP, .opaque = 0x11223344});
        kv_parser_init(&parser, PARSER_MAX);
        assert_int_equal(kv_bin_parse(&parser, fbuf, flen, &r, &used, &st), KV_PARSE_OK);
        kv_bin_put_header(out, r.opcode, 0, 0, KV_BIN_OK, 0, r.opaque, 0);
        assert_memory_equal(out + 12, fbuf + 12, 4);
        assert_int_equal((unsigned char)out[1], KV_BIN_OP_NOOP);
}

/* Parse @in as a connection would, fed @step bytes at a time (0: all at
 * once), writing one line per request or refusal to @out. */
static void transcript(const char *in, size_t len, size_t step, char *out, size_t outcap)
{
        struct kv_parser p;
        struct kv_req r;
        static char held[8192];
        size_t have = 0, fed = 0, o = 0;

        kv_parser_init(&p, kv_mc_item_size(1, 16, 1));
        out[0] = 0;
        for (;;) {
                size_t used;
                uint16_t st;
                enum kv_parse_rc rc = kv_bin_parse(&p, held, have, &r, &used, &st);

                assert_true(used <= have);
                if (rc == KV_PARSE_NEED) {
                        size_t n = step && len - fed > step ? step : len - fed;

                        assert_int_equal(used, 0);
                        if (n == 0)
                                break;
                        assert_true(have + n <= sizeof(held));
                        memcpy(held + have, in + fed, n);
                        have += n;
                        fed += n;
                        continue;
                }
                if (rc == KV_PARSE_OK)
                        o += (size_t)snprintf(out + o, outcap - o, "ok %02x %s %.*s %zu:%.*s\n",
                                              r.opcode, kv_cmd_name(r.cmd), (int)r.keylen,
                                              r.key ? r.key : "", r.dlen, (int)r.dlen,
                                              r.data ? r.data : "");
                else if (rc == KV_PARSE_ERROR)
                        o += (size_t)snprintf(out + o, outcap - o, "err %02x %04x %u\n",
                                              r.opcode, st, r.opaque);
                else if (rc == KV_PARSE_CLOSE)
                        o += (size_t)snprintf(out + o, outcap - o, "close %04x\n", st);
                assert_true(o < outcap);
                if (rc == KV_PARSE_CLOSE)
                        break;
                assert_true(used > 0); /* anything but NEED makes progress */
                memmove(held, held + used, have - used);
                have -= used;
        }
}

static void test_split_every_byte(void **state)
{
        static char in[4096], want[4096], got[4096];
        unsigned char ext[20] = {0, 0, 0, 1, 0, 0, 0, 2};
        size_t n = 0;
        static char big[100];

        (void)state;
        memset(big, 'B', sizeof(big));
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_SET, .ext = ext, .extlen = 8,
                                           .key = "a", .val = "one"});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_GETKQ, .key = "a", .opaque = 1});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_SETQ, .ext = ext, .extlen = 8,
                                           .key = "big", .val = big, .vlen = sizeof(big),
                                           .opaque = 2});
        n += encode(in + n, (struct frame){.op = 0x42, .val = "junk", .opaque = 3});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_GET, .ext = ext, .extlen = 4,
                                           .key = "x", .opaque = 4});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_INCR, .ext = ext, .extlen = 20,
                                           .key = "n"});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_APPEND, .key = "a", .val = "two"});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_NOOP});
        n += encode(in + n, (struct frame){.op = KV_BIN_OP_QUIT});
        in[n++] = 'x'; /* then garbage: closed */
        transcript(in, n, 0, want, sizeof(want));
        assert_string_equal(want, "ok 01 set a 3:one\n"
                                  "ok 0d get a 0:\n"
                                  "err 11 0003 2\n"
                                  "err 42 0081 3\n"
                                  "err 00 0004 4\n"
                                  "ok 05 incr n 0:\n"
                                  "ok 0e append a 3:two\n"
                                  "ok 0a noop  0:\n"
                                  "ok 07 quit  0:\n"
                                  "close 0000\n");
        for (size_t step = 1; step < 64; step++) {
                transcript(in, n, step, got, sizeof(got));
                if (strcmp(got, want) != 0)
                        fail_msg("step %zu:\n%s\nexpected\n%s", step, got, want);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_family),   cmocka_unit_test(test_storage),
                cmocka_unit_test(test_delete_arith), cmocka_unit_test(test_other_commands),
                cmocka_unit_test(test_invalid),      cmocka_unit_test(test_refused_partial),
                cmocka_unit_test(test_too_large),    cmocka_unit_test(test_close),
                cmocka_unit_test(test_header),       cmocka_unit_test(test_split_every_byte),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
