/* SPDX-License-Identifier: MIT */
/*
 * TCP over a DPDK port: the pure engine of net/proto/pc_tcp.h, one per
 * worker queue, wired to the port's RX path, TX buffer and ARP table,
 * behind the service API of pc_net.h (struct pc_tcp_callbacks, pc_conn_*).
 *
 * One connection, one worker. Queue i's engine belongs to worker i; the
 * stack feeds it the segments that reach queue i, and its output leaves
 * on TX queue i. Its one timer (pc_tcpe_next_deadline) is checked by the
 * queue's RX poller every pass, after the burst, together with the flush
 * that sends what the pass queued: a DPDK worker polls without sleeping,
 * so the deadline is met within one pass and no timer heap entry is kept
 * in step with it.
 *
 * Which worker owns a segment's connection:
 *   - on a port with RSS (the symmetric key, TCP ports hashed), the device
 *     decides: a passive connection lives where its SYN arrived, and every
 *     later segment of the flow, in either direction, arrives there too;
 *     an active open picks a source port whose rte_softrss hash (the
 *     port's key and RETA) selects its own queue, so its replies do too;
 *   - on a port with one queue there is nothing to decide;
 *   - on a port with several queues and no RSS we can predict (af_packet's
 *     fanout, which also rolls a busy socket's packets over to another
 *     one; net_ring; a NIC without TCP hashing), software decides: the
 *     owner is a hash of (remote address, remote port, local port) modulo
 *     the queues (flow_queue()), an active open picks a source port that
 *     hashes to its own queue, and a segment that reaches any other worker
 *     is checked (a malformed one is dropped there) and handed to the
 *     owner with pc_submit() (counted as tcp_handoffs), where it is input
 *     once, never twice.
 *
 * The service API's operations on these connections and listeners are
 * tcp_ops.c's.
 *
 * Output: each frame the engine emits is copied into a fresh mbuf behind
 * an Ethernet header whose destination comes from the shared ARP table
 * (the peer is on the link: no routing). A miss sends an ARP request (at
 * most one per address every PC_TCP_ARP_RETRY_NS from a queue) and holds
 * up to PC_TCP_HOLD frames per queue, sent as soon as any worker learns
 * the address and dropped (counted) after PC_TCP_HOLD_NS or when the hold
 * is full. Checksums are the engine's (software); a later offload only has
 * to skip them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>

#include <rte_thash.h>

#include "dpdk_pvt.h"
#include "pc_net_pvt.h"
#include "pc_shard.h"

static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static inline struct pc_conn *to_conn(struct pc__dconn *dc)
{
        return (struct pc_conn *)(void *)dc;
}

static void conn_link(struct pc_port_q *q, struct pc__dconn *dc)
{
        dc->q = q;
        dc->prev = NULL;
        dc->next = q->conns;
        if (q->conns)
                q->conns->prev = dc;
        q->conns = dc;
        q->nconns++;
}

void pc__dconn_unlink(struct pc__dconn *dc)
{
        struct pc_port_q *q = dc->q;

        if (dc->prev)
                dc->prev->next = dc->next;
        else
                q->conns = dc->next;
        if (dc->next)
                dc->next->prev = dc->prev;
        q->nconns--;
}

/* ---- engine callbacks -> service callbacks -------------------------------- */

static struct pc__dconn *dconn_of(struct pc_tcb *c)
{
        return pc_tcb_data(c);
}

static void e_on_accept(struct pc_tcb *c, void *arg)
{
        struct pc__dconn *dc = dconn_of(c);

        if (dc == NULL) {
                /* Passive: @arg is the listener. */
                struct pc__dlistener *l = arg;
                struct pc_port_q *q = &l->p->q[pc__self->id];

                dc = calloc(1, sizeof(*dc));
                if (dc == NULL) {
                        pc__qcount(&q->st.errors, 1);
                        pc_tcb_abort(c);
                        return;
                }
                /* Over the listener's limit, or closed meanwhile: a reset,
                 * nothing else sent, counted refused. */
                if (!pc__listener_admit(&l->base)) {
                        free(dc);
                        pc_tcb_abort(c);
                        return;
                }
                pc__conn_base_init(&dc->base, &pc__dconn_ops, &l->base);
                dc->tcb = c;
                dc->cb = l->cb;
                dc->arg = l->arg;
                conn_link(q, dc);
                pc_tcb_set_data(c, dc);
        }
        pc_tcb_addr(c, &dc->laddr, &dc->lport, &dc->raddr, &dc->rport);
        dc->addr_ok = true;
        if (dc->cb->on_accept)
                dc->cb->on_accept(to_conn(dc), dc->arg);
}

