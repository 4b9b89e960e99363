/* SPDX-License-Identifier: MIT */
/*
 * TCP over the worker's ring: multishot accept on the worker's own
 * SO_REUSEPORT listener, one recv in flight per connection, buffered sends
 * with a per-connection cap, half-close, resets and the connection limit.
 *
 * A connection is freed only when nothing refers to it: each armed ring
 * operation and each callback in progress holds a reference (refs), so a
 * handler may close the connection from inside on_data and the completion
 * that called it still finds it alive.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knet_pvt.h"

static void arm_recv(struct pc_conn *c);
static void finish(struct pc_conn *c, int err);

static size_t buffered(const struct pc_conn *c)
{
        return (c->inflight.len - c->inflight.off) + (c->pending.len - c->pending.off);
}

static void set_ud(struct io_uring_sqe *sqe, void *p, enum ktag tag)
{
        io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)p | tag);
}

static void conn_free(struct pc_conn *c)
{
        struct kworker *kw = c->kw;

        if (c->prev)
                c->prev->next = c->next;
        else
                kw->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        close(c->fd);
        kw->nconns--;
        kinc(&kw->st.conns, (uint64_t)-1);
        kinc(&kw->st.closed, 1);
        if (c->open && c->cb->on_close)
                c->cb->on_close(c, c->err, c->arg);
        free(c->inflight.p);
        free(c->pending.p);
        free(c->rbuf);
        free(c);
}

static void unref(struct pc_conn *c)
{
        if (--c->refs == 0 && c->dead)
                conn_free(c);
}

/* End @c: no more reads or sends. Armed operations are woken by the
 * shutdown and release their references; the last one frees @c. */
static void finish(struct pc_conn *c, int err)
{
        if (c->dead)
                return;
        c->dead = true;
        c->closing = true;
        c->err = err;
        if (c->recv_armed || c->send_armed || c->connect_armed)
                shutdown(c->fd, SHUT_RDWR);
        c->refs++;
        unref(c);
}

static bool is_reset(int err)
{
        return err == -ECONNRESET || err == -EPIPE || err == -ECONNABORTED;
}

static void conn_error(struct pc_conn *c, int err)
{
        if (is_reset(err) && !c->reset) {
                c->reset = true;
                kinc(&c->kw->st.resets, 1);
        }
        c->pending.off = c->pending.len = 0;
        finish(c, err);
}

static void fail_no_sqe(struct pc_conn *c)
{
        pc_log(PC_LOG_WARN, "worker %u: io_uring submission queue full; closing a connection",
               c->kw->id);
        conn_error(c, -EBUSY);
}

static void arm_recv(struct pc_conn *c)
{
        struct io_uring_sqe *sqe;

        if (c->recv_armed || c->closing || c->dead || c->paused)
                return;
        sqe = pc__knet_sqe(c->kw);
        if (sqe == NULL) {
                fail_no_sqe(c);
                return;
        }
        io_uring_prep_recv(sqe, c->fd, c->rbuf, c->kw->k->opts.rbuf, 0);
        set_ud(sqe, c, T_RECV);
        c->recv_armed = true;
        c->refs++;
}

/* Send what is queued if no send is in flight: the in-flight buffer once
 * it is empty takes the pending one's place. */
static void kick_send(struct pc_conn *c)
{
        struct io_uring_sqe *sqe;

        if (c->send_armed || c->dead)
                return;
        if (c->inflight.off == c->inflight.len) {
                struct kbuf t = c->inflight;

                if (c->pending.off == c->pending.len)
                        return;
                c->inflight = c->pending;
                c->pending = t;
                c->pending.off = c->pending.len = 0;
        }
        sqe = pc__knet_sqe(c->kw);
        if (sqe == NULL) {
                fail_no_sqe(c);
                return;
        }
        io_uring_prep_send(sqe, c->fd, c->inflight.p + c->inflight.off,
                           c->inflight.len - c->inflight.off, MSG_NOSIGNAL);
        set_ud(sqe, c, T_SEND);
        c->send_armed = true;
        c->refs++;
}

/* Graceful end once nothing is left to send. */
static void maybe_done(struct pc_conn *c)
{
        if (c->closing && !c->dead && !c->send_armed && buffered(c) == 0)
                finish(c, 0);
}

static void on_recv(struct pc_conn *c, int res)
{
        const struct pc_knet_opts *o = &c->kw->k->opts;

        c->recv_armed = false;
        if (c->dead)
                return;
        if (res > 0) {
                kinc(&c->kw->st.bytes_in, (uint64_t)res);
                if (c->cb->on_data)
                        c->cb->on_data(c, c->rbuf, (size_t)res, c->arg);
                if (c->dead || c->closing)
                        return;
                /* Stop reading while the next full receive could not be
                 * answered within the cap. */
                if (buffered(c) + o->rbuf > o->out_cap) {
                        c->paused = true;
                        kinc(&c->kw->st.backpressure, 1);
                        return;
                }
                arm_recv(c);
        } else if (res == 0) {
                if (c->cb->on_data)
                        c->cb->on_data(c, NULL, 0, c->arg);
                c->closing = true;
                maybe_done(c);
        } else if (res == -EINTR || res == -EAGAIN) {
                arm_recv(c);
        } else {
                conn_error(c, res);
        }
}

