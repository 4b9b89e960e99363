/* SPDX-License-Identifier: MIT */
/*
 * percore: a thread-per-core framework for network services.
 *
 * The header a user includes: the public headers of the topology, the
 * runtime, fibers, shard/ and net/'s service API, the layer below first.
 * Each may be included alone too; the modules include what they build on
 * (core/ knows nothing of shard/ or net/).
 */
#ifndef PERCORE_H
#define PERCORE_H

#include "pc_topo.h"  /* numa/: topology, placement, CPU lists */
#include "pc_core.h"  /* core/: runtime, tasks, timers, pollers, stats */
#include "pc_fiber.h" /* core/: fibers */
#include "pc_shard.h" /* shard/: mailboxes, sharded helpers, blocking lane */
#include "pc_net.h"   /* net/: connections, listeners, UDP endpoints */

/* A backend's own header says how its listeners and ports are made:
 * pc_knet.h (kernel sockets, io_uring) and pc_dpdk.h (DPDK). */

#endif /* PERCORE_H */
