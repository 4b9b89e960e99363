/* SPDX-License-Identifier: MIT */
/*
 * The service API's TCP calls (pc_net.h), written once: each validates,
 * checks the caller is on the connection's worker where the API says so,
 * and hands on to the connection's backend through its ops table
 * (pc_net_pvt.h). What every backend shares (user data, listener limits
 * and counters) is kept here.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "pc_fiber.h"
#include "pc_net_pvt.h"
#include "pc_tcp_fiber_pvt.h"

void pc__conn_base_init(struct pc__conn_base *b, const struct pc__conn_ops *ops,
                        struct pc__listener_base *l)
{
        b->ops = ops;
        b->listener = l;
}

bool pc__listener_admit(struct pc__listener_base *l)
{
        unsigned lim, open;

        if (atomic_load_explicit(&l->closed, memory_order_relaxed))
                goto refuse;
        lim = atomic_load_explicit(&l->limit, memory_order_relaxed);
        open = atomic_fetch_add_explicit(&l->open, 1, memory_order_relaxed);
        if (lim && open >= lim) {
                atomic_fetch_sub_explicit(&l->open, 1, memory_order_relaxed);
                goto refuse;
        }
        atomic_fetch_add_explicit(&l->accepted, 1, memory_order_relaxed);
        return true;
refuse:
        atomic_fetch_add_explicit(&l->refused, 1, memory_order_relaxed);
        return false;
}

void pc__listener_unadmit(struct pc__listener_base *l)
{
        atomic_fetch_sub_explicit(&l->open, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&l->accepted, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&l->refused, 1, memory_order_relaxed);
}

static void listener_release(struct pc__conn_base *b)
{
        if (b->listener) {
                atomic_fetch_sub_explicit(&b->listener->open, 1, memory_order_relaxed);
                b->listener = NULL;
        }
}

/* Every connection call checks the same things first: a connection, and
 * (for the calls that act) the caller on its worker. */
static int conn_check(const struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        return pc__conn_ops(c)->owner(c);
}

/* An operation the backend lacks. */
#define HOOK(c, h) (pc__conn_ops(c)->h ? pc__conn_ops(c)->h : NULL)

uint16_t pc_tcp_listener_port(const struct pc_tcp_listener *l)
{
        const struct pc__listener_base *b = (const void *)l;

        return l ? b->ops->port(l) : 0;
}

int pc_tcp_listener_close(struct pc_tcp_listener *l)
{
        struct pc__listener_base *b = (void *)l;

        if (l == NULL)
                return -EINVAL;
        if (atomic_exchange(&b->closed, true))
                return 0;
        return b->ops->close ? b->ops->close(l) : -ENOTSUP;
}

int pc_tcp_listener_set_limit(struct pc_tcp_listener *l, unsigned max)
{
        struct pc__listener_base *b = (void *)l;

        if (l == NULL)
                return -EINVAL;
        atomic_store_explicit(&b->limit, max, memory_order_relaxed);
        return 0;
}

int pc_tcp_listener_stats(const struct pc_tcp_listener *l, struct pc_tcp_listener_stats *out)
{
        struct pc__listener_base *b = (void *)(uintptr_t)l;

        if (l == NULL || out == NULL)
                return -EINVAL;
        out->accepted = atomic_load_explicit(&b->accepted, memory_order_relaxed);
        out->refused = atomic_load_explicit(&b->refused, memory_order_relaxed);
        out->open = atomic_load_explicit(&b->open, memory_order_relaxed);
        return 0;
}

int pc_conn_send(struct pc_conn *c, const void *data, size_t len)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        if (data == NULL && len)
                return -EINVAL;
        return pc__conn_ops(c)->send(c, data, len);
}

/* The total of @n buffers, or -EINVAL for a bad vector. */
static ssize_t iov_total(const struct iovec *iov, int n)
{
        size_t total = 0;

        if (n < 0 || n > IOV_MAX || (iov == NULL && n))
                return -EINVAL;
        for (int i = 0; i < n; i++) {
                if (iov[i].iov_base == NULL && iov[i].iov_len)
                        return -EINVAL;
                if (iov[i].iov_len > SSIZE_MAX - total)
                        return -EINVAL;
                total += iov[i].iov_len;
        }
        return (ssize_t)total;
}

int pc_conn_sendv(struct pc_conn *c, const struct iovec *iov, int n)
{
        ssize_t total;
        int rc = conn_check(c);

        if (rc)
                return rc;
        total = iov_total(iov, n);
        if (total < 0)
                return (int)total;
        if (total == 0)
                return pc__conn_ops(c)->send(c, NULL, 0);
        if (n == 1)
                return pc__conn_ops(c)->send(c, iov[0].iov_base, iov[0].iov_len);
        if (HOOK(c, sendv) == NULL)
                return -ENOTSUP;
        return pc__conn_ops(c)->sendv(c, iov, n, (size_t)total);
}

