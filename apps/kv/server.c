/* SPDX-License-Identifier: MIT */
/*
 * pc-kv: a memcached-compatible cache (ASCII protocol over TCP) on percore's
 * kernel backend. Each worker owns one store (its shard of the key space);
 * a request whose key another worker owns goes there by pc_call() and the
 * reply comes back to the connection's worker. Replies leave in request
 * order per connection: each request that cannot be answered at once takes
 * a place in the connection's queue of pending replies, and the queue is
 * flushed from its head as places fill.
 *
 *   pc-kv -p 11211 -t 4 -m 64
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_cli.h"
#include "percore.h"
#include "pc_knet.h"
#include "pc_shard.h"
#include "proto_ascii.h"
#include "store.h"

#define KV_VERSION_STRING "1.6.0-pc-kv"
#define REPLY_OOM "SERVER_ERROR out of memory storing object\r\n"
#define REPLY_NON_NUMERIC "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
/* An input buffer this much larger than what it holds is given back. */
#define IN_SHRINK 65536

/* ---- byte buffers --------------------------------------------------------------- */

struct buf {
        char *p;
        size_t len, cap;
        bool oom; /* an append failed: the connection is closed at the next flush */
};

static void buf_add(struct buf *b, const void *d, size_t n)
{
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *p;

                while (cap < b->len + n)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, d, n);
        b->len += n;
}

static void buf_str(struct buf *b, const char *s)
{
        buf_add(b, s, strlen(s));
}

static void buf_free(struct buf *b)
{
        free(b->p);
        memset(b, 0, sizeof(*b));
}

/* ---- per-worker state ------------------------------------------------------------ */

/* Stores and counters indexed by worker; each written by its worker only. */
static struct kv_store *stores[PC_MAX_WORKERS];
static struct wstat {
        _Alignas(64) uint64_t curr_conns;
        uint64_t total_conns;
        uint64_t send_failed;
} wstats[PC_MAX_WORKERS];
_Static_assert(sizeof(struct wstat) == 64, "one counter block per cache line");

static struct pc_runtime *rt;
static size_t item_max = KV_ITEM_MAX_DEFAULT;
static size_t mem_total;
static int verbose;
static time_t started;

/* ---- connections and their reply queue ------------------------------------------- */

/* A reply place: parts filled in any order, sent in order once all are. */
struct pending {
        struct pending *next;
        unsigned nparts, waiting;
        bool end; /* followed by "END\r\n" (the get family) */
        struct buf parts[];
};

struct conn {
        struct pc_conn *pc;
        struct kv_parser parser;
        struct buf in;  /* bytes of an incomplete request */
        struct buf out; /* replies ready while the queue is empty */
        struct pending *head, *tail;
        unsigned refs;  /* remote calls whose done has not run */
        bool dead;      /* the pc_conn is gone */
        bool quitting;  /* parse no more; close once the queue drains */
};

static struct pending *pending_add(struct conn *c, unsigned nparts, unsigned waiting, bool end)
{
        struct pending *pd = calloc(1, sizeof(*pd) + nparts * sizeof(struct buf));

        if (pd == NULL)
                return NULL;
        pd->nparts = nparts;
        pd->waiting = waiting;
        pd->end = end;
        if (c->tail)
                c->tail->next = pd;
        else
                c->head = pd;
        c->tail = pd;
        return pd;
}

static void pending_free(struct pending *pd)
{
        for (unsigned i = 0; i < pd->nparts; i++)
                buf_free(&pd->parts[i]);
        free(pd);
}

static void conn_free(struct conn *c)
{
        while (c->head) {
                struct pending *n = c->head->next;

                pending_free(c->head);
                c->head = n;
        }
        buf_free(&c->in);
        buf_free(&c->out);
        free(c);
}

static bool conn_send(struct conn *c, const struct buf *b)
{
        int rc;

        if (b->oom) {
                pc_conn_close(c->pc);
                return false;
        }
        if (b->len == 0)
                return true;
        rc = pc_conn_send(c->pc, b->p, b->len);
        if (rc) {
                /* -ENOBUFS: the client let more than the output cap pile up. */
                wstats[pc_worker_id()].send_failed++;
                pc_conn_close(c->pc);
                return false;
        }
        return true;
}

/* Send what is ready, in order: the direct replies, then every filled
 * place at the head of the queue. */
