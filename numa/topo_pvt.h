/* SPDX-License-Identifier: MIT */
/*
 * What the topology loaders share. A loader fills a pc_topo whose cpu[].core
 * and cpu[].l3 hold a *representative* CPU of the group (any CPU that every
 * member agrees on, usually the lowest) and whose nodes are complete; then
 * pc__topo_finish() turns representatives into dense indexes and derives
 * every count, so both loaders number things the same way.
 */
#ifndef PC_TOPO_PVT_H
#define PC_TOPO_PVT_H

#include "pc_topo.h"

static inline bool pc__bit(const uint64_t *set, unsigned i)
{
        return (set[i / 64] >> (i % 64)) & 1;
}

static inline void pc__bit_set(uint64_t *set, unsigned i)
{
        set[i / 64] |= 1ull << (i % 64);
}

/* Format one message and hand it to the hook pc_topo_set_log() installed
 * (or to stderr). Any thread. */
void pc__topo_log(enum pc_topo_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Highest set bit below @nbits, or -1 for an empty set. */
int pc__set_last(const uint64_t *set, unsigned nbits);

/* Allocate a topology for @ncpus CPUs and @nnodes nodes, every CPU offline
 * and every field -1. Returns NULL when out of memory. */
struct pc_topo *pc__topo_alloc(unsigned ncpus, unsigned nnodes);

/* Number cores and L3s densely, rank SMT threads, mark usable CPUs, count.
 * Returns 0, or -EINVAL when a node has no CPU the topology knows about
 * or an online CPU has no node (the caller's data is inconsistent). */
int pc__topo_finish(struct pc_topo *t, const uint64_t *allowed);

/* The flat topology: one node (id 0, with memory), one package, each CPU
 * of @online its own core, no L3. */
int pc__topo_flat(const uint64_t *online, const uint64_t *allowed, const char *source,
                  struct pc_topo **out);

#endif /* PC_TOPO_PVT_H */
