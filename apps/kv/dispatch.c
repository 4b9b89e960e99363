/* SPDX-License-Identifier: MIT */
/*
 * Where a request runs. A request whose key this worker owns runs here
 * and now; any other goes to the owner by pc_call() with its own copy of
 * the key and value, and its reply comes back as bytes into the reply
 * place it took in its sink (sink.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kv_pvt.h"
#include "pc_shard.h"

/* Batch tags: per worker, the worker in the low bits, never 0. */
static struct {
        _Alignas(64) uint32_t next;
} batch_tags[PC_MAX_WORKERS];

static uint32_t sink_batch(struct kv_sink *k)
{
        unsigned w = (unsigned)pc_worker_id();

        while (k->batch == 0)
                k->batch = ++batch_tags[w].next * PC_MAX_WORKERS + w;
        return k->batch;
}

/* This worker's pc_calls whose done has not run. */
static struct {
        _Alignas(64) unsigned calls_out;
} mine[PC_MAX_WORKERS];

/* Take @owner's shard if it is lent and free: run one request on it, then
 * kv_shard_return(). Only a worker with no call of its own in flight
 * borrows, so a request never overtakes an earlier one from the same
 * worker (its connections' order, a flush_all before a get); requests
 * from different connections were never ordered. */
static bool shard_borrow(unsigned me, unsigned owner)
{
        return mine[me].calls_out == 0 && kv_shard_borrow(me, owner);
}

/* ---- one key on its owner ------------------------------------------------------------ */

/* A request travelling to its key's owner, with its own copy of the key,
 * the value and a meta opaque. */
struct op {
        struct kv_sink *k;
        struct pending *pd;
        unsigned part;
        struct kv_req req;
        struct buf out;
        char bytes[];
};

static void *op_run(void *arg)
{
        struct op *o = arg;

        kv_shard_hold();
        kv_run(kv_stores[pc_worker_id()], &o->req, NULL, 0, &o->out);
        return o;
}

static void op_done(void *result, void *done_arg)
{
        struct op *o = result;
        struct kv_sink *k = o->k;

        (void)done_arg;
        mine[pc_worker_id()].calls_out--;
        kv_pending_fill(k, o->pd, o->part, &o->out);
        free(o);
        kv_sink_unref(k);
}

/* Run @r (with one key, @key) on @owner; the reply fills part @part of @pd. */
static void run_remote(struct kv_sink *k, struct pending *pd, unsigned part,
                       const struct kv_req *r, const char *key, size_t klen, unsigned owner)
{
        size_t dlen = r->too_large ? 0 : r->dlen;
        struct op *o = malloc(sizeof(*o) + klen + dlen + r->mopaque_len);
        struct buf fail = {.oom = true};

        if (o == NULL) {
                kv_pending_fill(k, pd, part, &fail);
                return;
        }
        memset(o, 0, sizeof(*o));
        o->k = k;
        o->pd = pd;
        o->part = part;
        o->req = *r;
        memcpy(o->bytes, key, klen);
        if (dlen)
                memcpy(o->bytes + klen, r->data, dlen);
        /* A meta request's opaque token is echoed in its reply. */
        if (r->mopaque_len)
                memcpy(o->bytes + klen + dlen, r->mopaque, r->mopaque_len);
        o->req.key = o->bytes;
        o->req.keylen = klen;
        o->req.data = o->bytes + klen;
        o->req.mopaque = o->bytes + klen + dlen;
        o->req.keys = NULL;
        if (pc_call(owner, op_run, o, op_done, NULL)) {
                free(o);
                kv_pending_fill(k, pd, part, &fail);
                return;
        }
        mine[pc_worker_id()].calls_out++;
        kv_wstats[pc_worker_id()].calls++;
        k->refs++;
}

/* Are there keys of @r after @pos? */
static bool more_keys(const struct kv_req *r, size_t pos)
{
        const char *key;
        size_t kn;

        return kv_req_next_key(r, &pos, &key, &kn);
}

/*
 * The keys of @r from *@cursor on: on a bounded sink at most KV_GET_PART
 * of them, and no more once the sink is full (one key at least); on
 * another every key at once. Returns true once the last key is done (and
 * the ASCII END written), else false with *@cursor where to go on.
 */
