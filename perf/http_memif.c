/* SPDX-License-Identifier: MIT */
/*
 * http's memif case ("memif-h1"), the tcp suite's shape for HTTP/1.1: one
 * server worker on a CPU, the client apart on another, percore-tcpload
 * --http as the client of every side: 64 keep-alive connections, each
 * sending "GET / HTTP/1.1" and waiting for the whole response (framed by
 * its Content-Length) before the next. Sides, alternated round by round:
 *
 *   tpc          pc-http --backend dpdk on net_memif (the server end of a
 *                shared-memory link), the client --backend dpdk on the
 *                other end: percore's own TCP on both, no kernel between;
 *   base:kernel  pc-http on the kernel backend over loopback, the client
 *                on kernel sockets;
 *   peer:nginx, peer:h2o  configured as in the other cases, over loopback,
 *                the same client on kernel sockets.
 *
 * Each reports requests per second, the client's p99 and requests per
 * server CPU-second (all the server's processes). memif copies every frame
 * into and out of its rings where a NIC would DMA (the tcp suite's note),
 * and loopback runs part of a kernel server's receive on the client's CPU,
 * so requests per CPU-second flatters the loopback sides.
 *
 * Skipped without 2 CPUs or percore-tcpload; the tpc side without pc-http
 * or a DPDK build with net_memif, and under ThreadSanitizer, where DPDK
 * 22.11's memif driver races with itself at exit (the tcp suite measures
 * it with a suppression).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "http_peers.h"
#include "http_suite.h"
#include "lgen.h"

#define CONNS "64"
#define SERVER_ADDR "10.77.1.1"
#define CLIENT_ADDR "10.77.1.2"
#define HTTP_PORT "8080"
#define OUT_MAX 4096

struct memif_side {
        int kind; /* -2: pc-http on DPDK, -1: on the kernel, else a peer */
        const struct lgen_place *place;
};

static unsigned seq;

static const char *tcpload_path(void)
{
        return child_tool_path("percore-tcpload", "PERCORE_TCPLOAD");
}

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

/*
 * percore-tcpload --http against @addr:@port from @pl's client CPU, @eal
 * its EAL arguments (NULL: the kernel backend), the server @server; record
 * the extras. Returns requests per second or -errno.
 */
static double tcpload_run(const struct bench_opts *o, const struct lgen_place *pl,
                          const char *eal, const char *addr, const char *port, pid_t server)
{
        char dur[32], spid[32], cpusv[300], ealv[600], out[OUT_MAX];
        const char *env[] = {cpusv, "PERCORE_LOG=warn", eal ? ealv : NULL, NULL};
        long limit = (long)(o->duration * 1000) + 20000;
        int fd, status;
        pid_t pid;

        snprintf(dur, sizeof(dur), "%g", o->duration);
        snprintf(spid, sizeof(spid), "%d", (int)server);
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", pl->client_cpus);
        if (eal)
                snprintf(ealv, sizeof(ealv), "PERCORE_EAL_ARGS=%s", eal);
        char *argv[] = {(char *)tcpload_path(), "--http", "--backend", eal ? "dpdk" : "kernel",
                        "-a", (char *)addr, "-p", (char *)port, "-c", CONNS, "-d", dur, "-w",
                        "0.3", "--server-pid", spid, eal ? "-l" : NULL, CLIENT_ADDR, NULL};
        pid = child_spawn_read(argv, env, pl->client_cpus, &fd);
        if (pid < 0)
                return pid;
        status = child_collect(pid, fd, out, sizeof(out), limit, NULL);
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            !strstr(out, "tcpload: ")) {
                bench_progress("http/memif-h1: percore-tcpload --http failed (status %d)",
                               status);
                return -EIO;
        }
        double cpu = child_field(out, "server_cpu_s=");

        bench_extra("p99_us", "us", true, child_field(out, "p99_us="));
        if (cpu > 0)
                bench_extra("requests_per_server_cpu_sec", "req/cpu-s", false,
                            child_field(out, "requests=") / cpu);
        return child_field(out, "req_per_sec=");
}