int pc_conn_send_ref(struct pc_conn *c, const void *data, size_t len, pc_conn_ref_fn done,
                     void *arg)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        if ((data == NULL && len) || done == NULL)
                return -EINVAL;
        if (HOOK(c, send_ref) == NULL)
                return -ENOTSUP;
        return pc__conn_ops(c)->send_ref(c, data, len, done, arg);
}

int pc_conn_close(struct pc_conn *c)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        rc = pc__conn_ops(c)->close(c);
        if (rc == 0)
                pc__conn_base(c)->closed = true;
        return rc;
}

int pc_conn_shutdown(struct pc_conn *c)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        return HOOK(c, shutdown) ? pc__conn_ops(c)->shutdown(c) : -ENOTSUP;
}

int pc_conn_abort(struct pc_conn *c)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        if (HOOK(c, abort) == NULL)
                return -ENOTSUP;
        /* Marked first: the abort may end @c and free it before it returns. */
        pc__conn_base(c)->closed = true;
        return pc__conn_ops(c)->abort(c, -ECONNABORTED);
}

int pc_conn_linger(struct pc_conn *c)
{
        int rc = conn_check(c);

        return rc ? rc : pc__conn_ops(c)->linger(c);
}

int pc_conn_peer(const struct pc_conn *c, struct sockaddr_storage *out)
{
        if (c == NULL || out == NULL)
                return -EINVAL;
        return HOOK(c, addr) ? pc__conn_ops(c)->addr(c, true, out) : -ENOTSUP;
}

int pc_conn_local(const struct pc_conn *c, struct sockaddr_storage *out)
{
        if (c == NULL || out == NULL)
                return -EINVAL;
        return HOOK(c, addr) ? pc__conn_ops(c)->addr(c, false, out) : -ENOTSUP;
}

int pc_conn_set_nodelay(struct pc_conn *c, bool on)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        return HOOK(c, set_nodelay) ? pc__conn_ops(c)->set_nodelay(c, on) : -ENOTSUP;
}

int pc_conn_pause_read(struct pc_conn *c, bool pause)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        /* A fiber's connection pauses by itself as its input fills. */
        if (pc__conn_ops(c)->fiber->check(c) == 0)
                return -EINVAL;
        if (pc__conn_base(c)->closed)
                return -EPIPE;
        return HOOK(c, pause_read) ? pc__conn_ops(c)->pause_read(c, pause) : -ENOTSUP;
}

int pc_conn_set_keepalive(struct pc_conn *c, unsigned idle_s, unsigned intvl_s, unsigned count)
{
        int rc = conn_check(c);

        if (rc)
                return rc;
        if (idle_s && (intvl_s == 0 || count == 0))
                return -EINVAL;
        return HOOK(c, set_keepalive) ? pc__conn_ops(c)->set_keepalive(c, idle_s, intvl_s, count)
                                      : -ENOTSUP;
}

size_t pc_conn_buffered(const struct pc_conn *c)
{
        return c ? pc__conn_ops(c)->buffered(c) : 0;
}

unsigned pc_conn_worker(const struct pc_conn *c)
{
        return c ? pc__conn_ops(c)->worker(c) : 0;
}

void pc_conn_set_data(struct pc_conn *c, void *data)
{
        if (c)
                pc__conn_base(c)->data = data;
}

void *pc_conn_data(const struct pc_conn *c)
{
        return c ? ((const struct pc__conn_base *)(const void *)c)->data : NULL;
}

/* Off a fiber, -EPERM comes before anything about @c. */
ssize_t pc_conn_read(struct pc_conn *c, void *buf, size_t len)
{
        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (c == NULL)
                return -EINVAL;
        return pc__fconn_read(c, pc__conn_ops(c)->fiber, buf, len);
}

ssize_t pc_conn_write(struct pc_conn *c, const void *buf, size_t len)
{
        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (c == NULL)
                return -EINVAL;
        return pc__fconn_write(c, pc__conn_ops(c)->fiber, buf, len);
}

ssize_t pc_conn_writev(struct pc_conn *c, const struct iovec *iov, int n)
{
        ssize_t total;

        if (pc_fiber_self() == NULL)
                return -EPERM;
        if (c == NULL)
                return -EINVAL;
        total = iov_total(iov, n);
        if (total < 0)
                return total;
        return pc__fconn_writev(c, pc__conn_ops(c)->fiber, iov, n, (size_t)total);
}

void pc__conn_base_fini(struct pc__conn_base *b)
{
        listener_release(b);
        if (b->idle) {
                pc_timer_cancel(&b->idle->timer);
                free(b->idle);
                b->idle = NULL;
        }
}
