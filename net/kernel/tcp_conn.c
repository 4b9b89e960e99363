/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's side of the service API (pc_net.h): listening and
 * connecting, and the operations a connection and a listener carry
 * (pc__kconn_ops, pc__klistener_ops), over the connection life in tcp.c.
 *
 * Sends copy into the connection's output (the cap is opts.out_cap), but
 * pc_conn_send_ref(): the kernel copies at send time, so the caller's
 * bytes are only referred to, between the copied ones, and their done
 * runs once the send that carried them completed (tcp.c). A shutdown
 * sends the FIN once the output before it left; an abort resets. A
 * listener is closed from any thread by shutting its sockets for reading,
 * which ends the accept each worker has armed on its own; each worker
 * then closes its socket (tcp.c: lsock_close()).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knet_pvt.h"

/* ---- listeners ------------------------------------------------------------ */

static uint16_t klistener_port(const struct pc_tcp_listener *l)
{
        return l->port;
}

/* The closed flag is set (tcp_api.c). While no run is on nothing is armed
 * on the sockets: close them here. During a run each worker's ring may
 * have an accept armed on its socket, which a close here would leave
 * armed (the ring holds the file): SHUT_RD ends it, and the worker closes
 * the socket as its accept comes back. */
static int klistener_close(struct pc_tcp_listener *l)
{
        if (!atomic_load(&l->k->rt->running)) {
                for (unsigned i = 0; i < l->n; i++) {
                        if (l->s[i].fd >= 0)
                                close(l->s[i].fd);
                        l->s[i].fd = -1;
                }
                atomic_store_explicit(&l->shut, true, memory_order_release);
                return 0;
        }
        for (unsigned i = 0; i < l->n; i++)
                if (l->s[i].fd >= 0)
                        shutdown(l->s[i].fd, SHUT_RD);
        atomic_store_explicit(&l->shut, true, memory_order_release);
        return 0;
}

const struct pc__listener_ops pc__klistener_ops = {
        .port = klistener_port,
        .close = klistener_close,
};

int pc_tcp_listen_kernel(struct pc_runtime *rt, const char *addr, uint16_t port,
                         const struct pc_tcp_callbacks *cb, void *arg,
                         struct pc_tcp_listener **out)
{
        struct pc_tcp_listener *l;
        struct knet *k;
        uint16_t bound = port;
        int rc;

        if (rt == NULL || cb == NULL || addr == NULL)
                return -EINVAL;
        rc = pc__knet_setup(rt, &k);
        if (rc)
                return rc;
        if (k->nl == KNET_MAX_LISTEN)
                return -ENOSPC;
        l = calloc(1, sizeof(*l) + rt->nworkers * sizeof(l->s[0]));
        if (l == NULL)
                return -ENOMEM;
        l->base.ops = &pc__klistener_ops;
        l->k = k;
        l->cb = cb;
        l->arg = arg;
        l->n = rt->nworkers;
        for (unsigned i = 0; i < rt->nworkers; i++)
                l->s[i].fd = -1;
        for (unsigned i = 0; i < rt->nworkers; i++) {
                int fd = pc__knet_socket(SOCK_STREAM, addr, bound, true, &bound);
                if (fd < 0) {
                        for (unsigned j = 0; j < i; j++)
                                close(l->s[j].fd);
                        free(l);
                        return fd;
                }
                pc__klsock_init(&l->s[i], l, k->kw[i], fd);
        }
        l->port = bound;
        k->listeners[k->nl++] = l;
        if (out)
                *out = l;
        return 0;
}

/* The drain began on @kw: every listener stops accepting (the first
 * worker there closes them all; the flag makes the rest a no-op). */
void pc__tcp_drain(struct kworker *kw)
{
        struct knet *k = kw->k;

        for (unsigned i = 0; i < k->nl; i++)
                (void)pc_tcp_listener_close(k->listeners[i]);
}

/* What @kw still serves while draining: its connections (those handed to
 * it and not yet taken included: its load counts them), and the handlers
 * that still run on connections already closed. */
unsigned pc__tcp_busy(struct kworker *kw)
{
        unsigned n = atomic_load_explicit(&kw->load, memory_order_relaxed) & ~KNET_LOAD_OFF;

        for (const struct pc_conn *c = kw->zombies; c; c = c->next)
                n++;
        return n;
}

/* ---- connecting ----------------------------------------------------------- */

