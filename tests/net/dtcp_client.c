/* SPDX-License-Identifier: MIT */
/*
 * percore's TCP as the client of a kernel echo server (test_dtcp_kernel.sh):
 * DPDK's af_packet PMD on IFACE (two queue pairs, two workers), our
 * address OURS; every worker opens CONNS/2 connections to THEIRS:PORT,
 * writes its stream in pieces of varied size while the echo comes back,
 * checks every byte, and closes. Exit status 0 when every connection
 * ended cleanly with its whole stream echoed, 1 otherwise (with what
 * went wrong on stderr), 2 for bad arguments.
 *
 *   dtcp_client IFACE OURS THEIRS PORT CONNS
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore.h"
#include "pc_dpdk.h"

#define NW 2
#define MAX_CONNS 4096

struct cli {
        struct pc_conn *c;
        uint32_t id;
        uint64_t total, sent, echoed;
        unsigned writes;
        bool closed;
};

static struct pc_runtime *rt;
static struct pc_port *port;
static const char *theirs;
static unsigned tcp_port, nconns;
static struct cli cli[MAX_CONNS];
static _Atomic unsigned done, failures;
static _Atomic uint64_t verified;
static struct pc_timer watch;
static uint64_t deadline;

#define FAIL(...)                                                                               \
        do {                                                                                    \
                fprintf(stderr, "dtcp_client: " __VA_ARGS__);                                   \
                fputc('\n', stderr);                                                            \
                atomic_fetch_add(&failures, 1);                                                 \
        } while (0)

static inline uint8_t stream_byte(uint32_t id, uint64_t k)
{
        return (uint8_t)(k * 7 + id * 13 + (k >> 9));
}

static void pump(struct cli *k)
{
        uint8_t buf[16384];

        while (k->sent < k->total) {
                size_t n = (size_t)((k->writes * 7919u + k->id * 31u) % sizeof(buf)) + 1;
                int rc;

                if (n > k->total - k->sent)
                        n = (size_t)(k->total - k->sent);
                for (size_t i = 0; i < n; i++)
                        buf[i] = stream_byte(k->id, k->sent + i);
                rc = pc_conn_send(k->c, buf, n);
                if (rc == -ENOBUFS)
                        return; /* on_writable resumes */
                if (rc) {
                        FAIL("conn %u: send: %s", k->id, pc_strerror(rc));
                        pc_conn_close(k->c);
                        return;
                }
                k->sent += n;
                k->writes++;
        }
}

static void on_accept(struct pc_conn *c, void *arg)
{
        (void)c;
        pump(arg);
}

static void on_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        struct cli *k = arg;
        const uint8_t *d = data;

        if (len == 0) {
                FAIL("conn %u: EOF after %" PRIu64 " of %" PRIu64, k->id, k->echoed, k->total);
                return;
        }
        for (size_t i = 0; i < len; i++, k->echoed++) {
                if (k->echoed >= k->sent || d[i] != stream_byte(k->id, k->echoed)) {
                        FAIL("conn %u: echo byte %" PRIu64 " wrong", k->id, k->echoed);
                        pc_conn_close(c);
                        return;
                }
        }
        if (k->echoed == k->total) {
                atomic_fetch_add(&verified, k->total);
                pc_conn_close(c);
        }
}

static void on_writable(struct pc_conn *c, void *arg)
{
        (void)c;
        pump(arg);
}

static void on_close(struct pc_conn *c, int err, void *arg)
{
        struct cli *k = arg;

        (void)c;
        if (err || k->echoed != k->total)
                FAIL("conn %u: closed with %s after %" PRIu64 "/%" PRIu64, k->id,
                     pc_strerror(err), k->echoed, k->total);
        k->closed = true;
        atomic_fetch_add(&done, 1);
}

static const struct pc_tcp_callbacks cb = {
        .on_accept = on_accept,
        .on_data = on_data,
        .on_close = on_close,
        .on_writable = on_writable,
};

static void start_worker(void *arg)
{
        unsigned w = (unsigned)pc_worker_id();

        (void)arg;
        for (unsigned i = w; i < nconns; i += NW) {
                struct cli *k = &cli[i];
                static const uint64_t sizes[] = {1, 1000, 1460, 1461, 65536, 300000, 7, 20000};
                int rc;

                k->id = i;
                k->total = sizes[i % 8] + i;
                rc = pc_tcp_connect_dpdk(port, theirs, (uint16_t)tcp_port, &cb, k, &k->c);
                if (rc) {
                        FAIL("connect %u: %s", i, pc_strerror(rc));
                        k->closed = true;
                        atomic_fetch_add(&done, 1);
                }
        }
}

