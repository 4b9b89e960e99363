/* SPDX-License-Identifier: MIT */
/*
 * The awaits: pc_call() and pc_spawn_blocking() from a fiber, which waits
 * for the reply instead of giving a callback. The reply's @done runs on
 * the fiber's own worker and wakes it, going on in place when it can
 * (pc__fiber_wake_here()); the record it fills lives on the fiber's
 * stack, which stays put while the fiber is suspended.
 */
#include <errno.h>

#include "pc_fiber.h"
#include "shard_pvt.h"

struct await {
        struct pc_fiber *f;
        void *result;
};

static void await_done(void *result, void *arg)
{
        struct await *a = arg;

        a->result = result;
        /* On the fiber's worker, from the reply's or the job's done. */
        pc__fiber_wake_here(a->f, 0);
}

int pc_call_await(unsigned dst, void *(*fn)(void *arg), void *arg, void **result)
{
        struct await a = {.f = pc_fiber_self()};
        int rc;

        if (a.f == NULL)
                return -EPERM;
        rc = pc_call(dst, fn, arg, await_done, &a);
        if (rc)
                return rc;
        pc__fiber_wait();
        if (result)
                *result = a.result;
        return 0;
}

int pc_blocking_await(void *(*fn)(void *arg), void *arg, void **result)
{
        struct await a = {.f = pc_fiber_self()};
        int rc;

        if (a.f == NULL)
                return -EPERM;
        rc = pc_spawn_blocking(fn, arg, await_done, &a);
        if (rc)
                return rc;
        pc__fiber_wait();
        if (result)
                *result = a.result;
        return 0;
}
