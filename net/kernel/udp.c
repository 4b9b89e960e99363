/* SPDX-License-Identifier: MIT */
/*
 * UDP over kernel sockets: each worker's SO_REUSEPORT socket is watched by
 * a multishot poll on the worker's ring; when it is readable the poller
 * drains it with recvmmsg in batches, and what the handlers send is queued
 * and leaves in one sendmmsg at the end of the pass.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knet_pvt.h"

#define UDP_MAX 65507
#define UDP_RXSLOT 65536

static void arm_poll(struct kudp_sock *s)
{
        struct io_uring_sqe *sqe;

        if (s->armed || s->kw->quiescing)
                return;
        sqe = pc__knet_sqe(s->kw);
        if (sqe == NULL) {
                s->more = true; /* keep polling by hand until a slot frees */
                return;
        }
        io_uring_prep_poll_multishot(sqe, s->fd, POLLIN);
        pc__knet_arm(s->kw, sqe, (uint64_t)(uintptr_t)s | T_UDP);
        s->armed = true;
}

void pc__udp_complete(struct kworker *kw, struct kudp_sock *s, int res, unsigned flags)
{
        (void)kw;
        if (!(flags & IORING_CQE_F_MORE))
                s->armed = false;
        if (res >= 0)
                s->more = true;
        arm_poll(s);
}

static void flush(struct kudp_sock *s)
{
        struct kworker *kw = s->kw;
        unsigned i = 0;

        while (i < s->ntx) {
                int n = sendmmsg(s->fd, s->tx + i, s->ntx - i, MSG_DONTWAIT);
                if (n <= 0) {
                        if (n < 0 && errno == EINTR)
                                continue;
                        /* Socket buffer full or a bad destination: drop the
                         * first and carry on, as a NIC queue would. */
                        kinc(&kw->st.udp_drops, 1);
                        i++;
                        continue;
                }
                kinc(&kw->st.udp_tx, (uint64_t)n);
                i += (unsigned)n;
        }
        s->ntx = 0;
}

/* The peer of a datagram from @a: IPv4 also when it came to an IPv6
 * socket as a mapped address, so a service sees one form per peer. */
static void peer_from(const union ksa *a, struct pc_udp_peer *p)
{
        memset(p, 0, sizeof(*p));
        if (a->sa.sa_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr)) {
                p->family = AF_INET6;
                memcpy(p->addr6, &a->in6.sin6_addr, 16);
                p->port = ntohs(a->in6.sin6_port);
                return;
        }
        p->family = AF_INET;
        p->port = ntohs(a->in.sin_port);
        if (a->sa.sa_family == AF_INET6) {
                uint32_t v4;

                memcpy(&v4, &a->in6.sin6_addr.s6_addr[12], 4);
                p->addr = ntohl(v4);
        } else {
                p->addr = ntohl(a->in.sin_addr.s_addr);
        }
}

/* Where @to is, for @u's sockets: -EAFNOSUPPORT for an IPv6 peer of IPv4
 * sockets. */
static int peer_to(const struct pc_kudp *u, const struct pc_udp_peer *to, union ksa *sa,
                   socklen_t *len)
{
        memset(sa, 0, sizeof(*sa));
        if (to->family == AF_INET6 || (u->v6 && to->family != AF_INET6)) {
                if (!u->v6)
                        return -EAFNOSUPPORT;
                sa->in6.sin6_family = AF_INET6;
                sa->in6.sin6_port = htons(to->port);
                if (to->family == AF_INET6) {
                        memcpy(&sa->in6.sin6_addr, to->addr6, 16);
                } else {
                        uint32_t v4 = htonl(to->addr);

                        sa->in6.sin6_addr.s6_addr[10] = 0xff;
                        sa->in6.sin6_addr.s6_addr[11] = 0xff;
                        memcpy(&sa->in6.sin6_addr.s6_addr[12], &v4, 4);
                }
                *len = sizeof(sa->in6);
                return 0;
        }
        if (to->family != 0 && to->family != AF_INET)
                return -EAFNOSUPPORT;
        sa->in.sin_family = AF_INET;
        sa->in.sin_port = htons(to->port);
        sa->in.sin_addr.s_addr = htonl(to->addr);
        *len = sizeof(sa->in);
        return 0;
}

