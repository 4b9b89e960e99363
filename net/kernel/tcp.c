/* SPDX-License-Identifier: MIT */
/*
 * TCP over the worker's ring: multishot accept on the worker's own
 * SO_REUSEPORT listener, a multishot recv per connection drawing on the
 * worker's provided buffers (or one single-shot recv in flight where the
 * kernel lacks them), buffered sends with a per-connection cap, half-close,
 * resets and the connection limit.
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

static bool reading_paused(const struct pc_conn *c)
{
        return c->paused || c->in_paused;
}

static size_t buffered(const struct pc_conn *c)
{
        return (c->inflight.len - c->inflight.off) + (c->pending.len - c->pending.off);
}

static void set_ud(struct kworker *kw, struct io_uring_sqe *sqe, void *p, enum ktag tag)
{
        pc__knet_arm(kw, sqe, (uint64_t)(uintptr_t)p | tag);
}

/* Out of line: inlined, GCC 12's -Wuse-after-free cannot follow the
 * reference count that keeps its callers' @c alive, and warns. */
static __attribute__((noinline)) void conn_mem_free(struct pc_conn *c)
{
        pc__conn_base_fini(&c->base);
        free(c->inflight.p);
        free(c->pending.p);
        free(c->held.p);
        free(c->fc.in);
        free(c->rbuf);
        free(c);
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
        atomic_fetch_sub_explicit(&kw->load, 1, memory_order_relaxed);
        kinc(&kw->st.conns, (uint64_t)-1);
        kinc(&kw->st.closed, 1);
        if (c->open && c->cb->on_close)
                c->cb->on_close(c, c->err, c->arg);
        if (c->fc.live) {
                /* Its fiber still holds it: the memory stays (on the
                 * zombie list, for destroy) until pc__conn_fiber_done(). */
                c->prev = NULL;
                c->next = kw->zombies;
                if (kw->zombies)
                        kw->zombies->prev = c;
                kw->zombies = c;
                c->zombie = true;
                return;
        }
        conn_mem_free(c);
}

void pc__conn_fiber_done(struct pc_conn *c)
{
        struct kworker *kw = c->kw;

        c->fc.live = false;
        if (!c->zombie)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                kw->zombies = c->next;
        if (c->next)
                c->next->prev = c->prev;
        conn_mem_free(c);
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

static bool held_pending(const struct pc_conn *c)
{
        return c->held.off < c->held.len;
}

/* Append @len bytes to @b, growing it (doubling) as needed. */
int pc__kbuf_put(struct kbuf *b, const void *data, size_t len)
{
        size_t need;

        if (b->off == b->len)
                b->off = b->len = 0;
        need = b->len + len;
        if (need > b->cap && b->off) {
                /* Compact first: bytes before off are consumed. */
                memmove(b->p, b->p + b->off, b->len - b->off);
                b->len -= b->off;
                b->off = 0;
                need = b->len + len;
        }
        if (need > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                char *p;

                while (cap < need)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL)
                        return -ENOMEM;
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, data, len);
        b->len += len;
        return 0;
}

static void arm_recv(struct pc_conn *c)
{
        struct kworker *kw = c->kw;
        unsigned rbuf = kw->k->opts.rbuf;
        struct io_uring_sqe *sqe;

        if (c->recv_armed || c->closing || c->dead || reading_paused(c) || c->held_eof || c->eof ||
            held_pending(c) || kw->quiescing)
                return;
        if (!kw->mshot && c->rbuf == NULL && (c->rbuf = malloc(rbuf)) == NULL) {
                conn_error(c, -ENOMEM);
                return;
        }
        sqe = pc__knet_sqe(kw);
        if (sqe == NULL) {
                fail_no_sqe(c);
                return;
        }
        if (kw->mshot) {
                io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
                sqe->flags |= IOSQE_BUFFER_SELECT;
                sqe->buf_group = KNET_BGID;
                kinc(&kw->st.recv_multishot, 1);
        } else {
                io_uring_prep_recv(sqe, c->fd, c->rbuf, rbuf, 0);
        }
        set_ud(kw, sqe, c, T_RECV);
        c->recv_mshot = kw->mshot;
        c->recv_armed = true;
        c->refs++;
}

