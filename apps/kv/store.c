/* SPDX-License-Identifier: MIT */
/*
 * A cache shard: chained hash table (doubling when the load passes 1.5),
 * intrusive LRU list, byte-counted memory cap with eviction from the LRU
 * tail. Expired and flushed items are removed lazily when found.
 *
 * Item memory: an item of up to CHUNK_MAX bytes takes a chunk rounded up
 * to CHUNK_ALIGN, and a freed one waits on its size class's list for the
 * next item of that class, as memcached's slabs reuse their chunks. A set
 * that replaces a value allocates the new item before it frees the old,
 * so with a steady mix each class keeps a chunk or two and no set reaches
 * malloc: glibc's own cache (tcache) stops at 1032 bytes, and above it
 * every malloc and free of a 1 KB value's item takes the arena's bins.
 * The lists are the
 * store's, so whoever holds the shard (its owner or a borrower) uses them
 * without a lock. What they keep is bounded (chunk_cache_cap()) and not
 * counted in the store's bytes: it is free memory kept back from malloc.
 */
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_shard.h"
#include "req.h"
#include "token.h"

#define BUCKETS_INITIAL 1024
/* Item chunks: sizes rounded up to CHUNK_ALIGN; those up to CHUNK_MAX are
 * kept for reuse when freed, at most CHUNK_CACHE_MAX bytes of them (less
 * for a small store: chunk_cache_cap()). */
#define CHUNK_ALIGN 64u
#define CHUNK_MAX 16384u
#define CHUNK_CLASSES (CHUNK_MAX / CHUNK_ALIGN)
#define CHUNK_CACHE_MAX ((size_t)1 << 20)

/* A free chunk on its class's list. */
struct chunk {
        struct chunk *next;
};

struct kv_store {
        struct kv_item **table;
        size_t nbuckets; /* power of two */
        struct kv_item *lru_head, *lru_tail;
        uint64_t next_cas;
        int64_t flush_at; /* delayed flush_all time, 0 = none */
        size_t mem_cap;
        size_t item_max; /* memcached's -I, in kv_mc_item_size() bytes */
        kv_clock_fn clock;
        void *clock_arg;
        struct kv_store_stats st;
        size_t cached; /* bytes on the chunk lists */
        struct chunk *free_chunks[CHUNK_CLASSES]; /* [class - 1] */
};

/* ---- item chunks ---------------------------------------------------------------- */

/* What the chunk lists may keep: CHUNK_CACHE_MAX, or an eighth of a
 * smaller store's cap. */
static size_t chunk_cache_cap(const struct kv_store *s)
{
        return s->mem_cap / 8 < CHUNK_CACHE_MAX ? s->mem_cap / 8 : CHUNK_CACHE_MAX;
}

/* The class of an item of @size bytes (1-based), 0 for one too large to
 * keep; its chunk is class * CHUNK_ALIGN bytes. */
static unsigned chunk_class(size_t size)
{
        return size <= CHUNK_MAX ? (unsigned)((size + CHUNK_ALIGN - 1) / CHUNK_ALIGN) : 0;
}

static struct kv_item *chunk_get(struct kv_store *s, size_t size)
{
        unsigned c = chunk_class(size);
        struct chunk *k;

        if (c == 0)
                return malloc(size);
        k = s->free_chunks[c - 1];
        if (k == NULL)
                return malloc((size_t)c * CHUNK_ALIGN);
        s->free_chunks[c - 1] = k->next;
        s->cached -= (size_t)c * CHUNK_ALIGN;
        return (struct kv_item *)k;
}

static void chunk_put(struct kv_store *s, struct kv_item *it)
{
        unsigned c = chunk_class(kv_store_item_size(it->klen, it->vlen));
        struct chunk *k = (struct chunk *)it;

        if (c == 0 || s->cached + (size_t)c * CHUNK_ALIGN > chunk_cache_cap(s)) {
                free(it);
                return;
        }
        k->next = s->free_chunks[c - 1];
        s->free_chunks[c - 1] = k;
        s->cached += (size_t)c * CHUNK_ALIGN;
}