/* pc-http on DPDK over net_memif, the client on the other end. */
static double dpdk_run(const struct bench_opts *o, const struct lgen_place *pl)
{
        char sock[96], prefix[64], eal[600], ceal[600], cpusv[300];
        const char *env[] = {cpusv, "PERCORE_LOG=warn", eal, NULL};
        const struct timespec pause = {0, 50000000};
        double v;
        pid_t pid;

#if defined(__SANITIZE_THREAD__)
        (void)o;
        (void)pl;
        bench_progress("http/memif-h1 tpc skipped: memif under ThreadSanitizer");
        return -ENOTSUP;
#endif
        snprintf(sock, sizeof(sock), "/run/percore-bench-http-%d-%u", (int)getpid(), seq);
        snprintf(prefix, sizeof(prefix), "pcb_http_%d_%u", (int)getpid(), seq++);
        snprintf(eal, sizeof(eal),
                 "PERCORE_EAL_ARGS=--no-huge --no-pci -m 512 --file-prefix %s_s "
                 "--log-level=lib.eal:error --vdev net_memif0,role=server,socket=%s,"
                 "mac=02:70:63:00:01:01",
                 prefix, sock);
        snprintf(ceal, sizeof(ceal),
                 "--no-huge --no-pci -m 512 --file-prefix %s_c --log-level=lib.eal:error "
                 "--vdev net_memif0,role=client,socket=%s,mac=02:70:63:00:01:02",
                 prefix, sock);
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", pl->server_cpus);
        char *argv[] = {(char *)http_pc_path(), "--backend", "dpdk", "-l", SERVER_ADDR, "-p",
                        HTTP_PORT, "-t", "1", NULL};
        pid = child_spawn(argv, env, pl->server_cpus);
        if (pid < 0)
                return pid;
        for (int i = 0; !abstract_bound(sock); i++) {
                if (waitpid(pid, NULL, WNOHANG) != 0) {
                        child_dpdk_cleanup(prefix, "_s");
                        bench_progress("http/memif-h1 tpc skipped: pc-http on DPDK exited at "
                                       "start (a DPDK build without net_memif?)");
                        return -ENOTSUP;
                }
                if (i == 200) {
                        child_stop(pid);
                        child_dpdk_cleanup(prefix, "_s");
                        bench_progress("http/memif-h1: pc-http's memif socket did not appear "
                                       "in 10 s");
                        return -ETIMEDOUT;
                }
                nanosleep(&pause, NULL);
        }
        v = tcpload_run(o, pl, ceal, SERVER_ADDR, HTTP_PORT, pid);
        child_stop(pid);
        child_dpdk_cleanup(prefix, "_s");
        child_dpdk_cleanup(prefix, "_c");
        return v;
}

static double memif_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                        void *ctx)
{
        const struct memif_side *x = ctx;
        const struct lgen_place *pl = x->place;
        char ports[16];
        double v;
        int rc;

        (void)mode;
        *workers = 1;
        if (x->kind < 0 && access(http_pc_path(), X_OK) != 0) {
                bench_progress("http/memif-h1 %s skipped: pc-http not built (%s)",
                               x->kind == -2 ? "tpc" : "base:kernel", http_pc_path());
                return -ENOTSUP;
        }
        if (x->kind == -2)
                return dpdk_run(o, pl);
        if (x->kind == -1) {
                int port = child_free_port();
                pid_t pid;

                if (port < 0)
                        return port;
                pid = http_pc_spawn(pl, PC_MODE_TPC, (uint16_t)port);
                if (pid < 0)
                        return pid;
                snprintf(ports, sizeof(ports), "%d", port);
                rc = child_wait_port((uint16_t)port, pid);
                v = rc ? rc : tcpload_run(o, pl, NULL, "127.0.0.1", ports, pid);
                child_stop(pid);
                return v;
        }
        struct http_peer p;

        rc = http_peer_start((enum http_peer_kind)x->kind, pl, &p);
        if (rc)
                return rc;
        snprintf(ports, sizeof(ports), "%u", p.port);
        v = tcpload_run(o, pl, NULL, "127.0.0.1", ports, p.pid);
        http_peer_stop(&p);
        return v;
}

int http_memif_case(const struct bench_opts *o)
{
        static struct lgen_place pl;
        static struct memif_side x[4] = {{-2, &pl}, {-1, &pl}, {HTTP_NGINX, &pl},
                                         {HTTP_H2O, &pl}};
        const struct bench_side sides[] = {
                {"tpc", PC_MODE_TPC, memif_run, &x[0]},
                {"base:kernel", PC_MODE_TPC, memif_run, &x[1]},
                {"peer:nginx", PC_MODE_TPC, memif_run, &x[2]},
                {"peer:h2o", PC_MODE_TPC, memif_run, &x[3]},
        };

        if (lgen_place(1, true, &pl)) {
                bench_progress("http/memif-h1: skipped: needs 2 CPUs (client and server "
                               "apart)");
                return 0;
        }
        if (access(tcpload_path(), X_OK) != 0) {
                bench_progress("http/memif-h1: skipped: %s not found", tcpload_path());
                return 0;
        }
        return bench_compare(o, "http", "memif-h1", "requests_per_sec", "req/s", false, sides,
                             4);
}
