/* SPDX-License-Identifier: MIT */
/*
 * percore on DPDK: ports with one RX and one TX queue per worker, an RX
 * poller per (port, worker), buffered TX, per-queue counters, and a small
 * IPv4 stack on top (ARP, ICMP echo, UDP, and TCP through pc_net.h).
 *
 * DPDK is used when the runtime is created with PERCORE_EAL_ARGS (or
 * cfg.eal_args) set to a non-empty string: pc_runtime_create() then starts
 * the EAL with worker i as lcore i on worker i's CPU and worker 0 as the
 * main lcore, plus the given arguments. The EAL starts once per process:
 * the runtime that started it owns it, and pc_runtime_destroy() ends it
 * with rte_eal_cleanup(); after that no DPDK call (and no other DPDK
 * runtime) may follow in the process (-EALREADY).
 *
 * Include this header after percore.h. Packet buffers are DPDK's struct
 * rte_mbuf; include <rte_mbuf.h> to touch their contents.
 */
#ifndef PC_DPDK_H
#define PC_DPDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore.h"
#include "pc_net.h"
#include "pc_proto.h"
#include "pc_tcp.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;
struct pc_port;

/** Most ports one runtime opens. */
#define PC_MAX_PORTS 16
/** Default RX burst and TX buffer size. */
#define PC_PORT_BURST 32
#define PC_PORT_RX_BURSTS 4
/** Most UDP ports bound per pc_port. */
#define PC_UDP_MAX_BINDS 16

/**
 * A port's RX handler: @n packets (n <= burst) just received on the calling
 * worker's queue. The handler owns them: it frees them (rte_pktmbuf_free),
 * keeps them, or hands them to pc_port_tx().
 */
typedef void (*pc_rx_fn)(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg);

/** Port options; zero fields take the defaults named. */
struct pc_port_opts {
        uint16_t nb_rxd;  /**< RX descriptors per queue (512) */
        uint16_t nb_txd;  /**< TX descriptors per queue (512) */
        uint16_t burst;   /**< RX burst and TX buffer (PC_PORT_BURST, max 256) */
        uint16_t rx_bursts; /**< bursts a worker's RX poller takes in one pass
                                 of its loop while each comes back full
                                 (PC_PORT_RX_BURSTS, max 64): under load the
                                 loop's own cost is spread over more packets;
                                 a short burst ends the pass at once */
        unsigned nb_mbufs; /**< mbufs of the socket's pool when this open creates
                               it (enough for 4 such ports) */
        pc_rx_fn rx;      /**< RX handler; NULL = the IPv4 stack (ARP, ICMP, UDP) */
        void *rx_arg;
        bool promiscuous; /**< enable promiscuous mode */
        /** TCP engine settings of every queue (NULL: pc_tcp.h's defaults;
         * an all-zero secret: one random secret for the port). A port
         * served by the stack (rx NULL) always has TCP; one with an rx of
         * its own has it only when this is set, for a handler that passes
         * what it does not take on to pc_stack_rx() (a filter in front of
         * the stack). */
        const struct pc_tcpe_config *tcp;
};

/**
 * Open DPDK port @name_or_id ("net_null0", a PCI address, or a port
 * number) for @rt: configure one RX and one TX queue per worker (queue i
 * belongs to worker i, never shared), RSS over the symmetric 0x6d5a key
 * with the hash types masked to what the device offers (none: no RSS), an
 * mbuf pool per socket (one SOCKET_ID_ANY pool without hugepages), and
 * start it. Each worker starts polling it when pc_runtime_run() starts.
 * The port is stopped and closed by pc_runtime_destroy(). A port with TCP
 * and several queues but no RSS hands segments between workers
 * (pc_net.h's TCP, net/dpdk/tcp.c): it sets up the shard layer with the
 * defaults unless pc_shard_init() was called before.
 *
 * Errors: -EINVAL (bad argument, runtime not on DPDK, too few queues on
 * the device: message logged), -ENODEV (no such port), -ENOSPC (too many
 * ports), -ENOMEM, -EBUSY (runtime running), or the -errno of the failing
 * DPDK call (logged). The thread that created @rt, before pc_runtime_run().
 */
