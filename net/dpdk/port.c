/* SPDX-License-Identifier: MIT */
/*
 * Ports: one RX and one TX queue per worker, an RX poller per (port,
 * worker), a TX buffer per (port, worker) flushed by a per-worker poller
 * that runs after every RX poller of the pass, and per-queue counters.
 * A queue's state is touched by its worker only; counters are published
 * with relaxed stores so any thread can read them.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "dpdk_pvt.h"

/* Symmetric RSS (both directions of a flow hash alike): the 0x6d5a key. */
static void symmetric_key(uint8_t *key, size_t len)
{
        for (size_t i = 0; i < len; i++)
                key[i] = i & 1 ? 0x5a : 0x6d;
}

static struct rte_mempool *pool_for(struct pc_dpdk *d, int socket, unsigned n)
{
        unsigned idx = socket == SOCKET_ID_ANY ? RTE_MAX_NUMA_NODES : (unsigned)socket;
        char name[RTE_MEMPOOL_NAMESIZE];

        if (idx > RTE_MAX_NUMA_NODES)
                return NULL;
        if (d->pools[idx])
                return d->pools[idx];
        snprintf(name, sizeof(name), "pc_mbuf_%d", socket);
        d->pools[idx] = rte_pktmbuf_pool_create(name, n, PC_MBUF_CACHE, 0,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, socket);
        if (d->pools[idx] == NULL)
                pc_log(PC_LOG_ERROR, "cannot create an mbuf pool of %u on socket %d: %s", n,
                       socket, rte_strerror(rte_errno));
        return d->pools[idx];
}

static int resolve_port(const char *name_or_id, uint16_t *pid)
{
        char *end;
        unsigned long v;

        if (isdigit((unsigned char)name_or_id[0])) {
                v = strtoul(name_or_id, &end, 10);
                if (*end == '\0') {
                        if (v >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port((uint16_t)v))
                                return -ENODEV;
                        *pid = (uint16_t)v;
                        return 0;
                }
        }
        return rte_eth_dev_get_port_by_name(name_or_id, pid) == 0 ? 0 : -ENODEV;
}

/* ---- per-worker pollers ----------------------------------------------- */

/* Hand @n frames to the device now; what it refuses is freed, counted.
 * Always inlined: a call level per burst shows in a forwarding core's
 * profile (pc-fwd io against testpmd). */
static inline __attribute__((always_inline)) void tx_now(struct pc_port_q *q,
                                                         struct rte_mbuf **pkts, uint16_t n)
{
        uint16_t sent = rte_eth_tx_burst(q->port->port_id, q->qid, pkts, n);

        pc__qcount(&q->st.tx, sent);
        if (unlikely(sent < n)) {
                rte_pktmbuf_free_bulk(pkts + sent, n - sent);
                pc__qcount(&q->st.drops, n - sent);
        }
}

static void flush_q(struct pc_port_q *q)
{
        uint16_t n = q->ntx;

        q->ntx = 0;
        tx_now(q, q->tx, n);
}

static unsigned rx_poll(void *arg)
{
        struct pc_port_q *q = arg;
        struct pc_port *p = q->port;
        struct rte_mbuf *pkts[PC_BURST_MAX];
        /* Read once: the handler's stores could alias them. */
        const uint16_t port_id = p->port_id, qid = q->qid, burst = p->burst;
        const unsigned bursts = p->rx_bursts;
        const pc_rx_fn rx = p->rx;
        void *const rx_arg = p->rx_arg;
        unsigned n = 0;

        /* Stopping: leave new packets in the device, so that the drain
         * (which waits for every worker to go idle) can end even under
         * endless traffic. */
        if (unlikely(atomic_load_explicit(&p->rt->stop_req, memory_order_relaxed)))
                return 0;
        for (unsigned b = 0; b < bursts; b++) {
                uint16_t k = rte_eth_rx_burst(port_id, qid, pkts, burst);

                if (k == 0)
                        break;
                pc__qcount(&q->st.rx, k);
                rx(p, pkts, k, rx_arg);
                n += k;
                if (k < burst)
                        break;
        }
        /* TCP's flush and timers, after the burst and before the TX flush
         * poller (tcp.c). */
        return q->tcpe ? n + pc__tcp_poll(q) : n;
}

