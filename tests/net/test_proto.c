/* SPDX-License-Identifier: MIT */
/*
 * proto/ parsers without DPDK: good frames parse with the right fields,
 * every malformed kind gets its own reason, every truncation of a good
 * frame is rejected, and the frames we build parse back.
 */
#include <string.h>

#include "pc_test.h"
#include "pc_proto.h"

static const uint8_t MAC_A[6] = {0x02, 0, 0, 0, 0, 0xa};
static const uint8_t MAC_B[6] = {0x02, 0, 0, 0, 0, 0xb};
#define IP_A 0x0a000001u
#define IP_B 0x0a000002u

static void fix_ip_csum(uint8_t *f)
{
        uint8_t *ip = f + PC_ETH_HLEN;
        size_t hlen = (size_t)(ip[0] & 0xf) * 4;
        uint16_t c;

        ip[10] = ip[11] = 0;
        c = pc_csum_fold(pc_csum_add(0, ip, hlen));
        ip[10] = (uint8_t)(c >> 8);
        ip[11] = (uint8_t)c;
}

static size_t udp_frame(uint8_t *f, size_t cap, const char *payload)
{
        return pc_udp_build(f, cap, MAC_A, MAC_B, IP_A, IP_B, 1234, 5678, payload,
                            strlen(payload));
}

/* An ICMP echo request with @optlen bytes of IPv4 options. */
static size_t echo_frame(uint8_t *f, size_t optlen)
{
        uint8_t *ip = f + PC_ETH_HLEN, *icmp;
        size_t hlen = PC_IPV4_HLEN + optlen, l4 = PC_ICMP_HLEN + 16;
        uint16_t c;

        memset(f, 0, 128);
        memcpy(f, MAC_B, 6);
        memcpy(f + 6, MAC_A, 6);
        f[12] = 0x08;
        ip[0] = (uint8_t)(0x40 | hlen / 4);
        ip[2] = (uint8_t)((hlen + l4) >> 8);
        ip[3] = (uint8_t)(hlen + l4);
        ip[8] = 64;
        ip[9] = PC_IPPROTO_ICMP;
        ip[12] = 10, ip[15] = 1; /* 10.0.0.1 */
        ip[16] = 10, ip[19] = 2; /* 10.0.0.2 */
        for (size_t i = 0; i < optlen; i++)
                ip[PC_IPV4_HLEN + i] = 1; /* NOP options */
        fix_ip_csum(f);
        icmp = ip + hlen;
        icmp[0] = PC_ICMP_ECHO_REQUEST;
        icmp[4] = 0x12, icmp[5] = 0x34, icmp[7] = 1;
        for (int i = 0; i < 16; i++)
                icmp[8 + i] = (uint8_t)i;
        c = pc_csum_fold(pc_csum_add(0, icmp, l4));
        icmp[2] = (uint8_t)(c >> 8);
        icmp[3] = (uint8_t)c;
        return PC_ETH_HLEN + hlen + l4;
}

static void test_udp_roundtrip(void **state)
{
        uint8_t f[256];
        struct pc_pkt p;
        size_t len = udp_frame(f, sizeof(f), "hello");

        (void)state;
        assert_int_equal(len, PC_ETH_HLEN + PC_IPV4_HLEN + PC_UDP_HLEN + 5);
        assert_int_equal(pc_pkt_parse(f, len, &p), PC_PKT_OK);
        assert_int_equal(p.ethertype, PC_ETH_P_IPV4);
        assert_memory_equal(p.src_mac, MAC_A, 6);
        assert_memory_equal(p.dst_mac, MAC_B, 6);
        assert_int_equal(p.ip_src, IP_A);
        assert_int_equal(p.ip_dst, IP_B);
        assert_int_equal(p.sport, 1234);
        assert_int_equal(p.dport, 5678);
        assert_int_equal(p.payload_len, 5);
        assert_memory_equal(f + p.payload_off, "hello", 5);
        /* Ethernet padding after the datagram is fine. */
        memset(f + len, 0, 20);
        assert_int_equal(pc_pkt_parse(f, len + 20, &p), PC_PKT_OK);
        assert_int_equal(p.payload_len, 5);
        /* A zero UDP checksum means "none". */
        f[PC_ETH_HLEN + PC_IPV4_HLEN + 6] = f[PC_ETH_HLEN + PC_IPV4_HLEN + 7] = 0;
        f[len - 1] ^= 0xff;
        assert_int_equal(pc_pkt_parse(f, len, &p), PC_PKT_OK);
        /* Too big for one datagram, or for the buffer. */
        assert_int_equal(pc_udp_build(f, 40, MAC_A, MAC_B, IP_A, IP_B, 1, 2, "x", 1), 0);
}

