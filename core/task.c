/* SPDX-License-Identifier: MIT */
/*
 * Tasks: spawning on the calling worker, on another worker, and through
 * the global injector; the per-worker free lists the task objects come
 * from. The local path takes no lock, makes no syscall and allocates only
 * when a worker's free list runs dry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pc_core_pvt.h"

__thread struct pc_worker *pc__self PC_TLS_IE;

void pc_task_init(struct pc_task *t, pc_task_fn fn, void *arg, unsigned flags)
{
        memset(t, 0, sizeof(*t));
        t->fn = fn;
        t->arg = arg;
        t->owner = PC_OWNER_USER;
        t->flags = (uint16_t)(flags & (PC_STICKY | PC_ELASTIC));
}

/* The free list is empty: take back what other workers freed, else carve a
 * new chunk from memory on the owner's node. */
struct pc_task *pc__task_alloc_slow(struct pc_worker *w)
{
        struct pc_task *t, *chunk;

        t = atomic_exchange_explicit(&w->remote_free, NULL, memory_order_acquire);
        if (t != NULL) {
                w->free_list = t->next;
                return t;
        }
        if (w->nchunks == w->cap_chunks) {
                unsigned cap = w->cap_chunks ? w->cap_chunks * 2 : 16;
                void **c = realloc(w->chunks, cap * sizeof(*c));
                if (c == NULL)
                        return NULL;
                w->chunks = c;
                w->cap_chunks = cap;
        }
        chunk = pc_numa_alloc(PC_TASK_CHUNK * sizeof(struct pc_task), w->node);
        if (chunk == NULL)
                return NULL;
        w->chunks[w->nchunks++] = chunk;
        for (unsigned i = 1; i < PC_TASK_CHUNK; i++) {
                chunk[i].owner = (uint16_t)w->id;
                chunk[i].next = i + 1 < PC_TASK_CHUNK ? &chunk[i + 1] : NULL;
        }
        chunk[0].owner = (uint16_t)w->id;
        w->free_list = &chunk[1];
        return &chunk[0];
}

/* Push @t onto its owner's remote-free stack. The owner takes the whole
 * stack with one exchange, so there is no ABA to guard against. */
void pc__task_free_remote(struct pc_runtime *rt, struct pc_task *t)
{
        struct pc_worker *o = rt->workers[t->owner];
        struct pc_task *head = atomic_load_explicit(&o->remote_free, memory_order_relaxed);

        do {
                t->next = head;
        } while (!atomic_compare_exchange_weak_explicit(&o->remote_free, &head, t,
                                                        memory_order_release,
                                                        memory_order_relaxed));
}

int pc__spawn_to(struct pc_worker *self, unsigned dst, struct pc_task *t)
{
        struct pc_runtime *rt = self->rt;
        struct pc_worker *w;
        struct pc_task *head;

        if (dst == self->id) {
                pc__push_local(self, t);
                return 0;
        }
        w = rt->workers[dst];
        head = atomic_load_explicit(&w->inbox, memory_order_relaxed);
        do {
                t->next = head;
        } while (!atomic_compare_exchange_weak_explicit(&w->inbox, &head, t,
                                                        memory_order_seq_cst,
                                                        memory_order_relaxed));
        pc__count_sent(self, 1);
        pc__wake(w);
        return 0;
}

int pc_spawn(pc_task_fn fn, void *arg)
{
        struct pc_worker *w = pc__self;
        struct pc_task *t;

        if (unlikely(w == NULL))
                return -EPERM;
        if (unlikely(fn == NULL))
                return -EINVAL;
        t = pc__task_alloc(w);
        if (unlikely(t == NULL))
                return -ENOMEM;
        t->fn = fn;
        t->arg = arg;
        t->flags = 0;
        pc__push_local(w, t);
        return 0;
}

int pc_spawn_on(unsigned worker, pc_task_fn fn, void *arg)
{
        struct pc_worker *w = pc__self;
        struct pc_task *t;

        if (unlikely(w == NULL))
                return -EPERM;
        if (unlikely(fn == NULL || worker >= w->rt->nworkers))
                return -EINVAL;
        t = pc__task_alloc(w);
        if (unlikely(t == NULL))
                return -ENOMEM;
        t->fn = fn;
        t->arg = arg;
        t->flags = 0;
        return pc__spawn_to(w, worker, t);
}

