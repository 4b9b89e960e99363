/* SPDX-License-Identifier: MIT */
/*
 * The kernel backend's frame: a module per runtime whose worker-start hook
 * gives each worker an io_uring and a poller, the poller itself (reap
 * completions, submit what the handlers queued), parking, sockets, stats.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knet_pvt.h"

static void knet_destroy(struct pc_runtime *rt, void *arg);
static void knet_worker_start(struct pc_worker *w, void *arg);
static void knet_worker_stop(struct pc_worker *w, void *arg);
static void knet_worker_stopping(struct pc_worker *w, void *arg);
static void knet_worker_drain(struct pc_worker *w, void *arg);
static unsigned knet_drain_busy(struct pc_worker *w, void *arg);
static void knet_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg);

struct knet *pc__knet_get(struct pc_runtime *rt, bool create)
{
        struct knet *k;

        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->destroy == knet_destroy)
                        return m->arg;
        if (!create)
                return NULL;
        k = calloc(1, sizeof(*k));
        if (k == NULL)
                return NULL;
        k->rt = rt;
        k->opts.max_conns = KNET_MAX_CONNS;
        k->opts.out_cap = KNET_OUT_CAP;
        k->opts.rbuf = KNET_RBUF;
        k->opts.ring_entries = KNET_RING;
        k->opts.recv_bufs = KNET_RECV_BUFS;
        for (unsigned i = 0; i < rt->nworkers; i++) {
                k->kw[i] = pc_numa_alloc(sizeof(struct kworker), rt->nodes[i]);
                if (k->kw[i] == NULL) {
                        knet_destroy(rt, k);
                        return NULL;
                }
                memset(k->kw[i], 0, sizeof(struct kworker));
                k->kw[i]->k = k;
                k->kw[i]->id = i;
                k->kw[i]->w = rt->workers[i];
                atomic_init(&k->kw[i]->load, 0);
        }
        k->module.arg = k;
        k->module.destroy = knet_destroy;
        k->module.worker_start = knet_worker_start;
        k->module.worker_stop = knet_worker_stop;
        k->module.worker_stopping = knet_worker_stopping;
        k->module.worker_drain = knet_worker_drain;
        k->module.drain_busy = knet_drain_busy;
        k->module.metrics = knet_metrics;
        pc__module_add(rt, &k->module);
        return k;
}

int pc__knet_setup(struct pc_runtime *rt, struct knet **out)
{
        if (atomic_load(&rt->running))
                return -EBUSY;
        *out = pc__knet_get(rt, true);
        return *out ? 0 : -ENOMEM;
}

int pc_knet_configure(struct pc_runtime *rt, const struct pc_knet_opts *o)
{
        struct knet *k;
        struct pc_knet_opts v;
        int rc;

        if (rt == NULL || o == NULL)
                return -EINVAL;
        rc = pc__knet_setup(rt, &k);
        if (rc)
                return rc;
        if (atomic_load_explicit(&k->started, memory_order_relaxed) || k->nl || k->nu)
                return -EBUSY;
        v = *o;
        if (v.max_conns == 0)
                v.max_conns = KNET_MAX_CONNS;
        if (v.rbuf == 0)
                v.rbuf = KNET_RBUF;
        if (v.out_cap == 0)
                v.out_cap = KNET_OUT_CAP;
        if (v.ring_entries == 0)
                v.ring_entries = KNET_RING;
        if (v.recv_bufs == 0)
                v.recv_bufs = KNET_RECV_BUFS;
        if (v.rbuf < 64 || v.rbuf > (1u << 24) || v.out_cap < 2 * (size_t)v.rbuf ||
            v.ring_entries < 8 || v.ring_entries > 32768 ||
            v.recv_bufs > KNET_RECV_BUFS_MAX || (v.recv_bufs & (v.recv_bufs - 1)) ||
            (uint64_t)v.recv_bufs * v.rbuf > (1u << 30) ||
            (v.flags & ~(PC_KNET_SINGLE_RECV | PC_KNET_NO_DEFER | PC_KNET_EFD_SLEEP |
                         PC_KNET_NO_BALANCE)))
                return -EINVAL;
        k->opts = v;
        return 0;
}

struct kworker *pc__knet_self(void)
{
        struct pc_worker *w = pc__self;
        struct knet *k;

        if (w == NULL || (k = pc__knet_get(w->rt, false)) == NULL)
                return NULL;
        return k->kw[w->id]->ring_ok ? k->kw[w->id] : NULL;
}

/* A submission entry; when the queue is full, submit it first. NULL only if
 * the kernel takes nothing (its completion backlog is full). */
