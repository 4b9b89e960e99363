/* SPDX-License-Identifier: MIT */
/* memcached UDP framing: request headers as memcached accepts them, and
 * replies split into numbered datagrams that join back into the reply. */
#include <errno.h>
#include <string.h>

#include "pc_test.h"
#include "proto_udp.h"

static void test_parse(void **state)
{
        static const unsigned char req[] = {0x12, 0x34, 0x00, 0x00, 0x00, 0x01, 0x00,
                                            0x00, 'g',  'e',  't',  ' ',  'k',  '\r', '\n'};
        unsigned char d[sizeof(req)];
        struct kv_udp_hdr h;
        const char *payload;
        size_t plen;

        (void)state;
        assert_int_equal(kv_udp_parse(req, sizeof(req), &h, &payload, &plen), 0);
        assert_int_equal(h.req_id, 0x1234);
        assert_int_equal(h.seq, 0);
        assert_int_equal(h.total, 1);
        assert_ptr_equal(payload, (const char *)req + 8);
        assert_int_equal(plen, 7);
        assert_memory_equal(payload, "get k\r\n", 7);
        /* A bare header: an empty request. */
        assert_int_equal(kv_udp_parse(req, 8, &h, &payload, &plen), 0);
        assert_int_equal(plen, 0);
        /* Shorter than a header. */
        for (size_t n = 0; n < 8; n++)
                assert_int_equal(kv_udp_parse(req, n, &h, &payload, &plen), -EINVAL);
        /* Sequence number and reserved field are ignored, as memcached does. */
        memcpy(d, req, sizeof(d));
        d[2] = 0x00;
        d[3] = 0x07;
        d[6] = 0xff;
        d[7] = 0xff;
        assert_int_equal(kv_udp_parse(d, sizeof(d), &h, &payload, &plen), 0);
        assert_int_equal(h.seq, 7);
        assert_int_equal(h.reserved, 0xffff);
        /* More (or fewer) than one datagram: refused, the id kept for the error. */
        d[5] = 2;
        assert_int_equal(kv_udp_parse(d, sizeof(d), &h, &payload, &plen), -EMSGSIZE);
        assert_int_equal(h.req_id, 0x1234);
        assert_int_equal(h.total, 2);
        d[5] = 0;
        assert_int_equal(kv_udp_parse(d, sizeof(d), &h, &payload, &plen), -EMSGSIZE);
        d[4] = 1;
        d[5] = 1;
        assert_int_equal(kv_udp_parse(d, sizeof(d), &h, &payload, &plen), -EMSGSIZE);
}

static void test_frames(void **state)
{
        (void)state;
        assert_int_equal(kv_udp_frames(0), 0);
        assert_int_equal(kv_udp_frames(1), 1);
        assert_int_equal(kv_udp_frames(KV_UDP_PAYLOAD_MAX), 1);
        assert_int_equal(kv_udp_frames(KV_UDP_PAYLOAD_MAX + 1), 2);
        assert_int_equal(kv_udp_frames(3 * KV_UDP_PAYLOAD_MAX), 3);
        assert_int_equal(kv_udp_frames((size_t)65535 * KV_UDP_PAYLOAD_MAX), 65535);
        assert_int_equal(kv_udp_frames((size_t)65535 * KV_UDP_PAYLOAD_MAX + 1), 0);
        assert_int_equal(kv_udp_frames(SIZE_MAX), 0);
}

/* Split a reply of @len bytes and join it back, checking every header. */
static void round_trip(size_t len)
{
        static char reply[4 * KV_UDP_PAYLOAD_MAX + 7], joined[sizeof(reply)];
        char dg[KV_UDP_DGRAM_MAX];
        size_t n = kv_udp_frames(len), off = 0;

        for (size_t i = 0; i < len; i++)
                reply[i] = (char)(i * 31 + 7);
        for (unsigned i = 0; i < n; i++) {
                const unsigned char *b = (const unsigned char *)dg;
                size_t dlen = kv_udp_frame(0xbeef, reply, len, i, dg, sizeof(dg));

                assert_true(dlen > KV_UDP_HDR_LEN && dlen <= KV_UDP_DGRAM_MAX);
                if (i + 1 < n)
                        assert_int_equal(dlen, KV_UDP_DGRAM_MAX);
                assert_int_equal(b[0] << 8 | b[1], 0xbeef);
                assert_int_equal(b[2] << 8 | b[3], i);
                assert_int_equal(b[4] << 8 | b[5], n);
                assert_int_equal(b[6] << 8 | b[7], 0);
                memcpy(joined + off, dg + KV_UDP_HDR_LEN, dlen - KV_UDP_HDR_LEN);
                off += dlen - KV_UDP_HDR_LEN;
        }
        assert_int_equal(off, len);
        assert_memory_equal(joined, reply, len);
        assert_int_equal(kv_udp_frame(0xbeef, reply, len, (unsigned)n, dg, sizeof(dg)), 0);
}

static void test_split(void **state)
{
        static const size_t lens[] = {1,
                                      5,
                                      KV_UDP_PAYLOAD_MAX - 1,
                                      KV_UDP_PAYLOAD_MAX,
                                      KV_UDP_PAYLOAD_MAX + 1,
                                      2 * KV_UDP_PAYLOAD_MAX,
                                      4 * KV_UDP_PAYLOAD_MAX + 7};
        char dg[KV_UDP_DGRAM_MAX];

        (void)state;
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
                round_trip(lens[i]);
        /* Nothing to send for an empty reply. */
        assert_int_equal(kv_udp_frame(1, "", 0, 0, dg, sizeof(dg)), 0);
        /* A buffer too small for the datagram is refused; an exact one is not. */
        assert_int_equal(kv_udp_frame(1, "END\r\n", 5, 0, dg, 12), 0);
        assert_int_equal(kv_udp_frame(1, "END\r\n", 5, 0, dg, 13), 13);
        assert_memory_equal(dg + 8, "END\r\n", 5);
}

/* memcached's empty response: the header alone, count 0. */
static void test_empty(void **state)
{
        static const unsigned char want[] = {0xbe, 0xef, 0, 0, 0, 0, 0, 0};
        char dg[KV_UDP_HDR_LEN];

        (void)state;
        memset(dg, 0xff, sizeof(dg));
        assert_int_equal(kv_udp_frame_empty(0xbeef, dg, sizeof(dg)), KV_UDP_HDR_LEN);
        assert_memory_equal(dg, want, sizeof(want));
        assert_int_equal(kv_udp_frame_empty(0xbeef, dg, KV_UDP_HDR_LEN - 1), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_frames),
                cmocka_unit_test(test_split),
                cmocka_unit_test(test_empty),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
