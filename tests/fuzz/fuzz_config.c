/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the configuration parsers: the first byte picks a
 * PERCORE_* variable, the rest (up to a NUL) is its value. Parsing must
 * give 0 or -EINVAL with a message naming the variable, and a CPU list
 * that parses must hold exactly the count it reports. Nothing else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore.h"

static const char *const vars[] = {
        "PERCORE_MODE",         "PERCORE_WORKERS",          "PERCORE_CPUS",
        "PERCORE_PLACEMENT",    "PERCORE_PIN",              "PERCORE_STEAL_BATCH",
        "PERCORE_STEAL_TIERS",  "PERCORE_REMOTE_STEAL_MIN", "PERCORE_IDLE",
        "PERCORE_IDLE_SPIN_US", "PERCORE_MONITOR_MS",       "PERCORE_SEED",
        "PERCORE_SYSFS_ROOT",   "PERCORE_TOPOLOGY",         "PERCORE_EAL_ARGS",
        "PERCORE_LOG",          "PERCORE_STATS",            "PERCORE_STALL_MS",
        "PERCORE_METRICS",      "PERCORE_OVERPROVISIONED",  "PERCORE_FIBER_STACK_KB",
        /* no longer read: each must be refused with its replacement named */
        "PERCORE_SHARED",       "PERCORE_PACK",             "PERCORE_SCHED",
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char val[512], err[256];
        const char *var;
        struct pc_config cfg;
        uint64_t set[PC_MAX_CPUS / 64];
        size_t n;
        int rc, count = 0;

        if (size == 0)
                return 0;
        var = vars[data[0] % NVARS];
        n = size - 1 < sizeof(val) - 1 ? size - 1 : sizeof(val) - 1;
        memcpy(val, data + 1, n);
        val[n] = '\0';

        rc = pc_cpulist_parse(val, set, PC_MAX_CPUS);
        if (rc != -EINVAL && rc != -ERANGE) {
                if (rc < 0)
                        abort();
                for (unsigned i = 0; i < PC_MAX_CPUS / 64; i++)
                        count += __builtin_popcountll(set[i]);
                if (count != rc)
                        abort();
        }

        for (size_t i = 0; i < NVARS; i++)
                unsetenv(vars[i]);
        setenv(var, val, 1);
        pc_config_init(&cfg);
        err[0] = '\0';
        rc = pc_config_from_env(&cfg, err, sizeof(err));
        if (rc != 0 && (rc != -EINVAL || strstr(err, var) == NULL))
                abort();
        if (rc == 0) {
                char line[1024];
                rc = pc_config_validate(&cfg, err, sizeof(err));
                if (rc != 0 && rc != -EINVAL)
                        abort();
                pc_config_format(&cfg, line, sizeof(line));
        }
        unsetenv(var);
        return 0;
}