/* Free kept chunks, the largest first, until at most @keep bytes stay. */
static void chunks_trim(struct kv_store *s, size_t keep)
{
        for (unsigned c = CHUNK_CLASSES; c > 0 && s->cached > keep; c--)
                while (s->free_chunks[c - 1] && s->cached > keep) {
                        struct chunk *k = s->free_chunks[c - 1];

                        s->free_chunks[c - 1] = k->next;
                        s->cached -= (size_t)c * CHUNK_ALIGN;
                        free(k);
                }
}

size_t kv_store_cached_bytes(const struct kv_store *s)
{
        return s->cached;
}

static int64_t clock_time(void *arg)
{
        (void)arg;
        return (int64_t)time(NULL);
}

int kv_store_create(size_t mem_cap, kv_clock_fn clock, void *clock_arg, struct kv_store **out)
{
        struct kv_store *s = calloc(1, sizeof(*s));

        if (s == NULL)
                return -ENOMEM;
        s->nbuckets = BUCKETS_INITIAL;
        s->table = calloc(s->nbuckets, sizeof(*s->table));
        if (s->table == NULL) {
                free(s);
                return -ENOMEM;
        }
        s->mem_cap = mem_cap;
        s->item_max = SIZE_MAX;
        s->clock = clock ? clock : clock_time;
        s->clock_arg = clock_arg;
        s->st.limit_maxbytes = mem_cap;
        *out = s;
        return 0;
}

void kv_store_destroy(struct kv_store *s)
{
        struct kv_item *it, *next;

        if (s == NULL)
                return;
        for (it = s->lru_head; it; it = next) {
                next = it->lnext;
                free(it);
        }
        chunks_trim(s, 0);
        free(s->table);
        free(s);
}

void kv_store_set_item_max(struct kv_store *s, size_t item_max)
{
        s->item_max = item_max;
}

size_t kv_store_item_size(size_t klen, size_t vlen)
{
        return sizeof(struct kv_item) + klen + vlen;
}

int64_t kv_store_now(const struct kv_store *s)
{
        return s->clock(s->clock_arg);
}

void kv_store_set_cap(struct kv_store *s, size_t mem_cap)
{
        s->mem_cap = mem_cap;
        s->st.limit_maxbytes = mem_cap;
        chunks_trim(s, chunk_cache_cap(s)); /* a smaller cap keeps fewer */
}

void kv_store_stats(const struct kv_store *s, struct kv_store_stats *out)
{
        *out = s->st;
}

/* memcached's realtime(): 0 never; negative already gone; up to 30 days
 * relative; beyond, an absolute unix time. -1 is "expired" for any clock. */
void kv_store_stats_reset(struct kv_store *s)
{
        struct kv_store_stats keep = s->st;

        memset(&s->st, 0, sizeof(s->st));
        s->st.curr_items = keep.curr_items;
        s->st.bytes = keep.bytes;
        s->st.limit_maxbytes = keep.limit_maxbytes;
}

int64_t kv_store_oldest(const struct kv_store *s)
{
        return s->lru_tail ? s->lru_tail->stime : 0;
}

static int64_t abs_exptime(int64_t e, int64_t now)
{
        if (e == 0)
                return 0;
        if (e < 0)
                return -1;
        if (e > KV_REALTIME_MAXDELTA)
                return e <= now ? -1 : e;
        return now + e;
}

/* ---- LRU and table ------------------------------------------------------------ */

static void lru_unlink(struct kv_store *s, struct kv_item *it)
{
        if (it->lprev)
                it->lprev->lnext = it->lnext;
        else
                s->lru_head = it->lnext;
        if (it->lnext)
                it->lnext->lprev = it->lprev;
        else
                s->lru_tail = it->lprev;
        it->lprev = it->lnext = NULL;
}

static void lru_push(struct kv_store *s, struct kv_item *it)
{
        it->lprev = NULL;
        it->lnext = s->lru_head;
        if (s->lru_head)
                s->lru_head->lprev = it;
        else
                s->lru_tail = it;
        s->lru_head = it;
}

