/* SPDX-License-Identifier: MIT */
/* The memcached ASCII parser: every command, the error replies, the keys
 * and numbers memcached 1.6.18 takes, and a stream split at every byte
 * parsing exactly as the whole stream does. */
#include <stdio.h>
#include <string.h>

#include "pc_test.h"
#include "proto_ascii.h"

#define ITEM_MAX 1024
/* The parser's limit counts memcached's item header: ITEM_MAX is the
 * largest value of a two-byte key with flags 0. */
#define PARSER_MAX kv_mc_item_size(2, ITEM_MAX, 0)

static enum kv_parse_rc parse_n(const char *in, size_t len, struct kv_req *r, size_t *used,
                                const char **err)
{
        static struct kv_parser p;

        kv_parser_init(&p, PARSER_MAX);
        return kv_parse(&p, in, len, r, used, err);
}

static enum kv_parse_rc parse1(const char *in, struct kv_req *r, size_t *used, const char **err)
{
        return parse_n(in, strlen(in), r, used, err);
}

static void expect_ok(const char *in, enum kv_cmd cmd, struct kv_req *r)
{
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse1(in, r, &used, &err);

        if (rc != KV_PARSE_OK)
                fail_msg("'%s': rc %d err %s", in, rc, err ? err : "-");
        assert_int_equal(r->cmd, cmd);
        assert_int_equal(used, strlen(in));
}

static void expect_err(const char *in, const char *want)
{
        struct kv_req r;
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse1(in, &r, &used, &err);

        if (rc != KV_PARSE_ERROR)
                fail_msg("'%s': rc %d, expected an error", in, rc);
        if (strcmp(err, want) != 0)
                fail_msg("'%s': got %s expected %s", in, err, want);
}

/* Refused in silence (noreply): the line consumed, nothing to send. */
static void expect_skip(const char *in)
{
        struct kv_req r;
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse1(in, &r, &used, &err);

        if (rc != KV_PARSE_SKIP)
                fail_msg("'%s': rc %d err %s, expected a silent refusal", in, rc,
                         err ? err : "-");
        assert_int_equal(used, strlen(in));
}

static void expect_need(const char *in)
{
        struct kv_req r;
        size_t used;
        const char *err;

        assert_int_equal(parse1(in, &r, &used, &err), KV_PARSE_NEED);
        assert_int_equal(used, 0);
}

static bool key_is(const struct kv_req *r, const char *k)
{
        return r->keylen == strlen(k) && memcmp(r->key, k, r->keylen) == 0;
}

static void test_get_family(void **state)
{
        struct kv_req r;
        size_t pos = 0, kn;
        const char *k;
        const char *want[] = {"a", "bb", "ccc"};

        (void)state;
        expect_ok("get foo\r\n", KV_GET, &r);
        assert_true(key_is(&r, "foo"));
        assert_int_equal(r.nkeys, 1);
        expect_ok("gets a  bb ccc\r\n", KV_GETS, &r);
        assert_int_equal(r.nkeys, 3);
        for (int i = 0; i < 3; i++) {
                assert_true(kv_req_next_key(&r, &pos, &k, &kn));
                assert_int_equal(kn, strlen(want[i]));
                assert_memory_equal(k, want[i], kn);
        }
        assert_false(kv_req_next_key(&r, &pos, &k, &kn));
        expect_ok("get foo\n", KV_GET, &r); /* bare \n, as memcached */
        expect_ok("gat 100 foo bar\r\n", KV_GAT, &r);
        assert_int_equal(r.exptime, 100);
        assert_int_equal(r.nkeys, 2);
        expect_ok("gats -1 foo\r\n", KV_GATS, &r);
        assert_int_equal(r.exptime, -1);
        expect_err("get\r\n", KV_ERR_UNKNOWN);
        expect_err("get  \r\n", KV_ERR_UNKNOWN);
        expect_err("gat\r\n", KV_ERR_UNKNOWN);
        expect_ok("gat 10\r\n", KV_GAT, &r); /* no key: memcached says "END" */
        assert_int_equal(r.nkeys, 0);
        expect_ok("gats 10  \r\n", KV_GATS, &r);
        assert_int_equal(r.nkeys, 0);
        expect_err("gat x foo\r\n", KV_ERR_EXPTIME);
        expect_err("gat x\r\n", KV_ERR_EXPTIME);
        expect_ok("get a\x01 b\r\n", KV_GET, &r);
        assert_int_equal(r.nkeys, 2);
        assert_true(key_is(&r, "a\x01"));
        expect_ok("   get   a   \r\n", KV_GET, &r); /* leading, trailing, runs of spaces */
        assert_true(key_is(&r, "a"));
        assert_int_equal(r.nkeys, 1);
        expect_need("get foo");
        expect_need("get foo\r");
}

