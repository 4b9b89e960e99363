/* SPDX-License-Identifier: MIT */
/*
 * Ethernet, ARP, IPv4, ICMP and UDP: parsing, checksums, and the few frames
 * the stack builds. Every read is preceded by the length check that makes
 * it safe; fields are read bytewise, so no alignment is assumed.
 */
#include <string.h>

#include "pc_proto.h"

static const char *const err_names[PC_PKT_NR] = {
        [PC_PKT_OK] = "ok",
        [PC_PKT_ETH_SHORT] = "eth_short",
        [PC_PKT_ARP_SHORT] = "arp_short",
        [PC_PKT_ARP_FORMAT] = "arp_format",
        [PC_PKT_IP_SHORT] = "ip_short",
        [PC_PKT_IP_VERSION] = "ip_version",
        [PC_PKT_IP_HLEN] = "ip_hlen",
        [PC_PKT_IP_TOTLEN] = "ip_totlen",
        [PC_PKT_IP_CSUM] = "ip_csum",
        [PC_PKT_ICMP_SHORT] = "icmp_short",
        [PC_PKT_ICMP_CSUM] = "icmp_csum",
        [PC_PKT_UDP_SHORT] = "udp_short",
        [PC_PKT_UDP_LEN] = "udp_len",
        [PC_PKT_UDP_CSUM] = "udp_csum",
        [PC_PKT_IP_FRAG] = "ip_frag",
        [PC_PKT_IP_TTL] = "ip_ttl",
        [PC_PKT_ETHERTYPE] = "ethertype",
        [PC_PKT_IP_PROTO] = "ip_proto",
        [PC_PKT_NOT_OURS] = "not_ours",
        [PC_PKT_ICMP_TYPE] = "icmp_type",
        [PC_PKT_NO_LISTENER] = "no_listener",
        [PC_PKT_TCP_BAD] = "tcp_bad",
        [PC_PKT_TCP_DROP] = "tcp_drop",
};

const char *pc_pkt_err_name(enum pc_pkt_err e)
{
        return (unsigned)e < PC_PKT_NR && err_names[e] ? err_names[e] : "?";
}

uint32_t pc_csum_add(uint32_t sum, const void *buf, size_t len)
{
        const uint8_t *b = buf;
        uint64_t s = sum;
        size_t i;

        for (i = 0; i + 1 < len; i += 2)
                s += pc_rd16(b + i);
        if (len & 1)
                s += (uint32_t)b[len - 1] << 8;
        while (s >> 16)
                s = (s & 0xffff) + (s >> 16);
        return (uint32_t)s;
}

uint16_t pc_csum_fold(uint32_t sum)
{
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return (uint16_t)~sum;
}

enum pc_pkt_err pc_eth_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        if (len < PC_ETH_HLEN)
                return PC_PKT_ETH_SHORT;
        p->dst_mac = buf;
        p->src_mac = buf + 6;
        p->ethertype = pc_rd16(buf + 12);
        p->l3_off = PC_ETH_HLEN;
        return PC_PKT_OK;
}

enum pc_pkt_err pc_arp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        if (len < PC_ARP_LEN)
                return PC_PKT_ARP_SHORT;
        /* Ethernet (1), IPv4, 6-byte and 4-byte addresses. */
        if (pc_rd16(buf) != 1 || pc_rd16(buf + 2) != PC_ETH_P_IPV4 || buf[4] != 6 || buf[5] != 4)
                return PC_PKT_ARP_FORMAT;
        p->arp_op = pc_rd16(buf + 6);
        if (p->arp_op != PC_ARP_REQUEST && p->arp_op != PC_ARP_REPLY)
                return PC_PKT_ARP_FORMAT;
        p->arp_sha = buf + 8;
        p->arp_spa = pc_rd32(buf + 14);
        p->arp_tha = buf + 18;
        p->arp_tpa = pc_rd32(buf + 24);
        return PC_PKT_OK;
}