static void grow(struct kv_store *s)
{
        size_t n = s->nbuckets * 2;
        struct kv_item **t = calloc(n, sizeof(*t));

        if (t == NULL)
                return; /* longer chains, still correct */
        for (size_t b = 0; b < s->nbuckets; b++) {
                struct kv_item *it = s->table[b], *next;

                for (; it; it = next) {
                        next = it->hnext;
                        it->hnext = t[it->hash & (n - 1)];
                        t[it->hash & (n - 1)] = it;
                }
        }
        free(s->table);
        s->table = t;
        s->nbuckets = n;
}

static void link_item(struct kv_store *s, struct kv_item *it)
{
        struct kv_item **b = &s->table[it->hash & (s->nbuckets - 1)];

        it->hnext = *b;
        *b = it;
        lru_push(s, it);
        s->st.curr_items++;
        s->st.total_items++;
        s->st.bytes += kv_store_item_size(it->klen, it->vlen);
        if (s->st.curr_items > s->nbuckets + s->nbuckets / 2)
                grow(s);
}

static void unlink_item(struct kv_store *s, struct kv_item *it)
{
        struct kv_item **pp = &s->table[it->hash & (s->nbuckets - 1)];

        while (*pp != it)
                pp = &(*pp)->hnext;
        *pp = it->hnext;
        lru_unlink(s, it);
        s->st.curr_items--;
        s->st.bytes -= kv_store_item_size(it->klen, it->vlen);
        chunk_put(s, it);
}

static bool is_live(const struct kv_store *s, const struct kv_item *it, int64_t now)
{
        if (it->exptime != 0 && it->exptime <= now)
                return false;
        return !(s->flush_at && now >= s->flush_at && (int64_t)it->stime < s->flush_at);
}

/* The live item for @key; an expired or flushed one is removed on sight. */
static struct kv_item *find(struct kv_store *s, const char *key, size_t klen, int64_t now)
{
        uint64_t h = pc_shard_hash(key, klen);
        struct kv_item *it = s->table[h & (s->nbuckets - 1)];

        for (; it; it = it->hnext) {
                if (it->hash != h || it->klen != klen || memcmp(it->data, key, klen))
                        continue;
                if (is_live(s, it, now))
                        return it;
                if (it->exptime != 0 && it->exptime <= now)
                        s->st.get_expired++;
                else
                        s->st.get_flushed++;
                unlink_item(s, it);
                return NULL;
        }
        return NULL;
}

/*
 * A use of @it: marked active, not moved. Moving a read item to the LRU's
 * head writes its two neighbours and the old head, three lines nobody
 * else wants (a store of random keys misses on each); the flag is in the
 * item's own line, which the read has in cache already. The eviction scan
 * gives an active item at the tail a second chance instead (clears the
 * flag, moves it to the head), as memcached's LRU maintainer moves an
 * ACTIVE item on rather than evicting it: an item used since it last
 * passed the tail is never the one evicted while an unused one is there.
 */
static void bump(struct kv_item *it)
{
        it->iflags |= KV_IT_ACTIVE;
}

/*
 * A read, as memcached's segmented LRU marks one: the first sets FETCHED;
 * a later one moves the access time. memcached moves it on a read that
 * finds the item fetched and not ACTIVE, and sets ACTIVE; its LRU
 * maintainer clears ACTIVE again as it moves the item on to another queue,
 * within about a second. Counted in whole seconds, as l and la are, every
 * read after the first moves the time (a second read in the same second
 * would set it to the same value).
 */
static void read_item(struct kv_store *s, struct kv_item *it, int64_t now)
{
        if (it->iflags & KV_IT_FETCHED)
                it->atime = (uint32_t)now;
        else
                it->iflags |= KV_IT_FETCHED;
        bump(it);
}