static void on_send(struct pc_conn *c, int res)
{
        const struct pc_knet_opts *o = &c->kw->k->opts;

        c->send_armed = false;
        if (c->dead)
                return;
        if (res < 0) {
                if (res == -EINTR || res == -EAGAIN)
                        kick_send(c);
                else
                        conn_error(c, res);
                return;
        }
        kinc(&c->kw->st.bytes_out, (uint64_t)res);
        c->inflight.off += (size_t)res;
        kick_send(c);
        if (c->paused && buffered(c) <= o->out_cap / 2) {
                c->paused = false;
                arm_recv(c);
        }
        maybe_done(c);
}

static struct pc_conn *conn_new(struct kworker *kw, int fd, const struct pc_tcp_callbacks *cb,
                                void *arg)
{
        struct pc_conn *c = calloc(1, sizeof(*c));

        if (c == NULL)
                return NULL;
        c->rbuf = malloc(kw->k->opts.rbuf);
        if (c->rbuf == NULL) {
                free(c);
                return NULL;
        }
        c->kw = kw;
        c->fd = fd;
        c->cb = cb;
        c->arg = arg;
        c->next = kw->conns;
        if (kw->conns)
                kw->conns->prev = c;
        kw->conns = c;
        kw->nconns++;
        kinc(&kw->st.conns, 1);
        return c;
}

static void conn_opened(struct pc_conn *c)
{
        int one = 1;

        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->open = true;
        c->refs++;
        if (c->cb->on_accept)
                c->cb->on_accept(c, c->arg);
        arm_recv(c);
        unref(c);
}

/* ---- accept --------------------------------------------------------------- */

static void arm_accept(struct klsock *ls)
{
        struct io_uring_sqe *sqe;

        if (ls->armed || ls->fd < 0)
                return;
        sqe = pc__knet_sqe(ls->kw);
        if (sqe == NULL) {
                pc_timer_start(&ls->retry, KNET_ACCEPT_RETRY_NS, 0);
                return;
        }
        io_uring_prep_multishot_accept(sqe, ls->fd, NULL, NULL, SOCK_CLOEXEC);
        set_ud(sqe, ls, T_ACCEPT);
        ls->armed = true;
}

static void accept_retry(struct pc_timer *t, void *arg)
{
        (void)t;
        arm_accept(arg);
}

static void on_accept(struct klsock *ls, int res, unsigned flags)
{
        struct kworker *kw = ls->kw;
        struct pc_conn *c;

        if (!(flags & IORING_CQE_F_MORE))
                ls->armed = false;
        if (res >= 0) {
                if (kw->nconns >= kw->k->opts.max_conns) {
                        /* Refuse cleanly: the peer sees an orderly close. */
                        close(res);
                        kinc(&kw->st.refused, 1);
                } else if ((c = conn_new(kw, res, ls->l->cb, ls->l->arg)) == NULL) {
                        close(res);
                        kinc(&kw->st.accept_errors, 1);
                } else {
                        kinc(&kw->st.accepted, 1);
                        conn_opened(c);
                }
        } else if (res != -ECANCELED) {
                kinc(&kw->st.accept_errors, 1);
        }
        if (!ls->armed) {
                /* Out of descriptors or memory: retrying at once would spin
                 * on the same failure, so wait a little. */
                if (res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS)
                        pc_timer_start(&ls->retry, KNET_ACCEPT_RETRY_NS, 0);
                else
                        arm_accept(ls);
        }
}

void pc__tcp_complete(struct kworker *kw, unsigned tag, void *ptr, int res, unsigned flags)
{
        struct pc_conn *c = ptr;

        switch (tag) {
        case T_ACCEPT:
                on_accept(ptr, res, flags);
                return;
        case T_RECV:
                on_recv(c, res);
                break;
        case T_SEND:
                on_send(c, res);
                break;
        case T_CONNECT:
                c->connect_armed = false;
                if (c->dead)
                        break;
                if (res < 0) {
                        c->open = true; /* on_close reports the error */
                        finish(c, res);
                        break;
                }
                conn_opened(c);
                break;
        default:
                pc_log(PC_LOG_ERROR, "worker %u: completion with tag %u", kw->id, tag);
                return;
        }
        unref(c);
}

void pc__tcp_worker_start(struct kworker *kw)
{
        struct knet *k = kw->k;

        for (unsigned i = 0; i < k->nl; i++)
                arm_accept(&k->listeners[i]->s[kw->id]);
}

/* ---- public API ----------------------------------------------------------- */