static void conn_flush(struct conn *c)
{
        if (c->dead)
                return;
        if (!conn_send(c, &c->out))
                return;
        c->out.len = 0;
        while (c->head && c->head->waiting == 0) {
                struct pending *pd = c->head;

                for (unsigned i = 0; i < pd->nparts; i++)
                        if (!conn_send(c, &pd->parts[i]))
                                return;
                if (pd->end && pc_conn_send(c->pc, "END\r\n", 5)) {
                        pc_conn_close(c->pc);
                        return;
                }
                c->head = pd->next;
                if (c->head == NULL)
                        c->tail = NULL;
                pending_free(pd);
        }
        if (c->quitting && c->head == NULL)
                pc_conn_close(c->pc);
}

/* Where a reply known now goes: straight out when nothing is queued before
 * it, else a filled place in the queue. NULL only when out of memory. */
static struct buf *reply_slot(struct conn *c)
{
        struct pending *pd;

        if (c->head == NULL)
                return &c->out;
        pd = pending_add(c, 1, 0, false);
        return pd ? &pd->parts[0] : NULL;
}

static void reply_now(struct conn *c, const char *s)
{
        struct buf *b = reply_slot(c);

        if (b)
                buf_str(b, s);
        else
                c->out.oom = true;
}

/* ---- executing on the owner shard -------------------------------------------------- */

static void exec_get_key(struct kv_store *s, enum kv_cmd cmd, int64_t exptime, const char *key,
                         size_t klen, struct buf *out)
{
        const struct kv_item *it;
        char hdr[KV_KEY_MAX + 80];
        int n;

        if (cmd == KV_GAT || cmd == KV_GATS)
                it = kv_store_gat(s, key, klen, exptime);
        else
                it = kv_store_get(s, key, klen);
        if (it == NULL)
                return;
        n = snprintf(hdr, sizeof(hdr), "VALUE %.*s %" PRIu32 " %" PRIu32, (int)klen, key,
                     it->flags, it->vlen);
        if (cmd == KV_GETS || cmd == KV_GATS)
                n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, " %" PRIu64, it->cas);
        buf_add(out, hdr, (size_t)n);
        buf_add(out, "\r\n", 2);
        buf_add(out, kv_item_value(it), it->vlen);
        buf_add(out, "\r\n", 2);
}

static const char *const store_replies[] = {
        [KV_STORED] = "STORED\r\n",       [KV_NOT_STORED] = "NOT_STORED\r\n",
        [KV_EXISTS] = "EXISTS\r\n",       [KV_NOT_FOUND] = "NOT_FOUND\r\n",
        [KV_DELETED] = "DELETED\r\n",     [KV_TOUCHED] = "TOUCHED\r\n",
        [KV_NON_NUMERIC] = REPLY_NON_NUMERIC, [KV_NO_MEMORY] = REPLY_OOM,
};

/* Run one single-key request on store @s, the key's owner. */
static void exec_one(struct kv_store *s, const struct kv_req *r, struct buf *out)
{
        enum kv_store_rc rc;
        uint64_t v;
        char num[24];

        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                exec_get_key(s, r->cmd, r->exptime, r->key, r->keylen, out);
                return;
        case KV_DELETE:
                rc = kv_store_delete(s, r->key, r->keylen);
                break;
        case KV_TOUCH:
                rc = kv_store_touch(s, r->key, r->keylen, r->exptime);
                break;
        case KV_INCR:
        case KV_DECR:
                rc = kv_store_arith(s, r->key, r->keylen, r->cmd == KV_INCR, r->delta, &v);
                if (rc == KV_STORED) {
                        if (!r->noreply) {
                                snprintf(num, sizeof(num), "%" PRIu64 "\r\n", v);
                                buf_str(out, num);
                        }
                        return;
                }
                if (rc == KV_NON_NUMERIC) { /* an error: sent even with noreply */
                        buf_str(out, REPLY_NON_NUMERIC);
                        return;
                }
                break;
        default: /* storage commands */
                if (r->too_large) {
                        /* memcached drops the old value rather than keep a stale one. */
                        if (r->cmd == KV_SET)
                                kv_store_delete(s, r->key, r->keylen);
                        rc = KV_NO_MEMORY;
                        if (!r->noreply)
                                buf_str(out, KV_ERR_TOO_LARGE);
                        return;
                }
                rc = kv_store_update(s, (int)r->cmd, r->key, r->keylen, r->flags, r->exptime,
                                     r->data, r->dlen, r->cas);
                break;
        }
        if (!r->noreply)
                buf_str(out, store_replies[rc]);
}

