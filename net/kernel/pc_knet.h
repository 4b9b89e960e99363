/* SPDX-License-Identifier: MIT */
/*
 * percore on kernel sockets: one io_uring per worker, driven by a poller,
 * TCP listeners and UDP ports with one SO_REUSEPORT socket per worker, so
 * the kernel spreads connections and datagrams over the workers and each
 * connection stays on the worker that accepted it for its whole life.
 *
 * Lifecycle. Listeners and UDP ports are opened before pc_runtime_run(),
 * from the thread that created the runtime; each worker starts serving
 * them when its loop starts. Connections belong to their worker: every
 * pc_conn_* call must come from that worker (callbacks run there). Sockets
 * and connections stay open across runs and are closed by
 * pc_runtime_destroy() (without on_close calls). When a run ends, each
 * worker cancels its ring's operations (the kernel would once the worker's
 * thread exits), holds what still arrives, and closes its ring; the next
 * run makes a new one and arms them again: nothing is lost, except that a
 * pc_tcp_connect_kernel() still in progress fails (on_close -ECANCELED).
 *
 * Receiving. Where the kernel has them (6.0 and later), each worker
 * registers a ring of opts.recv_bufs provided buffers of opts.rbuf bytes,
 * and each connection keeps one multishot recv armed that picks buffers
 * from it: no per-connection receive buffer, one submission for many
 * receives. A buffer goes back to the ring as soon as on_data returns. When
 * the ring runs dry the kernel ends the recv (ENOBUFS) and the backend arms
 * it again once buffers are back. Elsewhere (or with PC_KNET_SINGLE_RECV)
 * each connection has one recv at a time in flight into its own buffer of
 * opts.rbuf bytes. The stats say which is in use (recv_multishot).
 *
 * Backpressure. Each connection buffers at most opts.out_cap bytes of
 * output that the kernel has not taken yet. pc_conn_send() refuses a write
 * that would exceed it (-ENOBUFS, nothing queued), and before that happens
 * the backend stops reading the connection: once the room left is under
 * one receive buffer, no recv is armed until the output drains to half the
 * cap (a "backpressure event"). So a handler that only sends in answer to
 * what it receives (an echo, a request/response protocol whose reply is no
 * larger than the request) never sees -ENOBUFS, and a peer that stops
 * reading stalls itself instead of growing the server's memory. With
 * multishot receives, pausing cancels the connection's recv; what the
 * kernel had already received by then is kept (copied out of the shared
 * buffers, so other connections keep receiving) and delivered on resume.
 * The kernel can fill many buffers for one connection before the poller
 * sees the first, so there a connection holds at most out_cap plus
 * recv_bufs * rbuf bytes (in single-shot mode: out_cap plus rbuf).
 *
 * A service that produces output on its own (not in answer to input) stops
 * when pc_conn_send() says -ENOBUFS and resumes from on_writable, which
 * runs once the output has drained to half the cap.
 *
 * Include this header after percore.h.
 */
#ifndef PC_KNET_H
#define PC_KNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "percore.h"
#include "pc_net.h"