/* Stop a multishot recv (reading paused or closing). Submitted at once:
 * whatever it brings until the kernel sees the cancel must be held. */
static void cancel_recv(struct pc_conn *c)
{
        struct io_uring_sqe *sqe;

        if (!c->recv_armed || !c->recv_mshot || c->recv_cancel)
                return;
        sqe = pc__knet_sqe(c->kw);
        if (sqe == NULL)
                return; /* the recv goes on; what it brings is held */
        io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)c | T_RECV, 0);
        io_uring_sqe_set_data64(sqe, 0);
        c->recv_cancel = true;
        io_uring_submit(&c->kw->ring);
}

/* Send what is queued if no send is in flight: the in-flight buffer once
 * it is empty takes the pending one's place. */
static void send_now(struct pc_conn *c)
{
        struct io_uring_sqe *sqe;

        if (c->send_armed || c->dead || c->kw->quiescing)
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
        set_ud(c->kw, sqe, c, T_SEND);
        kinc(&c->kw->st.sends, 1);
        c->send_armed = true;
        c->refs++;
}

/*
 * Output is waiting: the send is armed at the end of the pass
 * (pc__tcp_flush_sends), so that what a handler, the other connections'
 * handlers and the tasks of this pass queue on @c leaves in one send
 * rather than a first piece at once and the rest after its completion
 * (two system calls' worth of TCP segments for one reply).
 */
static void kick_send(struct pc_conn *c)
{
        struct kworker *kw = c->kw;

        if (c->send_armed || c->send_queued || c->dead || kw->quiescing || buffered(c) == 0)
                return;
        c->send_queued = true;
        c->refs++;
        c->send_next = NULL;
        if (kw->send_q == NULL)
                kw->send_q = c;
        else
                *kw->send_qtail = c;
        kw->send_qtail = &c->send_next;
}

void pc__tcp_flush_sends(struct kworker *kw)
{
        struct pc_conn *c;

        /* A callback that unref() runs (on_close) may queue more: the loop
         * takes those too. */
        while ((c = kw->send_q) != NULL) {
                kw->send_q = c->send_next;
                c->send_next = NULL;
                c->send_queued = false;
                send_now(c);
                unref(c);
        }
}

/* Graceful end once nothing is left to send. */
static void maybe_done(struct pc_conn *c)
{
        if (c->closing && !c->dead && !c->send_armed && buffered(c) == 0)
                finish(c, 0);
}

/* Stop reading while the next full receive could not be answered within
 * the cap. */
static void check_pause(struct pc_conn *c)
{
        const struct pc_knet_opts *o = &c->kw->k->opts;

        if (c->dead || c->closing || c->paused || buffered(c) + o->rbuf <= o->out_cap)
                return;
        c->paused = true;
        kinc(&c->kw->st.backpressure, 1);
        cancel_recv(c);
}

/* @len bytes arrived: hand them to on_data, or keep them while reading is
 * paused (or older kept bytes wait). Dropped once the connection closes. */
static void deliver(struct pc_conn *c, const char *p, size_t len)
{
        kinc(&c->kw->st.bytes_in, len);
        if (c->dead || c->closing)
                return;
        if (reading_paused(c) || held_pending(c) || c->kw->quiescing) {
                if (pc__kbuf_put(&c->held, p, len))
                        conn_error(c, -ENOMEM);
                else
                        cancel_recv(c); /* if none could be queued before */
                return;
        }
        if (c->cb->on_data)
                c->cb->on_data(c, p, len, c->arg);
        check_pause(c);
}

/* The peer shut its write side. */
static void peer_eof(struct pc_conn *c)
{
        if (c->dead || c->closing)
                return;
        if (reading_paused(c) || held_pending(c) || c->kw->quiescing) {
                c->held_eof = true;
                return;
        }
        c->eof = true;
        if (c->cb->on_data)
                c->cb->on_data(c, NULL, 0, c->arg);
        if (c->linger && !c->closing && !c->dead)
                return; /* the service closes once its last reply is queued */
        c->closing = true;
        maybe_done(c);
}

/* Reading may go on (the output drained, or the fiber reading the
 * connection took what it had): deliver what was held while paused (one
 * receive's worth at a time, so the pause rules still hold), then read
 * again. Nothing while either reason to pause remains. */
