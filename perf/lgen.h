/* SPDX-License-Identifier: MIT */
/*
 * The bench's own TCP load generator: one client thread, a fixed set of
 * loopback connections, one request in flight on each (ping-pong), driven
 * by one io_uring (batched submissions, so the client is cheaper per
 * request than the servers it measures). A protocol says what a request is and when a reply is whole.
 */
#ifndef PC_BENCH_LGEN_H
#define PC_BENCH_LGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LGEN_MAX_CONNS 256
#define LGEN_BUF 256 /* largest reply a protocol may expect */

struct lgen_proto {
        /* Write connection @conn's next request into @buf (at most @cap
         * bytes); return its length. @seed is the thread's generator. */
        size_t (*request)(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap);
        /* Whether @buf[0..len) holds connection @conn's whole reply. */
        bool (*reply_done)(void *ctx, unsigned conn, const char *buf, size_t len);
        void *ctx;
};

/*
 * Run @conns connections against 127.0.0.1:@port for @seconds. Returns
 * the number of completed request/reply pairs, or a negative errno (a
 * connection failed, or a reply outgrew LGEN_BUF: -EPROTO). *@p99_us (may
 * be NULL) gets the 99th percentile of the request-to-whole-reply times,
 * in microseconds, from a log-linear histogram (within 1/32 of the value).
 */
double lgen_run(uint16_t port, unsigned conns, double seconds, const struct lgen_proto *p,
                double *p99_us);

#endif
