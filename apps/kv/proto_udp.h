/* SPDX-License-Identifier: MIT */
/*
 * memcached's UDP framing. Every datagram, both ways, starts with an
 * 8-byte header (big-endian): request id, sequence number, datagram count,
 * reserved. A request is one datagram carrying one ASCII (or binary)
 * request; a reply is split over as many datagrams as it needs, each
 * echoing the request id and numbering itself.
 *
 * A pure module: no allocation, no I/O.
 */
#ifndef KV_PROTO_UDP_H
#define KV_PROTO_UDP_H

#include <stddef.h>
#include <stdint.h>

#define KV_UDP_HDR_LEN 8
/** Reply bytes per datagram, header excluded: memcached 1.6.18 sends
 *  datagrams of at most 1400 bytes, its header included (measured). */
#define KV_UDP_PAYLOAD_MAX (1400 - KV_UDP_HDR_LEN)
/** Largest datagram kv_udp_frame() writes. */
#define KV_UDP_DGRAM_MAX (KV_UDP_HDR_LEN + KV_UDP_PAYLOAD_MAX)
/** The reply memcached sends to a request that spans datagrams. */
#define KV_UDP_ERR_MULTI "SERVER_ERROR multi-packet request not supported\r\n"

struct kv_udp_hdr {
        uint16_t req_id;
        uint16_t seq;
        uint16_t total;
        uint16_t reserved;
};

/**
 * Parse request datagram @dgram of @len bytes: fill *@h and point
 * *@payload and *@plen at the bytes after the header (plen may be 0).
 * Like memcached, only the datagram count is checked; the sequence number
 * and reserved field are ignored.
 *
 * Errors: -EINVAL if @len is shorter than the header (drop it: there is no
 * request id to answer); -EMSGSIZE if the request spans datagrams (count
 * not 1): *@h is filled, and memcached answers KV_UDP_ERR_MULTI.
 */
int kv_udp_parse(const void *dgram, size_t len, struct kv_udp_hdr *h, const char **payload,
                 size_t *plen);

/**
 * How many datagrams a reply of @reply_len bytes takes: 0 for an empty
 * reply (nothing to send), and 0 when it would need more than 65535, the
 * most the header's count can say (such a reply cannot go over UDP).
 */
size_t kv_udp_frames(size_t reply_len);

/**
 * Write datagram @index of the reply @reply[0..@reply_len) to request
 * @req_id into @out: the header (sequence @index, count kv_udp_frames())
 * and the reply's next KV_UDP_PAYLOAD_MAX bytes at most. Returns the
 * datagram's length, or 0 when @index is not below kv_udp_frames() or
 * @out_cap is too small for the datagram (KV_UDP_DGRAM_MAX always fits).
 */
size_t kv_udp_frame(uint16_t req_id, const char *reply, size_t reply_len, unsigned index,
                    char *out, size_t out_cap);

/**
 * Write the datagram of an empty response to request @req_id into @out:
 * the header alone, sequence 0 and count 0, as memcached sends one (see
 * udp.c). Returns KV_UDP_HDR_LEN, or 0 when @out_cap is smaller.
 */
size_t kv_udp_frame_empty(uint16_t req_id, char *out, size_t out_cap);

#endif