struct io_uring_sqe *pc__knet_sqe(struct kworker *kw)
{
        struct io_uring_sqe *sqe = io_uring_get_sqe(&kw->ring);

        if (sqe == NULL) {
                io_uring_submit(&kw->ring);
                sqe = io_uring_get_sqe(&kw->ring);
        }
        return sqe;
}

int pc__knet_addr(const char *addr, uint16_t port, union ksa *sa, socklen_t *len)
{
        memset(sa, 0, sizeof(*sa));
        if (addr == NULL)
                return -EINVAL;
        if (inet_pton(AF_INET, addr, &sa->in.sin_addr) == 1) {
                sa->in.sin_family = AF_INET;
                sa->in.sin_port = htons(port);
                *len = sizeof(sa->in);
                return 0;
        }
        if (inet_pton(AF_INET6, addr, &sa->in6.sin6_addr) == 1) {
                sa->in6.sin6_family = AF_INET6;
                sa->in6.sin6_port = htons(port);
                *len = sizeof(sa->in6);
                return 0;
        }
        return -EINVAL;
}

/* A SO_REUSEPORT socket bound to @addr:@port; listening for TCP. It stays
 * blocking: io_uring arms its own poll when a socket has nothing, and the
 * UDP path asks for MSG_DONTWAIT per call. *@bound receives the port (the chosen one for @port 0). */
int pc__knet_socket(int type, const char *addr, uint16_t port, bool listen_, uint16_t *bound)
{
        union ksa sa;
        socklen_t sl;
        int one = 1, fd, rc;

        if (pc__knet_addr(addr, port, &sa, &sl))
                return -EINVAL;
        fd = socket(sa.sa.sa_family, type | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
            bind(fd, &sa.sa, sl) || (listen_ && listen(fd, KNET_BACKLOG)) ||
            getsockname(fd, &sa.sa, &sl)) {
                rc = -errno;
                close(fd);
                return rc;
        }
        /* The port sits at the same offset in both families. */
        *bound = ntohs(sa.in.sin_port);
        return fd;
}

/* ---- the poller ----------------------------------------------------------- */

/* Whether the kernel holds completions back until the worker enters it:
 * deferred task work (IORING_SQ_TASKRUN, with TASKRUN_FLAG) or an
 * overflowed completion queue. */
