/* SPDX-License-Identifier: MIT */
/*
 * The TCP header: parsing it (lengths, checksum, ports, addresses, flags,
 * options) and writing the options of a SYN. Every read is preceded by the
 * check that makes it safe, as in proto.c.
 *
 * Options: EOL ends the list, NOP is skipped, MSS (kind 2) and window scale
 * (kind 3) are read, others are skipped by their length. An option whose
 * length is under 2, runs past the header, or is wrong for its kind makes
 * the segment malformed (RFC 9293 3.1 lets us reset or drop; dropping
 * costs nothing on a connection and tells a prober nothing).
 */
#include "tcp_pvt.h"

#define OPT_EOL 0
#define OPT_NOP 1
#define OPT_MSS 2
#define OPT_WSCALE 3

static bool bad_addr(uint32_t a)
{
        /* 0.0.0.0, the limited broadcast, and 224.0.0.0/4 multicast: RFC
         * 1122 4.2.3.10 forbids both answering and connecting to them. */
        return a == 0 || a == 0xffffffffu || (a >> 28) == 0xe;
}

static enum pc_tcp_err parse_options(const uint8_t *o, size_t n, struct pc_tcp_seg *s)
{
        size_t i = 0;

        while (i < n) {
                uint8_t kind = o[i], olen;

                if (kind == OPT_EOL)
                        break;
                if (kind == OPT_NOP) {
                        i++;
                        continue;
                }
                if (i + 1 >= n)
                        return PC_TCP_OPTIONS;
                olen = o[i + 1];
                if (olen < 2 || olen > n - i)
                        return PC_TCP_OPTIONS;
                if (kind == OPT_MSS) {
                        if (olen != 4)
                                return PC_TCP_OPTIONS;
                        s->mss = pc_rd16(o + i + 2);
                } else if (kind == OPT_WSCALE) {
                        if (olen != 3)
                                return PC_TCP_OPTIONS;
                        /* RFC 7323 2.3: a shift over 14 is taken as 14. */
                        s->wscale = (int8_t)(o[i + 2] > 14 ? 14 : o[i + 2]);
                }
                i += olen;
        }
        return PC_TCP_OK;
}

enum pc_tcp_err pc_tcp_parse(uint32_t saddr, uint32_t daddr, const uint8_t *buf, size_t len,
                             struct pc_tcp_seg *s)
{
        size_t hlen;
        uint8_t f;

        if (len < PC_TCP_HLEN)
                return PC_TCP_SHORT;
        hlen = (size_t)(buf[12] >> 4) * 4;
        if (hlen < PC_TCP_HLEN || hlen > len || len > 0xffff)
                return PC_TCP_HLEN_BAD;
        if (pc_csum_fold(pc_csum_add(pc_ipv4_pseudo(saddr, daddr, PC_IPPROTO_TCP, len), buf,
                                     len)) != 0)
                return PC_TCP_CSUM;
        s->sport = pc_rd16(buf);
        s->dport = pc_rd16(buf + 2);
        if (s->sport == 0 || s->dport == 0)
                return PC_TCP_PORT;
        if (bad_addr(saddr) || bad_addr(daddr))
                return PC_TCP_ADDR;
        s->seq = pc_rd32(buf + 4);
        s->ack = pc_rd32(buf + 8);
        f = buf[13] & 0x3f;
        s->flags = f;
        if ((f & PC_TCP_SYN) && (f & (PC_TCP_RST | PC_TCP_FIN)))
                return PC_TCP_FLAGS;
        if (!(f & (PC_TCP_SYN | PC_TCP_ACK | PC_TCP_RST)))
                return PC_TCP_FLAGS;
        s->wnd = pc_rd16(buf + 14);
        s->hlen = hlen;
        s->mss = 0;
        s->wscale = -1;
        s->data = buf + hlen;
        s->len = len - hlen;
        return parse_options(buf + PC_TCP_HLEN, hlen - PC_TCP_HLEN, s);
}

size_t pc__tcp_syn_opts(uint8_t *o, uint16_t mss, int wscale)
{
        o[0] = OPT_MSS;
        o[1] = 4;
        o[2] = (uint8_t)(mss >> 8);
        o[3] = (uint8_t)mss;
        if (wscale < 0)
                return 4;
        o[4] = OPT_NOP;
        o[5] = OPT_WSCALE;
        o[6] = 3;
        o[7] = (uint8_t)wscale;
        return 8;
}