static void test_arp_roundtrip(void **state)
{
        uint8_t f[64];
        struct pc_pkt p;
        size_t len;

        (void)state;
        len = pc_arp_build(f, sizeof(f), PC_ARP_REQUEST, MAC_B, MAC_A, IP_A, NULL, IP_B);
        assert_int_equal(len, 42);
        assert_int_equal(pc_pkt_parse(f, len, &p), PC_PKT_OK);
        assert_int_equal(p.ethertype, PC_ETH_P_ARP);
        assert_int_equal(p.arp_op, PC_ARP_REQUEST);
        assert_int_equal(p.arp_spa, IP_A);
        assert_int_equal(p.arp_tpa, IP_B);
        assert_memory_equal(p.arp_sha, MAC_A, 6);
        assert_int_equal(pc_arp_build(f, 41, PC_ARP_REPLY, MAC_B, MAC_A, IP_A, MAC_B, IP_B), 0);
}

static void test_icmp_echo_reply(void **state)
{
        uint8_t f[128];
        struct pc_pkt p, r;
        size_t len, rlen;

        (void)state;
        /* With 8 bytes of IPv4 options: accepted, and dropped in the reply. */
        len = echo_frame(f, 8);
        assert_int_equal(pc_pkt_parse(f, len, &p), PC_PKT_OK);
        assert_int_equal(p.ip_hlen, 28);
        assert_int_equal(p.icmp_type, PC_ICMP_ECHO_REQUEST);
        rlen = pc_icmp_echo_reply(f, &p);
        assert_int_equal(rlen, len - 8);
        assert_int_equal(pc_pkt_parse(f, rlen, &r), PC_PKT_OK);
        assert_int_equal(r.icmp_type, PC_ICMP_ECHO_REPLY);
        assert_int_equal(r.ip_src, p.ip_dst);
        assert_int_equal(r.ip_dst, p.ip_src);
        assert_memory_equal(r.dst_mac, MAC_A, 6);
        assert_int_equal(f[PC_ETH_HLEN + 20 + 8 + 15], 15); /* payload kept */
}

/* Parse @f (of @len) expecting @want. */
#define EXPECT(f, len, want)                                                                    \
        do {                                                                                    \
                struct pc_pkt p_;                                                               \
                enum pc_pkt_err e_ = pc_pkt_parse((f), (len), &p_);                             \
                if (e_ != (want))                                                               \
                        fail_msg("%s: got %s, want %s", #want, pc_pkt_err_name(e_),              \
                                 pc_pkt_err_name(want));                                        \
        } while (0)