static bool owes_completions(const struct kworker *kw)
{
        return IO_URING_READ_ONCE(*kw->ring.sq.kflags) &
               (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
}

/* The poll on the worker's eventfd fired (a wake-up: nothing to do, the
 * worker is awake now) or ended: armed again before the next sleep, unless
 * the kernel refused it outright, which sends the worker back to ppoll. */
static void wake_complete(struct kworker *kw, int res, unsigned flags)
{
        if (flags & IORING_CQE_F_MORE)
                return;
        kw->wake_armed = false;
        if (res < 0 && res != -ECANCELED && res != -ENOMEM && res != -EOVERFLOW)
                kw->wake_failed = true;
}

/* Handle up to @budget completions. */
static unsigned reap(struct kworker *kw, unsigned budget)
{
        struct io_uring_cqe *cqe;
        unsigned n = 0;

        while (n < budget && io_uring_peek_cqe(&kw->ring, &cqe) == 0) {
                uint64_t ud = cqe->user_data;
                int res = cqe->res;
                unsigned flags = cqe->flags;
                void *ptr = (void *)(uintptr_t)(ud & ~(uint64_t)KTAG_MASK);

                io_uring_cqe_seen(&kw->ring, cqe);
                n++;
                if (ud == 0)
                        continue; /* a cancel's own completion */
                if (!(flags & IORING_CQE_F_MORE))
                        kw->armed--;
                if ((ud & KTAG_MASK) == T_WAKE)
                        wake_complete(kw, res, flags);
                else if ((ud & KTAG_MASK) == T_UDP)
                        pc__udp_complete(kw, ptr, res, flags);
                else
                        pc__tcp_complete(kw, ud & KTAG_MASK, ptr, res, flags);
        }
        return n;
}

/*
 * One pass: an io_uring_enter only if there is something to hand over (what
 * the last pass left) or deferred task work to run (receives whose data
 * arrived), then the completions and UDP, then the sends and re-arms the
 * handlers queued, submitted at once so replies leave in this pass. On a
 * ring with deferred task work that last enter also runs the work that
 * built up meanwhile, so the next pass finds its completions waiting: one
 * system call per busy pass.
 */
static unsigned kpoll(void *arg)
{
        struct kworker *kw = arg;
        unsigned n;

        if (kw->send_q)
                pc__tcp_flush_sends(kw); /* queued by tasks since the last pass */
        if (io_uring_sq_ready(&kw->ring) || owes_completions(kw))
                io_uring_submit_and_get_events(&kw->ring);
        n = reap(kw, KNET_CQE_BUDGET);
        n += pc__udp_poll(kw);
        if (kw->send_q)
                pc__tcp_flush_sends(kw);
        if (io_uring_sq_ready(&kw->ring))
                io_uring_submit_and_get_events(&kw->ring);
        return n;
}

/*
 * May the worker sleep? The ring reports every completion on the worker's
 * own eventfd (io_uring_register_eventfd), the one park() sleeps on, so a
 * completion posted after the checks below wakes the worker exactly as a
 * message does; one posted before them is seen here in the CQ tail. With
 * deferred task work the kernel signals the eventfd as it queues the first
 * item of work for the worker and flags the ring (IORING_SQ_TASKRUN) until
 * the worker runs it: work queued before the checks is seen in the flag,
 * work queued after them signals. No completion can fall between the two,
 * so no wake-up is lost. Unsubmitted entries, a completion backlog the
 * kernel holds back (CQ overflow) and UDP work the budget left over would
 * not signal the eventfd, so they keep the worker awake. Stale eventfd
 * counts (completions handled while busy) only cost one spurious wake-up.
 */
static bool kprepare_sleep(void *arg)
{
        struct kworker *kw = arg;

        if (kw->send_q || io_uring_sq_ready(&kw->ring) || io_uring_cq_ready(&kw->ring) ||
            owes_completions(kw))
                return false;
        return pc__udp_idle(kw);
}

/*
 * Sleep the worker in io_uring_enter: the ring's own completions (and, on
 * a deferred ring, its task work) end the wait in the kernel, and every
 * other wake-up, a write to the worker's eventfd, fires a multishot poll
 * armed on it here. One system call per sleep where ppoll on the eventfd
 * takes three (ppoll, the eventfd's read, the enter that then reaps). No
 * wake-up is lost: the poll, armed before the wait, reports an eventfd
 * written before it as readable at once, and one written after it when it
 * is; a completion posted after kprepare_sleep()'s checks ends the wait as
 * it is posted. The eventfd's count, left over from wake-ups the worker
 * took elsewhere, is read as the poll is armed (once a run, or again after
 * the kernel ends the poll) so that it does not fire at once.
 */
static int ksleep(void *arg, int wake_fd, uint64_t deadline)
{
        struct kworker *kw = arg;
        struct __kernel_timespec ts, *tsp = NULL;
        struct io_uring_cqe *cqe;
        int rc;

        if (kw->efd_sleep)
                return -EOPNOTSUPP;
        if (kw->wake_failed) {
                /* Back to the eventfd for good: the ring signals it from now
                 * on. A completion posted since kprepare_sleep() looked, and
                 * before the ring signalled, is seen here. */
                if (io_uring_register_eventfd(&kw->ring, wake_fd))
                        return 0; /* try again at the next park */
                kw->efd_sleep = true;
                atomic_store_explicit(&kw->st.rings_sleeping, 0, memory_order_relaxed);
                return kprepare_sleep(kw) ? -EOPNOTSUPP : 0;
        }
        if (!kw->wake_armed) {
                struct io_uring_sqe *sqe = pc__knet_sqe(kw);
                uint64_t v;

                if (sqe == NULL)
                        return 0;
                io_uring_prep_poll_multishot(sqe, wake_fd, POLLIN);
                pc__knet_arm(kw, sqe, (uint64_t)(uintptr_t)kw | T_WAKE);
                kw->wake_armed = true;
                /* A count read here may be a wake-up for work this park's
                 * checks missed: return as woken, the poll goes in with the
                 * next pass's submission. */
                if (read(wake_fd, &v, sizeof(v)) == sizeof(v))
                        return 1;
        }
        if (deadline) {
                uint64_t now = pc_now_ns(), d = deadline > now ? deadline - now : 0;

                ts.tv_sec = (long long)(d / 1000000000u);
                ts.tv_nsec = (long long)(d % 1000000000u);
                tsp = &ts;
        }
        rc = io_uring_submit_and_wait_timeout(&kw->ring, &cqe, 1, tsp, NULL);
        return rc >= 0 ? 1 : 0;
}

static const struct pc_poller_ops kpoll_ops = {
        .name = "knet-uring",
        .poll = kpoll,
        .prepare_sleep = kprepare_sleep,
        .sleep = ksleep,
};


/*
 * The worker's ring, made on the worker's thread at the start of each run.
 * Best first: task work deferred until the worker asks for completions
 * (DEFER_TASKRUN, 6.1; it needs SINGLE_ISSUER, which a worker is).
 * Otherwise the kernel runs a completion's task work the moment it queues
 * it, interrupting the worker with an IPI, and on loopback often while the
 * sender's softirq still holds the socket lock the receive then spins on.
 * Then cooperative task work without the IPI (COOP_TASKRUN, 5.19), then a
 * plain ring. SUBMIT_ALL (5.18) keeps one bad entry from holding back the
 * ones behind it. An older kernel refuses flags it lacks with -EINVAL.
 */
static int ring_create(struct kworker *kw)
{
        static const unsigned tries[] = {
                IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                        IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL,
                IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL,
                0,
        };
        int rc = -EINVAL;

        for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
                struct io_uring_params p;

                if (i == 0 && (kw->k->opts.flags & PC_KNET_NO_DEFER))
                        continue;
                memset(&p, 0, sizeof(p));
                p.flags = IORING_SETUP_CQSIZE | tries[i];
                p.cq_entries = kw->k->opts.ring_entries * KNET_CQ_FACTOR;
                rc = io_uring_queue_init_params(kw->k->opts.ring_entries, &kw->ring, &p);
                if (rc == 0) {
                        /* Entered by its index in this thread's table: no
                         * file lookup of the ring per io_uring_enter (5.18;
                         * without it, the fd as before). The ring is only
                         * entered from this worker's thread, which makes
                         * and ends it (knet_worker_stop(), where
                         * io_uring_queue_exit() unregisters it). */
                        atomic_store_explicit(&kw->st.rings_fd_registered,
                                              io_uring_register_ring_fd(&kw->ring) == 1,
                                              memory_order_relaxed);
                        kw->armed = 0;
                        atomic_store_explicit(&kw->st.rings_deferred,
                                              (p.flags & IORING_SETUP_DEFER_TASKRUN) ? 1 : 0,
                                              memory_order_relaxed);
                        return 0;
                }
                if (rc != -EINVAL)
                        return rc;
        }
        return rc;
}