/* Expect @in[0..@len) to parse as @cmd with key @key[0..@klen). */
static void expect_key(const char *in, size_t len, enum kv_cmd cmd, const char *key,
                       size_t klen)
{
        struct kv_req r;
        size_t used;
        const char *err;
        enum kv_parse_rc rc = parse_n(in, len, &r, &used, &err);

        if (rc != KV_PARSE_OK)
                fail_msg("'%.*s': rc %d err %s", (int)len, in, rc, err ? err : "-");
        assert_int_equal(r.cmd, cmd);
        assert_int_equal(used, len);
        assert_int_equal(r.keylen, klen);
        assert_memory_equal(r.key, key, klen);
}

/* The same for a string literal @in and its key @key. */
#define EXPECT_KEY(in, cmd, key) expect_key(in, sizeof(in) - 1, cmd, key, sizeof(key) - 1)

/* memcached 1.6 splits on ' ' only: every other byte but NUL and '\n' is a
 * key byte, control bytes and bytes over 0x7f included (memcaslap's keys
 * carry them). */
static void test_key_bytes(void **state)
{
        char line[64], key[8];
        int n;

        (void)state;
        for (int b = 1; b < 256; b++) {
                if (b == '\n' || b == ' ')
                        continue;
                n = snprintf(key, sizeof(key), "a%cz", b);
                n = snprintf(line, sizeof(line), "get %s\r\n", key);
                expect_key(line, (size_t)n, KV_GET, key, 3);
                n = snprintf(line, sizeof(line), "set %s 0 0 1\r\nx\r\n", key);
                expect_key(line, (size_t)n, KV_SET, key, 3);
                n = snprintf(line, sizeof(line), "delete %s noreply\r\n", key);
                expect_key(line, (size_t)n, KV_DELETE, key, 3);
                n = snprintf(line, sizeof(line), "incr %s 1\r\n", key);
                expect_key(line, (size_t)n, KV_INCR, key, 3);
                n = snprintf(line, sizeof(line), "touch %s 1\r\n", key);
                expect_key(line, (size_t)n, KV_TOUCH, key, 3);
                /* The byte alone as the key, before the line's "\r\n". */
                n = snprintf(line, sizeof(line), "get %c\r\n", b);
                if (b == '\r') /* "get \r\r\n": one '\r' ends the line, one is the key */
                        n = snprintf(line, sizeof(line), "get \r\r\n");
                expect_key(line, (size_t)n, KV_GET, line + 4, 1);
        }
        EXPECT_KEY("set a\tb 0 0 1\r\nx\r\n", KV_SET, "a\tb");
        EXPECT_KEY("get \t\x0b\x0c\r\n", KV_GET, "\t\x0b\x0c");
        EXPECT_KEY("get a\rb\r\n", KV_GET, "a\rb");
        EXPECT_KEY("get a\r\r\n", KV_GET, "a\r");
        EXPECT_KEY("get a\r\n", KV_GET, "a");
        EXPECT_KEY("get \x7f\x80\xb0\xff\r\n", KV_GET, "\x7f\x80\xb0\xff");
        EXPECT_KEY("gat 0 \x10\xb0\r\n", KV_GAT, "\x10\xb0");
        EXPECT_KEY("cas \x01 0 0 1 5\r\nx\r\n", KV_CAS, "\x01");
}

