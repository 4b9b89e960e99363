/* SPDX-License-Identifier: MIT */
/*
 * Replies kept in request order per sink (sink.h): the queue of reply
 * places, sent from its head as they fill, and the bound of a sink whose
 * client does not read.
 */
#include "sink.h"

#include <stdlib.h>
#include <string.h>

/* A sink's buffer larger than this is given back once sent. */
#define OUT_SHRINK 65536

/* The place kv_sink_slot() gave last has its reply by now: count it. */
static void slot_settle(struct kv_sink *k)
{
        struct pending *pd = k->slot;

        if (pd) {
                kv_pending_count(k, pd, pd->parts[0].len);
                k->slot = NULL;
        }
}

bool kv_sink_full(struct kv_sink *k)
{
        if (k->ops->backlog == NULL)
                return false;
        slot_settle(k);
        return k->refs >= KV_CALLS_MAX ||
               k->out.len + k->held + k->ops->backlog(k) >= KV_OUT_HIGH;
}

struct pending *kv_pending_add(struct kv_sink *k, unsigned nparts)
{
        size_t size = sizeof(struct pending) + nparts * sizeof(struct buf);
        struct pending *pd = calloc(1, size);

        if (pd == NULL) {
                k->out.oom = true;
                return NULL;
        }
        slot_settle(k);
        kv_pending_count(k, pd, size);
        pd->nparts = nparts;
        pd->waiting = nparts;
        if (k->tail)
                k->tail->next = pd;
        else
                k->head = pd;
        k->tail = pd;
        return pd;
}

static void pending_free(struct kv_sink *k, struct pending *pd)
{
        if (k->slot == pd)
                k->slot = NULL;
        k->held -= pd->held;
        for (unsigned i = 0; i < pd->nparts; i++)
                buf_free(&pd->parts[i]);
        free(pd);
}

void kv_sink_fini(struct kv_sink *k)
{
        while (k->head) {
                struct pending *n = k->head->next;

                pending_free(k, k->head);
                k->head = n;
        }
        k->tail = NULL;
        buf_free(&k->out);
}

void kv_sink_unref(struct kv_sink *k)
{
        k->refs--;
        if (!k->dead && k->ops->room) {
                /* The transport may end during the call: keep the sink. */
                k->pins++;
                k->ops->room(k);
                k->pins--;
        }
        if (k->refs == 0 && k->pins == 0 && k->dead)
                k->ops->release(k);
}

void kv_sink_kill(struct kv_sink *k)
{
        k->dead = true;
        if (k->refs == 0 && k->pins == 0)
                k->ops->release(k);
}

static bool sink_send(struct kv_sink *k, struct buf *b)
{
        if (b->oom) {
                /* A reply we could not build: the stream is broken. */
                return k->ops->send(k, NULL, 0);
        }
        return b->len == 0 || k->ops->send(k, b->p, b->len);
}

void kv_sink_flush(struct kv_sink *k)
{
        if (k->dead)
                return;
        if (!sink_send(k, &k->out))
                return;
        if (k->out.len && k->ops->reply_end)
                k->ops->reply_end(k);
        k->out.len = 0;
        if (k->out.cap > OUT_SHRINK)
                buf_free(&k->out); /* a large reply's room, not kept idle */
        while (k->head && k->head->waiting == 0) {
                struct pending *pd = k->head;

                for (unsigned i = 0; i < pd->nparts; i++) {
                        if (!sink_send(k, &pd->parts[i]))
                                return;
                        /* More keys follow this one: in this place, or
                         * in the next one of a get taken part by part. */
                        if (pd->keyed && (i + 1 < pd->nparts || !pd->end) && k->ops->key_end)
                                k->ops->key_end(k);
                }
                if (pd->end && !k->ops->send(k, "END\r\n", 5))
                        return;
                if (pd->mark)
                        k->ops->mark(k);
                else if (k->ops->reply_end)
                        k->ops->reply_end(k);
                k->head = pd->next;
                if (k->head == NULL)
                        k->tail = NULL;
                pending_free(k, pd);
        }
        if (k->head == NULL)
                k->ops->drained(k);
}

void kv_sink_mark(struct kv_sink *k)
{
        struct pending *pd;

        if (k->ops->mark == NULL || k->dead)
                return;
        if (k->head == NULL) {
                kv_sink_flush(k); /* k->out's bytes, if any, come first */
                if (!k->dead)
                        k->ops->mark(k);
                return;
        }
        pd = kv_pending_add(k, 0);
        if (pd) {
                pd->waiting = 0;
                pd->mark = true;
        }
}

void kv_sink_batch_end(struct kv_sink *k)
{
        k->batch = 0;
        k->nreq = 0;
        kv_sink_flush(k);
}

struct buf *kv_sink_slot(struct kv_sink *k)
{
        struct pending *pd;

        if (k->head == NULL)
                return &k->out;
        pd = kv_pending_add(k, 1);
        if (pd == NULL)
                return NULL;
        pd->waiting = 0;
        k->slot = pd; /* its bytes are counted once written */
        return &pd->parts[0];
}

void kv_pending_fill(struct kv_sink *k, struct pending *pd, unsigned part, struct buf *b)
{
        if (k->dead) {
                buf_free(b);
                return;
        }
        buf_free(&pd->parts[part]);
        pd->parts[part] = *b;
        kv_pending_count(k, pd, b->len);
        memset(b, 0, sizeof(*b));
        pd->waiting--;
        if (pd == k->head)
                kv_sink_flush(k);
}
