/* SPDX-License-Identifier: MIT */
/*
 * Types both network backends share (DPDK's stack in pc_dpdk.h, kernel
 * sockets in pc_knet.h), so that one UDP handler body can serve either:
 * each backend's handler receives the same peer description and payload,
 * and each backend's send takes the same peer back.
 */
#ifndef PC_NET_H
#define PC_NET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where a datagram came from, or goes to. */
struct pc_udp_peer {
        uint32_t addr;  /**< IPv4, host order */
        uint16_t port;  /**< UDP port, host order */
        uint8_t mac[6]; /**< link address (DPDK); all zero = look it up. The
                             kernel backend ignores it and reports zeros. */
};

#ifdef __cplusplus
}
#endif

#endif /* PC_NET_H */
