/* SPDX-License-Identifier: MIT */
/*
 * proto/: Ethernet, ARP, IPv4, ICMP and UDP as plain functions over
 * (buffer, length), with no DPDK in sight, so they are unit-tested and
 * fuzzed on their own. Every parser checks every length before it reads
 * a byte; a frame it rejects gets one reason code, which the stack counts.
 *
 * Policy: IPv4 options are accepted (covered by the header checksum,
 * skipped); fragments are dropped (PC_PKT_IP_FRAG); a TTL of 0 is dropped;
 * a UDP checksum of 0 means "none" and is accepted, any other is verified.
 * Multi-byte fields in struct pc_pkt are in host byte order.
 */
#ifndef PC_PROTO_H
#define PC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_ETH_HLEN 14
#define PC_ETH_P_IPV4 0x0800
#define PC_ETH_P_ARP 0x0806
#define PC_ARP_LEN 28
#define PC_IPV4_HLEN 20
#define PC_ICMP_HLEN 8
#define PC_UDP_HLEN 8
#define PC_IPPROTO_ICMP 1
#define PC_IPPROTO_TCP 6
#define PC_IPPROTO_UDP 17
#define PC_ARP_REQUEST 1
#define PC_ARP_REPLY 2
#define PC_ICMP_ECHO_REPLY 0
#define PC_ICMP_ECHO_REQUEST 8

/** Why a frame was dropped. The first group is malformed input. */
enum pc_pkt_err {
        PC_PKT_OK = 0,
        PC_PKT_ETH_SHORT,    /**< shorter than an Ethernet header */
        PC_PKT_ARP_SHORT,    /**< shorter than an IPv4-over-Ethernet ARP */
        PC_PKT_ARP_FORMAT,   /**< not Ethernet/IPv4 hardware/protocol, or bad op */
        PC_PKT_IP_SHORT,     /**< shorter than a minimal IPv4 header */
        PC_PKT_IP_VERSION,   /**< version is not 4 */
        PC_PKT_IP_HLEN,      /**< IHL < 5 or beyond the frame */
        PC_PKT_IP_TOTLEN,    /**< total length < IHL or beyond the frame */
        PC_PKT_IP_CSUM,      /**< bad header checksum */
        PC_PKT_ICMP_SHORT,   /**< shorter than an ICMP header */
        PC_PKT_ICMP_CSUM,    /**< bad ICMP checksum */
        PC_PKT_UDP_SHORT,    /**< shorter than a UDP header */
        PC_PKT_UDP_LEN,      /**< UDP length field < 8 or beyond the IP payload */
        PC_PKT_UDP_CSUM,     /**< bad (non-zero) UDP checksum */
        PC_PKT_TCP_BAD,      /**< a TCP segment the engine found malformed
                                  (its stats say how: pc_tcp.h) */
        PC_PKT_MALFORMED_END, /**< codes below are malformed input */
        PC_PKT_IP_FRAG = PC_PKT_MALFORMED_END, /**< a fragment: not reassembled */
        PC_PKT_IP_TTL,       /**< TTL 0 */
        PC_PKT_ETHERTYPE,    /**< neither IPv4 nor ARP (VLANs included) */
        PC_PKT_IP_PROTO,     /**< neither ICMP, UDP nor TCP */
        PC_PKT_NOT_OURS,     /**< addressed to another host */
        PC_PKT_ICMP_TYPE,    /**< ICMP other than echo request */
        PC_PKT_NO_LISTENER,  /**< UDP port nobody bound */
        PC_PKT_TCP_DROP,     /**< a well-formed TCP segment the engine did not
                                  take (no connection, out of window...: its
                                  stats say why) */
        PC_PKT_NR
};

/** Short name of a reason ("ip_csum"), "?" for an unknown one. */
const char *pc_pkt_err_name(enum pc_pkt_err e);

/* Big-endian (network order) fields, read and written a byte at a time:
 * no alignment needed. */
