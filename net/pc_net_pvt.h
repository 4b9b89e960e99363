/* SPDX-License-Identifier: MIT */
/*
 * Private to the network backends: how pc_net.h's TCP calls find the
 * backend of a connection or listener. Each backend's struct pc_conn (the
 * kernel's in knet_pvt.h, DPDK's struct pc__dconn in dpdk/tcp.c) and
 * listener begins with a struct pc__conn_base, which tcp_api.c reads to
 * dispatch. Not part of the API.
 */
#ifndef PC_NET_PVT_H
#define PC_NET_PVT_H

#include <stdint.h>
#include <sys/types.h>

#include "pc_net.h"

enum { PC__NET_NONE = 0, PC__NET_KERNEL = 1, PC__NET_DPDK = 2 };

struct pc__conn_base {
        uint8_t backend; /* PC__NET_* */
};

static inline int pc__net_backend(const void *conn_or_listener)
{
        return ((const struct pc__conn_base *)conn_or_listener)->backend;
}

#ifdef PC_HAVE_URING
/* net/kernel/tcp.c and tcp_fiber.c */
uint16_t pc__ktcp_listener_port(const struct pc_tcp_listener *l);
int pc__kconn_send(struct pc_conn *c, const void *data, size_t len);
int pc__kconn_close(struct pc_conn *c);
int pc__kconn_linger(struct pc_conn *c);
size_t pc__kconn_buffered(const struct pc_conn *c);
unsigned pc__kconn_worker(const struct pc_conn *c);
void pc__kconn_set_data(struct pc_conn *c, void *data);
void *pc__kconn_data(const struct pc_conn *c);
ssize_t pc__kconn_read(struct pc_conn *c, void *buf, size_t len);
ssize_t pc__kconn_write(struct pc_conn *c, const void *buf, size_t len);
#endif

#ifdef PC_HAVE_DPDK
/* net/dpdk/tcp.c */
int pc__dtcp_listen(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                    void *arg, struct pc_tcp_listener **out);
uint16_t pc__dtcp_listener_port(const struct pc_tcp_listener *l);
int pc__dtcp_connect(struct pc_port *p, const char *addr, uint16_t port,
                     const struct pc_tcp_callbacks *cb, void *arg, struct pc_conn **out);
int pc__dconn_send(struct pc_conn *c, const void *data, size_t len);
int pc__dconn_close(struct pc_conn *c);
int pc__dconn_linger(struct pc_conn *c);
size_t pc__dconn_buffered(const struct pc_conn *c);
unsigned pc__dconn_worker(const struct pc_conn *c);
void pc__dconn_set_data(struct pc_conn *c, void *data);
void *pc__dconn_data(const struct pc_conn *c);
/* net/dpdk/tcp_fiber.c */
int pc__dtcp_serve(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                   struct pc_tcp_listener **out);
ssize_t pc__dconn_read(struct pc_conn *c, void *buf, size_t len);
ssize_t pc__dconn_write(struct pc_conn *c, const void *buf, size_t len);
#endif

#endif /* PC_NET_PVT_H */
