/* SPDX-License-Identifier: MIT */
/*
 * What both network backends share (DPDK's stack in pc_dpdk.h, kernel
 * sockets in pc_knet.h): the peer of a datagram, and a UDP endpoint that
 * hides which backend serves it, so one handler, written once, runs on
 * either; the service picks the backend at run time.
 */
#ifndef PC_NET_H
#define PC_NET_H

#include <stddef.h>
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

struct pc_runtime;
struct pc_port;
struct pc_udp_ep;

/**
 * A datagram for endpoint @ep, on the worker that received it (the one
 * owning the socket or the RX queue). @data is valid during the call.
 */
typedef void (*pc_udp_ep_fn)(struct pc_udp_ep *ep, const struct pc_udp_peer *from,
                             const void *data, size_t len, void *arg);

/**
 * A bound UDP port on either backend. The caller owns the memory (static
 * or living as long as the runtime); its fields are private.
 */
struct pc_udp_ep {
        int backend;  /* private: 1 kernel, 2 DPDK */
        void *handle; /* private: the pc_kudp or the pc_port */
        uint16_t port;
        pc_udp_ep_fn fn;
        void *arg;
};

/**
 * Bind @ep to @addr:@port on the kernel backend (pc_kudp_bind(): one
 * SO_REUSEPORT socket per worker; @port 0 picks one).
 * Errors: as pc_kudp_bind(); -ENOTSUP when built without liburing.
 * The creating thread, before pc_runtime_run().
 */
int pc_udp_ep_kernel(struct pc_udp_ep *ep, struct pc_runtime *rt, const char *addr,
                     uint16_t port, pc_udp_ep_fn fn, void *arg);

/**
 * Bind @ep to UDP port @udp_port of DPDK port @p's IPv4 address (our own
 * stack, pc_udp_bind()). Errors: as pc_udp_bind(); -ENOTSUP when built
 * without DPDK. The creating thread, before pc_runtime_run().
 */
int pc_udp_ep_dpdk(struct pc_udp_ep *ep, struct pc_port *p, uint16_t udp_port, pc_udp_ep_fn fn,
                   void *arg);

/**
 * Send @len bytes from @ep's port to @to, batched by the backend with the
 * worker's other output. Errors: those of pc_kudp_send() or pc_udp_send()
 * (-EPERM off-worker, -EMSGSIZE, -ENOBUFS, -EHOSTUNREACH...), -EINVAL for
 * an unbound @ep. Worker only.
 */
int pc_udp_ep_send(struct pc_udp_ep *ep, const struct pc_udp_peer *to, const void *data,
                   size_t len);

/** The UDP port @ep is bound to (host order); 0 if unbound. Any thread. */
uint16_t pc_udp_ep_port(const struct pc_udp_ep *ep);

#ifdef __cplusplus
}
#endif

#endif /* PC_NET_H */