enum pc_pkt_err pc_ipv4_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        size_t hlen, tot;
        uint16_t frag;

        if (len < PC_IPV4_HLEN)
                return PC_PKT_IP_SHORT;
        if (buf[0] >> 4 != 4)
                return PC_PKT_IP_VERSION;
        hlen = (size_t)(buf[0] & 0xf) * 4;
        if (hlen < PC_IPV4_HLEN || hlen > len)
                return PC_PKT_IP_HLEN;
        tot = pc_rd16(buf + 2);
        if (tot < hlen || tot > len)
                return PC_PKT_IP_TOTLEN;
        if (pc_csum_fold(pc_csum_add(0, buf, hlen)) != 0)
                return PC_PKT_IP_CSUM;
        frag = pc_rd16(buf + 6);
        /* More-fragments set, or a non-zero offset: part of a fragmented
         * datagram. We do not reassemble. */
        if (frag & 0x3fff)
                return PC_PKT_IP_FRAG;
        p->ip_ttl = buf[8];
        if (p->ip_ttl == 0)
                return PC_PKT_IP_TTL;
        p->ip_proto = buf[9];
        p->ip_src = pc_rd32(buf + 12);
        p->ip_dst = pc_rd32(buf + 16);
        p->ip_hlen = hlen;
        p->ip_len = tot;
        p->l4_off = hlen;
        p->l4_len = tot - hlen;
        return PC_PKT_OK;
}

enum pc_pkt_err pc_icmp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        if (len < PC_ICMP_HLEN)
                return PC_PKT_ICMP_SHORT;
        if (pc_csum_fold(pc_csum_add(0, buf, len)) != 0)
                return PC_PKT_ICMP_CSUM;
        p->icmp_type = buf[0];
        p->icmp_code = buf[1];
        return PC_PKT_OK;
}

uint32_t pc_ipv4_pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
        uint8_t ph[12];

        pc_wr32(ph, src);
        pc_wr32(ph + 4, dst);
        ph[8] = 0;
        ph[9] = proto;
        pc_wr16(ph + 10, (uint16_t)len);
        return pc_csum_add(0, ph, sizeof(ph));
}

enum pc_pkt_err pc_udp_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        size_t ulen;

        if (len < PC_UDP_HLEN)
                return PC_PKT_UDP_SHORT;
        ulen = pc_rd16(buf + 4);
        if (ulen < PC_UDP_HLEN || ulen > len)
                return PC_PKT_UDP_LEN;
        if (pc_rd16(buf + 6) != 0) {
                uint32_t s = pc_ipv4_pseudo(p->ip_src, p->ip_dst, PC_IPPROTO_UDP, ulen);
                if (pc_csum_fold(pc_csum_add(s, buf, ulen)) != 0)
                        return PC_PKT_UDP_CSUM;
        }
        p->sport = pc_rd16(buf);
        p->dport = pc_rd16(buf + 2);
        p->payload_off = PC_UDP_HLEN;
        p->payload_len = ulen - PC_UDP_HLEN;
        return PC_PKT_OK;
}

enum pc_pkt_err pc_pkt_parse(const uint8_t *buf, size_t len, struct pc_pkt *p)
{
        enum pc_pkt_err e;
        const uint8_t *l3, *l4;
        size_t l3len;

        memset(p, 0, sizeof(*p));
        e = pc_eth_parse(buf, len, p);
        if (e)
                return e;
        l3 = buf + p->l3_off;
        l3len = len - p->l3_off;
        if (p->ethertype == PC_ETH_P_ARP)
                return pc_arp_parse(l3, l3len, p);
        if (p->ethertype != PC_ETH_P_IPV4)
                return PC_PKT_ETHERTYPE;
        e = pc_ipv4_parse(l3, l3len, p);
        if (e)
                return e;
        l4 = l3 + p->l4_off;
        p->l4_off += p->l3_off;
        switch (p->ip_proto) {
        case PC_IPPROTO_ICMP:
                return pc_icmp_parse(l4, p->l4_len, p);
        case PC_IPPROTO_UDP:
                e = pc_udp_parse(l4, p->l4_len, p);
                if (e == PC_PKT_OK)
                        p->payload_off += p->l4_off;
                return e;
        case PC_IPPROTO_TCP:
                /* The segment is the TCP engine's to check (pc_tcp_parse());
                 * the ports are read here so the stack can find the
                 * connection's worker. The payload is the whole segment. */
                if (p->l4_len >= 4) {
                        p->sport = pc_rd16(l4);
                        p->dport = pc_rd16(l4 + 2);
                }
                p->payload_off = p->l4_off;
                p->payload_len = p->l4_len;
                return PC_PKT_OK;
        default:
                return PC_PKT_IP_PROTO;
        }
}

