/* SPDX-License-Identifier: MIT */
/* One cache shard without the network: commands, cas, incr/decr edges,
 * expiry and flush on an injected clock, LRU eviction under the cap. */
#include <stdio.h>
#include <string.h>

#include "pc_test.h"
#include "proto_ascii.h"
#include "store.h"

static int64_t fake_now;

static int64_t fake_clock(void *arg)
{
        (void)arg;
        return fake_now;
}

static struct kv_store *mk(size_t cap)
{
        struct kv_store *s;

        fake_now = 1000000000; /* a plausible unix time, well past 30 days */
        assert_int_equal(kv_store_create(cap, fake_clock, NULL, &s), 0);
        return s;
}

static enum kv_store_rc set(struct kv_store *s, int mode, const char *k, const char *v,
                            int64_t exp, uint64_t cas)
{
        return kv_store_update(s, mode, k, strlen(k), 7, exp, v, strlen(v), cas, 0);
}

static bool has(struct kv_store *s, const char *k, const char *v)
{
        const struct kv_item *it = kv_store_get(s, k, strlen(k));

        if (it == NULL)
                return false;
        return v == NULL || (it->vlen == strlen(v) && memcmp(kv_item_value(it), v, it->vlen) == 0);
}

static void test_commands(void **state)
{
        struct kv_store *s = mk(1 << 20);
        struct kv_store_stats st;

        (void)state;
        assert_false(has(s, "a", NULL));
        assert_int_equal(set(s, KV_SET, "a", "1", 0, 0), KV_STORED);
        assert_true(has(s, "a", "1"));
        assert_int_equal(kv_store_get(s, "a", 1)->flags, 7);
        assert_int_equal(set(s, KV_ADD, "a", "2", 0, 0), KV_NOT_STORED);
        assert_int_equal(set(s, KV_ADD, "b", "2", 0, 0), KV_STORED);
        assert_int_equal(set(s, KV_REPLACE, "c", "3", 0, 0), KV_NOT_STORED);
        assert_int_equal(set(s, KV_REPLACE, "b", "3", 0, 0), KV_STORED);
        assert_true(has(s, "b", "3"));
        assert_int_equal(set(s, KV_APPEND, "b", "45", 0, 0), KV_STORED);
        assert_int_equal(set(s, KV_PREPEND, "b", "12", 0, 0), KV_STORED);
        assert_true(has(s, "b", "12345"));
        assert_int_equal(set(s, KV_APPEND, "zz", "x", 0, 0), KV_NOT_STORED);
        assert_int_equal(kv_store_delete(s, "b", 1, 0), KV_DELETED);
        assert_int_equal(kv_store_delete(s, "b", 1, 0), KV_NOT_FOUND);
        assert_int_equal(kv_store_touch(s, "a", 1, 10, NULL), KV_TOUCHED);
        assert_int_equal(kv_store_touch(s, "b", 1, 10, NULL), KV_NOT_FOUND);
        kv_store_stats(s, &st);
        assert_int_equal(st.curr_items, 1);
        assert_int_equal(st.bytes, kv_store_item_size(1, 1));
        assert_int_equal(st.delete_hits, 1);
        assert_int_equal(st.delete_misses, 1);
        assert_true(st.get_hits >= 4);
        assert_true(kv_store_oldest(s) > 0);
        kv_store_stats_reset(s);
        kv_store_stats(s, &st);
        assert_int_equal(st.curr_items, 1); /* kept */
        assert_int_equal(st.bytes, kv_store_item_size(1, 1));
        assert_int_equal(st.delete_hits, 0); /* zeroed */
        assert_int_equal(st.get_hits, 0);
        kv_store_flush(s, 0);
        assert_int_equal(kv_store_oldest(s), 0);
        kv_store_destroy(s);
}

