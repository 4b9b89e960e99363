/* SPDX-License-Identifier: MIT */
/*
 * What the two text protocols share, the classic commands (proto_ascii.c)
 * and the meta ones (proto_meta.c): memcached's tokens and its numbers.
 * Defined in proto_ascii.c.
 */
#ifndef KV_PROTO_TEXT_PVT_H
#define KV_PROTO_TEXT_PVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_ascii.h"

/** The most tokens a meta command line may have (memcached counts one
 *  more, its end, and refuses more than 20). */
#define KV_META_TOKENS 19

/** One token of a command line: bytes between spaces, never empty. */
struct kv_tok {
        const char *s;
        size_t n;
};

/** Split on spaces (runs of them count as one), at most @max tokens;
 *  returns the count, or max + 1 when there are more. */
unsigned kv__tokenize(const char *line, size_t len, struct kv_tok *t, unsigned max);

/** Is @t the word @word? */
bool kv__tok_is(const struct kv_tok *t, const char *word);

/** A key as memcached takes it: a token is never empty, so its length is
 *  the whole rule. */
static inline bool kv__key_ok(size_t n)
{
        return n > 0 && n <= KV_KEY_MAX;
}

/** memcached's safe_strtoull(), safe_strtoul() (kept in 32 bits) and
 *  safe_strtol() (the low 32 bits, signed) on a token. */
bool kv__parse_u64(const struct kv_tok *t, uint64_t *out);
bool kv__parse_u32(const struct kv_tok *t, uint32_t *out);
bool kv__parse_i32(const struct kv_tok *t, int64_t *out);

/** Parse a meta command line (its first token is "m" and one more byte)
 *  into @req, in memcached 1.6.18's order of checks. For ms, req->dlen is
 *  the data block's length and kv_parse() reads it; an ms refused after
 *  its length was read sets p->swallow to skip the block. Defined in
 *  proto_meta.c. */
enum kv_parse_rc kv__meta_parse(struct kv_parser *p, const struct kv_tok *t, unsigned n,
                                struct kv_req *req, const char **err);

#endif
