/* SPDX-License-Identifier: MIT */
/*
 * Peer programs run as child processes; see peer_prog.h. A child's one
 * handshake is a line on its stdout, read through a pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "peer_prog.h"

extern char **environ;

static char what_buf[256];

const char *peer_prog_path(const struct peer_prog *p)
{
        static char path[4096];
        const char *env = getenv(p->var);

        if (env && *env)
                return env;
        if (p->dir == NULL)
                return NULL;
        snprintf(path, sizeof(path), "%s/%s", p->dir, p->name);
        return path;
}

bool peer_prog_available(const struct peer_prog *p, const char **what)
{
        const char *bin = peer_prog_path(p), *env = getenv(p->var);
        char path[4096], line[sizeof(what_buf)] = "";
        FILE *f;

        *what = what_buf;
        if (bin == NULL) {
                snprintf(what_buf, sizeof(what_buf), "not part of this build (%s)", p->left_out);
                return false;
        }
        if (env && *env) {
                if (access(bin, X_OK) == 0) {
                        snprintf(what_buf, sizeof(what_buf), "%s=%.200s", p->var, bin);
                        return true;
                }
                snprintf(what_buf, sizeof(what_buf), "%s=%.200s: %s", p->var, bin,
                         strerror(errno));
                return false;
        }
        snprintf(path, sizeof(path), "%s/%s.status", p->dir, p->name);
        f = fopen(path, "r");
        if (f == NULL) {
                snprintf(what_buf, sizeof(what_buf), "no %s.status (not built yet)", p->name);
                return false;
        }
        if (fgets(line, sizeof(line), f) == NULL)
                line[0] = '\0';
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "skipped: ", 9) == 0) {
                snprintf(what_buf, sizeof(what_buf), "%s", line + 9);
                return false;
        }
        if (strncmp(line, "built: ", 7) != 0) {
                snprintf(what_buf, sizeof(what_buf), "unreadable %s.status", p->name);
                return false;
        }
        if (access(bin, X_OK) != 0) {
                snprintf(what_buf, sizeof(what_buf), "%.200s: %s", bin, strerror(errno));
                return false;
        }
        snprintf(what_buf, sizeof(what_buf), "%s", line + 7);
        return true;
}

/* environ with the settings of @add in place of those of the same names. */
static char **env_with(const char *const add[])
{
        size_t n = 0, m = 0, k = 0;
        char **e;

        while (environ[n])
                n++;
        while (add[m])
                m++;
        e = malloc((n + m + 1) * sizeof(*e));
        if (e == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool replaced = false;

                for (size_t j = 0; j < m && !replaced; j++) {
                        size_t len = strcspn(add[j], "=");

                        replaced = strncmp(environ[i], add[j], len) == 0 &&
                                   environ[i][len] == '=';
                }
                if (!replaced)
                        e[k++] = environ[i];
        }
        for (size_t j = 0; j < m; j++)
                e[k++] = (char *)add[j];
        e[k] = NULL;
        return e;
}

/* The bench may block signals in its threads; the child starts with none
 * blocked and SIGTERM at its default, so that a stop can end it. */
int peer_prog_spawn(char *const argv[], const char *const env[], int *rfd, pid_t *pid)
{
        const char *log = getenv("PERCORE_LOG");
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, term;
        char **envp = environ;
        int p[2], rc;

        if (env && (envp = env_with(env)) == NULL)
                return -ENOMEM;
        if (pipe2(p, O_CLOEXEC)) {
                rc = -errno;
                if (envp != environ)
                        free(envp);
                return rc;
        }
        sigemptyset(&none);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (log == NULL || strcmp(log, "debug") != 0)
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
                                                 O_WRONLY, 0);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &term);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        rc = -posix_spawn(pid, argv[0], &fa, &attr, argv, envp);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        if (envp != environ)
                free(envp);
        close(p[1]);
        if (rc) {
                close(p[0]);
                return rc;
        }
        *rfd = p[0];
        return 0;
}

static long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int peer_prog_read_line(int fd, char *buf, size_t size, int timeout_ms)
{
        long deadline = now_ms() + timeout_ms;
        size_t len = 0;

        while (len + 1 < size) {
                struct pollfd pfd = {.fd = fd, .events = POLLIN};
                long left = deadline - now_ms();
                ssize_t r;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)left) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (pfd.revents == 0)
                        continue;
                r = read(fd, buf + len, 1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ECHILD;
                if (buf[len] == '\n')
                        break;
                len++;
        }
        buf[len] = '\0';
        return 0;
}

int peer_prog_reap(pid_t pid, bool kill_it)
{
        int status = 0;

        if (kill_it)
                kill(pid, SIGTERM);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return status;
}
