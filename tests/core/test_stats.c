/* SPDX-License-Identifier: MIT */
/* Per-worker stats: exact task counts by origin, and the printed table. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"
#ifdef PC_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

#define LOCAL 1000
#define REMOTE 300
#define INJECTED 50

static _Atomic unsigned ran;
static struct pc_runtime *RT;

static void leaf(void *arg)
{
        (void)arg;
        if (atomic_fetch_add(&ran, 1) + 1 == LOCAL + REMOTE + INJECTED)
                pc_runtime_stop(RT);
}

static void stats_main(void *arg)
{
        (void)arg;
        for (int i = 0; i < LOCAL; i++)
                pc_spawn(leaf, NULL);
        for (int i = 0; i < REMOTE; i++)
                pc_spawn_on(1, leaf, NULL);
}

static void test_counts_by_origin(void **state)
{
        struct pc_config cfg;
        struct pc_worker_stats st[2];
        uint64_t tasks = 0, inj = 0;
        char buf[4096] = "";
        FILE *f;

        (void)state;
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        for (int i = 0; i < INJECTED; i++)
                assert_int_equal(pc_runtime_inject(RT, leaf, NULL), 0);
        assert_int_equal(pc_runtime_run(RT, stats_main, NULL), 0);

        assert_int_equal(pc_stats_snapshot(RT, st, 2), 2);
        assert_int_equal(pc_stats_snapshot(RT, st, 1), 1);
        assert_int_equal(pc_stats_snapshot(NULL, st, 2), -EINVAL);
        pc_stats_snapshot(RT, st, 2);
        for (int w = 0; w < 2; w++) {
                assert_int_equal(st[w].worker, w);
                tasks += st[w].tasks_run;
                inj += st[w].tasks_inject;
                assert_int_equal(st[w].queue_depth, 0);
                assert_true(st[w].iterations > 0);
        }
        /* Main itself is a task too. */
        assert_int_equal(tasks, LOCAL + REMOTE + INJECTED + 1);
        assert_int_equal(st[1].tasks_remote, REMOTE);
        assert_int_equal(st[0].tasks_remote, 0);
        assert_int_equal(inj, INJECTED);

        f = fmemopen(buf, sizeof(buf), "w");
        pc_stats_print(RT, f);
        fclose(f);
        assert_non_null(strstr(buf, "worker"));
        assert_non_null(strstr(buf, "busy%"));
        assert_non_null(strstr(buf, "stalls"));
        assert_non_null(strstr(buf, "roams"));
        assert_non_null(strstr(buf, "\n1 "));
        pc_runtime_destroy(RT);
}

/* Each worker's state, queues and task slabs live on its worker's node. */
static void test_worker_memory_on_its_node(void **state)
{
#ifdef PC_HAVE_NUMA
        struct pc_config cfg;
        unsigned checked = 0;

        (void)state;
        if (numa_available() < 0)
                skip();
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        /* Tasks on both workers, so each carves a slab; the injected
         * ones of the other test are stood in for by this many more. */
        atomic_store(&ran, INJECTED);
        assert_int_equal(pc_runtime_run(RT, stats_main, NULL), 0);
        for (unsigned w = 0; w < pc_runtime_workers(RT); w++) {
                struct pc_worker *wk = RT->workers[w];
                void *where[] = {wk, wk->rq.slots, wk->sq.slots,
                                 wk->nchunks ? wk->chunks[0] : NULL};
                for (unsigned i = 0; i < 4; i++) {
                        int node = -1;
                        if (where[i] == NULL)
                                continue;
                        assert_int_equal(get_mempolicy(&node, NULL, 0, where[i],
                                                       MPOL_F_NODE | MPOL_F_ADDR),
                                         0);
                        assert_int_equal(node, pc_runtime_worker_node(RT, w));
                        checked++;
                }
        }
        assert_true(checked >= 6);
        pc_runtime_destroy(RT);
#else
        (void)state;
        skip();
#endif
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts_by_origin),
                cmocka_unit_test(test_worker_memory_on_its_node),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
