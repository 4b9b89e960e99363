/* SPDX-License-Identifier: MIT */
/*
 * The service API: everything a service calls on a connection, a listener
 * or a UDP endpoint, the same on both backends, so one handler, written
 * once, runs on either. A backend header says only how a listener, a
 * connection or an endpoint is made there, by one naming rule:
 *
 *   kernel sockets (pc_knet.h)        percore's TCP over DPDK (pc_dpdk.h)
 *   pc_tcp_listen_kernel()            pc_tcp_listen_dpdk()
 *   pc_tcp_serve_kernel()             pc_tcp_serve_dpdk()
 *   pc_tcp_connect_kernel()           pc_tcp_connect_dpdk()
 *   pc_udp_ep_bind_kernel()           pc_udp_ep_bind_dpdk()
 *
 * Everything after that is the calls below. Each connection carries its
 * backend's operations, so no call here looks at which backend it is.
 */
#ifndef PC_NET_H
#define PC_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where a datagram came from, or goes to. */
struct pc_udp_peer {
        uint32_t addr;  /**< IPv4, host order (@family 0 or AF_INET) */
        uint16_t port;  /**< UDP port, host order */
        uint8_t mac[6]; /**< link address (DPDK); all zero = look it up. The
                             kernel backend ignores it and reports zeros. */
        uint8_t family; /**< 0 or AF_INET: @addr; AF_INET6: @addr6 (kernel
                             backend only: DPDK answers -EAFNOSUPPORT). A
                             datagram from an IPv4 peer to an IPv6 socket
                             reports AF_INET; a reply to one goes out as
                             its IPv4-mapped address. */
        uint8_t addr6[16]; /**< IPv6, network order (@family AF_INET6) */
};

struct pc_runtime;
struct pc_port;
struct pc_udp_ep;

/**
 * A datagram for endpoint @ep, on the worker that received it (the one
 * owning the socket or the RX queue). @data is valid during the call.
 */
typedef void (*pc_udp_ep_fn)(struct pc_udp_ep *ep, const struct pc_udp_peer *from,
                             const void *data, size_t len, void *arg);

/**
 * A bound UDP port on either backend. The caller owns the memory (static
 * or living as long as the runtime); its fields are private.
 */
struct pc_udp_ep {
        const void *ops; /* private: the backend's send */
        void *handle;    /* private: the pc_kudp or the pc_port */
        uint16_t port;
        pc_udp_ep_fn fn;
        void *arg;
};

/**
 * Send @len bytes from @ep's port to @to, batched by the backend with the
 * worker's other output. Errors: those of pc_kudp_send() or pc_udp_send()
 * (-EPERM off-worker, -EMSGSIZE, -ENOBUFS, -EHOSTUNREACH...), -EINVAL for
 * an unbound @ep. Worker only.
 */
int pc_udp_ep_send(struct pc_udp_ep *ep, const struct pc_udp_peer *to, const void *data,
                   size_t len);

/** The UDP port @ep is bound to (host order); 0 if unbound. Any thread. */
uint16_t pc_udp_ep_port(const struct pc_udp_ep *ep);


/* ---- TCP ------------------------------------------------------------------ */

struct pc_conn;
struct pc_tcp_listener;

/**
 * Connection callbacks; they run on the connection's worker. Any may be
 * NULL. @arg is the one given when listening or connecting.
 */
struct pc_tcp_callbacks {
        /** A connection was accepted (or, from a connect, connected). */
        void (*on_accept)(struct pc_conn *c, void *arg);
        /** @len bytes arrived (valid during the call). @len 0: the peer shut
         * its write side; the connection closes once what we queued has been
         * sent (send the last replies now), unless pc_conn_linger() asked
         * to wait for pc_conn_close(). */
        void (*on_data)(struct pc_conn *c, const void *data, size_t len, void *arg);
        /** The connection is gone: @err 0 after a clean close, else -errno
         * (-ECONNRESET for a reset, -ETIMEDOUT, a connect error for
         * clients). @c is freed when this returns. */
        void (*on_close)(struct pc_conn *c, int err, void *arg);
        /** The output drained to half of the backend's cap after
         * pc_conn_send() refused a write with -ENOBUFS: send again. Once
         * per refusal; not after the connection started closing. */
        void (*on_writable)(struct pc_conn *c, void *arg);
};

/** The port @l listens on (host order). Any thread. */
uint16_t pc_tcp_listener_port(const struct pc_tcp_listener *l);

/**
 * Stop accepting on @l: no new connection is accepted (on DPDK a SYN is
 * answered with a reset; on kernel sockets the listening sockets close),
 * open connections go on. @l stays valid (its port, stats) until the
 * runtime is destroyed. Idempotent. Errors: -EINVAL. Any worker, or the
 * thread that created the runtime.
 */
int pc_tcp_listener_close(struct pc_tcp_listener *l);

/**
 * Cap the connections open at once through @l (all workers together) at
 * @max; 0 lifts the cap. A connection over it is accepted and closed at
 * once with nothing sent, and counted (refused). Errors: -EINVAL.
 * Any thread.
 */
