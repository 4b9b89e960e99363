/* SPDX-License-Identifier: MIT */
/*
 * Sharded services on top of the mailboxes: key -> worker, run on every
 * worker, map/reduce across workers, and per-worker slots.
 *
 * pc_for_each_worker() and pc_map_reduce() are N pc_call()s sharing one
 * context that lives on the caller: the replies come back to the caller's
 * worker, so the context needs no atomics. Before sending anything they
 * reserve an overflow node per worker, so a full ring cannot make them fail
 * half-way: either every worker gets the call or none does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shard_pvt.h"

/* ---- key -> worker ------------------------------------------------------- */

uint64_t pc_shard_hash(const void *key, size_t len)
{
        const unsigned char *p = key;
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 0x100000001b3ull; /* FNV-1a 64 prime */
        }
        /* fmix64: every input bit reaches the high bits pc_shard_pick() uses. */
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return h;
}

unsigned pc_shard_pick(uint64_t hash, unsigned n)
{
        return (unsigned)(((hash >> 32) * n) >> 32);
}

unsigned pc_shard_of(const void *key, size_t len)
{
        struct pc_runtime *rt = pc_runtime_current();

        if (rt == NULL || (key == NULL && len != 0))
                return 0;
        return pc_shard_pick(pc_shard_hash(key, len), pc_runtime_workers(rt));
}

/* ---- for each worker ----------------------------------------------------- */

struct each_ctx {
        void (*fn)(void *arg);
        void *arg;
        void (*done)(void *done_arg);
        void *done_arg;
        unsigned left; /* caller's worker only */
};

static void *each_run(void *arg)
{
        struct each_ctx *c = arg;

        c->fn(c->arg);
        return NULL;
}

static void each_back(void *result, void *arg)
{
        struct each_ctx *c = arg;

        (void)result;
        if (--c->left)
                return;
        if (c->done)
                c->done(c->done_arg);
        free(c);
}

/* Send one call to every worker, all or none (see the file comment). */
static int call_all(struct pc__shard_worker *sw, void *(*fn)(void *), void *const *args,
                    void (*back)(void *, void *), void *const *back_args)
{
        struct pc_task *spare;
        int rc = pc__mbox_reserve(sw, sw->n, &spare);

        if (rc)
                return rc;
        for (unsigned w = 0; w < sw->n; w++) {
                struct pc__msg m = {.fn.call = fn, .arg = args[w], .done = back,
                                    .done_arg = back_args[w]};
                /* Cannot fail: a reserved node is at hand for every send. */
                pc__mbox_send(sw, w, MBOX_REQ, &m, &spare);
        }
        pc__mbox_unreserve(sw, spare);
        return 0;
}

int pc_for_each_worker(void (*fn)(void *arg), void *arg, void (*done)(void *arg),
                       void *done_arg)
{
        struct pc__shard_worker *sw;
        struct each_ctx *c;
        void *args[PC_MAX_WORKERS];
        int rc;

        sw = pc__shard_self(&rc);
        if (sw == NULL)
                return rc;
        if (fn == NULL)
                return -EINVAL;
        c = malloc(sizeof(*c));
        if (c == NULL)
                return -ENOMEM;
        *c = (struct each_ctx){.fn = fn, .arg = arg, .done = done, .done_arg = done_arg,
                               .left = sw->n};
        for (unsigned w = 0; w < sw->n; w++)
                args[w] = c;
        rc = call_all(sw, each_run, args, each_back, args);
        if (rc)
                free(c);
        return rc;
}

/* ---- map / reduce -------------------------------------------------------- */

struct mr_ctx;

struct mr_item {
        struct mr_ctx *ctx;
        void *item;
};

struct mr_ctx {
        void *(*map)(void *arg);
        void *arg;
        void *(*reduce)(void *acc, void *item, void *arg);
        void *acc;
        void (*done)(void *acc, void *done_arg);
        void *done_arg;
        unsigned n, left; /* caller's worker only */
        struct mr_item items[];
};

