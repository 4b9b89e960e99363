/* SPDX-License-Identifier: MIT */
/*
 * The http suite's peers, nginx and h2o from Debian, each started as a
 * child process from a configuration written into a temporary directory
 * the way their users write one, and pinned to the server's CPUs like
 * percore's workers. http_peers.c holds both configurations, so a reader
 * checks their fairness in one file.
 */
#ifndef PC_BENCH_HTTP_PEERS_H
#define PC_BENCH_HTTP_PEERS_H

#include <stdint.h>
#include <sys/types.h>

struct lgen_place;

enum http_peer_kind { HTTP_NGINX, HTTP_H2O };

/* A running peer. */
struct http_peer {
        pid_t pid;        /* nginx's master, or h2o */
        uint16_t port;    /* HTTP/1.1 (h2o: and h2c) */
        uint16_t h2_port; /* h2c by prior knowledge (nginx: a listen of its own) */
        char dir[64];     /* its configuration, removed at stop */
};

/* The peer's program name (for PATH and messages). */
const char *http_peer_name(enum http_peer_kind kind);

/*
 * Start @kind with @place->workers workers on @place's server CPUs, on two
 * free loopback ports, and wait until both accept. Returns 0, -ENOTSUP
 * when it is not installed (said on stderr), or -errno (it exited at
 * start: -ECHILD). Main thread.
 */
int http_peer_start(enum http_peer_kind kind, const struct lgen_place *place,
                    struct http_peer *p);

/* Stop it (SIGTERM, as child_stop()) and remove its directory. */
void http_peer_stop(struct http_peer *p);

#endif