/* A NIC queue cannot wake a parked worker: a worker that owns one polls. */
static bool never_sleep(void *arg)
{
        (void)arg;
        return false;
}

static void port_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg);

static const struct pc_poller_ops rx_ops = {
        .name = "dpdk-rx",
        .poll = rx_poll,
        .prepare_sleep = never_sleep,
};

static unsigned flush_poll(void *arg)
{
        struct pc_dpdk *d = arg;
        unsigned w = pc__self->id;

        for (unsigned i = 0; i < d->nports; i++) {
                struct pc_port_q *q = &d->ports[i]->q[w];
                if (q->ntx)
                        flush_q(q);
        }
        return 0;
}

static const struct pc_poller_ops flush_ops = {
        .name = "dpdk-tx-flush",
        .poll = flush_poll,
};

/* Worker-start hook: the worker's RX pollers, then its flush poller, so a
 * pass ends by sending what the handlers queued. Once per worker. */
static void worker_start(struct pc_worker *w, void *arg)
{
        struct pc_dpdk *d = arg;
        int rc;

        for (unsigned i = 0; i < d->nports; i++) {
                struct pc_port_q *q = &d->ports[i]->q[w->id];
                /* A listener closed while no run went on, or whose tasks a
                 * stopping run dropped. */
                pc__dtcp_listeners_sync(q);
                /* Timers do not outlive a run: the idle timeouts again. */
                for (struct pc__dconn *dc = q->conns; dc; dc = dc->next)
                        pc__conn_idle_restart(&dc->base);
                if (q->poller_registered)
                        continue;
                rc = pc_poller_register(&rx_ops, q, NULL);
                if (rc)
                        pc_log(PC_LOG_ERROR, "worker %u: cannot poll port %s: %s", w->id,
                               d->ports[i]->name, pc_strerror(rc));
                else
                        q->poller_registered = true;
        }
        if (!d->flusher[w->id]) {
                rc = pc_poller_register(&flush_ops, d, NULL);
                if (rc)
                        pc_log(PC_LOG_ERROR, "worker %u: cannot register TX flush: %s", w->id,
                               pc_strerror(rc));
                else
                        d->flusher[w->id] = true;
        }
}

/* Worker-stopping hook: fibers waiting on this worker's DPDK connections
 * get -ECANCELED, so they run to their end in the drain. */
static void worker_stopping(struct pc_worker *w, void *arg)
{
        struct pc_dpdk *d = arg;

        for (unsigned i = 0; i < d->nports; i++)
                if (d->ports[i]->q[w->id].tcpe)
                        pc__dtcp_fibers_cancel(&d->ports[i]->q[w->id]);
}

/* Drain hooks (pc_runtime_drain()): this worker's engines stop accepting;
 * it is busy while connections of its queues are open. */
static void worker_drain(struct pc_worker *w, void *arg)
{
        struct pc_dpdk *d = arg;

        for (unsigned i = 0; i < d->nports; i++)
                if (d->ports[i]->q[w->id].tcpe)
                        pc__dtcp_drain(&d->ports[i]->q[w->id]);
}

static unsigned drain_busy(struct pc_worker *w, void *arg)
{
        struct pc_dpdk *d = arg;
        unsigned n = 0;

        for (unsigned i = 0; i < d->nports; i++)
                n += pc__dtcp_open(&d->ports[i]->q[w->id]);
        return n;
}

/* Worker-stop hook: the engines' last counters, for readers off the
 * worker until the next run. */
static void worker_stop(struct pc_worker *w, void *arg)
{
        struct pc_dpdk *d = arg;

        for (unsigned i = 0; i < d->nports; i++)
                if (d->ports[i]->q[w->id].tcpe)
                        pc__tcp_publish(&d->ports[i]->q[w->id]);
}

/* ---- open / close --------------------------------------------------------- */

static void free_port(struct pc_port *p)
{
        if (p == NULL)
                return;
        pc__tcp_port_free(p);
        for (unsigned i = 0; p->q && i < p->nq; i++) {
                if (p->q[i].ntx)
                        rte_pktmbuf_free_bulk(p->q[i].tx, p->q[i].ntx);
                free(p->q[i].tx);
        }
        free(p->q);
        free(p);
}

