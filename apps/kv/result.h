/* SPDX-License-Identifier: MIT */
/*
 * What running one request on its shard came to, in no protocol's terms.
 * exec.c fills a struct kv_result from the store; the request's own reply
 * encoder (kv_ascii_reply() beside the ASCII parser, kv_bin_reply() beside
 * the binary one, kv_meta_reply() beside the meta one) writes the reply
 * from the request and the result alone, without calling into the store.
 *
 * The item pointer is the store's: valid on the worker that ran the
 * request until its next store call, so a result is encoded where it was
 * made and only the reply bytes travel.
 */
#ifndef KV_RESULT_H
#define KV_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "store.h"

struct kv_result {
        enum kv_store_rc rc;       /**< KV_OK: a hit, a number, a command done */
        const struct kv_item *it;  /**< the item read (get family, binary touch), or NULL */
        uint64_t cas;              /**< a write's new cas unique, 0 when nothing was written */
        uint64_t number;           /**< incr, decr: the new value; me: the item's size */
        /* The meta commands' reports (mg's flags, ma's t, me's fields). */
        int64_t ttl;   /**< t: seconds left as of t's place among the flags, -1 none */
        int64_t la;    /**< l: seconds since the last access (before this one) */
        bool fetched;  /**< h: read before this request */
        bool won;      /**< W: this client won the recache */
        bool stale;    /**< X: the item is stale */
        bool win_sent; /**< Z: another client won it already */
};

#endif
