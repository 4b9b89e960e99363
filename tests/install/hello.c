/* SPDX-License-Identifier: MIT */
/*
 * A program outside the tree, built against the installed library with
 * `pkg-config --cflags --libs percore`: every worker says hello, then the
 * last one stops the runtime. Prints "hello from N workers".
 */
#include <percore.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_uint greeted;

static void hello(void *arg)
{
        struct pc_runtime *rt = arg;

        if (atomic_fetch_add(&greeted, 1) + 1 == pc_runtime_workers(rt))
                pc_runtime_stop(rt);
}

static void start(void *arg)
{
        struct pc_runtime *rt = arg;

        for (unsigned w = 0; w < pc_runtime_workers(rt); w++)
                pc_spawn_on(w, hello, rt);
}

int main(void)
{
        struct pc_runtime *rt;
        int rc = pc_runtime_create(NULL, &rt);

        if (rc) {
                fprintf(stderr, "pc_runtime_create: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_runtime_run(rt, start, rt);
        printf("hello from %u workers\n", atomic_load(&greeted));
        pc_runtime_destroy(rt);
        return rc ? 1 : 0;
}