/* memcached reads the line as a C string: a NUL ends it. */
static void test_key_nul(void **state)
{
        static const char get[] = "get a\0 b\r\n", set[] = "set a 0 0 1\0junk\r\nx\r\n",
                          cut[] = "set a\0b 0 0 1\r\n", cr[] = "get a\r\0b\r\n";
        struct kv_req r;
        size_t used;
        const char *err;

        (void)state;
        expect_key(get, sizeof(get) - 1, KV_GET, "a", 1);
        assert_int_equal(parse_n(get, sizeof(get) - 1, &r, &used, &err), KV_PARSE_OK);
        assert_int_equal(r.nkeys, 1);
        expect_key(set, sizeof(set) - 1, KV_SET, "a", 1);
        assert_int_equal(parse_n(cut, sizeof(cut) - 1, &r, &used, &err), KV_PARSE_ERROR);
        assert_string_equal(err, KV_ERR_UNKNOWN); /* "set a": too few tokens */
        assert_int_equal(used, sizeof(cut) - 1);
        expect_key(cr, sizeof(cr) - 1, KV_GET, "a\r", 2);
        assert_int_equal(parse_n("\0\r\n", 3, &r, &used, &err), KV_PARSE_ERROR);
        assert_string_equal(err, KV_ERR_UNKNOWN);
}

static void test_key_length(void **state)
{
        static const char *const one_key[] = {"get %s\r\n",     "gets a %s b\r\n",
                                              "gat 0 %s\r\n",   "gats 0 a %s\r\n",
                                              "delete %s\r\n",  "delete %s 0\r\n",
                                              "incr %s 1\r\n",  "decr %s 1\r\n",
                                              "touch %s 1\r\n", "incr %s x\r\n",
                                              "touch %s x\r\n"};
        char line[600], key[260];
        struct kv_parser p;
        struct kv_req r;
        size_t used;
        const char *err;

        (void)state;
        memset(key, 'k', 250);
        key[250] = 0;
        snprintf(line, sizeof(line), "get %s\r\n", key);
        expect_ok(line, KV_GET, &r);
        assert_int_equal(r.keylen, 250);
        snprintf(line, sizeof(line), "set %s 0 0 1\r\nx\r\n", key);
        expect_ok(line, KV_SET, &r);
        assert_int_equal(r.keylen, 250);
        key[250] = 'k';
        key[251] = 0;
        /* Over the limit: the key is checked before the number after it. */
        for (size_t i = 0; i < sizeof(one_key) / sizeof(one_key[0]); i++) {
                snprintf(line, sizeof(line), one_key[i], key);
                expect_err(line, KV_ERR_FORMAT);
        }
        snprintf(line, sizeof(line), "delete %s noreply\r\n", key);
        expect_skip(line);
        snprintf(line, sizeof(line), "incr %s 1 noreply\r\n", key);
        expect_skip(line);
        /* A storage line refused for its key leaves its data block to be
         * read as a command, as memcached does (it swallows only values
         * too large). */
        kv_parser_init(&p, PARSER_MAX);
        snprintf(line, sizeof(line), "set %s 0 0 5\r\nhello\r\n", key);
        assert_int_equal(kv_parse(&p, line, strlen(line), &r, &used, &err), KV_PARSE_ERROR);
        assert_string_equal(err, KV_ERR_FORMAT);
        assert_int_equal(used, strlen(line) - 7);
        assert_int_equal(p.swallow, 0);
        snprintf(line, sizeof(line), "set %s 0 0 5000 noreply\r\n", key);
        expect_skip(line);
        snprintf(line, sizeof(line), "cas %s 0 0 1 1\r\n", key);
        expect_err(line, KV_ERR_FORMAT);
}

