/* SPDX-License-Identifier: MIT */
/*
 * Blocking-style TCP on DPDK (pc_tcp_serve_dpdk, pc_conn_read,
 * pc_conn_write), the same contract as the kernel backend's
 * net/kernel/tcp_fiber.c, on the callbacks of tcp.c. Each accepted
 * connection gets a sticky fiber on its worker; its callbacks are ours:
 *
 * - on_data copies straight into the buffer of a reader that waits, and
 *   wakes it; what no reader waits for is kept in the connection's input,
 *   and the engine stops delivering (pc_tcb_pause: what arrives is held
 *   there, up to rcv_cap, then the window closes) while that input holds
 *   PC_TCP_FIBER_IN bytes, so a slow handler costs bounded memory;
 * - on_writable wakes a writer that waits for room in the output;
 * - on_close wakes either with the connection's error.
 *
 * The connection stays open after the peer's FIN (pc_conn_linger) until
 * the handler returns, and its memory outlives on_close while the fiber
 * runs (pc__dconn_release()), so the handler's pointer never dangles.
 * When the run stops, waiting handlers get -ECANCELED.
 *
 * Everything here runs on the connection's worker: nothing is atomic.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "dpdk_pvt.h"
#include "pc_fiber.h"
#include "pc_net_pvt.h"

/* Input kept for the handler before the engine stops delivering. */
#define PC_TCP_FIBER_IN (64u << 10)

struct dserve {
        pc_conn_fiber_fn fn;
        void *arg;
};

static inline struct pc__dconn *dc_of(struct pc_conn *c)
{
        return (struct pc__dconn *)(void *)c;
}

static size_t unread(const struct pc__dconn *dc)
{
        return dc->in_len - dc->in_off;
}

