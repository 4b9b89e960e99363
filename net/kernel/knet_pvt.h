/* SPDX-License-Identifier: MIT */
/*
 * Private state of the kernel backend: the per-runtime module, the
 * per-worker ring and counters, listeners, connections and UDP sockets.
 * Everything a worker owns is touched only on that worker's thread; the
 * counters are atomics so that pc_knet_stats() may read them anywhere.
 */
#ifndef KNET_PVT_H
#define KNET_PVT_H

#include <liburing.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "pc_module_pvt.h"
#include "pc_knet.h"
#include "pc_net_pvt.h"
#include "pc_tcp_fiber_pvt.h"

/* Tunables. */
#define KNET_MAX_CONNS 4096
#define KNET_OUT_CAP (1u << 20)
#define KNET_RBUF (16u << 10)
#define KNET_RECV_BUFS 512     /* provided buffers per worker */
#define KNET_RECV_BUFS_MAX 32768 /* the kernel's limit for one buffer ring */
#define KNET_BGID 0            /* buffer group: one ring per worker ring */
#define KNET_RING 1024
#define KNET_CQ_FACTOR 8       /* completion queue = 8 x submission queue */
#define KNET_CQE_BUDGET 512    /* completions handled per poller pass */
#define KNET_BACKLOG 4096
#define KNET_MAX_LISTEN 8      /* listeners + UDP ports per runtime */
#define KNET_UDP_BATCH 32      /* datagrams per recvmmsg / sendmmsg */
#define KNET_UDP_SLOT 2048     /* bytes per batched datagram; larger go alone */
#define KNET_UDP_ROUNDS 8      /* recvmmsg calls per socket per pass */
#define KNET_ACCEPT_RETRY_NS 10000000u /* back-off after EMFILE and the like */
#define KNET_QUIESCE_NS 2000000000ull /* longest wait for cancelled operations at a run's end */
#define KNET_SEND_IOV 16       /* pieces one send of output with references gathers */
#define KNET_LCLOSE_RETRY_NS 1000000u /* a closed listener's socket: look again for its closer */

/* What a completion's user_data points at: the low 3 bits say which. */
enum ktag {
        T_ACCEPT = 1, /* struct klsock */
        T_RECV = 2,   /* struct pc_conn */
        T_SEND = 3,   /* struct pc_conn */
        T_CONNECT = 4, /* struct pc_conn */
        T_UDP = 5,    /* struct kudp_sock */
        T_WAKE = 6,   /* struct kworker: the poll on the worker's eventfd */
};
#define KTAG_MASK 7u

#define KNET_LOAD_OFF (1u << 30)

struct kstats {
        _Atomic uint64_t accepted, handed_off, refused, accept_errors, closed, resets, conns;
        _Atomic uint64_t bytes_in, bytes_out, backpressure, send_refused, out_max;
        _Atomic uint64_t udp_rx, udp_tx, udp_drops;
        _Atomic uint64_t recv_multishot, recv_nobufs, writable, rings_deferred, rings_sleeping,
                rings_fd_registered;
        _Atomic uint64_t read_paused, sends;
};