static void test_storage(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("set k 42 100 5\r\nhello\r\n", KV_SET, &r);
        assert_true(key_is(&r, "k"));
        assert_int_equal(r.flags, 42);
        assert_int_equal(r.exptime, 100);
        assert_int_equal(r.dlen, 5);
        assert_memory_equal(r.data, "hello", 5);
        assert_false(r.noreply);
        expect_ok("add k 0 0 0 noreply\r\n\r\n", KV_ADD, &r);
        assert_true(r.noreply);
        assert_int_equal(r.dlen, 0);
        expect_ok("replace k 4294967295 -1 1\r\nx\r\n", KV_REPLACE, &r);
        assert_int_equal(r.flags, 4294967295u);
        assert_int_equal(r.exptime, -1);
        expect_ok("append k 0 0 2\r\n\r\n\r\n", KV_APPEND, &r); /* data may hold \r\n */
        assert_memory_equal(r.data, "\r\n", 2);
        expect_ok("prepend k 0 0 1\r\nx\r\n", KV_PREPEND, &r);
        expect_ok("cas k 0 0 1 18446744073709551615\r\nx\r\n", KV_CAS, &r);
        assert_true(r.cas == UINT64_MAX);
        expect_ok("cas k 0 0 1 7 noreply\r\nx\r\n", KV_CAS, &r);
        assert_true(r.noreply);
        assert_int_equal(r.cas, 7);

        expect_ok("set k 0 0 1 junk\r\nx\r\n", KV_SET, &r); /* not noreply: ignored */
        assert_false(r.noreply);

        expect_err("set k 0 0\r\n", KV_ERR_UNKNOWN);
        expect_err("set k 0 0 1 2 3\r\n", KV_ERR_UNKNOWN);
        expect_err("set k 0 0 1 noreply x\r\n", KV_ERR_UNKNOWN); /* never silent */
        expect_err("cas k 0 0 1\r\n", KV_ERR_UNKNOWN);
        expect_err("set k -1 0 1\r\n", KV_ERR_FORMAT);
        expect_err("set k 0 x 1\r\n", KV_ERR_FORMAT);
        expect_err("set k 0 0 -1\r\n", KV_ERR_FORMAT);
        expect_err("set k 0 0 1x\r\n", KV_ERR_FORMAT);
        expect_err("set k 0 0 2147483646\r\n", KV_ERR_FORMAT); /* + 2 overflows an int */
        expect_err("cas k 0 0 1 -1\r\n", KV_ERR_FORMAT);
        expect_err("set k 0 0 3\r\nabcd\r\n", KV_ERR_CHUNK);
        /* With noreply, memcached refuses these in silence. */
        expect_skip("set k 0 0 z noreply\r\n");
        expect_skip("set k 0 0 noreply\r\n");
        expect_skip("cas k 0 0 1 x noreply\r\n");
        expect_skip("set k 0 0 1 noreply\r\nabc"); /* a bad chunk, "abc" read */
        expect_err("set k 0 0 3\r\nab\r\n\r\n", KV_ERR_CHUNK);
        expect_need("set k 0 0 5\r\nhel");
        expect_need("set k 0 0 5\r\nhello\r");
}

