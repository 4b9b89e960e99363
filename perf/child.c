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
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "lgen.h"

const char *child_app_path(const char *name, const char *var)
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
        snprintf(path, sizeof(path), "%s/../apps/%s", dirname(self), name);
        return path;
}

pid_t child_spawn(char *const argv[], const char *const env[], const char *cpus)
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
                        dup2(null, 1);
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

void child_stop(pid_t pid)
{
        int status;

        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
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
