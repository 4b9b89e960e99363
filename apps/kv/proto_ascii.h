/* SPDX-License-Identifier: MIT */
/*
 * The memcached ASCII protocol, parsed from a byte stream.
 *
 * A pure module: no allocation, no I/O, no runtime. The caller feeds the
 * bytes it has; kv_parse() either returns one complete request (pointing
 * into those bytes), asks for more, or names the error reply memcached
 * would send. Lines end in "\r\n" or a bare "\n", as memcached accepts.
 *
 * Keys are what memcached 1.6 takes: any bytes but ' ' (which separates
 * tokens; a NUL ends the line, a '\n' the request), 1..KV_KEY_MAX of them.
 * Numbers are read as memcached's strtol()/strtoul() calls read them.
 *
 * The request's pointers are valid as long as the caller's buffer is; a
 * caller that keeps a request past its buffer copies what it needs.
 */
#ifndef KV_PROTO_ASCII_H
#define KV_PROTO_ASCII_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

/** What "version" answers (and "stats" calls version). */
#define KV_VERSION_STRING "1.6.0-pc-kv"
/** Longest key memcached accepts (ASCII and binary). */
#define KV_KEY_MAX 250
/** Longest command line (a multi-get's keys included), "\r\n" excluded.
 *  Longer lines get KV_ERR_LINE_TOO_LONG and the connection closes. */
#define KV_LINE_MAX 8192
/** Default largest value (-I). */
#define KV_ITEM_MAX_DEFAULT (1024 * 1024)
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

/** Start a parser refusing values over @item_max bytes. */
void kv_parser_init(struct kv_parser *p, size_t item_max);

/**
 * Parse the first request in @buf[0..@len). Sets *@consumed to the bytes
 * the caller may drop (0 for KV_PARSE_NEED), and *@err to the error reply
 * for KV_PARSE_ERROR and KV_PARSE_CLOSE. KV_PARSE_NEED is only returned
 * while @len is short of a complete request, which is never more than
 * KV_LINE_MAX + 2 + item_max + 2 bytes.
 */
enum kv_parse_rc kv_parse(struct kv_parser *p, const char *buf, size_t len, struct kv_req *req,
                          size_t *consumed, const char **err);

/**
 * Iterate the keys of a get-family request: *@pos starts at 0; each call
 * sets @key/@keylen to the next key and returns false after the last.
 * A binary request's one key is returned whole, spaces and all.
 */
bool kv_req_next_key(const struct kv_req *req, size_t *pos, const char **key, size_t *keylen);

/** Write @v in decimal at @p (room for 20 digits, no NUL); returns the
 *  digit count. The protocol's numbers (VALUE lines, incr results). */
static inline int kv_fmt_u64(char *p, uint64_t v)
{
        char tmp[20];
        int n = 0;

        do
                tmp[n++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        for (int i = 0; i < n; i++)
                p[i] = tmp[n - 1 - i];
        return n;
}

/** The command's name, as sent ("get", "flush_all", ...). */
const char *kv_cmd_name(enum kv_cmd cmd);

/* ---- replies ------------------------------------------------------------------------ */

/**
 * Write the ASCII reply to @r from @res into @out: the VALUE block of one
 * key (@key) of a get-family request (a miss writes nothing; "END" after
 * the last key is the caller's), a write's outcome line, an incr result,
 * "OK" or "VERSION ..." for the commands done without a store. A noreply
 * request writes nothing, as memcached (a non-numeric incr's error neither).
 */
void kv_ascii_reply(const struct kv_req *r, const char *key, size_t klen,
                    const struct kv_result *res, struct buf *out);

/** One "STAT <name> <value>" line of a stats reply. */
void kv_ascii_stat(const char *name, const char *val, size_t vlen, struct buf *out);

#endif
