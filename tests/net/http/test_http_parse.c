/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/1.1 parser wrapper (net/http/h1_parse.c) without a network:
 * every request is fed in one piece and one byte at a time, and must give
 * the same request, or the same refusal, either way.
 */
#include <string.h>

#include "http_pvt.h"
#include "pc_test.h"

static const struct pc__h1lim lim = {
        .max_head = 512, .max_uri = 128, .max_body = 256, .max_headers = 8,
};

/* Feed @len bytes of @buf from @start, whole or bytewise; the event, and
 * in *@end where the parser stopped. */
static enum pc__h1ev feed(struct pc__h1p *h, const char *buf, size_t start, size_t len,
                          bool bytewise, size_t *end)
{
        size_t at = start, used;
        enum pc__h1ev ev = PC__H1_MORE;

        if (!bytewise) {
                ev = pc__h1p_feed(h, buf, start, len, &used);
                *end = start + used;
                return ev;
        }
        for (size_t to = start + 1; to <= len; to++) {
                ev = pc__h1p_feed(h, buf, at, to, &used);
                at += used;
                if (ev != PC__H1_MORE)
                        break;
        }
        *end = at;
        return ev;
}

static bool span_is(const char *buf, struct pc__h1span s, const char *want)
{
        return s.len == strlen(want) && memcmp(buf + s.off, want, s.len) == 0;
}

static void one_request(bool bytewise)
{
        static const char r[] = "\r\nPOST /a/b?x=1 HTTP/1.1\r\nHost: h\r\nX-Long: abc def\r\n"
                                "Content-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n";
        struct pc__h1p h;
        size_t end;

        pc__h1p_init(&h, &lim);
        assert_int_equal(feed(&h, r, 0, sizeof(r) - 1, bytewise, &end), PC__H1_DONE);
        assert_int_equal(end, strstr(r, "hello") + 5 - r);
        assert_int_equal(h.method, PC_HTTP_POST);
        assert_int_equal(h.version, 11);
        assert_true(h.keep_alive);
        assert_true(span_is(r, h.url, "/a/b?x=1"));
        assert_int_equal(h.nhdr, 3);
        assert_true(span_is(r, h.hdr[1].name, "X-Long"));
        assert_true(span_is(r, h.hdr[1].value, "abc def"));
        assert_int_equal(h.body_len, 5);
        assert_memory_equal(h.body, "hello", 5);
        /* The pipelined one after it, an HTTP/1.0 request without keep-alive. */
        pc__h1p_next(&h, end);
        assert_int_equal(feed(&h, r, end, sizeof(r) - 1, bytewise, &end), PC__H1_DONE);
        assert_int_equal(end, sizeof(r) - 1);
        assert_int_equal(h.method, PC_HTTP_GET);
        assert_int_equal(h.version, 10);
        assert_false(h.keep_alive);
        assert_int_equal(h.body_len, 0);
        pc__h1p_fini(&h);
}

static void test_request_whole(void **state)
{
        one_request(false);
}

static void test_request_bytewise(void **state)
{
        one_request(true);
}

static void chunked(bool bytewise)
{
        static const char r[] = "PUT /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                                "Expect: 100-continue\r\n\r\n"
                                "3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: x\r\n\r\n";
        struct pc__h1p h;
        size_t end;

        pc__h1p_init(&h, &lim);
        assert_int_equal(feed(&h, r, 0, sizeof(r) - 1, bytewise, &end), PC__H1_DONE);
        assert_int_equal(end, sizeof(r) - 1);
        assert_true(h.expect_continue);
        assert_int_equal(h.nhdr, 3); /* the trailer is not a header */
        assert_int_equal(h.body_len, 19);
        assert_memory_equal(h.body, "abc0123456789abcdef", 19);
        pc__h1p_fini(&h);
}

static void test_chunked_whole(void **state)
{
        chunked(false);
}

static void test_chunked_bytewise(void **state)
{
        chunked(true);
}