/* Receive up to KNET_UDP_ROUNDS batches; leaves s->more set when the
 * socket may hold more. */
static unsigned drain(struct kudp_sock *s)
{
        struct kworker *kw = s->kw;
        struct pc_kudp *u = s->u;
        struct mmsghdr m[KNET_UDP_BATCH];
        struct iovec v[KNET_UDP_BATCH];
        union ksa a[KNET_UDP_BATCH];
        unsigned total = 0;

        for (unsigned r = 0; r < KNET_UDP_ROUNDS; r++) {
                int n;

                for (unsigned i = 0; i < KNET_UDP_BATCH; i++) {
                        v[i].iov_base = kw->udp_rxbuf + (size_t)i * UDP_RXSLOT;
                        v[i].iov_len = UDP_RXSLOT;
                        memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
                        m[i].msg_hdr.msg_iov = &v[i];
                        m[i].msg_hdr.msg_iovlen = 1;
                        m[i].msg_hdr.msg_name = &a[i];
                        m[i].msg_hdr.msg_namelen = sizeof(a[i]);
                }
                n = recvmmsg(s->fd, m, KNET_UDP_BATCH, MSG_DONTWAIT, NULL);
                if (n <= 0) {
                        if (n < 0 && errno == EINTR)
                                continue;
                        s->more = false;
                        return total;
                }
                kinc(&kw->st.udp_rx, (uint64_t)n);
                for (int i = 0; i < n; i++) {
                        struct pc_udp_peer from;

                        peer_from(&a[i], &from);
                        u->fn(u, &from, u->port, v[i].iov_base, m[i].msg_len, u->arg);
                }
                total += (unsigned)n;
                if (n < KNET_UDP_BATCH) {
                        s->more = false;
                        return total;
                }
        }
        return total;
}

unsigned pc__udp_poll(struct kworker *kw)
{
        struct knet *k = kw->k;
        unsigned n = 0;

        for (unsigned i = 0; i < k->nu; i++) {
                struct kudp_sock *s = k->udps[i]->s[kw->id];
                if (s->more)
                        n += drain(s);
        }
        for (unsigned i = 0; i < k->nu; i++) {
                struct kudp_sock *s = k->udps[i]->s[kw->id];
                if (s->ntx)
                        flush(s);
        }
        return n;
}

bool pc__udp_idle(struct kworker *kw)
{
        struct knet *k = kw->k;

        for (unsigned i = 0; i < k->nu; i++) {
                struct kudp_sock *s = k->udps[i]->s[kw->id];
                if (s->more || s->ntx)
                        return false;
        }
        return true;
}

void pc__udp_worker_start(struct kworker *kw)
{
        struct knet *k = kw->k;

        if (k->nu == 0)
                return;
        if (kw->udp_rxbuf == NULL) {
                kw->udp_rxbuf = malloc((size_t)KNET_UDP_BATCH * UDP_RXSLOT);
                if (kw->udp_rxbuf == NULL) {
                        pc_log(PC_LOG_ERROR, "worker %u: no memory for UDP", kw->id);
                        return;
                }
        }
        for (unsigned i = 0; i < k->nu; i++) {
                struct kudp_sock *s = k->udps[i]->s[kw->id];
                arm_poll(s);
                s->more = true; /* datagrams may have queued before the run */
        }
}