static int setup_queues(struct pc_port *p, struct pc_dpdk *d, uint16_t rxd, uint16_t txd,
                        unsigned nmbufs)
{
        bool huge = rte_eal_has_hugepages();

        for (unsigned i = 0; i < p->nq; i++) {
                /* Each queue's buffers come from its worker's socket; without
                 * hugepages everything is one SOCKET_ID_ANY pool. */
                int socket = huge ? (int)rte_lcore_to_socket_id(i) : SOCKET_ID_ANY;
                struct rte_mempool *mp = pool_for(d, socket, nmbufs);
                int rc;

                if (mp == NULL)
                        return -ENOMEM;
                p->q[i].pool = mp;
                rc = rte_eth_rx_queue_setup(p->port_id, (uint16_t)i, rxd,
                                            socket == SOCKET_ID_ANY ? 0 : (unsigned)socket, NULL,
                                            mp);
                if (rc == 0)
                        rc = rte_eth_tx_queue_setup(p->port_id, (uint16_t)i, txd,
                                                    socket == SOCKET_ID_ANY ? 0
                                                                            : (unsigned)socket,
                                                    NULL);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "port %s: queue %u setup: %s", p->name, i,
                               rte_strerror(-rc));
                        return rc;
                }
        }
        return 0;
}

int pc_port_open(struct pc_runtime *rt, const char *name_or_id, const struct pc_port_opts *opts,
                 struct pc_port **out)
{
        static const struct pc_port_opts defaults;
        struct pc_dpdk *d = pc__dpdk_of(rt);
        struct rte_eth_dev_info info;
        struct rte_eth_conf conf;
        uint8_t key[64];
        uint16_t pid, rxd, txd;
        uint64_t rss = 0;
        struct pc_port *p;
        unsigned nmbufs;
        int rc;

        if (rt == NULL || name_or_id == NULL || out == NULL)
                return -EINVAL;
        if (d == NULL) {
                pc_log(PC_LOG_ERROR, "pc_port_open(%s): the runtime does not run on DPDK "
                                     "(set PERCORE_EAL_ARGS)",
                       name_or_id);
                return -EINVAL;
        }
        if (atomic_load(&rt->running))
                return -EBUSY;
        if (d->nports == PC_MAX_PORTS)
                return -ENOSPC;
        if (opts == NULL)
                opts = &defaults;
        if (opts->burst > PC_BURST_MAX || opts->rx_bursts > 64)
                return -EINVAL;
        rc = resolve_port(name_or_id, &pid);
        if (rc) {
                pc_log(PC_LOG_ERROR, "pc_port_open: no DPDK port '%s' (%u ports exist)",
                       name_or_id, rte_eth_dev_count_avail());
                return rc;
        }
        for (unsigned i = 0; i < d->nports; i++)
                if (d->ports[i]->port_id == pid)
                        return -EBUSY;
        rc = rte_eth_dev_info_get(pid, &info);
        if (rc)
                return rc;
        if (info.max_rx_queues < rt->nworkers || info.max_tx_queues < rt->nworkers) {
                pc_log(PC_LOG_ERROR,
                       "port %s has at most %u RX / %u TX queues; %u workers need one each",
                       name_or_id, info.max_rx_queues, info.max_tx_queues, rt->nworkers);
                return -EINVAL;
        }

        /* Aligned: the shared ARP table starts on a cache line of its own. */
        p = aligned_alloc(PC_CACHE_LINE, sizeof(*p));
        if (p == NULL)
                return -ENOMEM;
        memset(p, 0, sizeof(*p));
        p->rt = rt;
        p->port_id = pid;
        p->nq = rt->nworkers;
        p->burst = opts->burst ? opts->burst : PC_PORT_BURST;
        p->rx_bursts = opts->rx_bursts ? opts->rx_bursts : PC_PORT_RX_BURSTS;
        p->rx = opts->rx ? opts->rx : pc_stack_rx;
        p->rx_arg = opts->rx_arg;
        rte_eth_dev_get_name_by_port(pid, p->name);
        p->q = aligned_alloc(PC_CACHE_LINE, sizeof(*p->q) * p->nq);
        if (p->q == NULL) {
                free(p);
                return -ENOMEM;
        }
        memset(p->q, 0, sizeof(*p->q) * p->nq);
        for (unsigned i = 0; i < p->nq; i++) {
                p->q[i].port = p;
                p->q[i].qid = (uint16_t)i;
                p->q[i].tx = calloc(p->burst, sizeof(*p->q[i].tx));
                if (p->q[i].tx == NULL) {
                        free_port(p);
                        return -ENOMEM;
                }
        }

