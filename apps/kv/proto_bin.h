/* SPDX-License-Identifier: MIT */
/*
 * The memcached binary protocol, parsed from a byte stream.
 *
 * A pure module like proto_ascii.h, and it fills the same struct kv_req
 * (proto = KV_PROTO_BINARY) so one server path executes both protocols.
 * A request is a 24-byte header, then extras, key and value:
 *
 *   0 magic 0x80 | 1 opcode | 2-3 key length | 4 extras length | 5 data type
 *   6-7 vbucket  | 8-11 total body length | 12-15 opaque | 16-23 cas
 *
 * all big-endian. A response has magic 0x81 and a status in place of the
 * vbucket. The data type and vbucket are ignored, as memcached does.
 *
 * Validation follows memcached 1.6's proto_bin.c, opcode by opcode (which
 * ones need a key, which forbid extras or a value); where memcached trusts
 * the body length (stat, touch, gat) a body longer than extras + key is
 * refused here, since memcached would read the rest as the next request.
 */
#ifndef KV_PROTO_BIN_H
#define KV_PROTO_BIN_H

#include <stdint.h>

#include "proto_ascii.h"

/** Header length, request and response. */
#define KV_BIN_HDR_LEN 24
#define KV_BIN_MAGIC_REQ 0x80
#define KV_BIN_MAGIC_RES 0x81

/**
 * Bytes a body may carry beyond item_max: extras (at most 20) and a key
 * (at most KV_KEY_MAX), rounded up. A non-storage frame whose body is
 * longer than item_max + KV_BIN_BODY_SLACK cannot be a request of this
 * protocol; the stream is taken to be out of step and the parser answers
 * KV_PARSE_CLOSE. Storage frames may be longer: their value is refused
 * with KV_BIN_E2BIG and skipped, as memcached does.
 */
#define KV_BIN_BODY_SLACK 512

/** Opcodes this parser knows; any other gets KV_BIN_UNKNOWN. */
enum kv_bin_op {
        KV_BIN_OP_GET = 0x00,
        KV_BIN_OP_SET = 0x01,
        KV_BIN_OP_ADD = 0x02,
        KV_BIN_OP_REPLACE = 0x03,
        KV_BIN_OP_DELETE = 0x04,
        KV_BIN_OP_INCR = 0x05,
        KV_BIN_OP_DECR = 0x06,
        KV_BIN_OP_QUIT = 0x07,
        KV_BIN_OP_FLUSH = 0x08,
        KV_BIN_OP_GETQ = 0x09,
        KV_BIN_OP_NOOP = 0x0a,
        KV_BIN_OP_VERSION = 0x0b,
        KV_BIN_OP_GETK = 0x0c,
        KV_BIN_OP_GETKQ = 0x0d,
        KV_BIN_OP_APPEND = 0x0e,
        KV_BIN_OP_PREPEND = 0x0f,
        KV_BIN_OP_STAT = 0x10,
        KV_BIN_OP_SETQ = 0x11,
        KV_BIN_OP_ADDQ = 0x12,
        KV_BIN_OP_REPLACEQ = 0x13,
        KV_BIN_OP_DELETEQ = 0x14,
        KV_BIN_OP_INCRQ = 0x15,
        KV_BIN_OP_DECRQ = 0x16,
        KV_BIN_OP_QUITQ = 0x17,
        KV_BIN_OP_FLUSHQ = 0x18,
        KV_BIN_OP_APPENDQ = 0x19,
        KV_BIN_OP_PREPENDQ = 0x1a,
        KV_BIN_OP_VERBOSITY = 0x1b,
        KV_BIN_OP_TOUCH = 0x1c,
        KV_BIN_OP_GAT = 0x1d,
        KV_BIN_OP_GATQ = 0x1e,
        KV_BIN_OP_GATK = 0x23,
        KV_BIN_OP_GATKQ = 0x24,
};

/** Response statuses. */
#define KV_BIN_OK 0x0000
#define KV_BIN_ENOENT 0x0001
#define KV_BIN_EEXISTS 0x0002
#define KV_BIN_E2BIG 0x0003
#define KV_BIN_EINVAL 0x0004
#define KV_BIN_NOT_STORED 0x0005
#define KV_BIN_DELTA_BADVAL 0x0006
#define KV_BIN_UNKNOWN 0x0081
#define KV_BIN_ENOMEM 0x0082

/** Big-endian stores, for response headers and bodies (flags, incr values). */
static inline void kv_bin_put16(unsigned char *b, uint16_t v)
{
        b[0] = (unsigned char)(v >> 8);
        b[1] = (unsigned char)v;
}

static inline void kv_bin_put32(unsigned char *b, uint32_t v)
{
        kv_bin_put16(b, (uint16_t)(v >> 16));
        kv_bin_put16(b + 2, (uint16_t)v);
}

static inline void kv_bin_put64(unsigned char *b, uint64_t v)
{
        kv_bin_put32(b, (uint32_t)(v >> 32));
        kv_bin_put32(b + 4, (uint32_t)v);
}