/* No ring on this worker this run: the others hand it no connection. */
static void load_off(struct kworker *kw)
{
        if (!kw->load_off) {
                atomic_fetch_add_explicit(&kw->load, KNET_LOAD_OFF, memory_order_relaxed);
                kw->load_off = true;
        }
}

/* On each worker's thread, on every run: a new ring (owned by this run's
 * thread), the poller the first time, then the listeners, connections and
 * UDP sockets. */
static void knet_worker_start(struct pc_worker *w, void *arg)
{
        struct knet *k = arg;
        struct kworker *kw = k->kw[w->id];
        int rc;

        atomic_store_explicit(&k->started, true, memory_order_relaxed);
        if (!kw->ring_ok) {
                rc = ring_create(kw);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "worker %u: io_uring: %s", w->id, pc_strerror(rc));
                        load_off(kw);
                        return;
                }
                kw->efd_sleep = k->opts.flags & PC_KNET_EFD_SLEEP;
                kw->wake_armed = kw->wake_failed = false;
                rc = kw->efd_sleep ? io_uring_register_eventfd(&kw->ring, w->efd) : 0;
                if (rc) {
                        pc_log(PC_LOG_ERROR, "worker %u: io_uring eventfd: %s", w->id,
                               pc_strerror(rc));
                        io_uring_queue_exit(&kw->ring);
                        load_off(kw);
                        return;
                }
                atomic_store_explicit(&kw->st.rings_sleeping, kw->efd_sleep ? 0 : 1,
                                      memory_order_relaxed);
                kw->ring_ok = true;
                pc__tcp_bufs_setup(kw);
        }
        if (!kw->poller_ok) {
                rc = pc_poller_register(&kpoll_ops, kw, NULL);
                if (rc) {
                        pc_log(PC_LOG_ERROR, "worker %u: knet poller: %s", w->id,
                               pc_strerror(rc));
                        return;
                }
                kw->poller_ok = true;
        }
        if (kw->load_off) {
                atomic_fetch_sub_explicit(&kw->load, KNET_LOAD_OFF, memory_order_relaxed);
                kw->load_off = false;
        }
        pc__tcp_worker_start(kw);
        pc__udp_worker_start(kw);
        if (io_uring_sq_ready(&kw->ring))
                io_uring_submit(&kw->ring);
}

