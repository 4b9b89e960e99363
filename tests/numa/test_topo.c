/* SPDX-License-Identifier: MIT */
/*
 * numa/ tests: both topology loaders against fake /sys trees of real
 * machine shapes, fallback on damaged trees, placement, steal tiers,
 * printing and node-local memory. Everything here is deterministic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixture_util.h"
#include "pc_topo.h"

#ifdef PC_HAVE_HWLOC
#include <hwloc.h>
#endif
#ifdef PC_HAVE_NUMA
#include <numaif.h>
#endif

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct pc_topo *load(const char *fixture, const uint64_t *allowed)
{
        char root[PATH_MAX];
        struct pc_topo *t = NULL;

        fixture_sys(fixture, root, sizeof(root));
        assert_int_equal(pc_topo_load(root, allowed, &t), 0);
        assert_non_null(t);
        return t;
}

/* Run pc_topo_load() on @root with stderr captured into @log. */
static int load_logged(const char *root, struct pc_topo **t, char *log, size_t len)
{
        FILE *cap = tmpfile();
        int saved, rc;
        size_t n;

        assert_non_null(cap);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fileno(cap), STDERR_FILENO);
        rc = pc_topo_load(root, NULL, t);
        dup2(saved, STDERR_FILENO);
        close(saved);
        rewind(cap);
        n = fread(log, 1, len - 1, cap);
        log[n] = '\0';
        fclose(cap);
        return rc;
}

static unsigned count_lines(const char *s, const char *needle)
{
        unsigned n = 0;

        for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
                n++;
        return n;
}

/* ------------------------------------------------------------------------ */
/* Each fixture loads with the right shape                                  */
/* ------------------------------------------------------------------------ */

struct shape {
        const char *name;
        unsigned ncpus, nonline, ncores, npackages, nl3, nnodes;
};

static const struct shape shapes[] = {
    {"intel-2s-smt", 16, 16, 8, 2, 2, 2}, {"epyc-nps4", 64, 64, 32, 1, 8, 4},
    {"memless-node", 4, 4, 4, 1, 2, 2},   {"offline-cpus", 8, 7, 4, 1, 1, 1},
    {"laptop", 8, 8, 4, 1, 1, 1},         {"node-per-cpu", 4, 4, 4, 1, 4, 4},
};

static void test_fixture_shapes(void **state)
{
        (void)state;
        for (size_t i = 0; i < NELEM(shapes); i++) {
                const struct shape *s = &shapes[i];
                struct pc_topo *t = load(s->name, NULL);

                print_message("%s\n", s->name);
                assert_false(t->flat_fallback);
                assert_int_equal(t->ncpus, s->ncpus);
                assert_int_equal(t->nonline, s->nonline);
                assert_int_equal(t->nusable, s->nonline);
                assert_int_equal(t->ncores, s->ncores);
                assert_int_equal(t->npackages, s->npackages);
                assert_int_equal(t->nl3, s->nl3);
                assert_int_equal(t->nnodes, s->nnodes);
                for (unsigned n = 0; n < t->nnodes; n++)
                        assert_int_equal(t->distance[n * t->nnodes + n], 10);
                pc_topo_free(t);
        }
}

static void test_intel_details(void **state)
{
        struct pc_topo *t = load("intel-2s-smt", NULL);

        (void)state;
        /* Siblings are N apart; the second thread ranks 1. */
        assert_int_equal(t->cpu[0].core, t->cpu[8].core);
        assert_int_equal(t->cpu[0].smt_rank, 0);
        assert_int_equal(t->cpu[8].smt_rank, 1);
        assert_int_not_equal(t->cpu[0].core, t->cpu[1].core);
        /* core_id repeats across packages and has gaps; cores do not. */
        assert_int_equal(t->cpu[2].core_id, 4);
        assert_int_equal(t->cpu[6].core_id, 4);
        assert_int_not_equal(t->cpu[2].core, t->cpu[6].core);
        assert_int_equal(t->cpu[4].package, 1);
        assert_int_equal(t->cpu[12].node, 1);
        assert_int_equal(t->cpu[11].l3, t->cpu[0].l3);
        assert_int_not_equal(t->cpu[4].l3, t->cpu[0].l3);
        assert_int_equal(pc_topo_distance(t, 0, 1), 21);
        assert_int_equal(t->node[1].ncpus, 8);
        assert_true(t->node[0].has_memory && t->node[1].has_memory);
        pc_topo_free(t);
}

static void test_epyc_details(void **state)
{
        struct pc_topo *t = load("epyc-nps4", NULL);

        (void)state;
        /* Two L3s per node, four cores per L3. */
        assert_int_equal(t->cpu[3].l3, t->cpu[35].l3);
        assert_int_not_equal(t->cpu[3].l3, t->cpu[4].l3);
        assert_int_equal(t->cpu[3].node, t->cpu[4].node);
        assert_int_equal(t->cpu[8].node, 1);
        assert_int_equal(t->cpu[63].node, 3);
        assert_int_equal(pc_topo_distance(t, 0, 1), 11);
        assert_int_equal(pc_topo_distance(t, 0, 2), 12);
        assert_int_equal(pc_topo_distance(t, 3, 2), 11);
        assert_int_equal(t->cpu[32].smt_rank, 1);
        pc_topo_free(t);
}

static void test_memless_node(void **state)
{
        struct pc_topo *t = load("memless-node", NULL);

        (void)state;
        assert_true(t->node[0].has_memory);
        assert_false(t->node[1].has_memory);
        assert_int_equal(t->node[1].ncpus, 2);
        assert_int_equal(pc_topo_node_of_cpu(t, 3), 1);
        pc_topo_free(t);
}