/* Owner-only increment of a counter other threads read. */
static inline void kinc(_Atomic uint64_t *c, uint64_t n)
{
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

struct kworker;

/* One worker's socket of a listener. Its fd is closed by its worker
 * (the one whose ring may have an accept armed on it), or by the closing
 * thread while no run is on. */
struct klsock {
        struct pc_tcp_listener *l;
        struct kworker *kw;
        int fd;
        bool armed;
        struct pc_timer retry; /* re-arm after an accept error; look again after a close */
};

struct pc_tcp_listener {
        struct pc__listener_base base; /* first: pc_net's dispatch (tcp_api.c) */
        const struct pc_tcp_callbacks *cb;
        void *arg;
        void *serve; /* pc_tcp_serve_kernel()'s record (the callbacks' @arg), or NULL */
        struct knet *k;
        /* pc_tcp_listener_close() shut every socket (SHUT_RD, which ends
         * the armed accepts): each worker may close its own now. */
        _Atomic bool shut;
        uint16_t port;
        unsigned n;
        struct klsock s[]; /* one per worker */
};

/* An address of either family, as the kernel takes it. */
union ksa {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
};

/* Caller-owned output (pc_conn_send_ref()): sent from where it is, after
 * the first @at copied bytes of its buffer; done(@arg) once the kernel
 * took all of it, or the connection ended. */
struct kref {
        struct kref *next;
        const char *p;
        size_t len, at;
        pc_conn_ref_fn done;
        void *arg;
};

/* A byte buffer: [off, len) not yet sent, and the references among those
 * bytes (@refs, oldest first; @ref_off bytes of the first are sent,
 * @ref_bytes of all are not). */
struct kbuf {
        char *p;
        size_t off, len, cap;
        struct kref *refs, *refs_last;
        size_t ref_off, ref_bytes;
};

/* The gather a send of output with references hands the kernel: it reads
 * them until the send completes. */
struct ksendv {
        struct msghdr msg;
        struct iovec iov[KNET_SEND_IOV];
};

struct pc_conn {
        struct pc__conn_base base; /* first: pc_net's dispatch (tcp_api.c) */
        struct kworker *kw;
        int fd;
        const struct pc_tcp_callbacks *cb;
        void *arg;
        struct pc_conn *prev, *next; /* the worker's list, for destroy */
        char *rbuf;    /* single-shot receives only, allocated on first use */
        /* Output: the kernel reads @inflight while a send is armed, so only
         * @pending grows; they swap when the send completes. */
        struct kbuf inflight, pending;
        /* Input that a multishot recv brought after reading was paused,
         * delivered on resume (then @held_eof, if the peer shut meanwhile). */
        struct kbuf held;
        struct ksendv *sendv; /* allocated on the first send with references */
        unsigned refs; /* armed operations + callbacks running: free at 0 */
        bool recv_armed, send_armed, connect_armed;
        /* On the worker's send queue (@send_next): output waits for the
         * pass's end, so every send a pass makes goes out as one. */
        bool send_queued;
        struct pc_conn *send_next;
        bool recv_mshot;  /* the armed recv is multishot */
        bool recv_cancel; /* a cancel for it is on its way */
        bool held_eof;
        bool eof;      /* the peer shut its write side: no more reads */
        bool linger;   /* after the peer's EOF, stay open until pc_conn_close() */
        bool want_writable; /* a send was refused: on_writable is owed */
        bool open;     /* on_accept ran; on_close will */
        bool paused;   /* reading stopped by backpressure */
        bool closing;  /* no more reads; close once the output drains */
        bool dead;     /* finishing: waiting for armed ops to return */
        bool reset;    /* counted as a reset already */
        bool wr_shut;  /* pc_conn_shutdown(): FIN once the output is sent */
        bool fin_sent; /* ... and it was (shutdown(SHUT_WR)) */
        bool aborting; /* pc_conn_abort() or a timeout: a reset, not a FIN */
        bool addr_ok;  /* @peer and @local hold the addresses */
        int err;       /* for on_close */
        union ksa peer;  /* the connect target, then the peer's address */
        union ksa local;
        /* Served by a fiber (net/tcp_fiber.c, hooks in tcp_fiber.c): @fc
         * holds the input the handler has not read; reading pauses
         * (@in_paused) while it is full. The memory outlives on_close
         * while the fiber runs (@fc.live; a @zombie then, on the worker's
         * zombie list). */
        bool in_paused;
        bool zombie;
        struct pc__fconn fc;
};

/* One worker's socket of a UDP port, plus its batched output. */
struct kudp_sock {
        struct pc_kudp *u;
        struct kworker *kw;
        int fd;
        bool armed, more;
        unsigned ntx;
        struct mmsghdr tx[KNET_UDP_BATCH];
        struct iovec txv[KNET_UDP_BATCH];
        union ksa txa[KNET_UDP_BATCH];
        char txbuf[KNET_UDP_BATCH][KNET_UDP_SLOT];
};

struct pc_kudp {
        pc_kudp_fn fn;
        void *arg;
        uint16_t port;
        unsigned n;
        bool v6;               /* AF_INET6 sockets (IPv4 peers as mapped addresses) */
        struct kudp_sock *s[]; /* one per worker */
};

struct kworker {
        struct knet *k;
        struct pc_worker *w;
        unsigned id;
        bool ring_ok, poller_ok;
        /* The run is ending: completions are reaped but nothing is armed
         * again, and data that arrives is held for the next run. */
        bool quiescing;
        unsigned armed;      /* operations whose last completion is owed */
        /* The worker sleeps in io_uring_enter (ksleep), woken by a multishot
         * poll on its eventfd (@wake_armed while armed), and the ring does
         * not signal that eventfd; else (@efd_sleep) it sleeps in ppoll on
         * the eventfd, which the ring signals on each completion. */
        bool efd_sleep, wake_armed, wake_failed;
        struct io_uring ring;
        unsigned nconns;
        /* nconns plus the connections handed to this worker and not yet
         * taken, plus KNET_LOAD_OFF while @load_off (its ring failed):
         * what the other workers' accepts compare (balancing). */
        _Atomic unsigned load;
        bool load_off;
        struct pc_conn *conns;
        struct pc_conn *zombies; /* closed, their fibers still running */
        /* Connections with output to hand over, in the order they queued
         * it (each holds a ref). */
        struct pc_conn *send_q, **send_qtail;
        char *udp_rxbuf; /* KNET_UDP_BATCH x 64 KiB, allocated on first use */
        /* Provided buffers for multishot recv: @nbufs of opts.rbuf bytes at
         * @bufs, handed to the kernel through @br (buffer group KNET_BGID). */
        bool mshot;      /* multishot recv in use */
        bool mshot_seen; /* one has delivered data: the kernel has them */
        struct io_uring_buf_ring *br;
        char *bufs;
        unsigned nbufs;
        struct kstats st PC_ALIGNED;
};

struct knet {
        struct pc__module module;
        struct pc_runtime *rt;
        struct pc_knet_opts opts;
        _Atomic bool started; /* a run began: options are fixed (set by workers) */
        unsigned nl, nu;
        struct pc_tcp_listener *listeners[KNET_MAX_LISTEN];
        struct pc_kudp *udps[KNET_MAX_LISTEN];
        struct kworker *kw[PC_MAX_WORKERS];
};

/* Tag @sqe with @ud (non-zero): one more operation whose last completion
 * (the one without IORING_CQE_F_MORE) the worker waits for at the run's end. */
static inline void pc__knet_arm(struct kworker *kw, struct io_uring_sqe *sqe, uint64_t ud)
{
        io_uring_sqe_set_data64(sqe, ud);
        kw->armed++;
}

/* knet.c */
struct knet *pc__knet_get(struct pc_runtime *rt, bool create);
/* What every configure/listen/bind checks first: the runtime is not
 * running (-EBUSY), and the backend exists (created here; -ENOMEM). The
 * creating thread, before pc_runtime_run(). */
int pc__knet_setup(struct pc_runtime *rt, struct knet **out);
struct kworker *pc__knet_self(void);
struct io_uring_sqe *pc__knet_sqe(struct kworker *kw);
int pc__knet_socket(int type, const char *addr, uint16_t port, bool listen_, uint16_t *bound);
/* Parse @addr (IPv4 dotted quad or IPv6) and @port into @sa; its length
 * in *@len. -EINVAL for anything else. */
int pc__knet_addr(const char *addr, uint16_t port, union ksa *sa, socklen_t *len);

/* tcp.c */
void pc__tcp_bufs_setup(struct kworker *kw);
void pc__tcp_bufs_free(struct kworker *kw);
void pc__tcp_worker_start(struct kworker *kw);
void pc__tcp_complete(struct kworker *kw, unsigned tag, void *ptr, int res, unsigned flags);
void pc__tcp_destroy(struct knet *k);
/* Arm a send for each connection the pass queued output on (before the
 * pass submits; and at a run's end, where nothing is armed but the queue
 * is emptied). Worker only. */
void pc__tcp_flush_sends(struct kworker *kw);
/* Pause or resume reading @c for its fiber (a reason beside backpressure). */
void pc__conn_input_pause(struct pc_conn *c, bool pause);
/* Deliver what input was held, if nothing pauses reading, then read on. */
void pc__kconn_resume(struct pc_conn *c);
/* End @c at once with @err (its queued output dropped). */
void pc__conn_abort(struct pc_conn *c, int err);
/* @c's fiber ended: free @c if it closed meanwhile. */
void pc__conn_fiber_done(struct pc_conn *c);
int pc__kbuf_put(struct kbuf *b, const void *data, size_t len);
int pc__kbuf_reserve(struct kbuf *b, size_t len);
/* Set up worker @kw's socket @fd of listener @l. */
void pc__klsock_init(struct klsock *ls, struct pc_tcp_listener *l, struct kworker *kw, int fd);

/* The backend's operations (pc_net_pvt.h): tcp_conn.c's, and
 * tcp_fiber.c's hooks for the fiber service. */
extern const struct pc__conn_ops pc__kconn_ops;
extern const struct pc__listener_ops pc__klistener_ops;
extern const struct pc__fiber_ops pc__kfiber_ops;

/* tcp.c, for tcp_conn.c: the connection's life. */
struct pc_conn *pc__kconn_new(struct kworker *kw, int fd, const struct pc_tcp_callbacks *cb,
                              void *arg, struct pc_tcp_listener *l);
/* Queue output on the worker's send queue (armed at the pass's end). */
void pc__kconn_kick(struct pc_conn *c);
/* Close gracefully once nothing is left to send (after pc_conn_close()). */
void pc__kconn_maybe_done(struct pc_conn *c);
/* After pc_conn_shutdown(): the FIN once nothing is left to send. */
void pc__kconn_maybe_fin(struct pc_conn *c);
/* Stop a multishot recv (closing). */
void pc__kconn_cancel_recv(struct pc_conn *c);
/* End @c: no more reads or sends (@c may be freed before this returns
 * unless the caller holds a reference). */
void pc__kconn_finish(struct pc_conn *c, int err);
/* Drop a reference; the last one of a finished @c frees it. */
void pc__kconn_unref(struct pc_conn *c);
/* The unsent output of @c (copied and referenced bytes). */
size_t pc__kconn_buffered(const struct pc_conn *c);
/* Arm the connect of a new client connection (tcp_conn.c made it). */
void pc__kconn_set_ud(struct kworker *kw, struct io_uring_sqe *sqe, struct pc_conn *c,
                      enum ktag tag);
/* Free @c's memory (no callbacks but the references' done). */
void pc__kconn_mem_free(struct pc_conn *c);

/* tcp.c, for tcp_accept.c: a connection is open (on_accept runs). */
void pc__kconn_opened(struct pc_conn *c);
/* tcp_accept.c */
void pc__tcp_arm_accept(struct klsock *ls);
void pc__tcp_on_accept(struct klsock *ls, int res, unsigned flags);

/* tcp_out.c: output buffers with references. */
static inline bool pc__kbuf_empty(const struct kbuf *b)
{
        return b->off == b->len && b->refs == NULL;
}
/* Call each reference's done, oldest first, and free them. */
void pc__krefs_done(struct kref *r);
/* @c ends: every reference's done, before on_close. */
void pc__kconn_refs_release(struct pc_conn *c);
/* The pieces of @b's unsent output, in order, into @v (KNET_SEND_IOV at
 * most); how many. */
unsigned pc__kbuf_gather(const struct kbuf *b, struct iovec *v);
/* The kernel took @res bytes of @b: the references wholly sent are moved
 * to the end of the list at **@tail (the caller calls their done). */
void pc__kbuf_advance(struct kbuf *b, size_t res, struct kref ***tail);

/* tcp_conn.c: the drain (the module's worker_drain and drain_busy). */
void pc__tcp_drain(struct kworker *kw);
unsigned pc__tcp_busy(struct kworker *kw);

/* tcp_fiber.c */
/* The run is stopping: fibers waiting in pc_conn_read/write get -ECANCELED. */
void pc__tcp_fibers_cancel(struct kworker *kw);

/* udp.c */
void pc__udp_worker_start(struct kworker *kw);
void pc__udp_complete(struct kworker *kw, struct kudp_sock *s, int res, unsigned flags);
unsigned pc__udp_poll(struct kworker *kw);
bool pc__udp_idle(struct kworker *kw);
void pc__udp_destroy(struct knet *k);

#endif /* KNET_PVT_H */
