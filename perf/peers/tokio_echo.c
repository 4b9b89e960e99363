/* SPDX-License-Identifier: MIT */
/*
 * Runs perf/peers/tokio-echo (see its src/main.rs) as a child process
 * (peer_prog.h). The child prints "listening on PORT" on stdout once
 * bound; that line is all the handshake there is.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer_prog.h"
#include "tokio_echo.h"

#define START_TIMEOUT_MS 5000
#define MAX_WORKERS      1024

struct tokio_echo {
        pid_t pid;
};

static const struct peer_prog prog = {
        .name = "tokio-echo",
#ifdef PC_BENCH_TOKIO_DIR
        .dir = PC_BENCH_TOKIO_DIR,
#endif
        .var = "PERCORE_TOKIO_ECHO",
        .left_out = "ThreadSanitizer",
};

static char version_buf[32];

bool tokio_echo_available(const char **why)
{
        return peer_prog_available(&prog, why);
}

const char *tokio_echo_version(void)
{
        const char *bin = peer_prog_path(&prog);
        char line[128];
        pid_t pid;
        int fd;

        if (version_buf[0])
                return version_buf;
        snprintf(version_buf, sizeof(version_buf), "unknown");
        if (bin == NULL || peer_prog_spawn((char *[]){(char *)bin, "--version", NULL}, NULL, &fd,
                                           &pid))
                return version_buf;
        /* "tokio-echo (tokio 1.24.2)" */
        if (peer_prog_read_line(fd, line, sizeof(line), START_TIMEOUT_MS) == 0) {
                const char *v = strstr(line, "(tokio ");
                if (v && strchr(v, ')'))
                        snprintf(version_buf, sizeof(version_buf), "%.*s",
                                 (int)(strchr(v, ')') - v - 7), v + 7);
        }
        close(fd);
        peer_prog_reap(pid, true);
        return version_buf;
}

int tokio_echo_start(unsigned workers, const char *cpus, uint16_t *port,
                     struct tokio_echo **out)
{
        const char *bin = peer_prog_path(&prog);
        char nbuf[16], line[64];
        char *argv[8];
        struct tokio_echo *t;
        unsigned p;
        int rc, fd, n = 0;

        if (workers == 0 || workers > MAX_WORKERS)
                return -EINVAL;
        if (bin == NULL)
                return -ENOENT;
        t = calloc(1, sizeof(*t));
        if (t == NULL)
                return -ENOMEM;
        snprintf(nbuf, sizeof(nbuf), "%u", workers);
        argv[n++] = (char *)bin;
        argv[n++] = "--port";
        argv[n++] = "0";
        argv[n++] = "--workers";
        argv[n++] = nbuf;
        if (cpus) {
                argv[n++] = "--cpus";
                argv[n++] = (char *)cpus;
        }
        argv[n] = NULL;
        rc = peer_prog_spawn(argv, NULL, &fd, &t->pid);
        if (rc) {
                free(t);
                return rc;
        }
        rc = peer_prog_read_line(fd, line, sizeof(line), START_TIMEOUT_MS);
        close(fd);
        if (rc == 0 && (sscanf(line, "listening on %u", &p) != 1 || p == 0 || p > 65535))
                rc = -EPROTO;
        if (rc) {
                /* Exit status 2 is the child's word for bad arguments. */
                int status = peer_prog_reap(t->pid, rc != -ECHILD);

                if (rc == -ECHILD && WIFEXITED(status) && WEXITSTATUS(status) == 2)
                        rc = -EINVAL;
                free(t);
                return rc;
        }
        *port = (uint16_t)p;
        *out = t;
        return 0;
}

int tokio_echo_pid(const struct tokio_echo *t)
{
        return (int)t->pid;
}

void tokio_echo_stop(struct tokio_echo *t)
{
        peer_prog_reap(t->pid, true);
        free(t);
}