static void test_offline_cpus(void **state)
{
        struct pc_topo *t = load("offline-cpus", NULL);
        int cpus[7];

        (void)state;
        assert_false(t->cpu[6].online);
        assert_false(t->cpu[6].usable);
        assert_int_equal(t->cpu[6].node, -1);
        assert_int_equal(pc_topo_node_of_cpu(t, 6), -EINVAL);
        /* CPU 2's sibling is offline: it is a core of one thread. */
        assert_int_equal(t->cpu[7].core, t->cpu[3].core);
        assert_int_equal(t->cpu[7].smt_rank, 1);
        assert_int_equal(t->node[0].ncpus, 7);
        assert_int_equal(pc_topo_place(t, 7, PC_PLACE_COMPACT, true, cpus), 0);
        for (int i = 0; i < 7; i++)
                assert_int_not_equal(cpus[i], 6);
        assert_int_equal(pc_topo_place(t, 8, PC_PLACE_COMPACT, true, cpus), -EINVAL);
        pc_topo_free(t);
}

static void test_laptop_old_kernel(void **state)
{
        struct pc_topo *t = load("laptop", NULL);

        (void)state;
        /* thread_siblings_list stands in for core_cpus_list; no die_id. */
        assert_int_equal(t->cpu[0].core, t->cpu[1].core);
        assert_int_not_equal(t->cpu[1].core, t->cpu[2].core);
        assert_int_equal(t->cpu[1].smt_rank, 1);
        assert_int_equal(t->cpu[5].die, t->cpu[5].package);
        pc_topo_free(t);
}

