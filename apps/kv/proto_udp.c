/* SPDX-License-Identifier: MIT */
/*
 * memcached UDP framing. memcached (try_read_udp) keeps the request id,
 * refuses a datagram count other than 1 and ignores the rest of the
 * header; replies number their datagrams from 0 (build_udp_headers).
 */
#include "proto_udp.h"

#include <errno.h>
#include <string.h>

#define UDP_FRAMES_MAX 65535

static uint16_t get16(const unsigned char *b)
{
        return (uint16_t)(b[0] << 8 | b[1]);
}

static void put16(unsigned char *b, uint16_t v)
{
        b[0] = (unsigned char)(v >> 8);
        b[1] = (unsigned char)v;
}

int kv_udp_parse(const void *dgram, size_t len, struct kv_udp_hdr *h, const char **payload,
                 size_t *plen)
{
        const unsigned char *b = dgram;

        if (len < KV_UDP_HDR_LEN)
                return -EINVAL;
        h->req_id = get16(b);
        h->seq = get16(b + 2);
        h->total = get16(b + 4);
        h->reserved = get16(b + 6);
        if (h->total != 1)
                return -EMSGSIZE;
        *payload = (const char *)b + KV_UDP_HDR_LEN;
        *plen = len - KV_UDP_HDR_LEN;
        return 0;
}

size_t kv_udp_frames(size_t reply_len)
{
        size_t n = reply_len / KV_UDP_PAYLOAD_MAX + (reply_len % KV_UDP_PAYLOAD_MAX != 0);

        return n <= UDP_FRAMES_MAX ? n : 0;
}

size_t kv_udp_frame(uint16_t req_id, const char *reply, size_t reply_len, unsigned index,
                    char *out, size_t out_cap)
{
        unsigned char *b = (unsigned char *)out;
        size_t n = kv_udp_frames(reply_len), off, chunk;

        if (index >= n)
                return 0;
        off = (size_t)index * KV_UDP_PAYLOAD_MAX;
        chunk = reply_len - off < KV_UDP_PAYLOAD_MAX ? reply_len - off : KV_UDP_PAYLOAD_MAX;
        if (out_cap < KV_UDP_HDR_LEN + chunk)
                return 0;
        put16(b, req_id);
        put16(b + 2, (uint16_t)index);
        put16(b + 4, (uint16_t)n);
        put16(b + 6, 0);
        memcpy(b + KV_UDP_HDR_LEN, reply + off, chunk);
        return KV_UDP_HDR_LEN + chunk;
}

size_t kv_udp_frame_empty(uint16_t req_id, char *out, size_t out_cap)
{
        unsigned char *b = (unsigned char *)out;

        if (out_cap < KV_UDP_HDR_LEN)
                return 0;
        put16(b, req_id);
        memset(b + 2, 0, KV_UDP_HDR_LEN - 2);
        return KV_UDP_HDR_LEN;
}
