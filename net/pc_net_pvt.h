/* SPDX-License-Identifier: MIT */
/*
 * Private to the network backends: how pc_net.h's calls reach a backend.
 * Each backend's connection (the kernel's struct pc_conn in knet_pvt.h,
 * DPDK's struct pc__dconn) begins with a struct pc__conn_base, and each
 * listener with a struct pc__listener_base, whose ops table is that
 * backend's: the Redis ae.c shape, one file per backend behind the same
 * small static interface, so tcp_api.c never asks which backend it is.
 * What is the same for every backend (user data, idle timeouts, listener
 * limits and counters) lives in the bases and is done once, in
 * tcp_api.c and conn_idle.c. Not part of the API.
 */
#ifndef PC_NET_PVT_H
#define PC_NET_PVT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "percore.h"
#include "pc_net.h"

struct pc__fiber_ops;

/* A connection's backend. Every hook runs on the connection's worker
 * (tcp_api.c checks that first where the API says so, through @owner),
 * except @addr, which may run anywhere while the connection is open. */
struct pc__conn_ops {
        const char *name; /* "kernel", "dpdk" */
        /* 0 on @c's worker, -EXDEV elsewhere (-EPERM off-worker). */
        int (*owner)(const struct pc_conn *c);
        int (*send)(struct pc_conn *c, const void *data, size_t len);
        /* @n >= 1 buffers, @total bytes in all (checked). */
        int (*sendv)(struct pc_conn *c, const struct iovec *iov, int n, size_t total);
        int (*send_ref)(struct pc_conn *c, const void *data, size_t len, pc_conn_ref_fn done,
                        void *arg);
        int (*close)(struct pc_conn *c);
        int (*shutdown)(struct pc_conn *c);
        int (*linger)(struct pc_conn *c);
        /* End @c now, dropping its output; on_close follows with @err
         * (-ECONNABORTED for pc_conn_abort(), -ETIMEDOUT for a timeout). */
        int (*abort)(struct pc_conn *c, int err);
        size_t (*buffered)(const struct pc_conn *c);
        unsigned (*worker)(const struct pc_conn *c);
        int (*addr)(const struct pc_conn *c, bool peer, struct sockaddr_storage *out);
        int (*set_nodelay)(struct pc_conn *c, bool on);
        /* pc_conn_pause_read() on a callback connection (checked). */
        int (*pause_read)(struct pc_conn *c, bool pause);
        int (*set_keepalive)(struct pc_conn *c, unsigned idle_s, unsigned intvl_s,
                             unsigned count);
        /* pc_conn_read()/pc_conn_write() go through net/tcp_fiber.c with
         * these; its check hook says -EINVAL for a connection that is not
         * fiber-served. */
        const struct pc__fiber_ops *fiber;
};

/* Idle timeouts of one connection (conn_idle.c), on its worker. The
 * backends only count bytes in and bytes the peer (DPDK) or the kernel
 * took; a timer every quarter of the shorter timeout compares. */
struct pc__conn_idle {
        uint64_t rd_ns, wr_ns;   /* 0: off */
        uint64_t rd_mark, wr_mark; /* the counters at the last progress */
        uint64_t rd_at, wr_at;     /* pc_now_ns() of that progress */
        struct pc_timer timer;     /* armed while a timeout is set */
};

struct pc__listener_base;

struct pc__conn_base {
        const struct pc__conn_ops *ops;
        void *data; /* pc_conn_set_data() */
        /* Bytes delivered to the service, and bytes of output done with
         * (the kernel took them / the peer acknowledged them): the only
         * per-byte bookkeeping the timeouts need. */
        uint64_t rx_bytes, tx_done;
        struct pc__listener_base *listener; /* accepted through, or NULL */
        struct pc__conn_idle *idle; /* NULL until pc_conn_set_timeout() */
        /* pc_conn_close() or pc_conn_abort() was called, or a timeout
         * ended it: later option calls say -EPIPE; its read timeout no
         * longer applies (nothing is read after our close). */
        bool closed;
};

/* A listener's backend. */
struct pc__listener_ops {
        uint16_t (*port)(const struct pc_tcp_listener *l);
        /* Stop accepting (the flag in the base is already set); from any
         * worker or the creating thread. */
        int (*close)(struct pc_tcp_listener *l);
};

struct pc__listener_base {
        const struct pc__listener_ops *ops;
        _Atomic bool closed;
        _Atomic unsigned limit; /* 0: none */
        _Atomic unsigned open;
        _Atomic uint64_t accepted, refused;
};

static inline const struct pc__conn_ops *pc__conn_ops(const struct pc_conn *c)
{
        return ((const struct pc__conn_base *)(const void *)c)->ops;
}

static inline struct pc__conn_base *pc__conn_base(struct pc_conn *c)
{
        return (struct pc__conn_base *)(void *)c;
}

/* Set up @b of a new connection (zeroed memory) for @ops; @l is the
 * listener it was accepted through, or NULL. */
void pc__conn_base_init(struct pc__conn_base *b, const struct pc__conn_ops *ops,
                        struct pc__listener_base *l);

/* @b's connection ends (before its memory is freed, on its worker):
 * stops its timer and gives its listener slot back. Idempotent. */
void pc__conn_base_fini(struct pc__conn_base *b);

/* An accept on listener @l: true to serve the connection (counted open),
 * false when @l is over its limit or closed (counted refused: close it at
 * once, sending nothing). Any worker. */
bool pc__listener_admit(struct pc__listener_base *l);

/* A connection pc__listener_admit() let in could not be served after all
 * (out of memory, the backend's own cap): counted refused instead. */
void pc__listener_unadmit(struct pc__listener_base *l);

/* Progress for the idle timers: @n bytes delivered / taken. Cheap and
 * inline: the fast paths call them per receive and per completed send. */
static inline void pc__conn_rx(struct pc__conn_base *b, size_t n)
{
        b->rx_bytes += n;
}

static inline void pc__conn_tx_done(struct pc__conn_base *b, size_t n)
{
        b->tx_done += n;
}

/* conn_idle.c. A fiber of @c's starts waiting for input (@write false) or
 * for room (@write true): its timeout counts from now at the latest. */
void pc__conn_idle_wait(struct pc_conn *c, bool write);
/* A new run on @b's worker (timers do not outlive a run): arm @b's
 * timeouts again. On the connection's worker. */
void pc__conn_idle_restart(struct pc__conn_base *b);

#endif /* PC_NET_PVT_H */
