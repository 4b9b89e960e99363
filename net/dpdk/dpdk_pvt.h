/* SPDX-License-Identifier: MIT */
/*
 * Private state of the DPDK backend: the per-runtime context the launcher
 * carries, ports and their per-worker queues. Not part of the API.
 */
#ifndef PC_DPDK_PVT_H
#define PC_DPDK_PVT_H

#include <sched.h>
#include <stdatomic.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "pc_module_pvt.h"
#include "pc_net_pvt.h"
#include "pc_dpdk.h"
#include "pc_tcp_fiber_pvt.h"

#define PC_RXD_DEFAULT 512
#define PC_TXD_DEFAULT 512
#define PC_BURST_MAX 256
#define PC_MBUF_CACHE 256
#define PC_ARP_SLOTS 256 /* per port, shared by its workers (arp.c) */
#define PC_ARP_PROBE 8   /* slots a lookup or a learn probes */

/* TCP over the port (tcp.c). */
#define PC_TCP_MAX_LISTEN 8       /* listeners per port */
#define PC_TCP_HOLD 16            /* frames a queue holds for an ARP answer */
#define PC_TCP_HOLD_NS 1000000000ull /* and for at most this long */
#define PC_TCP_ARP_RETRY_NS 100000000ull /* one request per address per 100 ms */
#define PC_TCP_EPH_LO 49152       /* ephemeral ports: 49152..65535 */
#define PC_TCP_EPH_N 16384
#define PC_RETA_MAX 2048          /* RSS redirection table entries kept */

/* Counters of one queue: written by its worker only (relaxed load+store),
 * read by anyone. */
struct pc_qstats {
        _Atomic uint64_t rx, tx, drops, errors, malformed;
        _Atomic uint64_t bad_cksum;    /* TCP or UDP checksums that failed */
        _Atomic uint64_t reason[PC_PKT_NR];
        _Atomic uint64_t tcp_handoffs; /* segments handed to their owner worker */
        _Atomic uint64_t arp_held;     /* TCP frames held for an ARP answer */
        _Atomic uint64_t arp_drops;    /* held frames dropped: full hold, no answer */
};

/* A DPDK connection as the service API sees it (a struct pc_conn *),
 * owned by its queue's worker (tcp.c). Served by a fiber (tcp_fiber.c),
 * it also holds the input the handler has not read, and outlives the
 * engine's connection (@tcb NULL then) until the handler returns. */
struct pc__dconn {
        struct pc__conn_base base; /* first: pc_net's dispatch reads it */
        struct pc_tcb *tcb;        /* NULL once the engine closed it */
        struct pc_port_q *q;
        const struct pc_tcp_callbacks *cb;
        void *arg;
        struct pc__dconn *prev, *next; /* the queue's list, for port close */
        bool f_self_closed; /* pc_conn_close() or pc_conn_abort() was called */
        int abort_err;      /* on_close's error after our abort, 0: the engine's */
        /* Set before on_accept, then fixed: pc_conn_peer()/pc_conn_local()
         * read them from any thread. */
        bool addr_ok;
        uint16_t lport, rport;
        uint32_t laddr, raddr;
        /* Fiber service (net/tcp_fiber.c, hooks in tcp_fiber.c). */
        struct pc__fconn fc;
};

/* A listener (a struct pc_tcp_listener *): every queue's engine listens,
 * until pc_tcp_listener_close() or a drain (tcp_ops.c). */
struct pc__dlistener {
        struct pc__listener_base base; /* first: pc_net's dispatch reads it */
        struct pc_port *p;
        const struct pc_tcp_callbacks *cb;
        void *arg;
        void *owned; /* freed with the listener (pc_tcp_serve_dpdk's record) */
        uint16_t port;
};

/* A TCP frame waiting for its next hop's MAC. */
struct pc_tcp_held {
        struct rte_mbuf *m;
        uint32_t addr;
        uint64_t since;
};

struct pc_tcpe;
struct pc__dconn;
struct pc__dlistener;

/* One entry of a port's shared ARP table (arp.c): @seq odd while a
 * writer holds it; @mac packed, bit 63 set; @addr 0 = empty. */