static void resume(struct pc_conn *c)
{
        unsigned rbuf = c->kw->k->opts.rbuf;

        if (reading_paused(c))
                return;
        while (held_pending(c) && !reading_paused(c) && !c->dead && !c->closing) {
                size_t n = c->held.len - c->held.off;
                const char *p = c->held.p + c->held.off;

                if (n > rbuf)
                        n = rbuf;
                /* Nothing appends to @held during the call: that takes a
                 * completion, and none is reaped inside a callback. */
                c->held.off += n;
                if (c->cb->on_data)
                        c->cb->on_data(c, p, n, c->arg);
                check_pause(c);
        }
        if (!held_pending(c)) {
                /* Held input is the exception: give its memory back. */
                free(c->held.p);
                memset(&c->held, 0, sizeof(c->held));
                if (c->held_eof && !reading_paused(c)) {
                        c->held_eof = false;
                        peer_eof(c);
                }
        }
        arm_recv(c);
}

static void on_recv(struct pc_conn *c, int res)
{
        c->recv_armed = false;
        if (c->dead)
                return;
        if (res > 0) {
                deliver(c, c->rbuf, (size_t)res);
                arm_recv(c);
        } else if (res == 0) {
                peer_eof(c);
        } else if (res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
                /* -ECANCELED: the run ended (knet_worker_stop). */
                arm_recv(c);
        } else {
                conn_error(c, res);
        }
}

static void buf_give(struct kworker *kw, unsigned bid)
{
        unsigned rbuf = kw->k->opts.rbuf;

        io_uring_buf_ring_add(kw->br, kw->bufs + (size_t)bid * rbuf, rbuf, (unsigned short)bid,
                              io_uring_buf_ring_mask(kw->nbufs), 0);
        io_uring_buf_ring_advance(kw->br, 1);
}

/* A multishot recv's completion: data in a provided buffer (given back once
 * on_data returned), or its end (no IORING_CQE_F_MORE), armed again unless
 * the connection paused, closes or failed. */
static void on_mrecv(struct pc_conn *c, int res, unsigned flags)
{
        struct kworker *kw = c->kw;

        if (!(flags & IORING_CQE_F_MORE)) {
                c->recv_armed = false;
                c->recv_cancel = false;
        }
        if (flags & IORING_CQE_F_BUFFER) {
                unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;

                if (res > 0) {
                        kw->mshot_seen = true;
                        deliver(c, kw->bufs + (size_t)bid * kw->k->opts.rbuf, (size_t)res);
                }
                buf_give(kw, bid);
        }
        if (c->recv_armed || c->dead)
                return;
        if (res == 0) {
                peer_eof(c);
        } else if (res == -ENOBUFS) {
                /* The ring ran dry. The buffers this pass gives back are
                 * there before the new recv is submitted (end of the pass). */
                kinc(&kw->st.recv_nobufs, 1);
                arm_recv(c);
        } else if (res == -EINVAL && !kw->mshot_seen) {
                /* Buffer rings (5.19) without multishot recv (6.0). */
                pc_log(PC_LOG_INFO, "worker %u: no multishot recv; single-shot from now on",
                       kw->id);
                kw->mshot = false;
                arm_recv(c);
        } else if (res >= 0 || res == -ECANCELED || res == -EINTR || res == -EAGAIN) {
                arm_recv(c);
        } else {
                conn_error(c, res);
        }
}

static void on_send(struct pc_conn *c, int res)
{
        const struct pc_knet_opts *o = &c->kw->k->opts;
        size_t low = o->out_cap / 2;

        c->send_armed = false;
        if (c->dead)
                return;
        if (res < 0) {
                if (res == -EINTR || res == -EAGAIN || res == -ECANCELED)
                        kick_send(c);
                else
                        conn_error(c, res);
                return;
        }
        kinc(&c->kw->st.bytes_out, (uint64_t)res);
        c->inflight.off += (size_t)res;
        kick_send(c);
        if (c->want_writable && !c->closing && buffered(c) <= low) {
                c->want_writable = false;
                if (c->cb->on_writable) {
                        kinc(&c->kw->st.writable, 1);
                        c->cb->on_writable(c, c->arg);
                        if (c->dead)
                                return;
                }
        }
        if (c->paused && buffered(c) <= low) {
                c->paused = false;
                resume(c);
        }
        maybe_done(c);
}

