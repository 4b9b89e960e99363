/* SPDX-License-Identifier: MIT */
/*
 * The IPv4 stack over a port: answers ARP requests for the port's address
 * and learns senders into the port's ARP table, which all its workers
 * share (arp.c), answers ICMP echo
 * requests in place (the request's mbuf becomes the reply), delivers
 * UDP datagrams to the bound port's callback on the worker whose RX queue
 * received them, and TCP segments to that worker's TCP engine (tcp.c). Anything else is dropped and counted by reason.
 */
#include <errno.h>
#include <string.h>

#include "dpdk_pvt.h"

static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void handle_arp(struct pc_port *p, struct pc_port_q *q, struct rte_mbuf *m,
                       const struct pc_pkt *pk)
{
        uint8_t sha[6];
        uint32_t spa = pk->arp_spa;
        size_t len;

        if (p->ipv4 == 0 || pk->arp_tpa != p->ipv4) {
                /* RFC 826: update an entry we hold even when not the target. */
                pc__arp_learn(p, spa, pk->arp_sha, false);
                pc__port_drop(q, m, PC_PKT_NOT_OURS);
                return;
        }
        pc__arp_learn(p, spa, pk->arp_sha, true);
        if (pk->arp_op != PC_ARP_REQUEST) {
                rte_pktmbuf_free(m);
                return;
        }
        /* The request's mbuf becomes the reply. */
        memcpy(sha, pk->arp_sha, 6);
        len = pc_arp_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_data_len(m), PC_ARP_REPLY,
                           sha, p->mac, p->ipv4, sha, spa);
        m->data_len = (uint16_t)len;
        m->pkt_len = len;
        pc_port_tx(p, m);
}

static void handle_udp(struct pc_port *p, struct pc_port_q *q, struct rte_mbuf *m,
                       const struct pc_pkt *pk)
{
        const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
        struct pc_udp_peer from = {0};

        for (unsigned i = 0; i < p->nbinds; i++) {
                if (p->binds[i].port != pk->dport)
                        continue;
                from.addr = pk->ip_src;
                from.port = pk->sport;
                memcpy(from.mac, pk->src_mac, 6);
                p->binds[i].fn(p, &from, pk->dport, frame + pk->payload_off, pk->payload_len,
                               p->binds[i].arg);
                rte_pktmbuf_free(m);
                return;
        }
        pc__port_drop(q, m, PC_PKT_NO_LISTENER);
}

void pc_stack_rx(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        struct pc_port_q *q = &p->q[pc__self->id];

        (void)arg;
        for (uint16_t i = 0; i < n; i++) {
                struct rte_mbuf *m = pkts[i];
                struct pc_pkt pk;
                enum pc_pkt_err e;

                /* The parsers see one contiguous buffer. */
                if (unlikely(m->nb_segs > 1) && rte_pktmbuf_linearize(m) != 0) {
                        pc__qcount(&q->st.errors, 1);
                        pc__port_drop(q, m, PC_PKT_OK);
                        continue;
                }
                e = pc_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m),
                                 &pk);
                if (e != PC_PKT_OK) {
                        pc__port_drop(q, m, e);
                        continue;
                }
                if (pk.ethertype == PC_ETH_P_ARP) {
                        handle_arp(p, q, m, &pk);
                        continue;
                }
                if (p->ipv4 == 0 || (pk.ip_dst != p->ipv4 && pk.ip_dst != 0xffffffffu)) {
                        pc__port_drop(q, m, PC_PKT_NOT_OURS);
                        continue;
                }
                if (pk.ip_proto == PC_IPPROTO_UDP) {
                        handle_udp(p, q, m, &pk);
                } else if (pk.ip_proto == PC_IPPROTO_TCP) {
                        if (pk.ip_dst == p->ipv4)
                                pc__tcp_rx(p, q, m, &pk);
                        else
                                pc__port_drop(q, m, PC_PKT_NOT_OURS);
                } else if (pk.icmp_type == PC_ICMP_ECHO_REQUEST && pk.ip_dst == p->ipv4) {
                        size_t len = pc_icmp_echo_reply(rte_pktmbuf_mtod(m, uint8_t *), &pk);
                        m->data_len = (uint16_t)len;
                        m->pkt_len = len;
                        pc_port_tx(p, m);
                } else {
                        pc__port_drop(q, m, PC_PKT_ICMP_TYPE);
                }
        }
}

