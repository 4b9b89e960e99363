/* SPDX-License-Identifier: MIT */
/*
 * A program that uses the DPDK parts, built against the installed library
 * with `pkg-config --cflags --libs percore-dpdk`: it includes pc_dpdk.h and
 * DPDK's own headers and links both libraries. Run without
 * PERCORE_EAL_ARGS, the runtime starts no EAL and has no ports, so it runs
 * anywhere.
 * Prints "dpdk: 0 ports, mbuf <size> bytes, DPDK <version>".
 */
#include <percore.h>
#include <pc_dpdk.h>
#include <rte_mbuf.h>
#include <rte_version.h>
#include <stdio.h>

#if !PC_CONFIG_DPDK
#error "pc_config.h says the library has no DPDK, yet percore-dpdk.pc was installed"
#endif

int main(void)
{
        struct pc_runtime *rt;
        int rc = pc_runtime_create(NULL, &rt);

        if (rc) {
                fprintf(stderr, "pc_runtime_create: %s\n", pc_strerror(rc));
                return 1;
        }
        /* rte_mbuf.h builds only with DPDK's cflags (-include rte_config.h). */
        printf("dpdk: %u ports, mbuf %u bytes, %s\n", pc_port_count(rt),
               (unsigned)RTE_MBUF_DEFAULT_BUF_SIZE, rte_version());
        pc_runtime_destroy(rt);
        return 0;
}