static void test_cas(void **state)
{
        struct kv_store *s = mk(1 << 20);
        uint64_t c1, c2;

        (void)state;
        assert_int_equal(set(s, KV_CAS, "k", "v", 0, 1), KV_NOT_FOUND);
        set(s, KV_SET, "k", "v1", 0, 0);
        c1 = kv_store_get(s, "k", 1)->cas;
        set(s, KV_SET, "other", "x", 0, 0);
        assert_int_equal(set(s, KV_CAS, "k", "v2", 0, c1), KV_STORED);
        c2 = kv_store_get(s, "k", 1)->cas;
        assert_true(c2 > c1);
        /* The loser of a race holds the old unique value. */
        assert_int_equal(set(s, KV_CAS, "k", "v3", 0, c1), KV_EXISTS);
        assert_true(has(s, "k", "v2"));
        /* Any write changes the unique value, a touch does not. */
        assert_int_equal(kv_store_touch(s, "k", 1, 100, NULL), KV_TOUCHED);
        assert_int_equal(kv_store_get(s, "k", 1)->cas, c2);
        set(s, KV_APPEND, "k", "!", 0, 0);
        assert_int_equal(set(s, KV_CAS, "k", "v4", 0, c2), KV_EXISTS);
        /* The binary protocol's checked append and delete; the reply's cas. */
        c1 = kv_store_last_cas(s);
        assert_int_equal(kv_store_peek(s, "k", 1)->cas, c1);
        assert_int_equal(set(s, KV_APPEND, "k", "?", 0, c1 + 1), KV_EXISTS);
        assert_int_equal(set(s, KV_PREPEND, "k", "?", 0, c1), KV_STORED);
        assert_true(has(s, "k", "?v2!"));
        assert_int_equal(kv_store_delete(s, "k", 1, c1), KV_EXISTS);
        assert_int_equal(kv_store_delete(s, "k", 1, kv_store_last_cas(s)), KV_DELETED);
        assert_null(kv_store_peek(s, "k", 1));
        kv_store_destroy(s);
}

static void test_arith(void **state)
{
        struct kv_store *s = mk(1 << 20);
        const struct kv_item *it;
        uint64_t v, cas;

        (void)state;
        assert_int_equal(kv_store_arith(s, "n", 1, true, 1, 0, 0, &v, NULL), KV_NOT_FOUND);
        set(s, KV_SET, "n", "10", 0, 0);
        assert_int_equal(kv_store_arith(s, "n", 1, true, 5, 0, 0, &v, NULL), KV_STORED);
        assert_int_equal(v, 15);
        assert_true(has(s, "n", "15"));
        assert_int_equal(kv_store_arith(s, "n", 1, false, 100, 0, 0, &v, NULL), KV_STORED);
        assert_int_equal(v, 0); /* decr floors at 0 */
        assert_true(has(s, "n", "0 ")); /* written in place, padded, as memcached */
        set(s, KV_SET, "n", "18446744073709551615", 0, 0);
        assert_int_equal(kv_store_arith(s, "n", 1, true, 2, 0, 0, &v, NULL), KV_STORED);
        assert_int_equal(v, 1); /* incr wraps at 2^64 */
        assert_true(has(s, "n", "1                   "));
        set(s, KV_SET, "n", "99", 0, 0);
        cas = kv_store_last_cas(s);
        assert_int_equal(kv_store_arith(s, "n", 1, true, 1, cas + 1, 0, &v, NULL), KV_EXISTS);
        assert_int_equal(kv_store_arith(s, "n", 1, true, 1, cas, 0, &v, &it), KV_STORED);
        assert_true(has(s, "n", "100")); /* longer: a new item */
        assert_true(it->cas > cas);
        assert_int_equal(kv_store_get(s, "n", 1)->flags, 7); /* flags kept */
        /* strtoull()'s numbers: white space before, a sign, white space after. */
        const char *good[] = {"12  ", " 12", "+12", "\t12", "12 x", "12\r"};
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                set(s, KV_SET, "n", good[i], 0, 0);
                if (kv_store_arith(s, "n", 1, true, 1, 0, 0, &v, NULL) != KV_STORED || v != 13)
                        fail_msg("'%s' not read as 12", good[i]);
        }
        set(s, KV_SET, "n", "-0", 0, 0);
        assert_int_equal(kv_store_arith(s, "n", 1, true, 1, 0, 0, &v, NULL), KV_STORED);
        assert_int_equal(v, 1);
        const char *bad[] = {"abc", "", "1a", "-1", "18446744073709551616", " ",
                             "123456789012345678901"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                set(s, KV_SET, "n", bad[i], 0, 0);
                if (kv_store_arith(s, "n", 1, true, 1, 0, 0, &v, NULL) != KV_NON_NUMERIC)
                        fail_msg("'%s' taken as a number", bad[i]);
        }
        kv_store_destroy(s);
}