static bool dispatch_get(struct kv_sink *k, const struct kv_req *r, size_t *cursor)
{
        unsigned me = (unsigned)pc_worker_id(), n = 0, i = 0;
        bool ascii = r->proto == KV_PROTO_ASCII, all_local = true, more;
        bool bounded = k->ops->backlog != NULL;
        unsigned lim = bounded ? KV_GET_PART : UINT_MAX;
        struct pending *pd;
        size_t pos = *cursor, kn;
        const char *key;

        /* This round's keys, and whether they are all ours. */
        while (n < lim && kv_req_next_key(r, &pos, &key, &kn)) {
                all_local = all_local && pc_shard_of(key, kn) == me;
                n++;
        }
        /* A sink that takes the reply key by key needs its parts apart. */
        if (ascii && r->nkeys > 1 && k->ops->key_end)
                all_local = false;
        if (k->head == NULL) {
                /* The common case, answered here and now into the sink's
                 * own buffer (no reply place): every key is ours, or the
                 * one key is on a shard we may borrow. */
                unsigned store = me;

                pos = *cursor;
                if (all_local)
                        kv_shard_hold();
                else if (r->nkeys != 1 || !kv_req_next_key(r, &pos, &key, &kn) ||
                         !shard_borrow(me, store = pc_shard_of(key, kn)))
                        store = PC_MAX_WORKERS;
                if (store < PC_MAX_WORKERS) {
                        pos = *cursor;
                        while (i < n && kv_req_next_key(r, &pos, &key, &kn)) {
                                kv_run(kv_stores[store], r, key, kn, &k->out);
                                if (++i < n && bounded && kv_sink_full(k))
                                        break;
                        }
                        if (store != me)
                                kv_shard_return(store);
                        more = more_keys(r, pos);
                        if (ascii && !more)
                                buf_add(&k->out, "END\r\n", 5);
                        *cursor = pos;
                        return !more;
                }
        }
        pd = kv_pending_add(k, n);
        if (pd == NULL)
                return true; /* k->out.oom: the sink closes at its flush */
        /* One more than the parts, so that no fill sends (and frees) the
         * place while keys are still added to it. */
        pd->waiting = n + 1;
        pos = *cursor;
        while (i < n && kv_req_next_key(r, &pos, &key, &kn)) {
                unsigned owner = pc_shard_of(key, kn);

                if (owner == me) {
                        kv_shard_hold();
                        kv_run(kv_stores[me], r, key, kn, &pd->parts[i]);
                        kv_pending_count(k, pd, pd->parts[i].len);
                        pd->waiting--;
                } else if (shard_borrow(me, owner)) {
                        kv_run(kv_stores[owner], r, key, kn, &pd->parts[i]);
                        kv_shard_return(owner);
                        kv_pending_count(k, pd, pd->parts[i].len);
                        pd->waiting--;
                } else {
                        run_remote(k, pd, i, r, key, kn, owner);
                }
                if (++i < n && bounded && kv_sink_full(k))
                        break;
        }
        /* The keys left for the next round are not this place's. */
        pd->waiting -= n - i + 1;
        pd->nparts = i;
        more = more_keys(r, pos);
        pd->end = ascii && !more;
        pd->keyed = ascii && r->nkeys > 1;
        *cursor = pos;
        if (pd == k->head && pd->waiting == 0)
                kv_sink_flush(k);
        return !more;
}

static void dispatch_one(struct kv_sink *k, const struct kv_req *r)
{
        unsigned me = (unsigned)pc_worker_id(), owner = pc_shard_of(r->key, r->keylen);
        struct pending *pd;

        if (owner == me || shard_borrow(me, owner)) {
                struct buf *b = kv_sink_slot(k);

                if (owner == me)
                        kv_shard_hold();
                if (b)
                        kv_run(kv_stores[owner], r, NULL, 0, b);
                if (owner != me)
                        kv_shard_return(owner);
                return;
        }
        pd = kv_pending_add(k, 1);
        if (pd)
                run_remote(k, pd, 0, r, r->key, r->keylen, owner);
}

/* ---- flush_all: every shard ------------------------------------------------------------ */

struct flush {
        struct kv_sink *k;
        struct pending *pd;
        struct kv_req req; /* for the reply's shape; no pointers used */
        unsigned remaining; /* workers still to answer */
};

static void *flush_run(void *arg)
{
        kv_shard_hold();
        kv_store_flush(kv_stores[pc_worker_id()], ((struct flush *)arg)->req.delay);
        return arg;
}

static void flush_done(void *result, void *arg)
{
        struct flush *f = arg;
        struct buf b = {0};

        if (result)
                mine[pc_worker_id()].calls_out--; /* one shard's answer */
        if (--f->remaining)
                return;
        kv_reply_done(&f->req, &b);
        kv_pending_fill(f->k, f->pd, 0, &b);
        kv_sink_unref(f->k);
        free(f);
}

/* This worker's shard is flushed now, inline, so that a request after the
 * flush on this sink for a key of this shard (also run inline) comes after
 * it; the other shards through their mailboxes, which keep this sink's
 * earlier and later requests to them on either side of it. */
static void dispatch_flush(struct kv_sink *k, const struct kv_req *r)
{
        unsigned me = (unsigned)pc_worker_id(), n = pc_runtime_workers(kv_rt);
        struct flush *f = calloc(1, sizeof(*f));

        if (f == NULL || (f->pd = kv_pending_add(k, 1)) == NULL) {
                k->out.oom = true;
                free(f);
                return;
        }
        f->k = k;
        f->req = *r;
        f->req.key = f->req.keys = f->req.data = NULL;
        k->refs++;
        kv_shard_hold();
        kv_store_flush(kv_stores[me], r->delay);
        f->remaining = 1;
        for (unsigned w = 0; w < n; w++) {
                if (w == me)
                        continue;
                if (pc_call(w, flush_run, f, flush_done, f))
                        break; /* -ENOMEM: the shards called so far still answer */
                mine[me].calls_out++;
                f->remaining++;
        }
        flush_done(NULL, f);
}