/*
 * On each worker's thread when a run ends. The kernel ties each armed
 * operation, and a SINGLE_ISSUER ring itself, to the thread that submitted
 * it, and worker threads end with the run. So every operation is cancelled
 * here and its last completion reaped (nothing is armed again meanwhile;
 * data that still arrives is held for the next run, in order), then the
 * ring goes. The next run makes a new ring on its own thread and arms
 * every operation again: receives and sends lose nothing (a cancelled one
 * moved no bytes), accepts and UDP polls are re-armed; only a connect still
 * in progress fails.
 */
static void knet_worker_stop(struct pc_worker *w, void *arg)
{
        struct knet *k = arg;
        struct kworker *kw = k->kw[w->id];
        struct io_uring_sqe *sqe;
        uint64_t give_up;

        if (!kw->ring_ok)
                return;
        kw->quiescing = true;
        pc__tcp_flush_sends(kw); /* arms nothing now: the next run sends */
        sqe = pc__knet_sqe(kw);
        if (sqe) {
                io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
                io_uring_sqe_set_data64(sqe, 0);
        }
        give_up = pc_now_ns() + KNET_QUIESCE_NS;
        while (kw->armed && pc_now_ns() < give_up) {
                struct __kernel_timespec ts = {.tv_nsec = 10000000};
                struct io_uring_cqe *cqe;

                io_uring_submit_and_wait_timeout(&kw->ring, &cqe, 1, &ts, NULL);
                reap(kw, UINT32_MAX);
        }
        io_uring_queue_exit(&kw->ring);
        kw->ring_ok = false;
        if (kw->armed) {
                /* Not seen so far: the kernel cancels what is left as the
                 * ring goes, but might still fill a provided buffer, so
                 * those are left to it rather than freed. */
                pc_log(PC_LOG_WARN, "worker %u: %u io_uring operations outlived the run",
                       w->id, kw->armed);
                kw->br = NULL;
                kw->bufs = NULL;
        }
        pc__tcp_bufs_free(kw);
        kw->quiescing = false;
}