        memset(&conf, 0, sizeof(conf));
        rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
        if (p->nq > 1 && rss) {
                size_t klen = info.hash_key_size ? info.hash_key_size : 40;
                if (klen > sizeof(key))
                        klen = sizeof(key);
                symmetric_key(key, klen);
                conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
                conf.rx_adv_conf.rss_conf.rss_key = key;
                conf.rx_adv_conf.rss_conf.rss_key_len = (uint8_t)klen;
                conf.rx_adv_conf.rss_conf.rss_hf = rss;
        } else {
                rss = 0;
        }
        rc = rte_eth_dev_configure(pid, (uint16_t)p->nq, (uint16_t)p->nq, &conf);
        if (rc) {
                pc_log(PC_LOG_ERROR, "port %s: configure %u queues: %s", p->name, p->nq,
                       rte_strerror(-rc));
                goto fail;
        }
        rxd = opts->nb_rxd ? opts->nb_rxd : PC_RXD_DEFAULT;
        txd = opts->nb_txd ? opts->nb_txd : PC_TXD_DEFAULT;
        rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
        /* Enough for four ports like this one: descriptors, TX buffers and
         * per-lcore caches. The first port sizes a socket's pool. */
        nmbufs = opts->nb_mbufs
                         ? opts->nb_mbufs
                         : 4 * p->nq * (rxd + txd + 2u * p->burst) + p->nq * PC_MBUF_CACHE * 2 +
                                   1023;
        rc = setup_queues(p, d, rxd, txd, nmbufs);
        if (rc)
                goto fail;
        {
                struct rte_ether_addr mac;
                rte_eth_macaddr_get(pid, &mac);
                memcpy(p->mac, mac.addr_bytes, 6);
        }
        if (p->rx == pc_stack_rx || opts->tcp) {
                rc = pc__tcp_port_init(p, opts->tcp, &info, rss != 0);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "port %s: TCP engines: %s", p->name,
                               pc_strerror(rc));
                        goto fail;
                }
        }
        if (opts->promiscuous)
                rte_eth_promiscuous_enable(pid);
        rc = rte_eth_dev_start(pid);
        if (rc) {
                pc_log(PC_LOG_ERROR, "port %s: start: %s", p->name, rte_strerror(-rc));
                goto fail;
        }
        if (!d->hooked) {
                /* Every worker registers its RX pollers on its own thread
                 * when its loop starts. */
                d->module.worker_start = worker_start;
                d->module.worker_stopping = worker_stopping;
                d->module.worker_stop = worker_stop;
                d->module.worker_drain = worker_drain;
                d->module.drain_busy = drain_busy;
                d->module.metrics = port_metrics;
                d->module.arg = d;
                pc__module_add(rt, &d->module);
                d->hooked = true;
        }
        d->ports[d->nports++] = p;
        pc_log(PC_LOG_INFO,
               "port %u (%s): %u RX/TX queues, %u/%u descriptors, burst %u, RSS %s%s", pid,
               p->name, p->nq, rxd, txd, p->burst, rss ? "symmetric" : "off",
               p->q[0].tcpe == NULL ? ""
               : p->steer       ? ", TCP steered by RSS"
               : p->nq > 1      ? ", TCP handed to owners"
                                : ", TCP");
        *out = p;
        return 0;
fail:
        free_port(p);
        return rc;
}

void pc__ports_close(struct pc_dpdk *d)
{
        for (unsigned i = 0; i < d->nports; i++) {
                struct pc_port *p = d->ports[i];
                rte_eth_dev_stop(p->port_id);
                rte_eth_dev_close(p->port_id);
                free_port(p);
                d->ports[i] = NULL;
        }
        d->nports = 0;
}

/* ---- fast path ------------------------------------------------------------ */

int pc_port_tx(struct pc_port *p, struct rte_mbuf *m)
{
        struct pc_worker *w = pc__self;
        struct pc_port_q *q;

        if (unlikely(w == NULL || w->rt != p->rt)) {
                rte_pktmbuf_free(m);
                return -EPERM;
        }
        q = &p->q[w->id];
        q->tx[q->ntx++] = m;
        if (unlikely(q->ntx == p->burst))
                flush_q(q);
        return 0;
}

