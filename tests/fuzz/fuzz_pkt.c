/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for proto/: one input is one Ethernet frame. pc_pkt_parse()
 * dispatches on the ethertype (ARP, IPv4 -> ICMP/UDP), and every layer's
 * parser also sees the raw bytes. The input is copied into a buffer of its
 * exact size, so any read past the end is a sanitizer report. Accepted
 * frames must describe themselves within bounds, and an accepted echo
 * request must turn into an echo reply that parses.
 *
 * Built two ways: with driver.c, replaying the committed corpus
 * (tests/fuzz/corpus/pkt) and mutations of it as a normal test; with clang,
 * a libFuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_proto.h"

#define CHECK(c)                                                                                \
        do {                                                                                    \
                if (!(c)) {                                                                     \
                        fprintf(stderr, "fuzz_pkt: %s:%d: %s\n", __FILE__, __LINE__, #c);       \
                        abort();                                                                \
                }                                                                               \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint8_t *b = malloc(size ? size : 1);
        struct pc_pkt p, q;
        enum pc_pkt_err e;

        if (b == NULL)
                return 0;
        memcpy(b, data, size);

        /* Each layer on raw bytes. */
        pc_eth_parse(b, size, &q);
        pc_arp_parse(b, size, &q);
        pc_ipv4_parse(b, size, &q);
        pc_icmp_parse(b, size, &q);
        pc_udp_parse(b, size, &q);

        e = pc_pkt_parse(b, size, &p);
        CHECK((unsigned)e < PC_PKT_NR);
        if (e == PC_PKT_OK) {
                CHECK(p.l3_off == PC_ETH_HLEN && size >= PC_ETH_HLEN);
                if (p.ethertype == PC_ETH_P_ARP) {
                        CHECK(size >= PC_ETH_HLEN + PC_ARP_LEN);
                } else {
                        CHECK(p.ethertype == PC_ETH_P_IPV4);
                        CHECK(p.ip_hlen >= PC_IPV4_HLEN && p.l3_off + p.ip_len <= size);
                        CHECK(p.l4_off + p.l4_len <= size);
                        if (p.ip_proto == PC_IPPROTO_UDP)
                                CHECK(p.payload_off + p.payload_len <= p.l4_off + p.l4_len);
                        if (p.ip_proto == PC_IPPROTO_ICMP && p.icmp_type == PC_ICMP_ECHO_REQUEST) {
                                size_t n = pc_icmp_echo_reply(b, &p);
                                CHECK(n <= size);
                                CHECK(pc_pkt_parse(b, n, &q) == PC_PKT_OK);
                                CHECK(q.icmp_type == PC_ICMP_ECHO_REPLY);
                        }
                }
        }
        free(b);
        return 0;
}

