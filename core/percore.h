/* SPDX-License-Identifier: MIT */
/*
 * percore: a thread-per-core framework for network services.
 *
 * The header a user includes: the public headers of the topology, the
 * runtime, fibers and shard/, the layer below first. Each may be included
 * alone too; the modules include what they build on (core/ knows nothing
 * of shard/ or net/).
 */
#ifndef PERCORE_H
#define PERCORE_H

#include "pc_topo.h"  /* numa/: topology, placement, CPU lists */
#include "pc_core.h"  /* core/: runtime, tasks, timers, pollers, stats */
#include "pc_fiber.h" /* core/: fibers */
#include "pc_shard.h" /* shard/: mailboxes, sharded helpers, blocking lane */

/* Not net/'s pc_net.h: it brings the socket API (<sys/socket.h>), whose
 * names (send, bind, ...) a program that includes percore.h alone may
 * use for its own. A service includes pc_net.h, or its backend's header. */

#endif /* PERCORE_H */
