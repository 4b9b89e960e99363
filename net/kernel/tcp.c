/* SPDX-License-Identifier: MIT */
/*
 * A connection's life over the worker's ring: a multishot recv per
 * connection drawing on the worker's provided buffers (tcp_bufs.c; or one
 * single-shot recv in flight where the kernel lacks them), buffered sends
 * with a per-connection cap (tcp_out.c), half-close and resets. Accepting
 * is in tcp_accept.c, the service API's operations in tcp_conn.c.
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
        return (c->inflight.len - c->inflight.off) + c->inflight.ref_bytes +
               (c->pending.len - c->pending.off) + c->pending.ref_bytes;
}

size_t pc__kconn_buffered(const struct pc_conn *c)
{
        return buffered(c);
}

static void set_ud(struct kworker *kw, struct io_uring_sqe *sqe, void *p, enum ktag tag)
{
        pc__knet_arm(kw, sqe, (uint64_t)(uintptr_t)p | tag);
}

void pc__kconn_set_ud(struct kworker *kw, struct io_uring_sqe *sqe, struct pc_conn *c,
                      enum ktag tag)
{
        set_ud(kw, sqe, c, tag);
}

/* Out of line: inlined, GCC 12's -Wuse-after-free cannot follow the
 * reference count that keeps its callers' @c alive, and warns. */
static __attribute__((noinline)) void conn_mem_free(struct pc_conn *c)
{
        pc__kconn_refs_release(c);
        pc__conn_base_fini(&c->base);
        free(c->inflight.p);
        free(c->pending.p);
        free(c->held.p);
        free(c->fc.in);
        free(c->rbuf);
        free(c->sendv);
        free(c);
}

void pc__kconn_mem_free(struct pc_conn *c)
{
        conn_mem_free(c);
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
        pc__kconn_refs_release(c); /* before on_close, as pc_conn_send_ref() says */
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

void pc__kconn_unref(struct pc_conn *c)
{
        unref(c);
}

/* Cancel @c's armed operations (an abort: a shutdown would send a FIN
 * before the reset). False when the ring has no room for the cancels. */
static bool cancel_ops(struct pc_conn *c)
{
        static const enum ktag tags[] = {T_RECV, T_SEND, T_CONNECT};
        const bool armed[] = {c->recv_armed && !c->recv_cancel, c->send_armed,
                              c->connect_armed};

        for (unsigned i = 0; i < 3; i++) {
                struct io_uring_sqe *sqe;

                if (!armed[i])
                        continue;
                sqe = pc__knet_sqe(c->kw);
                if (sqe == NULL)
                        return false;
                io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)c | tags[i], 0);
                io_uring_sqe_set_data64(sqe, 0);
        }
        io_uring_submit(&c->kw->ring);
        return true;
}

/* End @c: no more reads or sends. Armed operations are woken by the
 * shutdown (or cancelled, for an abort) and release their references;
 * the last one frees @c. */
static void finish(struct pc_conn *c, int err)
{
        if (c->dead)
                return;
        c->dead = true;
        c->closing = true;
        c->err = err;
        if ((c->recv_armed || c->send_armed || c->connect_armed) &&
            !(c->aborting && cancel_ops(c)))
                shutdown(c->fd, SHUT_RDWR);
        c->refs++;
        unref(c);
}