/* Numbers as memcached's strtoul()/strtol()/strtoull() calls read them. */
static void test_numbers(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("set k +7 0 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.flags, 7);
        expect_ok("set k \t7 0 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.flags, 7);
        expect_ok("set k 7\tjunk 0 1\r\nx\r\n", KV_SET, &r); /* after white space: ignored */
        assert_int_equal(r.flags, 7);
        expect_ok("set k -0 0 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.flags, 0);
        expect_ok("set k 4294967296 0 1\r\nx\r\n", KV_SET, &r); /* the low 32 bits */
        assert_int_equal(r.flags, 0);
        expect_ok("set k 18446744073709551615 0 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.flags, UINT32_MAX);
        expect_ok("set k -18446744073709551615 0 1\r\nx\r\n", KV_SET, &r); /* wraps to 1 */
        assert_int_equal(r.flags, 1);
        expect_err("set k 18446744073709551616 0 1\r\n", KV_ERR_FORMAT);
        expect_err("set k + 0 1\r\n", KV_ERR_FORMAT);
        expect_err("set k \x0b 0 1\r\n", KV_ERR_FORMAT);

        expect_ok("set k 0 2147483648 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.exptime, INT32_MIN);
        expect_ok("set k 0 -2147483649 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.exptime, INT32_MAX);
        expect_ok("set k 0 4294967396 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.exptime, 100);
        expect_ok("set k 0 -9223372036854775808 1\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.exptime, 0);
        expect_err("set k 0 9223372036854775808 1\r\n", KV_ERR_FORMAT);
        expect_ok("set k 0 0 4294967297\r\nx\r\n", KV_SET, &r);
        assert_int_equal(r.dlen, 1);
        expect_ok("set k 0 0 1\r\r\nx\r\n", KV_SET, &r); /* "1\r": '\r' is white space */
        assert_int_equal(r.dlen, 1);
        expect_ok("cas k 0 0 1 -0\r\nx\r\n", KV_CAS, &r);
        assert_int_equal(r.cas, 0);

        expect_ok("incr n +5\r\n", KV_INCR, &r);
        assert_int_equal(r.delta, 5);
        expect_ok("incr n \t3\r\n", KV_INCR, &r);
        assert_int_equal(r.delta, 3);
        expect_ok("decr n 2\x0b\r\n", KV_DECR, &r);
        assert_int_equal(r.delta, 2);
        expect_ok("incr n -18446744073709551615\r\n", KV_INCR, &r);
        assert_int_equal(r.delta, 1);
        expect_err("incr n -5\r\n", KV_ERR_DELTA);
        expect_ok("touch k 100\rjunk\r\n", KV_TOUCH, &r);
        assert_int_equal(r.exptime, 100);
        expect_ok("gat -0 k\r\n", KV_GAT, &r);
        assert_int_equal(r.exptime, 0);
        expect_ok("verbosity 4294967297\r\n", KV_VERBOSITY, &r);
        assert_int_equal(r.level, 1);
        expect_err("verbosity -1\r\n", KV_ERR_FORMAT);
}

static void test_too_large(void **state)
{
        struct kv_parser p;
        struct kv_req r;
        char buf[ITEM_MAX + 200];
        size_t used, n, off;
        const char *err;

        (void)state;
        kv_parser_init(&p, PARSER_MAX);
        n = (size_t)snprintf(buf, sizeof(buf), "set big 0 0 %d\r\n", ITEM_MAX + 1);
        memset(buf + n, 'v', ITEM_MAX + 1);
        memcpy(buf + n + ITEM_MAX + 1, "\r\nget x\r\n", 9);
        n += ITEM_MAX + 1 + 9;
        assert_int_equal(kv_parse(&p, buf, n, &r, &used, &err), KV_PARSE_OK);
        assert_true(r.too_large);
        assert_true(key_is(&r, "big"));
        off = used;
        /* The value is swallowed, in as many pieces as it arrives in. */
        assert_int_equal(kv_parse(&p, buf + off, 10, &r, &used, &err), KV_PARSE_SKIP);
        assert_int_equal(used, 10);
        off += used;
        assert_int_equal(kv_parse(&p, buf + off, n - off, &r, &used, &err), KV_PARSE_SKIP);
        off += used;
        assert_int_equal(kv_parse(&p, buf + off, n - off, &r, &used, &err), KV_PARSE_OK);
        assert_int_equal(r.cmd, KV_GET);
        assert_true(key_is(&r, "x"));
        assert_int_equal(off + used, n);

        /* Exactly item_max is fine. */
        n = (size_t)snprintf(buf, sizeof(buf), "set ok 0 0 %d\r\n", ITEM_MAX);
        memset(buf + n, 'v', ITEM_MAX);
        memcpy(buf + n + ITEM_MAX, "\r\n", 2);
        n += ITEM_MAX + 2;
        assert_int_equal(kv_parse(&p, buf, n, &r, &used, &err), KV_PARSE_OK);
        assert_false(r.too_large);
        assert_int_equal(used, n);
}

static void test_other_commands(void **state)
{
        struct kv_req r;

        (void)state;
        expect_ok("delete k\r\n", KV_DELETE, &r);
        assert_true(key_is(&r, "k"));
        expect_ok("delete k noreply\r\n", KV_DELETE, &r);
        assert_true(r.noreply);
        expect_ok("delete k 0\r\n", KV_DELETE, &r);
        expect_ok("delete k 0 noreply\r\n", KV_DELETE, &r);
        expect_ok("delete noreply\r\n", KV_DELETE, &r); /* the key "noreply" */
        assert_false(r.noreply);
        assert_true(key_is(&r, "noreply"));
        expect_err("delete k 5\r\n", KV_ERR_DELETE);
        expect_skip("delete k 5 noreply\r\n");
        expect_skip("delete k noreply noreply\r\n");
        expect_err("delete k 0 noreply x\r\n", KV_ERR_UNKNOWN);
        expect_err("delete\r\n", KV_ERR_UNKNOWN);

        expect_ok("incr n 18446744073709551615\r\n", KV_INCR, &r);
        assert_true(r.delta == UINT64_MAX);
        expect_ok("decr n 1 noreply\r\n", KV_DECR, &r);
        assert_true(r.noreply);
        expect_err("incr n 18446744073709551616\r\n", KV_ERR_DELTA);
        expect_err("incr n -1\r\n", KV_ERR_DELTA);
        expect_err("decr n x\r\n", KV_ERR_DELTA);
        expect_skip("incr n x noreply\r\n");
        expect_err("incr n\r\n", KV_ERR_UNKNOWN);
        expect_ok("incr n 1 2\r\n", KV_INCR, &r); /* a fourth token is ignored */
        assert_false(r.noreply);
        expect_err("incr n 1 2 3\r\n", KV_ERR_UNKNOWN);

        expect_ok("touch k 10\r\n", KV_TOUCH, &r);
        assert_int_equal(r.exptime, 10);
        expect_ok("touch k 10 noreply\r\n", KV_TOUCH, &r);
        expect_err("touch k x\r\n", KV_ERR_EXPTIME);
        expect_skip("touch k x noreply\r\n");
        expect_ok("touch k 1 2\r\n", KV_TOUCH, &r);
        expect_err("touch k\r\n", KV_ERR_UNKNOWN);

        expect_ok("flush_all\r\n", KV_FLUSH_ALL, &r);
        assert_int_equal(r.delay, 0);
        expect_ok("flush_all 30\r\n", KV_FLUSH_ALL, &r);
        assert_int_equal(r.delay, 30);
        expect_ok("flush_all noreply\r\n", KV_FLUSH_ALL, &r);
        assert_true(r.noreply);
        expect_ok("flush_all 5 noreply\r\n", KV_FLUSH_ALL, &r);
        assert_int_equal(r.delay, 5);
        expect_ok("flush_all 0 x\r\n", KV_FLUSH_ALL, &r); /* the delay is read, x ignored */
        assert_int_equal(r.delay, 0);
        expect_err("flush_all x\r\n", KV_ERR_EXPTIME);
        expect_err("flush_all x y\r\n", KV_ERR_EXPTIME);
        expect_err("flush_all noreply 5\r\n", KV_ERR_EXPTIME);
        expect_skip("flush_all x noreply\r\n");
        expect_err("flush_all 1 2 3\r\n", KV_ERR_UNKNOWN);

        expect_ok("version\r\n", KV_VERSION, &r);
        expect_ok("version x y\r\n", KV_VERSION, &r); /* memcached ignores the rest */
        expect_ok("verbosity 1\r\n", KV_VERBOSITY, &r);
        expect_ok("verbosity 1 noreply\r\n", KV_VERBOSITY, &r);
        assert_true(r.noreply);
        assert_int_equal(r.level, 1);
        expect_skip("verbosity noreply\r\n"); /* silent, as memcached */
        expect_skip("verbosity x noreply\r\n");
        expect_ok("verbosity 1 2\r\n", KV_VERBOSITY, &r);
        assert_int_equal(r.level, 1);
        expect_err("verbosity x\r\n", KV_ERR_FORMAT);
        expect_err("verbosity\r\n", KV_ERR_UNKNOWN);
        expect_err("verbosity foo bar my\r\n", KV_ERR_UNKNOWN);
        expect_ok("quit\r\n", KV_QUIT, &r);
        expect_ok("stats\r\n", KV_STATS, &r);
        assert_int_equal(r.keylen, 0);
        expect_ok("stats settings\r\n", KV_STATS, &r);
        assert_true(key_is(&r, "settings"));

        expect_err("\r\n", KV_ERR_UNKNOWN);
        expect_err("bogus\r\n", KV_ERR_UNKNOWN);
        expect_err("GET k\r\n", KV_ERR_UNKNOWN);
        expect_err("\x80\xff\x01\x02\r\n", KV_ERR_UNKNOWN);
}

static void test_line_too_long(void **state)
{
        static char buf[KV_LINE_MAX + 16];
        struct kv_parser p;
        struct kv_req r;
        size_t used;
        const char *err;

        (void)state;
        kv_parser_init(&p, PARSER_MAX);
        memset(buf, 'a', sizeof(buf));
        assert_int_equal(kv_parse(&p, buf, KV_LINE_MAX, &r, &used, &err), KV_PARSE_NEED);
        assert_int_equal(kv_parse(&p, buf, sizeof(buf), &r, &used, &err), KV_PARSE_CLOSE);
        assert_string_equal(err, KV_ERR_LINE_TOO_LONG);
        /* A line of exactly the limit is parsed (here: an unknown command). */
        buf[KV_LINE_MAX] = '\r';
        buf[KV_LINE_MAX + 1] = '\n';
        assert_int_equal(kv_parse(&p, buf, KV_LINE_MAX + 2, &r, &used, &err), KV_PARSE_ERROR);
        assert_int_equal(used, KV_LINE_MAX + 2);
        buf[KV_LINE_MAX] = 'a';
        buf[KV_LINE_MAX + 1] = '\r';
        buf[KV_LINE_MAX + 2] = '\n';
        assert_int_equal(kv_parse(&p, buf, KV_LINE_MAX + 3, &r, &used, &err), KV_PARSE_CLOSE);
}

/* Parse @in as a connection would, given bytes @step at a time (0: all at
 * once), writing one line per event to @out. */
static void transcript(const char *in, size_t len, size_t step, char *out, size_t outcap)
{
        struct kv_parser p;
        struct kv_req r;
        char held[4096];
        size_t have = 0, fed = 0, o = 0;

        kv_parser_init(&p, kv_mc_item_size(1, 16, 0));
        out[0] = 0;
        while (fed < len || have) {
                size_t n = step == 0 ? len - fed : (len - fed < step ? len - fed : step);
                size_t off = 0, used;
                const char *err;
                enum kv_parse_rc rc;

                memcpy(held + have, in + fed, n);
                have += n;
                fed += n;
                for (;;) {
                        rc = kv_parse(&p, held + off, have - off, &r, &used, &err);
                        if (rc == KV_PARSE_NEED)
                                break;
                        off += used;
                        if (rc == KV_PARSE_OK)
                                o += (size_t)snprintf(out + o, outcap - o,
                                                      "%s %.*s d=%.*s nk=%u nr=%d tl=%d\n",
                                                      kv_cmd_name(r.cmd), (int)r.keylen, r.key,
                                                      (int)r.dlen, r.data ? r.data : "",
                                                      r.nkeys, r.noreply, r.too_large);
                        else if (rc != KV_PARSE_SKIP)
                                o += (size_t)snprintf(out + o, outcap - o, "rc=%d %s", rc, err);
                        if (rc == KV_PARSE_CLOSE)
                                return;
                }
                memmove(held, held + off, have - off);
                have -= off;
                if (n == 0)
                        break;
        }
}

static void test_split_every_byte(void **state)
{
        static const char stream[] =
                "get a bb\r\ngets c\nset k 1 2 3\r\nabc\r\nadd k 0 0 2 noreply\r\n\r\n\r\n"
                "cas k 0 0 1 99\r\nz\r\nset big 0 0 20\r\n01234567890123456789\r\n"
                "delete k\r\nincr n 5\r\ndecr n 1 noreply\r\ntouch k 1\r\ngat 5 a b\r\n"
                "set k 0 0 1\r\nxy\r\nbogus\r\nflush_all 3\r\nversion\r\nverbosity 1\r\n"
                "stats\r\nset x 0 0 -5\r\nappend k 0 0 1\r\nq\r\nprepend k 0 0 1\r\nr\r\n"
                "replace k 0 0 1\r\ns\r\nset k 0 0 z noreply\r\nx\r\nget a\0 b\r\n"
                "incr a\tb 1\r\nquit\r\n";
        static char whole[8192], split[8192];
        size_t len = sizeof(stream) - 1;

        (void)state;
        transcript(stream, len, 0, whole, sizeof(whole));
        /* Sanity: the whole-stream transcript is what memcached would do. */
        assert_non_null(strstr(whole, "set k d=abc nk=0 nr=0 tl=0\n"));
        assert_non_null(strstr(whole, "set big d= nk=0 nr=0 tl=1\n"));
        assert_non_null(strstr(whole, "delete k d= nk=0 nr=0 tl=0\n"));
        assert_non_null(strstr(whole, "rc=3 " KV_ERR_CHUNK));
        assert_non_null(strstr(whole, "get a d= nk=1 nr=0 tl=0\nincr a\tb"));
        assert_non_null(strstr(whole, "quit"));
        for (size_t step = 1; step <= len; step++) {
                transcript(stream, len, step, split, sizeof(split));
                if (strcmp(whole, split) != 0)
                        fail_msg("step %zu:\n%s\nvs whole:\n%s", step, split, whole);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_get_family),   cmocka_unit_test(test_key_bytes),
                cmocka_unit_test(test_key_nul),      cmocka_unit_test(test_key_length),
                cmocka_unit_test(test_storage),      cmocka_unit_test(test_numbers),
                cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_other_commands), cmocka_unit_test(test_line_too_long),
                cmocka_unit_test(test_split_every_byte),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
