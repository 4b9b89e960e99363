/* SPDX-License-Identifier: MIT */
/*
 * Blocking-style TCP (pc_tcp_serve_kernel(), pc_tcp_serve_dpdk(), pc_conn_read(),
 * pc_conn_write()) on either backend's callbacks. Each accepted
 * connection gets a sticky fiber on its worker; its callbacks are ours:
 *
 * - on_data copies straight into the buffer of a reader that waits, and
 *   wakes it; what no reader waits for is kept in the connection's input,
 *   and delivery pauses (the backend's pause hook: the kernel backend
 *   stops receiving, the DPDK engine holds what arrives and then closes
 *   its window) while that input holds the backend's in_max bytes, and
 *   resumes once the handler has read it below half, so a handler that
 *   reads slowly costs bounded memory;
 * - on_writable wakes a writer that waits for room in the output;
 * - on_close wakes either with the connection's error.
 *
 * The connection stays open after the peer's EOF (pc_conn_linger) until
 * the handler returns, and its memory outlives on_close while the fiber
 * runs (@live; the backend's done hook frees it then), so the handler's
 * pointer never dangles. When the run stops, waiting handlers get
 * -ECANCELED.
 *
 * Everything here runs on the connection's worker, so nothing is atomic.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pc_module_pvt.h"
#include "pc_fiber.h"
#include "pc_net_pvt.h"
#include "pc_tcp_fiber_pvt.h"

static size_t unread(const struct pc__fconn *fc)
{
        return fc->in_len - fc->in_off;
}

static void wake_reader(struct pc__fconn *fc, int rc)
{
        struct pc_fiber *f = fc->rd_fiber;

        if (f) {
                fc->rd_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

static void wake_writer(struct pc__fconn *fc, int rc)
{
        struct pc_fiber *f = fc->wr_fiber;

        if (f) {
                fc->wr_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

void pc__fconn_cancel(struct pc__fconn *fc)
{
        wake_reader(fc, -ECANCELED);
        wake_writer(fc, -ECANCELED);
}

bool pc__fconn_timeout(struct pc__fconn *fc, bool write)
{
        if ((write ? fc->wr_fiber : fc->rd_fiber) == NULL)
                return false;
        if (write)
                wake_writer(fc, -ETIMEDOUT);
        else
                wake_reader(fc, -ETIMEDOUT);
        return true;
}

/* Keep @len bytes of input after what is unread, growing the buffer
 * (doubling) when the consumed front does not make room. */
static int in_put(struct pc__fconn *fc, const uint8_t *p, size_t len)
{
        if (fc->in_off && fc->in_off == fc->in_len)
                fc->in_off = fc->in_len = 0;
        if (fc->in_len + len > fc->in_cap) {
                size_t keep = unread(fc), cap = fc->in_cap ? fc->in_cap : 4096;
                uint8_t *n;

                while (cap < keep + len)
                        cap *= 2;
                n = malloc(cap);
                if (n == NULL)
                        return -ENOMEM;
                if (keep)
                        memcpy(n, fc->in + fc->in_off, keep);
                free(fc->in);
                fc->in = n;
                fc->in_cap = cap;
                fc->in_off = 0;
                fc->in_len = keep;
        }
        memcpy(fc->in + fc->in_len, p, len);
        fc->in_len += len;
        return 0;
}

static void *conn_fiber(void *arg)
{
        struct pc__fconn *fc = arg;
        struct pc_conn *c = fc->conn;
        const struct pc__fserve *s = fc->serve;

        s->fn(c, s->arg);
        (void)pc_conn_close(c); /* sends what is queued, then closes */
        fc->live = false;
        s->ops->done(c); /* may free @c, and @fc with it */
        return NULL;
}

static void f_accept(struct pc_conn *c, void *arg)
{
        const struct pc__fserve *s = arg;
        struct pc__fconn *fc = s->ops->fc(c);
        int rc;

        (void)pc_conn_linger(c); /* the handler decides when it ends */
        fc->conn = c;
        fc->serve = s;
        fc->live = true;
        rc = pc_fiber_spawn_flags(conn_fiber, fc, PC_FIBER_STICKY, NULL);
        if (rc) {
                fc->live = false;
                s->ops->no_fiber(c);
                pc_log(PC_LOG_WARN, "worker %u: no fiber for a connection (%s); closing it",
                       pc__self->id, pc_strerror(rc));
                pc_conn_close(c);
        }
}

static void f_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        const struct pc__fiber_ops *ops = ((const struct pc__fserve *)arg)->ops;
        struct pc__fconn *fc = ops->fc(c);
        const uint8_t *p = data;

        if (len == 0) {
                fc->eof = true;
                wake_reader(fc, 0);
                return;
        }
        if (fc->rd_fiber && unread(fc) == 0) {
                size_t n = len < fc->rd_len ? len : fc->rd_len;

                memcpy(fc->rd_buf, p, n);
                wake_reader(fc, (int)n);
                p += n;
                len -= n;
                if (len == 0)
                        return;
        }
        if (in_put(fc, p, len)) {
                fc->err = -ENOMEM;
                ops->abort(c, -ENOMEM);
                return;
        }
        if (unread(fc) >= ops->in_max(c) && !fc->paused) {
                fc->paused = true;
                ops->pause(c, true);
        }
}

static void f_writable(struct pc_conn *c, void *arg)
{
        wake_writer(((const struct pc__fserve *)arg)->ops->fc(c), 0);
}