void pc_ipv4_build(uint8_t *ip, size_t total, uint8_t proto, uint32_t src, uint32_t dst)
{
        ip[0] = 0x45;
        ip[1] = 0;
        pc_wr16(ip + 2, (uint16_t)total);
        pc_wr16(ip + 4, 0);      /* id: unused without fragments */
        pc_wr16(ip + 6, 0x4000); /* don't fragment */
        ip[8] = 64;
        ip[9] = proto;
        pc_wr16(ip + 10, 0);
        pc_wr32(ip + 12, src);
        pc_wr32(ip + 16, dst);
        pc_wr16(ip + 10, pc_csum_fold(pc_csum_add(0, ip, PC_IPV4_HLEN)));
}

size_t pc_arp_build(uint8_t *buf, size_t cap, uint16_t op, const uint8_t *eth_dst,
                    const uint8_t *sha, uint32_t spa, const uint8_t *tha, uint32_t tpa)
{
        static const uint8_t zero[6];
        uint8_t *a = buf + PC_ETH_HLEN;

        if (cap < PC_ETH_HLEN + PC_ARP_LEN)
                return 0;
        memcpy(buf, eth_dst, 6);
        memcpy(buf + 6, sha, 6);
        pc_wr16(buf + 12, PC_ETH_P_ARP);
        pc_wr16(a, 1);
        pc_wr16(a + 2, PC_ETH_P_IPV4);
        a[4] = 6;
        a[5] = 4;
        pc_wr16(a + 6, op);
        memcpy(a + 8, sha, 6);
        pc_wr32(a + 14, spa);
        memcpy(a + 18, tha ? tha : zero, 6);
        pc_wr32(a + 24, tpa);
        return PC_ETH_HLEN + PC_ARP_LEN;
}

size_t pc_udp_build(uint8_t *buf, size_t cap, const uint8_t *eth_src, const uint8_t *eth_dst,
                    uint32_t saddr, uint32_t daddr, uint16_t sport, uint16_t dport,
                    const void *payload, size_t len)
{
        size_t ulen = PC_UDP_HLEN + len, total = PC_IPV4_HLEN + ulen;
        uint8_t *ip = buf + PC_ETH_HLEN, *u = ip + PC_IPV4_HLEN;
        uint16_t c;

        if (total > 0xffff || cap < PC_ETH_HLEN || cap - PC_ETH_HLEN < total)
                return 0;
        memcpy(buf, eth_dst, 6);
        memcpy(buf + 6, eth_src, 6);
        pc_wr16(buf + 12, PC_ETH_P_IPV4);
        pc_ipv4_build(ip, total, PC_IPPROTO_UDP, saddr, daddr);
        pc_wr16(u, sport);
        pc_wr16(u + 2, dport);
        pc_wr16(u + 4, (uint16_t)ulen);
        pc_wr16(u + 6, 0);
        if (len)
                memcpy(u + PC_UDP_HLEN, payload, len);
        c = pc_csum_fold(
                pc_csum_add(pc_ipv4_pseudo(saddr, daddr, PC_IPPROTO_UDP, ulen), u, ulen));
        /* A computed 0 is sent as 0xffff: 0 means "no checksum". */
        pc_wr16(u + 6, c ? c : 0xffff);
        return PC_ETH_HLEN + total;
}

size_t pc_icmp_echo_reply(uint8_t *frame, const struct pc_pkt *p)
{
        uint8_t mac[6];
        uint8_t *ip = frame + p->l3_off, *icmp = frame + p->l4_off;

        memcpy(mac, frame, 6);
        memcpy(frame, frame + 6, 6);
        memcpy(frame + 6, mac, 6);
        /* A fresh header without options: the reply's options are not the
         * request's (RFC 1122 3.2.2.6 lets us drop them). */
        memmove(ip + PC_IPV4_HLEN, icmp, p->l4_len);
        icmp = ip + PC_IPV4_HLEN;
        pc_ipv4_build(ip, PC_IPV4_HLEN + p->l4_len, PC_IPPROTO_ICMP, p->ip_dst, p->ip_src);
        icmp[0] = PC_ICMP_ECHO_REPLY;
        pc_wr16(icmp + 2, 0);
        pc_wr16(icmp + 2, pc_csum_fold(pc_csum_add(0, icmp, p->l4_len)));
        return p->l3_off + PC_IPV4_HLEN + p->l4_len;
}
