/* SPDX-License-Identifier: MIT */
/*
 * Blocking-style TCP (pc_tcp_serve, pc_conn_read, pc_conn_write) on the
 * callback backend of tcp.c. Each accepted connection gets a sticky fiber
 * on the accepting worker; the connection's callbacks are ours:
 *
 * - on_data copies straight into the buffer of a reader that waits, and
 *   wakes it; what no reader waits for is kept in the connection's @fin,
 *   and reading is paused (pc__conn_input_pause) while @fin holds
 *   FIN_CAP_RBUFS receive buffers' worth, so a handler that reads slowly
 *   costs bounded memory and the peer's window closes;
 * - on_writable wakes a writer that waits for room in the output;
 * - on_close wakes either with the connection's error.
 *
 * The connection stays open after the peer's EOF (pc_conn_linger) until
 * the handler returns, and its memory outlives on_close while the fiber
 * runs (tcp.c's zombie list), so the handler's pointer never dangles.
 *
 * Everything here runs on the connection's worker, so nothing is atomic.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "knet_pvt.h"

/* Input kept for the handler before reading pauses, in receive buffers. */
#define FIN_CAP_RBUFS 4

struct serve {
        pc_conn_fiber_fn fn;
        void *arg;
};

static size_t unread(const struct pc_conn *c)
{
        return c->fin.len - c->fin.off;
}

static size_t fin_cap(const struct pc_conn *c)
{
        return (size_t)FIN_CAP_RBUFS * c->kw->k->opts.rbuf;
}