static void e_on_data(struct pc_tcb *c, const void *data, size_t len, void *arg)
{
        struct pc__dconn *dc = dconn_of(c);

        (void)arg;
        if (dc == NULL)
                return;
        pc__conn_rx(&dc->base, len);
        if (dc->cb->on_data)
                dc->cb->on_data(to_conn(dc), data, len, dc->arg);
}

static void e_on_acked(struct pc_tcb *c, size_t n, void *arg)
{
        struct pc__dconn *dc = dconn_of(c);

        (void)arg;
        if (dc)
                pc__conn_tx_done(&dc->base, n);
}

static void e_on_writable(struct pc_tcb *c, void *arg)
{
        struct pc__dconn *dc = dconn_of(c);

        (void)arg;
        if (dc && dc->cb->on_writable)
                dc->cb->on_writable(to_conn(dc), dc->arg);
}

static void e_on_close(struct pc_tcb *c, int err, void *arg)
{
        struct pc__dconn *dc = dconn_of(c);

        (void)arg;
        if (dc == NULL)
                return; /* a passive one that never reached on_accept */
        pc_tcb_set_data(c, NULL);
        dc->tcb = NULL; /* the engine frees it when this returns */
        if (dc->abort_err)
                err = dc->abort_err;
        if (dc->cb->on_close)
                dc->cb->on_close(to_conn(dc), err, dc->arg);
        if (pc__dconn_release(dc)) {
                pc__dconn_unlink(dc);
                pc__dconn_free(dc);
        }
}

const struct pc_tcpe_callbacks pc__dtcp_engine_cbs = {
        .on_accept = e_on_accept,
        .on_data = e_on_data,
        .on_close = e_on_close,
        .on_writable = e_on_writable,
        .on_acked = e_on_acked,
};

/* ---- output ----------------------------------------------------------------- */

static void ask_arp(struct pc_port *p, struct pc_port_q *q, uint32_t addr, uint64_t now)
{
        struct rte_mbuf *m;
        size_t len;

        if (q->arp_asked == addr && now - q->arp_asked_at < PC_TCP_ARP_RETRY_NS)
                return;
        q->arp_asked = addr;
        q->arp_asked_at = now;
        m = rte_pktmbuf_alloc(q->pool);
        if (m == NULL) {
                pc__qcount(&q->st.errors, 1);
                return;
        }
        len = pc_arp_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
                           PC_ARP_REQUEST, bcast_mac, p->mac, p->ipv4, NULL, addr);
        rte_pktmbuf_append(m, (uint16_t)len);
        pc_port_tx(p, m);
}

static int emit(void *ctx, const struct pc_tcp_frame *f)
{
        struct pc_port_q *q = ctx;
        struct pc_port *p = q->port;
        struct rte_mbuf *m;
        uint8_t *b, mac[6];
        uint32_t hop;
        bool known;

        if (unlikely(PC_ETH_HLEN + f->len > RTE_MBUF_DEFAULT_DATAROOM))
                return -EMSGSIZE;
        m = rte_pktmbuf_alloc(q->pool);
        if (unlikely(m == NULL)) {
                pc__qcount(&q->st.errors, 1);
                return -ENOBUFS;
        }
        b = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(PC_ETH_HLEN + f->len));
        if (unlikely(b == NULL)) {
                rte_pktmbuf_free(m);
                return -EMSGSIZE;
        }
        hop = pc__next_hop(p, f->daddr);
        if (unlikely(hop == 0)) {
                rte_pktmbuf_free(m);
                pc__qcount(&q->st.arp_drops, 1);
                return -EHOSTUNREACH;
        }
        known = pc__arp_lookup(p, hop, mac);
        memcpy(b, known ? mac : bcast_mac, 6);
        memcpy(b + 6, p->mac, 6);
        pc_wr16(b + 12, PC_ETH_P_IPV4);
        b += PC_ETH_HLEN;
        memcpy(b, f->hdr, f->hdr_len);
        b += f->hdr_len;
        for (unsigned i = 0; i < f->pieces; i++) {
                if (f->data_len[i]) {
                        memcpy(b, f->data[i], f->data_len[i]);
                        b += f->data_len[i];
                }
        }
        if (likely(known))
                return pc_port_tx(p, m);
        /* No MAC yet: ask, and hold the frame a while. */
        {
                uint64_t now = pc_now_ns();

                ask_arp(p, q, hop, now);
                if (q->nhold == PC_TCP_HOLD) {
                        rte_pktmbuf_free(m);
                        pc__qcount(&q->st.arp_drops, 1);
                        return -EHOSTUNREACH;
                }
                q->hold[q->nhold].m = m;
                q->hold[q->nhold].addr = hop;
                q->hold[q->nhold].since = now;
                q->nhold++;
                pc__qcount(&q->st.arp_held, 1);
                return 0;
        }
}

