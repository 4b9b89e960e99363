/* SPDX-License-Identifier: MIT */
/*
 * The DPDK backend's operations behind the service API (pc_net.h): what
 * pc_conn_* and pc_tcp_listener_* do to a connection or listener of
 * tcp.c, in the shape of pc_net_pvt.h's ops tables. Each hook is a thin
 * call into the connection's engine (net/proto/pc_tcp.h); tcp_api.c has
 * checked the arguments and that the caller is the connection's worker.
 *
 * A connection the engine closed (@tcb NULL) lives on only for its fiber
 * handler: every call then finds it gone (-EPIPE, or 0 where the call is
 * idempotent).
 *
 * A listener is every worker's engine listening on the port. Closing it
 * sets the flag that refuses accepts at once (pc__listener_admit()), then
 * each worker takes its own engine off the port: a task per worker while
 * the run goes on, directly before it; and each worker's start checks
 * again, for a close whose tasks a stopping run dropped.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "dpdk_pvt.h"
#include "pc_net_pvt.h"

/* Linux's limits for TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT: the same
 * values are refused on both backends. */
#define PC_KEEPIDLE_MAX 32767
#define PC_KEEPINTVL_MAX 32767
#define PC_KEEPCNT_MAX 127

static inline struct pc__dconn *dc_of(const struct pc_conn *c)
{
        return (struct pc__dconn *)(void *)c;
}

static bool on_owner(const struct pc__dconn *dc)
{
        return pc__self && pc__self->rt == dc->q->port->rt && pc__self->id == dc->q->qid;
}

static int dconn_owner(const struct pc_conn *c)
{
        return on_owner(dc_of(c)) ? 0 : -EXDEV;
}

/* The engine's connection while the application may still use it. */
static struct pc_tcb *live_tcb(const struct pc__dconn *dc)
{
        return dc->f_self_closed ? NULL : dc->tcb;
}

static int dconn_send(struct pc_conn *c, const void *data, size_t len)
{
        struct pc__dconn *dc = dc_of(c);

        if (!on_owner(dc))
                return -EXDEV;
        return dc->tcb ? pc_tcb_send(dc->tcb, data, len) : -EPIPE;
}

static int dconn_sendv(struct pc_conn *c, const struct iovec *iov, int n, size_t total)
{
        struct pc__dconn *dc = dc_of(c);

        (void)total;
        return dc->tcb ? pc_tcb_sendv(dc->tcb, iov, n) : -EPIPE;
}

static int dconn_send_ref(struct pc_conn *c, const void *data, size_t len, pc_conn_ref_fn done,
                          void *arg)
{
        struct pc__dconn *dc = dc_of(c);

        return dc->tcb ? pc_tcb_send_ref(dc->tcb, data, len, done, arg) : -EPIPE;
}

static int dconn_close(struct pc_conn *c)
{
        struct pc__dconn *dc = dc_of(c);

        if (!on_owner(dc))
                return -EXDEV;
        dc->f_self_closed = true;
        return dc->tcb ? pc_tcb_close(dc->tcb) : 0;
}

static int dconn_shutdown(struct pc_conn *c)
{
        struct pc_tcb *t = live_tcb(dc_of(c));

        return t ? pc_tcb_shutdown(t) : -EPIPE;
}

static int dconn_linger(struct pc_conn *c)
{
        struct pc__dconn *dc = dc_of(c);

        if (!on_owner(dc))
                return -EXDEV;
        return dc->tcb ? pc_tcb_linger(dc->tcb) : -EPIPE;
}

int pc__dconn_abort(struct pc__dconn *dc, int err)
{
        /* The engine reports every abort as -ECONNABORTED; on_close says
         * why this one came (e_on_close). An abort of a connection that
         * already ended changes nothing. */
        if (dc->tcb && pc_tcb_abort(dc->tcb) == 0)
                dc->abort_err = err;
        return 0;
}

static int dconn_abort(struct pc_conn *c, int err)
{
        struct pc__dconn *dc = dc_of(c);

        dc->f_self_closed = true;
        return pc__dconn_abort(dc, err);
}

static size_t dconn_buffered(const struct pc_conn *c)
{
        const struct pc__dconn *dc = dc_of(c);

        return dc->tcb ? pc_tcb_buffered(dc->tcb) : 0;
}

static unsigned dconn_worker(const struct pc_conn *c)
{
        return dc_of(c)->q->qid;
}

/* The addresses were kept when the connection opened (tcp.c), so any
 * thread may read them while it is open. */
static int dconn_addr(const struct pc_conn *c, bool peer, struct sockaddr_storage *out)
{
        const struct pc__dconn *dc = dc_of(c);
        struct sockaddr_in *sin = (struct sockaddr_in *)out;

        if (!dc->addr_ok)
                return -ENOTCONN;
        memset(out, 0, sizeof(*out));
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(peer ? dc->raddr : dc->laddr);
        sin->sin_port = htons(peer ? dc->rport : dc->lport);
        return 0;
}