int pc_port_tx_burst(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n)
{
        struct pc_worker *w = pc__self;
        struct pc_port_q *q;

        if (unlikely(w == NULL || w->rt != p->rt)) {
                rte_pktmbuf_free_bulk(pkts, n);
                return -EPERM;
        }
        q = &p->q[w->id];
        /* Whole bursts with nothing buffered before them go to the device
         * as they are: the buffer would only fill and flush at once. */
        if (q->ntx == 0 && n >= p->burst) {
                tx_now(q, pkts, n);
                return 0;
        }
        while (n) {
                uint16_t k = p->burst - q->ntx;
                if (k > n)
                        k = n;
                for (uint16_t i = 0; i < k; i++)
                        q->tx[q->ntx + i] = pkts[i];
                q->ntx += k;
                pkts += k;
                n -= k;
                if (q->ntx == p->burst)
                        flush_q(q);
        }
        return 0;
}

void pc_port_flush(struct pc_port *p)
{
        struct pc_worker *w = pc__self;

        if (w && w->rt == p->rt && p->q[w->id].ntx)
                flush_q(&p->q[w->id]);
}

void pc__port_drop(struct pc_port_q *q, struct rte_mbuf *m, enum pc_pkt_err why)
{
        rte_pktmbuf_free(m);
        pc__qcount(&q->st.drops, 1);
        if ((unsigned)why < PC_PKT_NR)
                pc__qcount(&q->st.reason[why], 1);
        if (pc_pkt_err_malformed(why))
                pc__qcount(&q->st.malformed, 1);
        if (why == PC_PKT_UDP_CSUM)
                pc__port_bad_cksum(q);
}

/* A kernel interface with checksum offload on (a veth, whose "hardware"
 * is the peer's stack) sends TCP and UDP with the checksum left for the
 * device to finish (CHECKSUM_PARTIAL). A packet socket, and so the
 * af_packet PMD, sees the frame as it is; DPDK 22.11's PMD copies it out
 * without its TP_STATUS_CSUMNOTREADY mark (no mbuf flag says so), so it
 * cannot be told from a corrupt one and fails our check: ping works, TCP
 * and UDP do not. Nothing but a counter would show it, hence the one
 * warning per port that names the remedy. */
void pc__port_bad_cksum(struct pc_port_q *q)
{
        struct pc_port *p = q->port;
        struct rte_eth_dev_info info;
        char ifname[IF_NAMESIZE] = "";

        pc__qcount(&q->st.bad_cksum, 1);
        if (atomic_load_explicit(&p->cksum_warned, memory_order_relaxed) ||
            atomic_exchange(&p->cksum_warned, true))
                return;
        if (rte_eth_dev_info_get(p->port_id, &info) == 0 && info.if_index &&
            if_indextoname(info.if_index, ifname) == NULL)
                ifname[0] = 0;
        pc_log(PC_LOG_WARN,
               "port %s%s%s%s: a TCP or UDP checksum failed (bad_cksum counts them). A kernel "
               "interface that sends with checksum offload on leaves checksums unfinished; on "
               "a veth, turn it off on the kernel's side: ethtool -K <peer> tx off",
               p->name, ifname[0] ? " (" : "", ifname, ifname[0] ? ")" : "");
}

/* ---- counters ------------------------------------------------------------- */

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* The TCP engines' counters of every queue with one, as their workers
 * published them (pc__tcp_publish()). */