/**
 * Parse the first request in @buf[0..@len) with parser state @p (see
 * kv_parser_init(); item_max bounds a value). Sets *@consumed to the bytes
 * the caller may drop and *@status to a response status. Returns:
 *
 * - KV_PARSE_OK: *@req holds a request; *@consumed is its whole frame. The
 *   fields set, by opcode (req->opcode is the one sent, req->opaque and
 *   req->cas the header's, for every request):
 *     get, getq, getk, getkq: KV_GET; key, and keys/keys_len with nkeys 1;
 *       quiet for the q variants, want_key for the k ones.
 *     set, add, replace (+q): KV_SET/ADD/REPLACE, or KV_CAS with base_cmd
 *       the command when the header cas is non-zero; key, flags, exptime,
 *       data/dlen.
 *     append, prepend (+q): key, data/dlen (and cas, which memcached checks).
 *     delete (+q): key. incr, decr (+q): key, delta, initial, exptime, and
 *       vivify unless the expiration is 0xffffffff.
 *     touch: key, exptime. gat, gatq, gatk, gatkq: KV_GAT, key (also as
 *       keys, nkeys 1), exptime, quiet/want_key as for get.
 *     flush (+q): KV_FLUSH_ALL, delay (0 without extras).
 *     verbosity: level. stat: KV_STATS, the group in key/keylen (NULL/0
 *       for all). noop: KV_NOOP. version, quit (+q): nothing more.
 *   Expiration and delay are the unsigned 32-bit values sent, widened.
 *   req->noreply stays false: quiet is the binary notion (no reply on
 *   success, or on a miss for the get family; errors are always sent).
 *   Pointers are into @buf.
 * - KV_PARSE_NEED: the header, or the frame, is incomplete; *@consumed is
 *   0. Never returned once @len reaches KV_BIN_HDR_LEN + 20 + KV_KEY_MAX +
 *   item_max bytes.
 * - KV_PARSE_ERROR: a well-framed but invalid request. *@status is the
 *   status to reply (KV_BIN_EINVAL: lengths wrong for the opcode, or a key
 *   over KV_KEY_MAX; KV_BIN_UNKNOWN: unknown opcode; KV_BIN_E2BIG: a value
 *   over item_max); req->opcode and req->opaque are set for the reply.
 *   *@consumed covers the frame as far as @buf holds it; the rest is
 *   recorded in p->swallow and skipped by the following calls. For
 *   E2BIG the request is otherwise filled as for KV_PARSE_OK (key, flags,
 *   exptime, cas) with too_large set and no data, so a server can drop the
 *   key's old value as memcached does for set. memcached closes the
 *   connection after an EINVAL reply; whether to is the caller's choice.
 * - KV_PARSE_SKIP: bytes of a refused frame were skipped; nothing to do.
 * - KV_PARSE_CLOSE: the stream cannot be followed: the magic byte is not
 *   0x80 (*@status KV_BIN_OK: send nothing, the peer is not speaking this
 *   protocol), extras + key are longer than the body (KV_BIN_UNKNOWN, as
 *   memcached), or a non-storage body is longer than item_max +
 *   KV_BIN_BODY_SLACK (KV_BIN_EINVAL). With a non-zero status, req->opcode
 *   and req->opaque are set and the reply may be sent before closing.
 */
enum kv_parse_rc kv_bin_parse(struct kv_parser *p, const char *buf, size_t len,
                              struct kv_req *req, size_t *consumed, uint16_t *status);

/**
 * Write a response header for @opcode to @out: magic 0x81, data type 0,
 * the lengths, @status, @opaque and @cas, in network byte order. @opaque is
 * the value kv_bin_parse() put in req->opaque, so the client gets back the
 * bytes it sent. @bodylen counts extras, key and value.
 */
void kv_bin_put_header(char out[KV_BIN_HDR_LEN], uint8_t opcode, uint16_t keylen,
                       uint8_t extlen, uint16_t status, uint32_t bodylen, uint32_t opaque,
                       uint64_t cas);

/* ---- replies ------------------------------------------------------------------------ */

/**
 * Write the binary response to @r from @res into @out, as memcached 1.6
 * frames it: a get's flags and value (and @key for the k variants; a miss
 * of a quiet get writes nothing), a write's status and new cas, an incr's
 * value, touch's flags. A quiet request's success writes nothing; its
 * errors are written.
 */
void kv_bin_reply(const struct kv_req *r, const char *key, size_t klen,
                  const struct kv_result *res, struct buf *out);

/** An error response to @r with @status and memcached's text for it. */
void kv_bin_error(const struct kv_req *r, uint16_t status, struct buf *out);

/** One stat of a stat response (@name NULL: the empty frame that ends it). */
void kv_bin_stat(const struct kv_req *r, const char *name, const char *val, size_t vlen,
                 struct buf *out);

#endif
