/* SPDX-License-Identifier: MIT */
/*
 * The bench's own TCP load generator: a fixed set of loopback
 * connections, one request in flight on each (ping-pong), shared out over
 * one or more client threads, each driving its own with one io_uring
 * (batched submissions: one system call per batch of replies, not three
 * per request). Over loopback the kernel's TCP work falls on both ends, so
 * a client thread costs about what the leanest server's thread does per
 * request, and with a CPU to itself it can be what bounds a run (the
 * client's CPU is reported for that): on a machine with CPUs to spare a
 * run gives the client as many threads as it gives the server CPUs. A
 * protocol says what a request is and when a reply is whole.
 */
#ifndef PC_BENCH_LGEN_H
#define PC_BENCH_LGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sched.h>
#include <sys/types.h>

#define LGEN_MAX_CONNS 256
#define LGEN_MAX_THREADS 64
#define LGEN_CONNS 64 /* connections of a run with one or two client threads */
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
 * and for the client's. */
struct lgen_place {
        unsigned workers;
        int cpus[LGEN_MAX_SERVER]; /* server thread i's CPU */
        char server_cpus[256];     /* the same as a list, "1" or "0,1" */
        char client_cpus[256];     /* the client's own CPUs (apart), or the server's */
        unsigned client_threads;   /* one per own CPU (apart), one per two server CPUs */
        unsigned conns;            /* LGEN_CONNS, or 32 a client thread past two */
        bool apart;                /* the client on CPUs of its own */
        /* percore's server runs PERCORE_OVERPROVISIONED=1: the client shares
         * its CPUs (not apart), the case that switch is for */
        bool overprovisioned;
};

/*
 * Lay out @workers server threads on the CPUs this process may use:
 * @apart gives the client the first CPUs, as many as the server gets
 * where there are enough (at least one), with a thread pinned to each,
 * and the server the next ones; otherwise the client's threads, one per
 * two workers (at least one), share the server's CPUs. A run keeps
 * LGEN_CONNS connections while the client has one or two threads, and 32
 * a thread past that (a client thread's share stays what it was on two).
 * Returns 0, or -ERANGE when there are too few CPUs for it (or over
 * LGEN_MAX_SERVER).
 */
int lgen_place(unsigned workers, bool apart, struct lgen_place *out);

/* lgen_place() on the CPUs @cpus[0..n) (in order) rather than this
 * process's: the same returns. Pure; any thread. */
int lgen_layout(const int *cpus, unsigned n, unsigned workers, bool apart,
                struct lgen_place *out);

/*
 * Append case @kase's layout to @json (members of a JSON object, each
 * "KASE/WORKERS": {server and client CPUs, client threads, connections,
 * whether percore runs overprovisioned}, comma-separated) and to @text (a
 * line each, for under the table; the suite says which cases run
 * overprovisioned in a line of its own, which keeps these short):
 * what a suite passes to bench_info() so a run on another machine says
 * what its client was. Either stops short rather than overflow its
 * @len. Pure; any thread.
 */
void lgen_place_note(const struct lgen_place *k, const char *kase, char *json,
                     size_t jlen, char *text, size_t tlen);

/* Parse CPU list @list ("0-1,3") into @out: 0, or -EINVAL / -ERANGE as
 * pc_cpulist_parse(). Any thread. */
int lgen_cpuset(const char *list, cpu_set_t *out);

/* What a run is asked to do. */
struct lgen_opts {
        uint16_t port;     /* on 127.0.0.1 */
        unsigned conns;    /* at most LGEN_MAX_CONNS */
        double seconds;
        const struct lgen_proto *p;
        const char *cpus;  /* CPUs of the client's threads ("0", "0-1"); NULL: any */
        unsigned threads;  /* client threads, the connections dealt out in turn (0: 1) */
        bool pin_each;     /* thread i on the list's i-th CPU alone, not the whole list */
        pid_t server_pid;  /* the server's process, whose CPU time is read */
};

/* What a run measured, over its timed part only. */
struct lgen_result {
        uint64_t done;       /* request/reply pairs completed */
        double p99_us;       /* 99th percentile request-to-whole-reply time */
        double server_cpu_s; /* CPU seconds the server used (user + system) */
        double client_cpu_s; /* CPU seconds the client's threads used (the same) */
};

/*
 * Run o->conns connections against 127.0.0.1:o->port for o->seconds (all
 * connected and each with its first request sent, on every client thread,
 * before the clock starts). Connection i belongs to thread i % threads;
 * the protocol sees i, so its per-connection state is never shared by two
 * threads. Returns 0 or a negative errno (a connection failed, a reply
 * outgrew LGEN_BUF: -EPROTO, a bad CPU list: -EINVAL, more threads than
 * LGEN_MAX_THREADS or than connections: -ERANGE). p99 comes from a
 * log-linear histogram (within 1/32 of the value) over every thread's
 * requests. Call from one thread at a time.
 */
int lgen_run(const struct lgen_opts *o, struct lgen_result *out);

#endif
