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

#include "req.h"
#include "result.h"

/** What "version" answers (and "stats" calls version). */
#define KV_VERSION_STRING "1.6.0-pc-kv"
/** Longest command line (a multi-get's keys included), "\r\n" excluded.
 *  Longer lines get KV_ERR_LINE_TOO_LONG and the connection closes. */
#define KV_LINE_MAX 8192
/** Default largest value (-I). */
#define KV_ITEM_MAX_DEFAULT (1024 * 1024)

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