/* Send the held frames whose next hop is known now, drop the stale. */
static void hold_retry(struct pc_port *p, struct pc_port_q *q, uint64_t now)
{
        unsigned k = 0;

        for (unsigned i = 0; i < q->nhold; i++) {
                struct pc_tcp_held *h = &q->hold[i];
                uint8_t mac[6];

                if (pc__arp_lookup(p, h->addr, mac)) {
                        memcpy(rte_pktmbuf_mtod(h->m, uint8_t *), mac, 6);
                        pc_port_tx(p, h->m);
                } else if (now - h->since > PC_TCP_HOLD_NS) {
                        rte_pktmbuf_free(h->m);
                        pc__qcount(&q->st.arp_drops, 1);
                } else {
                        q->hold[k++] = *h;
                }
        }
        q->nhold = k;
}

void pc__tcp_publish(struct pc_port_q *q)
{
        struct pc_tcpe_stats s;
        const uint64_t *w = (const uint64_t *)&s;

        pc_tcpe_stats(q->tcpe, &s);
        for (size_t k = 0; k < PC_TCPE_STATS_WORDS; k++)
                atomic_store_explicit(&q->tcp_pub[k], w[k], memory_order_relaxed);
}

unsigned pc__tcp_poll(struct pc_port_q *q)
{
        struct pc_tcpe *e = q->tcpe;
        uint64_t now;
        unsigned did = 0;

        if (e == NULL)
                return 0;
        /* The loop's clock, as it last read it: no clock read of our own. */
        if (unlikely(pc__self->last_ns - q->tcp_pub_at >= PC_TCP_PUB_NS)) {
                q->tcp_pub_at = pc__self->last_ns;
                pc__tcp_publish(q);
        }
        if (!q->nhold && !pc_tcpe_pending(e) && pc_tcpe_next_deadline(e) == UINT64_MAX)
                return 0;
        now = pc_now_ns();
        if (q->nhold) {
                unsigned before = q->nhold;
                hold_retry(q->port, q, now);
                did += before - q->nhold;
        }
        if (pc_tcpe_next_deadline(e) <= now) {
                pc_tcpe_tick(e, now); /* flushes too */
                did++;
        } else if (pc_tcpe_pending(e)) {
                pc_tcpe_flush(e, now);
                did++;
        }
        return did;
}

/* ---- input ------------------------------------------------------------------ */

static bool is_listen_port(const struct pc_port *p, uint16_t port)
{
        for (unsigned i = 0; i < p->ntl; i++)
                if (p->tl[i]->port == port)
                        return true;
        return false;
}

/* The owner of a flow on a port that cannot steer: a hash of the remote
 * address and port and our port, the same for every segment whichever
 * queue the device put it on. */
static inline unsigned flow_queue(const struct pc_port *p, uint32_t raddr, uint16_t rport,
                                  uint16_t lport)
{
        uint32_t h = raddr * 0x9e3779b1u ^ ((uint32_t)rport << 16 | lport) * 0x85ebca77u;

        h ^= h >> 15;
        h *= 0xc2b2ae35u;
        h ^= h >> 13;
        return h % p->nq;
}