int pc_port_open(struct pc_runtime *rt, const char *name_or_id, const struct pc_port_opts *opts,
                 struct pc_port **out);

/** Port @i of @rt in opening order, or NULL. Any thread. */
struct pc_port *pc_port_get(struct pc_runtime *rt, unsigned i);

/** Number of ports opened on @rt. Any thread. */
unsigned pc_port_count(const struct pc_runtime *rt);

/** DPDK port id of @p. Any thread. */
uint16_t pc_port_id(const struct pc_port *p);

/** The device name of @p. Any thread. */
const char *pc_port_name(const struct pc_port *p);

struct rte_mempool;
/** The mbuf pool the calling worker's queues of @p use (for allocating
 * packets to send), or NULL off-worker. Worker only. */
struct rte_mempool *pc_port_pool(const struct pc_port *p);

/** MAC address of @p (6 bytes). Any thread. */
const uint8_t *pc_port_mac(const struct pc_port *p);

/**
 * Queue @m for transmission on the calling worker's TX queue of @p. The
 * buffer is flushed at the end of every poller pass and whenever it fills;
 * packets the device does not take are freed and counted as drops. No
 * allocation, lock or syscall.
 * Returns 0, or -EPERM off-worker or on another runtime's worker (@m is
 * freed then).
 * Worker only.
 */
int pc_port_tx(struct pc_port *p, struct rte_mbuf *m);

/**
 * pc_port_tx() for @n packets. Returns 0, or -EPERM off-worker (all
 * freed). Worker only.
 */
int pc_port_tx_burst(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n);

/** Send the calling worker's buffered packets of @p now. Worker only. */
void pc_port_flush(struct pc_port *p);

/** Per-queue (or per-port) counters. */
struct pc_port_stats {
        uint64_t rx;        /**< packets received */
        uint64_t tx;        /**< packets the device accepted */
        uint64_t drops;     /**< packets freed unsent or unhandled */
        uint64_t errors;    /**< device errors (rx/tx errors, nombuf) */
        uint64_t malformed; /**< frames a parser rejected */
        uint64_t bad_cksum; /**< of those, TCP or UDP checksums that failed
                                 (a kernel sender's unfinished offload, see
                                 the warning logged at the first) */
};

/**
 * Counters of queue @queue (= worker) of @p, or of every queue together
 * when @queue is -1. Each counter is exact, but the set is not one instant.
 * Returns 0 or -EINVAL. Any thread.
 */
int pc_port_stats(const struct pc_port *p, int queue, struct pc_port_stats *out);

/**
 * Drops of @p by reason (all queues): @reason is a PC_PKT_* code of
 * pc_proto.h. Returns the count, 0 for an unknown reason. Any thread.
 */
uint64_t pc_port_drop_reason(const struct pc_port *p, enum pc_pkt_err reason);

/**
 * Print a per-port, per-queue table of the counters to @f. Any thread.
 */
void pc_port_stats_print(const struct pc_runtime *rt, FILE *f);

/* ---- IPv4 / UDP service --------------------------------------------------- */

/**
 * Give @p the IPv4 address @addr (host byte order): the stack answers ARP
 * requests for it and ICMP echo requests to it, and delivers UDP datagrams
 * to it. Before pc_runtime_run(), creating thread. Returns 0 or -EINVAL.
 */
int pc_port_set_ipv4(struct pc_port *p, uint32_t addr);