static void f_close(struct pc_conn *c, int err, void *arg)
{
        struct pc__fconn *fc = ((const struct pc__fserve *)arg)->ops->fc(c);

        fc->closed = true;
        if (err && fc->err == 0)
                fc->err = err;
        /* Both look again and find the connection gone. */
        wake_reader(fc, 0);
        wake_writer(fc, 0);
}

const struct pc_tcp_callbacks pc__fiber_cbs = {
        .on_accept = f_accept,
        .on_data = f_data,
        .on_close = f_close,
        .on_writable = f_writable,
};

struct pc__fserve *pc__fserve_new(pc_conn_fiber_fn fn, void *arg,
                                  const struct pc__fiber_ops *ops)
{
        struct pc__fserve *s;

        if (fn == NULL)
                return NULL;
        s = malloc(sizeof(*s));
        if (s) {
                s->fn = fn;
                s->arg = arg;
                s->ops = ops;
        }
        return s;
}

/* What a call on a connection that can no longer read or send reports:
 * its error, or -EPIPE after a close of ours. */
static int gone_rc(struct pc_conn *c, const struct pc__fiber_ops *ops)
{
        const struct pc__fconn *fc = ops->fc(c);
        int err;

        if (fc->err)
                return fc->err;
        err = ops->conn_err(c);
        return err ? err : -EPIPE;
}

/* The checks both calls make: a fiber, on @c's worker, serving @c. */
static int fiber_conn_check(struct pc_conn *c, const struct pc__fiber_ops *ops)
{
        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (c == NULL)
                return -EINVAL;
        return ops->check(c);
}

ssize_t pc__fconn_read(struct pc_conn *c, const struct pc__fiber_ops *ops, void *buf,
                       size_t len)
{
        struct pc__fconn *fc;
        int rc = fiber_conn_check(c, ops);

        if (rc)
                return rc;
        if (buf == NULL || len == 0)
                return -EINVAL;
        if (len > INT_MAX)
                len = INT_MAX; /* a wake-up carries the count as an int */
        fc = ops->fc(c);
        for (;;) {
                size_t n = unread(fc);

                if (n) {
                        if (n > len)
                                n = len;
                        memcpy(buf, fc->in + fc->in_off, n);
                        fc->in_off += n;
                        if (fc->paused && unread(fc) < ops->in_max(c) / 2 && !ops->gone(c)) {
                                fc->paused = false;
                                ops->pause(c, false);
                        }
                        return (ssize_t)n;
                }
                if (fc->eof)
                        return 0;
                if (fc->closed || ops->gone(c) || ops->self_closed(c))
                        return gone_rc(c, ops);
                if (pc__self->stop_seen)
                        return -ESHUTDOWN;
                fc->rd_fiber = pc_fiber_self();
                fc->rd_buf = buf;
                fc->rd_len = len;
                pc__conn_idle_wait(c, false);
                rc = pc__fiber_wait();
                if (rc != 0)
                        return rc; /* bytes copied in, -ECANCELED or -ETIMEDOUT */
                /* 0: the connection changed (EOF, closed): look again */
        }
}

ssize_t pc__fconn_write(struct pc_conn *c, const struct pc__fiber_ops *ops, const void *buf,
                        size_t len)
{
        const uint8_t *p = buf;
        struct pc__fconn *fc;
        size_t off = 0, chunk;
        int rc = fiber_conn_check(c, ops);

        if (rc)
                return rc;
        if ((buf == NULL && len) || len > SSIZE_MAX)
                return -EINVAL;
        fc = ops->fc(c);
        /* A chunk fits once on_writable says the output is down to half. */
        chunk = ops->chunk(c);
        while (off < len) {
                size_t n = len - off < chunk ? len - off : chunk;

                if (fc->closed || ops->gone(c))
                        return gone_rc(c, ops);
                rc = pc_conn_send(c, p + off, n);
                if (rc == 0) {
                        off += n;
                        continue;
                }
                if (rc != -ENOBUFS)
                        return rc == -EPIPE ? gone_rc(c, ops) : rc;
                if (pc__self->stop_seen)
                        return -ESHUTDOWN;
                fc->wr_fiber = pc_fiber_self();
                pc__conn_idle_wait(c, true);
                rc = pc__fiber_wait();
                if (rc)
                        return rc; /* -ECANCELED, -ETIMEDOUT */
        }
        return (ssize_t)len;
}

ssize_t pc__fconn_writev(struct pc_conn *c, const struct pc__fiber_ops *ops,
                         const struct iovec *iov, int n, size_t total)
{
        struct pc__fconn *fc;
        int rc = fiber_conn_check(c, ops);

        if (rc)
                return rc;
        fc = ops->fc(c);
        /* What fits in one chunk goes as one gather (one copy into the
         * output, no intermediate buffer); larger, piece by piece. */
        if (total > ops->chunk(c)) {
                for (int i = 0; i < n; i++) {
                        ssize_t w;

                        if (iov[i].iov_len == 0)
                                continue;
                        w = pc__fconn_write(c, ops, iov[i].iov_base, iov[i].iov_len);
                        if (w < 0)
                                return w;
                }
                return (ssize_t)total;
        }
        for (;;) {
                if (fc->closed || ops->gone(c))
                        return gone_rc(c, ops);
                rc = pc_conn_sendv(c, iov, n);
                if (rc == 0)
                        return (ssize_t)total;
                if (rc != -ENOBUFS)
                        return rc == -EPIPE ? gone_rc(c, ops) : rc;
                if (pc__self->stop_seen)
                        return -ESHUTDOWN;
                fc->wr_fiber = pc_fiber_self();
                pc__conn_idle_wait(c, true);
                rc = pc__fiber_wait();
                if (rc)
                        return rc;
        }
}
