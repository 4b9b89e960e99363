/* SPDX-License-Identifier: MIT */
/*
 * The echo suite's second client, independent of lgen.c: a plain epoll
 * closed loop, the client a user writes to check an echo server. One
 * thread per CPU given, each with its share of the connections on an
 * epoll set of its own (level-triggered); every connection sends a request,
 * waits for its whole echo, checks it and sends the next. It counts the
 * echoes whole within a fixed time. Nothing in it is shared with the
 * bench's io_uring generator, so the two clients' spread shows how much a
 * ratio owes to the client.
 */
#ifndef PC_BENCH_ECLIENT_H
#define PC_BENCH_ECLIENT_H

#include <stddef.h>
#include <stdint.h>

#define ECLIENT_MAX_THREADS 64
#define ECLIENT_MAX_CONNS   1024
/* The largest request: one echo in flight must fit the socket buffers of
 * a connection whose thread is still writing the request. */
#define ECLIENT_MAX_SIZE 16384

struct eclient_opts {
        uint16_t port;   /* on 127.0.0.1 */
        unsigned conns;  /* in all, connection i on thread i % threads */
        size_t size;     /* request bytes, 1 to ECLIENT_MAX_SIZE */
        double seconds;  /* the timed part */
        const int *cpus; /* thread i pinned to cpus[i]; NULL: the threads unpinned */
        unsigned threads; /* one per CPU of @cpus (at least 1) */
};

struct eclient_result {
        uint64_t replies; /* whole echoes received within the timed part */
        uint64_t sent;    /* requests sent in all: replies, plus one a connection
                           * in flight at the end (its echo read, not counted) */
        double seconds;   /* the timed part as it ran: the start to the last stop */
};

/*
 * Connect o->conns connections to 127.0.0.1:o->port over o->threads
 * threads, then (every connection connected, on every thread) start the
 * clock: each connection sends a request of o->size bytes, reads until its
 * whole echo is back, and sends the next, until o->seconds have passed;
 * then each reads the echo of the request it still has in flight, so the
 * server echoed exactly @out->sent requests. Returns 0 or a negative
 * errno: -EINVAL (no connection, no thread, a size out of range, seconds
 * not above 0), -ERANGE (more threads than connections, or over the
 * limits), a failed pin or connect, -ECONNRESET (the server closed a
 * connection), -EPROTO (an echo that is not the request), -ETIMEDOUT (an
 * echo in flight at the end that did not come in 10 s). Call from one
 * thread at a time.
 */
int eclient_run(const struct eclient_opts *o, struct eclient_result *out);

#endif