/**
 * Route through a gateway: @p's subnet is its address (pc_port_set_ipv4(),
 * first) with @prefix_len leading bits (1..32); a frame we address to a
 * host outside it (TCP segments, a pc_udp_send() without a link address)
 * goes to the link address of @gateway (host byte order), which must be
 * on the subnet, resolved by ARP like any neighbour. Replies to a
 * datagram or a ping go back to the link address they came from, routed
 * or not. @gateway 0: no route off the subnet (a send
 * there fails with -EHOSTUNREACH; a TCP frame is dropped and counted in
 * tcp_arp_drops). Without this call, or after one with @prefix_len 0 and
 * @gateway 0, every address is taken to be on the link.
 * Errors: -EINVAL (no address yet, @prefix_len over 32, or 0 with a
 * gateway, @gateway off the subnet, our own address, or the subnet's network or broadcast
 * address), -EBUSY (running). The creating thread, before pc_runtime_run().
 */
int pc_port_set_route(struct pc_port *p, unsigned prefix_len, uint32_t gateway);

/* struct pc_udp_peer (where a datagram came from or goes to) is in
 * pc_net.h, shared with the kernel backend. */

/**
 * A datagram for a bound UDP port, on the worker that owns the RX queue
 * it arrived on. @data is valid during the call only.
 */
typedef void (*pc_udp_fn)(struct pc_port *p, const struct pc_udp_peer *from, uint16_t dport,
                          const void *data, size_t len, void *arg);

/**
 * Deliver UDP datagrams to @udp_port of @p's address to @fn. Before
 * pc_runtime_run(), creating thread.
 * Errors: -EINVAL, -EADDRINUSE, -ENOSPC (PC_UDP_MAX_BINDS).
 */
int pc_udp_bind(struct pc_port *p, uint16_t udp_port, pc_udp_fn fn, void *arg);

/**
 * Send @len bytes from UDP port @sport of @p's address to @to (its MAC as
 * given, else from the port's ARP table, which every worker shares; a
 * miss sends an ARP request and fails with -EHOSTUNREACH: retry later). The UDP checksum is computed.
 * Errors: -EPERM off-worker, -EINVAL, -EMSGSIZE (over one frame),
 * -ENOBUFS (pool empty), -EHOSTUNREACH. Worker only.
 */
int pc_udp_send(struct pc_port *p, const struct pc_udp_peer *to, uint16_t sport,
                const void *data, size_t len);

/* TCP on a port (pc_tcp_listen_dpdk(), pc_tcp_connect_dpdk() and the
 * pc_conn_* calls) is in pc_net.h, shared with the kernel backend. */

/**
 * The TCP engines' counters (pc_tcp.h) of queue @queue of @p, or of every
 * queue together when @queue is -1, plus in @handoffs the segments that
 * reached a worker other than their connection's and were handed over,
 * in @arp_held the frames that waited for an ARP answer and in @arp_drops
 * those dropped for want of one (each may be NULL).
 * Errors: -EINVAL, -ENOTSUP (@p has its own RX handler: no TCP).
 * Any thread. While the runtime runs, the engines' counters are those
 * each worker published last (every 10 ms of its loop, and when its loop
 * ends); once pc_runtime_run() returned, exact.
 */
int pc_port_tcp_stats(const struct pc_port *p, int queue, struct pc_tcpe_stats *out,
                      uint64_t *handoffs, uint64_t *arp_held, uint64_t *arp_drops);

/**
 * The TCP engine's view of @c, a connection served over DPDK (its state,
 * sequence numbers, windows, cwnd, RTO and what it holds: pc_tcp.h's
 * struct pc_tcb_info), as TCP_INFO is for a kernel socket. @c must not
 * have been closed by the engine yet (its on_close not run).
 * Errors: -EINVAL (NULL, or @c is a kernel socket's connection), -EXDEV
 * (called on another worker), -ENOTCONN (the engine closed it).
 * The connection's worker while the runtime runs; any thread once
 * pc_runtime_run() returned.
 */
int pc_conn_dpdk_info(const struct pc_conn *c, struct pc_tcb_info *out);

/**
 * The IPv4 stack as an RX handler (what a NULL opts.rx installs): handles
 * ARP, ICMP echo, bound UDP ports and TCP, drops and counts everything
 * else.
 */