/* The run is stopping: the fibers that wait on a connection of this
 * worker run on, to their end, in the drain. */
static void knet_worker_stopping(struct pc_worker *w, void *arg)
{
        struct knet *k = arg;

        pc__tcp_fibers_cancel(k->kw[w->id]);
}

/* pc_runtime_drain(): the listeners close; open connections go on. */
static void knet_worker_drain(struct pc_worker *w, void *arg)
{
        struct knet *k = arg;

        pc__tcp_drain(k->kw[w->id]);
}

static unsigned knet_drain_busy(struct pc_worker *w, void *arg)
{
        struct knet *k = arg;

        return pc__tcp_busy(k->kw[w->id]);
}

static void knet_destroy(struct pc_runtime *rt, void *arg)
{
        struct knet *k = arg;

        /* The rings first: closing one cancels what it still has armed, so
         * no operation touches a buffer freed after it. */
        for (unsigned i = 0; i < rt->nworkers; i++)
                if (k->kw[i] && k->kw[i]->ring_ok) {
                        io_uring_queue_exit(&k->kw[i]->ring);
                        k->kw[i]->ring_ok = false;
                        pc__tcp_bufs_free(k->kw[i]);
                }
        pc__tcp_destroy(k);
        pc__udp_destroy(k);
        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct kworker *kw = k->kw[i];
                if (kw == NULL)
                        continue;
                free(kw->udp_rxbuf);
                pc_numa_free(kw, sizeof(*kw));
        }
        free(k);
}

/* ---- stats ---------------------------------------------------------------- */

static void read_stats(const struct kstats *s, struct pc_knet_stats *o, bool add)
{
#define RD(f) atomic_load_explicit(&s->f, memory_order_relaxed)
        struct pc_knet_stats v = {
                .accepted = RD(accepted),
                .handed_off = RD(handed_off),
                .refused = RD(refused),
                .accept_errors = RD(accept_errors),
                .closed = RD(closed),
                .resets = RD(resets),
                .conns = RD(conns),
                .bytes_in = RD(bytes_in),
                .bytes_out = RD(bytes_out),
                .backpressure = RD(backpressure),
                .send_refused = RD(send_refused),
                .out_max = RD(out_max),
                .udp_rx = RD(udp_rx),
                .udp_tx = RD(udp_tx),
                .udp_drops = RD(udp_drops),
                .recv_multishot = RD(recv_multishot),
                .recv_nobufs = RD(recv_nobufs),
                .writable = RD(writable),
                .rings_deferred = RD(rings_deferred),
                .rings_sleeping = RD(rings_sleeping),
                .read_paused = RD(read_paused),
                .sends = RD(sends),
                .rings_fd_registered = RD(rings_fd_registered),
        };
#undef RD
        uint64_t *d = (uint64_t *)o;
        const uint64_t *a = (const uint64_t *)&v;
        uint64_t out_max = o->out_max;

        if (!add) {
                *o = v;
                return;
        }
        /* Every field is a uint64_t count to sum, but out_max, a maximum. */
        for (size_t i = 0; i < sizeof(v) / sizeof(uint64_t); i++)
                d[i] += a[i];
        o->out_max = v.out_max > out_max ? v.out_max : out_max;
}

_Static_assert(sizeof(struct pc_knet_stats) % sizeof(uint64_t) == 0,
               "pc_knet_stats is uint64_t counters only");

int pc_knet_stats(const struct pc_runtime *rt, int worker, struct pc_knet_stats *out)
{
        struct knet *k;

        if (rt == NULL || out == NULL || worker < -1 || (worker >= 0 && (unsigned)worker >= rt->nworkers))
                return -EINVAL;
        k = pc__knet_get((struct pc_runtime *)rt, false);
        if (k == NULL)
                return -ENOENT;
        if (worker >= 0) {
                read_stats(&k->kw[worker]->st, out, false);
                return 0;
        }
        memset(out, 0, sizeof(*out));
        for (unsigned i = 0; i < rt->nworkers; i++)
                read_stats(&k->kw[i]->st, out, true);
        return 0;
}