/* ---- the admin commands ------------------------------------------------------------------ */

/* "shutdown" stops the server when -A allows it, as memcached's does:
 * "graceful" the same way, since every queued request runs before the
 * workers stop. The connection closes without a reply. */
static bool shutdown_allowed(const struct kv_req *r)
{
        return kv_set.shutdown_ok &&
               (r->nkeys == 0 || (r->nkeys == 1 && r->keylen == 8 &&
                                  memcmp(r->key, "graceful", 8) == 0));
}

bool kv_req_closes(const struct kv_req *r)
{
        return r->cmd == KV_QUIT || (r->cmd == KV_SHUTDOWN && shutdown_allowed(r));
}

static void dispatch_shutdown(struct kv_sink *k, const struct kv_req *r)
{
        struct buf *b;

        if (shutdown_allowed(r)) {
                pc_log(PC_LOG_INFO, "pc-kv: shutdown requested by a client");
                pc_runtime_stop(kv_rt);
                return;
        }
        b = kv_sink_slot(k);
        if (b)
                kv_reply_error(r, kv_set.shutdown_ok ? "CLIENT_ERROR invalid shutdown mode\r\n"
                                                     : "ERROR: shutdown not enabled\r\n",
                               KV_BIN_UNKNOWN, b);
}

struct memlimit {
        struct kv_sink *k;
        struct pending *pd;
        struct kv_req req; /* for the reply's shape; no pointers used */
        size_t cap;        /* per shard */
};

static void memlimit_run(void *arg)
{
        kv_shard_hold();
        kv_store_set_cap(kv_stores[pc_worker_id()], ((struct memlimit *)arg)->cap);
}

static void memlimit_done(void *arg)
{
        struct memlimit *m = arg;
        struct buf b = {0};

        kv_reply_done(&m->req, &b);
        kv_pending_fill(m->k, m->pd, 0, &b);
        kv_sink_unref(m->k);
        free(m);
}

/* cache_memlimit: a new cap on every shard, split as -m is; refused when
 * a shard could no longer hold one largest item. */
static void dispatch_memlimit(struct kv_sink *k, const struct kv_req *r)
{
        unsigned n = pc_runtime_workers(kv_rt);
        size_t cap = ((size_t)r->level << 20) / n;
        struct memlimit *m;
        struct buf *b;

        if (cap < kv_store_item_size(KV_KEY_MAX, kv_set.item_max)) {
                b = kv_sink_slot(k);
                if (b && !r->noreply)
                        kv_reply_error(r, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to "
                                          "adjust\r\n", KV_BIN_EINVAL, b);
                return;
        }
        m = calloc(1, sizeof(*m));
        if (m == NULL || (m->pd = kv_pending_add(k, 1)) == NULL) {
                k->out.oom = true;
                free(m);
                return;
        }
        m->k = k;
        m->req = *r;
        m->req.key = m->req.keys = m->req.data = NULL;
        m->cap = cap;
        __atomic_store_n(&kv_set.mem_mb, (unsigned long)r->level, __ATOMIC_RELAXED);
        k->refs++;
        if (pc_for_each_worker(memlimit_run, m, memlimit_done, m)) {
                struct buf e = {.oom = true};

                kv_pending_fill(k, m->pd, 0, &e);
                kv_sink_unref(k);
                free(m);
        }
}

/* ---- every request ---------------------------------------------------------------------- */

/* mg marks what it reads with the batch, incr and decr look for the mark. */
static void dispatch_batched(struct kv_sink *k, const struct kv_req *r)
{
        struct kv_req t = *r;

        t.batch = sink_batch(k);
        dispatch_one(k, &t);
}

void kv_dispatch(struct kv_sink *k, const struct kv_req *r)
{
        struct buf *b;

        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS: {
                size_t pos = 0;

                while (!dispatch_get(k, r, &pos))
                        ;
                return;
        }
        case KV_FLUSH_ALL:
                dispatch_flush(k, r);
                return;
        case KV_STATS:
                kv_stats(k, r);
                return;
        case KV_SHUTDOWN:
                dispatch_shutdown(k, r);
                return;
        case KV_CACHE_MEMLIMIT:
                dispatch_memlimit(k, r);
                return;
        case KV_MG:
        case KV_MA:
        case KV_INCR:
        case KV_DECR:
                dispatch_batched(k, r);
                return;
        case KV_MN: /* memcached sends the replies so far at an mn */
                k->batch = 0;
                /* fall through */
        case KV_VERSION:
        case KV_VERBOSITY:
        case KV_QUIT:
        case KV_NOOP:
                b = kv_sink_slot(k);
                if (b)
                        kv_reply_done(r, b);
                return;
        default:
                dispatch_one(k, r);
                return;
        }
}

bool kv_dispatch_from(struct kv_sink *k, const struct kv_req *r, size_t *pos)
{
        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                return dispatch_get(k, r, pos);
        default:
                kv_dispatch(k, r);
                return true;
        }
}