int pc_tcp_listener_set_limit(struct pc_tcp_listener *l, unsigned max);

/** A listener's counters, over all workers. */
struct pc_tcp_listener_stats {
        uint64_t accepted; /**< connections accepted and served */
        uint64_t refused;  /**< accepted and closed over the limit */
        uint64_t open;     /**< open now */
};

/** Read @l's counters. Errors: -EINVAL. Any thread. */
int pc_tcp_listener_stats(const struct pc_tcp_listener *l, struct pc_tcp_listener_stats *out);

/**
 * Queue @len bytes of @data to @c (copied). Sent in order, batched with
 * the worker's other output at the end of its poller pass.
 * Errors: -ENOBUFS (would exceed the backend's output cap: the kernel's
 * opts.out_cap, the engine's snd_cap; nothing queued; on_writable follows
 * once the output drained), -EMSGSIZE (@len alone exceeds the cap: split
 * it), -ENOMEM, -EPIPE (closing or closed), -EINVAL, -EXDEV (not the
 * connection's worker). The connection's worker only.
 */
int pc_conn_send(struct pc_conn *c, const void *data, size_t len);

/**
 * Close @c gracefully: stop reading, send what is queued, then close;
 * on_close follows (err 0). Idempotent. Returns 0, -EINVAL, -EXDEV.
 * The connection's worker only.
 */
int pc_conn_close(struct pc_conn *c);

/**
 * Keep @c open for sending after its peer shuts its write side: the close
 * that otherwise follows on_data(len 0) once the queued output is sent
 * waits for the service's pc_conn_close() (a service whose last replies
 * are still being computed elsewhere, say). Call it any time before the
 * EOF, e.g. in on_accept. A reset still ends the connection.
 * Errors: -EINVAL, -EXDEV (not the connection's worker), -EPIPE (closing
 * or closed). The connection's worker only.
 */
int pc_conn_linger(struct pc_conn *c);

/**
 * Queue the @n buffers of @iov to @c, in order, as one pc_conn_send()
 * of their concatenation would (copied; all or nothing). Errors: those of
 * pc_conn_send(), -EINVAL (@n < 0 or over IOV_MAX, a NULL base with a
 * length). The connection's worker only.
 */
int pc_conn_sendv(struct pc_conn *c, const struct iovec *iov, int n);

/** Called once the backend no longer needs bytes given to pc_conn_send_ref(). */
typedef void (*pc_conn_ref_fn)(void *arg);

/**
 * Queue @len bytes at @data to @c without copying them: the caller keeps
 * the memory unchanged until done(@arg) runs, on the connection's worker,
 * once the backend no longer needs it: on DPDK when the peer has
 * acknowledged the bytes (a retransmission reads them again), on kernel
 * sockets when the kernel has taken them; and in any case when the
 * connection ends (done runs before on_close). Sent in order with
 * pc_conn_send()'s bytes and counted in pc_conn_buffered(). Not called
 * when this returns an error. Errors: those of pc_conn_send(), -EINVAL
 * for a NULL @done. The connection's worker only.
 */
int pc_conn_send_ref(struct pc_conn *c, const void *data, size_t len, pc_conn_ref_fn done,
                     void *arg);

/**
 * Send what is queued, then end our direction (a FIN): the peer reads
 * EOF, and reading @c goes on until the peer's own EOF (on_data with
 * len 0, pc_conn_read() returning 0); the connection then ends as after
 * pc_conn_close(). Later sends fail with -EPIPE. Idempotent.
 * Errors: -EINVAL, -EXDEV (not the connection's worker), -EPIPE (closed).
 * The connection's worker only.
 */
int pc_conn_shutdown(struct pc_conn *c);

/**
 * End @c at once with a reset, dropping what is queued: on_close follows
 * with -ECONNABORTED. For a peer that misbehaves. Idempotent.
 * Errors: -EINVAL, -EXDEV. The connection's worker only.
 */
int pc_conn_abort(struct pc_conn *c);

/**
 * Time out @c after @idle_ns without progress; 0 turns it off (the
 * default). Reading: a pc_conn_read() that waits @idle_ns without a byte
 * returns -ETIMEDOUT, and the connection stays usable (the caller
 * decides); a callback connection that receives no byte for @idle_ns
 * ends with on_close(c, -ETIMEDOUT). Writing: a pc_conn_write() that
 * waits @idle_ns for room while the peer takes nothing returns
 * -ETIMEDOUT; a callback connection whose queued output makes no
 * progress for @idle_ns ends with on_close(c, -ETIMEDOUT). The clock is
 * checked every @idle_ns / 8 (a millisecond apart at the least), so a timeout
 * comes 1 to 1.25 x @idle_ns after the last progress. Sets both directions;
 * pc_conn_set_write_timeout() then changes the writing one.
 * Errors: -EINVAL, -EXDEV, -EPIPE (closed), -ENOMEM.
 * The connection's worker only.
 */
int pc_conn_set_timeout(struct pc_conn *c, uint64_t idle_ns);

/** pc_conn_set_timeout() for writing only. Same errors and threads. */
int pc_conn_set_write_timeout(struct pc_conn *c, uint64_t idle_ns);