int pc_kudp_bind(struct pc_runtime *rt, const char *addr, uint16_t port, pc_kudp_fn fn,
                 void *arg, struct pc_kudp **out)
{
        struct pc_kudp *u;
        struct knet *k;
        uint16_t bound = port;
        int rc = 0;

        if (rt == NULL || fn == NULL || addr == NULL)
                return -EINVAL;
        rc = pc__knet_setup(rt, &k);
        if (rc)
                return rc;
        if (k->nu == KNET_MAX_LISTEN)
                return -ENOSPC;
        u = calloc(1, sizeof(*u) + rt->nworkers * sizeof(u->s[0]));
        if (u == NULL)
                return -ENOMEM;
        u->fn = fn;
        u->arg = arg;
        u->n = rt->nworkers;
        for (unsigned i = 0; i < rt->nworkers && rc == 0; i++) {
                struct kudp_sock *s = calloc(1, sizeof(*s));
                int fd;

                if (s == NULL) {
                        rc = -ENOMEM;
                        break;
                }
                u->s[i] = s;
                s->fd = -1;
                fd = pc__knet_socket(SOCK_DGRAM, addr, bound, false, &bound);
                if (fd < 0) {
                        rc = fd;
                        break;
                }
                s->fd = fd;
                s->u = u;
                s->kw = k->kw[i];
                for (unsigned j = 0; j < KNET_UDP_BATCH; j++) {
                        s->txv[j].iov_base = s->txbuf[j];
                        s->tx[j].msg_hdr.msg_iov = &s->txv[j];
                        s->tx[j].msg_hdr.msg_iovlen = 1;
                        s->tx[j].msg_hdr.msg_name = &s->txa[j];
                        s->tx[j].msg_hdr.msg_namelen = sizeof(s->txa[j]);
                }
        }
        if (rc) {
                for (unsigned i = 0; i < rt->nworkers; i++) {
                        if (u->s[i] && u->s[i]->fd >= 0)
                                close(u->s[i]->fd);
                        free(u->s[i]);
                }
                free(u);
                return rc;
        }
        u->port = bound;
        u->v6 = strchr(addr, ':') != NULL; /* pc__knet_addr() took it as IPv6 */
        k->udps[k->nu++] = u;
        if (out)
                *out = u;
        return 0;
}

uint16_t pc_kudp_port(const struct pc_kudp *u)
{
        return u ? u->port : 0;
}

int pc_kudp_send(struct pc_kudp *u, const struct pc_udp_peer *to, uint16_t sport,
                 const void *data, size_t len)
{
        struct kworker *kw = pc__knet_self();
        struct kudp_sock *s;
        union ksa sa;
        socklen_t sl;
        int rc;

        if (kw == NULL)
                return -EPERM;
        if (u == NULL || to == NULL || (data == NULL && len) || (sport && sport != u->port) ||
            kw->id >= u->n)
                return -EINVAL;
        if (len > UDP_MAX)
                return -EMSGSIZE;
        s = u->s[kw->id];
        rc = peer_to(u, to, &sa, &sl);
        if (rc)
                return rc;
        if (len > KNET_UDP_SLOT) {
                /* Too big for a batch slot: keep order, then send it alone. */
                flush(s);
                if (sendto(s->fd, data, len, MSG_DONTWAIT, &sa.sa, sl) < 0)
                        kinc(&kw->st.udp_drops, 1);
                else
                        kinc(&kw->st.udp_tx, 1);
                return 0;
        }
        if (s->ntx == KNET_UDP_BATCH)
                flush(s);
        memcpy(s->txbuf[s->ntx], data, len);
        s->txv[s->ntx].iov_len = len;
        s->txa[s->ntx] = sa;
        s->tx[s->ntx].msg_hdr.msg_namelen = sl;
        s->ntx++;
        return 0;
}

void pc__udp_destroy(struct knet *k)
{
        for (unsigned i = 0; i < k->nu; i++) {
                struct pc_kudp *u = k->udps[i];
                for (unsigned j = 0; j < u->n; j++) {
                        if (u->s[j]->fd >= 0)
                                close(u->s[j]->fd);
                        free(u->s[j]);
                }
                free(u);
        }
        k->nu = 0;
}