static void *mr_map(void *arg)
{
        struct mr_ctx *c = arg;

        return c->map(c->arg);
}

static void mr_back(void *result, void *arg)
{
        struct mr_item *it = arg;
        struct mr_ctx *c = it->ctx;

        it->item = result;
        if (--c->left)
                return;
        for (unsigned w = 0; w < c->n; w++)
                c->acc = c->reduce(c->acc, c->items[w].item, c->arg);
        c->done(c->acc, c->done_arg);
        free(c);
}

int pc_map_reduce(void *(*map)(void *arg), void *arg,
                  void *(*reduce)(void *acc, void *item, void *arg), void *acc0,
                  void (*done)(void *acc, void *done_arg), void *done_arg)
{
        struct pc__shard_worker *sw;
        struct mr_ctx *c;
        void *args[PC_MAX_WORKERS], *backs[PC_MAX_WORKERS];
        int rc;

        sw = pc__shard_self(&rc);
        if (sw == NULL)
                return rc;
        if (map == NULL || reduce == NULL || done == NULL)
                return -EINVAL;
        c = malloc(sizeof(*c) + sw->n * sizeof(c->items[0]));
        if (c == NULL)
                return -ENOMEM;
        *c = (struct mr_ctx){.map = map, .arg = arg, .reduce = reduce, .acc = acc0,
                             .done = done, .done_arg = done_arg, .n = sw->n, .left = sw->n};
        for (unsigned w = 0; w < sw->n; w++) {
                c->items[w] = (struct mr_item){.ctx = c};
                args[w] = c;
                backs[w] = &c->items[w];
        }
        rc = call_all(sw, mr_map, args, mr_back, backs);
        if (rc)
                free(c);
        return rc;
}

/* ---- per-worker slots ---------------------------------------------------- */

struct pc_slot_cell {
        _Atomic(void *) v;
} PC_ALIGNED;

_Static_assert(sizeof(struct pc_slot_cell) == PC_CACHE_LINE, "one slot per cache line");

struct pc_slot {
        unsigned n;
        struct pc_slot_cell cells[] PC_ALIGNED;
};

int pc_slot_create(struct pc_runtime *rt, struct pc_slot **out)
{
        struct pc_slot *s;
        unsigned n;
        size_t bytes;

        if (rt == NULL || out == NULL)
                return -EINVAL;
        n = pc_runtime_workers(rt);
        bytes = sizeof(*s) + n * sizeof(s->cells[0]);
        s = aligned_alloc(PC_CACHE_LINE, bytes);
        if (s == NULL)
                return -ENOMEM;
        memset(s, 0, bytes);
        s->n = n;
        for (unsigned i = 0; i < n; i++)
                atomic_init(&s->cells[i].v, NULL);
        *out = s;
        return 0;
}

void pc_slot_destroy(struct pc_slot *s)
{
        free(s);
}

int pc_slot_set(struct pc_slot *s, void *v)
{
        struct pc_worker *w = pc__self;

        if (w == NULL)
                return -EPERM;
        if (s == NULL || w->id >= s->n)
                return -EINVAL;
        atomic_store_explicit(&s->cells[w->id].v, v, memory_order_relaxed);
        return 0;
}

void *pc_slot_get(const struct pc_slot *s)
{
        struct pc_worker *w = pc__self;

        if (w == NULL || s == NULL || w->id >= s->n)
                return NULL;
        return atomic_load_explicit(&((struct pc_slot *)s)->cells[w->id].v,
                                    memory_order_relaxed);
}

void *pc_slot_get_on(const struct pc_slot *s, unsigned w)
{
        if (s == NULL || w >= s->n)
                return NULL;
        return atomic_load_explicit(&((struct pc_slot *)s)->cells[w].v, memory_order_relaxed);
}
