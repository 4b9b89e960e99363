/* SPDX-License-Identifier: MIT */
/*
 * An HTTP/1.1 server over the service API (pc_net.h), so one server runs
 * on kernel sockets and on percore's TCP over DPDK unchanged. Requests are
 * parsed by Debian's libhttp-parser (the Node.js parser); this layer adds
 * what a server needs around it: keep-alive, pipelining answered in
 * order, chunked request bodies, sized and chunked responses,
 * Expect: 100-continue, limits with their statuses, smuggling refused,
 * timeouts, a lingering close after an error, routes and static files.
 *
 *   struct pc_http_server *s;
 *   pc_http_server_create(rt, NULL, &s);
 *   pc_http_route(s, PC_HTTP_GET, "/", hello, NULL);
 *   pc_tcp_serve_kernel(rt, "0.0.0.0", 8080, pc_http_serve, s, &l);
 *
 * Each connection is served by a fiber of its own (pc_tcp_serve_kernel()
 * or pc_tcp_serve_dpdk() with pc_http_serve()), which reads, parses, calls
 * the handler and writes: reading waits while the output is full, so a
 * client that pipelines without reading its answers stops being read.
 * Requests of one connection are handled one after the other, so answers
 * leave in the order of the requests even when a handler answers later.
 *
 * Memory per connection, bounded: the fiber's stack
 * (PERCORE_FIBER_STACK_KB), the connection state (about 8 KiB), an input
 * buffer of max_head + 16 KiB (a request head is kept whole until it is
 * answered; body bytes pass through it), an output buffer of at most
 * 16 KiB plus one response's headers (answers to pipelined requests are
 * gathered there and written once it fills or input runs out: writing
 * waits for room in the backend's output cap), and, while a request with
 * a body is handled, the body (at most max_body). An idle keep-alive
 * connection holds the stack, the state and the input buffer.
 *
 * Limits and the status each produces:
 *   request target longer than max_uri                    414
 *   request line + headers over max_head, or more than
 *   max_headers header lines                              431
 *   body over max_body (Content-Length or chunked)        413
 *   a method this layer does not serve                    501
 *   a version other than HTTP/1.0 or HTTP/1.1             505
 *   HTTP/1.1 without Host, both Content-Length and
 *   Transfer-Encoding, duplicate Content-Length, garbage  400
 *   the head not complete within head_timeout, or no body
 *   byte for body_timeout                                 408
 * After any of these the connection answers, sends Connection: close,
 * shuts its write side and reads and discards for at most linger_ns and
 * linger_bytes before it closes, so the client reads the whole answer
 * even if it was still sending.
 */
#ifndef PC_HTTP_H
#define PC_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pc_net.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pc_runtime;
struct pc_http_server;
struct pc_http_req;
struct pc_http_resp;

/** A piece of a request: not NUL-terminated, valid while the request is. */
struct pc_http_slice {
        const char *p;
        size_t len;
};

/** Methods, as bits so a route can take several. */
enum pc_http_method {
        PC_HTTP_GET = 1u << 0,
        PC_HTTP_HEAD = 1u << 1,
        PC_HTTP_POST = 1u << 2,
        PC_HTTP_PUT = 1u << 3,
        PC_HTTP_DELETE = 1u << 4,
        PC_HTTP_OPTIONS = 1u << 5,
        PC_HTTP_PATCH = 1u << 6,
};

/** The most header lines a request may have (max_headers' ceiling). */
#define PC_HTTP_MAX_HEADERS 100

/** A server's limits and timeouts; pc_http_opts_init() sets the defaults. */
struct pc_http_opts {
        size_t max_head;         /**< request line + headers, bytes (16 KiB): 431 */
        size_t max_uri;          /**< request target, bytes (8 KiB): 414 */
        size_t max_body;         /**< request body, bytes (1 MiB): 413 */
        unsigned max_headers;    /**< header lines (64, at most PC_HTTP_MAX_HEADERS): 431 */
        uint64_t head_timeout_ns; /**< whole head after its first byte (10 s): 408 */
        uint64_t body_timeout_ns; /**< between two body bytes (30 s): 408 */
        uint64_t idle_timeout_ns; /**< keep-alive wait for the next request (5 s): closed */
        uint64_t write_timeout_ns; /**< a write the client takes nothing of (30 s): closed */
        uint64_t linger_ns;      /**< lingering close after an error, at most (2 s) */
        size_t linger_bytes;     /**< and at most this much discarded (1 MiB) */
        /** One line per request in the common log format, or NULL (the
         * default: off). Written with one fprintf() per line. */
        FILE *access_log;
};