int pc_tcp_listen(struct pc_runtime *rt, const char *addr, uint16_t port,
                  const struct pc_tcp_callbacks *cb, void *arg, struct pc_tcp_listener **out)
{
        struct pc_tcp_listener *l;
        struct knet *k;
        uint16_t bound = port;

        if (rt == NULL || cb == NULL || addr == NULL)
                return -EINVAL;
        if (atomic_load(&rt->running))
                return -EBUSY;
        k = pc__knet_get(rt, true);
        if (k == NULL)
                return -ENOMEM;
        if (k->nl == KNET_MAX_LISTEN)
                return -ENOSPC;
        l = calloc(1, sizeof(*l) + rt->nworkers * sizeof(l->s[0]));
        if (l == NULL)
                return -ENOMEM;
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
                l->s[i].fd = fd;
                l->s[i].l = l;
                l->s[i].kw = k->kw[i];
                pc_timer_init(&l->s[i].retry, accept_retry, &l->s[i]);
        }
        l->port = bound;
        k->listeners[k->nl++] = l;
        if (out)
                *out = l;
        return 0;
}

uint16_t pc_tcp_listener_port(const struct pc_tcp_listener *l)
{
        return l ? l->port : 0;
}

int pc_tcp_connect(const char *addr, uint16_t port, const struct pc_tcp_callbacks *cb,
                   void *arg, struct pc_conn **out)
{
        struct kworker *kw = pc__knet_self();
        struct io_uring_sqe *sqe;
        struct sockaddr_in sa;
        struct pc_conn *c;
        int fd;

        if (kw == NULL)
                return -EPERM;
        if (cb == NULL || port == 0 || pc__knet_addr(addr, port, &sa))
                return -EINVAL;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        c = conn_new(kw, fd, cb, arg);
        if (c == NULL) {
                close(fd);
                return -ENOMEM;
        }
        c->peer = sa;
        sqe = pc__knet_sqe(kw);
        if (sqe == NULL) {
                c->dead = true;
                c->refs++;
                unref(c);
                return -EBUSY;
        }
        io_uring_prep_connect(sqe, fd, (struct sockaddr *)&c->peer, sizeof(c->peer));
        set_ud(sqe, c, T_CONNECT);
        c->connect_armed = true;
        c->refs++;
        if (out)
                *out = c;
        return 0;
}

int pc_conn_send(struct pc_conn *c, const void *data, size_t len)
{
        struct kworker *kw;
        struct kbuf *b;
        size_t need, total;

        if (c == NULL || (data == NULL && len))
                return -EINVAL;
        kw = c->kw;
        if (pc__self == NULL || pc__self->id != kw->id || pc__self->rt != kw->k->rt)
                return -EXDEV;
        if (c->closing || c->dead)
                return -EPIPE;
        if (len == 0)
                return 0;
        total = buffered(c) + len;
        if (total > kw->k->opts.out_cap) {
                kinc(&kw->st.send_refused, 1);
                return -ENOBUFS;
        }
        b = &c->pending;
        if (b->off == b->len)
                b->off = b->len = 0;
        need = b->len + len;
        if (need > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                char *p;

                while (cap < need)
                        cap *= 2;
                if (b->off) {
                        /* Compact first: bytes before off are sent. */
                        memmove(b->p, b->p + b->off, b->len - b->off);
                        b->len -= b->off;
                        b->off = 0;
                        need = b->len + len;
                }
                if (need > b->cap) {
                        p = realloc(b->p, cap);
                        if (p == NULL)
                                return -ENOMEM;
                        b->p = p;
                        b->cap = cap;
                }
        }
        memcpy(b->p + b->len, data, len);
        b->len += len;
        if (total > atomic_load_explicit(&kw->st.out_max, memory_order_relaxed))
                atomic_store_explicit(&kw->st.out_max, total, memory_order_relaxed);
        kick_send(c);
        return 0;
}

int pc_conn_close(struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        if (pc__self == NULL || pc__self->id != c->kw->id)
                return -EXDEV;
        if (c->closing || c->dead)
                return 0;
        c->closing = true;
        maybe_done(c);
        return 0;
}

size_t pc_conn_buffered(const struct pc_conn *c)
{
        return c ? buffered(c) : 0;
}

unsigned pc_conn_worker(const struct pc_conn *c)
{
        return c->kw->id;
}

void pc_conn_set_data(struct pc_conn *c, void *data)
{
        c->data = data;
}

void *pc_conn_data(const struct pc_conn *c)
{
        return c->data;
}

/* At runtime destroy, after the rings are gone: close without callbacks. */
void pc__tcp_destroy(struct knet *k)
{
        for (unsigned i = 0; i < k->rt->nworkers; i++) {
                struct kworker *kw = k->kw[i];
                struct pc_conn *c, *next;

                if (kw == NULL)
                        continue;
                for (c = kw->conns; c; c = next) {
                        next = c->next;
                        close(c->fd);
                        free(c->inflight.p);
                        free(c->pending.p);
                        free(c->rbuf);
                        free(c);
                }
                kw->conns = NULL;
        }
        for (unsigned i = 0; i < k->nl; i++) {
                struct pc_tcp_listener *l = k->listeners[i];
                for (unsigned j = 0; j < l->n; j++)
                        if (l->s[j].fd >= 0)
                                close(l->s[j].fd);
                free(l);
        }
        k->nl = 0;
}