#ifdef __cplusplus
extern "C" {
#endif

/** pc_knet_opts.flags: always use single-shot recvs into per-connection
 * buffers, even where multishot recv and provided buffers exist. */
#define PC_KNET_SINGLE_RECV (1u << 0)

/** pc_knet_opts.flags: do not defer the ring's task work to the worker
 * (IORING_SETUP_DEFER_TASKRUN); let the kernel run it as completions occur,
 * as before 6.1. For comparing the two; deferring is faster. */
#define PC_KNET_NO_DEFER (1u << 1)

/** pc_knet_opts.flags: a worker with nothing to do sleeps in ppoll(2) on
 * its eventfd, which the ring signals on every completion, rather than in
 * io_uring_enter(2) waiting for a completion (the default, where a poll on
 * that eventfd brings the other wake-ups). For comparing the two; sleeping
 * in the ring saves two system calls per sleep. */
#define PC_KNET_EFD_SLEEP (1u << 2)

/** pc_knet_opts.flags: keep each accepted connection on the worker whose
 * SO_REUSEPORT listener took it. By default a worker that holds more
 * connections than the least loaded one hands the new connection to that
 * worker (one sticky task, where its on_accept then runs), so 64
 * connections land 32/32 on two workers rather than as the kernel's hash
 * of their ports falls (40/24 is common); Seastar and memcached balance
 * the same way. */
#define PC_KNET_NO_BALANCE (1u << 3)

/** Options of the kernel backend; zero fields take the defaults named. */
struct pc_knet_opts {
        unsigned max_conns; /**< open connections per worker (4096); at the
                                 limit new ones are accepted and closed */
        size_t out_cap;     /**< output bytes buffered per connection (1 MiB),
                                 at least 2 * rbuf */
        unsigned rbuf;      /**< bytes one receive can bring (16 KiB): the size
                                 of each provided buffer, or of each
                                 connection's buffer in single-shot mode */
        unsigned ring_entries; /**< submission queue entries (1024) */
        unsigned recv_bufs; /**< provided buffers per worker (512), a power of
                                 two up to 32768; recv_bufs * rbuf <= 1 GiB */
        unsigned flags;     /**< PC_KNET_SINGLE_RECV, PC_KNET_NO_DEFER,
                                 PC_KNET_EFD_SLEEP, PC_KNET_NO_BALANCE,
                                 or-ed, or 0 */
};

/**
 * Set the backend's options for @rt. Before the first pc_tcp_listen_kernel(),
 * pc_kudp_bind() or run (which otherwise use the defaults).
 * Errors: -EINVAL (bad value), -EBUSY (too late), -ENOMEM.
 * The thread that created @rt.
 */
int pc_knet_configure(struct pc_runtime *rt, const struct pc_knet_opts *opts);

/* ---- TCP ------------------------------------------------------------------ */

/* struct pc_tcp_callbacks, struct pc_conn, pc_conn_send() and the rest of
 * the connection calls are in pc_net.h, shared with the DPDK backend;
 * what follows opens kernel sockets. */

/**
 * Listen on @addr:@port (an IPv4 dotted quad or an IPv6 address such as
 * "::1" or "::" for every address; @port 0 picks a free port, the
 * same on every worker) with one SO_REUSEPORT socket per worker; a worker
 * holding more connections than another hands it the new one (see
 * PC_KNET_NO_BALANCE), and the callbacks run on the worker that serves it.
 * Errors: -EINVAL, -EADDRINUSE, -EBUSY (runtime running), -ENOMEM,
 * -EMFILE/-ENFILE (out of file descriptors), or another -errno of
 * socket()/bind()/listen(); on error no socket stays open. The thread that created @rt, before
 * pc_runtime_run().
 */
int pc_tcp_listen_kernel(struct pc_runtime *rt, const char *addr, uint16_t port,
                         const struct pc_tcp_callbacks *cb, void *arg,
                         struct pc_tcp_listener **out);

/**
 * Connect to @addr:@port (IPv4 or IPv6) from the calling worker; the connection belongs to
 * it. on_accept runs once connected; on failure on_close runs with the
 * error. *@out (may be NULL) is valid until on_close returns.
 * Errors: -EINVAL, -EPERM off-worker or without the backend, -ENOMEM,
 * -EMFILE/-ENFILE. Worker only.
 */
int pc_tcp_connect_kernel(const char *addr, uint16_t port, const struct pc_tcp_callbacks *cb,
                          void *arg, struct pc_conn **out);

/* ---- Blocking-style TCP (fibers) ------------------------------------------- */

/**
 * Listen like pc_tcp_listen_kernel(), but serve each accepted connection by
 * running fn(c, @arg) in a fiber of its own on the worker that serves it
 * (pc_tcp_listen_kernel() says which; sticky: it never moves, in elastic mode
 * either). The handler reads and
 * writes with pc_conn_read() / pc_conn_write(), and may use every other
 * pc_conn_* call and any fiber call (awaits, sleeps). The connection
 * stays open after the peer's EOF until fn returns (pc_conn_linger), then
 * closes gracefully (what was written is still sent) unless fn closed it
 * already; @c stays valid until fn returns, even if the peer reset it.
 * Input that fn has not read yet is kept up to four receive buffers
 * (4 * opts.rbuf); past that the backend stops reading the connection, so
 * the peer's window closes instead of the server's memory growing.
 * When the run stops, handlers waiting in a read or write get
 * -ECANCELED and run to their end; a later wait gets -ESHUTDOWN.
 * Errors: those of pc_tcp_listen_kernel(), and -EINVAL for a NULL @fn. The
 * thread that created @rt, before pc_runtime_run().
 */
int pc_tcp_serve_kernel(struct pc_runtime *rt, const char *addr, uint16_t port,
                        pc_conn_fiber_fn fn, void *arg, struct pc_tcp_listener **out);

/* pc_conn_read() and pc_conn_write() are in pc_net.h. */

/* ---- UDP ------------------------------------------------------------------ */

/**
 * Bind the service endpoint @ep (pc_net.h) to @addr:@port (IPv4 or IPv6;
 * @port 0 picks one) with one SO_REUSEPORT socket per worker
 * (pc_kudp_bind()). Errors: as pc_kudp_bind(). The creating thread,
 * before pc_runtime_run().
 */
int pc_udp_ep_bind_kernel(struct pc_udp_ep *ep, struct pc_runtime *rt, const char *addr,
                          uint16_t port, pc_udp_ep_fn fn, void *arg);

struct pc_kudp;

/**
 * A datagram for a bound port, on the worker whose socket received it.
 * The same shape as pc_dpdk.h's pc_udp_fn: only the handle differs.
 */
typedef void (*pc_kudp_fn)(struct pc_kudp *s, const struct pc_udp_peer *from, uint16_t dport,
                           const void *data, size_t len, void *arg);

/**
 * The kernel backend's own UDP port under pc_udp_ep_bind_kernel(), for a
 * service that wants the destination port of each datagram.
 * Receive UDP datagrams for @addr:@port (@port 0 picks one) on one
 * SO_REUSEPORT socket per worker; each worker drains its socket in batches
 * (recvmmsg) when io_uring reports it readable.
 * Errors: as pc_tcp_listen_kernel(). The creating thread, before pc_runtime_run().
 */
int pc_kudp_bind(struct pc_runtime *rt, const char *addr, uint16_t port, pc_kudp_fn fn,
                 void *arg, struct pc_kudp **out);

/** The port @s is bound to (host order). Any thread. */
uint16_t pc_kudp_port(const struct pc_kudp *s);

/**
 * Send @len bytes from @s's port (@sport must be 0 or that port) to @to on
 * the calling worker's socket. Datagrams are batched (sendmmsg) at the end
 * of the poller pass. Errors: -EPERM off-worker, -EINVAL, -EMSGSIZE (over
 * 65507 bytes), -EAFNOSUPPORT (an IPv6 @to on IPv4 sockets). Worker only.
 */
int pc_kudp_send(struct pc_kudp *s, const struct pc_udp_peer *to, uint16_t sport,
                 const void *data, size_t len);

/* ---- Stats ---------------------------------------------------------------- */

/** One worker's counters (or the sum over workers). */
struct pc_knet_stats {
        uint64_t accepted;      /**< connections accepted and served here
                                     (those handed here included) */
        uint64_t handed_off;    /**< connections this worker's listener took
                                     and handed to a less loaded worker */
        uint64_t refused;       /**< accepted and closed at max_conns */
        uint64_t accept_errors; /**< accept failures (EMFILE, ENFILE, ENOMEM) */
        uint64_t closed;        /**< connections closed (any cause) */
        uint64_t resets;        /**< connections ended by a reset */
        uint64_t conns;         /**< open now */
        uint64_t bytes_in;      /**< TCP payload bytes received */
        uint64_t bytes_out;     /**< TCP payload bytes the kernel took */
        uint64_t backpressure;  /**< times a connection's reading was paused */
        uint64_t send_refused;  /**< pc_conn_send() calls refused with -ENOBUFS */
        uint64_t out_max;       /**< most bytes one connection ever buffered
                                     (max, not summed) */
        uint64_t udp_rx;        /**< datagrams received */
        uint64_t udp_tx;        /**< datagrams sent */
        uint64_t udp_drops;     /**< datagrams the kernel refused to send */
        uint64_t recv_multishot; /**< multishot recvs armed (0: single-shot) */
        uint64_t recv_nobufs;   /**< multishot recvs ended for want of a
                                     provided buffer (armed again) */
        uint64_t writable;      /**< on_writable calls */
        uint64_t rings_deferred; /**< workers whose ring defers task work to
                                      them (DEFER_TASKRUN; 0 or 1 a worker) */
        uint64_t rings_sleeping; /**< workers that sleep in their ring's
                                      io_uring_enter (0 or 1 a worker) */
        uint64_t read_paused;   /**< times reading a pc_tcp_serve_kernel() connection
                                     paused: its handler had not read what
                                     came (4 receive buffers' worth) */
        uint64_t sends;         /**< send operations handed to the kernel: at
                                     most one per connection per worker pass,
                                     whatever number of pc_conn_send() calls
                                     the pass made, plus one per short send */
        uint64_t rings_fd_registered; /**< workers whose ring is entered by its
                                           registered index, not its fd (5.18;
                                           0 or 1 a worker) */
};

/**
 * Counters of worker @worker, or summed over all workers when @worker is
 * -1. Each counter is exact; the set is not one instant.
 * Errors: -EINVAL, -ENOENT (the backend is not in use on @rt). Any thread.
 */
int pc_knet_stats(const struct pc_runtime *rt, int worker, struct pc_knet_stats *out);

/** Print one line of counters per worker to @f. Any thread. */
void pc_knet_stats_print(const struct pc_runtime *rt, FILE *f);

/* ---- Old names, kept for one release --------------------------------------- */

/** pc_tcp_listen_kernel(). */
static inline int pc_tcp_listen(struct pc_runtime *rt, const char *addr, uint16_t port,
                                const struct pc_tcp_callbacks *cb, void *arg,
                                struct pc_tcp_listener **out)
{
        return pc_tcp_listen_kernel(rt, addr, port, cb, arg, out);
}

/** pc_tcp_connect_kernel(). */
static inline int pc_tcp_connect(const char *addr, uint16_t port,
                                 const struct pc_tcp_callbacks *cb, void *arg,
                                 struct pc_conn **out)
{
        return pc_tcp_connect_kernel(addr, port, cb, arg, out);
}

/** pc_tcp_serve_kernel(). */
static inline int pc_tcp_serve(struct pc_runtime *rt, const char *addr, uint16_t port,
                               pc_conn_fiber_fn fn, void *arg, struct pc_tcp_listener **out)
{
        return pc_tcp_serve_kernel(rt, addr, port, fn, arg, out);
}

/** pc_udp_ep_bind_kernel(). */
static inline int pc_udp_ep_kernel(struct pc_udp_ep *ep, struct pc_runtime *rt,
                                   const char *addr, uint16_t port, pc_udp_ep_fn fn, void *arg)
{
        return pc_udp_ep_bind_kernel(ep, rt, addr, port, fn, arg);
}

#ifdef __cplusplus
}
#endif

#endif /* PC_KNET_H */
