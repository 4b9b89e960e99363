/* SPDX-License-Identifier: MIT */
/*
 * eal_fail EAL_ARGS ERRNO: create a DPDK runtime with EAL_ARGS and expect
 * pc_runtime_create() to return -ERRNO (a failing EAL start ends the EAL's
 * one chance in a process, so each case is its own process). Exit 0 when
 * it did, 1 otherwise; that the process gets to exit at all shows the
 * library did not exit() on the error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "percore.h"

int main(int argc, char **argv)
{
        struct pc_config cfg;
        struct pc_runtime *rt = NULL;
        int rc, want;

        if (argc != 3) {
                fprintf(stderr, "usage: eal_fail EAL_ARGS ERRNO\n");
                return 2;
        }
        want = -atoi(argv[2]);
        pc_config_init(&cfg);
        cfg.workers = 2;
        cfg.pin = false;
        cfg.eal_args = argv[1];
        rc = pc_runtime_create(&cfg, &rt);
        printf("pc_runtime_create: %d (%s), expected %d (%s)\n", rc, pc_strerror(rc), want,
               pc_strerror(want));
        if (rc == 0)
                pc_runtime_destroy(rt);
        return rc == want && rt == NULL ? 0 : 1;
}