static void test_allowed_cpus(void **state)
{
        uint64_t allowed[PC_CPUSET_WORDS];
        struct pc_topo *t;
        int cpus[5];

        (void)state;
        assert_int_equal(pc_cpulist_parse("0-3,9", allowed, PC_TOPO_MAX_CPUS), 5);
        t = load("intel-2s-smt", allowed);
        assert_int_equal(t->nusable, 5);
        assert_true(t->cpu[9].usable);
        assert_false(t->cpu[8].usable);
        assert_true(t->cpu[8].online);
        assert_int_equal(pc_topo_place(t, 5, PC_PLACE_COMPACT, true, cpus), 0);
        assert_int_equal(cpus[4], 9);
        assert_int_equal(pc_topo_place(t, 6, PC_PLACE_COMPACT, true, cpus), -EINVAL);
        pc_topo_free(t);

        /* A core whose first thread is not allowed still counts once: CPU 8
         * (thread 1 of core 0) goes before any sibling. */
        assert_int_equal(pc_cpulist_parse("1,8-9", allowed, PC_TOPO_MAX_CPUS), 3);
        t = load("intel-2s-smt", allowed);
        assert_int_equal(pc_topo_place(t, 3, PC_PLACE_COMPACT, true, cpus), 0);
        assert_int_equal(cpus[0], 1);
        assert_int_equal(cpus[1], 8);
        assert_int_equal(cpus[2], 9);
        pc_topo_free(t);

        assert_int_equal(pc_cpulist_parse("100", allowed, PC_TOPO_MAX_CPUS), 1);
        t = load("intel-2s-smt", allowed);
        assert_int_equal(t->nusable, 0);
        assert_int_equal(pc_topo_place(t, 1, PC_PLACE_COMPACT, false, cpus), -ENODEV);
        pc_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* Damaged trees                                                            */
/* ------------------------------------------------------------------------ */

static void test_broken_falls_back(void **state)
{
        char root[PATH_MAX], log[4096];
        struct pc_topo *t = NULL;
        int cpus[8];

        (void)state;
        fixture_sys("broken", root, sizeof(root));
        assert_int_equal(load_logged(root, &t, log, sizeof(log)), 0);
        assert_true(t->flat_fallback);
        assert_int_equal(t->nnodes, 1);
        assert_int_equal(t->npackages, 1);
        assert_int_equal(t->nonline, 8);
        assert_int_equal(t->ncores, 8);
        assert_int_equal(t->nl3, 0);
        assert_int_equal(count_lines(log, "percore: warn"), 1);
        assert_non_null(strstr(log, "cpu3/topology/core_id"));
        /* The fallback is a topology like any other. */
        assert_int_equal(pc_topo_place(t, 8, PC_PLACE_SPREAD, true, cpus), 0);
        pc_topo_free(t);
}

/* numa/ logs through a hook when one is installed (the runtime installs
 * pc_log), to stderr otherwise; a missing topology file is an error. */
static unsigned hook_calls, hook_warns;
static char hook_last[1024];

static void record_log(enum pc_topo_log_level level, const char *msg)
{
        hook_calls++;
        hook_warns += level == PC_TOPO_LOG_WARN;
        snprintf(hook_last, sizeof(hook_last), "%s", msg);
}

static void test_log_hook(void **state)
{
        char root[PATH_MAX], log[4096];
        struct pc_topo *t = NULL;

        (void)state;
        fixture_sys("broken", root, sizeof(root));
        pc_topo_set_log(record_log);
        assert_int_equal(load_logged(root, &t, log, sizeof(log)), 0);
        pc_topo_set_log(NULL);
        assert_true(t->flat_fallback);
        pc_topo_free(t);
        assert_int_equal(hook_calls, 1);
        assert_int_equal(hook_warns, 1);
        assert_non_null(strstr(hook_last, "cpu3/topology/core_id"));
        assert_null(strchr(hook_last, '\n'));
        assert_string_equal(log, "");

        /* Back to stderr, the line pc_log() would write. */
        t = NULL;
        assert_int_equal(load_logged("/nonexistent-sysfs", &t, log, sizeof(log)), -ENOENT);
        assert_null(t);
        assert_int_equal(hook_calls, 1);
        assert_int_equal(count_lines(log, "\n"), 1);
        assert_true(strncmp(log, "percore: error: topology: cannot use ", 37) == 0);
        assert_non_null(strstr(log, "devices/system/cpu/online: No such file or directory\n"));
}

struct damage {
        const char *fixture;
        const char *file; /* relative to sys/ */
        const char *text; /* NULL: remove the file */
        int rc;           /* pc_topo_load()'s result */
        bool fallback;    /* expect flat_fallback and one warning naming file */
};

static const struct damage damages[] = {
    {"intel-2s-smt", "devices/system/cpu/online", NULL, -ENOENT, false},
    {"intel-2s-smt", "devices/system/cpu/online", "0-15x\n", -EINVAL, false},
    {"intel-2s-smt", "devices/system/cpu/online", "\n", -EINVAL, false},
    {"intel-2s-smt", "devices/system/cpu/online", "0-4096\n", -ERANGE, false},
    {"intel-2s-smt", "devices/system/cpu/online", "15-0\n", -EINVAL, false},
    {"intel-2s-smt", "devices/system/cpu/possible", "0-\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu5/topology/physical_package_id", NULL, 0,
     true},
    {"intel-2s-smt", "devices/system/cpu/cpu5/topology/physical_package_id", "1 \n", 0,
     true},
    {"intel-2s-smt", "devices/system/cpu/cpu5/topology/physical_package_id",
     "99999999999\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu5/topology/core_id", "", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu5/topology/die_id", "0x1\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu8/topology/core_cpus_list", "8\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu8/topology/core_cpus_list", "1,9\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu3/cache/index3/type", "Sideways\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu3/cache/index3/level", "three\n", 0, true},
    {"intel-2s-smt", "devices/system/cpu/cpu3/cache/index3/shared_cpu_list", "0-2\n", 0,
     true},
    {"intel-2s-smt", "devices/system/cpu/cpu3/cache/index3/shared_cpu_list", "0-3,8-12\n",
     0, true},
    {"intel-2s-smt", "devices/system/node/online", "0-1,\n", 0, true},
    {"intel-2s-smt", "devices/system/node/online", "0-300\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/cpulist", NULL, 0, true},
    {"intel-2s-smt", "devices/system/node/node1/cpulist", "3-7,12-15\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/cpulist", "4-7,12-14\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/distance", "21\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/distance", "21 10 10\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/distance", "21 0\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/distance", "21 256\n", 0, true},
    {"intel-2s-smt", "devices/system/node/node1/distance", "21 -10\n", 0, true},
    {"intel-2s-smt", "devices/system/node/has_memory", "zero\n", 0, true},
    {"memless-node", "devices/system/node/has_memory", NULL, 0, false},
};

static void remove_file(const char *root, const char *rel)
{
        char path[PATH_MAX + 256];

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(unlink(path), 0);
}

static void test_damaged_trees(void **state)
{
        (void)state;
        for (size_t i = 0; i < NELEM(damages); i++) {
                const struct damage *d = &damages[i];
                char top[PATH_MAX], root[PATH_MAX], log[4096];
                struct pc_topo *t = NULL;
                int rc;

                print_message("%s: %s <- %s\n", d->fixture, d->file,
                              d->text ? d->text : "(removed)");
                assert_int_equal(
                    fixture_copy(d->fixture, top, sizeof(top), root, sizeof(root)), 0);
                if (d->text)
                        assert_int_equal(
                            put_file(root, d->file, d->text, strlen(d->text)), 0);
                else
                        remove_file(root, d->file);
                rc = load_logged(root, &t, log, sizeof(log));
                assert_int_equal(rc, d->rc);
                if (rc == 0) {
                        assert_int_equal(t->flat_fallback, d->fallback);
                        assert_int_equal(count_lines(log, "percore: warn"),
                                         d->fallback ? 1 : 0);
                        if (d->fallback) {
                                /* The warning names the file, or for a
                                 * disagreement between CPUs its pattern. */
                                const char *base = strrchr(d->file, '/') + 1;
                                assert_non_null(strstr(log, base));
                                assert_int_equal(t->nnodes, 1);
                                assert_int_equal(t->nonline, 16);
                        }
                        pc_topo_free(t);
                } else {
                        assert_null(t);
                }
                rm_tree(top);
        }
}

static void test_memory_sources(void **state)
{
        char top[PATH_MAX], root[PATH_MAX];
        struct pc_topo *t;

        (void)state;
        /* Without has_memory, meminfo's MemTotal decides. */
        assert_int_equal(
            fixture_copy("memless-node", top, sizeof(top), root, sizeof(root)), 0);
        remove_file(root, "devices/system/node/has_memory");
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        assert_false(t->flat_fallback);
        assert_true(t->node[0].has_memory);
        assert_false(t->node[1].has_memory);
        pc_topo_free(t);

        /* Without either, a node is assumed to have memory. */
        remove_file(root, "devices/system/node/node1/meminfo");
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        assert_false(t->flat_fallback);
        assert_true(t->node[1].has_memory);
        pc_topo_free(t);

        /* A malformed meminfo is garbage, not "no memory". */
        assert_int_equal(put_file(root, "devices/system/node/node0/meminfo",
                                  "Node 0 MemTotal: lots\n", 22),
                         0);
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        assert_true(t->flat_fallback);
        pc_topo_free(t);
        rm_tree(top);
}

static void test_no_numa_kernel(void **state)
{
        char top[PATH_MAX], root[PATH_MAX], node[PATH_MAX * 2];
        struct pc_topo *t;

        (void)state;
        /* CONFIG_NUMA=n: no node/ at all. One node, the rest intact. */
        assert_int_equal(
            fixture_copy("intel-2s-smt", top, sizeof(top), root, sizeof(root)), 0);
        snprintf(node, sizeof(node), "%s/devices/system/node", root);
        rm_tree(node);
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        assert_false(t->flat_fallback);
        assert_int_equal(t->nnodes, 1);
        assert_int_equal(t->npackages, 2);
        assert_int_equal(t->ncores, 8);
        assert_int_equal(t->node[0].ncpus, 16);
        pc_topo_free(t);
        rm_tree(top);
}

static void test_siblings_from_core_id(void **state)
{
        char top[PATH_MAX], root[PATH_MAX], rel[128];
        struct pc_topo *t;

        (void)state;
        /* Without sibling lists, package + die + core_id decide. */
        assert_int_equal(
            fixture_copy("intel-2s-smt", top, sizeof(top), root, sizeof(root)), 0);
        for (int c = 0; c < 16; c++) {
                snprintf(rel, sizeof(rel),
                         "devices/system/cpu/cpu%d/topology/core_cpus_list", c);
                remove_file(root, rel);
        }
        assert_int_equal(pc_topo_load(root, NULL, &t), 0);
        assert_false(t->flat_fallback);
        assert_int_equal(t->ncores, 8);
        assert_int_equal(t->cpu[13].core, t->cpu[5].core);
        assert_int_equal(t->cpu[13].smt_rank, 1);
        pc_topo_free(t);
        rm_tree(top);
}

static void test_bad_arguments(void **state)
{
        struct pc_topo *t = NULL;

        (void)state;
        assert_int_equal(pc_topo_load("/nonexistent", NULL, &t), -ENOENT);
        assert_null(t);
        assert_int_equal(pc_topo_load("/sys", NULL, NULL), -EINVAL);
        {
                char longroot[PATH_MAX + 16];
                memset(longroot, 'a', sizeof(longroot) - 1);
                longroot[sizeof(longroot) - 1] = '\0';
                assert_int_equal(pc_topo_load(longroot, NULL, &t), -ENAMETOOLONG);
        }
        pc_topo_free(NULL);
}

/* ------------------------------------------------------------------------ */
/* Placement                                                                */
/* ------------------------------------------------------------------------ */

static void expect_place(const char *fixture, enum pc_placement pl, const int *want,
                         unsigned n)
{
        struct pc_topo *t = load(fixture, NULL);
        int got[PC_TOPO_MAX_WORKERS];

        assert_int_equal(pc_topo_place(t, n, pl, true, got), 0);
        for (unsigned i = 0; i < n; i++) {
                if (got[i] != want[i])
                        print_error("%s %s: worker %u on cpu %d, want %d\n", fixture,
                                    pl == PC_PLACE_SPREAD ? "spread" : "compact", i,
                                    got[i], want[i]);
                assert_int_equal(got[i], want[i]);
        }
        pc_topo_free(t);
}

static void test_place_intel(void **state)
{
        static const int compact[] = {0, 1, 2, 3, 8,  9,  10, 11,
                                      4, 5, 6, 7, 12, 13, 14, 15};
        static const int spread[] = {0, 4,  1, 5,  2,  6,  3,  7,
                                     8, 12, 9, 13, 10, 14, 11, 15};

        (void)state;
        expect_place("intel-2s-smt", PC_PLACE_COMPACT, compact, 16);
        expect_place("intel-2s-smt", PC_PLACE_SPREAD, spread, 16);
        expect_place("intel-2s-smt", PC_PLACE_SPREAD, spread, 3);
}

static void test_place_epyc(void **state)
{
        int compact[64], spread[64], i = 0;

        (void)state;
        /* Compact: node after node, each node's cores, then its siblings. */
        for (int n = 0; n < 4; n++) {
                for (int c = 0; c < 8; c++)
                        compact[i++] = 8 * n + c;
                for (int c = 0; c < 8; c++)
                        compact[i++] = 32 + 8 * n + c;
        }
        /* Spread: one worker per node in turn; within a node alternate its
         * two L3s (CPUs 0-3 and 4-7 of node 0); siblings last. */
        i = 0;
        for (int smt = 0; smt < 2; smt++)
                for (int r = 0; r < 8; r++)
                        for (int n = 0; n < 4; n++)
                                spread[i++] = 32 * smt + 8 * n + (r % 2) * 4 + r / 2;
        expect_place("epyc-nps4", PC_PLACE_COMPACT, compact, 64);
        expect_place("epyc-nps4", PC_PLACE_SPREAD, spread, 64);
}

static void test_place_laptop(void **state)
{
        static const int both[] = {0, 2, 4, 6, 1, 3, 5, 7};

        (void)state;
        expect_place("laptop", PC_PLACE_COMPACT, both, 8);
        expect_place("laptop", PC_PLACE_SPREAD, both, 8);
}

static void test_place_errors(void **state)
{
        struct pc_topo *t = load("intel-2s-smt", NULL);
        int cpus[PC_TOPO_MAX_WORKERS + 1];

        (void)state;
        assert_int_equal(pc_topo_place(t, 17, PC_PLACE_COMPACT, true, cpus), -EINVAL);
        assert_int_equal(pc_topo_place(t, 20, PC_PLACE_COMPACT, false, cpus), 0);
        assert_int_equal(cpus[16], cpus[0]);
        assert_int_equal(cpus[19], cpus[3]);
        assert_int_equal(pc_topo_place(t, 0, PC_PLACE_COMPACT, false, cpus), -EINVAL);
        assert_int_equal(
            pc_topo_place(t, PC_TOPO_MAX_WORKERS + 1, PC_PLACE_COMPACT, false, cpus),
            -EINVAL);
        assert_int_equal(pc_topo_place(t, 1, (enum pc_placement)7, false, cpus), -EINVAL);
        assert_int_equal(pc_topo_place(NULL, 1, PC_PLACE_COMPACT, false, cpus), -EINVAL);
        assert_int_equal(pc_topo_place(t, 1, PC_PLACE_COMPACT, false, NULL), -EINVAL);
        pc_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* Steal tiers                                                              */
/* ------------------------------------------------------------------------ */

/* The invariants every steal order keeps, whatever the machine. */
static void check_order(const struct pc_topo *t, const int *cpus, unsigned n, unsigned w,
                        const struct pc_steal_order *o)
{
        unsigned seen[PC_TOPO_MAX_WORKERS] = {0};

        assert_int_equal(o->nvictims, n - 1);
        assert_int_equal(o->tier_start[0], 0);
        assert_int_equal(o->tier_start[o->ntiers], n - 1);
        for (unsigned i = 0; i < o->ntiers; i++) {
                assert_true(o->tier_start[i] < o->tier_start[i + 1]); /* never empty */
                if (i > 0)
                        assert_true(o->tier_kind[i - 1] < o->tier_kind[i] ||
                                    (o->tier_kind[i - 1] == o->tier_kind[i] &&
                                     o->tier_distance[i - 1] < o->tier_distance[i]));
                for (unsigned k = o->tier_start[i]; k < o->tier_start[i + 1]; k++) {
                        unsigned v = o->victims[k];
                        int cw = cpus[w], cv = cpus[v];

                        assert_true(v < n);
                        assert_int_not_equal(v, w);
                        seen[v]++;
                        switch (o->tier_kind[i]) {
                        case PC_TIER_CACHE:
                                assert_true(t->cpu[cw].core == t->cpu[cv].core ||
                                            t->cpu[cw].l3 == t->cpu[cv].l3);
                                break;
                        case PC_TIER_NODE:
                                assert_int_equal(t->cpu[cw].node, t->cpu[cv].node);
                                break;
                        case PC_TIER_PACKAGE:
                                assert_int_equal(t->cpu[cw].package, t->cpu[cv].package);
                                assert_int_not_equal(t->cpu[cw].node, t->cpu[cv].node);
                                break;
                        default:
                                assert_int_not_equal(t->cpu[cw].package,
                                                     t->cpu[cv].package);
                        }
                }
        }
        for (unsigned v = 0; v < n; v++)
                assert_int_equal(seen[v], v == w ? 0 : 1);
}

static void test_tiers_invariants(void **state)
{
        static const char *const names[] = {"intel-2s-smt", "epyc-nps4", "memless-node",
                                            "offline-cpus", "laptop",    "broken"};

        (void)state;
        for (size_t f = 0; f < NELEM(names); f++) {
                struct pc_topo *t = load(names[f], NULL);
                int cpus[PC_TOPO_MAX_WORKERS];

                for (int pl = 0; pl < 2; pl++) {
                        unsigned n = t->nusable;
                        assert_int_equal(
                            pc_topo_place(t, n, (enum pc_placement)pl, true, cpus), 0);
                        for (unsigned w = 0; w < n; w++) {
                                struct pc_steal_order o;
                                assert_int_equal(pc_topo_steal_tiers(t, cpus, n, w, &o),
                                                 0);
                                check_order(t, cpus, n, w, &o);
                        }
                }
                pc_topo_free(t);
        }
}

static void expect_tier(const struct pc_steal_order *o, unsigned i,
                        enum pc_tier_kind kind, unsigned distance, const int *victims,
                        unsigned n)
{
        assert_true(i < o->ntiers);
        assert_int_equal(o->tier_kind[i], kind);
        assert_int_equal(o->tier_distance[i], distance);
        assert_int_equal(o->tier_start[i + 1] - o->tier_start[i], n);
        for (unsigned k = 0; k < n; k++)
                assert_int_equal(o->victims[o->tier_start[i] + k], victims[k]);
}

static void test_tiers_intel(void **state)
{
        static const int cache[] = {1, 2, 3, 4, 5, 6, 7};
        static const int remote[] = {8, 9, 10, 11, 12, 13, 14, 15};
        struct pc_topo *t = load("intel-2s-smt", NULL);
        struct pc_steal_order o;
        int cpus[20];

        (void)state;
        assert_int_equal(pc_topo_place(t, 16, PC_PLACE_COMPACT, true, cpus), 0);
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 16, 0, &o), 0);
        assert_int_equal(o.ntiers, 2);
        expect_tier(&o, 0, PC_TIER_CACHE, 10, cache, 7);
        expect_tier(&o, 1, PC_TIER_REMOTE, 21, remote, 8);

        /* Oversubscribed: worker 16 shares worker 0's CPU. */
        assert_int_equal(pc_topo_place(t, 20, PC_PLACE_COMPACT, false, cpus), 0);
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 20, 0, &o), 0);
        check_order(t, cpus, 20, 0, &o);
        assert_int_equal(o.victims[o.tier_start[1] - 1], 19);

        assert_int_equal(pc_topo_steal_tiers(t, cpus, 20, 20, &o), -EINVAL);
        cpus[3] = 99;
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 20, 0, &o), -EINVAL);
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 0, 0, &o), -EINVAL);
        pc_topo_free(t);
}