/* A request travelling to its key's owner, with its own copy of the key and value. */
struct op {
        struct conn *c;
        struct pending *pd;
        unsigned part;
        struct kv_req req;
        struct buf out;
        char bytes[];
};

static void *op_run(void *arg)
{
        struct op *o = arg;

        exec_one(stores[pc_worker_id()], &o->req, &o->out);
        return o;
}

static void conn_unref(struct conn *c)
{
        if (--c->refs == 0 && c->dead)
                conn_free(c);
}

static void op_done(void *result, void *done_arg)
{
        struct op *o = result;
        struct conn *c = o->c;

        (void)done_arg;
        if (!c->dead) {
                o->pd->parts[o->part] = o->out;
                o->pd->waiting--;
                conn_flush(c);
        } else {
                buf_free(&o->out);
        }
        free(o);
        conn_unref(c);
}

/* Run @r (with one key, @key) on the owner of @key; the reply fills part
 * @part of @pd. */
static void dispatch_remote(struct conn *c, struct pending *pd, unsigned part,
                            const struct kv_req *r, const char *key, size_t klen, unsigned owner)
{
        size_t dlen = r->too_large ? 0 : r->dlen;
        struct op *o = malloc(sizeof(*o) + klen + dlen);

        if (o == NULL) {
                pd->parts[part].oom = true;
                pd->waiting--;
                return;
        }
        memset(o, 0, sizeof(*o));
        o->c = c;
        o->pd = pd;
        o->part = part;
        o->req = *r;
        memcpy(o->bytes, key, klen);
        if (dlen)
                memcpy(o->bytes + klen, r->data, dlen);
        o->req.key = o->bytes;
        o->req.keylen = klen;
        o->req.data = o->bytes + klen;
        o->req.keys = NULL;
        if (pc_call(owner, op_run, o, op_done, NULL)) {
                free(o);
                pd->parts[part].oom = true;
                pd->waiting--;
                return;
        }
        c->refs++;
}

static void dispatch_get(struct conn *c, const struct kv_req *r)
{
        unsigned me = (unsigned)pc_worker_id(), i = 0;
        struct pending *pd;
        size_t pos = 0;
        const char *k;
        size_t kn;
        bool all_local = true;

        while (all_local && kv_req_next_key(r, &pos, &k, &kn))
                all_local = pc_shard_of(k, kn) == me;
        if (all_local && c->head == NULL) {
                /* The common case: answered here and now. */
                pos = 0;
                while (kv_req_next_key(r, &pos, &k, &kn))
                        exec_get_key(stores[me], r->cmd, r->exptime, k, kn, &c->out);
                buf_add(&c->out, "END\r\n", 5);
                return;
        }
        pd = pending_add(c, r->nkeys, r->nkeys, true);
        if (pd == NULL) {
                c->out.oom = true;
                return;
        }
        pos = 0;
        while (kv_req_next_key(r, &pos, &k, &kn)) {
                unsigned owner = pc_shard_of(k, kn);

                if (owner == me) {
                        exec_get_key(stores[me], r->cmd, r->exptime, k, kn, &pd->parts[i]);
                        pd->waiting--;
                } else {
                        dispatch_remote(c, pd, i, r, k, kn, owner);
                }
                i++;
        }
}

static void dispatch_one(struct conn *c, const struct kv_req *r)
{
        unsigned me = (unsigned)pc_worker_id(), owner = pc_shard_of(r->key, r->keylen);
        struct pending *pd;

        if (owner == me) {
                struct buf *b = reply_slot(c);

                if (b)
                        exec_one(stores[me], r, b);
                else
                        c->out.oom = true;
                return;
        }
        pd = pending_add(c, 1, 1, false);
        if (pd == NULL) {
                c->out.oom = true;
                return;
        }
        dispatch_remote(c, pd, 0, r, r->key, r->keylen, owner);
}

/* ---- flush_all and stats: every shard ------------------------------------------------ */

struct fanout {
        struct conn *c;
        struct pending *pd;
        int64_t delay;
        unsigned remaining; /* flush_all: workers still to answer */
        bool noreply;
};

