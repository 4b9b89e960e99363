/* SPDX-License-Identifier: MIT */
/*
 * EAL integration: worker i is lcore i, on the socket numa/ gives its CPU,
 * across two runs of one runtime; the EAL belongs to one runtime per
 * process (-EALREADY for a second, and after destroy). Its own process:
 * the EAL starts once.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "pc_test.h"
#include "pc_dpdk.h"

#define NW 4
#define EAL "--no-huge --no-pci -m 128 --file-prefix pc_test_eal --log-level=lib.eal:warning"

static struct pc_runtime *RT;
static int lcore_of[NW], socket_of[NW];
static _Atomic unsigned seen, failures;
static bool on_dpdk = true;

static void probe(void *arg)
{
        int w = pc_worker_id();

        (void)arg;
        if (w < 0 || w >= NW) {
                atomic_fetch_add(&failures, 1);
                return;
        }
        if (on_dpdk) {
                lcore_of[w] = (int)rte_lcore_id();
                socket_of[w] = (int)rte_socket_id();
        }
        atomic_fetch_add(&seen, 1);
}

static void main_fn(void *arg)
{
        (void)arg;
        if ((on_dpdk && rte_lcore_id() != 0) || pc_worker_id() != 0)
                atomic_fetch_add(&failures, 1);
        for (unsigned w = 0; w < NW; w++)
                if (pc_spawn_on(w, probe, NULL) != 0)
                        atomic_fetch_add(&failures, 1);
        pc_runtime_stop(RT);
}

static void test_lcore_is_worker(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt2 = NULL;

        (void)state;
        pc_test_config(&cfg, NW);
        cfg.eal_args = EAL;
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(rte_lcore_count(), NW);
        assert_int_equal(rte_get_main_lcore(), 0);
        for (int run = 0; run < 2; run++) {
                memset(lcore_of, -1, sizeof(lcore_of));
                atomic_store(&seen, 0);
                assert_int_equal(pc_runtime_run(RT, main_fn, NULL), 0);
                assert_int_equal(atomic_load(&failures), 0);
                assert_int_equal(atomic_load(&seen), NW);
                for (int w = 0; w < NW; w++) {
                        assert_int_equal(lcore_of[w], w);
                        assert_int_equal(socket_of[w], pc_runtime_worker_node(RT, (unsigned)w));
                        assert_int_equal((int)rte_lcore_to_socket_id((unsigned)w),
                                         pc_runtime_worker_node(RT, (unsigned)w));
                }
        }
        /* One EAL per process: a second DPDK runtime is refused... */
        assert_int_equal(pc_runtime_create(&cfg, &rt2), -EALREADY);
        assert_null(rt2);
        pc_runtime_destroy(RT);
        /* ...and so is one after the EAL was cleaned up. */
        assert_int_equal(pc_runtime_create(&cfg, &rt2), -EALREADY);
        /* A runtime without EAL arguments still works as before. */
        cfg.eal_args = NULL;
        on_dpdk = false;
        assert_int_equal(pc_runtime_create(&cfg, &rt2), 0);
        RT = rt2;
        atomic_store(&seen, 0);
        assert_int_equal(pc_runtime_run(rt2, main_fn, NULL), 0);
        /* Off DPDK, rte_lcore_id() is not ours: only count the tasks. */
        assert_int_equal(atomic_load(&seen), NW);
        assert_null(pc_port_get(rt2, 0));
        pc_runtime_destroy(rt2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lcore_is_worker),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
