/* SPDX-License-Identifier: MIT */
/*
 * Shards lent while their owner sleeps.
 *
 * By default another worker reaches a shard only through its owner's
 * mailbox (pc_call()), as everywhere in percore. An overprovisioned
 * runtime (PERCORE_OVERPROVISIONED=1: CPUs shared with the clients) lends
 * a sleeping owner's shard instead, because there the two wake-ups a call
 * costs (the owner's, then the caller's with the reply) are turns taken
 * from the clients, for one request.
 *
 * A worker touches a store only while it holds that shard's token. The
 * owner takes its own back whenever it uses it (kv_shard_hold) and, when
 * lending, lets it go as it parks (the poller below), so a token is free
 * while its owner sleeps or has not used its store since it woke. Another
 * worker with a request for that shard then takes the token, runs the
 * request on the owner's store itself and gives the token back. The
 * token's acquire and release order every store access after the last
 * holder's. Without lending no other worker takes a token, and the owner's
 * hold finds its own at once.
 */
#include <sched.h>
#include <stdatomic.h>

#include "kv_pvt.h"

static struct {
        _Alignas(64) _Atomic unsigned holder; /* worker + 1, or 0: free */
} tokens[PC_MAX_WORKERS];

/* Set once, by kv_shard_lend_start(); read by every worker. */
static _Alignas(64) _Atomic bool lending;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
}

void kv_shard_hold(void)
{
        unsigned me = (unsigned)pc_worker_id(), free_ = 0;

        if (atomic_load_explicit(&tokens[me].holder, memory_order_relaxed) == me + 1)
                return;
        /* A borrower holds it for one request; if the kernel preempted
         * that thread meanwhile, give it the CPU rather than spin. */
        for (unsigned spins = 0;
             !atomic_compare_exchange_weak_explicit(&tokens[me].holder, &free_, me + 1,
                                                    memory_order_acquire,
                                                    memory_order_relaxed);
             spins++) {
                free_ = 0;
                if (spins >= 1000)
                        sched_yield();
                else
                        relax();
        }
}

bool kv_shard_borrow(unsigned me, unsigned owner)
{
        unsigned free_ = 0;

        if (!atomic_load_explicit(&lending, memory_order_relaxed) ||
            atomic_load_explicit(&tokens[owner].holder, memory_order_relaxed) != 0)
                return false;
        if (!atomic_compare_exchange_strong_explicit(&tokens[owner].holder, &free_, me + 1,
                                                     memory_order_acquire, memory_order_relaxed))
                return false;
        kv_wstats[me].borrowed++;
        return true;
}

void kv_shard_return(unsigned owner)
{
        atomic_store_explicit(&tokens[owner].holder, 0, memory_order_release);
}

static unsigned lend_poll(void *arg)
{
        (void)arg;
        return 0;
}

/* About to sleep: the shard is free to borrow until we use it again. */
static bool lend_prepare_sleep(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();

        (void)arg;
        if (atomic_load_explicit(&tokens[me].holder, memory_order_relaxed) == me + 1)
                atomic_store_explicit(&tokens[me].holder, 0, memory_order_release);
        return true;
}

static const struct pc_poller_ops lend_ops = {
        .name = "kv-shard-lend",
        .poll = lend_poll,
        .prepare_sleep = lend_prepare_sleep,
};

static void lend_start(void *arg)
{
        (void)arg;
        if (pc_poller_register(&lend_ops, NULL, NULL))
                pc_log(PC_LOG_WARN, "pc-kv: worker %d keeps its shard (no poller)",
                       pc_worker_id());
}

void kv_shard_lend_start(void)
{
        unsigned n = pc_runtime_workers(kv_rt);

        atomic_store_explicit(&lending, true, memory_order_relaxed);
        for (unsigned w = 0; w < n; w++)
                if (pc_spawn_on(w, lend_start, NULL))
                        pc_log(PC_LOG_WARN, "pc-kv: worker %u keeps its shard", w);
}