static void fanout_finish(struct fanout *f, const char *text);

static void fanout_finish(struct fanout *f, const char *text)
{
        struct conn *c = f->c;

        if (!c->dead) {
                if (text)
                        buf_str(&f->pd->parts[0], text);
                f->pd->waiting--;
                conn_flush(c);
        }
        free(f);
        conn_unref(c);
}

static void *flush_run(void *arg)
{
        kv_store_flush(stores[pc_worker_id()], ((struct fanout *)arg)->delay);
        return arg;
}

static void flush_done(void *result, void *arg)
{
        struct fanout *f = arg;

        (void)result;
        if (--f->remaining == 0)
                fanout_finish(f, f->noreply ? NULL : "OK\r\n");
}

/* flush_all: this worker's shard now, inline, so that a request after it on
 * this connection for a key of this shard (also run inline) comes after the
 * flush; the other shards through their mailboxes, which keep this
 * connection's earlier and later requests to them on either side of it. */
static void flush_all(struct fanout *f)
{
        unsigned me = (unsigned)pc_worker_id(), n = pc_runtime_workers(rt);

        kv_store_flush(stores[me], f->delay);
        f->remaining = 1;
        for (unsigned w = 0; w < n; w++) {
                if (w == me)
                        continue;
                if (pc_call(w, flush_run, f, flush_done, f))
                        break; /* -ENOMEM: the shards called so far still answer */
                f->remaining++;
        }
        flush_done(NULL, f);
}

struct kv_totals {
        struct kv_store_stats st;
        uint64_t curr_conns, total_conns;
};

static void *stats_map(void *arg)
{
        struct kv_totals *t = malloc(sizeof(*t));
        int w = pc_worker_id();

        (void)arg;
        if (t) {
                kv_store_stats(stores[w], &t->st);
                t->curr_conns = wstats[w].curr_conns;
                t->total_conns = wstats[w].total_conns;
        }
        return t;
}

static void *stats_reduce(void *acc, void *item, void *arg)
{
        struct kv_totals *a = acc, *t = item;

        (void)arg;
        if (a && t) {
                uint64_t *d = (uint64_t *)a, *s = (uint64_t *)t;

                for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
                        d[i] += s[i];
        }
        free(t);
        return acc;
}

static void stats_done(void *acc, void *done_arg)
{
        struct fanout *f = done_arg;
        struct kv_totals *t = acc;
        struct buf b = {0};
        char line[128];
        time_t now = time(NULL);

        if (t == NULL) {
                fanout_finish(f, "SERVER_ERROR out of memory\r\n");
                return;
        }
#define STAT(name, fmt, v)                                                                   \
        do {                                                                                 \
                snprintf(line, sizeof(line), "STAT " name " " fmt "\r\n", v);                 \
                buf_str(&b, line);                                                           \
        } while (0)
#define STATU(name, v) STAT(name, "%" PRIu64, (uint64_t)(v))
        STAT("pid", "%ld", (long)getpid());
        STATU("uptime", now - started);
        STATU("time", now);
        STAT("version", "%s", KV_VERSION_STRING);
        STATU("pointer_size", 8 * sizeof(void *));
        STATU("curr_connections", t->curr_conns);
        STATU("total_connections", t->total_conns);
        STATU("cmd_get", t->st.cmd_get);
        STATU("cmd_set", t->st.cmd_set);
        STATU("cmd_flush", t->st.cmd_flush);
        STATU("cmd_touch", t->st.cmd_touch);
        STATU("get_hits", t->st.get_hits);
        STATU("get_misses", t->st.get_misses);
        STATU("get_expired", t->st.get_expired);
        STATU("get_flushed", t->st.get_flushed);
        STATU("delete_misses", t->st.delete_misses);
        STATU("delete_hits", t->st.delete_hits);
        STATU("incr_misses", t->st.incr_misses);
        STATU("incr_hits", t->st.incr_hits);
        STATU("decr_misses", t->st.decr_misses);
        STATU("decr_hits", t->st.decr_hits);
        STATU("cas_misses", t->st.cas_misses);
        STATU("cas_hits", t->st.cas_hits);
        STATU("cas_badval", t->st.cas_badval);
        STATU("touch_hits", t->st.touch_hits);
        STATU("touch_misses", t->st.touch_misses);
        STATU("threads", pc_runtime_workers(rt));
        STATU("limit_maxbytes", mem_total);
        STATU("bytes", t->st.bytes);
        STATU("curr_items", t->st.curr_items);
        STATU("total_items", t->st.total_items);
        STATU("evictions", t->st.evictions);
#undef STATU
#undef STAT
        buf_str(&b, "END\r\n");
        free(t);
        if (!f->c->dead) {
                buf_free(&f->pd->parts[0]);
                f->pd->parts[0] = b;
                b = (struct buf){0};
        }
        buf_free(&b);
        fanout_finish(f, NULL);
}

