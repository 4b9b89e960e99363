/* SPDX-License-Identifier: MIT */
/*
 * The UDP endpoint of the service API (pc_net.h): one handler shape over
 * the kernel's pc_kudp_* and DPDK's pc_udp_*. An endpoint carries its
 * backend's send, so pc_udp_ep_send() never asks which backend it is.
 */
#include <errno.h>
#include <string.h>

#include "pc_net.h"
#ifdef PC_HAVE_URING
#include "pc_knet.h"
#endif
#ifdef PC_HAVE_DPDK
#include "pc_dpdk.h"
#endif

/* How an endpoint's datagrams leave, per backend. */
struct udp_ep_ops {
        int (*send)(void *handle, const struct pc_udp_peer *to, uint16_t sport,
                    const void *data, size_t len);
};

#ifdef PC_HAVE_URING
static void ep_kernel_rx(struct pc_kudp *s, const struct pc_udp_peer *from, uint16_t dport,
                         const void *data, size_t len, void *arg)
{
        struct pc_udp_ep *ep = arg;

        (void)s;
        (void)dport;
        ep->fn(ep, from, data, len, ep->arg);
}

static int ep_kernel_send(void *handle, const struct pc_udp_peer *to, uint16_t sport,
                          const void *data, size_t len)
{
        return pc_kudp_send(handle, to, sport, data, len);
}

static const struct udp_ep_ops kernel_ops = {.send = ep_kernel_send};
#endif

int pc_udp_ep_bind_kernel(struct pc_udp_ep *ep, struct pc_runtime *rt, const char *addr,
                          uint16_t port, pc_udp_ep_fn fn, void *arg)
{
#ifdef PC_HAVE_URING
        struct pc_kudp *s;
        int rc;

        if (ep == NULL || fn == NULL)
                return -EINVAL;
        memset(ep, 0, sizeof(*ep));
        ep->fn = fn;
        ep->arg = arg;
        rc = pc_kudp_bind(rt, addr, port, ep_kernel_rx, ep, &s);
        if (rc)
                return rc;
        ep->ops = &kernel_ops;
        ep->handle = s;
        ep->port = pc_kudp_port(s);
        return 0;
#else
        (void)ep, (void)rt, (void)addr, (void)port, (void)fn, (void)arg;
        return -ENOTSUP;
#endif
}

#ifdef PC_HAVE_DPDK
static void ep_dpdk_rx(struct pc_port *p, const struct pc_udp_peer *from, uint16_t dport,
                       const void *data, size_t len, void *arg)
{
        struct pc_udp_ep *ep = arg;

        (void)p;
        (void)dport;
        ep->fn(ep, from, data, len, ep->arg);
}

static int ep_dpdk_send(void *handle, const struct pc_udp_peer *to, uint16_t sport,
                        const void *data, size_t len)
{
        return pc_udp_send(handle, to, sport, data, len);
}

static const struct udp_ep_ops dpdk_ops = {.send = ep_dpdk_send};
#endif

int pc_udp_ep_bind_dpdk(struct pc_udp_ep *ep, struct pc_port *p, uint16_t udp_port,
                        pc_udp_ep_fn fn, void *arg)
{
#ifdef PC_HAVE_DPDK
        int rc;

        if (ep == NULL || fn == NULL)
                return -EINVAL;
        memset(ep, 0, sizeof(*ep));
        ep->fn = fn;
        ep->arg = arg;
        rc = pc_udp_bind(p, udp_port, ep_dpdk_rx, ep);
        if (rc)
                return rc;
        ep->ops = &dpdk_ops;
        ep->handle = p;
        ep->port = udp_port;
        return 0;
#else
        (void)ep, (void)p, (void)udp_port, (void)fn, (void)arg;
        return -ENOTSUP;
#endif
}

int pc_udp_ep_send(struct pc_udp_ep *ep, const struct pc_udp_peer *to, const void *data,
                   size_t len)
{
        if (ep == NULL || ep->ops == NULL)
                return -EINVAL;
        return ((const struct udp_ep_ops *)ep->ops)->send(ep->handle, to, ep->port, data, len);
}

uint16_t pc_udp_ep_port(const struct pc_udp_ep *ep)
{
        return ep ? ep->port : 0;
}
