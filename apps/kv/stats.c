/* SPDX-License-Identifier: MIT */
/*
 * "stats" and its groups, as memcached 1.6 names them: the general
 * counters, "settings", "items", "slabs", and "reset". Counters live in
 * each worker's store and are read there (pc_map_reduce), summed on the
 * asking worker and written one stat at a time by the request's protocol
 * encoder ("STAT name value" lines, or one binary frame per stat ended by
 * an empty one).
 *
 * pc-kv has one LRU per shard and no slab classes: "items" and "slabs"
 * report the whole cache as one class, numbered 1, with what is
 * meaningful for it (item count, age of the oldest item, evictions, bytes).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kv_pvt.h"
#include "pc_shard.h"

enum group { G_GENERAL, G_SETTINGS, G_ITEMS, G_SLABS, G_RESET };

struct totals {
        struct kv_store_stats st; /* summed */
        uint64_t curr_conns, total_conns, udp_requests, udp_dropped, idle_kicks; /* summed */
        int64_t oldest; /* the oldest item's store time over the shards, 0 none */
        bool oom;
};

struct stats_call {
        struct kv_sink *k;
        struct pending *pd;
        struct kv_req req; /* the reply's shape; no pointers used */
        enum group g;
};

static void stat(struct buf *b, const struct kv_req *r, const char *name, const char *fmt, ...)
{
        char val[128];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(val, sizeof(val), fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n >= sizeof(val))
                n = sizeof(val) - 1;
        kv_reply_stat(r, name, val, (size_t)n, b);
}

#define U(name, v) stat(b, r, name, "%" PRIu64, (uint64_t)(v))

