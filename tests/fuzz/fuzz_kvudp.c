/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for pc-kv's UDP framing. One input is a request datagram:
 * a parsed one must point its payload inside the datagram, behind the
 * header. The same bytes are then a reply to split: every datagram must
 * carry the request id, its number and the count, fit KV_UDP_DGRAM_MAX,
 * and the datagrams joined must give back the reply; a buffer one byte
 * short of a datagram must be refused. An empty response is the header
 * alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_udp.h"

#define CHECK(c)                                                                                \
        do {                                                                                    \
                if (!(c)) {                                                                     \
                        fprintf(stderr, "fuzz_kvudp: %s:%d: %s\n", __FILE__, __LINE__, #c);     \
                        abort();                                                                \
                }                                                                               \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void split(uint16_t id, const char *reply, size_t len)
{
        size_t n = kv_udp_frames(len), off = 0;
        char *joined = malloc(len ? len : 1);
        char dg[KV_UDP_DGRAM_MAX];

        CHECK(joined != NULL);
        CHECK(len == 0 ? n == 0 : n >= 1);
        for (size_t i = 0; i < n; i++) {
                const unsigned char *b = (const unsigned char *)dg;
                size_t dlen = kv_udp_frame(id, reply, len, (unsigned)i, dg, sizeof(dg));

                CHECK(dlen > KV_UDP_HDR_LEN && dlen <= KV_UDP_DGRAM_MAX);
                CHECK(i + 1 == n || dlen == KV_UDP_DGRAM_MAX);
                CHECK((b[0] << 8 | b[1]) == id && (size_t)(b[2] << 8 | b[3]) == i);
                CHECK((size_t)(b[4] << 8 | b[5]) == n && b[6] == 0 && b[7] == 0);
                CHECK(kv_udp_frame(id, reply, len, (unsigned)i, dg, dlen - 1) == 0);
                memcpy(joined + off, dg + KV_UDP_HDR_LEN, dlen - KV_UDP_HDR_LEN);
                off += dlen - KV_UDP_HDR_LEN;
        }
        CHECK(off == len && (len == 0 || memcmp(joined, reply, len) == 0));
        CHECK(kv_udp_frame(id, reply, len, (unsigned)n, dg, sizeof(dg)) == 0);
        /* An empty response: the header alone, count 0. */
        CHECK(kv_udp_frame_empty(id, dg, sizeof(dg)) == KV_UDP_HDR_LEN);
        CHECK(((unsigned char)dg[0] << 8 | (unsigned char)dg[1]) == id);
        CHECK(memcmp(dg + 2, "\0\0\0\0\0\0", 6) == 0);
        CHECK(kv_udp_frame_empty(id, dg, KV_UDP_HDR_LEN - 1) == 0);
        free(joined);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *b = malloc(size ? size : 1);
        struct kv_udp_hdr h;
        const char *payload = NULL;
        size_t plen = 0;
        int rc;

        if (b == NULL)
                return 0;
        memcpy(b, data, size);
        rc = kv_udp_parse(b, size, &h, &payload, &plen);
        CHECK(rc == 0 || rc == -EINVAL || rc == -EMSGSIZE);
        CHECK((rc == -EINVAL) == (size < KV_UDP_HDR_LEN));
        if (rc != -EINVAL)
                CHECK(h.req_id == ((unsigned char)b[0] << 8 | (unsigned char)b[1]));
        if (rc == 0) {
                CHECK(h.total == 1);
                CHECK(payload == b + KV_UDP_HDR_LEN && plen == size - KV_UDP_HDR_LEN);
        }
        split(size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0, b, size);
        free(b);
        return 0;
}
