/* SPDX-License-Identifier: MIT */
/*
 * Servers the bench measures as child processes, the way their users run
 * them: percore's own apps (pc-echo, pc-kv) and the peers. Every server of
 * a suite runs this way, so each pays the same process switches against
 * the client and its CPU time is its process's alone.
 */
#ifndef PC_BENCH_CHILD_H
#define PC_BENCH_CHILD_H

#include <stdint.h>
#include <sys/types.h>

/* The path of percore app @name: $@var when set, else ../apps/@name
 * beside the bench. Main thread only (a static buffer). */
const char *child_app_path(const char *name, const char *var);

/* The path of the bench's tool @name (percore-tcpload): $@var when set,
 * else @name beside the bench. Main thread only (a static buffer). */
const char *child_tool_path(const char *name, const char *var);

/*
 * Start @argv[0] (a path, or a name looked up on PATH) with @argv, the
 * "NAME=VALUE" settings @env added to the environment (NULL-terminated, or
 * NULL), its whole process restricted to the CPU list @cpus (NULL: as the
 * bench), stdout and stderr to /dev/null. Returns the pid, or -errno.
 */
pid_t child_spawn(char *const argv[], const char *const env[], const char *cpus);

/* child_spawn(), but the child's stdout goes to a pipe whose read end is
 * *@fd (close-on-exec; the caller closes it). Returns the pid, or -errno. */
pid_t child_spawn_read(char *const argv[], const char *const env[], const char *cpus, int *fd);

/*
 * Read what child @pid (from child_spawn_read()) writes to @fd into @out,
 * NUL-terminated (past @cap - 1 bytes the rest is read and dropped), until
 * it closes its end or @limit_ms pass, when it is killed; then close @fd
 * and reap it. Returns its wait status, or -ETIMEDOUT when it was killed;
 * *@cpu_s (NULL: not wanted) gets the CPU seconds, user and system, it
 * used. Main thread.
 */
int child_collect(pid_t pid, int fd, char *out, size_t cap, long limit_ms, double *cpu_s);
/* The number after the first @name in @out (a child's report), or -1 when
 * @name is not there. */
double child_field(const char *out, const char *name);
/* Wait until something accepts on 127.0.0.1:@port, at most 5 s: 0,
 * -ECHILD (the child @pid exited first) or -ETIMEDOUT. */
int child_wait_port(uint16_t port, pid_t pid);

/* SIGTERM, then reap: a child not gone 5 s later gets SIGTERM once more,
 * then, 5 s after that, SIGKILL (each said on stderr). */
void child_stop(pid_t pid);

/* A free TCP port on 127.0.0.1 for a server that needs one named up
 * front (the kernel's choice of the moment), or -errno. */
int child_free_port(void);

/* Remove the runtime files (config, sockets) an EAL started with
 * --file-prefix @prefix@suffix left behind, once it exited. Any thread. */
void child_dpdk_cleanup(const char *prefix, const char *suffix);

#endif