static double tv_sec(const struct timeval *tv)
{
        return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static void general(struct buf *b, const struct kv_req *r, const struct totals *t)
{
        time_t now = time(NULL);
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        stat(b, r, "pid", "%ld", (long)getpid());
        U("uptime", now - kv_set.started);
        U("time", now);
        stat(b, r, "version", "%s", KV_VERSION_STRING);
        U("pointer_size", 8 * sizeof(void *));
        stat(b, r, "rusage_user", "%.6f", tv_sec(&ru.ru_utime));
        stat(b, r, "rusage_system", "%.6f", tv_sec(&ru.ru_stime));
        U("max_connections", kv_set.max_conns);
        U("curr_connections", t->curr_conns);
        U("total_connections", t->total_conns);
        U("cmd_get", t->st.cmd_get);
        U("cmd_set", t->st.cmd_set);
        U("cmd_flush", t->st.cmd_flush);
        U("cmd_touch", t->st.cmd_touch);
        U("get_hits", t->st.get_hits);
        U("get_misses", t->st.get_misses);
        U("get_expired", t->st.get_expired);
        U("get_flushed", t->st.get_flushed);
        U("delete_misses", t->st.delete_misses);
        U("delete_hits", t->st.delete_hits);
        U("incr_misses", t->st.incr_misses);
        U("incr_hits", t->st.incr_hits);
        U("decr_misses", t->st.decr_misses);
        U("decr_hits", t->st.decr_hits);
        U("cas_misses", t->st.cas_misses);
        U("cas_hits", t->st.cas_hits);
        U("cas_badval", t->st.cas_badval);
        U("touch_hits", t->st.touch_hits);
        U("touch_misses", t->st.touch_misses);
        U("idle_kicks", t->idle_kicks);
        U("udp_requests", t->udp_requests);
        U("udp_dropped", t->udp_dropped);
        U("threads", pc_runtime_workers(kv_rt));
        U("limit_maxbytes", kv_mem_total());
        U("bytes", t->st.bytes);
        U("curr_items", t->st.curr_items);
        U("total_items", t->st.total_items);
        U("expired_unfetched", t->st.expired_unfetched);
        U("evictions", t->st.evictions);
}

static void settings(struct buf *b, const struct kv_req *r)
{
        U("maxbytes", kv_mem_total());
        U("maxconns", kv_set.max_conns);
        U("tcpport", kv_set.tcp_port);
        U("udpport", kv_set.udp_port);
        stat(b, r, "inter", "%s", kv_set.addr);
        U("verbosity", kv_set.verbose);
        U("num_threads", pc_runtime_workers(kv_rt));
        U("item_size_max", kv_set.item_max);
        stat(b, r, "evictions", "on");
        stat(b, r, "cas_enabled", "yes");
        stat(b, r, "binding_protocol", "auto-negotiate");
        stat(b, r, "maxconns_fast", "yes"); /* over -c: closed at once */
        U("idle_timeout", kv_set.idle_timeout);
        stat(b, r, "backend", "%s", kv_set.backend);
        stat(b, r, "sharding", "per-worker");
}

static void items(struct buf *b, const struct kv_req *r, const struct totals *t)
{
        int64_t now = time(NULL);

        if (t->st.curr_items == 0)
                return; /* memcached lists only classes that hold items */
        U("items:1:number", t->st.curr_items);
        U("items:1:age", t->oldest && now > t->oldest ? now - t->oldest : 0);
        U("items:1:evicted", t->st.evictions);
        U("items:1:expired_unfetched", t->st.expired_unfetched);
        U("items:1:outofmemory", 0);
}

static void slabs(struct buf *b, const struct kv_req *r, const struct totals *t)
{
        if (t->st.curr_items) {
                U("1:chunk_size", t->st.bytes / t->st.curr_items);
                U("1:used_chunks", t->st.curr_items);
                U("1:mem_requested", t->st.bytes);
                U("1:get_hits", t->st.get_hits);
                U("1:cmd_set", t->st.cmd_set);
                U("1:delete_hits", t->st.delete_hits);
                U("1:incr_hits", t->st.incr_hits);
                U("1:decr_hits", t->st.decr_hits);
                U("1:cas_hits", t->st.cas_hits);
                U("1:cas_badval", t->st.cas_badval);
                U("1:touch_hits", t->st.touch_hits);
        }
        U("active_slabs", t->st.curr_items ? 1 : 0);
        U("total_malloced", t->st.bytes);
}

#undef U

/* ---- gathering over the shards ------------------------------------------------------------ */

static void *stats_map(void *arg)
{
        struct totals *t = calloc(1, sizeof(*t));
        const struct stats_call *sc = arg;
        int w = pc_worker_id();

        if (t == NULL)
                return NULL;
        kv_shard_hold();
        if (sc->g == G_RESET) {
                kv_store_stats_reset(kv_stores[w]);
                kv_wstats[w].total_conns = kv_wstats[w].curr_conns;
                kv_wstats[w].udp_requests = kv_wstats[w].udp_dropped = 0;
                kv_wstats[w].idle_kicks = 0;
                return t;
        }
        kv_store_stats(kv_stores[w], &t->st);
        t->oldest = kv_store_oldest(kv_stores[w]);
        t->curr_conns = kv_wstats[w].curr_conns;
        t->total_conns = kv_wstats[w].total_conns;
        t->udp_requests = kv_wstats[w].udp_requests;
        t->udp_dropped = kv_wstats[w].udp_dropped;
        t->idle_kicks = kv_wstats[w].idle_kicks;
        return t;
}

static void *stats_reduce(void *acc, void *item, void *arg)
{
        struct totals *a = acc, *t = item;
        uint64_t *d = (uint64_t *)&a->st, *s;

        (void)arg;
        if (t == NULL) {
                a->oom = true;
                return acc;
        }
        s = (uint64_t *)&t->st;
        for (size_t i = 0; i < sizeof(a->st) / sizeof(uint64_t); i++)
                d[i] += s[i];
        a->curr_conns += t->curr_conns;
        a->total_conns += t->total_conns;
        a->udp_requests += t->udp_requests;
        a->udp_dropped += t->udp_dropped;
        a->idle_kicks += t->idle_kicks;
        if (t->oldest && (a->oldest == 0 || t->oldest < a->oldest))
                a->oldest = t->oldest;
        free(t);
        return acc;
}

static void stats_done(void *acc, void *done_arg)
{
        struct stats_call *sc = done_arg;
        struct totals *t = acc;
        const struct kv_req *r = &sc->req;
        struct buf b = {0};

        if (t->oom) {
                kv_reply_error(r, "SERVER_ERROR out of memory\r\n", KV_BIN_ENOMEM, &b);
        } else {
                switch (sc->g) {
                case G_GENERAL:
                        general(&b, r, t);
                        break;
                case G_ITEMS:
                        items(&b, r, t);
                        break;
                case G_SLABS:
                        slabs(&b, r, t);
                        break;
                default:
                        break;
                }
                if (sc->g == G_RESET && r->proto == KV_PROTO_ASCII)
                        buf_str(&b, "RESET\r\n");
                else
                        kv_reply_stats_end(r, &b);
        }
        free(t);
        kv_pending_fill(sc->k, sc->pd, 0, &b);
        kv_sink_unref(sc->k);
        free(sc);
}

void kv_stats(struct kv_sink *k, const struct kv_req *r)
{
        static const struct {
                const char *name;
                enum group g;
        } groups[] = {
                {"", G_GENERAL}, {"settings", G_SETTINGS}, {"items", G_ITEMS},
                {"slabs", G_SLABS}, {"reset", G_RESET},
        };
        struct stats_call *sc;
        struct totals *acc;
        struct buf *b;
        size_t i;

        for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
                if (strlen(groups[i].name) == r->keylen &&
                    memcmp(groups[i].name, r->key ? r->key : "", r->keylen) == 0)
                        break;
        if (i == sizeof(groups) / sizeof(groups[0])) {
                b = kv_sink_slot(k);
                if (b)
                        kv_reply_error(r, KV_ERR_UNKNOWN, KV_BIN_ENOENT, b);
                return;
        }
        if (groups[i].g == G_SETTINGS) { /* nothing to gather */
                b = kv_sink_slot(k);
                if (b) {
                        settings(b, r);
                        kv_reply_stats_end(r, b);
                }
                return;
        }
        sc = calloc(1, sizeof(*sc));
        acc = calloc(1, sizeof(*acc));
        if (sc == NULL || acc == NULL || (sc->pd = kv_pending_add(k, 1)) == NULL) {
                k->out.oom = true;
                free(sc);
                free(acc);
                return;
        }
        sc->k = k;
        sc->req = *r;
        sc->req.key = sc->req.keys = sc->req.data = NULL;
        sc->g = groups[i].g;
        k->refs++;
        if (pc_map_reduce(stats_map, sc, stats_reduce, acc, stats_done, sc)) {
                struct buf e = {0};

                free(acc);
                kv_reply_error(r, "SERVER_ERROR out of memory\r\n", KV_BIN_ENOMEM, &e);
                kv_pending_fill(k, sc->pd, 0, &e);
                kv_sink_unref(k);
                free(sc);
        }
}