static struct pc_conn *conn_new(struct kworker *kw, int fd, const struct pc_tcp_callbacks *cb,
                                void *arg, struct pc_tcp_listener *l)
{
        struct pc_conn *c = calloc(1, sizeof(*c));

        if (c == NULL)
                return NULL;
        pc__conn_base_init(&c->base, &pc__kconn_ops, l ? &l->base : NULL);
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

        if (ls->armed || ls->fd < 0 || ls->kw->quiescing)
                return;
        sqe = pc__knet_sqe(ls->kw);
        if (sqe == NULL) {
                pc_timer_start(&ls->retry, KNET_ACCEPT_RETRY_NS, 0);
                return;
        }
        io_uring_prep_multishot_accept(sqe, ls->fd, NULL, NULL, SOCK_CLOEXEC);
        set_ud(ls->kw, sqe, ls, T_ACCEPT);
        ls->armed = true;
}

static void accept_retry(struct pc_timer *t, void *arg)
{
        (void)t;
        arm_accept(arg);
}

/* Serve @fd, accepted by @l's socket, on @kw, whose load already counts
 * it (reserve_place()). */
static void conn_take(struct kworker *kw, struct pc_tcp_listener *l, int fd)
{
        bool room = kw->nconns < kw->k->opts.max_conns && kw->ring_ok;
        struct pc_conn *c = room ? conn_new(kw, fd, l->cb, l->arg, l) : NULL;

        if (c) {
                kinc(&kw->st.accepted, 1);
                conn_opened(c);
                return;
        }
        /* At the limit the peer sees an orderly close; else out of memory. */
        kinc(room ? &kw->st.accept_errors : &kw->st.refused, 1);
        close(fd);
        atomic_fetch_sub_explicit(&kw->load, 1, memory_order_relaxed);
}

/* A connection on its way from the worker whose listener accepted it to
 * the least loaded one. */
struct handoff {
        struct kworker *to;
        struct pc_tcp_listener *l;
        int fd;
};

static void handoff_run(void *arg)
{
        struct handoff *h = arg;

        conn_take(h->to, h->l, h->fd);
        free(h);
}

/*
 * The kernel's SO_REUSEPORT hash spreads connections as their ports fall:
 * 64 of them land 40/24 on two workers as often as not, and the busier
 * worker's clients wait. So each accepted connection goes to the least
 * loaded worker, this one on a tie: its place there is taken by a
 * compare-and-swap on the load just read, so accepts on several workers
 * at once cannot all pick the same one, and loads never drift more than
 * one apart while connections only open. Returns the worker, its load
 * already counting the connection.
 */
static unsigned reserve_place(struct kworker *kw)
{
        struct knet *k = kw->k;
        unsigned n = k->rt->nworkers;

        if (n < 2 || (k->opts.flags & PC_KNET_NO_BALANCE)) {
                atomic_fetch_add_explicit(&kw->load, 1, memory_order_relaxed);
                return kw->id;
        }
        for (;;) {
                unsigned best = kw->id;
                unsigned least = atomic_load_explicit(&kw->load, memory_order_relaxed);

                for (unsigned i = 0; i < n; i++) {
                        unsigned ld = atomic_load_explicit(&k->kw[i]->load, memory_order_relaxed);

                        if (ld < least) {
                                least = ld;
                                best = i;
                        }
                }
                if (atomic_compare_exchange_weak_explicit(&k->kw[best]->load, &least, least + 1,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed))
                        return best;
        }
}

/* Serve @fd here or hand it to the worker reserve_place() picks. */
static void place_conn(struct kworker *kw, struct pc_tcp_listener *l, int fd)
{
        unsigned to = reserve_place(kw);

        if (to != kw->id) {
                /* Sticky: in elastic mode a thief would otherwise serve it
                 * on a worker other than the one whose load counts it. */
                const struct pc_spawn_opts o = {
                        .affinity = PC_STICKY, .place = PC_SPAWN_WORKER, .worker = to};
                struct handoff *h = malloc(sizeof(*h));

                if (h) {
                        h->to = kw->k->kw[to];
                        h->l = l;
                        h->fd = fd;
                        if (pc_spawn_ex(handoff_run, h, &o) >= 0) {
                                kinc(&kw->st.handed_off, 1);
                                return;
                        }
                        free(h);
                }
                /* Out of memory: serve it here after all. */
                atomic_fetch_sub_explicit(&kw->k->kw[to]->load, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&kw->load, 1, memory_order_relaxed);
        }
        conn_take(kw, l, fd);
}