static void wake_reader(struct pc__dconn *dc, int rc)
{
        struct pc_fiber *f = dc->rd_fiber;

        if (f) {
                dc->rd_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

static void wake_writer(struct pc__dconn *dc, int rc)
{
        struct pc_fiber *f = dc->wr_fiber;

        if (f) {
                dc->wr_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

void pc__dconn_free(struct pc__dconn *dc)
{
        free(dc->in);
        free(dc);
}

bool pc__dconn_release(struct pc__dconn *dc)
{
        return !dc->fiber_live;
}

static void *conn_fiber(void *arg)
{
        struct pc__dconn *dc = arg;
        const struct dserve *s = dc->arg;
        struct pc_conn *c = (struct pc_conn *)(void *)dc;

        s->fn(c, s->arg);
        (void)pc_conn_close(c); /* sends what is queued, then closes */
        dc->fiber_live = false;
        if (dc->tcb == NULL) { /* closed meanwhile: ours to free */
                pc__dconn_unlink(dc);
                pc__dconn_free(dc);
        }
        return NULL;
}

static void f_accept(struct pc_conn *c, void *arg)
{
        struct pc__dconn *dc = dc_of(c);
        int rc;

        (void)arg;
        (void)pc_conn_linger(c); /* the handler decides when it ends */
        dc->fiber_live = true;
        rc = pc_fiber_spawn_flags(conn_fiber, dc, PC_FIBER_STICKY, NULL);
        if (rc) {
                dc->fiber_live = false;
                pc__qcount(&dc->q->st.errors, 1);
                pc_log(PC_LOG_WARN, "worker %u: no fiber for a connection (%s); closing it",
                       dc->q->qid, pc_strerror(rc));
                pc_conn_close(c);
        }
}

static int in_put(struct pc__dconn *dc, const uint8_t *p, size_t len)
{
        if (dc->in_off && dc->in_off == dc->in_len)
                dc->in_off = dc->in_len = 0;
        if (dc->in_len + len > dc->in_cap) {
                size_t keep = unread(dc), cap = dc->in_cap ? dc->in_cap : 4096;
                uint8_t *n;

                while (cap < keep + len)
                        cap *= 2;
                n = malloc(cap);
                if (n == NULL)
                        return -ENOMEM;
                if (keep)
                        memcpy(n, dc->in + dc->in_off, keep);
                free(dc->in);
                dc->in = n;
                dc->in_cap = cap;
                dc->in_off = 0;
                dc->in_len = keep;
        }
        memcpy(dc->in + dc->in_len, p, len);
        dc->in_len += len;
        return 0;
}

static void f_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct pc__dconn *dc = dc_of(c);
        const uint8_t *p = data;

        (void)arg;
        if (len == 0) {
                dc->f_eof = true;
                wake_reader(dc, 0);
                return;
        }
        if (dc->rd_fiber && unread(dc) == 0) {
                size_t n = len < dc->rd_len ? len : dc->rd_len;

                memcpy(dc->rd_buf, p, n);
                wake_reader(dc, (int)n);
                p += n;
                len -= n;
                if (len == 0)
                        return;
        }
        if (in_put(dc, p, len)) {
                dc->f_err = -ENOMEM;
                pc_tcb_abort(dc->tcb);
                return;
        }
        if (unread(dc) >= PC_TCP_FIBER_IN && !dc->in_paused) {
                dc->in_paused = true;
                pc_tcb_pause(dc->tcb, true);
        }
}

static void f_writable(struct pc_conn *c, void *arg)
{
        (void)arg;
        wake_writer(dc_of(c), 0);
}

static void f_close(struct pc_conn *c, int err, void *arg)
{
        struct pc__dconn *dc = dc_of(c);

        (void)arg;
        dc->f_closed = true;
        if (err && dc->f_err == 0)
                dc->f_err = err;
        /* Both look again and find the connection gone. */
        wake_reader(dc, 0);
        wake_writer(dc, 0);
}

static const struct pc_tcp_callbacks fiber_cbs = {
        .on_accept = f_accept,
        .on_data = f_data,
        .on_close = f_close,
        .on_writable = f_writable,
};

/* What a call on a connection that can no longer read or send reports:
 * its error, or -EPIPE after a close of ours. */
static int gone_rc(const struct pc__dconn *dc)
{
        return dc->f_err ? dc->f_err : -EPIPE;
}

/* The checks both calls make: a fiber, on @c's worker, serving @c. */
static int fiber_conn_check(const struct pc__dconn *dc)
{
        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (dc->cb != &fiber_cbs)
                return -EINVAL;
        if (pc__self->id != dc->q->qid || pc__self->rt != dc->q->port->rt)
                return -EXDEV;
        return 0;
}

ssize_t pc__dconn_read(struct pc_conn *c, void *buf, size_t len)
{
        struct pc__dconn *dc = dc_of(c);
        int rc = fiber_conn_check(dc);

        if (rc)
                return rc;
        if (buf == NULL || len == 0)
                return -EINVAL;
        if (len > INT_MAX)
                len = INT_MAX; /* a wake-up carries the count as an int */
        for (;;) {
                size_t n = unread(dc);

                if (n) {
                        if (n > len)
                                n = len;
                        memcpy(buf, dc->in + dc->in_off, n);
                        dc->in_off += n;
                        if (dc->in_paused && unread(dc) < PC_TCP_FIBER_IN / 2 && dc->tcb) {
                                dc->in_paused = false;
                                pc_tcb_pause(dc->tcb, false);
                        }
                        return (ssize_t)n;
                }
                if (dc->f_eof)
                        return 0;
                if (dc->f_closed || dc->f_self_closed || dc->tcb == NULL)
                        return gone_rc(dc);
                if (pc__self->stop_seen)
                        return -ESHUTDOWN;
                dc->rd_fiber = pc_fiber_self();
                dc->rd_buf = buf;
                dc->rd_len = len;
                rc = pc__fiber_wait();
                if (rc != 0)
                        return rc; /* bytes copied in, or -ECANCELED */
                /* 0: the connection changed (EOF, closed): look again */
        }
}

ssize_t pc__dconn_write(struct pc_conn *c, const void *buf, size_t len)
{
        struct pc__dconn *dc = dc_of(c);
        const uint8_t *p = buf;
        size_t off = 0;
        int rc = fiber_conn_check(dc);

        if (rc)
                return rc;
        if ((buf == NULL && len) || len > SSIZE_MAX)
                return -EINVAL;
        while (off < len) {
                /* A piece fits once on_writable says the output is down to
                 * half of the engine's cap (256 KiB by default). */
                size_t n = len - off < 65536 ? len - off : 65536;

                if (dc->f_closed || dc->tcb == NULL)
                        return gone_rc(dc);
                rc = pc_conn_send(c, p + off, n);
                if (rc == 0) {
                        off += n;
                        continue;
                }
                if (rc != -ENOBUFS)
                        return rc == -EPIPE ? gone_rc(dc) : rc;
                if (pc__self->stop_seen)
                        return -ESHUTDOWN;
                dc->wr_fiber = pc_fiber_self();
                rc = pc__fiber_wait();
                if (rc)
                        return rc; /* -ECANCELED */
        }
        return (ssize_t)len;
}

void pc__dtcp_fibers_cancel(struct pc_port_q *q)
{
        for (struct pc__dconn *dc = q->conns; dc; dc = dc->next) {
                wake_reader(dc, -ECANCELED);
                wake_writer(dc, -ECANCELED);
        }
}

int pc__dtcp_serve(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                   struct pc_tcp_listener **out)
{
        struct dserve *s;
        int rc;

        if (fn == NULL)
                return -EINVAL;
        s = malloc(sizeof(*s));
        if (s == NULL)
                return -ENOMEM;
        s->fn = fn;
        s->arg = arg;
        rc = pc__dtcp_listen_owned(p, port, &fiber_cbs, s, s, out);
        if (rc)
                free(s);
        return rc;
}
