/* SPDX-License-Identifier: MIT */
/*
 * A request as a parser gives it, in no protocol's terms: the command,
 * its key, value and numbers, and the parser's outcome. Every protocol's
 * parser fills a struct kv_req (proto_ascii.h, proto_bin.h, proto_meta.h);
 * the store takes its write commands' enum kv_cmd. Types only.
 */
#ifndef KV_REQ_H
#define KV_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "token.h"

/** Relative expiry times above this are absolute unix times (memcached's
 *  REALTIME_MAXDELTA, 30 days). */
#define KV_REALTIME_MAXDELTA (60 * 60 * 24 * 30)

enum kv_cmd {
        KV_GET,
        KV_GETS,
        KV_GAT,
        KV_GATS,
        KV_SET,
        KV_ADD,
        KV_REPLACE,
        KV_APPEND,
        KV_PREPEND,
        KV_CAS,
        KV_DELETE,
        KV_INCR,
        KV_DECR,
        KV_TOUCH,
        KV_FLUSH_ALL,
        KV_VERSION,
        KV_VERBOSITY,
        KV_QUIT,
        KV_STATS,
        KV_SHUTDOWN,
        KV_CACHE_MEMLIMIT,
        KV_MG, /**< the meta commands (proto KV_PROTO_META): get, */
        KV_MS, /**< set, */
        KV_MD, /**< delete, */
        KV_MA, /**< arithmetic, */
        KV_MN, /**< no-op, */
        KV_ME, /**< debug */
        KV_NOOP, /**< binary only: a reply that flushes quiet ones */
};

/** The wire protocol a request came in (and its reply goes out) in. */
enum kv_proto {
        KV_PROTO_ASCII,
        KV_PROTO_BINARY,
        KV_PROTO_META, /**< memcached's meta commands, in an ASCII stream */
};

/** The most flags a meta command takes (memcached's token limit). */
#define KV_META_FLAGS_MAX 17

/** The error replies, with their "\r\n". */
#define KV_ERR_UNKNOWN "ERROR\r\n"
#define KV_ERR_FORMAT "CLIENT_ERROR bad command line format\r\n"
#define KV_ERR_CHUNK "CLIENT_ERROR bad data chunk\r\n"
#define KV_ERR_LINE_TOO_LONG "CLIENT_ERROR line too long\r\n"
#define KV_ERR_TOO_LARGE "SERVER_ERROR object too large for cache\r\n"
#define KV_ERR_DELTA "CLIENT_ERROR invalid numeric delta argument\r\n"
#define KV_ERR_EXPTIME "CLIENT_ERROR invalid exptime argument\r\n"
#define KV_ERR_DELETE                                                                   \
        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"

/** One parsed request. Which fields mean something depends on @cmd. */
struct kv_req {
        enum kv_cmd cmd;
        const char *key;  /**< the (first) key */
        size_t keylen;
        const char *keys; /**< get family: the keys, space separated */
        size_t keys_len;
        unsigned nkeys;   /**< get family: how many (gat, gats: may be 0); shutdown: its
                               arguments, the first in key */
        uint32_t flags;   /**< storage commands (memcached keeps the low 32 bits) */
        int64_t exptime;  /**< storage commands, gat, touch: the low 32 bits sent, signed */
        uint64_t cas;     /**< cas: the unique value */
        uint64_t delta;   /**< incr, decr */
        int64_t delay;    /**< flush_all: seconds, 0 = now */
        const char *data; /**< storage commands: the value, without "\r\n" */
        size_t dlen;
        bool noreply;
        /** A storage command whose value exceeds the item maximum: the
         *  value is being swallowed, the reply is KV_ERR_TOO_LARGE, and
         *  memcached drops the key's old value (for set). */
        bool too_large;
        /* Binary protocol only (proto == KV_PROTO_BINARY). A binary get
         * carries its one key in key/keylen and also in keys/keys_len with
         * nkeys = 1, so kv_req_next_key() works for both protocols. A set,
         * add or replace with a non-zero cas is parsed as KV_CAS with
         * @base_cmd the command sent. */
        uint8_t proto;    /**< enum kv_proto */
        uint8_t opcode;   /**< the request's opcode, echoed in the reply */
        uint8_t base_cmd; /**< binary KV_CAS: the enum kv_cmd sent (set/add/replace) */
        bool quiet;       /**< quiet variant: no reply on success (get family: on a miss) */
        bool want_key;    /**< getk, getkq, gatk, gatkq: the reply carries the key */
        bool vivify;      /**< incr/decr: a missing key is created with @initial (binary,
                               unless the expiration is 0xffffffff) */
        uint32_t opaque;  /**< echoed in the reply */
        uint64_t initial; /**< incr/decr: the value stored when the key is missing */
        uint32_t level;   /**< verbosity; cache_memlimit: megabytes (8..1000000000) */
        /** mg, ma, incr, decr: the tag of the request batch it came in
         *  (set by kv_dispatch; 0: none). An mg marks the item it read with
         *  it; an incr of an item marked by its own batch stores a new item,
         *  as memcached does while an unsent reply holds the old one. */
        uint32_t batch;
        uint8_t mopaque_len; /**< meta O: its length (0 for every other request) */
        /* Meta commands only (proto == KV_PROTO_META), from mflags on: the
         * classic parser leaves these bytes as they were (KV_REQ_CLASSIC),
         * the meta parser clears them. The flags keep the order they were
         * sent in: the reply's flags come in that order, and mg's and ma's
         * T and N act at their place in it. q is quiet, T exptime, F flags,
         * C cas (with has_cas), D delta, J initial, N vivify and
         * viv_exptime, as their classic counterparts. */
        char mflags[KV_META_FLAGS_MAX]; /**< each flag's letter, in order */
        uint8_t nmflags;
        uint8_t mstop;    /**< mg, ma: flags from here on do nothing (see err) */
        char mode;        /**< ms, ma: the M flag's mode letter, 0 without one */
        bool has_cas;     /**< C was sent */
        bool b64;         /**< b: key holds the key decoded from base64 */
        const char *mopaque; /**< O: the whole token, 'O' included, echoed */
        int64_t viv_exptime; /**< N: the new item's exptime */
        int64_t recache;  /**< R: win the recache when fewer seconds remain */
        /** mg, ma: the error memcached sends for this request after running
         *  it up to flag mstop (an opaque token too long), or NULL. */
        const char *err;
};

/** The bytes of a struct kv_req that every request sets: a classic or
 *  binary request's parse clears only these (the meta fields after them
 *  are 72 more bytes to clear on the hottest path). */
#define KV_REQ_CLASSIC offsetof(struct kv_req, mflags)

/** Was meta flag @c sent? */
static inline bool kv_req_mflag(const struct kv_req *r, char c)
{
        for (unsigned i = 0; i < r->nmflags; i++)
                if (r->mflags[i] == c)
                        return true;
        return false;
}

/** The parser's state between calls: bytes of a refused value still to skip. */
struct kv_parser {
        size_t item_max;
        size_t swallow;
        char key[KV_KEY_MAX]; /* a meta key decoded from base64 (b) */
};

enum kv_parse_rc {
        KV_PARSE_OK,    /**< *req holds a request */
        KV_PARSE_NEED,  /**< nothing complete yet; call again with more bytes */
        KV_PARSE_SKIP,  /**< nothing to say: bytes of a refused value skipped,
                             or a noreply request refused in silence */
        KV_PARSE_ERROR, /**< send *err, go on parsing */
        KV_PARSE_CLOSE, /**< send *err, then close the connection */
};

#endif