static void test_tiers_epyc(void **state)
{
        struct pc_topo *t = load("epyc-nps4", NULL);
        int cpus[64], cache[7], node[8], near[16], far[32];
        struct pc_steal_order o;
        unsigned nc = 0, nn = 0, n1 = 0, n2 = 0;

        (void)state;
        assert_int_equal(pc_topo_place(t, 64, PC_PLACE_COMPACT, true, cpus), 0);
        /* Compact: workers 0-7 on CPUs 0-7, 8-15 on their siblings 32-39. */
        for (int v = 1; v < 64; v++) {
                int c = cpus[v] % 32;
                if (c < 4)
                        cache[nc++] = v;
                else if (c < 8)
                        node[nn++] = v;
                else if (c < 16)
                        near[n1++] = v;
                else
                        far[n2++] = v;
        }
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 64, 0, &o), 0);
        assert_int_equal(o.ntiers, 4);
        expect_tier(&o, 0, PC_TIER_CACHE, 10, cache, 7);
        expect_tier(&o, 1, PC_TIER_NODE, 10, node, 8);
        expect_tier(&o, 2, PC_TIER_PACKAGE, 11, near, 16);
        expect_tier(&o, 3, PC_TIER_PACKAGE, 12, far, 32);
        pc_topo_free(t);
}