void pc_stack_rx(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg);

/* ---- The service API on DPDK (pc_net.h) -------------------------------------- */

/**
 * Listen on TCP port @port of DPDK port @p's IPv4 address with percore's
 * own TCP (net/proto/pc_tcp.h): every worker's engine listens, and a
 * connection belongs to the worker whose queue its SYN reached.
 * Errors: -EINVAL (NULL, @port 0), -EADDRINUSE, -ENOSPC (too many
 * listeners on @p), -EBUSY (runtime running), -ENOMEM, -ENOTSUP (built
 * without DPDK, or @p has an RX handler of its own instead of the stack).
 * The thread that created the runtime, before pc_runtime_run().
 */
int pc_tcp_listen_dpdk(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                       void *arg, struct pc_tcp_listener **out);

/**
 * pc_tcp_listen_dpdk(), but serve each accepted connection by running
 * fn(c, @arg) in a fiber of its own on the connection's worker (sticky),
 * as pc_tcp_serve_kernel() of pc_knet.h does on kernel sockets: the handler
 * reads and writes with pc_conn_read() / pc_conn_write() and may use every
 * other pc_conn_* call; the connection stays open after the peer's FIN
 * until fn returns, then closes gracefully unless fn closed it; @c stays
 * valid until fn returns. Input fn has not read yet is kept up to 64 KiB,
 * then the engine holds what arrives (up to its rcv_cap) and the window
 * closes. When the run stops, handlers waiting in a read or write get
 * -ECANCELED; a later wait gets -ESHUTDOWN.
 * Errors: those of pc_tcp_listen_dpdk(), -EINVAL for a NULL @fn. The
 * thread that created the runtime, before pc_runtime_run().
 */
int pc_tcp_serve_dpdk(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                      struct pc_tcp_listener **out);

/**
 * Connect to @addr:@port (an IPv4 dotted quad) through DPDK port @p from the
 * calling worker; the connection belongs to it: the source port is chosen
 * so the replies reach this worker's queue (see net/dpdk/tcp.c). The SYN
 * leaves at the end of the poller pass (after an ARP exchange if the peer
 * is not known yet). on_accept runs once connected; on failure on_close
 * runs with the error (-ECONNREFUSED, -ETIMEDOUT). *@out (may be NULL)
 * is valid until on_close returns.
 * Errors: -EINVAL, -EAFNOSUPPORT (an IPv6 @addr: the DPDK stack is IPv4
 * only), -EPERM off-worker or on another runtime's worker,
 * -EADDRNOTAVAIL (@p has no address, or no free source port), -EMFILE
 * (connection cap), -ENOMEM, -ENOTSUP (built without DPDK, or @p has an
 * RX handler of its own). Worker only.
 */
int pc_tcp_connect_dpdk(struct pc_port *p, const char *addr, uint16_t port,
                        const struct pc_tcp_callbacks *cb, void *arg, struct pc_conn **out);

/**
 * Bind @ep to UDP port @udp_port of DPDK port @p's IPv4 address (our own
 * stack, pc_udp_bind()). Errors: as pc_udp_bind(); -ENOTSUP when built
 * without DPDK. The creating thread, before pc_runtime_run().
 */
int pc_udp_ep_bind_dpdk(struct pc_udp_ep *ep, struct pc_port *p, uint16_t udp_port,
                        pc_udp_ep_fn fn, void *arg);

/** pc_udp_ep_bind_dpdk(), by its old name, kept for one release. */
static inline int pc_udp_ep_dpdk(struct pc_udp_ep *ep, struct pc_port *p, uint16_t udp_port,
                                 pc_udp_ep_fn fn, void *arg)
{
        return pc_udp_ep_bind_dpdk(ep, p, udp_port, fn, arg);
}

#ifdef __cplusplus
}
#endif

#endif /* PC_DPDK_H */
