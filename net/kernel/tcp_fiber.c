/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's side of blocking-style TCP (pc_tcp_serve_kernel,
 * pc_conn_read, pc_conn_write): the hooks net/tcp_fiber.c serves a
 * connection of tcp.c's through. Delivery pauses by stopping the
 * connection's receive (pc__conn_input_pause) while the handler leaves
 * FIN_CAP_RBUFS receive buffers' worth unread; a connection that ends
 * while its fiber runs stays on the worker's zombie list until the
 * handler returns (pc__conn_fiber_done).
 *
 * Everything here runs on the connection's worker, so nothing is atomic.
 */
#include <errno.h>
#include <stdlib.h>

#include "knet_pvt.h"
#include "pc_tcp_fiber_pvt.h"

/* Input kept for the handler before reading pauses, in receive buffers. */
#define FIN_CAP_RBUFS 4

static struct pc__fconn *k_fc(struct pc_conn *c)
{
        return &c->fc;
}

static int k_check(struct pc_conn *c)
{
        if (c->cb != &pc__fiber_cbs)
                return -EINVAL;
        if (pc__self->id != c->kw->id || pc__self->rt != c->kw->k->rt)
                return -EXDEV;
        return 0;
}

static bool k_gone(struct pc_conn *c)
{
        return c->dead;
}

static bool k_self_closed(struct pc_conn *c)
{
        return c->closing;
}

static int k_conn_err(struct pc_conn *c)
{
        return c->err;
}

static void k_pause(struct pc_conn *c, bool on)
{
        if (on)
                kinc(&c->kw->st.read_paused, 1);
        if (!c->zombie)
                pc__conn_input_pause(c, on);
}

static void k_no_fiber(struct pc_conn *c)
{
        kinc(&c->kw->st.accept_errors, 1);
}

static size_t k_in_max(struct pc_conn *c)
{
        return (size_t)FIN_CAP_RBUFS * c->kw->k->opts.rbuf;
}

static size_t k_chunk(struct pc_conn *c)
{
        return c->kw->k->opts.out_cap / 2;
}

const struct pc__fiber_ops pc__kfiber_ops = {
        .fc = k_fc,
        .check = k_check,
        .gone = k_gone,
        .self_closed = k_self_closed,
        .conn_err = k_conn_err,
        .pause = k_pause,
        .abort = pc__conn_abort,
        .done = pc__conn_fiber_done,
        .no_fiber = k_no_fiber,
        .in_max = k_in_max,
        .chunk = k_chunk,
};

void pc__tcp_fibers_cancel(struct kworker *kw)
{
        for (struct pc_conn *c = kw->conns; c; c = c->next)
                pc__fconn_cancel(&c->fc);
}

int pc_tcp_serve_kernel(struct pc_runtime *rt, const char *addr, uint16_t port,
                        pc_conn_fiber_fn fn, void *arg, struct pc_tcp_listener **out)
{
        struct pc_tcp_listener *l;
        struct pc__fserve *s;
        int rc;

        if (fn == NULL)
                return -EINVAL;
        s = pc__fserve_new(fn, arg, &pc__kfiber_ops);
        if (s == NULL)
                return -ENOMEM;
        rc = pc_tcp_listen_kernel(rt, addr, port, &pc__fiber_cbs, s, &l);
        if (rc) {
                free(s);
                return rc;
        }
        l->serve = s;
        if (out)
                *out = l;
        return 0;
}
