/* SPDX-License-Identifier: MIT */
/*
 * Pollers: per-worker callbacks the reactor runs every iteration. The list
 * is owned by its worker; unregistering during a poll pass only marks the
 * poller, and the pass frees it once it is over.
 */
#include <errno.h>
#include <stdlib.h>

#include "pc_core_pvt.h"

int pc_poller_register(const struct pc_poller_ops *ops, void *arg, struct pc_poller **out)
{
        struct pc_worker *w = pc__self;
        struct pc_poller *p;

        if (w == NULL)
                return -EPERM;
        if (ops == NULL || ops->poll == NULL)
                return -EINVAL;
        if (w->npollers == w->cap_pollers) {
                unsigned cap = w->cap_pollers ? w->cap_pollers * 2 : 8;
                struct pc_poller **v = realloc(w->pollers, cap * sizeof(*v));
                if (v == NULL)
                        return -ENOMEM;
                w->pollers = v;
                w->cap_pollers = cap;
        }
        p = calloc(1, sizeof(*p));
        if (p == NULL)
                return -ENOMEM;
        p->ops = ops;
        p->arg = arg;
        p->worker = w->id;
        w->pollers[w->npollers++] = p;
        if (out)
                *out = p;
        return 0;
}

/* The worker's idle passes follow the union of its live pollers' hints. */
static void hints_update(struct pc_worker *w)
{
        unsigned hints = 0;

        for (unsigned i = 0; i < w->npollers; i++)
                if (!w->pollers[i]->dead)
                        hints |= w->pollers[i]->hints;
        w->poll_hints = (uint8_t)hints;
}

int pc_poller_unregister(struct pc_poller *p)
{
        struct pc_worker *w = pc__self;

        if (w == NULL)
                return -EPERM;
        if (p == NULL || p->dead)
                return -EINVAL;
        if (p->worker != w->id)
                return -EXDEV;
        p->dead = true;
        w->pollers_dirty = true;
        if (p->hints)
                hints_update(w);
        return 0;
}

int pc__poller_hint(struct pc_poller *p, unsigned hints)
{
        struct pc_worker *w = pc__self;

        if (w == NULL)
                return -EPERM;
        if (p->worker != w->id)
                return -EXDEV;
        p->hints = (uint8_t)hints;
        hints_update(w);
        return 0;
}
