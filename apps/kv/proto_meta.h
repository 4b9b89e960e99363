/* SPDX-License-Identifier: MIT */
/*
 * memcached's meta commands, as memcached 1.6.18 speaks them: lines in
 * the ASCII stream whose command is "m" and one more letter.
 *
 *   mg <key> <flags>*            get: HD, VA <size> (with v), EN (miss)
 *   ms <key> <datalen> <flags>*  set, then the data block: HD NS EX NF
 *   md <key> <flags>*            delete: HD NF EX
 *   ma <key> <flags>*            arithmetic: HD, VA <size>, NF NS EX
 *   me <key> [b]                 debug: ME <key> exp= la= cas= fetch= cls= size=
 *   mn                           no-op: MN
 *
 * A flag is one token: a letter, and for some a value after it (T30,
 * Oopaque, MS). Replies list the flags that return something in the order
 * they were sent; q makes the nominal reply silent (mg's EN, HD for the
 * others), never an error. kv_parse() reads these lines (proto_ascii.h);
 * the request has proto KV_PROTO_META and its flags in kv_req.mflags.
 *
 * Errors are memcached's words, in memcached's order of checks: a bad
 * token count is "ERROR", a flag that is not one of mg/ms/md/ma's flags
 * "CLIENT_ERROR invalid flag" (md, ma: "invalid or duplicate flag"), and
 * so on; an ms refused once its length is read skips its data block.
 *
 * Keys with b are base64 (memcached's decoder: bytes outside the alphabet
 * are skipped, padding ends the key); such a key is decoded into the
 * parser and given back in base64 with a " b" after it.
 */
#ifndef KV_PROTO_META_H
#define KV_PROTO_META_H

#include <stddef.h>

#include "buf.h"
#include "req.h"
#include "result.h"
#include "token.h"

/* The errors of the meta commands that the classic ones do not have. */
#define KV_ERR_META_FLAG "CLIENT_ERROR invalid flag\r\n"
#define KV_ERR_META_DUP "CLIENT_ERROR duplicate flag\r\n"
#define KV_ERR_META_FLAG_OR_DUP "CLIENT_ERROR invalid or duplicate flag\r\n"
#define KV_ERR_META_TOKEN "CLIENT_ERROR bad token in command line format\r\n"
#define KV_ERR_META_OPAQUE "CLIENT_ERROR opaque token too long\r\n"
#define KV_ERR_META_KEY "CLIENT_ERROR error decoding key\r\n"

/** Longest O token, the 'O' included. */
#define KV_META_OPAQUE_MAX 32

/** The most tokens a meta command line may have (memcached counts one
 *  more, its end, and refuses more than 20). */
#define KV_META_TOKENS 19

/** Parse a meta command line (its first token is "m" and one more byte)
 *  into @req, in memcached 1.6.18's order of checks. For ms, req->dlen is
 *  the data block's length and kv_parse() reads it; an ms refused after
 *  its length was read sets p->swallow to skip the block. For kv_parse()
 *  (proto_ascii.c), which reads the ASCII stream these lines come in. */
enum kv_parse_rc kv__meta_parse(struct kv_parser *p, const struct kv_tok *t, unsigned n,
                                struct kv_req *req, const char **err);

/**
 * Write the reply to the meta request @r from @res: the status code, the
 * flags asked for in their order, then mg's W/X/Z, and a value block for
 * v; nothing for a quiet request's nominal outcome; r->err instead when
 * the request ran into one (mg, ma).
 */
void kv_meta_reply(const struct kv_req *r, const struct kv_result *res, struct buf *out);

/** memcached's base64 decoding of @n bytes at @in into @out (room for
 *  @n bytes); the decoded length, 0 when @in is not base64. */
size_t kv_b64_decode(const char *in, size_t n, char *out);

/** Base64 of @n bytes at @in into @out (room for 4 * ((n + 2) / 3));
 *  the encoded length. */
size_t kv_b64_encode(const char *in, size_t n, char *out);

#endif