static void test_expiry(void **state)
{
        struct kv_store *s = mk(1 << 20);
        struct kv_store_stats st;

        (void)state;
        set(s, KV_SET, "rel", "v", 10, 0);
        set(s, KV_SET, "abs", "v", fake_now + 100, 0);
        set(s, KV_SET, "never", "v", 0, 0);
        assert_int_equal(set(s, KV_SET, "neg", "v", -1, 0), KV_STORED);
        set(s, KV_SET, "past", "v", fake_now - 5, 0);
        assert_false(has(s, "neg", NULL));
        assert_false(has(s, "past", NULL));
        fake_now += 9;
        assert_true(has(s, "rel", NULL));
        fake_now += 1;
        assert_false(has(s, "rel", NULL)); /* expires at exactly now + 10 */
        assert_true(has(s, "abs", NULL));
        fake_now += 90;
        assert_false(has(s, "abs", NULL));
        assert_true(has(s, "never", NULL));
        /* Expired items are gone for every command, not only get. */
        set(s, KV_SET, "t", "1", 1, 0);
        fake_now += 1;
        assert_int_equal(kv_store_arith(s, "t", 1, true, 1, 0, 0, NULL, NULL), KV_NOT_FOUND);
        set(s, KV_SET, "t", "1", 1, 0);
        fake_now += 1;
        assert_int_equal(set(s, KV_ADD, "t", "2", 0, 0), KV_STORED);
        /* touch and gat move the expiry. */
        set(s, KV_SET, "g", "v", 5, 0);
        assert_int_equal(kv_store_touch(s, "g", 1, 100, NULL), KV_TOUCHED);
        fake_now += 50;
        assert_non_null(kv_store_gat(s, "g", 1, 2));
        fake_now += 2;
        assert_false(has(s, "g", NULL));
        kv_store_stats(s, &st);
        assert_true(st.get_expired >= 4);
        assert_int_equal(st.curr_items, 2); /* never, t */
        kv_store_destroy(s);
}

static void test_flush(void **state)
{
        struct kv_store *s = mk(1 << 20);

        (void)state;
        set(s, KV_SET, "a", "v", 0, 0);
        kv_store_flush(s, 0);
        assert_false(has(s, "a", NULL));
        set(s, KV_SET, "a", "v", 0, 0);
        kv_store_flush(s, 10);
        assert_true(has(s, "a", NULL));
        fake_now += 5;
        set(s, KV_SET, "b", "v", 0, 0);
        fake_now += 5;
        assert_false(has(s, "a", NULL));
        assert_false(has(s, "b", NULL));
        set(s, KV_SET, "c", "v", 0, 0); /* stored at the flush time: kept */
        fake_now += 1;
        set(s, KV_SET, "d", "v", 0, 0);
        assert_true(has(s, "c", NULL));
        assert_true(has(s, "d", NULL));
        kv_store_destroy(s);
}