static void dispatch_all(struct conn *c, const struct kv_req *r)
{
        struct fanout *f = calloc(1, sizeof(*f));
        void *acc;

        if (f)
                f->pd = pending_add(c, 1, 1, false);
        if (f == NULL || f->pd == NULL) {
                free(f);
                c->out.oom = true;
                return;
        }
        f->c = c;
        f->delay = r->delay;
        f->noreply = r->noreply;
        c->refs++;
        if (r->cmd == KV_FLUSH_ALL) {
                flush_all(f);
                return;
        }
        acc = calloc(1, sizeof(struct kv_totals));
        if (pc_map_reduce(stats_map, NULL, stats_reduce, acc, stats_done, f)) {
                free(acc);
                fanout_finish(f, "SERVER_ERROR out of memory\r\n");
        }
}

/* ---- the connection callbacks ---------------------------------------------------------- */

static void dispatch(struct conn *c, const struct kv_req *r)
{
        switch (r->cmd) {
        case KV_GET:
        case KV_GETS:
        case KV_GAT:
        case KV_GATS:
                dispatch_get(c, r);
                break;
        case KV_FLUSH_ALL:
                dispatch_all(c, r);
                break;
        case KV_STATS:
                if (r->keylen) /* stats subcommands are not implemented yet */
                        reply_now(c, KV_ERR_UNKNOWN);
                else
                        dispatch_all(c, r);
                break;
        case KV_VERSION:
                reply_now(c, "VERSION " KV_VERSION_STRING "\r\n");
                break;
        case KV_VERBOSITY:
                if (!r->noreply)
                        reply_now(c, "OK\r\n");
                break;
        case KV_QUIT:
                c->quitting = true;
                break;
        default:
                dispatch_one(c, r);
                break;
        }
}

static void on_accept(struct pc_conn *pc, void *arg)
{
        struct conn *c = calloc(1, sizeof(*c));
        int w = pc_worker_id();

        (void)arg;
        if (c == NULL) {
                pc_conn_close(pc);
                return;
        }
        c->pc = pc;
        kv_parser_init(&c->parser, item_max);
        pc_conn_set_data(pc, c);
        wstats[w].curr_conns++;
        wstats[w].total_conns++;
        if (verbose > 1)
                pc_log(PC_LOG_INFO, "pc-kv: worker %d: new connection", w);
}

static void on_data(struct pc_conn *pc, const void *data, size_t len, void *arg)
{
        struct conn *c = pc_conn_data(pc);
        const char *p, *err;
        size_t n, off = 0, used;
        struct kv_req req;

        (void)arg;
        if (c == NULL || len == 0 || c->quitting)
                return;
        if (c->in.len) {
                buf_add(&c->in, data, len);
                p = c->in.p;
                n = c->in.len;
        } else {
                p = data;
                n = len;
        }
        while (!c->quitting) {
                enum kv_parse_rc rc = kv_parse(&c->parser, p + off, n - off, &req, &used, &err);

                if (rc == KV_PARSE_NEED)
                        break;
                off += used;
                if (rc == KV_PARSE_OK) {
                        dispatch(c, &req);
                } else if (rc == KV_PARSE_ERROR) {
                        reply_now(c, err);
                } else if (rc == KV_PARSE_CLOSE) {
                        reply_now(c, err);
                        c->quitting = true;
                }
        }
        if (c->quitting) {
                c->in.len = 0;
        } else if (p == c->in.p) {
                memmove(c->in.p, c->in.p + off, n - off);
                c->in.len = n - off;
        } else if (off < n) {
                buf_add(&c->in, p + off, n - off);
        }
        if (c->in.cap > IN_SHRINK && c->in.len < IN_SHRINK / 4) {
                char *q = realloc(c->in.p, IN_SHRINK);

                if (q) {
                        c->in.p = q;
                        c->in.cap = IN_SHRINK;
                }
        }
        conn_flush(c);
}

