/* SPDX-License-Identifier: MIT */
/*
 * Runs perf/peers/tokio-echo (see its src/main.rs) as a child process.
 * The child prints "listening on PORT" on stdout once bound; that line,
 * read through a pipe, is all the handshake there is. Its stderr goes to
 * /dev/null unless PERCORE_LOG=debug.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tokio_echo.h"

#define START_TIMEOUT_MS 5000
#define MAX_WORKERS      1024

extern char **environ;

struct tokio_echo {
        pid_t pid;
};

static char why_buf[256];
static char version_buf[32];

static const char *binary(void)
{
        static char path[4096];
        const char *env = getenv("PERCORE_TOKIO_ECHO");

        if (env && *env)
                return env;
#ifdef PC_BENCH_TOKIO_DIR
        snprintf(path, sizeof(path), "%s/tokio-echo", PC_BENCH_TOKIO_DIR);
        return path;
#else
        (void)path;
        return NULL;
#endif
}

static long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Spawns @argv with stdout on a pipe (*@rfd) and stdin on /dev/null. The
 * bench may block signals in its threads; the child starts with none
 * blocked and SIGTERM at its default, so that stop can end it. */
static int spawn(char *const argv[], int *rfd, pid_t *pid)
{
        const char *log = getenv("PERCORE_LOG");
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, term;
        int p[2], rc;

        if (pipe2(p, O_CLOEXEC))
                return -errno;
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
        rc = -posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (rc) {
                close(p[0]);
                return rc;
        }
        *rfd = p[0];
        return 0;
}

/* Reads one line from @fd into @buf within @timeout_ms. 0, -ETIMEDOUT, or
 * -ECHILD when the pipe closes first (the child exited). */
static int read_line(int fd, char *buf, size_t size, int timeout_ms)
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

static void reap(pid_t pid, bool kill_it)
{
        if (kill_it)
                kill(pid, SIGTERM);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

bool tokio_echo_available(const char **why)
{
        const char *bin = binary();
        char line[sizeof(why_buf)] = "";
        FILE *f;

        *why = why_buf;
        if (bin == NULL) {
                snprintf(why_buf, sizeof(why_buf),
                         "not part of this build (ThreadSanitizer)");
                return false;
        }
        if (getenv("PERCORE_TOKIO_ECHO") && *getenv("PERCORE_TOKIO_ECHO")) {
                if (access(bin, X_OK) == 0)
                        return true;
                snprintf(why_buf, sizeof(why_buf), "PERCORE_TOKIO_ECHO=%.200s: %s", bin,
                         strerror(errno));
                return false;
        }
#ifdef PC_BENCH_TOKIO_DIR
        f = fopen(PC_BENCH_TOKIO_DIR "/tokio-echo.status", "r");
#else
        f = NULL;
#endif
        if (f == NULL) {
                snprintf(why_buf, sizeof(why_buf),
                         "no tokio-echo.status (not built yet)");
                return false;
        }
        if (fgets(line, sizeof(line), f) == NULL)
                line[0] = '\0';
        fclose(f);
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "skipped: ", 9) == 0) {
                snprintf(why_buf, sizeof(why_buf), "%s", line + 9);
                return false;
        }
        if (strncmp(line, "built: ", 7) != 0) {
                snprintf(why_buf, sizeof(why_buf), "unreadable tokio-echo.status");
                return false;
        }
        if (access(bin, X_OK) == 0)
                return true;
        snprintf(why_buf, sizeof(why_buf), "%.200s: %s", bin, strerror(errno));
        return false;
}

const char *tokio_echo_version(void)
{
        const char *bin = binary();
        char line[128];
        pid_t pid;
        int fd;

        if (version_buf[0])
                return version_buf;
        snprintf(version_buf, sizeof(version_buf), "unknown");
        if (bin == NULL || spawn((char *[]){(char *)bin, "--version", NULL}, &fd, &pid))
                return version_buf;
        /* "tokio-echo (tokio 1.24.2)" */
        if (read_line(fd, line, sizeof(line), START_TIMEOUT_MS) == 0) {
                const char *v = strstr(line, "(tokio ");
                if (v && strchr(v, ')'))
                        snprintf(version_buf, sizeof(version_buf), "%.*s",
                                 (int)(strchr(v, ')') - v - 7), v + 7);
        }
        close(fd);
        reap(pid, true);
        return version_buf;
}

int tokio_echo_start(unsigned workers, const char *cpus, uint16_t *port,
                     struct tokio_echo **out)
{
        const char *bin = binary();
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
        rc = spawn(argv, &fd, &t->pid);
        if (rc) {
                free(t);
                return rc;
        }
        rc = read_line(fd, line, sizeof(line), START_TIMEOUT_MS);
        close(fd);
        if (rc == 0 && (sscanf(line, "listening on %u", &p) != 1 || p == 0 || p > 65535))
                rc = -EPROTO;
        if (rc) {
                /* Exit status 2 is the child's word for bad arguments. */
                int status = 0;
                if (rc != -ECHILD)
                        kill(t->pid, SIGTERM);
                while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
                        ;
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
        reap(t->pid, true);
        free(t);
}