static void test_lru_eviction(void **state)
{
        size_t one = kv_store_item_size(4, 100), cap = one * 10;
        struct kv_store *s = mk(cap);
        struct kv_store_stats st;
        char key[8], val[101];

        (void)state;
        memset(val, 'v', 100);
        val[100] = 0;
        for (int i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_int_equal(set(s, KV_SET, key, val, 0, 0), KV_STORED);
        }
        kv_store_stats(s, &st);
        assert_int_equal(st.bytes, cap);
        assert_int_equal(st.evictions, 0);
        assert_true(has(s, "k000", NULL)); /* k000 becomes the most recent */
        for (int i = 10; i < 15; i++) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_int_equal(set(s, KV_SET, key, val, 0, 0), KV_STORED);
        }
        kv_store_stats(s, &st);
        assert_int_equal(st.evictions, 5);
        assert_int_equal(st.curr_items, 10);
        assert_true(st.bytes <= cap);
        assert_true(has(s, "k000", NULL));
        for (int i = 1; i <= 5; i++) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_false(has(s, key, NULL));
        }
        for (int i = 6; i < 15; i++) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_true(has(s, key, NULL));
        }
        /* An item bigger than the whole cap is refused and evicts nothing. */
        static char huge[2000];
        memset(huge, 'h', sizeof(huge) - 1);
        assert_int_equal(set(s, KV_SET, "huge", huge, 0, 0), KV_NO_MEMORY);
        kv_store_stats(s, &st);
        assert_int_equal(st.curr_items, 10);
        kv_store_destroy(s);
}

/* Reads do not move items; the eviction scan gives one read since its
 * last pass a second chance, once. kv_store_peek() looks without reading. */
static void test_lru_second_chance(void **state)
{
        size_t one = kv_store_item_size(1, 100);
        struct kv_store *s = mk(one * 4);
        struct kv_store_stats st;
        char val[101];

        (void)state;
        memset(val, 'v', 100);
        val[100] = 0;
        for (const char *k = "abcd"; *k; k++)
                assert_int_equal(set(s, KV_SET, (char[]){*k, 0}, val, 0, 0), KV_STORED);
        assert_true(has(s, "b", NULL)); /* b: active */
        assert_int_equal(set(s, KV_SET, "e", val, 0, 0), KV_STORED); /* a goes */
        assert_int_equal(set(s, KV_SET, "f", val, 0, 0), KV_STORED); /* b moves, c goes */
        assert_null(kv_store_peek(s, "a", 1));
        assert_non_null(kv_store_peek(s, "b", 1));
        assert_null(kv_store_peek(s, "c", 1));
        /* Oldest first now: d, e, b (its chance used), f. */
        assert_int_equal(set(s, KV_SET, "g", val, 0, 0), KV_STORED);
        assert_int_equal(set(s, KV_SET, "h", val, 0, 0), KV_STORED);
        assert_non_null(kv_store_peek(s, "b", 1));
        assert_int_equal(set(s, KV_SET, "i", val, 0, 0), KV_STORED);
        assert_null(kv_store_peek(s, "b", 1)); /* unread since its chance */
        kv_store_stats(s, &st);
        assert_int_equal(st.evictions, 5);
        assert_int_equal(st.curr_items, 4);
        /* Every item active: the scan moves each to the head once, in
         * order, then evicts the oldest (f). */
        for (const char *k = "fghi"; *k; k++)
                assert_true(has(s, (char[]){*k, 0}, NULL));
        assert_int_equal(set(s, KV_SET, "j", val, 0, 0), KV_STORED);
        assert_null(kv_store_peek(s, "f", 1));
        for (const char *k = "ghij"; *k; k++)
                assert_non_null(kv_store_peek(s, (char[]){*k, 0}, 1));
        kv_store_stats(s, &st);
        assert_int_equal(st.evictions, 6);
        assert_true(st.bytes <= one * 4);
        kv_store_destroy(s);
}

/* What the meta commands read and set on an item: h's fetched bit, l's
 * access time (moved by every read after the first, as memcached's
 * segmented LRU in whole seconds), base64 keys (not kept by an append, as memcached), stale sets. */
