/* SPDX-License-Identifier: MIT */
/*
 * tcp: TCP echo, 64 connections each sending 64 bytes and waiting for the
 * whole echo before the next (the echo suite's shape), per server core,
 * with percore's own TCP over DPDK beside kernel TCP. The client is
 * percore-tcpload (tcpload.c), one program written on percore's TCP API,
 * on one worker pinned to a CPU of its own; the server has one worker on
 * the next CPU. Sides, alternated round by round:
 *
 *   tpc          pc-echo --backend dpdk, on net_memif (the server end of a
 *                shared-memory link), its client percore-tcpload --backend
 *                dpdk on the client end: two percore processes, each with
 *                its own TCP, nothing of the kernel's on the data path;
 *   base:kernel  pc-echo on the kernel backend (io_uring), over loopback,
 *                the same client on kernel sockets;
 *   peer:tokio   Tokio's echo server (perf/peers/tokio-echo), one pinned
 *                worker, the same client on kernel sockets.
 *
 * What memif costs that a NIC would not: a copy of every frame into and
 * out of the shared rings on both ends (memif's copy mode) and the peer's
 * polling of the same rings; a NIC would DMA instead. What it saves: no
 * wire, no interrupt, a 64-byte frame crosses in a cache line or two. The
 * kernel sides' loopback, for its part, runs the receiver's protocol work
 * in the sender's softirq, so part of the server's cost lands on the
 * client's CPU: requests per server CPU-second flatters them, which is why
 * the headline is requests per second of one server core.
 *
 * PERCORE_TCPLOAD names the client (default: beside the bench),
 * PERCORE_ECHO the server. The DPDK side needs 2 CPUs and a DPDK build
 * with net_memif; without them it is reported skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "lgen.h"
#include "peers/tokio_echo.h"

#define CONNS "64"
#define REQ "64"
#define SERVER_ADDR "10.77.0.1"
#define CLIENT_ADDR "10.77.0.2"
#define TCP_PORT "7007"
#define OUT_MAX 4096

static unsigned seq;

#if defined(__SANITIZE_THREAD__)
/*
 * Under ThreadSanitizer, DPDK 22.11's memif PMD races with itself: at
 * rte_eal_cleanup() it closes the control socket and eventfds that its
 * own interrupt thread (eal-intr-thread) still polls, with nothing
 * between them; TSan (exit 66) stopped every run there. Those races are
 * the PMD's, not ours: the memif processes get a suppression for that
 * library alone, in a file the suite writes once per run.
 */
static char tsan_env[1200], tsan_supp[64];

static const char *memif_tsan(void)
{
        const char *cur = getenv("TSAN_OPTIONS");
        FILE *f;

        if (tsan_env[0])
                return tsan_env;
        snprintf(tsan_supp, sizeof(tsan_supp), "/tmp/percore-bench-memif-%d.supp", (int)getpid());
        f = fopen(tsan_supp, "w");
        if (f == NULL)
                return NULL;
        fputs("race:librte_net_memif.so\n", f);
        fclose(f);
        snprintf(tsan_env, sizeof(tsan_env), "TSAN_OPTIONS=%s%ssuppressions=%s",
                 cur ? cur : "", cur && *cur ? ":" : "", tsan_supp);
        return tsan_env;
}

static void memif_tsan_done(void)
{
        if (tsan_env[0])
                unlink(tsan_supp);
        tsan_env[0] = '\0';
}
#else
static const char *memif_tsan(void)
{
        return NULL;
}

static void memif_tsan_done(void)
{
}
#endif

/* Whether the abstract unix socket @name is bound (DPDK's memif listens on
 * an abstract socket by default). */
static bool abstract_bound(const char *name)
{
        char line[512];
        size_t n = strlen(name);
        bool found = false;
        FILE *f = fopen("/proc/net/unix", "r");

        if (f == NULL)
                return false;
        while (!found && fgets(line, sizeof(line), f)) {
                char *at = strchr(line, '@');
                found = at && strncmp(at + 1, name, n) == 0 &&
                        (at[1 + n] == '\n' || at[1 + n] == '\0' || at[1 + n] == ' ');
        }
        fclose(f);
        return found;
}

