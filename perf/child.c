/* SPDX-License-Identifier: MIT */
/* The bench's child-process servers; see child.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "lgen.h"

/* $@var when set, else @name in directory @rel of the bench's own. */
static const char *beside_bench(const char *rel, const char *name, const char *var)
{
        static char path[PATH_MAX + 64];
        char self[PATH_MAX];
        ssize_t n;

        if (getenv(var))
                return getenv(var);
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return name;
        self[n] = '\0';
        snprintf(path, sizeof(path), "%s/%s%s", dirname(self), rel, name);
        return path;
}

const char *child_app_path(const char *name, const char *var)
{
        return beside_bench("../apps/", name, var);
}

const char *child_tool_path(const char *name, const char *var)
{
        return beside_bench("", name, var);
}

/* child_spawn(), stdout to @out (-1: /dev/null like stderr). */
static pid_t spawn(char *const argv[], const char *const env[], const char *cpus, int out)
{
        cpu_set_t mask;
        pid_t pid;

        if (cpus) {
                int rc = lgen_cpuset(cpus, &mask);

                if (rc < 0)
                        return rc;
        }
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);

                if (null >= 0) {
                        dup2(out >= 0 ? out : null, 1);
                        dup2(null, 2);
                }
                for (unsigned i = 0; env && env[i]; i++)
                        putenv((char *)env[i]);
                if (cpus)
                        sched_setaffinity(0, sizeof(mask), &mask);
                execvp(argv[0], argv);
                _exit(127);
        }
        return pid;
}

pid_t child_spawn(char *const argv[], const char *const env[], const char *cpus)
{
        return spawn(argv, env, cpus, -1);
}

pid_t child_spawn_read(char *const argv[], const char *const env[], const char *cpus, int *fd)
{
        int p[2];
        pid_t pid;

        if (pipe2(p, O_CLOEXEC))
                return -errno;
        pid = spawn(argv, env, cpus, p[1]);
        close(p[1]);
        if (pid < 0)
                close(p[0]);
        else
                *fd = p[0];
        return pid;
}

int child_collect(pid_t pid, int fd, char *out, size_t cap, long limit_ms, double *cpu_s)
{
        struct timespec t0, t;
        struct rusage ru;
        size_t len = 0;
        bool killed = false;
        int status = 0;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                char scratch[512];
                long waited;
                ssize_t n;

                clock_gettime(CLOCK_MONOTONIC, &t);
                waited = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
                if (waited >= limit_ms) {
                        kill(pid, SIGKILL);
                        killed = true;
                        break;
                }
                if (poll(&p, 1, (int)(limit_ms - waited)) <= 0)
                        continue;
                if (len + 1 < cap)
                        n = read(fd, out + len, cap - 1 - len);
                else
                        n = read(fd, scratch, sizeof(scratch));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (len + 1 < cap)
                        len += (size_t)n;
        }
        if (cap)
                out[len] = '\0';
        close(fd);
        memset(&ru, 0, sizeof(ru));
        while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
                ;
        if (cpu_s)
                *cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
        return killed ? -ETIMEDOUT : status;
}

double child_field(const char *out, const char *name)
{
        const char *p = strstr(out, name);

        return p ? strtod(p + strlen(name), NULL) : -1;
}

int child_wait_port(uint16_t port, pid_t pid)
{
        for (int i = 0; i < 500; i++) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
                int fd = socket(AF_INET, SOCK_STREAM, 0), rc;
                struct timespec ts = {0, 10000000};

                sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
                close(fd);
                if (rc == 0)
                        return 0;
                if (waitpid(pid, NULL, WNOHANG) == pid)
                        return -ECHILD;
                nanosleep(&ts, NULL);
        }
        return -ETIMEDOUT;
}

/* Whether @pid was reaped within @ms milliseconds. */
static bool reaped_within(pid_t pid, int ms)
{
        const struct timespec ts = {.tv_nsec = 5000000};

        for (int i = 0; i <= ms / 5; i++) {
                pid_t r = waitpid(pid, NULL, WNOHANG);

                if (r == pid || (r < 0 && errno == ECHILD))
                        return true;
                nanosleep(&ts, NULL);
        }
        return false;
}

void child_stop(pid_t pid)
{
        /* A child still there 5 s after SIGTERM gets it once more, then
         * SIGKILL: a ThreadSanitizer build handles a signal that lands
         * while a fiber runs only when that fiber runs again, which an
         * idle server's fibers may never do (the second one lands on the
         * worker's own context, asleep in its ring, and is handled as
         * the wait returns). */
        for (int round = 0; round < 3; round++) {
                if (round)
                        fprintf(stderr,
                                "percore-bench: child %d still running 5 s after SIGTERM: "
                                "sending %s\n",
                                (int)pid, round == 1 ? "SIGTERM again" : "SIGKILL");
                kill(pid, round < 2 ? SIGTERM : SIGKILL);
                if (reaped_within(pid, 5000))
                        return;
        }
        waitpid(pid, NULL, 0);
}

int child_free_port(void)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t sl = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM, 0), port;

        if (fd < 0)
                return -errno;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
            getsockname(fd, (struct sockaddr *)&sa, &sl)) {
                port = -errno;
        } else {
                port = ntohs(sa.sin_port);
        }
        close(fd);
        return port;
}

void child_dpdk_cleanup(const char *prefix, const char *suffix)
{
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        char dir[PATH_MAX], path[PATH_MAX + 256];
        struct dirent *e;
        DIR *d;

        /* Where the EAL keeps them: /var/run/dpdk for root, else under
         * $XDG_RUNTIME_DIR (or /tmp). */
        if (geteuid() == 0)
                snprintf(dir, sizeof(dir), "/var/run/dpdk/%s%s", prefix, suffix);
        else
                snprintf(dir, sizeof(dir), "%s/dpdk/%s%s", xdg ? xdg : "/tmp", prefix, suffix);
        d = opendir(dir);
        if (d == NULL)
                return;
        while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                unlink(path);
        }
        closedir(d);
        rmdir(dir);
}