void pc_knet_stats_print(const struct pc_runtime *rt, FILE *f)
{
        struct pc_knet_stats s;

        fprintf(f,
                "%-6s %10s %8s %8s %8s %8s %8s %12s %12s %8s %10s %10s %8s %8s %8s %5s %5s %8s\n",
                "worker", "accepted", "handed", "refused", "errors", "closed", "resets",
                "bytes_in", "bytes_out", "backpr", "udp_rx", "udp_tx", "mshot", "nobufs",
                "writable", "defer", "rsleep", "rpaused");
        for (unsigned i = 0; i < pc_runtime_workers(rt); i++) {
                if (pc_knet_stats(rt, (int)i, &s))
                        return;
                fprintf(f,
                        "%-6u %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
                        " %8" PRIu64 " %12" PRIu64 " %12" PRIu64 " %8" PRIu64 " %10" PRIu64
                        " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %5" PRIu64
                        " %5" PRIu64 " %8" PRIu64 "\n",
                        i, s.accepted, s.handed_off, s.refused, s.accept_errors, s.closed,
                        s.resets, s.bytes_in, s.bytes_out, s.backpressure, s.udp_rx, s.udp_tx,
                        s.recv_multishot, s.recv_nobufs, s.writable, s.rings_deferred,
                        s.rings_sleeping, s.read_paused);
        }
}

/* Module metrics hook: every worker's counters, as pc_knet_stats() has
 * them. */
static void knet_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg)
{
        static const struct {
                const char *name, *type, *help;
                size_t off;
        } fam[] = {
#define F(n, t, f, h) {"percore_knet_" n, t, h, offsetof(struct pc_knet_stats, f)}
                F("accepted_total", "counter", accepted,
                  "TCP connections accepted and served."),
                F("handed_off_total", "counter", handed_off,
                  "Connections accepted here and handed to a less loaded worker."),
                F("refused_total", "counter", refused,
                  "Connections accepted and closed at max_conns."),
                F("accept_errors_total", "counter", accept_errors, "Accept failures."),
                F("closed_total", "counter", closed, "TCP connections closed."),
                F("resets_total", "counter", resets, "TCP connections ended by a reset."),
                F("connections", "gauge", conns, "TCP connections open."),
                F("received_bytes_total", "counter", bytes_in,
                  "TCP payload bytes received."),
                F("sent_bytes_total", "counter", bytes_out,
                  "TCP payload bytes the kernel took."),
                F("backpressure_total", "counter", backpressure,
                  "Times a connection's reading was paused."),
                F("send_refused_total", "counter", send_refused,
                  "pc_conn_send() calls refused with ENOBUFS."),
                F("sends_total", "counter", sends,
                  "Send operations handed to the kernel (one per connection per pass)."),
                F("read_paused_total", "counter", read_paused,
                  "Times reading a pc_tcp_serve_kernel() connection paused: its handler had not read."),
                F("udp_received_total", "counter", udp_rx, "UDP datagrams received."),
                F("udp_sent_total", "counter", udp_tx, "UDP datagrams sent."),
                F("udp_drops_total", "counter", udp_drops,
                  "UDP datagrams the kernel refused."),
#undef F
        };
        struct knet *k = arg;
        struct pc_knet_stats st[PC_MAX_WORKERS];

        for (unsigned w = 0; w < rt->nworkers; w++)
                read_stats(&k->kw[w]->st, &st[w], false);
        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, fam[f].type, fam[f].help);
                for (unsigned w = 0; w < rt->nworkers; w++)
                        pc__prom_worker_u64(p, fam[f].name, w,
                                            *(const uint64_t *)((const char *)&st[w] +
                                                                fam[f].off));
        }
}