int pc_tcp_connect_kernel(const char *addr, uint16_t port, const struct pc_tcp_callbacks *cb,
                          void *arg, struct pc_conn **out)
{
        struct kworker *kw = pc__knet_self();
        struct io_uring_sqe *sqe;
        union ksa sa;
        socklen_t sl;
        struct pc_conn *c;
        int fd;

        if (kw == NULL)
                return -EPERM;
        if (cb == NULL || port == 0 || pc__knet_addr(addr, port, &sa, &sl))
                return -EINVAL;
        fd = socket(sa.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        c = pc__kconn_new(kw, fd, cb, arg, NULL);
        if (c == NULL) {
                close(fd);
                return -ENOMEM;
        }
        atomic_fetch_add_explicit(&kw->load, 1, memory_order_relaxed);
        c->peer = sa;
        sqe = pc__knet_sqe(kw);
        if (sqe == NULL) {
                c->dead = true;
                c->refs++;
                pc__kconn_unref(c);
                return -EBUSY;
        }
        io_uring_prep_connect(sqe, fd, &c->peer.sa, sl);
        pc__kconn_set_ud(kw, sqe, c, T_CONNECT);
        c->connect_armed = true;
        c->refs++;
        if (out)
                *out = c;
        return 0;
}

/* ---- connection operations ------------------------------------------------ */

static int kconn_owner(const struct pc_conn *c)
{
        if (pc__self == NULL || pc__self->id != c->kw->id || pc__self->rt != c->kw->k->rt)
                return -EXDEV;
        return 0;
}

/* The checks every send makes; 0 when @len more bytes may be queued. */
static int send_room(struct pc_conn *c, size_t len)
{
        struct kworker *kw = c->kw;

        if (c->closing || c->dead || c->wr_shut)
                return -EPIPE;
        if (len > kw->k->opts.out_cap)
                return -EMSGSIZE;
        if (pc__kconn_buffered(c) + len > kw->k->opts.out_cap) {
                kinc(&kw->st.send_refused, 1);
                c->want_writable = true;
                return -ENOBUFS;
        }
        return 0;
}

static void sent_note(struct pc_conn *c)
{
        struct kworker *kw = c->kw;
        size_t total = pc__kconn_buffered(c);

        if (total > atomic_load_explicit(&kw->st.out_max, memory_order_relaxed))
                atomic_store_explicit(&kw->st.out_max, total, memory_order_relaxed);
        pc__kconn_kick(c);
}

static int kconn_send(struct pc_conn *c, const void *data, size_t len)
{
        int rc = send_room(c, len);

        if (rc || len == 0)
                return rc;
        if (pc__kbuf_put(&c->pending, data, len))
                return -ENOMEM;
        sent_note(c);
        return 0;
}

/* One cap check for the whole gather, room made once, then the copies:
 * all or nothing. */
static int kconn_sendv(struct pc_conn *c, const struct iovec *iov, int n, size_t total)
{
        struct kbuf *b = &c->pending;
        int rc = send_room(c, total);

        if (rc || total == 0)
                return rc;
        rc = pc__kbuf_reserve(b, total);
        if (rc)
                return rc;
        for (int i = 0; i < n; i++) {
                if (iov[i].iov_len == 0) /* its base may be NULL */
                        continue;
                memcpy(b->p + b->len, iov[i].iov_base, iov[i].iov_len);
                b->len += iov[i].iov_len;
        }
        sent_note(c);
        return 0;
}

static int kconn_send_ref(struct pc_conn *c, const void *data, size_t len,
                          pc_conn_ref_fn done, void *arg)
{
        struct kbuf *b = &c->pending;
        struct kref *r;
        int rc = send_room(c, len);

        if (rc)
                return rc;
        r = malloc(sizeof(*r));
        if (r == NULL)
                return -ENOMEM;
        /* The pending buffer's bytes are not consumed while it waits (its
         * off stays 0), so @at stays right until it is sent. */
        r->next = NULL;
        r->p = data;
        r->len = len;
        r->at = b->len;
        r->done = done;
        r->arg = arg;
        if (b->refs_last)
                b->refs_last->next = r;
        else
                b->refs = r;
        b->refs_last = r;
        b->ref_bytes += len;
        sent_note(c);
        return 0;
}

static int kconn_close(struct pc_conn *c)
{
        if (c->closing || c->dead)
                return 0;
        c->closing = true;
        pc__kconn_cancel_recv(c);
        pc__kconn_maybe_done(c);
        return 0;
}

static int kconn_shutdown(struct pc_conn *c)
{
        if (c->closing || c->dead)
                return -EPIPE;
        if (c->wr_shut)
                return 0;
        /* The peer is done already: nothing is left to read, so the
         * connection ends once the output is sent, as after a close. */
        if (c->eof)
                return kconn_close(c);
        c->wr_shut = true;
        pc__kconn_maybe_fin(c);
        return 0;
}

static int kconn_linger(struct pc_conn *c)
{
        if (c->closing || c->dead)
                return -EPIPE;
        c->linger = true;
        return 0;
}

/* A reset: SO_LINGER 0 makes the close send one and drop the kernel's
 * queue; our output is dropped with the armed operations cancelled. */
static int kconn_abort(struct pc_conn *c, int err)
{
        static const struct linger lg = {.l_onoff = 1, .l_linger = 0};

        if (c->dead)
                return 0;
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        if (!c->reset) {
                c->reset = true;
                kinc(&c->kw->st.resets, 1);
        }
        c->aborting = true;
        c->pending.off = c->pending.len = 0;
        c->pending.ref_bytes = 0;
        c->inflight.off = c->inflight.len;
        c->inflight.ref_bytes = 0;
        pc__kconn_finish(c, err);
        return 0;
}

static size_t kconn_buffered(const struct pc_conn *c)
{
        return pc__kconn_buffered(c);
}

static unsigned kconn_worker(const struct pc_conn *c)
{
        return c->kw->id;
}

static int kconn_addr(const struct pc_conn *c, bool peer, struct sockaddr_storage *out)
{
        const union ksa *a = peer ? &c->peer : &c->local;

        if (!c->addr_ok)
                return -ENOTCONN;
        memset(out, 0, sizeof(*out));
        memcpy(out, a, a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in));
        return 0;
}