static void on_accept(struct klsock *ls, int res, unsigned flags)
{
        struct kworker *kw = ls->kw;

        if (!(flags & IORING_CQE_F_MORE))
                ls->armed = false;
        if (res >= 0)
                place_conn(kw, ls->l, res);
        else if (res != -ECANCELED)
                kinc(&kw->st.accept_errors, 1);
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
                if (c->recv_mshot) {
                        on_mrecv(c, res, flags);
                        if (flags & IORING_CQE_F_MORE)
                                return; /* still armed: keeps its reference */
                } else {
                        on_recv(c, res);
                }
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

/* A run starts on a new ring: what the last run's end held is delivered
 * (unless reading is paused), then the recv and any send are armed again. */
static void conn_restart(struct pc_conn *c)
{
        if (c->dead)
                return;
        c->refs++;
        resume(c); /* while paused, on_send (or the reading fiber) resumes */
        kick_send(c);
        maybe_done(c);
        unref(c);
}

void pc__tcp_worker_start(struct kworker *kw)
{
        struct knet *k = kw->k;
        struct pc_conn *c, *next;

        for (unsigned i = 0; i < k->nl; i++)
                arm_accept(&k->listeners[i]->s[kw->id]);
        for (c = kw->conns; c; c = next) {
                next = c->next;
                conn_restart(c);
        }
}

/* ---- public API ----------------------------------------------------------- */

static uint16_t klistener_port(const struct pc_tcp_listener *l)
{
        return l->port;
}

static const struct pc__listener_ops klistener_ops = {
        .port = klistener_port,
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
        l->base.ops = &klistener_ops;
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

int pc_tcp_connect_kernel(const char *addr, uint16_t port, const struct pc_tcp_callbacks *cb,
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
        c = conn_new(kw, fd, cb, arg, NULL);
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
                unref(c);
                return -EBUSY;
        }
        io_uring_prep_connect(sqe, fd, (struct sockaddr *)&c->peer, sizeof(c->peer));
        set_ud(kw, sqe, c, T_CONNECT);
        c->connect_armed = true;
        c->refs++;
        if (out)
                *out = c;
        return 0;
}

static int kconn_send(struct pc_conn *c, const void *data, size_t len)
{
        struct kworker *kw;
        size_t total;

        if (c == NULL || (data == NULL && len))
                return -EINVAL;
        kw = c->kw;
        if (pc__self == NULL || pc__self->id != kw->id || pc__self->rt != kw->k->rt)
                return -EXDEV;
        if (c->closing || c->dead)
                return -EPIPE;
        if (len == 0)
                return 0;
        if (len > kw->k->opts.out_cap)
                return -EMSGSIZE;
        total = buffered(c) + len;
        if (total > kw->k->opts.out_cap) {
                kinc(&kw->st.send_refused, 1);
                c->want_writable = true;
                return -ENOBUFS;
        }
        if (pc__kbuf_put(&c->pending, data, len))
                return -ENOMEM;
        if (total > atomic_load_explicit(&kw->st.out_max, memory_order_relaxed))
                atomic_store_explicit(&kw->st.out_max, total, memory_order_relaxed);
        kick_send(c);
        return 0;
}

static int kconn_close(struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        if (pc__self == NULL || pc__self->id != c->kw->id)
                return -EXDEV;
        if (c->closing || c->dead)
                return 0;
        c->closing = true;
        cancel_recv(c);
        maybe_done(c);
        return 0;
}

static int kconn_linger(struct pc_conn *c)
{
        if (c == NULL)
                return -EINVAL;
        if (pc__self == NULL || pc__self->id != c->kw->id)
                return -EXDEV;
        if (c->closing || c->dead)
                return -EPIPE;
        c->linger = true;
        return 0;
}

/* From a callback of @c's, whose reference keeps @c alive. */
void pc__conn_abort(struct pc_conn *c, int err)
{
        conn_error(c, err);
}

void pc__conn_input_pause(struct pc_conn *c, bool pause)
{
        if (pause == c->in_paused)
                return;
        c->in_paused = pause;
        c->refs++; /* what resume() delivers may end @c */
        if (pause)
                cancel_recv(c);
        else
                resume(c);
        unref(c);
}

static size_t kconn_buffered(const struct pc_conn *c)
{
        return c ? buffered(c) : 0;
}

static unsigned kconn_worker(const struct pc_conn *c)
{
        return c->kw->id;
}

static int kconn_owner(const struct pc_conn *c)
{
        if (pc__self == NULL || pc__self->id != c->kw->id || pc__self->rt != c->kw->k->rt)
                return -EXDEV;
        return 0;
}

const struct pc__conn_ops pc__kconn_ops = {
        .name = "kernel",
        .owner = kconn_owner,
        .send = kconn_send,
        .close = kconn_close,
        .linger = kconn_linger,
        .buffered = kconn_buffered,
        .worker = kconn_worker,
        .fiber = &pc__kfiber_ops,
};

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
                        conn_mem_free(c);
                }
                kw->conns = NULL;
                kw->send_q = NULL; /* those were on kw->conns */
                /* Closed, their fibers never ended (a run stopped under them). */
                for (c = kw->zombies; c; c = next) {
                        next = c->next;
                        conn_mem_free(c);
                }
                kw->zombies = NULL;
        }
        for (unsigned i = 0; i < k->nl; i++) {
                struct pc_tcp_listener *l = k->listeners[i];
                for (unsigned j = 0; j < l->n; j++)
                        if (l->s[j].fd >= 0)
                                close(l->s[j].fd);
                free(l->serve);
                free(l);
        }
        k->nl = 0;
}

