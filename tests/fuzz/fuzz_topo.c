/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the sysfs loader. The first input byte picks one file of
 * a scratch copy of the intel-2s-smt fixture, the rest becomes that file's
 * content; then the tree is loaded and everything downstream of a load
 * (placement, steal tiers, printing) runs on the result. The contract is
 * the loader's: any content gives 0 or -errno, never a crash or a leak.
 *
 * Built as a libFuzzer target (fuzz_topo) when the compiler is clang, and
 * always with driver.c (fuzz_topo_driver), which replays the committed
 * corpus and mutations of it as a regression test under any compiler.
 */
#include <stdint.h>

#include "fixture_util.h"
#include "pc_topo.h"

static const char *const targets[] = {
    "devices/system/cpu/online",
    "devices/system/cpu/possible",
    "devices/system/cpu/cpu5/topology/core_cpus_list",
    "devices/system/cpu/cpu5/topology/physical_package_id",
    "devices/system/cpu/cpu5/topology/die_id",
    "devices/system/cpu/cpu3/cache/index3/shared_cpu_list",
    "devices/system/cpu/cpu3/cache/index3/level",
    "devices/system/cpu/cpu3/cache/index3/type",
    "devices/system/node/online",
    "devices/system/node/has_memory",
    "devices/system/node/node1/cpulist",
    "devices/system/node/node1/distance",
    "devices/system/node/node1/meminfo",
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static char top[PATH_MAX], root[PATH_MAX];
static char saved[NTARGETS][512];
static size_t saved_len[NTARGETS];
static FILE *sink;

static void cleanup(void)
{
        rm_tree(top);
        if (sink)
                fclose(sink);
}

static void setup(void)
{
        char path[PATH_MAX + 256];

        if (fixture_copy("intel-2s-smt", top, sizeof(top), root, sizeof(root)) != 0) {
                fprintf(stderr, "fuzz_topo: cannot copy the fixture from %s\n",
                        fixtures_dir());
                abort();
        }
        atexit(cleanup);
        for (size_t i = 0; i < NTARGETS; i++) {
                FILE *f;
                snprintf(path, sizeof(path), "%s/%s", root, targets[i]);
                f = fopen(path, "r");
                if (f == NULL)
                        abort();
                saved_len[i] = fread(saved[i], 1, sizeof(saved[i]), f);
                fclose(f);
        }
        sink = fopen("/dev/null", "w");
}

static void exercise(const struct pc_topo *t)
{
        int cpus[PC_TOPO_MAX_WORKERS];
        unsigned n = t->nusable < 24 ? t->nusable : 24;
        struct pc_steal_order o;

        pc_topo_format(t, sink, true);
        pc_topo_format(t, sink, false);
        if (n == 0)
                return;
        for (int pl = 0; pl < 2; pl++) {
                if (pc_topo_place(t, n, (enum pc_placement)pl, false, cpus) != 0)
                        abort();
                for (unsigned w = 0; w < n; w++)
                        if (pc_topo_steal_tiers(t, cpus, n, w, &o) != 0 ||
                            o.nvictims != n - 1)
                                abort();
                pc_topo_format_workers(t, cpus, n, sink, pl == 0);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct pc_topo *t = NULL;
        size_t k;
        int rc;

        if (root[0] == '\0')
                setup();
        if (size < 1)
                return 0;
        k = data[0] % NTARGETS;
        if (put_file(root, targets[k], data + 1, size - 1) != 0)
                abort();
        rc = pc_topo_load(root, NULL, &t);
        if (rc == 0) {
                if (t == NULL || t->nonline == 0)
                        abort();
                exercise(t);
                pc_topo_free(t);
        } else if (rc > 0 || t != NULL) {
                abort();
        }
        if (put_file(root, targets[k], saved[k], saved_len[k]) != 0)
                abort();
        return 0;
}

