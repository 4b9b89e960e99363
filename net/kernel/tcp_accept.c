/* SPDX-License-Identifier: MIT */
/*
 * Accepting: a multishot accept on each worker's own SO_REUSEPORT socket
 * of a listener; the listener's limit (pc__listener_admit()), then the
 * least loaded worker takes the connection. A closed listener's socket is
 * closed by its worker once its accept came back.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "knet_pvt.h"

/* @ls's listener was closed: close the worker's socket once the closer
 * has shut every socket of the listener (before that it may still be
 * using the descriptor), else look again soon. */
static void lsock_close(struct klsock *ls)
{
        if (ls->fd < 0)
                return;
        if (!atomic_load_explicit(&ls->l->shut, memory_order_acquire)) {
                pc_timer_start(&ls->retry, KNET_LCLOSE_RETRY_NS, 0);
                return;
        }
        close(ls->fd);
        ls->fd = -1;
}

void pc__tcp_arm_accept(struct klsock *ls)
{
        struct io_uring_sqe *sqe;

        if (ls->armed || ls->fd < 0 || ls->kw->quiescing)
                return;
        if (atomic_load_explicit(&ls->l->base.closed, memory_order_relaxed)) {
                lsock_close(ls);
                return;
        }
        sqe = pc__knet_sqe(ls->kw);
        if (sqe == NULL) {
                pc_timer_start(&ls->retry, KNET_ACCEPT_RETRY_NS, 0);
                return;
        }
        io_uring_prep_multishot_accept(sqe, ls->fd, NULL, NULL, SOCK_CLOEXEC);
        pc__knet_arm(ls->kw, sqe, (uint64_t)(uintptr_t)ls | T_ACCEPT);
        ls->armed = true;
}

static void accept_retry(struct pc_timer *t, void *arg)
{
        (void)t;
        pc__tcp_arm_accept(arg);
}

void pc__klsock_init(struct klsock *ls, struct pc_tcp_listener *l, struct kworker *kw, int fd)
{
        ls->fd = fd;
        ls->l = l;
        ls->kw = kw;
        pc_timer_init(&ls->retry, accept_retry, ls);
}

/* Serve @fd, accepted by @l's socket, on @kw, whose load already counts
 * it (reserve_place()). */
static void conn_take(struct kworker *kw, struct pc_tcp_listener *l, int fd)
{
        bool room = kw->nconns < kw->k->opts.max_conns && kw->ring_ok;
        struct pc_conn *c = room ? pc__kconn_new(kw, fd, l->cb, l->arg, l) : NULL;

        if (c) {
                kinc(&kw->st.accepted, 1);
                pc__kconn_opened(c);
                return;
        }
        /* At the limit the peer sees an orderly close; else out of memory. */
        pc__listener_unadmit(&l->base);
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

void pc__tcp_on_accept(struct klsock *ls, int res, unsigned flags)
{
        struct kworker *kw = ls->kw;

        if (!(flags & IORING_CQE_F_MORE))
                ls->armed = false;
        if (res >= 0) {
                /* Over the listener's limit, or closed: nothing is sent
                 * but the close, and the listener counts it refused. */
                if (pc__listener_admit(&ls->l->base))
                        place_conn(kw, ls->l, res);
                else
                        close(res);
        } else if (res != -ECANCELED &&
                   !atomic_load_explicit(&ls->l->base.closed, memory_order_relaxed)) {
                kinc(&kw->st.accept_errors, 1);
        }
        if (!ls->armed) {
                /* Out of descriptors or memory: retrying at once would spin
                 * on the same failure, so wait a little. */
                if (res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS)
                        pc_timer_start(&ls->retry, KNET_ACCEPT_RETRY_NS, 0);
                else
                        pc__tcp_arm_accept(ls);
        }
}
