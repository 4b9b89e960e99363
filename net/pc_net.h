/* SPDX-License-Identifier: MIT */
/*
 * What both network backends share (DPDK's stack in pc_dpdk.h, kernel
 * sockets in pc_knet.h): the peer of a datagram, a UDP endpoint that
 * hides which backend serves it, and the TCP service API (callbacks and
 * pc_conn_* calls), so one handler, written once, runs on either; the
 * service picks the backend at run time by how it listens or connects:
 * pc_tcp_listen() / pc_tcp_connect() (pc_knet.h) on kernel sockets,
 * pc_tcp_listen_dpdk() / pc_tcp_connect_dpdk() (here) on percore's own
 * TCP over a DPDK port. Everything after that is the same calls.
 */
#ifndef PC_NET_H
#define PC_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where a datagram came from, or goes to. */
struct pc_udp_peer {
        uint32_t addr;  /**< IPv4, host order */
        uint16_t port;  /**< UDP port, host order */
        uint8_t mac[6]; /**< link address (DPDK); all zero = look it up. The
                             kernel backend ignores it and reports zeros. */
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
        int backend;  /* private: 1 kernel, 2 DPDK */
        void *handle; /* private: the pc_kudp or the pc_port */
        uint16_t port;
        pc_udp_ep_fn fn;
        void *arg;
};

/**
 * Bind @ep to @addr:@port on the kernel backend (pc_kudp_bind(): one
 * SO_REUSEPORT socket per worker; @port 0 picks one).
 * Errors: as pc_kudp_bind(); -ENOTSUP when built without liburing.
 * The creating thread, before pc_runtime_run().
 */
int pc_udp_ep_kernel(struct pc_udp_ep *ep, struct pc_runtime *rt, const char *addr,
                     uint16_t port, pc_udp_ep_fn fn, void *arg);

/**
 * Bind @ep to UDP port @udp_port of DPDK port @p's IPv4 address (our own
 * stack, pc_udp_bind()). Errors: as pc_udp_bind(); -ENOTSUP when built
 * without DPDK. The creating thread, before pc_runtime_run().
 */
int pc_udp_ep_dpdk(struct pc_udp_ep *ep, struct pc_port *p, uint16_t udp_port, pc_udp_ep_fn fn,
                   void *arg);

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

/**
 * Listen on TCP port @port of DPDK port @p's IPv4 address with percore's
 * own TCP (net/proto/pc_tcp.h): every worker's engine listens, and a
 * connection belongs to the worker whose queue its SYN reached.
 * Errors: -EINVAL (NULL, @port 0), -EADDRINUSE, -ENOSPC (too many
 * listeners on @p), -EBUSY (runtime running), -ENOMEM, -ENOTSUP (built
 * without DPDK, or @p has an RX handler of its own instead of the stack).
 * The thread that created the runtime, before pc_runtime_run().
 */
int pc_tcp_listen_dpdk(struct pc_port *p, uint16_t port, const struct pc_tcp_callbacks *cb,
                       void *arg, struct pc_tcp_listener **out);

/** The port @l listens on (host order). Any thread. */
uint16_t pc_tcp_listener_port(const struct pc_tcp_listener *l);

/**
 * Connect to @addr:@port (IPv4 dotted quad) through DPDK port @p from the
 * calling worker; the connection belongs to it: the source port is chosen
 * so the replies reach this worker's queue (see net/dpdk/tcp.c). The SYN
 * leaves at the end of the poller pass (after an ARP exchange if the peer
 * is not known yet). on_accept runs once connected; on failure on_close
 * runs with the error (-ECONNREFUSED, -ETIMEDOUT). *@out (may be NULL)
 * is valid until on_close returns.
 * Errors: -EINVAL, -EPERM off-worker or on another runtime's worker,
 * -EADDRNOTAVAIL (@p has no address, or no free source port), -EMFILE
 * (connection cap), -ENOMEM, -ENOTSUP (built without DPDK, or @p has an
 * RX handler of its own). Worker only.
 */
int pc_tcp_connect_dpdk(struct pc_port *p, const char *addr, uint16_t port,
                        const struct pc_tcp_callbacks *cb, void *arg, struct pc_conn **out);

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
 * pc_tcp_listen_dpdk(), but serve each accepted connection by running
 * fn(c, @arg) in a fiber of its own on the connection's worker (sticky),
 * as pc_tcp_serve() of pc_knet.h does on kernel sockets: the handler
 * reads and writes with pc_conn_read() / pc_conn_write() and may use every
 * other pc_conn_* call; the connection stays open after the peer's FIN
 * until fn returns, then closes gracefully unless fn closed it; @c stays
 * valid until fn returns. Input fn has not read yet is kept up to 64 KiB,
 * then the engine holds what arrives (up to its rcv_cap) and the window
 * closes. When the run stops, handlers waiting in a read or write get
 * -ECANCELED; a later wait gets -ESHUTDOWN.
 * Errors: those of pc_tcp_listen_dpdk(), -EINVAL for a NULL @fn. The
 * thread that created the runtime, before pc_runtime_run().
 */
int pc_tcp_serve_dpdk(struct pc_port *p, uint16_t port, pc_conn_fiber_fn fn, void *arg,
                      struct pc_tcp_listener **out);

/**
 * Wait for input on @c: returns 1..@len bytes read into @buf, 0 once the
 * peer shut its write side and everything before was read, or -errno:
 * the connection's error (-ECONNRESET, -ETIMEDOUT, ...), -EPIPE after our
 * own close, -ECANCELED (the run began stopping while we waited),
 * -ESHUTDOWN (it had), -EINVAL (@buf NULL, @len 0, or @c not served by
 * pc_tcp_serve() or pc_tcp_serve_dpdk()), -EXDEV (another worker's
 * connection), -EPERM off-fiber. Fiber only: the
 * handler's fiber, or another fiber of @c's worker (one reader at a time).
 */
ssize_t pc_conn_read(struct pc_conn *c, void *buf, size_t len);

/**
 * Queue all @len bytes of @buf to @c (copied), waiting while the output is
 * full (the cap of pc_conn_send()); a write larger than the cap goes in
 * pieces. Returns @len, or -errno: the connection's error, -EPIPE (closed),
 * -ECANCELED / -ESHUTDOWN (the run stops), -ENOMEM, -EINVAL (also for a
 * connection not served by pc_tcp_serve() or pc_tcp_serve_dpdk()),
 * -EXDEV, -EPERM off-fiber.
 * After an error some of the bytes may have been queued. Fiber only, on
 * @c's worker (one writer at a time).
 */
ssize_t pc_conn_write(struct pc_conn *c, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PC_NET_H */
