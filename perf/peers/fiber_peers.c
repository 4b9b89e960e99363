/* SPDX-License-Identifier: MIT */
/* The fiber suite's peer programs; see fiber_peers.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiber_peers.h"
#include "peer_prog.h"
#include "peers.h"

#define RUN_SLACK_MS 10000 /* a child's start and exit, on top of its run */

/* Where the build put the programs; nowhere in a ThreadSanitizer build. */
#ifndef PC_BENCH_GO_DIR
#define PC_BENCH_GO_DIR NULL
#endif
#ifndef PC_BENCH_TOKIO_DIR
#define PC_BENCH_TOKIO_DIR NULL
#endif

static const struct peer_prog progs[] = {
        [FIBER_PEER_GO] = {"go-fiber", PC_BENCH_GO_DIR, "PERCORE_GO_FIBER", "ThreadSanitizer"},
        [FIBER_PEER_TOKIO] = {"tokio-fiber", PC_BENCH_TOKIO_DIR, "PERCORE_TOKIO_FIBER",
                              "ThreadSanitizer"},
};

/* Go's scheduler gets one P, as Tokio's current_thread runtime has one
 * thread that runs tasks. */
static const char *const go_env[] = {"GOMAXPROCS=1", NULL};

const char *fiber_peer_name(enum fiber_peer p)
{
        return p == FIBER_PEER_GO ? "peer:go" : "peer:tokio";
}

bool fiber_peer_available(enum fiber_peer p, const char **what)
{
        return peer_prog_available(&progs[p], what);
}

/* Start @argv on @cpu: the child takes the calling thread's CPU set. */
static int spawn_on(int cpu, char *const argv[], const char *const env[], int *fd,
                    pid_t *pid)
{
        cpu_set_t saved;
        int rc;

        if (cpu < 0)
                return peer_prog_spawn(argv, env, fd, pid);
        rc = peer_affinity_save(&saved);
        if (rc)
                return rc;
        rc = peer_pin_self(cpu);
        if (rc == 0)
                rc = peer_prog_spawn(argv, env, fd, pid);
        peer_affinity_restore(&saved);
        return rc;
}

double fiber_peer_run(enum fiber_peer p, const char *kase, int cpu, double seconds)
{
        const char *bin = peer_prog_path(&progs[p]);
        char secs[32], line[128], name[32];
        double ns;
        pid_t pid;
        int fd, rc, status;

        if (bin == NULL)
                return -ENOENT;
        snprintf(secs, sizeof(secs), "%.3f", seconds);
        char *argv[] = {(char *)bin, "--case", (char *)kase, "--seconds", secs, NULL};

        rc = spawn_on(cpu, argv, p == FIBER_PEER_GO ? go_env : NULL, &fd, &pid);
        if (rc)
                return rc;
        rc = peer_prog_read_line(fd, line, sizeof(line), (int)(seconds * 1000) + RUN_SLACK_MS);
        close(fd);
        status = peer_prog_reap(pid, rc != 0);
        if (rc)
                return rc;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -ECHILD;
        if (sscanf(line, "%31s %lf", name, &ns) != 2 || strcmp(name, kase) != 0 || !(ns > 0))
                return -EPROTO;
        return ns;
}
