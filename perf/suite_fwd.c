/* SPDX-License-Identifier: MIT */
/*
 * fwd: DPDK forwarding rate on one core, pc-fwd against dpdk-testpmd, in
 * alternated rounds, over the same pair of net_null ports, in the same
 * modes (io, macswap), both forwarding on CPU 1 with the same pool size and
 * burst. The EAL starts once per process, so every measurement is a child
 * process: the bench starts it, waits for the line saying forwarding
 * began, lets it run for the duration, stops it, and divides the packets
 * the child reports as received by the time between the two. pc-fwd is
 * stopped with SIGINT (its RX pollers stop at once); testpmd runs
 * interactive (-i) with commands on a pipe, "start" and "stop", since its
 * SIGINT path sleeps up to a second before the cores stop, which would
 * count packets outside the window. Start-up costs are outside the window
 * for both. Without dpdk-testpmd (or stdbuf) the peer is reported skipped.
 *
 * PERCORE_FWD names the pc-fwd binary (default: ../apps/pc-fwd beside
 * this executable), PERCORE_TESTPMD the testpmd one (default:
 * dpdk-testpmd on PATH).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define FWD_CPU "1"
#define FWD_MBUFS "8192"
#define START_TIMEOUT_MS 20000
#define OUT_MAX 65536

struct fwd_case {
        const char *mode; /* io, macswap */
        bool testpmd;
};

static char fwd_path[PATH_MAX];

static const char *find_fwd(void)
{
        const char *e = getenv("PERCORE_FWD");
        char self[PATH_MAX];
        ssize_t n;

        if (e && *e)
                return e;
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return NULL;
        self[n] = '\0';
        snprintf(fwd_path, sizeof(fwd_path), "%s/../apps/pc-fwd", dirname(self));
        return access(fwd_path, X_OK) == 0 ? fwd_path : NULL;
}

static const char *find_testpmd(void)
{
        const char *e = getenv("PERCORE_TESTPMD");

        return e && *e ? e : "dpdk-testpmd";
}

/* Read what the child wrote, appending to @buf; wait at most @ms (-1 =
 * until EOF). Returns false on EOF. */
static bool slurp(int fd, char *buf, size_t *len, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, ms) <= 0)
                return true;
        n = read(fd, buf + *len, OUT_MAX - 1 - *len);
        if (n <= 0)
                return false;
        *len += (size_t)n;
        buf[*len] = '\0';
        return true;
}

static uint64_t parse_u64_after(const char *hay, const char *needle)
{
        const char *p = strstr(hay, needle);

        return p ? strtoull(p + strlen(needle), NULL, 10) : 0;
}