int pc_port_set_ipv4(struct pc_port *p, uint32_t addr)
{
        if (p == NULL || addr == 0 || addr == 0xffffffffu)
                return -EINVAL;
        p->ipv4 = addr;
        return 0;
}

int pc_port_set_route(struct pc_port *p, unsigned prefix_len, uint32_t gateway)
{
        uint32_t mask;

        if (p == NULL || p->ipv4 == 0 || prefix_len > 32 || (prefix_len == 0 && gateway))
                return -EINVAL;
        if (atomic_load(&p->rt->running))
                return -EBUSY;
        if (prefix_len == 0) {
                p->netmask = p->gateway = 0;
                return 0;
        }
        mask = prefix_len == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix_len);
        if (gateway != 0 &&
            (((gateway ^ p->ipv4) & mask) != 0 || gateway == p->ipv4 ||
             (prefix_len < 31 && ((gateway & ~mask) == 0 || (gateway | mask) == 0xffffffffu))))
                return -EINVAL;
        p->netmask = mask;
        p->gateway = gateway;
        return 0;
}

int pc_udp_bind(struct pc_port *p, uint16_t udp_port, pc_udp_fn fn, void *arg)
{
        if (p == NULL || fn == NULL || udp_port == 0)
                return -EINVAL;
        for (unsigned i = 0; i < p->nbinds; i++)
                if (p->binds[i].port == udp_port)
                        return -EADDRINUSE;
        if (p->nbinds == PC_UDP_MAX_BINDS)
                return -ENOSPC;
        p->binds[p->nbinds].port = udp_port;
        p->binds[p->nbinds].fn = fn;
        p->binds[p->nbinds].arg = arg;
        p->nbinds++;
        return 0;
}

static int send_arp_request(struct pc_port *p, struct pc_port_q *q, uint32_t addr)
{
        struct rte_mbuf *m = rte_pktmbuf_alloc(q->pool);
        size_t len;

        if (m == NULL) {
                pc__qcount(&q->st.errors, 1);
                return -ENOBUFS;
        }
        len = pc_arp_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
                           PC_ARP_REQUEST, bcast_mac, p->mac, p->ipv4, NULL, addr);
        rte_pktmbuf_append(m, (uint16_t)len);
        return pc_port_tx(p, m);
}

int pc_udp_send(struct pc_port *p, const struct pc_udp_peer *to, uint16_t sport,
                const void *data, size_t len)
{
        static const uint8_t zero[6];
        struct pc_worker *w = pc__self;
        struct pc_port_q *q;
        struct rte_mbuf *m;
        const uint8_t *mac;
        uint8_t learned[6];
        uint32_t hop;
        size_t flen;

        if (w == NULL || p == NULL || w->rt != p->rt)
                return -EPERM;
        if (to == NULL || (data == NULL && len) || p->ipv4 == 0)
                return -EINVAL;
        if (len > 1500 - PC_IPV4_HLEN - PC_UDP_HLEN)
                return -EMSGSIZE;
        q = &p->q[w->id];
        if (memcmp(to->mac, zero, 6) != 0)
                mac = to->mac;
        else if (to->addr == 0xffffffffu)
                mac = bcast_mac;
        else if ((hop = pc__next_hop(p, to->addr)) == 0)
                return -EHOSTUNREACH;
        else if (pc__arp_lookup(p, hop, learned))
                mac = learned;
        else {
                send_arp_request(p, q, hop);
                return -EHOSTUNREACH;
        }
        m = rte_pktmbuf_alloc(q->pool);
        if (m == NULL) {
                pc__qcount(&q->st.errors, 1);
                return -ENOBUFS;
        }
        flen = pc_udp_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), p->mac, mac,
                           p->ipv4, to->addr, sport, to->port, data, len);
        if (flen == 0) {
                rte_pktmbuf_free(m);
                return -EMSGSIZE;
        }
        rte_pktmbuf_append(m, (uint16_t)flen);
        return pc_port_tx(p, m);
}