struct pc_arp_slot {
        _Atomic uint32_t seq;
        _Atomic uint32_t addr;
        _Atomic uint64_t mac;
};
_Static_assert(sizeof(struct pc_arp_slot) == 16, "four ARP slots per cache line");

/* struct pc_tcpe_stats is all uint64_t: it is published word by word. */
#define PC_TCPE_STATS_WORDS (sizeof(struct pc_tcpe_stats) / sizeof(uint64_t))
_Static_assert(sizeof(struct pc_tcpe_stats) % sizeof(uint64_t) == 0, "counters only");
#define PC_TCP_PUB_NS 10000000ull /* how often a worker publishes its engines' counters */

/* Queue i of a port: worker i's, and nobody else's. */
struct pc_port_q {
        struct pc_port *port;
        uint16_t qid;
        uint16_t ntx;
        bool poller_registered;
        struct rte_mbuf **tx; /* [burst] */
        struct rte_mempool *pool; /* its worker's socket's */
        struct pc_qstats st;
        /* TCP: this queue's engine (NULL on a port with its own RX
         * handler), its connections, frames waiting for ARP. */
        struct pc_tcpe *tcpe;
        struct pc__dconn *conns;
        unsigned nconns; /* on @conns: open, or a fiber handler still runs */
        uint16_t next_lport;
        unsigned nhold;
        struct pc_tcp_held hold[PC_TCP_HOLD];
        uint32_t arp_asked;
        uint64_t arp_asked_at;
        /* The engine's counters as its worker last published them
         * (pc__tcp_publish(): every PC_TCP_PUB_NS of the loop's clock and
         * when the loop ends), for readers off the worker. */
        _Atomic uint64_t tcp_pub[PC_TCPE_STATS_WORDS];
        uint64_t tcp_pub_at;
} PC_ALIGNED;

struct pc_udp_bind {
        uint16_t port;
        pc_udp_fn fn;
        void *arg;
};

struct pc_port {
        struct pc_runtime *rt;
        uint16_t port_id;
        uint16_t burst;
        uint16_t rx_bursts;
        unsigned nq;
        char name[RTE_ETH_NAME_MAX_LEN];
        uint8_t mac[6];
        pc_rx_fn rx;
        void *rx_arg;
        uint32_t ipv4; /* host order, 0 = none */
        /* pc_port_set_route(): our subnet's mask (0: every address is on
         * the link) and the next hop for the rest (0: none, unreachable) */
        uint32_t netmask;
        uint32_t gateway;
        struct pc_udp_bind binds[PC_UDP_MAX_BINDS];
        unsigned nbinds;
        struct pc_port_q *q; /* [nq], one per worker */
        /* TCP: listeners (fixed before the run), and how the device
         * steers flows: with @steer, RSS over @rss_key and @reta. */
        struct pc__dlistener *tl[PC_TCP_MAX_LISTEN];
        unsigned ntl;
        bool steer;
        uint8_t rss_key[64];
        uint16_t reta_size;
        uint16_t reta[PC_RETA_MAX];
        _Atomic bool cksum_warned; /* pc__port_bad_cksum() said why, once */
        /* Shared by the workers, written on ARP frames only. */
        struct pc_arp_slot arp[PC_ARP_SLOTS] PC_ALIGNED;
};

struct pc_dpdk {
        struct pc_runtime *rt;
        cpu_set_t saved_mask;
        bool entered_pinned;
        struct rte_mempool *pools[RTE_MAX_NUMA_NODES + 1]; /* last: SOCKET_ID_ANY */
        struct pc_port *ports[PC_MAX_PORTS];
        unsigned nports;
        struct pc__module eal_module; /* claims the launch: lcores run workers */
        bool hooked;
        struct pc__module module; /* worker start: register RX pollers */
        bool flusher[PC_MAX_WORKERS]; /* worker registered its flush poller */
        /* Launch/join hand-offs, also made through the (uninstrumented)
         * EAL, repeated with C11 atomics so ThreadSanitizer sees them. */
        _Atomic unsigned long launches[PC_MAX_WORKERS];
        _Atomic unsigned long returns[PC_MAX_WORKERS];
};