static double fwd_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                      void *ctx)
{
        const struct fwd_case *c = ctx;
        static char out[OUT_MAX];
        char prefix[64], eal[512], fwdmode[64];
        const char *marker;
        double window = o->duration < 0.5 ? 0.5 : o->duration;
        struct timespec t0, t1, nap;
        size_t len = 0;
        uint64_t rx;
        int pfd[2], cfd[2], status, waited = 0;
        pid_t pid;

        (void)mode;
        if (c->testpmd && (!bench_on_path(find_testpmd()) || !bench_on_path("stdbuf"))) {
                bench_progress("fwd/%s: peer:testpmd needs %s and stdbuf, not found",
                               c->mode, find_testpmd());
                return -ENOTSUP;
        }
        snprintf(prefix, sizeof(prefix), "pc_bench_fwd_%d", (int)getpid());
        if (pipe(pfd) != 0)
                return -errno;
        if (pipe(cfd) != 0) {
                close(pfd[0]);
                close(pfd[1]);
                return -errno;
        }
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                dup2(cfd[0], 0);
                dup2(null, 2);
                dup2(pfd[1], 1);
                close(pfd[0]);
                close(cfd[1]);
                if (c->testpmd) {
                        snprintf(fwdmode, sizeof(fwdmode), "--forward-mode=%s", c->mode);
                        /* Line-buffered so the start line arrives at once. */
                        execlp("stdbuf", "stdbuf", "-oL", find_testpmd(), "--no-huge", "--no-pci",
                               "-m", "256", "--file-prefix", prefix, "--log-level=lib.eal:error",
                               "-l", "0," FWD_CPU, "--vdev", "net_null0", "--vdev", "net_null1",
                               "--", "-i", fwdmode, "--nb-cores=1",
                               "--total-num-mbufs=" FWD_MBUFS, "--burst=32", (char *)NULL);
                } else {
                        snprintf(eal, sizeof(eal),
                                 "--no-huge --no-pci -m 256 --file-prefix %s "
                                 "--log-level=lib.eal:error --vdev net_null0 --vdev net_null1",
                                 prefix);
                        setenv("PERCORE_WORKERS", "1", 1);
                        setenv("PERCORE_CPUS", FWD_CPU, 1);
                        setenv("PERCORE_LOG", "warn", 1);
                        unsetenv("PERCORE_EAL_ARGS");
                        execl(find_fwd(), "pc-fwd", "--eal", eal, "--mode", c->mode, "--mbufs",
                              FWD_MBUFS, "--burst", "32", (char *)NULL);
                }
                _exit(127);
        }
        close(pfd[1]);
        close(cfd[0]);
        signal(SIGPIPE, SIG_IGN);
        marker = c->testpmd ? "packet forwarding - ports=" : "pc-fwd: forwarding";
        out[0] = '\0';
        if (c->testpmd && write(cfd[1], "start\n", 6) != 6)
                waited = START_TIMEOUT_MS;
        while (strstr(out, marker) == NULL && waited < START_TIMEOUT_MS) {
                if (!slurp(pfd[0], out, &len, 100))
                        break;
                waited += 100;
        }
        if (strstr(out, marker) == NULL) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                close(pfd[0]);
                close(cfd[1]);
                fprintf(stderr, "percore-bench: fwd: %s did not start forwarding:\n%s\n",
                        c->testpmd ? "dpdk-testpmd" : "pc-fwd", out);
                return -EIO;
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        nap.tv_sec = (time_t)window;
        nap.tv_nsec = (long)((window - (double)nap.tv_sec) * 1e9);
        while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
                ;
        if (c->testpmd) {
                /* "stop" returns once the forwarding core has stopped. */
                if (write(cfd[1], "stop\n", 5) != 5)
                        kill(pid, SIGINT);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                while (strstr(out, "Accumulated forward statistics") == NULL &&
                       slurp(pfd[0], out, &len, 10000) && len < OUT_MAX - 1)
                        ;
                if (write(cfd[1], "quit\n", 5) != 5)
                        kill(pid, SIGINT);
        } else {
                kill(pid, SIGINT);
                clock_gettime(CLOCK_MONOTONIC, &t1);
        }
        while (slurp(pfd[0], out, &len, -1) && len < OUT_MAX - 1)
                ;
        close(pfd[0]);
        close(cfd[1]);
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "percore-bench: fwd: child failed (status %d):\n%s\n", status,
                        out);
                return -EIO;
        }
        if (c->testpmd) {
                const char *acc = strstr(out, "Accumulated forward statistics");
                rx = acc ? parse_u64_after(acc, "RX-packets: ") : 0;
        } else {
                rx = parse_u64_after(out, "pc-fwd: total rx=");
        }
        if (rx == 0) {
                fprintf(stderr, "percore-bench: fwd: no packet count in:\n%s\n", out);
                return -EIO;
        }
        *workers = 1;
        return (double)rx / ((double)(t1.tv_sec - t0.tv_sec) +
                             (double)(t1.tv_nsec - t0.tv_nsec) / 1e9) / 1e6;
}

int suite_fwd(const struct bench_opts *o)
{
        static const struct fwd_case cases[][2] = {
                {{"io", false}, {"io", true}},
                {{"macswap", false}, {"macswap", true}},
        };
        int rc = 0;

        if (find_fwd() == NULL) {
                fprintf(stderr, "percore-bench: fwd: pc-fwd not found (built without DPDK? "
                                "set PERCORE_FWD)\n");
                return -ENOENT;
        }
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && rc == 0; i++) {
                const struct bench_side sides[] = {
                        {"tpc", PC_MODE_TPC, fwd_run, (void *)&cases[i][0]},
                        {"peer:testpmd", PC_MODE_TPC, fwd_run, (void *)&cases[i][1]},
                };
                rc = bench_compare(o, "fwd", cases[i][0].mode, "mpps_per_core", "Mpps", false,
                                   sides, 2);
        }
        return rc;
}