static void test_meta_items(void **state)
{
        struct kv_store *s = mk(1 << 20);
        const struct kv_item *it;
        int64_t stored;
        uint64_t cas;

        (void)state;
        set(s, KV_SET, "k", "v", 100, 0);
        it = kv_store_peek(s, "k", 1);
        stored = it->atime;
        assert_int_equal(it->iflags, 0);
        fake_now += 5;
        assert_non_null(kv_store_get(s, "k", 1));
        assert_int_equal(it->iflags, KV_IT_FETCHED | KV_IT_ACTIVE);
        assert_int_equal(it->atime, stored);
        fake_now += 5;
        kv_store_read(s, it);
        assert_int_equal(it->iflags, KV_IT_FETCHED | KV_IT_ACTIVE);
        assert_int_equal(it->atime, fake_now);
        fake_now += 5;
        kv_store_read(s, it);
        assert_int_equal(it->atime, fake_now);

        kv_store_set_exptime(s, it, 30);
        assert_int_equal(it->exptime, fake_now + 30);
        assert_int_equal(kv_store_abs_exptime(s, 0), 0);
        assert_int_equal(kv_store_abs_exptime(s, -1), -1);
        cas = it->cas;
        kv_store_recas(s, it);
        assert_true(it->cas > cas);
        kv_store_set_iflags(s, it, KV_IT_STALE | KV_IT_WIN_SENT, KV_IT_FETCHED);
        assert_int_equal(it->iflags, KV_IT_STALE | KV_IT_WIN_SENT | KV_IT_ACTIVE);

        assert_int_equal(kv_store_update(s, KV_SET, "b", 1, 0, 0, "x", 1, 0, KV_W_KEY_BINARY),
                         KV_STORED);
        assert_int_equal(kv_store_peek(s, "b", 1)->iflags, KV_IT_KEY_BINARY);
        assert_int_equal(kv_store_update(s, KV_APPEND, "b", 1, 0, 0, "y", 1, 0,
                                         KV_W_KEY_BINARY),
                         KV_STORED);
        assert_int_equal(kv_store_peek(s, "b", 1)->iflags, 0);

        /* An invalidating cas set: an older (non-zero) cas stores a stale
         * value that keeps the item's expiry and its sent win. */
        it = kv_store_peek(s, "k", 1);
        cas = it->cas;
        assert_int_equal(kv_store_update(s, KV_CAS, "k", 1, 0, 0, "w", 1, cas + 1, KV_W_STALE_OK),
                         KV_EXISTS);
        assert_int_equal(kv_store_update(s, KV_CAS, "k", 1, 0, 0, "w", 1, 0, KV_W_STALE_OK),
                         KV_EXISTS);
        assert_int_equal(kv_store_update(s, KV_CAS, "k", 1, 0, 999, "w", 1, cas - 1,
                                         KV_W_STALE_OK),
                         KV_STORED);
        it = kv_store_peek(s, "k", 1);
        assert_int_equal(it->iflags, KV_IT_STALE | KV_IT_WIN_SENT);
        assert_int_equal(it->exptime, fake_now + 30);
        assert_true(has(s, "k", "w"));
        kv_store_destroy(s);
}

static void test_many_keys(void **state)
{
        struct kv_store *s = mk(64 << 20);
        struct kv_store_stats st;
        char key[32];
        int n = (int)pc_test_scaled(50000);

        (void)state;
        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "key:%d", i);
                assert_int_equal(set(s, KV_SET, key, key, 0, 0), KV_STORED);
        }
        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "key:%d", i);
                assert_true(has(s, key, key));
        }
        kv_store_stats(s, &st);
        assert_int_equal(st.curr_items, (uint64_t)n);
        for (int i = 0; i < n; i += 2) {
                snprintf(key, sizeof(key), "key:%d", i);
                assert_int_equal(kv_store_delete(s, key, strlen(key), 0), KV_DELETED);
        }
        kv_store_stats(s, &st);
        assert_int_equal(st.curr_items, (uint64_t)(n / 2));
        kv_store_destroy(s);
}