/** Fill @o with the defaults above. Any thread. */
void pc_http_opts_init(struct pc_http_opts *o);

/**
 * Make a server for @rt with @o (copied; NULL for the defaults): no
 * routes yet. Its per-worker counters join @rt's Prometheus metrics
 * (PERCORE_METRICS). Errors: -EINVAL (@rt or @out NULL, a zero limit or
 * timeout, max_headers over PC_HTTP_MAX_HEADERS), -ENOMEM, -EBUSY (@rt
 * is running). The thread that created @rt, before pc_runtime_run().
 */
int pc_http_server_create(struct pc_runtime *rt, const struct pc_http_opts *o,
                          struct pc_http_server **out);

/**
 * Free @s. Call once the runtime has stopped (no connection serves it any
 * more), before or after pc_runtime_destroy(). NULL is ignored. The
 * thread that created the runtime.
 */
void pc_http_server_destroy(struct pc_http_server *s);

/**
 * A request's handler; runs in the connection's fiber, so it may wait
 * (pc_call_await(), pc_blocking_await(), pc_fiber_sleep_ns()). Return 0
 * once @resp has been sent (pc_http_resp_send() or pc_http_resp_end()),
 * or PC_HTTP_LATER to answer later: the request and @resp stay valid
 * until pc_http_resp_send() is called on @resp from the connection's
 * worker, and the connection reads nothing meanwhile. If the run stops
 * first, the connection ends and @resp with it: code holding @resp must
 * drop it once its own wait says the run stops (-ECANCELED). A handler
 * that returns 0 without sending, or a negative value, gets a 500 sent
 * for it (or, streaming, its body ended).
 */
typedef int (*pc_http_handler_fn)(struct pc_http_req *req, struct pc_http_resp *resp,
                                  void *arg);

/** pc_http_handler_fn's "I will answer later". */
#define PC_HTTP_LATER 1

/**
 * Route requests whose method is in @methods (PC_HTTP_* bits) and whose
 * path is @path to @fn(req, resp, @arg). @path is exact ("/json"), or a
 * prefix when it ends in '*' ("/static/" followed by '*' takes "/static/"
 * and all under it; "/" and '*' takes every path). An exact match wins over any prefix, a
 * longer prefix over a shorter one. A GET route also answers HEAD (the
 * body is left out) unless a HEAD route matches. A path no route takes
 * gets 404; a path only routes of other methods take gets 405 with Allow.
 * Errors: -EINVAL (NULL, @path not starting with '/', no method), -EEXIST
 * (same path and an overlapping method), -ENOMEM.
 * The thread that created the runtime, before pc_runtime_run().
 */
int pc_http_route(struct pc_http_server *s, unsigned methods, const char *path,
                  pc_http_handler_fn fn, void *arg);

/**
 * Serve the files under @dir at @prefix ("/files/" or "/"): GET and HEAD,
 * Content-Type from the extension, Last-Modified and If-Modified-Since
 * (304), one "Range: bytes=a-b" (206, or 416 when unsatisfiable). A
 * directory answers its index.html, or 404. A path with a ".." segment is
 * refused (403), as is a file that, symbolic links followed, lies outside
 * @dir (404). Errors: -EINVAL (@prefix not starting and ending with '/'),
 * -ENOENT / -ENOTDIR (@dir), -ENOMEM, and those of pc_http_route().
 * The thread that created the runtime, before pc_runtime_run().
 */
int pc_http_static(struct pc_http_server *s, const char *prefix, const char *dir);

/**
 * Serve one connection with @server (a struct pc_http_server *): give it
 * to pc_tcp_serve_kernel() or pc_tcp_serve_dpdk() as the handler and
 * @server as its argument. Returns when the connection ends. Fiber only
 * (the listener's).
 */
void pc_http_serve(struct pc_conn *c, void *server);

/* ---- Requests: valid from the handler's call until its response is sent -- */

/** The request's method (one PC_HTTP_* bit). Its worker only. */
enum pc_http_method pc_http_req_method(const struct pc_http_req *r);
/** The path of the request target, before any '?' (not decoded). */
struct pc_http_slice pc_http_req_path(const struct pc_http_req *r);
/** What follows '?' in the target, empty when none. */
struct pc_http_slice pc_http_req_query(const struct pc_http_req *r);
/** 10 for HTTP/1.0, 11 for HTTP/1.1. */
int pc_http_req_version(const struct pc_http_req *r);
/** The body, whole (dechunked), empty when none. */
struct pc_http_slice pc_http_req_body(const struct pc_http_req *r);
/** The connection the request came on (for pc_conn_peer(), say). */
struct pc_conn *pc_http_req_conn(const struct pc_http_req *r);