static void on_close(struct pc_conn *pc, int err, void *arg)
{
        struct conn *c = pc_conn_data(pc);

        (void)err;
        (void)arg;
        if (c == NULL)
                return;
        wstats[pc_worker_id()].curr_conns--;
        c->dead = true;
        if (c->refs == 0)
                conn_free(c);
}

static const struct pc_tcp_callbacks tcp_cb = {
        .on_accept = on_accept,
        .on_data = on_data,
        .on_close = on_close,
};

/* ---- main ------------------------------------------------------------------------------ */

static void kv_main(void *arg)
{
        (void)arg;
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: pc-kv [-p TCP_PORT] [-U UDP_PORT] [-l ADDR] [-m MB] [-t WORKERS]\n"
                "             [-c MAXCONNS] [-I ITEM_MAX] [-v] [--backend kernel] [--help]\n"
                "A memcached-compatible cache (ASCII protocol over TCP), its data sharded by\n"
                "key across the workers. Runs until SIGINT/SIGTERM.\n"
                "  -p PORT         TCP port (default 11211)\n"
                "  -U PORT         UDP port (default 0 = off; UDP is not implemented yet,\n"
                "                  so any other value is refused)\n"
                "  -l ADDR         IPv4 address to listen on (default 127.0.0.1)\n"
                "  -m MB           item memory in megabytes, split evenly per worker (64)\n"
                "  -t N            workers (default: PERCORE_WORKERS or one per CPU)\n"
                "  -c N            most simultaneous connections (1024)\n"
                "  -I SIZE         largest value, bytes or with k/m suffix (1m)\n"
                "  -v              more logging (repeat for more)\n"
                "  --backend B     kernel (io_uring sockets); dpdk is not implemented yet\n"
                "Other settings: PERCORE_* variables (see README).\n");
}

/* memcached's -I: bytes, or a k/m suffix. */
static int parse_size(const char *s, size_t *out)
{
        char tmp[32];
        size_t n = strlen(s), mult = 1;
        unsigned long v;

        if (n == 0 || n >= sizeof(tmp))
                return -1;
        memcpy(tmp, s, n + 1);
        if (tmp[n - 1] == 'k' || tmp[n - 1] == 'K')
                mult = 1024;
        else if (tmp[n - 1] == 'm' || tmp[n - 1] == 'M')
                mult = 1024 * 1024;
        if (mult > 1)
                tmp[n - 1] = 0;
        if (app_parse_uint(tmp, 1, 1024UL * 1024 * 1024, &v) || v * mult < 1024 ||
            v * mult > 1024UL * 1024 * 1024)
                return -1;
        *out = v * mult;
        return 0;
}

static void print_totals(void)
{
        struct kv_store_stats sum = {0}, st;
        uint64_t send_failed = 0, total_conns = 0;

        for (unsigned w = 0; w < pc_runtime_workers(rt); w++) {
                uint64_t *d = (uint64_t *)&sum, *s = (uint64_t *)&st;

                kv_store_stats(stores[w], &st);
                for (size_t i = 0; i < sizeof(sum) / sizeof(uint64_t); i++)
                        d[i] += s[i];
                send_failed += wstats[w].send_failed;
                total_conns += wstats[w].total_conns;
        }
        printf("pc-kv: workers=%u connections=%" PRIu64 " get_hits=%" PRIu64
               " get_misses=%" PRIu64 " cmd_set=%" PRIu64 " curr_items=%" PRIu64
               " bytes=%" PRIu64 " evictions=%" PRIu64 " send_failed=%" PRIu64 "\n",
               pc_runtime_workers(rt), total_conns, sum.get_hits, sum.get_misses, sum.cmd_set,
               sum.curr_items, sum.bytes, sum.evictions, send_failed);
}