int pc_spawn_task(struct pc_task *t)
{
        struct pc_worker *w = pc__self;

        if (unlikely(w == NULL))
                return -EPERM;
        if (unlikely(t == NULL || t->fn == NULL))
                return -EINVAL;
        t->owner = PC_OWNER_USER;
        pc__push_local(w, t);
        return 0;
}

int pc_spawn_task_on(unsigned worker, struct pc_task *t)
{
        struct pc_worker *w = pc__self;

        if (unlikely(w == NULL))
                return -EPERM;
        if (unlikely(t == NULL || t->fn == NULL || worker >= w->rt->nworkers))
                return -EINVAL;
        t->owner = PC_OWNER_USER;
        return pc__spawn_to(w, worker, t);
}

/* Wake one sleeping worker, starting from a rotating index. */
static void wake_one(struct pc_runtime *rt)
{
        unsigned n = rt->nworkers;
        unsigned start = atomic_fetch_add_explicit(&rt->wake_rr, 1, memory_order_relaxed);

        for (unsigned i = 0; i < n; i++) {
                struct pc_worker *w = rt->workers[(start + i) % n];
                if (atomic_load_explicit(&w->sleeping, memory_order_seq_cst)) {
                        pc__wake(w);
                        break;
                }
        }
}

/* Append a linked batch under the lock. The length is published with a
 * seq_cst store before the sleep flags are read, pairing with the worker's
 * seq_cst sleep flag store before it reads the length. */
static void inject_locked(struct pc_runtime *rt, struct pc_task *first, struct pc_task *last,
                          uint64_t n)
{
        last->next = NULL;
        if (rt->inj_tail)
                rt->inj_tail->next = first;
        else
                rt->inj_head = first;
        rt->inj_tail = last;
        rt->inj_pushed += n;
        atomic_store_explicit(&rt->inj_len,
                              atomic_load_explicit(&rt->inj_len, memory_order_relaxed) + n,
                              memory_order_seq_cst);
}

int pc__inject(struct pc_runtime *rt, struct pc_task *t)
{
        pthread_mutex_lock(&rt->inj_lock);
        /* Read under the lock: once the coordinator has seen stop_req and
         * taken this lock, no later submission can slip in unseen. */
        if (atomic_load_explicit(&rt->stop_req, memory_order_seq_cst)) {
                pthread_mutex_unlock(&rt->inj_lock);
                return -ESHUTDOWN;
        }
        inject_locked(rt, t, t, 1);
        pthread_mutex_unlock(&rt->inj_lock);
        wake_one(rt);
        return 0;
}

/* A worker's own tasks moving to the injector (a full stealable ring):
 * accepted while stopping too, since they are already in the system and
 * counted, unlike new external submissions. */
void pc__inject_list(struct pc_runtime *rt, struct pc_task *first, struct pc_task *last,
                     uint64_t n)
{
        pthread_mutex_lock(&rt->inj_lock);
        inject_locked(rt, first, last, n);
        pthread_mutex_unlock(&rt->inj_lock);
        wake_one(rt);
}

int pc_runtime_inject(struct pc_runtime *rt, pc_task_fn fn, void *arg)
{
        struct pc_task *t;
        int rc;

        if (rt == NULL || fn == NULL)
                return -EINVAL;
        t = malloc(sizeof(*t));
        if (t == NULL)
                return -ENOMEM;
        pc_task_init(t, fn, arg, 0);
        t->owner = PC_OWNER_HEAP;
        rc = pc__inject(rt, t);
        if (rc)
                free(t);
        return rc;
}

int pc_runtime_inject_task(struct pc_runtime *rt, struct pc_task *t)
{
        if (rt == NULL || t == NULL || t->fn == NULL)
                return -EINVAL;
        t->owner = PC_OWNER_USER;
        return pc__inject(rt, t);
}

int pc_worker_id(void)
{
        return pc__self ? (int)pc__self->id : -1;
}

uint64_t pc_random(void)
{
        struct pc_worker *w = pc__self;
        uint64_t x;

        if (w == NULL)
                return 0;
        /* xorshift64*: fast, good enough for victim choice and tests. */
        x = w->rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        w->rng = x;
        return x * 0x2545F4914F6CDD1Dull;
}