static bool proc_alive(pid_t pid)
{
        return waitpid(pid, NULL, WNOHANG) == 0;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
}

/*
 * Run the client with @args after the common ones, its workers on @cpus,
 * @eal its EAL arguments (NULL: kernel backend), against server @pid; read
 * its line and record the extras. Returns requests per second or -errno.
 */
static double client_run(const struct bench_opts *o, const char *cpus, const char *eal,
                         const char *addr, const char *port, pid_t server)
{
        char dur[32], spid[32], cpusv[300], ealv[600], out[OUT_MAX];
        const char *env[] = {cpusv, "PERCORE_LOG=warn", eal ? ealv : NULL,
                             eal ? memif_tsan() : NULL, NULL};
        const char *tool = child_tool_path("percore-tcpload", "PERCORE_TCPLOAD");
        int fd, status;
        long limit = (long)(o->duration * 1000) + 20000;
        pid_t pid;

        if (access(tool, X_OK) != 0) {
                bench_progress("tcp: %s not found", tool);
                return -ENOTSUP;
        }
        snprintf(dur, sizeof(dur), "%g", o->duration);
        snprintf(spid, sizeof(spid), "%d", (int)server);
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", cpus);
        if (eal)
                snprintf(ealv, sizeof(ealv), "PERCORE_EAL_ARGS=%s", eal);
        char *argv[] = {(char *)tool, "--backend", eal ? "dpdk" : "kernel", "-a", (char *)addr,
                        "-p", (char *)port, "-c", CONNS, "-s", REQ, "-d", dur, "-w", "0.3",
                        "--server-pid", spid, eal ? "-l" : NULL, CLIENT_ADDR, NULL};
        pid = child_spawn_read(argv, env, cpus, &fd);
        if (pid < 0)
                return pid;
        status = child_collect(pid, fd, out, sizeof(out), limit, NULL);
        if (status == -ETIMEDOUT)
                bench_progress("tcp: the client ran past %ld ms; stopped", limit);
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            !strstr(out, "tcpload: ")) {
                bench_progress("tcp: the client failed (status %d)", status);
                return -EIO;
        }
        double rps = child_field(out, "req_per_sec="), cpu = child_field(out, "server_cpu_s=");
        bench_extra("p99_us", "us", true, child_field(out, "p99_us="));
        if (cpu > 0)
                bench_extra("requests_per_server_cpu_sec", "req/cpu-s", false,
                            child_field(out, "requests=") / cpu);
        return rps;
}

/* pc-echo on DPDK over net_memif, and percore-tcpload on the other end. */
static double dpdk_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *ctx)
{
        const struct lgen_place *k = ctx;
        char sock[96], prefix[64], eal[600], ceal[600], cpusv[300];
        const char *env[] = {cpusv, "PERCORE_LOG=warn", eal, memif_tsan(), NULL};
        double v;
        pid_t pid;

        (void)mode;
        *workers = 1;
        /* The memif socket is abstract: nothing on disk. Each EAL's runtime
         * files are removed after it exits (--in-memory would need none,
         * but 22.11 refuses it beside --no-huge, which implies legacy
         * memory). */
        snprintf(sock, sizeof(sock), "/run/percore-bench-memif-%d-%u", (int)getpid(), seq);
        snprintf(prefix, sizeof(prefix), "pcb_tcp_%d_%u", (int)getpid(), seq++);
        snprintf(eal, sizeof(eal),
                 "PERCORE_EAL_ARGS=--no-huge --no-pci -m 512 --file-prefix %s_s "
                 "--log-level=lib.eal:error --vdev net_memif0,role=server,socket=%s,"
                 "mac=02:70:63:00:00:01",
                 prefix, sock);
        snprintf(ceal, sizeof(ceal),
                 "--no-huge --no-pci -m 512 --file-prefix %s_c --log-level=lib.eal:error "
                 "--vdev net_memif0,role=client,socket=%s,mac=02:70:63:00:00:02",
                 prefix, sock);
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", k->server_cpus);
        char *argv[] = {(char *)child_app_path("pc-echo", "PERCORE_ECHO"), "--backend", "dpdk",
                        "-l", SERVER_ADDR, "-p", TCP_PORT, "-t", "1", NULL};
        pid = child_spawn(argv, env, k->server_cpus);
        if (pid < 0)
                return pid;
        for (int i = 0; !abstract_bound(sock); i++) {
                if (!proc_alive(pid)) {
                        child_dpdk_cleanup(prefix, "_s");
                        bench_progress("tcp: pc-echo on DPDK exited at start (a DPDK build "
                                       "without net_memif?)");
                        return -ENOTSUP;
                }
                if (i == 200) {
                        child_stop(pid);
                        child_dpdk_cleanup(prefix, "_s");
                        bench_progress("tcp: pc-echo's memif socket did not appear in 10 s");
                        return -ETIMEDOUT;
                }
                sleep_ms(50);
        }
        v = client_run(o, k->client_cpus, ceal, SERVER_ADDR, TCP_PORT, pid);
        child_stop(pid);
        child_dpdk_cleanup(prefix, "_s");
        child_dpdk_cleanup(prefix, "_c");
        return v;
}

