/* SPDX-License-Identifier: MIT */
/*
 * One shard of the cache: a chained hash table, an LRU list and a memory
 * cap. A store is owned by one worker and is not thread-safe: only its
 * owner calls into it (other workers reach it through pc_call()).
 *
 * Times are unix seconds from the store's clock (time() unless a test
 * injects one). Expiry times are given as memcached takes them: 0 never,
 * negative already expired, up to 30 days relative, above that absolute.
 */
#ifndef KV_STORE_H
#define KV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an item has been through (kv_item.iflags), as memcached's meta
 * commands tell it. */
#define KV_IT_FETCHED 0x01    /**< read since stored (mg h) */
#define KV_IT_STALE 0x04      /**< invalidated (md I, ms I): mg answers X */
#define KV_IT_WIN_SENT 0x08   /**< a recache win (W) went out: later readers get Z */
#define KV_IT_KEY_BINARY 0x10 /**< stored with a base64 key: mg k answers in base64 */
#define KV_IT_ACTIVE 0x20     /**< used since it last passed the LRU's tail: a second chance */

/** An item: header, then the key, then the value (no "\r\n"). */
struct kv_item {
        struct kv_item *hnext;          /* hash chain */
        struct kv_item *lprev, *lnext;  /* LRU, most recent at the head */
        uint64_t hash;
        uint64_t cas;
        int64_t exptime; /* absolute, 0 = never */
        uint32_t stime;  /* when stored (unix seconds), for delayed flush_all */
        uint32_t flags;
        uint32_t vlen;
        uint32_t atime;  /* last access as memcached keeps it: stored, or read again */
        uint32_t held;   /* the batch whose unsent mg reply holds it (kv_req.batch) */
        uint8_t klen;
        uint8_t iflags;  /* KV_IT_* */
        char data[];
};

static inline const char *kv_item_key(const struct kv_item *it)
{
        return it->data;
}

static inline const char *kv_item_value(const struct kv_item *it)
{
        return it->data + it->klen;
}

/*
 * memcached 1.6's own item size, for the limit -I sets and me's size=: its
 * 48-byte header, the key and a NUL, the value and its "\r\n", the cas,
 * and the client flags when they are not 0 (measured against 1.6.18).
 */
#define KV_MC_ITEM_HDR 48
static inline size_t kv_mc_item_size(size_t klen, size_t vlen, uint32_t flags)
{
        return KV_MC_ITEM_HDR + klen + 1 + vlen + 2 + 8 + (flags ? 4u : 0u);
}

/** Counters of one store; summed over shards for "stats". */
struct kv_store_stats {
        uint64_t get_hits, get_misses, get_expired, get_flushed;
        uint64_t cmd_get, cmd_set, cmd_touch, cmd_flush;
        uint64_t delete_hits, delete_misses;
        uint64_t incr_hits, incr_misses, decr_hits, decr_misses;
        uint64_t cas_hits, cas_misses, cas_badval;
        uint64_t touch_hits, touch_misses;
        uint64_t evictions, expired_unfetched, total_items;
        uint64_t curr_items, bytes, limit_maxbytes;
};

/** What a command did. */
enum kv_store_rc {
        KV_OK,        /**< a read hit, or a command with nothing else to say */
        KV_STORED,
        KV_NOT_STORED,
        KV_EXISTS,    /**< cas: the unique value changed */
        KV_NOT_FOUND,
        KV_DELETED,
        KV_TOUCHED,
        KV_NON_NUMERIC, /**< incr/decr on a value that is not a number */
        KV_NO_MEMORY,   /**< the item alone exceeds the store's cap */
        KV_TOO_LARGE,   /**< refused before the store: the value is over the item maximum */
};

typedef int64_t (*kv_clock_fn)(void *arg);

struct kv_store;

/**
 * Create a store holding at most @mem_cap bytes of items (headers, keys
 * and values counted). @clock NULL means time(). Returns 0 or -ENOMEM.
 */
int kv_store_create(size_t mem_cap, kv_clock_fn clock, void *clock_arg, struct kv_store **out);
void kv_store_destroy(struct kv_store *s);

/** Refuse an append or prepend (KV_NOT_STORED) whose value would make
 *  an item over @item_max bytes as memcached counts them (kv_mc_item_size);
 *  by default no limit. */
void kv_store_set_item_max(struct kv_store *s, size_t item_max);

/** Bytes an item of these sizes is charged. */
size_t kv_store_item_size(size_t klen, size_t vlen);

/** The item for @key, live (not expired, not flushed), bumped in the LRU;
 *  NULL otherwise. Counts a get hit or miss. Valid until the next call. */
const struct kv_item *kv_store_get(struct kv_store *s, const char *key, size_t klen);

/** get and touch: as kv_store_get(), also setting a new @exptime. */
const struct kv_item *kv_store_gat(struct kv_store *s, const char *key, size_t klen,
                                   int64_t exptime);