static void watch_cb(struct pc_timer *t, void *arg)
{
        (void)arg;
        if (atomic_load(&done) == nconns || pc_now_ns() > deadline) {
                pc_timer_cancel(t);
                pc_runtime_stop(rt);
        }
}

/* What the engine holds of an unfinished connection, for whoever reads a
 * failed run (the runtime has stopped: any thread may ask). */
static void print_info(const struct cli *k)
{
        struct pc_tcb_info i;
        int rc = pc_conn_dpdk_info(k->c, &i);

        if (rc) {
                fprintf(stderr, "  conn %u: no engine state (%s)\n", k->id, pc_strerror(rc));
                return;
        }
        fprintf(stderr,
                "  conn %u: %s, port %u; sent: una +%u nxt +%u, window %u, cwnd %u, ssthresh %u, "
                "rto %" PRIu64 " ms, srtt %" PRIu64 " us, %u timeouts in a row, %zu buffered; "
                "received: nxt +%u, window %u, %zu held, %u out-of-order ranges\n",
                k->id, pc_tcp_state_name(i.state), i.lport, i.snd_una - i.iss, i.snd_nxt - i.iss,
                i.snd_wnd, i.cwnd, i.ssthresh, i.rto_ns / 1000000, i.srtt_ns / 1000, i.retries,
                i.buffered, i.rcv_nxt - i.irs, i.rcv_wnd, i.held, i.ooo);
}

static void print_drops(void)
{
        for (int q = 0; q < NW; q++) {
                struct pc_tcpe_stats s;

                if (pc_port_tcp_stats(port, q, &s, NULL, NULL, NULL))
                        continue;
                fprintf(stderr,
                        "  queue %d: %" PRIu64 " segments in, %" PRIu64 " timeouts, %" PRIu64
                        " fast retransmits; not taken:", q, s.segs_in, s.timeouts,
                        s.fast_retransmits);
                pc_tcpe_drops_print(&s, stderr);
                fputc('\n', stderr);
        }
}

static void client_main(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < NW; w++)
                pc_spawn_on(w, start_worker, NULL);
        deadline = pc_now_ns() + 60000000000ull; /* a hang detector */
        pc_timer_init(&watch, watch_cb, NULL);
        pc_timer_start(&watch, 1000000, 1000000);
}

int main(int argc, char **argv)
{
        struct pc_config cfg;
        struct pc_tcpe_stats st;
        struct in_addr a;
        uint64_t handoffs, held, expect = 0;
        char eal[512];
        int rc;

        if (argc != 6 || inet_pton(AF_INET, argv[2], &a) != 1) {
                fprintf(stderr, "usage: dtcp_client IFACE OURS THEIRS PORT CONNS\n");
                return 2;
        }
        theirs = argv[3];
        tcp_port = (unsigned)atoi(argv[4]);
        nconns = (unsigned)atoi(argv[5]);
        if (nconns == 0 || nconns > MAX_CONNS || tcp_port == 0 || tcp_port > 65535)
                return 2;
        snprintf(eal, sizeof(eal),
                 "--no-huge --no-pci -m 512 --file-prefix pc_dtcp_client "
                 "--log-level=lib.eal:error --vdev net_af_packet0,iface=%s,qpairs=%d",
                 argv[1], NW);
        pc_config_init(&cfg);
        cfg.workers = NW;
        cfg.pin = false;
        cfg.eal_args = eal;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc == 0)
                rc = pc_port_open(rt, "0", NULL, &port);
        if (rc == 0)
                rc = pc_port_set_ipv4(port, ntohl(a.s_addr));
        if (rc) {
                fprintf(stderr, "dtcp_client: setup: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_runtime_run(rt, client_main, NULL);
        for (unsigned i = 0; i < nconns; i++) {
                expect += cli[i].total;
                if (!cli[i].closed) {
                        FAIL("conn %u unfinished: sent %" PRIu64 ", echoed %" PRIu64 " of %" PRIu64,
                             i, cli[i].sent, cli[i].echoed, cli[i].total);
                        if (cli[i].c)
                                print_info(&cli[i]);
                }
        }
        if (atomic_load(&failures))
                print_drops();
        pc_port_tcp_stats(port, -1, &st, &handoffs, &held, NULL);
        printf("dtcp_client: %u connections, %" PRIu64 " of %" PRIu64
               " bytes verified; retransmits %" PRIu64 ", hand-offs %" PRIu64
               ", frames held for ARP %" PRIu64 "\n",
               nconns, atomic_load(&verified), expect, st.retransmits, handoffs, held);
        pc_runtime_destroy(rt);
        if (rc || atomic_load(&failures) || atomic_load(&verified) != expect)
                return 1;
        printf("ok: percore connected %u times to the kernel, every byte echoed in order\n",
               nconns);
        return 0;
}
