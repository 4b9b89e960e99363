/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for pc-kv's binary parser: one input is the byte stream of a
 * connection, parsed as the server does (fuzz_kv.h) with a small item_max.
 * A request must match its header (frame length, opcode, lengths), lie
 * inside the bytes parsed and respect the key and value limits; a refusal
 * carries one of the statuses the protocol documents; the parser only asks
 * for more while a frame could still be incomplete; and the stream split
 * differently must parse to the same requests.
 */
#include "fuzz_kv.h"
#include "proto_bin.h"

#define ITEM_MAX 64
/* The parser's limit, memcached's item size (kv_mc_item_size): ITEM_MAX
 * is the largest value of a 1-byte key with flags 0. */
#define PARSE_MAX kv_mc_item_size(1, ITEM_MAX, 0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum kv_parse_rc parse(struct kv_parser *p, const char *buf, size_t len,
                              struct kv_req *req, size_t *used, uint64_t *what)
{
        uint16_t status = 0xdead;
        enum kv_parse_rc rc = kv_bin_parse(p, buf, len, req, used, &status);

        *what = status;
        return rc;
}

static uint32_t be(const char *b, int n)
{
        uint32_t v = 0;

        for (int i = 0; i < n; i++)
                v = v << 8 | (unsigned char)b[i];
        return v;
}

static void check(const struct kv_parser *p, enum kv_parse_rc rc, const struct kv_req *r,
                  const char *buf, size_t len, size_t used, uint64_t what)
{
        switch (rc) {
        case KV_PARSE_NEED:
                CHECK(what == KV_BIN_OK);
                CHECK(len < KV_BIN_HDR_LEN + KV_BIN_BODY_SLACK + PARSE_MAX);
                return;
        case KV_PARSE_SKIP:
                CHECK(used > 0 && what == KV_BIN_OK);
                return;
        case KV_PARSE_CLOSE:
                CHECK(used == 0);
                CHECK(what == KV_BIN_OK || what == KV_BIN_UNKNOWN || what == KV_BIN_EINVAL);
                CHECK((what == KV_BIN_OK) == ((unsigned char)buf[0] != KV_BIN_MAGIC_REQ));
                return;
        case KV_PARSE_ERROR:
                CHECK(what == KV_BIN_EINVAL || what == KV_BIN_UNKNOWN || what == KV_BIN_E2BIG);
                CHECK(used >= KV_BIN_HDR_LEN);
                CHECK(used == len || used == KV_BIN_HDR_LEN + be(buf + 8, 4));
                CHECK(used + p->swallow == KV_BIN_HDR_LEN + (uint64_t)be(buf + 8, 4));
                CHECK(r->opcode == (unsigned char)buf[1] && r->opaque == be(buf + 12, 4));
                if (what == KV_BIN_E2BIG) {
                        CHECK(r->too_large && r->data == NULL);
                        CHECK(r->keylen > 0 && r->keylen <= KV_KEY_MAX);
                        CHECK(fuzz_inside(r->key, r->keylen, buf, used));
                }
                return;
        case KV_PARSE_OK:
                break;
        default:
                CHECK(0);
        }
        CHECK(what == KV_BIN_OK);
        CHECK(used == KV_BIN_HDR_LEN + be(buf + 8, 4));
        CHECK(r->proto == KV_PROTO_BINARY);
        CHECK(r->opcode == (unsigned char)buf[1] && r->opaque == be(buf + 12, 4));
        CHECK((unsigned)r->cmd <= KV_NOOP);
        CHECK(r->keylen == be(buf + 2, 2) && r->keylen <= KV_KEY_MAX);
        if (r->keylen) {
                CHECK(r->key == buf + KV_BIN_HDR_LEN + (unsigned char)buf[4]);
                CHECK(fuzz_inside(r->key, r->keylen, buf, used));
        } else {
                CHECK(r->key == NULL);
        }
        if (r->cmd == KV_GET || r->cmd == KV_GAT) {
                CHECK(r->nkeys == 1 && r->keys == r->key && r->keys_len == r->keylen);
                CHECK(r->keylen > 0);
        }
        if (r->cmd == KV_CAS)
                CHECK(r->cas != 0 && r->base_cmd >= KV_SET && r->base_cmd <= KV_REPLACE);
        if (r->data) {
                CHECK(r->dlen <= ITEM_MAX);
                CHECK(r->data + r->dlen == buf + used);
        } else {
                CHECK(r->dlen == 0);
        }
        CHECK(!r->too_large && !r->noreply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_kv_stream(data, size, PARSE_MAX, parse, check);
        return 0;
}
