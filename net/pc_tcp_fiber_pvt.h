/* SPDX-License-Identifier: MIT */
/*
 * Private to the network backends: blocking-style TCP (pc_tcp_serve_kernel(),
 * pc_tcp_serve_dpdk(), pc_conn_read(), pc_conn_write()) over a backend's
 * callbacks, written once in net/tcp_fiber.c. A backend embeds a struct
 * pc__fconn in its connection and hands the service a struct
 * pc__fiber_ops saying how to reach it and what its connection can do.
 * Everything runs on the connection's worker: nothing is atomic. Not part
 * of the API.
 */
#ifndef PC_TCP_FIBER_PVT_H
#define PC_TCP_FIBER_PVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "pc_net.h"

struct pc_fiber;
struct pc__fserve;

/* The fiber service's part of one connection. */
struct pc__fconn {
        struct pc_conn *conn;             /* the connection it is part of */
        const struct pc__fserve *serve;   /* its listener's service */
        struct pc_fiber *rd_fiber, *wr_fiber; /* waiting in read / write */
        uint8_t *rd_buf;                      /* the waiting reader's buffer */
        size_t rd_len;
        uint8_t *in; /* input no reader waited for: [in_off, in_len) unread */
        size_t in_off, in_len, in_cap;
        bool live;   /* the handler runs: the connection's memory stays */
        bool eof;    /* on_data(len 0) came */
        bool closed; /* on_close came */
        bool paused; /* delivery stopped: @in holds the backend's in_max */
        int err;     /* on_close's error */
};

/* What a backend supplies; every hook runs on the connection's worker. */
struct pc__fiber_ops {
        struct pc__fconn *(*fc)(struct pc_conn *c);
        /* 0 when the calling worker serves @c through this service;
         * -EINVAL when @c is not fiber-served, -EXDEV on another worker. */
        int (*check)(struct pc_conn *c);
        /* The backend's connection is finished (nothing more is sent). */
        bool (*gone)(struct pc_conn *c);
        /* We closed it ourselves (reads see it gone; sends say so). */
        bool (*self_closed)(struct pc_conn *c);
        /* The backend's own error for @c, 0 when it has none. */
        int (*conn_err)(struct pc_conn *c);
        /* Stop (true) or resume (false) delivering input to on_data. */
        void (*pause)(struct pc_conn *c, bool on);
        /* Out of memory for input: end @c with @err. */
        void (*abort)(struct pc_conn *c, int err);
        /* The handler returned and @c was closed: the memory is the
         * backend's again (free it if the backend is done with it). */
        void (*done)(struct pc_conn *c);
        /* No fiber could be started for an accepted @c: count it. */
        void (*no_fiber)(struct pc_conn *c);
        /* Input kept unread before delivery pauses; the largest piece one
         * pc_conn_send() of pc_conn_write() hands the backend. */
        size_t (*in_max)(struct pc_conn *c);
        size_t (*chunk)(struct pc_conn *c);
};

/* The listener argument of a fiber-served listener. */
struct pc__fserve {
        pc_conn_fiber_fn fn;
        void *arg;
        const struct pc__fiber_ops *ops;
};

/* The callbacks a fiber-served listener is opened with. */
extern const struct pc_tcp_callbacks pc__fiber_cbs;

/* A listener argument for @fn(@arg) on a backend's @ops; NULL when out of
 * memory or @fn is NULL (free() it when the listen fails). */
struct pc__fserve *pc__fserve_new(pc_conn_fiber_fn fn, void *arg,
                                  const struct pc__fiber_ops *ops);
/* pc_conn_read() and pc_conn_write() of a backend's fiber-served @c. */
ssize_t pc__fconn_read(struct pc_conn *c, const struct pc__fiber_ops *ops, void *buf,
                       size_t len);
ssize_t pc__fconn_write(struct pc_conn *c, const struct pc__fiber_ops *ops, const void *buf,
                        size_t len);
/* pc_conn_writev() of @n buffers, @total bytes in all (checked). */
ssize_t pc__fconn_writev(struct pc_conn *c, const struct pc__fiber_ops *ops,
                         const struct iovec *iov, int n, size_t total);
/* The run stops: a handler waiting in @fc's read or write gets
 * -ECANCELED. */
void pc__fconn_cancel(struct pc__fconn *fc);
/* A timeout (conn_idle.c): the handler waiting in @fc's write (@write) or
 * read gets -ETIMEDOUT. False when none waits there. */
bool pc__fconn_timeout(struct pc__fconn *fc, bool write);

#endif /* PC_TCP_FIBER_PVT_H */
