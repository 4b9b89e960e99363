/* SPDX-License-Identifier: MIT */
/*
 * The DPDK backend's side of blocking-style TCP (pc_tcp_serve_dpdk,
 * pc_conn_read, pc_conn_write): the hooks net/tcp_fiber.c serves a
 * connection of tcp.c's through. Delivery pauses in the engine
 * (pc_tcb_pause: what arrives is held there, up to rcv_cap, then the
 * window closes) while the handler leaves PC_TCP_FIBER_IN bytes unread;
 * a connection the engine closed while its fiber runs (@tcb NULL) is
 * freed when the handler returns.
 *
 * Everything here runs on the connection's worker: nothing is atomic.
 */
#include <errno.h>
#include <stdlib.h>

#include "dpdk_pvt.h"
#include "pc_net_pvt.h"
#include "pc_tcp_fiber_pvt.h"

/* Input kept for the handler before the engine stops delivering. */
#define PC_TCP_FIBER_IN (64u << 10)
/* The most one pc_conn_send() of pc_conn_write() hands the engine: it
 * fits once on_writable says the output is down to half of the engine's
 * cap (256 KiB by default). */
#define PC_TCP_FIBER_CHUNK (64u << 10)

static inline struct pc__dconn *dc_of(struct pc_conn *c)
{
        return (struct pc__dconn *)(void *)c;
}

void pc__dconn_free(struct pc__dconn *dc)
{
        pc__conn_base_fini(&dc->base);
        free(dc->fc.in);
        free(dc);
}

bool pc__dconn_release(struct pc__dconn *dc)
{
        return !dc->fc.live;
}

static struct pc__fconn *d_fc(struct pc_conn *c)
{
        return &dc_of(c)->fc;
}

static int d_check(struct pc_conn *c)
{
        const struct pc__dconn *dc = dc_of(c);

        if (dc->cb != &pc__fiber_cbs)
                return -EINVAL;
        if (pc__self->id != dc->q->qid || pc__self->rt != dc->q->port->rt)
                return -EXDEV;
        return 0;
}

static bool d_gone(struct pc_conn *c)
{
        return dc_of(c)->tcb == NULL;
}

static bool d_self_closed(struct pc_conn *c)
{
        return dc_of(c)->f_self_closed;
}

static int d_conn_err(struct pc_conn *c)
{
        (void)c;
        return 0; /* the engine's error comes with on_close */
}

static void d_pause(struct pc_conn *c, bool on)
{
        struct pc__dconn *dc = dc_of(c);

        if (dc->tcb)
                pc_tcb_pause(dc->tcb, on);
}

static void d_abort(struct pc_conn *c, int err)
{
        pc__dconn_abort(dc_of(c), err);
}

static void d_done(struct pc_conn *c)
{
        struct pc__dconn *dc = dc_of(c);

        if (dc->tcb == NULL) { /* closed meanwhile: ours to free */
                pc__dconn_unlink(dc);
                pc__dconn_free(dc);
        }
}

static void d_no_fiber(struct pc_conn *c)
{
        pc__qcount(&dc_of(c)->q->st.errors, 1);
}

static size_t d_in_max(struct pc_conn *c)
{
        (void)c;
        return PC_TCP_FIBER_IN;
}

static size_t d_chunk(struct pc_conn *c)
{
        (void)c;
        return PC_TCP_FIBER_CHUNK;
}

const struct pc__fiber_ops pc__dfiber_ops = {
        .fc = d_fc,
        .check = d_check,
        .gone = d_gone,
        .self_closed = d_self_closed,
        .conn_err = d_conn_err,
        .pause = d_pause,
        .abort = d_abort,
        .done = d_done,
        .no_fiber = d_no_fiber,
        .in_max = d_in_max,
        .chunk = d_chunk,
};

void pc__dtcp_fibers_cancel(struct pc_port_q *q)
{
        for (struct pc__dconn *dc = q->conns; dc; dc = dc->next)
                pc__fconn_cancel(&dc->fc);
}

int pc_tcp_serve_dpdk(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                      struct pc_tcp_listener **out)
{
        struct pc__fserve *s;
        int rc;

        if (fn == NULL)
                return -EINVAL;
        s = pc__fserve_new(fn, arg, &pc__dfiber_ops);
        if (s == NULL)
                return -ENOMEM;
        rc = pc__dtcp_listen_owned(p, port, &pc__fiber_cbs, s, s, out);
        if (rc)
                free(s);
        return rc;
}