static void input_local(struct pc_port *p, struct pc_port_q *q, struct rte_mbuf *m,
                        const struct pc_pkt *pk)
{
        const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
        enum pc_tcp_err e;

        e = pc_tcpe_input(q->tcpe, pk->ip_src, pk->ip_dst, frame + pk->payload_off,
                          pk->payload_len, pc_now_ns());
        if (e == PC_TCP_OK) {
                rte_pktmbuf_free(m);
                return;
        }
        if (e == PC_TCP_CSUM)
                pc__port_bad_cksum(q);
        pc__port_drop(q, m, pc_tcp_err_malformed(e) ? PC_PKT_TCP_BAD : PC_PKT_TCP_DROP);
}

/* On the owner: a segment of one of our flows that another worker
 * received. m->port names the pc_port whose stack takes it. */
static void handoff_in(void *arg)
{
        struct rte_mbuf *m = arg;
        struct pc_dpdk *d = pc__dpdk_of(pc__self->rt);
        struct pc_port *p = NULL;
        struct pc_pkt pk;

        for (unsigned i = 0; d && i < d->nports; i++)
                if (d->ports[i]->port_id == m->port)
                        p = d->ports[i];
        if (p == NULL || p->q[pc__self->id].tcpe == NULL) {
                rte_pktmbuf_free(m);
                return;
        }
        /* The sender parsed it already; parse again rather than carry the
         * parse across cores (the frame is small and this path is rare). */
        if (pc_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m), &pk) !=
            PC_PKT_OK) {
                pc__port_drop(&p->q[pc__self->id], m, PC_PKT_TCP_BAD);
                return;
        }
        input_local(p, &p->q[pc__self->id], m, &pk);
}

void pc__tcp_rx(struct pc_port *p, struct pc_port_q *q, struct rte_mbuf *m,
                const struct pc_pkt *pk)
{
        if (q->tcpe == NULL) {
                pc__port_drop(q, m, PC_PKT_IP_PROTO);
                return;
        }
        if (!p->steer && p->nq > 1 && flow_queue(p, pk->ip_src, pk->sport, pk->dport) != q->qid) {
                unsigned owner = flow_queue(p, pk->ip_src, pk->sport, pk->dport);
                struct pc_tcp_seg sg;
                enum pc_tcp_err e;

                /* Malformed input is dropped where it arrived, not sent on. */
                e = pc_tcp_parse(pk->ip_src, pk->ip_dst,
                                 rte_pktmbuf_mtod(m, const uint8_t *) + pk->payload_off,
                                 pk->payload_len, &sg);
                if (e != PC_TCP_OK) {
                        if (e == PC_TCP_CSUM)
                                pc__port_bad_cksum(q);
                        pc__port_drop(q, m, PC_PKT_TCP_BAD);
                        return;
                }
                m->port = p->port_id;
                if (pc_submit(owner, handoff_in, m) == 0) {
                        pc__qcount(&q->st.tcp_handoffs, 1);
                        return;
                }
                pc__port_drop(q, m, PC_PKT_TCP_DROP);
                return;
        }
        input_local(p, q, m, pk);
}

/* ---- port setup ------------------------------------------------------------- */

int pc__tcp_port_init(struct pc_port *p, const struct pc_tcpe_config *cfg,
                      const struct rte_eth_dev_info *info, bool rss)
{
        static const struct pc_tcpe_ops ops = {.emit = emit};
        struct pc_tcpe_config c;
        static const uint8_t zero[16];

        if (cfg)
                c = *cfg;
        else
                memset(&c, 0, sizeof(c));
        /* One secret for all the port's engines: a SYN cookie issued by one
         * worker is good on any, and ISNs follow one sequence per 4-tuple. */
        if (memcmp(c.secret, zero, 16) == 0 && getrandom(c.secret, 16, 0) != 16)
                return -EIO;
        p->steer = false;
        if (rss && p->nq > 1 && (info->flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_TCP) &&
            info->reta_size > 0 && info->reta_size <= PC_RETA_MAX) {
                struct rte_eth_rss_reta_entry64 r[PC_RETA_MAX / RTE_ETH_RETA_GROUP_SIZE];
                struct rte_eth_rss_conf rc = {.rss_key = p->rss_key,
                                              .rss_key_len = sizeof(p->rss_key)};

                memset(r, 0, sizeof(r));
                for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
                        r[i].mask = UINT64_MAX;
                if (rte_eth_dev_rss_hash_conf_get(p->port_id, &rc) == 0 &&
                    (rc.rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_TCP) &&
                    rte_eth_dev_rss_reta_query(p->port_id, r, info->reta_size) == 0) {
                        for (unsigned i = 0; i < info->reta_size; i++)
                                p->reta[i] = r[i / RTE_ETH_RETA_GROUP_SIZE]
                                                     .reta[i % RTE_ETH_RETA_GROUP_SIZE];
                        p->reta_size = info->reta_size;
                        p->steer = true;
                }
        }
        if (!p->steer && p->nq > 1) {
                /* Hand-offs travel through the mailboxes: set them up with
                 * the defaults unless the program did already. */
                int rc = pc_shard_init(p->rt, NULL);
                if (rc && rc != -EALREADY)
                        return rc;
        }
        for (unsigned i = 0; i < p->nq; i++) {
                struct pc_port_q *q = &p->q[i];
                int rc = pc_tcpe_create(&c, &ops, q, &q->tcpe);

                if (rc)
                        return rc;
                q->next_lport = (uint16_t)(PC_TCP_EPH_LO + (c.secret[i % 16] << 6) % 16384);
        }
        return 0;
}