void pc__kconn_finish(struct pc_conn *c, int err)
{
        finish(c, err);
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
        /* What was queued is dropped (its references' done come with
         * the end); what the kernel reads now finishes first. */
        c->pending.off = c->pending.len = 0;
        c->pending.ref_bytes = 0;
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

void pc__kconn_cancel_recv(struct pc_conn *c)
{
        cancel_recv(c);
}

/* Send what is queued if no send is in flight: the in-flight buffer once
 * it is empty takes the pending one's place. Output without references
 * goes as one plain send; with them, as a gather of the pieces. */
static void send_now(struct pc_conn *c)
{
        struct io_uring_sqe *sqe;

        if (c->send_armed || c->dead || c->kw->quiescing)
                return;
        if (pc__kbuf_empty(&c->inflight)) {
                struct kbuf t = c->inflight;

                if (pc__kbuf_empty(&c->pending))
                        return;
                c->inflight = c->pending;
                c->pending = t;
                c->pending.off = c->pending.len = 0;
                c->pending.ref_off = c->pending.ref_bytes = 0;
        }
        if (c->inflight.refs && c->sendv == NULL &&
            (c->sendv = calloc(1, sizeof(*c->sendv))) == NULL) {
                conn_error(c, -ENOMEM);
                return;
        }
        sqe = pc__knet_sqe(c->kw);
        if (sqe == NULL) {
                fail_no_sqe(c);
                return;
        }
        if (c->inflight.refs == NULL) {
                io_uring_prep_send(sqe, c->fd, c->inflight.p + c->inflight.off,
                                   c->inflight.len - c->inflight.off, MSG_NOSIGNAL);
        } else {
                struct ksendv *v = c->sendv;

                memset(&v->msg, 0, sizeof(v->msg));
                v->msg.msg_iov = v->iov;
                v->msg.msg_iovlen = pc__kbuf_gather(&c->inflight, v->iov);
                io_uring_prep_sendmsg(sqe, c->fd, &v->msg, MSG_NOSIGNAL);
        }
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

void pc__kconn_kick(struct pc_conn *c)
{
        kick_send(c);
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

void pc__kconn_maybe_done(struct pc_conn *c)
{
        maybe_done(c);
}

/* pc_conn_shutdown() asked for the FIN: it goes once all that was queued
 * before has left (the kernel sends its queue first). Reading goes on. */
void pc__kconn_maybe_fin(struct pc_conn *c)
{
        if (!c->wr_shut || c->fin_sent || c->dead || c->send_armed || buffered(c))
                return;
        c->fin_sent = true;
        if (shutdown(c->fd, SHUT_WR) && errno != ENOTCONN)
                conn_error(c, -errno);
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
        pc__conn_rx(&c->base, len);
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
        if (c->linger && !c->wr_shut && !c->closing && !c->dead)
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
        pc__conn_tx_done(&c->base, (size_t)res);
        if (c->inflight.refs == NULL) {
                c->inflight.off += (size_t)res;
        } else {
                struct kref *sent = NULL, **tail = &sent;

                pc__kbuf_advance(&c->inflight, (size_t)res, &tail);
                /* A done may end @c: the completion's reference keeps it. */
                pc__krefs_done(sent);
                if (c->dead)
                        return;
        }
        kick_send(c);
        pc__kconn_maybe_fin(c);
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

struct pc_conn *pc__kconn_new(struct kworker *kw, int fd, const struct pc_tcp_callbacks *cb,
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

void pc__kconn_opened(struct pc_conn *c)
{
        socklen_t pl = sizeof(c->peer), ll = sizeof(c->local);
        int one = 1;

        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        /* Kept, so pc_conn_peer()/pc_conn_local() cost no system call and
         * may be read from any thread while the connection is open. */
        c->addr_ok = getpeername(c->fd, &c->peer.sa, &pl) == 0 &&
                     getsockname(c->fd, &c->local.sa, &ll) == 0;
        c->open = true;
        c->refs++;
        if (c->cb->on_accept)
                c->cb->on_accept(c, c->arg);
        arm_recv(c);
        unref(c);
}

void pc__tcp_complete(struct kworker *kw, unsigned tag, void *ptr, int res, unsigned flags)
{
        struct pc_conn *c = ptr;

        switch (tag) {
        case T_ACCEPT:
                pc__tcp_on_accept(ptr, res, flags);
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
                pc__kconn_opened(c);
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
        pc__conn_idle_restart(&c->base);
        resume(c); /* while paused, on_send (or the reading fiber) resumes */
        kick_send(c);
        maybe_done(c);
        pc__kconn_maybe_fin(c);
        unref(c);
}

void pc__tcp_worker_start(struct kworker *kw)
{
        struct knet *k = kw->k;
        struct pc_conn *c, *next;

        for (unsigned i = 0; i < k->nl; i++)
                pc__tcp_arm_accept(&k->listeners[i]->s[kw->id]);
        for (c = kw->conns; c; c = next) {
                next = c->next;
                conn_restart(c);
        }
}

/* From a callback of @c's, whose reference keeps @c alive. */
void pc__conn_abort(struct pc_conn *c, int err)
{
        conn_error(c, err);
}

void pc__kconn_resume(struct pc_conn *c)
{
        c->refs++; /* what resume() delivers may end @c */
        resume(c);
        unref(c);
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

/* At runtime destroy, after the rings are gone: close without callbacks
 * (but the references' done: their memory is the caller's again). */
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