static double kernel_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        const struct lgen_place *k = ctx;
        char ports[16], cpusv[300];
        const char *env[] = {cpusv, "PERCORE_LOG=warn", NULL};
        int port = child_free_port(), rc;
        double v;
        pid_t pid;

        (void)mode;
        *workers = 1;
        if (port < 0)
                return port;
        snprintf(ports, sizeof(ports), "%d", port);
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", k->server_cpus);
        char *argv[] = {(char *)child_app_path("pc-echo", "PERCORE_ECHO"), "-p", ports, "-t", "1",
                        NULL};
        pid = child_spawn(argv, env, NULL);
        if (pid < 0)
                return pid;
        rc = child_wait_port((uint16_t)port, pid);
        v = rc ? rc : client_run(o, k->client_cpus, NULL, "127.0.0.1", ports, pid);
        child_stop(pid);
        return v;
}

static double tokio_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct lgen_place *k = ctx;
        struct tokio_echo *t;
        const char *why;
        char ports[16];
        uint16_t port;
        double v;
        int rc;

        (void)mode;
        *workers = 1;
        if (!tokio_echo_available(&why)) {
                bench_progress("tcp: peer:tokio not built: %s", why);
                return -ENOTSUP;
        }
        rc = tokio_echo_start(1, k->server_cpus, &port, &t);
        if (rc)
                return rc;
        snprintf(ports, sizeof(ports), "%u", port);
        v = client_run(o, k->client_cpus, NULL, "127.0.0.1", ports, tokio_echo_pid(t));
        tokio_echo_stop(t);
        return v;
}

int suite_tcp(const struct bench_opts *o)
{
        static struct lgen_place k;
        int rc;
        struct bench_side sides[] = {
                {"tpc", PC_MODE_TPC, dpdk_run, &k},
                {"base:kernel", PC_MODE_TPC, kernel_run, &k},
                {"peer:tokio", PC_MODE_TPC, tokio_run, &k},
        };

        if (lgen_place(1, true, &k)) {
                bench_progress("tcp/echo64: skipped: needs 2 CPUs (client and server apart)");
                return 0;
        }
        bench_info("tcp",
                   "{\"client\": \"percore-tcpload, 1 worker\", \"link\": \"net_memif (copy "
                   "mode) for tpc, loopback for the kernel sides\"}",
                   "percore-tcpload (percore's TCP API) drives every side from a CPU\n"
                   "  of its own; tpc is pc-echo on DPDK over net_memif (copy mode),\n"
                   "  the others pc-echo's kernel backend and Tokio over loopback");
        rc = bench_compare(o, "tcp", "echo64", "requests_per_sec", "req/s", false, sides, 3);
        memif_tsan_done();
        return rc;
}