void pc__tcp_port_free(struct pc_port *p)
{
        for (unsigned i = 0; p->q && i < p->nq; i++) {
                struct pc_port_q *q = &p->q[i];
                struct pc__dconn *dc, *n;

                /* The engine first: it gives back the bytes connections
                 * still hold by reference, while those still exist. */
                pc_tcpe_destroy(q->tcpe);
                q->tcpe = NULL;
                for (dc = q->conns; dc; dc = n) {
                        n = dc->next;
                        pc__dconn_free(dc);
                }
                q->conns = NULL;
                q->nconns = 0;
                for (unsigned k = 0; k < q->nhold; k++)
                        rte_pktmbuf_free(q->hold[k].m);
                q->nhold = 0;
        }
        for (unsigned i = 0; i < p->ntl; i++) {
                free(p->tl[i]->owned);
                free(p->tl[i]);
        }
        p->ntl = 0;
}

/* ---- service API --------------------------------------------------------------- */

int pc_tcp_listen_dpdk(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                       void *arg, struct pc_tcp_listener **out)
{
        return pc__dtcp_listen_owned(p, port, cb, arg, NULL, out);
}

int pc__dtcp_listen_owned(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                          void *arg, void *owned, struct pc_tcp_listener **out)
{
        struct pc__dlistener *l;

        if (p == NULL || cb == NULL || port == 0)
                return -EINVAL;
        if (p->q[0].tcpe == NULL)
                return -ENOTSUP; /* a port with an RX handler of its own */
        if (atomic_load(&p->rt->running))
                return -EBUSY;
        if (is_listen_port(p, port))
                return -EADDRINUSE;
        if (p->ntl == PC_TCP_MAX_LISTEN)
                return -ENOSPC;
        l = calloc(1, sizeof(*l));
        if (l == NULL)
                return -ENOMEM;
        l->base.ops = &pc__dlistener_ops;
        l->p = p;
        l->cb = cb;
        l->arg = arg;
        l->port = port;
        l->owned = owned;
        for (unsigned i = 0; i < p->nq; i++) {
                int rc = pc_tcpe_listen(p->q[i].tcpe, 0, port, &pc__dtcp_engine_cbs, l);
                if (rc) {
                        /* Only the first can fail (the engines are alike),
                         * so no engine listens. */
                        free(l);
                        return rc;
                }
        }
        p->tl[p->ntl++] = l;
        if (out)
                *out = (struct pc_tcp_listener *)(void *)l;
        return 0;
}

/* Whether replies to @lport come back to queue @q by themselves. */
static bool lport_ok(const struct pc_port *p, const struct pc_port_q *q, uint32_t raddr,
                     uint16_t rport, uint16_t lport)
{
        if (p->nq == 1)
                return true;
        if (p->steer) {
                /* The tuple of the segments that come back to us. */
                struct rte_ipv4_tuple t = {.src_addr = raddr, .dst_addr = p->ipv4};
                uint32_t h;

                t.sport = rport;
                t.dport = lport;
                h = rte_softrss((uint32_t *)&t, RTE_THASH_V4_L4_LEN, p->rss_key);
                return p->reta[h % p->reta_size] == q->qid;
        }
        return flow_queue(p, raddr, rport, lport) == q->qid;
}