/* A new, unlinked item; its value is left for the caller to fill. */
static struct kv_item *item_new(struct kv_store *s, const char *key, size_t klen,
                                uint32_t flags, int64_t exptime, size_t vlen, int64_t now)
{
        struct kv_item *it = chunk_get(s, kv_store_item_size(klen, vlen));

        if (it == NULL)
                return NULL;
        memset(it, 0, sizeof(*it));
        it->hash = pc_shard_hash(key, klen);
        it->flags = flags;
        it->exptime = exptime;
        it->stime = (uint32_t)now;
        it->atime = (uint32_t)now;
        it->klen = (uint8_t)klen;
        it->vlen = (uint32_t)vlen;
        memcpy(it->data, key, klen);
        return it;
}

/* Put @it in place of @old (may be NULL), evicting from the LRU tail until
 * it fits under the cap; @now is the store's clock for this command. */
static void install(struct kv_store *s, struct kv_item *old, struct kv_item *it, int64_t now)
{
        size_t need = kv_store_item_size(it->klen, it->vlen);

        if (old)
                unlink_item(s, old);
        while (s->lru_tail && s->st.bytes + need > s->mem_cap) {
                struct kv_item *victim = s->lru_tail;
                bool live = is_live(s, victim, now);

                /* Each item passes here at most once per use (the flag
                 * goes), so the scan ends. */
                if (live && (victim->iflags & KV_IT_ACTIVE)) {
                        victim->iflags &= (uint8_t)~KV_IT_ACTIVE;
                        lru_unlink(s, victim);
                        lru_push(s, victim);
                        continue;
                }
                if (live)
                        s->st.evictions++;
                unlink_item(s, victim);
        }
        it->cas = ++s->next_cas;
        link_item(s, it);
}

/* ---- commands --------------------------------------------------------------------- */

const struct kv_item *kv_store_get(struct kv_store *s, const char *key, size_t klen)
{
        int64_t now = kv_store_now(s);
        struct kv_item *it = find(s, key, klen, now);

        s->st.cmd_get++;
        if (it == NULL) {
                s->st.get_misses++;
                return NULL;
        }
        s->st.get_hits++;
        read_item(s, it, now);
        return it;
}

const struct kv_item *kv_store_gat(struct kv_store *s, const char *key, size_t klen,
                                   int64_t exptime)
{
        int64_t now = kv_store_now(s);
        struct kv_item *it = find(s, key, klen, now);

        s->st.cmd_get++;
        s->st.cmd_touch++;
        if (it == NULL) {
                s->st.get_misses++;
                s->st.touch_misses++;
                return NULL;
        }
        s->st.get_hits++;
        s->st.touch_hits++;
        it->exptime = abs_exptime(exptime, now);
        read_item(s, it, now);
        /* A negative exptime answers this once, then the item is gone. */
        return it;
}