/**
 * The value of the first header named @name (case-insensitive) in @out.
 * Errors: -ENOENT (none), -EINVAL (NULL). Its worker only.
 */
int pc_http_req_header(const struct pc_http_req *r, const char *name,
                       struct pc_http_slice *out);

/** How many header lines the request has. Its worker only. */
unsigned pc_http_req_header_count(const struct pc_http_req *r);

/**
 * The @i-th header line's name and value, in the order received.
 * Errors: -ERANGE (@i past the last), -EINVAL (NULL). Its worker only.
 */
int pc_http_req_header_at(const struct pc_http_req *r, unsigned i, struct pc_http_slice *name,
                          struct pc_http_slice *value);

/* ---- Responses -------------------------------------------------------------- */

/**
 * Set the status, 200..599 (default 200; a 100 Continue is this layer's
 * to send). Errors: -EINVAL, -EALREADY (sent or streaming). Its worker
 * only.
 */
int pc_http_resp_status(struct pc_http_resp *r, int status);

/**
 * Add the header "@name: @value" (both copied). Date, Content-Length,
 * Transfer-Encoding and Connection are this layer's own and refused.
 * Errors: -EINVAL (NULL, a CR or LF in either, one of those names),
 * -EALREADY, -ENOMEM, -E2BIG (the headers passed 8 KiB). Its worker only.
 */
int pc_http_resp_header(struct pc_http_resp *r, const char *name, const char *value);

/**
 * Append @len bytes of @data to the body, copied.
 * Errors: -EINVAL, -EALREADY, -ENOMEM. Its worker only.
 */
int pc_http_resp_body(struct pc_http_resp *r, const void *data, size_t len);

/**
 * Append @len bytes at @data to the body without copying them: they are
 * written from where they lie (a writev() of the pieces), and done(@arg)
 * runs once they are no longer needed: after they were handed to the
 * connection, or when the response is dropped (connection gone). Not
 * called when this returns an error. @done may be NULL for memory that
 * outlives the server. Errors: -EINVAL, -EALREADY, -ENOMEM (at most 64
 * pieces). Its worker only.
 */
int pc_http_resp_body_ref(struct pc_http_resp *r, const void *data, size_t len,
                          pc_conn_ref_fn done, void *arg);

/**
 * Send the response: status, headers, Date, Content-Length and the body
 * pieces. From the handler (it then returns 0) or, after it returned
 * PC_HTTP_LATER, from any task or fiber of the connection's worker.
 * Errors: -EALREADY (sent), -EXDEV (another worker), -EINVAL. A
 * connection that failed meanwhile is not an error here: the answer is
 * dropped and the connection ends.
 */
int pc_http_resp_send(struct pc_http_resp *r);

/**
 * Stream the body: the first call sends the status and headers with
 * Transfer-Encoding: chunked (what pc_http_resp_body() added goes first),
 * then each call sends @len bytes as one chunk (an empty @len sends
 * nothing). Waits while the output is full. Errors: -EALREADY (sent),
 * -EPERM (not in the handler's call), the connection's error (-EPIPE,
 * -ECONNRESET, -ETIMEDOUT...). The handler, in its connection's fiber.
 */
int pc_http_resp_chunk(struct pc_http_resp *r, const void *data, size_t len);

/**
 * End a streamed response (the last chunk), or send an unstreamed one as
 * pc_http_resp_send(). Errors: those of pc_http_resp_chunk().
 */
int pc_http_resp_end(struct pc_http_resp *r);

/* ---- Counters --------------------------------------------------------------- */

/** A worker's counters (or all workers', summed). */
struct pc_http_stats {
        uint64_t responses[5];  /**< by status class: [0] 1xx .. [4] 5xx */
        uint64_t bytes_in;      /**< request bytes read */
        uint64_t bytes_out;     /**< response bytes written */
        uint64_t conns_open;    /**< connections open now */
        uint64_t conns_total;   /**< connections served */
        uint64_t parse_errors;  /**< requests refused with 400, 413, 414, 431, 501, 505 */
        uint64_t timeouts;      /**< connections ended by a head, body or idle timeout */
};

/**
 * Read worker @worker's counters of @s, or all workers' summed for
 * @worker UINT32_MAX. Errors: -EINVAL (NULL, no such worker). Any thread:
 * the values are each read atomically, not as one snapshot.
 */
int pc_http_server_stats(const struct pc_http_server *s, uint32_t worker,
                         struct pc_http_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PC_HTTP_H */