/* ---- provided buffers -------------------------------------------------------- */

/* On the worker, once its ring exists: register the buffer ring, or leave
 * the worker on single-shot recvs where the kernel has none (before 5.19 it
 * refuses the registration with -EINVAL). */
void pc__tcp_bufs_setup(struct kworker *kw)
{
        const struct pc_knet_opts *o = &kw->k->opts;
        size_t ringsz = (size_t)o->recv_bufs * sizeof(struct io_uring_buf);
        long page = sysconf(_SC_PAGESIZE);
        struct io_uring_buf_reg reg;
        void *br;
        int rc;

        if (o->flags & PC_KNET_SINGLE_RECV)
                return;
        if (posix_memalign(&br, page > 0 ? (size_t)page : 4096, ringsz))
                goto nomem;
        kw->br = br;
        kw->bufs = malloc((size_t)o->recv_bufs * o->rbuf);
        if (kw->bufs == NULL)
                goto nomem;
        memset(br, 0, ringsz);
        io_uring_buf_ring_init(kw->br);
        memset(&reg, 0, sizeof(reg));
        reg.ring_addr = (uint64_t)(uintptr_t)br;
        reg.ring_entries = o->recv_bufs;
        reg.bgid = KNET_BGID;
        rc = io_uring_register_buf_ring(&kw->ring, &reg, 0);
        if (rc) {
                pc_log(PC_LOG_INFO, "worker %u: no provided-buffer ring (%s); single-shot recv",
                       kw->id, pc_strerror(rc));
                pc__tcp_bufs_free(kw);
                return;
        }
        kw->nbufs = o->recv_bufs;
        for (unsigned i = 0; i < kw->nbufs; i++)
                io_uring_buf_ring_add(kw->br, kw->bufs + (size_t)i * o->rbuf, o->rbuf,
                                      (unsigned short)i, io_uring_buf_ring_mask(kw->nbufs),
                                      (int)i);
        io_uring_buf_ring_advance(kw->br, (int)kw->nbufs);
        kw->mshot = true;
        return;
nomem:
        pc_log(PC_LOG_WARN, "worker %u: no memory for %u receive buffers; single-shot recv",
               kw->id, o->recv_bufs);
        pc__tcp_bufs_free(kw);
}

/* After the ring is gone (or never took them). */
void pc__tcp_bufs_free(struct kworker *kw)
{
        free(kw->br);
        free(kw->bufs);
        kw->br = NULL;
        kw->bufs = NULL;
        kw->nbufs = 0;
        kw->mshot = false;
}