enum kv_store_rc kv_store_update(struct kv_store *s, int mode, const char *key, size_t klen,
                                 uint32_t flags, int64_t exptime, const void *val, size_t vlen,
                                 uint64_t cas, unsigned opts)
{
        int64_t now = kv_store_now(s);
        struct kv_item *old = find(s, key, klen, now), *it;
        size_t total = vlen;
        bool stale = false;

        s->st.cmd_set++;
        switch (mode) {
        case KV_ADD:
                if (old) {
                        bump(old);
                        return KV_NOT_STORED;
                }
                break;
        case KV_REPLACE:
        case KV_APPEND:
        case KV_PREPEND:
                if (old == NULL)
                        return KV_NOT_STORED;
                if (mode != KV_REPLACE && cas && old->cas != cas)
                        return KV_EXISTS;
                break;
        case KV_CAS:
                if (old == NULL) {
                        s->st.cas_misses++;
                        return KV_NOT_FOUND;
                }
                /* An invalidating set (meta I) whose cas is older than the
                 * item's (and not 0, which matches nothing) stores anyway,
                 * as a stale value. */
                stale = (opts & KV_W_STALE_OK) && cas != 0 && cas < old->cas;
                if (old->cas != cas && !stale) {
                        s->st.cas_badval++;
                        return KV_EXISTS;
                }
                s->st.cas_hits++;
                break;
        default:
                break;
        }
        if (mode == KV_APPEND || mode == KV_PREPEND) {
                total += old->vlen;
                flags = old->flags; /* memcached keeps the old flags and expiry */
                if (kv_mc_item_size(klen, total, flags) > s->item_max)
                        return KV_NOT_STORED;
        }
        if (kv_store_item_size(klen, total) > s->mem_cap)
                return KV_NO_MEMORY;
        it = item_new(s, key, klen, flags, abs_exptime(exptime, now), total, now);
        if (it == NULL)
                return KV_NO_MEMORY;
        if (mode == KV_APPEND) {
                it->exptime = old->exptime;
                memcpy(it->data + klen, kv_item_value(old), old->vlen);
                memcpy(it->data + klen + old->vlen, val, vlen);
        } else if (mode == KV_PREPEND) {
                it->exptime = old->exptime;
                memcpy(it->data + klen, val, vlen);
                memcpy(it->data + klen + vlen, kv_item_value(old), old->vlen);
        } else {
                memcpy(it->data + klen, val, vlen);
        }
        /* memcached builds an appended item afresh, binary key or not. */
        if ((opts & KV_W_KEY_BINARY) && mode != KV_APPEND && mode != KV_PREPEND)
                it->iflags |= KV_IT_KEY_BINARY;
        if (stale) { /* keeps the expiry, and whether a win was sent */
                it->exptime = old->exptime;
                it->iflags |= KV_IT_STALE | (old->iflags & KV_IT_WIN_SENT);
        }
        install(s, old, it, now);
        return KV_STORED;
}

enum kv_store_rc kv_store_delete(struct kv_store *s, const char *key, size_t klen, uint64_t cas)
{
        struct kv_item *it = find(s, key, klen, kv_store_now(s));

        if (it == NULL) {
                s->st.delete_misses++;
                return KV_NOT_FOUND;
        }
        if (cas && it->cas != cas)
                return KV_EXISTS;
        s->st.delete_hits++;
        unlink_item(s, it);
        return KV_DELETED;
}

const struct kv_item *kv_store_peek(struct kv_store *s, const char *key, size_t klen)
{
        return find(s, key, klen, kv_store_now(s));
}

uint64_t kv_store_last_cas(const struct kv_store *s)
{
        return s->next_cas;
}

enum kv_store_rc kv_store_touch(struct kv_store *s, const char *key, size_t klen,
                                int64_t exptime, const struct kv_item **out)
{
        int64_t now = kv_store_now(s);
        struct kv_item *it = find(s, key, klen, now);

        s->st.cmd_touch++;
        if (it == NULL) {
                s->st.touch_misses++;
                return KV_NOT_FOUND;
        }
        s->st.touch_hits++;
        it->exptime = abs_exptime(exptime, now);
        read_item(s, it, now);
        if (out)
                *out = it;
        return KV_TOUCHED;
}

/* isspace() in the C locale. */
static bool is_space(char c)
{
        return c == ' ' || (c >= '\t' && c <= '\r');
}

/* The number a value holds, as memcached's safe_strtoull() reads it where
 * the value is followed by its "\r\n": white space, a sign, digits, then
 * the end, a NUL or white space. A '-' is refused only when it leaves the
 * number negative as an int64 ("-0" is 0, "-18446744073709551615" is 1).
 * memcached refuses an empty value before it reads one. */
static bool value_number(const struct kv_item *it, uint64_t *out)
{
        const char *v = kv_item_value(it), *end = v + it->vlen;
        uint64_t n = 0;
        bool neg, digits = false;

        if (it->vlen == 0)
                return false;
        while (v < end && is_space(*v))
                v++;
        neg = v < end && *v == '-';
        if (v < end && (*v == '-' || *v == '+'))
                v++;
        for (; v < end && *v >= '0' && *v <= '9'; v++) {
                unsigned d = (unsigned)(*v - '0');

                if (n > (UINT64_MAX - d) / 10)
                        return false; /* ERANGE */
                n = n * 10 + d;
                digits = true;
        }
        if (!digits || (v < end && *v != '\0' && !is_space(*v)))
                return false;
        if (neg)
                n = 0 - n;
        if (neg && n > INT64_MAX)
                return false;
        *out = n;
        return true;
}