static void wake_reader(struct pc_conn *c, int rc)
{
        struct pc_fiber *f = c->rd_fiber;

        if (f) {
                c->rd_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

static void wake_writer(struct pc_conn *c, int rc)
{
        struct pc_fiber *f = c->wr_fiber;

        if (f) {
                c->wr_fiber = NULL;
                pc__fiber_wake(f, rc);
        }
}

static void *conn_fiber(void *arg)
{
        struct pc_conn *c = arg;
        const struct serve *s = c->arg;

        s->fn(c, s->arg);
        (void)pc_conn_close(c); /* sends what is queued, then closes */
        pc__conn_fiber_done(c);
        return NULL;
}

static void f_accept(struct pc_conn *c, void *arg)
{
        int rc;

        (void)arg;
        (void)pc_conn_linger(c); /* the handler decides when it ends */
        c->fiber_live = true;
        rc = pc_fiber_spawn_flags(conn_fiber, c, PC_FIBER_STICKY, NULL);
        if (rc) {
                c->fiber_live = false;
                kinc(&c->kw->st.accept_errors, 1);
                pc_log(PC_LOG_WARN, "worker %u: no fiber for a connection (%s); closing it",
                       c->kw->id, pc_strerror(rc));
                pc_conn_close(c);
        }
}

static void f_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        const char *p = data;

        (void)arg;
        if (len == 0) {
                c->f_eof = true;
                wake_reader(c, 0);
                return;
        }
        if (c->rd_fiber && unread(c) == 0) {
                size_t n = len < c->rd_len ? len : c->rd_len;

                memcpy(c->rd_buf, p, n);
                wake_reader(c, (int)n);
                p += n;
                len -= n;
                if (len == 0)
                        return;
        }
        if (pc__kbuf_put(&c->fin, p, len)) {
                c->f_err = -ENOMEM;
                pc__conn_abort(c, -ENOMEM);
                return;
        }
        if (unread(c) >= fin_cap(c) && !c->in_paused) {
                kinc(&c->kw->st.read_paused, 1);
                pc__conn_input_pause(c, true);
        }
}

static void f_writable(struct pc_conn *c, void *arg)
{
        (void)arg;
        wake_writer(c, 0);
}

static void f_close(struct pc_conn *c, int err, void *arg)
{
        (void)arg;
        c->f_closed = true;
        if (err && c->f_err == 0)
                c->f_err = err;
        /* Both look again and find the connection gone. */
        wake_reader(c, 0);
        wake_writer(c, 0);
}

static const struct pc_tcp_callbacks fiber_cbs = {
        .on_accept = f_accept,
        .on_data = f_data,
        .on_close = f_close,
        .on_writable = f_writable,
};

/* What a call on a connection that can no longer read or send reports:
 * its error, or -EPIPE after a close of ours. */
static int gone_rc(const struct pc_conn *c)
{
        if (c->f_err)
                return c->f_err;
        return c->err ? c->err : -EPIPE;
}

static bool stopping(void)
{
        return pc__self->stop_seen;
}

/* The checks both calls make: a fiber, on @c's worker, serving @c. */
static int fiber_conn_check(const struct pc_conn *c)
{
        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (c == NULL || c->cb != &fiber_cbs)
                return -EINVAL;
        if (pc__self->id != c->kw->id || pc__self->rt != c->kw->k->rt)
                return -EXDEV;
        return 0;
}

ssize_t pc__kconn_read(struct pc_conn *c, void *buf, size_t len)
{
        int rc = fiber_conn_check(c);

        if (rc)
                return rc;
        if (buf == NULL || len == 0)
                return -EINVAL;
        if (len > INT_MAX)
                len = INT_MAX; /* a wake-up carries the count as an int */
        for (;;) {
                size_t n = unread(c);

                if (n) {
                        if (n > len)
                                n = len;
                        memcpy(buf, c->fin.p + c->fin.off, n);
                        c->fin.off += n;
                        if (unread(c) == 0) {
                                c->fin.off = c->fin.len = 0;
                                if (c->in_paused && !c->zombie)
                                        pc__conn_input_pause(c, false);
                        }
                        return (ssize_t)n;
                }
                if (c->f_eof)
                        return 0;
                if (c->f_closed || c->dead || c->closing)
                        return gone_rc(c);
                if (stopping())
                        return -ESHUTDOWN;
                c->rd_fiber = pc_fiber_self();
                c->rd_buf = buf;
                c->rd_len = len;
                rc = pc__fiber_wait();
                if (rc != 0)
                        return rc; /* bytes copied in, or -ECANCELED */
                /* 0: the connection changed (EOF, closed): look again */
        }
}

ssize_t pc__kconn_write(struct pc_conn *c, const void *buf, size_t len)
{
        const char *p = buf;
        size_t off = 0, chunk;
        int rc = fiber_conn_check(c);

        if (rc)
                return rc;
        if (buf == NULL && len)
                return -EINVAL;
        if (len > SSIZE_MAX)
                return -EINVAL;
        /* A chunk fits once on_writable says the output is down to half. */
        chunk = c->kw->k->opts.out_cap / 2;
        while (off < len) {
                size_t n = len - off < chunk ? len - off : chunk;

                if (c->f_closed || c->dead)
                        return gone_rc(c);
                rc = pc_conn_send(c, p + off, n);
                if (rc == 0) {
                        off += n;
                        continue;
                }
                if (rc != -ENOBUFS)
                        return rc == -EPIPE ? gone_rc(c) : rc;
                if (stopping())
                        return -ESHUTDOWN;
                c->wr_fiber = pc_fiber_self();
                rc = pc__fiber_wait();
                if (rc)
                        return rc; /* -ECANCELED */
        }
        return (ssize_t)len;
}

void pc__tcp_fibers_cancel(struct kworker *kw)
{
        for (struct pc_conn *c = kw->conns; c; c = c->next) {
                wake_reader(c, -ECANCELED);
                wake_writer(c, -ECANCELED);
        }
}

int pc_tcp_serve(struct pc_runtime *rt, const char *addr, uint16_t port, pc_conn_fiber_fn fn,
                 void *arg, struct pc_tcp_listener **out)
{
        struct pc_tcp_listener *l;
        struct serve *s;
        int rc;

        if (fn == NULL)
                return -EINVAL;
        s = malloc(sizeof(*s));
        if (s == NULL)
                return -ENOMEM;
        s->fn = fn;
        s->arg = arg;
        rc = pc_tcp_listen(rt, addr, port, &fiber_cbs, s, &l);
        if (rc) {
                free(s);
                return rc;
        }
        l->serve = s;
        if (out)
                *out = l;
        return 0;
}
