/* SPDX-License-Identifier: MIT */
/*
 * The backend-neutral TCP calls (pc_net.h): each connection and listener
 * begins with a struct pc__conn_base naming its backend (pc_net_pvt.h),
 * and these calls hand on to that backend's implementation. A backend
 * not built in has no connections, so its case never comes up; a handle
 * of neither kind is -EINVAL.
 */
#include <errno.h>

#include "pc_fiber.h"
#include "pc_net_pvt.h"

int pc_tcp_listen_dpdk(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                       void *arg, struct pc_tcp_listener **out)
{
#ifdef PC_HAVE_DPDK
        return pc__dtcp_listen(p, port, cb, arg, out);
#else
        (void)p, (void)port, (void)cb, (void)arg, (void)out;
        return -ENOTSUP;
#endif
}

int pc_tcp_connect_dpdk(struct pc_port *p, const char *addr, uint16_t port,
                        const struct pc_tcp_callbacks *cb, void *arg, struct pc_conn **out)
{
#ifdef PC_HAVE_DPDK
        return pc__dtcp_connect(p, addr, port, cb, arg, out);
#else
        (void)p, (void)addr, (void)port, (void)cb, (void)arg, (void)out;
        return -ENOTSUP;
#endif
}

#if defined(PC_HAVE_URING)
#define KCASE(call)                                                                             \
        case PC__NET_KERNEL:                                                                    \
                return call
#else
#define KCASE(call)                                                                             \
        case PC__NET_KERNEL:                                                                    \
                break
#endif
#if defined(PC_HAVE_DPDK)
#define DCASE(call)                                                                             \
        case PC__NET_DPDK:                                                                      \
                return call
#else
#define DCASE(call)                                                                             \
        case PC__NET_DPDK:                                                                      \
                break
#endif

uint16_t pc_tcp_listener_port(const struct pc_tcp_listener *l)
{
        if (l == NULL)
                return 0;
        switch (pc__net_backend(l)) {
                KCASE(pc__ktcp_listener_port(l));
                DCASE(pc__dtcp_listener_port(l));
        }
        return 0;
}

int pc_conn_send(struct pc_conn *c, const void *data, size_t len)
{
        if (c == NULL || (data == NULL && len))
                return -EINVAL;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_send(c, data, len));
                DCASE(pc__dconn_send(c, data, len));
        }
        return -EINVAL;
}

int pc_conn_close(struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_close(c));
                DCASE(pc__dconn_close(c));
        }
        return -EINVAL;
}

int pc_conn_linger(struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_linger(c));
                DCASE(pc__dconn_linger(c));
        }
        return -EINVAL;
}

size_t pc_conn_buffered(const struct pc_conn *c)
{
        if (c == NULL)
                return 0;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_buffered(c));
                DCASE(pc__dconn_buffered(c));
        }
        return 0;
}

unsigned pc_conn_worker(const struct pc_conn *c)
{
        if (c == NULL)
                return 0;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_worker(c));
                DCASE(pc__dconn_worker(c));
        }
        return 0;
}

void pc_conn_set_data(struct pc_conn *c, void *data)
{
        if (c == NULL)
                return;
        switch (pc__net_backend(c)) {
        case PC__NET_KERNEL:
#ifdef PC_HAVE_URING
                pc__kconn_set_data(c, data);
#endif
                break;
        case PC__NET_DPDK:
#ifdef PC_HAVE_DPDK
                pc__dconn_set_data(c, data);
#endif
                break;
        }
}

void *pc_conn_data(const struct pc_conn *c)
{
        if (c == NULL)
                return NULL;
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_data(c));
                DCASE(pc__dconn_data(c));
        }
        return NULL;
}

int pc_tcp_serve_dpdk(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                      struct pc_tcp_listener **out)
{
#ifdef PC_HAVE_DPDK
        return pc__dtcp_serve(p, port, fn, arg, out);
#else
        (void)p, (void)port, (void)fn, (void)arg, (void)out;
        return -ENOTSUP;
#endif
}

/* The kernel backend also answers for NULL (-EPERM off-fiber comes first
 * there). */
ssize_t pc_conn_read(struct pc_conn *c, void *buf, size_t len)
{
        if (c == NULL) {
#ifdef PC_HAVE_URING
                return pc__kconn_read(c, buf, len);
#else
                return pc_fiber_self() ? -EINVAL : -EPERM;
#endif
        }
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_read(c, buf, len));
                DCASE(pc__dconn_read(c, buf, len));
        }
        return -EINVAL;
}

ssize_t pc_conn_write(struct pc_conn *c, const void *buf, size_t len)
{
        if (c == NULL) {
#ifdef PC_HAVE_URING
                return pc__kconn_write(c, buf, len);
#else
                return pc_fiber_self() ? -EINVAL : -EPERM;
#endif
        }
        switch (pc__net_backend(c)) {
                KCASE(pc__kconn_write(c, buf, len));
                DCASE(pc__dconn_write(c, buf, len));
        }
        return -EINVAL;
}