enum kv_store_rc kv_store_arith(struct kv_store *s, const char *key, size_t klen,
                                bool incr, uint64_t delta, uint64_t cas, uint32_t batch,
                                uint64_t *result, const struct kv_item **out)
{
        int64_t now = kv_store_now(s);
        struct kv_item *old = find(s, key, klen, now), *it;
        char num[24];
        uint64_t v;
        size_t vlen;
        int n;

        if (old == NULL) {
                if (incr)
                        s->st.incr_misses++;
                else
                        s->st.decr_misses++;
                return KV_NOT_FOUND;
        }
        if (old->vlen == 0)
                return KV_NON_NUMERIC;
        if (cas && old->cas != cas)
                return KV_EXISTS;
        if (!value_number(old, &v))
                return KV_NON_NUMERIC;
        if (incr) {
                v += delta; /* wraps at 2^64, as memcached */
                s->st.incr_hits++;
        } else {
                v = delta > v ? 0 : v - delta;
                s->st.decr_hits++;
        }
        n = kv_fmt_u64(num, v);
        if ((size_t)n <= old->vlen && (batch == 0 || old->held != batch)) {
                /* In place, as memcached: the item stays, padded with
                 * spaces, with a new cas. */
                memcpy(old->data + klen, num, (size_t)n);
                memset(old->data + klen + n, ' ', old->vlen - (size_t)n);
                old->cas = ++s->next_cas;
                it = old;
        } else {
                vlen = (size_t)n;
                it = item_new(s, key, klen, old->flags, 0, vlen, now);
                if (it == NULL)
                        return KV_NO_MEMORY;
                it->exptime = old->exptime; /* and nothing of iflags, as memcached */
                memcpy(it->data + klen, num, vlen);
                install(s, old, it, now);
        }
        if (result)
                *result = v;
        if (out)
                *out = it;
        return KV_STORED;
}

/* ---- the meta commands' item operations ---------------------------------------------- */

int64_t kv_store_abs_exptime(const struct kv_store *s, int64_t exptime)
{
        return abs_exptime(exptime, kv_store_now(s));
}

void kv_store_read(struct kv_store *s, const struct kv_item *it)
{
        read_item(s, (struct kv_item *)it, kv_store_now(s));
}

void kv_store_set_exptime(struct kv_store *s, const struct kv_item *it, int64_t exptime)
{
        ((struct kv_item *)it)->exptime = abs_exptime(exptime, kv_store_now(s));
}

void kv_store_set_iflags(struct kv_store *s, const struct kv_item *it, unsigned set,
                         unsigned clear)
{
        struct kv_item *w = (struct kv_item *)it;

        (void)s;
        w->iflags = (uint8_t)((w->iflags | set) & ~clear);
}

void kv_store_hold(struct kv_store *s, const struct kv_item *it, uint32_t batch)
{
        (void)s;
        ((struct kv_item *)it)->held = batch;
}

void kv_store_recas(struct kv_store *s, const struct kv_item *it)
{
        ((struct kv_item *)it)->cas = ++s->next_cas;
}

void kv_store_count_get(struct kv_store *s, bool hit, bool touched)
{
        if (touched) {
                s->st.cmd_touch++;
                if (hit)
                        s->st.touch_hits++;
                else
                        s->st.touch_misses++;
                return;
        }
        s->st.cmd_get++;
        if (hit)
                s->st.get_hits++;
        else
                s->st.get_misses++;
}

void kv_store_flush(struct kv_store *s, int64_t delay)
{
        s->st.cmd_flush++;
        if (delay > 0) {
                int64_t at = abs_exptime(delay, kv_store_now(s));

                if (at > 0) {
                        s->flush_at = at;
                        return;
                }
        }
        s->flush_at = 0;
        while (s->lru_tail)
                unlink_item(s, s->lru_tail);
}