static void tcp_metrics(struct pc__prom *p, const struct pc_dpdk *d)
{
        static const struct {
                const char *name, *type, *help;
                size_t off;
        } fam[] = {
#define T(n, t, f, h) {"percore_tcp_" n, t, h, offsetof(struct pc_tcpe_stats, f)}
                T("segments_received_total", "counter", segs_in,
                  "TCP segments the engine took in."),
                T("segments_sent_total", "counter", segs_out, "TCP segments the engine sent."),
                T("received_bytes_total", "counter", bytes_in, "TCP payload bytes received, retransmissions included."),
                T("sent_bytes_total", "counter", bytes_out, "TCP payload bytes sent, retransmissions included."),
                T("connections", "gauge", conns, "TCP connections open now."),
                T("syn_received", "gauge", syn_rcvd, "Half-open TCP connections now."),
                T("time_wait", "gauge", time_wait, "TCP connections in TIME-WAIT now."),
                T("active_opens_total", "counter", active_opens, "TCP connects begun."),
                T("passive_opens_total", "counter", passive_opens, "TCP connections accepted."),
                T("resets_received_total", "counter", resets_in, "TCP resets taken."),
                T("resets_sent_total", "counter", resets_out, "TCP resets sent."),
                T("retransmits_total", "counter", retransmits, "TCP segments sent again."),
                T("timeouts_total", "counter", timeouts, "TCP retransmission timer expiries."),
                T("fast_retransmits_total", "counter", fast_retransmits,
                  "TCP entries into fast recovery."),
                T("syn_cookies_sent_total", "counter", cookies_sent,
                  "SYN cookies sent past a full SYN backlog."),
                T("challenge_acks_total", "counter", challenge_acks,
                  "Challenge ACKs sent (RFC 5961)."),
                T("buffer_bytes", "gauge", mem, "Bytes of TCP send and receive buffers held."),
#undef T
        };

        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, fam[f].type, fam[f].help);
                for (unsigned i = 0; i < d->nports; i++) {
                        const struct pc_port *pt = d->ports[i];

                        for (unsigned q = 0; q < pt->nq && pt->q[q].tcpe; q++) {
                                char qn[12];
                                const char *l[] = {"port", pt->name, "queue", qn};

                                snprintf(qn, sizeof(qn), "%u", q);
                                pc__prom_u64(p, fam[f].name, l, 2,
                                             LD(pt->q[q].tcp_pub[fam[f].off / sizeof(uint64_t)]));
                        }
                }
        }
        pc__prom_family(p, "percore_tcp_drops_total", "counter",
                        "TCP segments the engine did not take, by reason.");
        for (unsigned i = 0; i < d->nports; i++) {
                const struct pc_port *pt = d->ports[i];

                for (unsigned q = 0; q < pt->nq && pt->q[q].tcpe; q++) {
                        for (unsigned r = 1; r < PC_TCP_NR; r++) {
                                char qn[12];
                                const char *l[] = {"port", pt->name, "queue", qn, "reason",
                                                   pc_tcp_err_name((enum pc_tcp_err)r)};
                                size_t w = offsetof(struct pc_tcpe_stats, drops) /
                                                   sizeof(uint64_t) + r;

                                snprintf(qn, sizeof(qn), "%u", q);
                                pc__prom_u64(p, "percore_tcp_drops_total", l, 3,
                                             LD(pt->q[q].tcp_pub[w]));
                        }
                }
        }
}

/* Module metrics hook: every queue's counters (queue i is worker i's),
 * labelled by port name and queue, and the device's own error count. */
static void port_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg)
{
        static const struct {
                const char *name, *help;
                size_t off;
        } fam[] = {
#define F(n, f, h) {"percore_port_" n, h, offsetof(struct pc_qstats, f)}
                F("rx_packets_total", rx, "Packets the queue received."),
                F("tx_packets_total", tx, "Packets the device accepted from the queue."),
                F("drops_total", drops, "Packets freed unsent or unhandled."),
                F("errors_total", errors, "Send errors of the queue."),
                F("malformed_total", malformed, "Frames a parser rejected."),
                F("bad_checksum_total", bad_cksum,
                  "TCP or UDP checksums that failed (a kernel sender's unfinished offload?)."),
                F("tcp_handoffs_total", tcp_handoffs,
                  "TCP segments handed to the worker owning their connection."),
                F("tcp_arp_held_total", arp_held, "TCP frames held for an ARP answer."),
                F("tcp_arp_drops_total", arp_drops,
                  "Held TCP frames dropped: hold full or no ARP answer."),
#undef F
        };
        struct pc_dpdk *d = arg;
        struct rte_eth_stats es;

        (void)rt;
        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, "counter", fam[f].help);
                for (unsigned i = 0; i < d->nports; i++) {
                        const struct pc_port *pt = d->ports[i];
                        for (unsigned q = 0; q < pt->nq; q++) {
                                char qn[12];
                                const char *l[] = {"port", pt->name, "queue", qn};
                                const char *st = (const char *)&pt->q[q].st;
                                const _Atomic uint64_t *c =
                                        (const _Atomic uint64_t *)(st + fam[f].off);

                                snprintf(qn, sizeof(qn), "%u", q);
                                pc__prom_u64(p, fam[f].name, l, 2, LD(*c));
                        }
                }
        }
        tcp_metrics(p, d);
        pc__prom_family(p, "percore_port_device_errors_total", "counter",
                        "The device's receive and send errors and mbuf allocation "
                        "failures.");
        for (unsigned i = 0; i < d->nports; i++) {
                const char *l[] = {"port", d->ports[i]->name};

                if (rte_eth_stats_get(d->ports[i]->port_id, &es) == 0)
                        pc__prom_u64(p, "percore_port_device_errors_total", l, 1,
                                     es.ierrors + es.oerrors + es.rx_nombuf);
        }
}