/* The DPDK context of @rt, or NULL when @rt does not run on DPDK. */
struct pc_dpdk *pc__dpdk_of(const struct pc_runtime *rt);

/* port.c */
void pc__ports_close(struct pc_dpdk *d);
unsigned pc__port_queues(const struct pc_port *p);
static inline void pc__qcount(_Atomic uint64_t *c, uint64_t n)
{
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
}
void pc__port_drop(struct pc_port_q *q, struct rte_mbuf *m, enum pc_pkt_err why);
/* A TCP or UDP checksum failed on @q: count it, and the first time on the
 * port warn with the likely cause (its worker). */
void pc__port_bad_cksum(struct pc_port_q *q);

/* arp.c: the port's ARP table, shared by its workers. Any thread. */
bool pc__arp_lookup(const struct pc_port *p, uint32_t addr, uint8_t *mac);
/* Learn @addr at @mac: update an entry we hold; add one only if @create. */
void pc__arp_learn(struct pc_port *p, uint32_t addr, const uint8_t *mac, bool create);

/* tcp.c */
struct pc_pkt;
int pc__tcp_port_init(struct pc_port *p, const struct pc_tcpe_config *cfg,
                      const struct rte_eth_dev_info *info, bool rss);
void pc__tcp_port_free(struct pc_port *p);
/* A TCP segment to us from the stack's RX (takes @m). */
void pc__tcp_rx(struct pc_port *p, struct pc_port_q *q, struct rte_mbuf *m,
                const struct pc_pkt *pk);
/* Once per RX pass: flush, timers, held frames. Returns work done. */
unsigned pc__tcp_poll(struct pc_port_q *q);
/* The address whose link address a frame to @dst goes to: @dst itself on
 * our subnet (or on a port without one), else the gateway; 0 when @dst is
 * off the subnet and there is no gateway. Any thread. */
static inline uint32_t pc__next_hop(const struct pc_port *p, uint32_t dst)
{
        if (((dst ^ p->ipv4) & p->netmask) == 0 || dst == 0xffffffffu)
                return dst;
        return p->gateway;
}

/* Publish @q's engine counters for readers off the worker (its worker). */
void pc__tcp_publish(struct pc_port_q *q);
void pc__dconn_unlink(struct pc__dconn *dc);
/* pc_tcp_listen_dpdk() whose listener frees @owned when the port closes. */
int pc__dtcp_listen_owned(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                          void *arg, void *owned, struct pc_tcp_listener **out);

/* The engine's callbacks for the connections of the service API. */
extern const struct pc_tcpe_callbacks pc__dtcp_engine_cbs;

/* tcp_ops.c */
extern const struct pc__listener_ops pc__dlistener_ops;
/* pc_conn_abort() (on_close then says @err). Its worker. */
int pc__dconn_abort(struct pc__dconn *dc, int err);
/* Take @q's engine off the ports of the listeners that were closed. Its
 * worker, or any thread before the run. */
void pc__dtcp_listeners_sync(struct pc_port_q *q);
/* pc_runtime_drain() on @q's worker: every listener of the port closes,
 * and this worker's engine stops listening. */
void pc__dtcp_drain(struct pc_port_q *q);
/* Connections @q's worker still serves. */
unsigned pc__dtcp_open(const struct pc_port_q *q);

/* tcp_fiber.c */
/* The connection's memory may go: false while its handler still runs. */
bool pc__dconn_release(struct pc__dconn *dc);
/* The run is stopping: fibers waiting on @q's connections get -ECANCELED. */
void pc__dtcp_fibers_cancel(struct pc_port_q *q);
void pc__dconn_free(struct pc__dconn *dc);
/* The backend's operations (pc_net_pvt.h): tcp.c's, and tcp_fiber.c's
 * hooks for the fiber service. */
extern const struct pc__conn_ops pc__dconn_ops;
extern const struct pc__fiber_ops pc__dfiber_ops;

/* telemetry.c */
void pc__telemetry_register(struct pc_runtime *rt);
void pc__telemetry_unregister(struct pc_runtime *rt);

#endif /* PC_DPDK_PVT_H */