/**
 * Where @c's peer is (pc_conn_peer()) or where @c is on our side
 * (pc_conn_local()): an AF_INET or AF_INET6 address and port in @out.
 * Errors: -EINVAL (NULL), -ENOTCONN (a connect still in progress).
 * The connection's worker, or any thread while it is open.
 */
int pc_conn_peer(const struct pc_conn *c, struct sockaddr_storage *out);
int pc_conn_local(const struct pc_conn *c, struct sockaddr_storage *out);

/**
 * Stop delivering @c's input to on_data (@pause true) or go on (false), for
 * a callback service that cannot take more yet: what arrives meanwhile is
 * held by the backend up to its receive buffer (the kernel's socket buffer
 * and one receive's worth; on DPDK the engine's rcv_cap), then the peer's
 * window closes. Resuming delivers what was held, then the peer's EOF if
 * it came, from the worker's loop, never from inside this call, so it may
 * be called from on_data. The backend's own pause for a full output is
 * separate: input flows only when neither holds it. Pausing twice is one
 * pause. A fiber-served connection reads on demand: -EINVAL there.
 * Errors: -EINVAL, -EXDEV, -EPIPE (closed), -ENOMEM (resuming, no task).
 * The connection's worker only.
 */
int pc_conn_pause_read(struct pc_conn *c, bool pause);

/**
 * Turn Nagle's algorithm off (@on true: small writes leave at once, the
 * default on both backends) or on. Errors: -EINVAL, -EXDEV, -EPIPE.
 * The connection's worker only.
 */
int pc_conn_set_nodelay(struct pc_conn *c, bool on);

/**
 * Probe an idle connection: after @idle_s seconds without a segment,
 * send a keepalive probe every @intvl_s seconds and end the connection
 * with -ETIMEDOUT after @count unanswered ones (on_close, or the error of
 * the pending pc_conn_read()). @idle_s 0 turns it off (the default).
 * Errors: -EINVAL (@idle_s set with @intvl_s or @count 0, or past the
 * kernel's limits), -EXDEV, -EPIPE. The connection's worker only.
 */
int pc_conn_set_keepalive(struct pc_conn *c, unsigned idle_s, unsigned intvl_s,
                          unsigned count);

/** Output bytes of @c not yet taken (by the kernel) or acknowledged (by
 * the peer, on DPDK). Its worker only. */
size_t pc_conn_buffered(const struct pc_conn *c);

/** The worker @c belongs to. Any thread while @c lives. */
unsigned pc_conn_worker(const struct pc_conn *c);

/** Attach / read a user pointer. The connection's worker only. */
void pc_conn_set_data(struct pc_conn *c, void *data);
void *pc_conn_data(const struct pc_conn *c);

/* ---- Blocking-style TCP (fibers) ------------------------------------------- */

/** A connection's handler: runs in a fiber of its own (pc_fiber.h). */
typedef void (*pc_conn_fiber_fn)(struct pc_conn *c, void *arg);

/**
 * Wait for input on @c: returns 1..@len bytes read into @buf, 0 once the
 * peer shut its write side and everything before was read, or -errno:
 * the connection's error (-ECONNRESET, -ETIMEDOUT, ...), -ETIMEDOUT after
 * waiting the idle time of pc_conn_set_timeout() (the connection stays
 * open), -EPIPE after our own close, -ECANCELED (the run began stopping while we waited),
 * -ESHUTDOWN (it had), -EINVAL (@buf NULL, @len 0, or @c not served by
 * pc_tcp_serve_kernel() or pc_tcp_serve_dpdk()), -EXDEV (another worker's
 * connection), -EPERM off-fiber. Fiber only: the
 * handler's fiber, or another fiber of @c's worker (one reader at a time).
 */
ssize_t pc_conn_read(struct pc_conn *c, void *buf, size_t len);

/**
 * Queue all @len bytes of @buf to @c (copied), waiting while the output is
 * full (the cap of pc_conn_send()); a write larger than the cap goes in
 * pieces. Returns @len, or -errno: the connection's error, -ETIMEDOUT
 * (waited the write timeout of pc_conn_set_timeout() while the peer took
 * nothing; some bytes may be queued), -EPIPE (closed),
 * -ECANCELED / -ESHUTDOWN (the run stops), -ENOMEM, -EINVAL (also for a
 * connection not served by pc_tcp_serve_kernel() or pc_tcp_serve_dpdk()),
 * -EXDEV, -EPERM off-fiber.
 * After an error some of the bytes may have been queued. Fiber only, on
 * @c's worker (one writer at a time).
 */
ssize_t pc_conn_write(struct pc_conn *c, const void *buf, size_t len);

/**
 * pc_conn_write() of the @n buffers of @iov, in order, without copying
 * them into one first. Returns their total length or -errno as
 * pc_conn_write() (-EINVAL also for @n < 0 or over IOV_MAX). Fiber only,
 * on @c's worker (one writer at a time).
 */
ssize_t pc_conn_writev(struct pc_conn *c, const struct iovec *iov, int n);

#ifdef __cplusplus
}
#endif

#endif /* PC_NET_H */