static int dconn_set_nodelay(struct pc_conn *c, bool on)
{
        struct pc_tcb *t = live_tcb(dc_of(c));

        return t ? pc_tcb_nodelay(t, on) : -EPIPE;
}

/* The engine's pause delivers what it held at its next flush. */
static int dconn_pause_read(struct pc_conn *c, bool pause)
{
        struct pc_tcb *t = live_tcb(dc_of(c));

        return t ? pc_tcb_pause(t, pause) : -EPIPE;
}

static int dconn_set_keepalive(struct pc_conn *c, unsigned idle_s, unsigned intvl_s,
                               unsigned count)
{
        struct pc_tcb *t = live_tcb(dc_of(c));

        if (idle_s > PC_KEEPIDLE_MAX || (idle_s && (intvl_s > PC_KEEPINTVL_MAX ||
                                                    count > PC_KEEPCNT_MAX)))
                return -EINVAL;
        if (t == NULL)
                return -EPIPE;
        return pc_tcb_keepalive(t, idle_s * 1000000000ull, intvl_s * 1000000000ull, count);
}

const struct pc__conn_ops pc__dconn_ops = {
        .name = "dpdk",
        .owner = dconn_owner,
        .send = dconn_send,
        .sendv = dconn_sendv,
        .send_ref = dconn_send_ref,
        .close = dconn_close,
        .shutdown = dconn_shutdown,
        .linger = dconn_linger,
        .abort = dconn_abort,
        .buffered = dconn_buffered,
        .worker = dconn_worker,
        .addr = dconn_addr,
        .set_nodelay = dconn_set_nodelay,
        .pause_read = dconn_pause_read,
        .set_keepalive = dconn_set_keepalive,
        .fiber = &pc__dfiber_ops,
};

int pc_conn_dpdk_info(const struct pc_conn *c, struct pc_tcb_info *out)
{
        const struct pc__dconn *dc;

        if (c == NULL || out == NULL || pc__conn_ops(c) != &pc__dconn_ops)
                return -EINVAL;
        dc = dc_of(c);
        if (pc__self && !on_owner(dc))
                return -EXDEV;
        if (dc->tcb == NULL)
                return -ENOTCONN;
        pc_tcb_info(dc->tcb, out);
        return 0;
}

/* ---- listeners ------------------------------------------------------------ */

static uint16_t dlistener_port(const struct pc_tcp_listener *l)
{
        return ((const struct pc__dlistener *)(const void *)l)->port;
}

void pc__dtcp_listeners_sync(struct pc_port_q *q)
{
        struct pc_port *p = q->port;

        if (q->tcpe == NULL)
                return;
        for (unsigned i = 0; i < p->ntl; i++)
                if (atomic_load_explicit(&p->tl[i]->base.closed, memory_order_relaxed))
                        (void)pc_tcpe_unlisten(q->tcpe, 0, p->tl[i]->port); /* -ENOENT: done */
}

static void unlisten_here(void *arg)
{
        struct pc__dlistener *l = arg;

        pc__dtcp_listeners_sync(&l->p->q[pc__self->id]);
}

/* On a worker: a task on each worker, which takes its engine off. */
static int unlisten_everywhere(struct pc__dlistener *l)
{
        int err = 0;

        for (unsigned w = 0; w < l->p->nq; w++) {
                struct pc_spawn_opts o = {
                        .affinity = PC_STICKY, .place = PC_SPAWN_WORKER, .worker = w};
                int rc = pc_spawn_ex(unlisten_here, l, &o);

                if (rc < 0 && err == 0)
                        err = rc;
        }
        return err;
}

static void unlisten_task(void *arg)
{
        (void)unlisten_everywhere(arg);
}

static int dlistener_close(struct pc_tcp_listener *tl)
{
        struct pc__dlistener *l = (struct pc__dlistener *)(void *)tl;
        struct pc_runtime *rt = l->p->rt;
        int rc;

        if (pc__self && pc__self->rt == rt)
                return unlisten_everywhere(l);
        if (!atomic_load(&rt->running)) {
                for (unsigned i = 0; i < l->p->nq; i++)
                        pc__dtcp_listeners_sync(&l->p->q[i]);
                return 0;
        }
        /* Running, and called from outside it: through any worker. A run
         * that is stopping refuses; its next start takes the engines off. */
        rc = pc_runtime_inject(rt, unlisten_task, l);
        return rc == -ESHUTDOWN ? 0 : rc;
}

const struct pc__listener_ops pc__dlistener_ops = {
        .port = dlistener_port,
        .close = dlistener_close,
};

/* ---- draining ------------------------------------------------------------- */

void pc__dtcp_drain(struct pc_port_q *q)
{
        struct pc_port *p = q->port;

        for (unsigned i = 0; i < p->ntl; i++)
                atomic_store(&p->tl[i]->base.closed, true);
        pc__dtcp_listeners_sync(q);
}

unsigned pc__dtcp_open(const struct pc_port_q *q)
{
        return q->nconns;
}
