/* SPDX-License-Identifier: MIT */
/* The echo suite's peer: an epoll TCP echo server, one thread per worker,
 * each with its own SO_REUSEPORT listener on 127.0.0.1. */
#ifndef EPOLL_ECHO_H
#define EPOLL_ECHO_H

#include <stdint.h>

struct epoll_echo;

/* Start @nthreads threads serving a free port (*@port), thread i pinned to
 * CPU @cpus[i] (NULL: unpinned). 0 or -errno. */
int epoll_echo_start(unsigned nthreads, const int *cpus, uint16_t *port, struct epoll_echo **out);

/* Stop the threads, close everything, free @e. */
void epoll_echo_stop(struct epoll_echo *e);

#endif