static void test_tiers_memless(void **state)
{
        static const int cache[] = {1}, pkg[] = {2, 3};
        struct pc_topo *t = load("memless-node", NULL);
        struct pc_steal_order o;
        int cpus[4];

        (void)state;
        assert_int_equal(pc_topo_place(t, 4, PC_PLACE_COMPACT, true, cpus), 0);
        assert_int_equal(pc_topo_steal_tiers(t, cpus, 4, 0, &o), 0);
        assert_int_equal(o.ntiers, 2);
        expect_tier(&o, 0, PC_TIER_CACHE, 10, cache, 1);
        expect_tier(&o, 1, PC_TIER_PACKAGE, 20, pkg, 2);
        pc_topo_free(t);
}

/* A machine too far-flung for the tier array: 20 single-CPU packages, each
 * its own node, each farther from node 0 than the last. */
static void test_tiers_overflow(void **state)
{
        enum { N = 20 };
        struct pc_topo *t = calloc(1, sizeof(*t));
        struct pc_steal_order o;
        int cpus[N];

        (void)state;
        t->ncpus = t->nonline = t->nusable = t->ncores = t->npackages = t->nnodes = N;
        t->cpu = calloc(N, sizeof(*t->cpu));
        t->node = calloc(N, sizeof(*t->node));
        t->distance = calloc(N * N, 1);
        for (int i = 0; i < N; i++) {
                t->cpu[i] = (struct pc_topo_cpu){.cpu = i,
                                                 .online = true,
                                                 .usable = true,
                                                 .package = i,
                                                 .die = i,
                                                 .core = i,
                                                 .l3 = -1,
                                                 .node = i};
                t->node[i].id = i;
                cpus[i] = i;
                for (int j = 0; j < N; j++)
                        t->distance[i * N + j] = (uint8_t)(i == j ? 10 : 20 + i + j);
        }
        assert_int_equal(pc_topo_steal_tiers(t, cpus, N, 0, &o), 0);
        assert_int_equal(o.ntiers, PC_TOPO_MAX_TIERS);
        check_order(t, cpus, N, 0, &o);
        assert_int_equal(o.tier_start[PC_TOPO_MAX_TIERS] -
                             o.tier_start[PC_TOPO_MAX_TIERS - 1],
                         N - PC_TOPO_MAX_TIERS);
        pc_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* hwloc agrees with sysfs                                                  */
/* ------------------------------------------------------------------------ */

static const struct pc_topo_cpu offline_cpu = {.online = false};

/* CPU @c of @t, or an offline CPU past its end: the loaders may size cpu[]
 * differently (possible CPUs vs hwloc's complete set), never differ on
 * what is online. */
static const struct pc_topo_cpu *cpu_at(const struct pc_topo *t, unsigned c)
{
        return c < t->ncpus ? &t->cpu[c] : &offline_cpu;
}

/* @a and @b describe the same machine; their L3s only when @l3. */
static void assert_same_l3(const struct pc_topo *a, const struct pc_topo *b, bool l3)
{
        unsigned ncpus = a->ncpus > b->ncpus ? a->ncpus : b->ncpus;

        assert_int_equal(a->nonline, b->nonline);
        assert_int_equal(a->nusable, b->nusable);
        assert_int_equal(a->ncores, b->ncores);
        assert_int_equal(a->npackages, b->npackages);
        if (l3)
                assert_int_equal(a->nl3, b->nl3);
        assert_int_equal(a->nnodes, b->nnodes);
        for (unsigned c = 0; c < ncpus; c++) {
                const struct pc_topo_cpu *x = cpu_at(a, c), *y = cpu_at(b, c);
                assert_int_equal(x->online, y->online);
                assert_int_equal(x->usable, y->usable);
                if (!x->online)
                        continue;
                assert_int_equal(x->node, y->node);
                assert_int_equal(x->package, y->package);
                assert_int_equal(x->core, y->core);
                assert_int_equal(x->smt_rank, y->smt_rank);
                if (l3)
                        assert_int_equal(x->l3, y->l3);
        }
        for (unsigned i = 0; i < a->nnodes; i++) {
                assert_int_equal(a->node[i].id, b->node[i].id);
                assert_int_equal(a->node[i].has_memory, b->node[i].has_memory);
                assert_memory_equal(a->node[i].cpus, b->node[i].cpus,
                                    sizeof(a->node[i].cpus));
        }
        assert_memory_equal(a->distance, b->distance, (size_t)a->nnodes * a->nnodes);
}

static void assert_same(const struct pc_topo *a, const struct pc_topo *b)
{
        assert_same_l3(a, b, true);
}

static void test_hwloc_agrees(void **state)
{
        static const char *const names[] = {"intel-2s-smt", "epyc-nps4", "memless-node",
                                            "offline-cpus", "laptop"};
        uint64_t allowed[PC_CPUSET_WORDS];
        struct pc_topo *a, *b;
        char top[PATH_MAX];

        (void)state;
        if (pc_topo_load_hwloc("pack:1 core:1 pu:1", NULL, &a) == -ENOTSUP)
                skip();
        pc_topo_free(a);

        /* This machine, with this process's CPUs. Some guest kernels
         * publish no caches in /sys (no cpuN/cache/): the sysfs loader
         * then knows no L3 (-1, as documented) while hwloc reads them from
         * CPUID, so the two are compared on everything else. */
        assert_true(pc_topo_affinity(allowed) > 0);
        assert_int_equal(pc_topo_load("/sys", allowed, &a), 0);
        assert_int_equal(pc_topo_load_hwloc(NULL, allowed, &b), 0);
        if (a->nl3 == 0 && access("/sys/devices/system/cpu/cpu0/cache", F_OK) != 0) {
                print_message("this machine's /sys has no cache information: L3 not "
                              "compared\n");
                assert_same_l3(a, b, false);
        } else {
                assert_same(a, b);
        }
        pc_topo_free(a);
        pc_topo_free(b);

        assert_int_equal(pc_cpulist_parse("1-3", allowed, PC_TOPO_MAX_CPUS), 3);
        for (size_t i = 0; i < NELEM(names); i++) {
                print_message("%s\n", names[i]);
                a = load(names[i], allowed);
                snprintf(top, sizeof(top), "%s/%s", fixtures_dir(), names[i]);
                setenv("HWLOC_FSROOT", top, 1);
                assert_int_equal(pc_topo_load_hwloc(NULL, allowed, &b), 0);
                unsetenv("HWLOC_FSROOT");
                assert_same(a, b);
                pc_topo_free(a);
                pc_topo_free(b);
        }
}

static void test_hwloc_synthetic(void **state)
{
        static const int spread4[] = {0, 32, 16, 48};
        struct pc_topo *t;
        int cpus[4];

        (void)state;
        if (pc_topo_load_hwloc("pack:1 core:1 pu:1", NULL, &t) == -ENOTSUP)
                skip();
        pc_topo_free(t);

        assert_int_equal(pc_topo_load_hwloc("pack:2 numa:2 l3:1 core:8 pu:2", NULL, &t),
                         0);
        assert_int_equal(t->ncpus, 64);
        assert_int_equal(t->npackages, 2);
        assert_int_equal(t->nnodes, 4);
        assert_int_equal(t->nl3, 4);
        assert_int_equal(t->ncores, 32);
        assert_int_equal(t->cpu[1].core, t->cpu[0].core);
        assert_int_equal(t->cpu[1].smt_rank, 1);
        assert_int_equal(pc_topo_distance(t, 0, 3), 20);
        /* Spread alternates packages before it doubles up on one. */
        assert_int_equal(pc_topo_place(t, 4, PC_PLACE_SPREAD, true, cpus), 0);
        assert_memory_equal(cpus, spread4, sizeof(spread4));
        pc_topo_free(t);

        /* No NUMA level: hwloc adds one node holding everything. */
        assert_int_equal(pc_topo_load_hwloc("pack:1 core:2 pu:1", NULL, &t), 0);
        assert_int_equal(t->nnodes, 1);
        assert_int_equal(t->nl3, 0);
        assert_int_equal(t->cpu[1].l3, -1);
        pc_topo_free(t);

        t = NULL;
        assert_int_equal(pc_topo_load_hwloc("pack:x core:1", NULL, &t), -EINVAL);
        assert_null(t);
        assert_int_equal(pc_topo_load_hwloc("/nonexistent.xml", NULL, &t), -EINVAL);
        assert_int_equal(pc_topo_load_hwloc(NULL, NULL, NULL), -EINVAL);
}

static void test_hwloc_xml(void **state)
{
#ifdef PC_HAVE_HWLOC
        const char *desc = "pack:2 numa:1 l3:2 core:2 pu:2";
        char path[] = "/tmp/pc-topo-XXXXXX.xml";
        struct pc_topo *a, *b;
        hwloc_topology_t h;
        int fd;

        (void)state;
        /* Export a synthetic machine to XML, then load both ways. */
        fd = mkstemps(path, 4);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(hwloc_topology_init(&h), 0);
        assert_int_equal(hwloc_topology_set_synthetic(h, desc), 0);
        assert_int_equal(hwloc_topology_load(h), 0);
        assert_int_equal(hwloc_topology_export_xml(h, path, 0), 0);
        hwloc_topology_destroy(h);
        assert_int_equal(pc_topo_load_hwloc(desc, NULL, &a), 0);
        assert_int_equal(pc_topo_load_hwloc(path, NULL, &b), 0);
        assert_same(a, b);
        assert_non_null(strstr(b->source, "xml"));
        assert_int_equal(b->nl3, 4);
        pc_topo_free(a);
        pc_topo_free(b);
        unlink(path);
#else
        (void)state;
        skip();
#endif
}

/* ------------------------------------------------------------------------ */
/* Lookups, printing, memory                                                */
/* ------------------------------------------------------------------------ */

static void test_lookups(void **state)
{
        struct pc_topo *t = load("intel-2s-smt", NULL);

        (void)state;
        assert_int_equal(pc_topo_node_of_cpu(t, 12), 1);
        assert_int_equal(pc_topo_node_of_cpu(t, 16), -EINVAL);
        assert_int_equal(pc_topo_node_of_cpu(t, -1), -EINVAL);
        assert_int_equal(pc_topo_node_of_cpu(NULL, 0), -EINVAL);
        assert_int_equal(pc_topo_node_index(t, 1), 1);
        assert_int_equal(pc_topo_node_index(t, 5), -ENOENT);
        assert_int_equal(pc_topo_distance(t, 1, 0), 21);
        assert_int_equal(pc_topo_distance(t, 1, 7), -EINVAL);
        assert_string_equal(pc_topo_tier_name(PC_TIER_PACKAGE), "package");
        assert_string_equal(pc_topo_tier_name((enum pc_tier_kind)9), "?");
        pc_topo_free(t);
}

static void test_cpulist_format(void **state)
{
        static const char *const lists[] = {"0", "0-3,8-11", "1,3,5,7", "0-1023",
                                            "5,1000-1001"};
        uint64_t set[PC_CPUSET_WORDS];
        char buf[4096], small[6];

        (void)state;
        for (size_t i = 0; i < NELEM(lists); i++) {
                assert_true(pc_cpulist_parse(lists[i], set, PC_TOPO_MAX_CPUS) > 0);
                assert_int_equal(
                    pc_cpulist_format(set, PC_TOPO_MAX_CPUS, buf, sizeof(buf)),
                    (int)strlen(lists[i]));
                assert_string_equal(buf, lists[i]);
        }
        /* Truncation reports the full length, like snprintf(). */
        assert_true(pc_cpulist_parse("0-3,8-11", set, PC_TOPO_MAX_CPUS) > 0);
        assert_int_equal(pc_cpulist_format(set, PC_TOPO_MAX_CPUS, small, sizeof(small)),
                         8);
        assert_string_equal(small, "0-3,8");
        memset(set, 0, sizeof(set));
        assert_int_equal(pc_cpulist_format(set, PC_TOPO_MAX_CPUS, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");
}

static void test_format(void **state)
{
        struct pc_topo *t = load("epyc-nps4", NULL);
        int cpus[8], depth = 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        (void)state;
        assert_int_equal(pc_topo_place(t, 8, PC_PLACE_SPREAD, true, cpus), 0);
        f = open_memstream(&text, &len);
        assert_int_equal(pc_topo_format(t, f, true), 0);
        fclose(f);
        assert_non_null(strstr(text,
                               "\"nodes\":[{\"node\":0,\"id\":0,\"has_memory\":true,"
                               "\"cpulist\":\"0-7,32-39\",\"cpus\":[0,1,2,3,4,5,6,7,32,33,"
                               "34,35,36,37,38,39],\"distance\":[10,11,12,12]}"));
        assert_non_null(strstr(text, "\"cpu\":0,\"usable\":true,"));
        assert_non_null(strstr(text, "\"smt_siblings\":[32]}"));
        for (char *p = text; *p; p++)
                depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
        assert_int_equal(depth, 0);
        free(text);

        f = open_memstream(&text, &len);
        assert_int_equal(pc_topo_format_workers(t, cpus, 8, f, false), 0);
        fclose(f);
        assert_non_null(strstr(text, "package(11):"));
        free(text);

        f = open_memstream(&text, &len);
        assert_int_equal(pc_topo_format(t, f, false), 0);
        assert_int_equal(pc_topo_format_workers(t, cpus, 0, f, false), -EINVAL);
        fclose(f);
        assert_non_null(strstr(text, "L3 groups"));
        free(text);
        pc_topo_free(t);
}

static void test_numa_alloc(void **state)
{
        size_t sz = 1 << 20;
        char *p;

        (void)state;
        errno = 0;
        assert_null(pc_numa_alloc(0, 0));
        assert_int_equal(errno, EINVAL);
        for (int node = -1; node <= 3; node++) {
                p = pc_numa_alloc(sz, node);
                assert_non_null(p);
                assert_int_equal((uintptr_t)p % 4096, 0);
                assert_int_equal(p[sz - 1], 0);
                memset(p, 0xa5, sz);
#ifdef PC_HAVE_NUMA
                /* Touched pages of a node-0 request live on node 0 (the only
                 * node this test can count on). */
                if (node == 0 && pc_numa_available()) {
                        int where = -1;
                        assert_int_equal(
                            get_mempolicy(&where, NULL, 0, p, MPOL_F_NODE | MPOL_F_ADDR),
                            0);
                        assert_int_equal(where, 0);
                }
#endif
                pc_numa_free(p, sz);
        }
        pc_numa_free(NULL, sz);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_fixture_shapes),
            cmocka_unit_test(test_intel_details),
            cmocka_unit_test(test_epyc_details),
            cmocka_unit_test(test_memless_node),
            cmocka_unit_test(test_offline_cpus),
            cmocka_unit_test(test_laptop_old_kernel),
            cmocka_unit_test(test_allowed_cpus),
            cmocka_unit_test(test_broken_falls_back),
            cmocka_unit_test(test_log_hook),
            cmocka_unit_test(test_damaged_trees),
            cmocka_unit_test(test_memory_sources),
            cmocka_unit_test(test_no_numa_kernel),
            cmocka_unit_test(test_siblings_from_core_id),
            cmocka_unit_test(test_bad_arguments),
            cmocka_unit_test(test_place_intel),
            cmocka_unit_test(test_place_epyc),
            cmocka_unit_test(test_place_laptop),
            cmocka_unit_test(test_place_errors),
            cmocka_unit_test(test_tiers_invariants),
            cmocka_unit_test(test_tiers_intel),
            cmocka_unit_test(test_tiers_epyc),
            cmocka_unit_test(test_tiers_memless),
            cmocka_unit_test(test_tiers_overflow),
            cmocka_unit_test(test_hwloc_agrees),
            cmocka_unit_test(test_hwloc_synthetic),
            cmocka_unit_test(test_hwloc_xml),
            cmocka_unit_test(test_lookups),
            cmocka_unit_test(test_cpulist_format),
            cmocka_unit_test(test_format),
            cmocka_unit_test(test_numa_alloc),
        };

        return cmocka_run_group_tests_name("numa/topo", tests, NULL, NULL);
}
