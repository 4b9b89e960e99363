/* SPDX-License-Identifier: MIT */
/* Per-worker stats: exact task counts by origin, and the printed table. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "pc_test.h"

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
        assert_non_null(strstr(buf, "\n1 "));
        pc_runtime_destroy(RT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts_by_origin),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
