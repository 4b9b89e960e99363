/* SPDX-License-Identifier: MIT */
/*
 * The server's settings and per-worker state (kv_pvt.h), with the flags'
 * defaults: set up by server.c, read by every file that serves requests.
 */
#include "kv_pvt.h"

struct kv_settings kv_set = {
        .addr = "127.0.0.1",
        .tcp_port = 11211,
        .udp_port = 0,
        .mem_mb = 64,
        .max_conns = 1024,
        .item_max = KV_ITEM_MAX_DEFAULT,
        .backend = "kernel",
};
struct pc_runtime *kv_rt;
struct kv_store *kv_stores[PC_MAX_WORKERS];
struct kv_wstat kv_wstats[PC_MAX_WORKERS];
_Static_assert(sizeof(struct kv_wstat) == 64, "one counter block per cache line");
