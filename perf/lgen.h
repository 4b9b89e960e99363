/* SPDX-License-Identifier: MIT */
/*
 * The bench's own TCP load generator: one client thread, a fixed set of
 * loopback connections, one request in flight on each (ping-pong), driven
 * by one io_uring (batched submissions: one system call per batch of
 * replies, not three per request). Over loopback the kernel's TCP work
 * falls on both ends, so it still costs about what the leanest server
 * does per request, and with a CPU to itself it can be what bounds a run
 * (its CPU is reported for that). A protocol says what a request is and
 * when a reply is whole.
 */
#ifndef PC_BENCH_LGEN_H
#define PC_BENCH_LGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sched.h>
#include <sys/types.h>

#define LGEN_MAX_CONNS 256
#define LGEN_BUF 2048 /* largest request or reply a protocol may use */

struct lgen_proto {
        /* Write connection @conn's next request into @buf (at most @cap
         * bytes); return its length. @seed is the thread's generator. */
        size_t (*request)(void *ctx, unsigned conn, uint64_t *seed, char *buf, size_t cap);
        /* Whether @buf[0..len) holds connection @conn's whole reply. */
        bool (*reply_done)(void *ctx, unsigned conn, const char *buf, size_t len);
        void *ctx;
};

#define LGEN_MAX_SERVER 64

/* Where a server and its client run: CPU lists for the server's threads
 * and for the client thread. */
struct lgen_place {
        unsigned workers;
        int cpus[LGEN_MAX_SERVER]; /* server thread i's CPU */
        char server_cpus[256];     /* the same as a list, "1" or "0,1" */
        char client_cpus[256];
        bool apart;                /* the client on a CPU of its own */
};

/*
 * Lay out @workers server threads on the CPUs this process may use:
 * @apart puts the client on the first CPU and the server on the next
 * ones, otherwise the client shares the server's CPUs. Returns 0, or
 * -ERANGE when there are too few CPUs for it (or over LGEN_MAX_SERVER).
 */
int lgen_place(unsigned workers, bool apart, struct lgen_place *out);

/* Parse CPU list @list ("0-1,3") into @out: 0, or -EINVAL / -ERANGE as
 * pc_cpulist_parse(). Any thread. */
int lgen_cpuset(const char *list, cpu_set_t *out);

/* What a run is asked to do. */
struct lgen_opts {
        uint16_t port;     /* on 127.0.0.1 */
        unsigned conns;    /* at most LGEN_MAX_CONNS */
        double seconds;
        const struct lgen_proto *p;
        const char *cpus;  /* CPU list the client thread runs on ("0", "0-1"); NULL: any */
        pid_t server_pid;  /* the server's process, whose CPU time is read */
};

/* What a run measured, over its timed part only. */
struct lgen_result {
        uint64_t done;       /* request/reply pairs completed */
        double p99_us;       /* 99th percentile request-to-whole-reply time */
        double server_cpu_s; /* CPU seconds the server used (user + system) */
        double client_cpu_s; /* CPU seconds the client thread used (the same) */
};

/*
 * Run o->conns connections against 127.0.0.1:o->port for o->seconds (all
 * connected and each with its first request sent before the clock starts).
 * Returns 0 or a negative errno (a connection failed, a reply outgrew
 * LGEN_BUF: -EPROTO, a bad CPU list: -EINVAL). p99 comes from a log-linear
 * histogram (within 1/32 of the value).
 */
int lgen_run(const struct lgen_opts *o, struct lgen_result *out);

#endif
