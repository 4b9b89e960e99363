/* SPDX-License-Identifier: MIT */
/* The echo suite's Tokio peer: perf/peers/tokio-echo, a separate Rust
 * program built by build_tokio.sh, run as a child process. The functions
 * here keep static state (the reason and version text) and are meant for
 * the bench's main thread. */
#ifndef TOKIO_ECHO_H
#define TOKIO_ECHO_H

#include <stdbool.h>
#include <stdint.h>

struct tokio_echo;

/* Whether the Tokio peer was built; if not, *@why names the reason (from
 * the build's status file), valid until the next call. The binary is
 * $PERCORE_TOKIO_ECHO if set, else the one the build made. */
bool tokio_echo_available(const char **why);

/* The Tokio version the binary was built with, e.g. "1.24.2", or
 * "unknown". Asks the binary itself (tokio-echo --version), once. */
const char *tokio_echo_version(void);

/* Start the Tokio echo server as a child process with @workers worker
 * threads pinned round-robin to @cpus (a comma list such as "1" or "0,1";
 * NULL leaves them unpinned, on the CPUs the calling thread may use), on a
 * free port of 127.0.0.1 (*@port). Waits
 * until it listens. 0, -EINVAL (bad arguments), -ENOENT (no binary),
 * -ETIMEDOUT (no "listening" line in time), -ECHILD (it exited first), or
 * another -errno. */
int tokio_echo_start(unsigned workers, const char *cpus, uint16_t *port,
                     struct tokio_echo **out);

/* The child's pid, for reading its CPU time from /proc. */
int tokio_echo_pid(const struct tokio_echo *t);

/* SIGTERM the child, wait for it, free @t. */
void tokio_echo_stop(struct tokio_echo *t);

#endif