int pc_port_stats(const struct pc_port *p, int queue, struct pc_port_stats *out)
{
        unsigned lo = 0, hi;

        if (p == NULL || out == NULL || queue < -1 || (queue >= 0 && (unsigned)queue >= p->nq))
                return -EINVAL;
        memset(out, 0, sizeof(*out));
        hi = p->nq;
        if (queue >= 0) {
                lo = (unsigned)queue;
                hi = lo + 1;
        }
        for (unsigned i = lo; i < hi; i++) {
                const struct pc_qstats *s = &p->q[i].st;
                out->rx += LD(s->rx);
                out->tx += LD(s->tx);
                out->drops += LD(s->drops);
                out->errors += LD(s->errors);
                out->malformed += LD(s->malformed);
                out->bad_cksum += LD(s->bad_cksum);
        }
        if (queue < 0) {
                /* The device's own error counts are per port. */
                struct rte_eth_stats es;
                if (rte_eth_stats_get(p->port_id, &es) == 0)
                        out->errors += es.ierrors + es.oerrors + es.rx_nombuf;
        }
        return 0;
}

uint64_t pc_port_drop_reason(const struct pc_port *p, enum pc_pkt_err reason)
{
        uint64_t n = 0;

        if (p == NULL || (unsigned)reason >= PC_PKT_NR)
                return 0;
        for (unsigned i = 0; i < p->nq; i++)
                n += LD(p->q[i].st.reason[reason]);
        return n;
}

struct pc_port *pc_port_get(struct pc_runtime *rt, unsigned i)
{
        struct pc_dpdk *d = pc__dpdk_of(rt);

        return d && i < d->nports ? d->ports[i] : NULL;
}

unsigned pc_port_count(const struct pc_runtime *rt)
{
        struct pc_dpdk *d = pc__dpdk_of(rt);

        return d ? d->nports : 0;
}

uint16_t pc_port_id(const struct pc_port *p)
{
        return p->port_id;
}

const char *pc_port_name(const struct pc_port *p)
{
        return p->name;
}

struct rte_mempool *pc_port_pool(const struct pc_port *p)
{
        struct pc_worker *w = pc__self;

        return w && w->rt == p->rt ? p->q[w->id].pool : NULL;
}

const uint8_t *pc_port_mac(const struct pc_port *p)
{
        return p->mac;
}

unsigned pc__port_queues(const struct pc_port *p)
{
        return p->nq;
}

void pc_port_stats_print(const struct pc_runtime *rt, FILE *f)
{
        struct pc_dpdk *d = pc__dpdk_of(rt);
        struct pc_port_stats s;

        if (d == NULL)
                return;
        fprintf(f, "%-5s %-16s %-5s %14s %14s %10s %8s %9s\n", "port", "name", "queue", "rx",
                "tx", "drops", "errors", "malformed");
        for (unsigned i = 0; i < d->nports; i++) {
                struct pc_port *p = d->ports[i];
                for (int qi = 0; qi <= (int)p->nq; qi++) {
                        int q = qi == (int)p->nq ? -1 : qi;
                        char qn[16];
                        pc_port_stats(p, q, &s);
                        if (q < 0)
                                snprintf(qn, sizeof(qn), "all");
                        else
                                snprintf(qn, sizeof(qn), "%d", q);
                        fprintf(f, "%-5u %-16s %-5s %14" PRIu64 " %14" PRIu64 " %10" PRIu64
                                   " %8" PRIu64 " %9" PRIu64 "\n",
                                p->port_id, p->name, qn, s.rx, s.tx, s.drops, s.errors,
                                s.malformed);
                }
        }
}