int pc_tcp_connect_dpdk(struct pc_port *p, const char *addr, uint16_t port,
                        const struct pc_tcp_callbacks *cb, void *arg, struct pc_conn **out)
{
        struct pc_worker *w = pc__self;
        struct pc_port_q *q;
        struct in_addr ia;
        struct in6_addr ia6;
        struct pc__dconn *dc;
        uint32_t raddr;
        int rc = -EADDRNOTAVAIL;

        if (w == NULL || p == NULL || w->rt != p->rt)
                return -EPERM;
        if (addr == NULL || cb == NULL || port == 0)
                return -EINVAL;
        if (inet_pton(AF_INET, addr, &ia) != 1)
                return inet_pton(AF_INET6, addr, &ia6) == 1 ? -EAFNOSUPPORT : -EINVAL;
        q = &p->q[w->id];
        if (q->tcpe == NULL)
                return -ENOTSUP;
        if (p->ipv4 == 0)
                return -EADDRNOTAVAIL;
        raddr = ntohl(ia.s_addr);
        if (raddr == 0 || raddr == 0xffffffffu)
                return -EINVAL;
        dc = calloc(1, sizeof(*dc));
        if (dc == NULL)
                return -ENOMEM;
        pc__conn_base_init(&dc->base, &pc__dconn_ops, NULL);
        dc->cb = cb;
        dc->arg = arg;
        for (unsigned i = 0; i < PC_TCP_EPH_N; i++) {
                uint16_t lport = q->next_lport;

                q->next_lport = lport == PC_TCP_EPH_LO + PC_TCP_EPH_N - 1 ? PC_TCP_EPH_LO
                                                                          : (uint16_t)(lport + 1);
                if (!lport_ok(p, q, raddr, port, lport) || is_listen_port(p, lport))
                        continue;
                rc = pc_tcpe_connect(q->tcpe, p->ipv4, lport, raddr, port, &pc__dtcp_engine_cbs, dc,
                                     pc_now_ns(), &dc->tcb);
                if (rc != -EADDRINUSE)
                        break;
        }
        if (rc) {
                free(dc);
                return rc == -EADDRINUSE ? -EADDRNOTAVAIL : rc;
        }
        pc_tcb_set_data(dc->tcb, dc);
        conn_link(q, dc);
        if (out)
                *out = to_conn(dc);
        return 0;
}

int pc_port_tcp_stats(const struct pc_port *p, int queue, struct pc_tcpe_stats *out,
                      uint64_t *handoffs, uint64_t *arp_held, uint64_t *arp_drops)
{
        uint64_t h = 0, ah = 0, ad = 0;
        bool running;

        if (p == NULL || out == NULL || queue < -1 || (queue >= 0 && (unsigned)queue >= p->nq))
                return -EINVAL;
        if (p->q[0].tcpe == NULL)
                return -ENOTSUP;
        memset(out, 0, sizeof(*out));
        running = atomic_load_explicit(&p->rt->running, memory_order_acquire);
        for (unsigned i = 0; i < p->nq; i++) {
                struct pc_tcpe_stats s;
                const uint64_t *src = (const uint64_t *)&s;
                uint64_t *dst = (uint64_t *)out;

                if (queue >= 0 && (unsigned)queue != i)
                        continue;
                /* While the run goes on the engines are their workers':
                 * take what each published last. */
                if (running) {
                        for (size_t k = 0; k < PC_TCPE_STATS_WORDS; k++)
                                dst[k] += atomic_load_explicit(&p->q[i].tcp_pub[k],
                                                               memory_order_relaxed);
                } else {
                        pc_tcpe_stats(p->q[i].tcpe, &s);
                        for (size_t k = 0; k < PC_TCPE_STATS_WORDS; k++)
                                dst[k] += src[k];
                }
                h += atomic_load_explicit(&p->q[i].st.tcp_handoffs, memory_order_relaxed);
                ah += atomic_load_explicit(&p->q[i].st.arp_held, memory_order_relaxed);
                ad += atomic_load_explicit(&p->q[i].st.arp_drops, memory_order_relaxed);
        }
        if (handoffs)
                *handoffs = h;
        if (arp_held)
                *arp_held = ah;
        if (arp_drops)
                *arp_drops = ad;
        return 0;
}
