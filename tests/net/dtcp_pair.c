/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <rte_mbuf.h>

#include "dtcp_pair.h"
#include "pc_test.h"
#include "pc_shard.h"

struct pc_runtime *pair_rt;
struct pc_port *pair_a, *pair_b;
_Atomic unsigned pair_failures;
pair_watch_fn pair_watch;

static bool shim_drop(struct pc_port *p, struct rte_mbuf *m)
{
        const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
        size_t len = rte_pktmbuf_data_len(m), ihl, off;

        if (pair_watch == NULL || len < PC_ETH_HLEN + PC_IPV4_HLEN + PC_TCP_HLEN ||
            pc_rd16(f + 12) != PC_ETH_P_IPV4 || f[PC_ETH_HLEN + 9] != PC_IPPROTO_TCP)
                return false;
        ihl = (size_t)(f[PC_ETH_HLEN] & 0xf) * 4;
        off = PC_ETH_HLEN + ihl;
        if (len < off + PC_TCP_HLEN)
                return false;
        return pair_watch(p == pair_a, pc_rd16(f + off), pc_rd16(f + off + 2), f[off + 13],
                          PC_ETH_HLEN + pc_rd16(f + PC_ETH_HLEN + 2) - off -
                                  (size_t)(f[off + 12] >> 4) * 4);
}

static void shim_rx(struct pc_port *p, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
        struct pc_port *to = p == pair_a ? pair_b : pair_a;

        (void)arg;
        for (uint16_t i = 0; i < n; i++) {
                struct rte_mbuf *m = pkts[i];

                if (shim_drop(p, m))
                        rte_pktmbuf_free(m);
                else
                        pc_stack_rx(to, &m, 1, NULL);
        }
}

int pair_setup(const char *prefix)
{
        static const struct pc_tcpe_config tcp;
        static char eal[256];
        struct pc_config cfg;
        struct pc_port_opts o = {0};

        snprintf(eal, sizeof(eal),
                 "--no-huge --no-pci -m 512 --file-prefix %s --log-level=lib.eal:warning "
                 "--vdev net_ring0 --vdev net_ring1",
                 prefix);
        pc_test_config(&cfg, PAIR_WORKERS);
        cfg.eal_args = eal;
        if (pc_runtime_create(&cfg, &pair_rt) != 0 || pc_shard_init(pair_rt, NULL) != 0)
                return -1;
        o.rx = shim_rx;
        o.tcp = &tcp;
        if (pc_port_open(pair_rt, "net_ring0", &o, &pair_a) ||
            pc_port_open(pair_rt, "net_ring1", &o, &pair_b))
                return -1;
        if (pc_port_set_ipv4(pair_a, PAIR_IP_A) || pc_port_set_ipv4(pair_b, PAIR_IP_B))
                return -1;
        return 0;
}

void pair_teardown(void)
{
        pc_runtime_destroy(pair_rt);
}

static struct pc_timer watch_timer;
static uint64_t deadline;
static bool (*run_done)(void);
static bool run_ok;

static void watch_cb(struct pc_timer *t, void *arg)
{
        (void)arg;
        run_ok = run_done();
        if (run_ok || pc_now_ns() > deadline) {
                pc_timer_cancel(t);
                pc_runtime_stop(pair_rt);
        }
}

static pc_task_fn run_main;
static unsigned run_limit_s;

static void run_task(void *arg)
{
        /* A hang detector, not a measurement. */
        deadline = pc_now_ns() + run_limit_s * 1000000000ull;
        pc_timer_init(&watch_timer, watch_cb, NULL);
        if (pc_timer_start(&watch_timer, 1000000, 1000000) != 0)
                PAIR_FAIL("watch timer");
        run_main(arg);
}

bool pair_run(pc_task_fn main_fn, bool (*done)(void), unsigned limit_s)
{
        run_done = done;
        run_ok = false;
        run_main = main_fn;
        run_limit_s = limit_s;
        if (pc_runtime_run(pair_rt, run_task, NULL) != 0)
                return false;
        return run_ok;
}