int main(int argc, char **argv)
{
        static const struct option lopts[] = {
                {"backend", required_argument, NULL, 'b'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct pc_config cfg;
        struct pc_knet_opts ko = {0};
        struct pc_tcp_listener *l;
        const char *addr = "127.0.0.1";
        unsigned long port = 11211, udp_port = 0, mem_mb = 64, max_conns = 1024, v;
        struct in_addr ia;
        unsigned workers;
        int c, rc;

        pc_config_init(&cfg);
        while ((c = getopt_long(argc, argv, "p:U:l:m:t:c:I:vh", lopts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        if (strcmp(optarg, "kernel") != 0) {
                                fprintf(stderr, "pc-kv: --backend '%s': only kernel is "
                                                "implemented\n", optarg);
                                return 2;
                        }
                        break;
                case 'p':
                case 'U':
                        if (app_parse_uint(optarg, c == 'p' ? 1 : 0, 65535, &v)) {
                                fprintf(stderr, "pc-kv: -%c '%s': expected a port\n", c, optarg);
                                return 2;
                        }
                        *(c == 'p' ? &port : &udp_port) = v;
                        break;
                case 'l':
                        if (inet_pton(AF_INET, optarg, &ia) != 1) {
                                fprintf(stderr, "pc-kv: -l '%s': expected an IPv4 address\n",
                                        optarg);
                                return 2;
                        }
                        addr = optarg;
                        break;
                case 'm':
                        if (app_parse_uint(optarg, 1, 1024UL * 1024, &mem_mb)) {
                                fprintf(stderr, "pc-kv: -m '%s': expected megabytes >= 1\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 't':
                        if (app_parse_uint(optarg, 1, PC_MAX_WORKERS, &v)) {
                                fprintf(stderr, "pc-kv: -t '%s': expected 1..%d\n", optarg,
                                        PC_MAX_WORKERS);
                                return 2;
                        }
                        cfg.workers = (unsigned)v;
                        break;
                case 'c':
                        if (app_parse_uint(optarg, 1, 1000000, &max_conns)) {
                                fprintf(stderr, "pc-kv: -c '%s': expected 1..1000000\n", optarg);
                                return 2;
                        }
                        break;
                case 'I':
                        if (parse_size(optarg, &item_max)) {
                                fprintf(stderr, "pc-kv: -I '%s': expected 1k..1024m\n", optarg);
                                return 2;
                        }
                        break;
                case 'v':
                        verbose++;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pc-kv: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        if (udp_port) {
                fprintf(stderr, "pc-kv: -U %lu: UDP is not implemented yet (use -U 0)\n",
                        udp_port);
                return 2;
        }
        if (verbose)
                cfg.log_level = verbose > 1 ? PC_LOG_DEBUG : PC_LOG_INFO;

        rc = pc_runtime_create(&cfg, &rt);
        if (rc) {
                fprintf(stderr, "pc-kv: cannot start: %s\n", pc_strerror(rc));
                return 1;
        }
        workers = pc_runtime_workers(rt);
        mem_total = (size_t)mem_mb * 1024 * 1024;
        if (mem_total / workers < kv_store_item_size(KV_KEY_MAX, item_max)) {
                fprintf(stderr, "pc-kv: -m %lu over %u workers leaves less than one -I item "
                                "per worker\n", mem_mb, workers);
                pc_runtime_destroy(rt);
                return 2;
        }
        ko.max_conns = (unsigned)((max_conns + workers - 1) / workers);
        /* Room for a whole largest reply and then some, so a get of the
         * largest item does not meet the output cap. */
        ko.out_cap = 4 * (item_max + 65536);
        rc = pc_shard_init(rt, NULL);
        if (rc == 0)
                rc = pc_knet_configure(rt, &ko);
        for (unsigned w = 0; rc == 0 && w < workers; w++)
                rc = kv_store_create(mem_total / workers, NULL, NULL, &stores[w]);
        if (rc == 0)
                rc = pc_tcp_listen(rt, addr, (uint16_t)port, &tcp_cb, NULL, &l);
        if (rc) {
                fprintf(stderr, "pc-kv: setup on %s:%lu: %s\n", addr, port, pc_strerror(rc));
                goto out;
        }
        started = time(NULL);
        printf("pc-kv: listening on %s:%lu, %u workers, %lu MB, item max %zu\n", addr, port,
               workers, mem_mb, item_max);
        fflush(stdout);
        pc_runtime_stop_on_signals(rt);
        rc = pc_runtime_run(rt, kv_main, NULL);
        print_totals();
        if (rc)
                fprintf(stderr, "pc-kv: run: %s\n", pc_strerror(rc));
out:
        pc_runtime_destroy(rt);
        for (unsigned w = 0; w < workers; w++)
                kv_store_destroy(stores[w]);
        return rc ? 1 : 0;
}
