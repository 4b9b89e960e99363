/* SPDX-License-Identifier: MIT */
/*
 * percore-topo: print what percore sees of a machine and where it would
 * put N workers, with each worker's steal tiers. Works on this machine, a
 * fake /sys tree (--root), or anything hwloc can load (--hwloc).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_topo.h"

static const char usage[] =
    "usage: percore-topo [options]\n"
    "  --sysfs DIR         read the sysfs tree DIR (also --root; default $PERCORE_SYSFS_ROOT or "
    "/sys)\n"
    "  --hwloc [SRC]       load through hwloc: this machine, an XML file (*.xml),\n"
    "                      or a synthetic description (\"pack:2 numa:1 core:4 pu:2\")\n"
    "  --workers N         workers to place, 1..128 (default: one per usable CPU)\n"
    "  --placement P       compact or spread (default $PERCORE_PLACEMENT or compact)\n"
    "  --cpus LIST         usable CPUs, like 0-3,8 (default: this process's affinity\n"
    "                      for this machine, every online CPU for a tree or hwloc "
    "source)\n"
    "  --no-pin            allow more workers than CPUs (placement wraps around)\n"
    "  --json              one JSON object instead of tables\n"
    "  --help              this text\n";

struct opts {
        const char *root;
        bool hwloc;
        const char *hwloc_src;
        unsigned workers;
        enum pc_placement placement;
        const char *cpus;
        bool pin;
        bool json;
};

static int bad_usage(const char *fmt, const char *arg)
{
        fprintf(stderr, "percore-topo: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, " (see percore-topo --help)\n");
        return 2;
}

static int parse_placement(const char *s, enum pc_placement *out)
{
        if (strcmp(s, "compact") == 0)
                *out = PC_PLACE_COMPACT;
        else if (strcmp(s, "spread") == 0)
                *out = PC_PLACE_SPREAD;
        else
                return -EINVAL;
        return 0;
}

/* Returns 0 to go on, 1 after --help, 2 for a usage error (printed). */
static int parse_args(int argc, char **argv, struct opts *o)
{
        const char *env = getenv("PERCORE_PLACEMENT");
        const char *src = getenv("PERCORE_TOPOLOGY");

        o->root = getenv("PERCORE_SYSFS_ROOT");
        if (o->root == NULL || o->root[0] == '\0')
                o->root = "/sys";
        if (src && strcmp(src, "hwloc") != 0 && strcmp(src, "sysfs") != 0)
                return bad_usage("PERCORE_TOPOLOGY='%s' is not valid: sysfs or hwloc",
                                 src);
        o->hwloc = src && strcmp(src, "hwloc") == 0;
        o->pin = true;
        if (env && parse_placement(env, &o->placement) != 0)
                return bad_usage("PERCORE_PLACEMENT='%s' is not valid: compact or spread",
                                 env);

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        fputs(usage, stdout);
                        return 1;
                } else if (strcmp(a, "--json") == 0) {
                        o->json = true;
                } else if (strcmp(a, "--no-pin") == 0) {
                        o->pin = false;
                } else if (strcmp(a, "--hwloc") == 0) {
                        o->hwloc = true;
                        if (v && v[0] != '-') {
                                o->hwloc_src = v;
                                i++;
                        }
                } else if (strcmp(a, "--root") == 0 || strcmp(a, "--sysfs") == 0 ||
                           strcmp(a, "--workers") == 0 ||
                           strcmp(a, "--placement") == 0 || strcmp(a, "--cpus") == 0) {
                        if (v == NULL)
                                return bad_usage("%s needs a value", a);
                        i++;
                        if (strcmp(a, "--root") == 0 || strcmp(a, "--sysfs") == 0) {
                                o->root = v;
                        } else if (strcmp(a, "--cpus") == 0) {
                                o->cpus = v;
                        } else if (strcmp(a, "--placement") == 0) {
                                if (parse_placement(v, &o->placement) != 0)
                                        return bad_usage(
                                            "--placement '%s': use compact or spread", v);
                        } else {
                                char *end;
                                unsigned long n = strtoul(v, &end, 10);
                                if (v[0] < '0' || v[0] > '9' || *end || n < 1 ||
                                    n > PC_TOPO_MAX_WORKERS)
                                        return bad_usage(
                                            "--workers '%s': expected 1 to 128", v);
                                o->workers = (unsigned)n;
                        }
                } else {
                        return bad_usage("unknown option '%s'", a);
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        uint64_t allowed[PC_CPUSET_WORDS];
        const uint64_t *allowp = NULL;
        int cpus[PC_TOPO_MAX_WORKERS];
        struct pc_topo *t = NULL;
        struct opts o = {0};
        bool this_machine;
        int rc;

        rc = parse_args(argc, argv, &o);
        if (rc)
                return rc == 1 ? 0 : rc;

        this_machine = o.hwloc ? o.hwloc_src == NULL && getenv("HWLOC_FSROOT") == NULL
                               : strcmp(o.root, "/sys") == 0;
        if (o.cpus) {
                if (pc_cpulist_parse(o.cpus, allowed, PC_TOPO_MAX_CPUS) < 0)
                        return bad_usage("--cpus '%s' is not a CPU list like 0-3,8",
                                         o.cpus);
                allowp = allowed;
        } else if (this_machine && pc_topo_affinity(allowed) > 0) {
                allowp = allowed;
        }

        rc = o.hwloc ? pc_topo_load_hwloc(o.hwloc_src, allowp, &t)
                     : pc_topo_load(o.root, allowp, &t);
        if (rc) {
                fprintf(stderr, "percore-topo: cannot load the topology from %s: %s\n",
                        o.hwloc ? (o.hwloc_src ? o.hwloc_src : "hwloc") : o.root,
                        strerror(-rc));
                return 1;
        }
        if (o.workers == 0)
                o.workers =
                    t->nusable < PC_TOPO_MAX_WORKERS ? t->nusable : PC_TOPO_MAX_WORKERS;
        if (o.workers == 0) {
                fprintf(stderr, "percore-topo: no usable CPU\n");
                pc_topo_free(t);
                return 1;
        }
        rc = pc_topo_place(t, o.workers, o.placement, o.pin, cpus);
        if (rc) {
                fprintf(stderr,
                        "percore-topo: cannot place %u workers on %u usable CPUs: %s%s\n",
                        o.workers, t->nusable, strerror(-rc),
                        rc == -EINVAL && o.pin
                            ? " (--no-pin allows more workers than CPUs)"
                            : "");
                pc_topo_free(t);
                return 1;
        }

        if (o.json) {
                rc = pc_topo_format_workers(t, cpus, o.workers, stdout, true);
                fputs("\n", stdout);
        } else {
                pc_topo_format(t, stdout, false);
                printf("\n%u workers, placement %s, %s\n", o.workers,
                       o.placement == PC_PLACE_SPREAD ? "spread" : "compact",
                       o.pin ? "pinned" : "not pinned");
                rc = pc_topo_format_workers(t, cpus, o.workers, stdout, false);
        }
        pc_topo_free(t);
        if (rc || fflush(stdout) != 0) {
                fprintf(stderr, "percore-topo: cannot write the output\n");
                return 1;
        }
        return 0;
}
