/* SPDX-License-Identifier: MIT */
/*
 * The engine's secrets at work: SipHash-2-4 (Aumasson and Bernstein) as the
 * keyed function, initial sequence numbers as RFC 6528 has them (a clock
 * plus a keyed hash of the 4-tuple, so an off-path attacker cannot guess
 * one and a reincarnated 4-tuple starts past its predecessor), and SYN
 * cookies for a listener whose backlog is full.
 *
 * A cookie is the ISS of a SYN-ACK for which we keep no state:
 *
 *   bits 31..27  the cookie clock (64 s periods) mod 32
 *   bits 26..24  index of the peer's MSS in cookie_mss[]
 *   bits 23..0   SipHash(4-tuple, peer's ISN, full clock, MSS index)
 *
 * The ACK that completes the handshake carries cookie + 1; a cookie of the
 * current period or the one before is taken, so one lives 64 to 128 s. A
 * forger must guess 24 bits per attempt for each 4-tuple. What the cookie
 * cannot carry is dropped: window scaling (a cookie SYN-ACK offers none,
 * so the connection runs unscaled) and any data in the SYN.
 */
#include <string.h>

#include "tcp_pvt.h"

static const uint16_t cookie_mss[8] = {536, 1200, 1300, 1360, 1400, 1440, 1460, 8960};

static inline uint64_t rotl(uint64_t x, unsigned b)
{
        return x << b | x >> (64 - b);
}

static inline void sipround(uint64_t *v0, uint64_t *v1, uint64_t *v2, uint64_t *v3)
{
        *v0 += *v1;
        *v1 = rotl(*v1, 13);
        *v1 ^= *v0;
        *v0 = rotl(*v0, 32);
        *v2 += *v3;
        *v3 = rotl(*v3, 16);
        *v3 ^= *v2;
        *v0 += *v3;
        *v3 = rotl(*v3, 21);
        *v3 ^= *v0;
        *v2 += *v1;
        *v1 = rotl(*v1, 17);
        *v1 ^= *v2;
        *v2 = rotl(*v2, 32);
}

static inline uint64_t rd64le(const uint8_t *b)
{
        uint64_t v = 0;

        for (int i = 7; i >= 0; i--)
                v = v << 8 | b[i];
        return v;
}

uint64_t pc__siphash(const uint64_t key[2], const void *msg, size_t len)
{
        const uint8_t *m = msg;
        uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
        uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
        uint64_t b = (uint64_t)len << 56;
        size_t i;

        for (i = 0; i + 8 <= len; i += 8) {
                uint64_t w = rd64le(m + i);
                v3 ^= w;
                sipround(&v0, &v1, &v2, &v3);
                sipround(&v0, &v1, &v2, &v3);
                v0 ^= w;
        }
        for (size_t k = 0; i + k < len; k++)
                b |= (uint64_t)m[i + k] << (8 * k);
        v3 ^= b;
        sipround(&v0, &v1, &v2, &v3);
        sipround(&v0, &v1, &v2, &v3);
        v0 ^= b;
        v2 ^= 0xff;
        for (int r = 0; r < 4; r++)
                sipround(&v0, &v1, &v2, &v3);
        return v0 ^ v1 ^ v2 ^ v3;
}

/* The 4-tuple and up to 16 more bytes, as the hash's message. */
static size_t tuple_msg(uint8_t *m, uint32_t laddr, uint16_t lport, uint32_t raddr,
                        uint16_t rport)
{
        memcpy(m, &laddr, 4);
        memcpy(m + 4, &raddr, 4);
        memcpy(m + 8, &lport, 2);
        memcpy(m + 10, &rport, 2);
        return 12;
}

uint32_t pc__tcp_isn(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                     uint16_t rport)
{
        uint8_t m[12];
        size_t n;

        if (e->ops.isn)
                return e->ops.isn(e->ctx, laddr, lport, raddr, rport);
        n = tuple_msg(m, laddr, lport, raddr, rport);
        /* RFC 6528: M, a timer ticking every 4 us (here 4.096 us), plus F. */
        return (uint32_t)(e->now >> 12) + (uint32_t)pc__siphash(e->key, m, n);
}

static uint32_t cookie_mac(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                           uint16_t rport, uint32_t peer_isn, uint64_t t, unsigned idx)
{
        uint8_t m[28];
        size_t n = tuple_msg(m, laddr, lport, raddr, rport);

        memcpy(m + n, &peer_isn, 4);
        memcpy(m + n + 4, &t, 8);
        m[n + 12] = (uint8_t)idx;
        return (uint32_t)pc__siphash(e->key, m, n + 13) & 0xffffff;
}

uint32_t pc__tcp_cookie(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                        uint16_t rport, uint32_t peer_isn, uint16_t mss)
{
        uint64_t t = e->now / TCP_COOKIE_PERIOD_NS;
        unsigned idx = 0;

        for (unsigned i = 1; i < 8; i++)
                if (cookie_mss[i] <= mss)
                        idx = i;
        return (uint32_t)(t & 0x1f) << 27 | idx << 24 |
               cookie_mac(e, laddr, lport, raddr, rport, peer_isn, t, idx);
}

uint16_t pc__tcp_cookie_check(struct pc_tcpe *e, uint32_t laddr, uint16_t lport,
                              uint32_t raddr, uint16_t rport, uint32_t peer_isn,
                              uint32_t cookie)
{
        uint64_t now_t = e->now / TCP_COOKIE_PERIOD_NS;
        unsigned idx = cookie >> 24 & 7;

        for (uint64_t back = 0; back < 2 && back <= now_t; back++) {
                uint64_t t = now_t - back;
                if ((t & 0x1f) == cookie >> 27 &&
                    cookie_mac(e, laddr, lport, raddr, rport, peer_isn, t, idx) ==
                            (cookie & 0xffffff))
                        return cookie_mss[idx];
        }
        return 0;
}