/* A value of @n bytes for key @i, version @v: every byte depends on all
 * three, so a chunk reused with stale bytes shows. */
static void fill_value(char *b, size_t n, unsigned i, unsigned v)
{
        for (size_t j = 0; j < n; j++)
                b[j] = (char)('!' + (j * 7 + i * 13 + v * 29) % 90);
}

/* Freed items' chunks are reused by later items of their size class,
 * every value reads back byte-exact, and what the store keeps is bounded:
 * 1 MiB, an eighth of a small cap, trimmed when the cap shrinks, nothing
 * for items past the largest class. */
static void test_chunk_reuse(void **state)
{
        enum { N = 2000, MAXV = 3000 };
        struct kv_store *s = mk(64u << 20);
        static char val[20000];
        char key[32];
        size_t before;

        (void)state;
        for (unsigned v = 0; v < 3; v++) {
                for (unsigned i = 0; i < N; i++) {
                        size_t n = (i * 37u + v * 101u) % MAXV + 1;

                        snprintf(key, sizeof(key), "k%u", i);
                        fill_value(val, n, i, v);
                        assert_int_equal(kv_store_update(s, KV_SET, key, strlen(key), 0, 0, val, n,
                                                         0, 0),
                                         KV_STORED);
                }
                for (unsigned i = 0; i < N; i++) {
                        size_t n = (i * 37u + v * 101u) % MAXV + 1;
                        const struct kv_item *it;

                        snprintf(key, sizeof(key), "k%u", i);
                        fill_value(val, n, i, v);
                        it = kv_store_get(s, key, strlen(key));
                        assert_non_null(it);
                        assert_int_equal(it->vlen, n);
                        assert_memory_equal(kv_item_value(it), val, n);
                }
                /* Overwrites of other sizes freed chunks into the lists. */
                if (v > 0)
                        assert_true(kv_store_cached_bytes(s) > 0);
        }
        kv_store_flush(s, 0); /* ~3 MB of items freed */
        assert_true(kv_store_cached_bytes(s) > (1u << 20) - 16384);
        assert_true(kv_store_cached_bytes(s) <= 1u << 20);
        /* The largest items are not kept. */
        before = kv_store_cached_bytes(s);
        kv_store_set_cap(s, 64u << 20);
        fill_value(val, sizeof(val), 1, 1);
        assert_int_equal(kv_store_update(s, KV_SET, "big", 3, 0, 0, val, sizeof(val), 0, 0),
                         KV_STORED);
        assert_int_equal(kv_store_delete(s, "big", 3, 0), KV_DELETED);
        assert_int_equal(kv_store_cached_bytes(s), before);
        /* A smaller cap keeps at most an eighth of it. */
        kv_store_set_cap(s, 64u << 10);
        assert_true(kv_store_cached_bytes(s) <= (64u << 10) / 8);
        kv_store_destroy(s);

        s = mk(64u << 10);
        for (unsigned i = 0; i < 40; i++) {
                snprintf(key, sizeof(key), "s%u", i);
                fill_value(val, 1000, i, 0);
                kv_store_update(s, KV_SET, key, strlen(key), 0, 0, val, 1000, 0, 0);
        }
        kv_store_flush(s, 0);
        assert_true(kv_store_cached_bytes(s) > 0);
        assert_true(kv_store_cached_bytes(s) <= (64u << 10) / 8);
        kv_store_destroy(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_commands), cmocka_unit_test(test_cas),
                cmocka_unit_test(test_arith),    cmocka_unit_test(test_expiry),
                cmocka_unit_test(test_flush),    cmocka_unit_test(test_lru_eviction),
                cmocka_unit_test(test_lru_second_chance),
                cmocka_unit_test(test_meta_items), cmocka_unit_test(test_many_keys),
                cmocka_unit_test(test_chunk_reuse),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