static inline uint16_t pc_rd16(const uint8_t *b)
{
        return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t pc_rd32(const uint8_t *b)
{
        return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline void pc_wr16(uint8_t *b, uint16_t v)
{
        b[0] = (uint8_t)(v >> 8);
        b[1] = (uint8_t)v;
}

static inline void pc_wr32(uint8_t *b, uint32_t v)
{
        b[0] = (uint8_t)(v >> 24);
        b[1] = (uint8_t)(v >> 16);
        b[2] = (uint8_t)(v >> 8);
        b[3] = (uint8_t)v;
}

/** Whether @e counts as a malformed frame (rather than one we don't serve). */
static inline bool pc_pkt_err_malformed(enum pc_pkt_err e)
{
        return e > PC_PKT_OK && e < PC_PKT_MALFORMED_END;
}

/** What pc_pkt_parse() found. Offsets are from the start of the frame. */
struct pc_pkt {
        const uint8_t *dst_mac, *src_mac;
        uint16_t ethertype;
        size_t l3_off;
        /* ARP */
        uint16_t arp_op;
        const uint8_t *arp_sha, *arp_tha;
        uint32_t arp_spa, arp_tpa;
        /* IPv4 */
        uint32_t ip_src, ip_dst;
        uint8_t ip_proto, ip_ttl;
        size_t ip_hlen, ip_len; /* header length, total length */
        size_t l4_off, l4_len;
        /* ICMP */
        uint8_t icmp_type, icmp_code;
        /* UDP */
        uint16_t sport, dport;
        size_t payload_off, payload_len;
};

/** Ethernet header: fills MACs, ethertype, l3_off. 0 or PC_PKT_ETH_SHORT. */
enum pc_pkt_err pc_eth_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/** ARP over Ethernet/IPv4 at @buf (the L3 bytes). */
enum pc_pkt_err pc_arp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/**
 * IPv4 header at @buf (the L3 bytes, maybe with Ethernet padding after
 * the datagram): checks version, lengths, checksum, fragments, TTL. Sets
 * l4_off/l4_len relative to @buf.
 */
enum pc_pkt_err pc_ipv4_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/** ICMP message at @buf (the L4 bytes): header length and checksum. */
enum pc_pkt_err pc_icmp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/**
 * UDP datagram at @buf (the L4 bytes); @p's ip_src/ip_dst must be set for
 * the pseudo-header checksum. Sets payload_off/len relative to @buf.
 */
enum pc_pkt_err pc_udp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/**
 * Parse a whole frame: Ethernet, then ARP or IPv4, then ICMP or UDP,
 * with every offset made relative to the frame. Stops at the first
 * problem. Returns PC_PKT_OK or the reason.
 */
enum pc_pkt_err pc_pkt_parse(const uint8_t *buf, size_t len, struct pc_pkt *p);

/** The Internet checksum's one's-complement sum of @len bytes, folded,
 * starting from @sum (not inverted). */
uint32_t pc_csum_add(uint32_t sum, const void *buf, size_t len);

/** Fold and invert @sum into a checksum field value (network order bytes). */
uint16_t pc_csum_fold(uint32_t sum);

/**
 * The one's-complement sum (folded, not inverted) of the IPv4 pseudo-header
 * that TCP and UDP checksums cover: @src, @dst, @proto and the L4 length
 * @len. Add the L4 bytes to it with pc_csum_add(), then pc_csum_fold().
 */
uint32_t pc_ipv4_pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len);

/**
 * Write a 20-byte IPv4 header (no options, don't-fragment, TTL 64, id 0)
 * with its checksum at @ip for a datagram of @total bytes (header
 * included, at most 65535) of protocol @proto from @src to @dst.
 */
void pc_ipv4_build(uint8_t *ip, size_t total, uint8_t proto, uint32_t src, uint32_t dst);

/**
 * Write an ARP packet (Ethernet + ARP, 42 bytes) into @buf of @cap bytes.
 * @tha NULL means zeros. Returns the length, or 0 if @cap is too small.
 */
size_t pc_arp_build(uint8_t *buf, size_t cap, uint16_t op, const uint8_t *eth_dst,
                    const uint8_t *sha, uint32_t spa, const uint8_t *tha, uint32_t tpa);

/**
 * Write Ethernet + IPv4 + UDP headers and @len payload bytes into @buf of
 * @cap bytes, with IP and UDP checksums. Returns the frame length, or 0 if
 * it does not fit (or exceeds one IPv4 datagram).
 */
size_t pc_udp_build(uint8_t *buf, size_t cap, const uint8_t *eth_src, const uint8_t *eth_dst,
                    uint32_t saddr, uint32_t daddr, uint16_t sport, uint16_t dport,
                    const void *payload, size_t len);

/**
 * Turn the ICMP echo request @frame (parsed into @p by pc_pkt_parse(), so
 * its lengths are known good) into the echo reply, in place: swap MACs and
 * addresses, type 0, TTL 64, checksums recomputed. Returns the reply's
 * frame length (Ethernet padding trimmed).
 */
size_t pc_icmp_echo_reply(uint8_t *frame, const struct pc_pkt *p);

/**
 * Swap the destination and source MAC addresses of the Ethernet frame at
 * @frame (at least 12 bytes, the caller's check) in place, with one 8-byte
 * and one 4-byte load and store. Any thread.
 */
static inline void pc_eth_swap_macs(uint8_t *frame)
{
        uint64_t a, na;
        uint32_t b, nb;

        /* Bytes 0-5 are the destination, 6-11 the source: the new first 8
         * bytes are the old 6..11 then 0..1, the new last 4 the old 2..5. */
        memcpy(&a, frame, 8);
        memcpy(&b, frame + 8, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        na = (a >> 48) | ((uint64_t)b << 16) | (a << 48);
        nb = (uint32_t)(a >> 16);
#else
        na = (a << 48) | ((uint64_t)b << 16) | (a >> 48);
        nb = (uint32_t)(a >> 16);
#endif
        memcpy(frame, &na, 8);
        memcpy(frame + 8, &nb, 4);
}

#ifdef __cplusplus
}
#endif

#endif /* PC_PROTO_H */