static void test_malformed_every_kind(void **state)
{
        uint8_t f[256] = {0}, g[256];
        uint8_t *ip = f + PC_ETH_HLEN, *udp = ip + PC_IPV4_HLEN;
        size_t len;

        (void)state;
        EXPECT(f, 13, PC_PKT_ETH_SHORT);
        EXPECT(f, 0, PC_PKT_ETH_SHORT);

        len = pc_arp_build(f, sizeof(f), PC_ARP_REQUEST, MAC_B, MAC_A, IP_A, NULL, IP_B);
        EXPECT(f, len - 1, PC_PKT_ARP_SHORT);
        f[PC_ETH_HLEN + 1] = 6; /* hardware type 6 */
        EXPECT(f, len, PC_PKT_ARP_FORMAT);
        len = pc_arp_build(f, sizeof(f), 3, MAC_B, MAC_A, IP_A, NULL, IP_B); /* RARP op */
        EXPECT(f, len, PC_PKT_ARP_FORMAT);

        len = udp_frame(f, sizeof(f), "payload");
        memcpy(g, f, len);
        EXPECT(f, PC_ETH_HLEN + 19, PC_PKT_IP_SHORT);
        ip[0] = 0x65;
        EXPECT(f, len, PC_PKT_IP_VERSION);
        ip[0] = 0x44;
        EXPECT(f, len, PC_PKT_IP_HLEN);
        ip[0] = 0x4f; /* 60-byte header in a shorter frame */
        EXPECT(f, PC_ETH_HLEN + 40, PC_PKT_IP_HLEN);
        memcpy(f, g, len);
        ip[3] += 1; /* total length beyond the frame */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_TOTLEN);
        ip[2] = 0, ip[3] = 19; /* total < header */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_TOTLEN);
        memcpy(f, g, len);
        ip[8] ^= 1; /* TTL changed, checksum not */
        EXPECT(f, len, PC_PKT_IP_CSUM);
        memcpy(f, g, len);
        ip[6] |= 0x20; /* more fragments */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_FRAG);
        ip[6] = 0, ip[7] = 1; /* offset 8 */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_FRAG);
        memcpy(f, g, len);
        ip[8] = 0;
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_TTL);
        memcpy(f, g, len);
        ip[9] = 47; /* GRE */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_IP_PROTO);
        /* TCP is the engine's to check: the parser takes it and reads the
         * ports (here the UDP header's first four bytes). */
        ip[9] = PC_IPPROTO_TCP;
        fix_ip_csum(f);
        {
                struct pc_pkt tp;
                assert_int_equal(pc_pkt_parse(f, len, &tp), PC_PKT_OK);
                assert_int_equal(tp.ip_proto, PC_IPPROTO_TCP);
                assert_int_equal(tp.sport, pc_rd16(ip + 20));
                assert_int_equal(tp.dport, pc_rd16(ip + 22));
                assert_int_equal(tp.payload_off, PC_ETH_HLEN + PC_IPV4_HLEN);
                assert_int_equal(tp.payload_len, len - PC_ETH_HLEN - PC_IPV4_HLEN);
        }
        memcpy(f, g, len);
        f[12] = 0x86, f[13] = 0xdd;
        EXPECT(f, len, PC_PKT_ETHERTYPE);
        f[12] = 0x81, f[13] = 0x00; /* a VLAN tag: not served */
        EXPECT(f, len, PC_PKT_ETHERTYPE);

        memcpy(f, g, len);
        ip[2] = 0, ip[3] = PC_IPV4_HLEN + 4; /* 4 bytes of UDP */
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_UDP_SHORT);
        memcpy(f, g, len);
        udp[4] = 0, udp[5] = 7;
        EXPECT(f, len, PC_PKT_UDP_LEN);
        udp[4] = 0, udp[5] = 200;
        EXPECT(f, len, PC_PKT_UDP_LEN);
        memcpy(f, g, len);
        f[len - 1] ^= 0x55;
        EXPECT(f, len, PC_PKT_UDP_CSUM);

        len = echo_frame(f, 0);
        memcpy(g, f, len);
        ip[2] = 0, ip[3] = PC_IPV4_HLEN + 4;
        fix_ip_csum(f);
        EXPECT(f, len, PC_PKT_ICMP_SHORT);
        memcpy(f, g, len);
        f[len - 1] ^= 1;
        EXPECT(f, len, PC_PKT_ICMP_CSUM);

        /* The malformed flag is set exactly for the first group. */
        assert_true(pc_pkt_err_malformed(PC_PKT_UDP_CSUM));
        assert_true(pc_pkt_err_malformed(PC_PKT_ETH_SHORT));
        assert_false(pc_pkt_err_malformed(PC_PKT_OK));
        assert_false(pc_pkt_err_malformed(PC_PKT_IP_FRAG));
        assert_false(pc_pkt_err_malformed(PC_PKT_NOT_OURS));
        for (int e = 0; e < PC_PKT_NR; e++)
                assert_string_not_equal(pc_pkt_err_name((enum pc_pkt_err)e), "?");
}

/* Every proper prefix of a good frame is rejected (and read in bounds:
 * each prefix is copied into a buffer of exactly its size, so ASan sees
 * any overread). */
static void test_truncations(void **state)
{
        uint8_t f[256], a[64];
        size_t lens[3];
        uint8_t frames[3][256];

        (void)state;
        lens[0] = udp_frame(frames[0], 256, "truncate me");
        lens[1] = echo_frame(frames[1], 4);
        lens[2] = pc_arp_build(frames[2], 256, PC_ARP_REPLY, MAC_A, MAC_B, IP_B, MAC_A, IP_A);
        (void)a;
        for (int k = 0; k < 3; k++) {
                for (size_t n = 0; n < lens[k]; n++) {
                        uint8_t *b = malloc(n ? n : 1);
                        struct pc_pkt p;
                        memcpy(b, frames[k], n);
                        assert_int_not_equal(pc_pkt_parse(b, n, &p), PC_PKT_OK);
                        free(b);
                }
                memcpy(f, frames[k], lens[k]);
                EXPECT(f, lens[k], PC_PKT_OK);
        }
}

static void test_swap_macs(void **state)
{
        uint8_t f[14], want[14];

        (void)state;
        for (int i = 0; i < 14; i++)
                f[i] = (uint8_t)(0xa0 + i);
        memcpy(want, f + 6, 6);
        memcpy(want + 6, f, 6);
        memcpy(want + 12, f + 12, 2);
        pc_eth_swap_macs(f);
        assert_memory_equal(f, want, 14);
        pc_eth_swap_macs(f);
        for (int i = 0; i < 14; i++)
                assert_int_equal(f[i], 0xa0 + i);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_udp_roundtrip),
                cmocka_unit_test(test_swap_macs),
                cmocka_unit_test(test_arp_roundtrip),
                cmocka_unit_test(test_icmp_echo_reply),
                cmocka_unit_test(test_malformed_every_kind),
                cmocka_unit_test(test_truncations),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
