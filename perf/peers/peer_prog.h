/* SPDX-License-Identifier: MIT */
/*
 * Peers that are programs of their own (Rust, Go), built by a script that
 * never fails the build and run by the bench as child processes. The build
 * writes NAME.status beside the binary: "built: WHAT" (say "tokio 1.24.2")
 * or "skipped: WHY". Everything here keeps static buffers and is meant for
 * the bench's main thread.
 */
#ifndef PC_BENCH_PEER_PROG_H
#define PC_BENCH_PEER_PROG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct peer_prog {
        const char *name;     /* the binary, and NAME.status, in @dir */
        const char *dir;      /* where the build put them; NULL: left out */
        const char *var;      /* environment variable naming another binary */
        const char *left_out; /* why this build has no @dir */
};

/* The binary to run: $var when set and not empty, else dir/name, or NULL
 * when the build left the peer out. */
const char *peer_prog_path(const struct peer_prog *p);

/*
 * Whether @p can run. *@what then says what was built (the status file's
 * "built: " text, or "$var=PATH"); otherwise why not. Valid until the next
 * call.
 */
bool peer_prog_available(const struct peer_prog *p, const char **what);

/*
 * Start @argv with stdout on a pipe (*@rfd), stdin on /dev/null and stderr
 * on /dev/null unless PERCORE_LOG=debug; the "NAME=VALUE" settings of @env
 * (NULL-terminated, or NULL) replace or add to the environment. The child
 * starts with no signal blocked, SIGTERM at its default, and the calling
 * thread's CPU set. 0 or -errno.
 */
int peer_prog_spawn(char *const argv[], const char *const env[], int *rfd, pid_t *pid);

/* Read one line from @fd into @buf within @timeout_ms, without its
 * newline. 0, -ETIMEDOUT, or -ECHILD when the pipe closes first (the child
 * exited). */
int peer_prog_read_line(int fd, char *buf, size_t size, int timeout_ms);

/* SIGTERM @pid first if @kill_it, then reap it; returns its wait status. */
int peer_prog_reap(pid_t pid, bool kill_it);

#endif