/* Each refused request and its status, whole and bytewise. */
static void refusals(bool bytewise)
{
        char big_uri[300], big_head[700], many[400], big_chunk[400];
        struct {
                const char *req;
                int status;
        } cases[] = {
                {"GET / HTTP/1.1\r\n\r\n", 400},
                {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
                {"\x01\x02\x03 / HTTP/1.1\r\n\r\n", 400},
                {" / HTTP/1.1\r\n\r\n", 400},
                {"GET / HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n", 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n", 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
                 "Content-Length: 3\r\n\r\n", 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
                 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
                {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 257\r\n\r\n", 413},
                {"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501},
                {"get / HTTP/1.1\r\nHost: a\r\n\r\n", 501},
                {"MKCOL / HTTP/1.1\r\nHost: a\r\n\r\n", 501},
                {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
                {"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505},
                {"GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417},
                {big_uri, 414},
                {big_head, 431},
                {many, 431},
                {big_chunk, 413},
        };

        snprintf(big_uri, sizeof(big_uri), "GET /%0200d HTTP/1.1\r\nHost: a\r\n\r\n", 0);
        snprintf(big_head, sizeof(big_head), "GET / HTTP/1.1\r\nHost: a\r\nX: %0600d\r\n\r\n", 0);
        strcpy(many, "GET / HTTP/1.1\r\nHost: a\r\n");
        for (int i = 0; i < 9; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "H%d: v\r\n", i);
        strcat(many, "\r\n");
        snprintf(big_chunk, sizeof(big_chunk),
                 "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "100\r\n%0256d\r\n1\r\nx\r\n0\r\n\r\n", 0);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct pc__h1p h;
                size_t end;
                enum pc__h1ev ev;

                pc__h1p_init(&h, &lim);
                ev = feed(&h, cases[i].req, 0, strlen(cases[i].req), bytewise, &end);
                if (ev != PC__H1_ERROR || h.status != cases[i].status)
                        fail_msg("case %zu (%s): event %d status %d, want %d", i,
                                 cases[i].req, ev, h.status, cases[i].status);
                /* Refused stays refused. */
                assert_int_equal(pc__h1p_feed(&h, cases[i].req, end, strlen(cases[i].req), &end),
                                 PC__H1_ERROR);
                pc__h1p_fini(&h);
        }
}

static void test_refusals_whole(void **state)
{
        refusals(false);
}

static void test_refusals_bytewise(void **state)
{
        refusals(true);
}

/* A head is refused where it passes the limit, whatever follows: a
 * request that never ends is not read without bound. */
static void test_head_limit_unending(void **state)
{
        char buf[4096];
        struct pc__h1p h;
        size_t used;

        memset(buf, 'a', sizeof(buf));
        memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
        pc__h1p_init(&h, &lim);
        assert_int_equal(pc__h1p_feed(&h, buf, 0, sizeof(buf), &used), PC__H1_ERROR);
        assert_int_equal(h.status, 431);
        assert_int_equal(h.head_bytes, lim.max_head);
        pc__h1p_fini(&h);
        /* In the request line: 414. */
        memset(buf, 'a', sizeof(buf));
        memcpy(buf, "GET /", 5);
        pc__h1p_init(&h, &lim);
        assert_int_equal(pc__h1p_feed(&h, buf, 0, sizeof(buf), &used), PC__H1_ERROR);
        assert_int_equal(h.status, 414);
        pc__h1p_fini(&h);
}

/* Bodies at the limit pass; a body of exactly max_body is not 413. */
static void test_body_at_limit(void **state)
{
        char r[600];
        struct pc__h1p h;
        size_t used;
        int n = snprintf(r, sizeof(r), "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 256\r\n\r\n");

        memset(r + n, 'b', 256);
        pc__h1p_init(&h, &lim);
        assert_int_equal(pc__h1p_feed(&h, r, 0, (size_t)n + 256, &used), PC__H1_DONE);
        assert_int_equal(h.body_len, 256);
        pc__h1p_fini(&h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_whole),
                cmocka_unit_test(test_request_bytewise),
                cmocka_unit_test(test_chunked_whole),
                cmocka_unit_test(test_chunked_bytewise),
                cmocka_unit_test(test_refusals_whole),
                cmocka_unit_test(test_refusals_bytewise),
                cmocka_unit_test(test_head_limit_unending),
                cmocka_unit_test(test_body_at_limit),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
