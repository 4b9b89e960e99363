/* SPDX-License-Identifier: MIT */
/*
 * Node-local memory. Every allocation is an anonymous mapping, bound to its
 * node with libnuma when it can be, so one free path (munmap) serves both
 * cases and the caller never has to remember which one it got.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "topo_pvt.h"

#ifdef PC_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

bool pc_numa_available(void)
{
#ifdef PC_HAVE_NUMA
        /* numa_available() is a cheap syscall probe; libnuma caches nothing
         * we depend on, so asking each time keeps this thread-safe. */
        return numa_available() >= 0;
#else
        return false;
#endif
}

int pc_numa_prefer(void *p, size_t size, int node)
{
#ifdef PC_HAVE_NUMA
        /* Preferred, not bound: numa_alloc_onnode() would follow libnuma's
         * process-wide bind policy, strict by default, under which a full
         * node means the OOM killer at first touch rather than a page from
         * the next node. A node the kernel refuses (no memory) leaves the
         * mapping to first touch, which is the best remaining choice. */
        if (node >= 0 && node < PC_TOPO_MAX_NODES && numa_available() >= 0) {
                unsigned long mask[PC_TOPO_MAX_NODES / (8 * sizeof(unsigned long))] = {0};

                mask[(unsigned)node / (8 * sizeof(unsigned long))] |=
                    1ul << ((unsigned)node % (8 * sizeof(unsigned long)));
                if (mbind(p, size, MPOL_PREFERRED, mask, PC_TOPO_MAX_NODES + 1, 0) != 0) {
                        int err = errno;

                        pc__topo_log(PC_TOPO_LOG_DEBUG, "numa: cannot prefer node %d: %s",
                                     node, strerror(err));
                        return -err;
                }
                return 0;
        }
        return -ENOTSUP;
#else
        (void)p;
        (void)size;
        (void)node;
        return -ENOTSUP;
#endif
}

void *pc_numa_alloc(size_t size, int node)
{
        void *p;

        if (size == 0) {
                errno = EINVAL;
                return NULL;
        }
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                errno = ENOMEM;
                return NULL;
        }
        (void)pc_numa_prefer(p, size, node);
        return p;
}

void pc_numa_free(void *p, size_t size)
{
        if (p != NULL && size != 0)
                munmap(p, size);
}