static int sockopt(struct pc_conn *c, int level, int name, int v)
{
        if (c->closing || c->dead)
                return -EPIPE;
        return setsockopt(c->fd, level, name, &v, sizeof(v)) ? -errno : 0;
}

static int kconn_set_nodelay(struct pc_conn *c, bool on)
{
        return sockopt(c, IPPROTO_TCP, TCP_NODELAY, on);
}

/* The kernel's limits (TCP_KEEPIDLE and TCP_KEEPINTVL up to 32767 s,
 * TCP_KEEPCNT up to 127) answer -EINVAL. */
static int kconn_set_keepalive(struct pc_conn *c, unsigned idle_s, unsigned intvl_s,
                               unsigned count)
{
        int rc;

        if (idle_s == 0)
                return sockopt(c, SOL_SOCKET, SO_KEEPALIVE, 0);
        if (idle_s > INT_MAX || intvl_s > INT_MAX || count > INT_MAX)
                return -EINVAL;
        rc = sockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, (int)idle_s);
        if (rc == 0)
                rc = sockopt(c, IPPROTO_TCP, TCP_KEEPINTVL, (int)intvl_s);
        if (rc == 0)
                rc = sockopt(c, IPPROTO_TCP, TCP_KEEPCNT, (int)count);
        if (rc == 0)
                rc = sockopt(c, SOL_SOCKET, SO_KEEPALIVE, 1);
        return rc;
}

/* Resuming delivers from the loop: a task, with a reference on @c. */
static void kconn_resume_task(void *arg)
{
        struct pc_conn *c = arg;

        if (!c->in_paused && !c->dead)
                pc__kconn_resume(c);
        pc__kconn_unref(c);
}

/* A callback connection leaves @in_paused (the fiber service's) to this. */
static int kconn_pause_read(struct pc_conn *c, bool pause)
{
        if (c->closing || c->dead)
                return -EPIPE;
        if (pause) {
                pc__conn_input_pause(c, true);
                return 0;
        }
        if (!c->in_paused)
                return 0;
        /* Off now, so that the task's delivery is not a pause's; the held
         * input waits for the task, since nothing rearms the recv first. */
        c->in_paused = false;
        c->refs++;
        if (pc_spawn(kconn_resume_task, c) < 0) {
                c->in_paused = true;
                pc__kconn_unref(c);
                return -ENOMEM;
        }
        return 0;
}

const struct pc__conn_ops pc__kconn_ops = {
        .name = "kernel",
        .owner = kconn_owner,
        .send = kconn_send,
        .sendv = kconn_sendv,
        .send_ref = kconn_send_ref,
        .close = kconn_close,
        .shutdown = kconn_shutdown,
        .linger = kconn_linger,
        .abort = kconn_abort,
        .buffered = kconn_buffered,
        .worker = kconn_worker,
        .addr = kconn_addr,
        .set_nodelay = kconn_set_nodelay,
        .pause_read = kconn_pause_read,
        .set_keepalive = kconn_set_keepalive,
        .fiber = &pc__kfiber_ops,
};