/* kv_store_update() options, for the meta set's flags. */
#define KV_W_STALE_OK 0x1   /**< cas: an older cas than the item's stores, marked stale (I) */
#define KV_W_KEY_BINARY 0x2 /**< the key came in base64 (b): KV_IT_KEY_BINARY */

/** set, add, replace, append, prepend, cas: @mode is one of those
 *  commands' enum kv_cmd values from req.h; @cas for cas, and for
 *  append/prepend when non-zero (binary protocol, meta C: must match, else
 *  KV_EXISTS). @opts: KV_W_* or 0. */
enum kv_store_rc kv_store_update(struct kv_store *s, int mode, const char *key, size_t klen,
                                 uint32_t flags, int64_t exptime, const void *val, size_t vlen,
                                 uint64_t cas, unsigned opts);

/** delete; a non-zero @cas must match the item's (else KV_EXISTS), as the
 *  binary protocol's delete. */
enum kv_store_rc kv_store_delete(struct kv_store *s, const char *key, size_t klen, uint64_t cas);

/** The live item for @key without counting a get or bumping the LRU;
 *  NULL otherwise. Valid until the next call. */
const struct kv_item *kv_store_peek(struct kv_store *s, const char *key, size_t klen);

/** The cas unique value given by the last successful write (what the
 *  binary protocol returns in a write's reply). */
uint64_t kv_store_last_cas(const struct kv_store *s);

/** touch: a new @exptime for the live item; KV_TOUCHED (and the item in
 *  *@it when @it is not NULL, even when the new time has already passed),
 *  or KV_NOT_FOUND. */
enum kv_store_rc kv_store_touch(struct kv_store *s, const char *key, size_t klen,
                                int64_t exptime, const struct kv_item **it);

/** incr (@incr true) or decr by @delta; *@result gets the new value and
 *  *@it (when not NULL) the item. incr wraps at 2^64, decr stops at 0, as
 *  memcached; a value is a number as strtoull() reads one (leading white
 *  space, a sign, digits, then the end or white space), and a new number
 *  no longer than the old one is written in its place, padded with
 *  spaces, unless @batch is not 0 and the item's held tag: an mg of this
 *  request batch read it, and memcached, whose reply still holds the item,
 *  stores the number as a new item then. A non-zero @cas must match (else
 *  KV_EXISTS). */
enum kv_store_rc kv_store_arith(struct kv_store *s, const char *key, size_t klen,
                                bool incr, uint64_t delta, uint64_t cas, uint32_t batch,
                                uint64_t *result, const struct kv_item **it);

/* ---- what the meta commands do to an item (found with kv_store_peek) ---- */

/** @exptime (memcached's form) as an absolute time: 0 never, -1 already. */
int64_t kv_store_abs_exptime(const struct kv_store *s, int64_t exptime);

/** A read: KV_IT_ACTIVE (the LRU's second chance), KV_IT_FETCHED on the
 *  first, atime on later ones. */
void kv_store_read(struct kv_store *s, const struct kv_item *it);

/** A new @exptime (memcached's form, as for touch). */
void kv_store_set_exptime(struct kv_store *s, const struct kv_item *it, int64_t exptime);

/** Set the KV_IT_* bits @set, then clear @clear. */
void kv_store_set_iflags(struct kv_store *s, const struct kv_item *it, unsigned set,
                         unsigned clear);

/** An mg of request batch @batch read @it: its reply holds the item until
 *  the batch's replies are sent (see kv_store_arith). */
void kv_store_hold(struct kv_store *s, const struct kv_item *it, uint32_t batch);

/** A new cas unique for @it (md I). */
void kv_store_recas(struct kv_store *s, const struct kv_item *it);

/** Count a meta get: a hit or a miss, of a get or (@touched) a touch. */
void kv_store_count_get(struct kv_store *s, bool hit, bool touched);

/** flush_all: @delay 0 (or less) drops every item now; else items stored
 *  before now + @delay become invisible at that time. */
void kv_store_flush(struct kv_store *s, int64_t delay);

/** A new memory cap (cache_memlimit): items over it are evicted as new
 *  ones come in, as memcached does. */
void kv_store_set_cap(struct kv_store *s, size_t mem_cap);

/** Bytes of freed item memory the store keeps for its next items (not in
 *  its stats' bytes; at most 1 MiB, or an eighth of a smaller cap). */
size_t kv_store_cached_bytes(const struct kv_store *s);

/** Copy the counters. */
void kv_store_stats(const struct kv_store *s, struct kv_store_stats *out);

/** stats reset: zero the cumulative counters (not curr_items, bytes or
 *  limit_maxbytes). */
void kv_store_stats_reset(struct kv_store *s);

/** When the least recently used item was stored; 0 when empty. */
int64_t kv_store_oldest(const struct kv_store *s);

/** The clock's current time. */
int64_t kv_store_now(const struct kv_store *s);

#endif
