/* SPDX-License-Identifier: MIT */
/*
 * The meta commands run on their key's store, as memcached 1.6.18 runs
 * them (its proto_text.c, process_m*_command), into a struct kv_result for
 * kv_meta_reply(). mg and ma act on T and N where they stand among the
 * flags, so a t sent before a T reports the time left before it; flags at
 * and after req->mstop (a refused opaque) do nothing, as memcached stops
 * there with an error.
 */
#include <string.h>

#include "kv_pvt.h"

static int64_t ttl_of(const struct kv_item *it, int64_t now)
{
        return it->exptime == 0 ? -1 : it->exptime - now;
}

/* memcached reads an item under its lock, and moves it in the LRU only
 * afterwards, when one of these flags needs it as it was. */
static bool mg_locked(const struct kv_req *r)
{
        static const char locking[] = "NTRhl";

        for (unsigned i = 0; i < r->nmflags; i++)
                if (strchr(locking, r->mflags[i]))
                        return true;
        return false;
}

/* An empty item for mg N, or ma N's initial value: flags 0, no expiry
 * until N's own time is set where N stands. */
static const struct kv_item *vivify(struct kv_store *s, const struct kv_req *r,
                                    const char *val, size_t vlen)
{
        if (kv_store_update(s, KV_ADD, r->key, r->keylen, 0, 0, val, vlen, 0, 0) != KV_STORED)
                return NULL;
        return kv_store_peek(s, r->key, r->keylen);
}

static void exec_mg(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        const struct kv_item *it = kv_store_peek(s, r->key, r->keylen);
        int64_t now = kv_store_now(s);
        bool created = false, touched = false, won = false;

        if (it == NULL && r->vivify)
                created = (it = vivify(s, r, "", 0)) != NULL;
        if (it == NULL) {
                kv_store_count_get(s, false, false);
                res->rc = KV_NOT_FOUND;
                return;
        }
        /* h and l tell the item as it was before this read. */
        res->fetched = (it->iflags & KV_IT_FETCHED) != 0;
        res->la = now - it->atime;
        res->ttl = ttl_of(it, now);
        for (unsigned i = 0; i < r->mstop; i++) {
                switch (r->mflags[i]) {
                case 'T':
                        kv_store_set_exptime(s, it, r->exptime);
                        touched = true;
                        break;
                case 'N':
                        if (created) {
                                kv_store_set_exptime(s, it, r->viv_exptime);
                                won = true;
                        }
                        break;
                case 'R': /* fewer seconds left than R's: this client recaches */
                        if (!(it->iflags & KV_IT_WIN_SENT) && !created && it->exptime != 0 &&
                            it->exptime < kv_store_abs_exptime(s, r->recache))
                                won = true;
                        break;
                case 't':
                        res->ttl = ttl_of(it, now);
                        break;
                default:
                        break;
                }
        }
        if (r->err) {
                /* memcached gives up on the reply here; without a locking
                 * flag it had already counted the read. */
                if (!mg_locked(r) && !kv_req_mflag(r, 'u'))
                        kv_store_read(s, it);
                res->rc = KV_OK;
                return;
        }
        res->win_sent = (it->iflags & KV_IT_WIN_SENT) != 0;
        res->stale = (it->iflags & KV_IT_STALE) != 0;
        res->won = won || (res->stale && !res->win_sent);
        if (res->won)
                kv_store_set_iflags(s, it, KV_IT_WIN_SENT, 0);
        if (!kv_req_mflag(r, 'u'))
                kv_store_read(s, it);
        kv_store_hold(s, it, r->batch);
        kv_store_count_get(s, true, touched);
        res->it = it;
        res->rc = KV_OK;
}

/* ms: M picks the classic command; C makes set and replace a cas, and
 * append and prepend check it; with I an older cas stores a stale value. */
static void exec_ms(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        unsigned opts = r->b64 ? KV_W_KEY_BINARY : 0;
        int mode;

        switch (r->mode) {
        case 'E':
                mode = KV_ADD;
                break;
        case 'A':
                mode = KV_APPEND;
                break;
        case 'P':
                mode = KV_PREPEND;
                break;
        case 'R':
                mode = KV_REPLACE;
                break;
        default:
                mode = KV_SET;
                break;
        }
        if (r->has_cas && (mode == KV_SET || mode == KV_REPLACE))
                mode = KV_CAS;
        if (mode == KV_CAS && kv_req_mflag(r, 'I'))
                opts |= KV_W_STALE_OK;
        if (r->too_large) {
                /* memcached drops the old value, whatever the mode. */
                kv_store_delete(s, r->key, r->keylen, 0);
                res->rc = KV_TOO_LARGE;
                return;
        }
        res->rc = kv_store_update(s, mode, r->key, r->keylen, r->flags, r->exptime, r->data,
                                  r->dlen, r->has_cas ? r->cas : 0, opts);
        if (res->rc == KV_STORED)
                res->cas = kv_store_last_cas(s);
}

/* md: delete, or with I mark stale (a new cas, T's time, a win to hand out). */
static void exec_md(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        const struct kv_item *it = kv_store_peek(s, r->key, r->keylen);

        if (it == NULL) {
                res->rc = kv_store_delete(s, r->key, r->keylen, 0); /* counts the miss */
                return;
        }
        if (r->has_cas && it->cas != r->cas) {
                res->rc = KV_EXISTS;
                return;
        }
        res->rc = KV_DELETED;
        if (!kv_req_mflag(r, 'I')) {
                kv_store_delete(s, r->key, r->keylen, 0);
                return;
        }
        if (kv_req_mflag(r, 'T'))
                kv_store_set_exptime(s, it, r->exptime);
        kv_store_set_iflags(s, it, KV_IT_STALE, KV_IT_WIN_SENT);
        kv_store_recas(s, it);
}

/* ma: incr (mode I, +, none) or decr (D, -) by D, J created by N on a miss. */
static void exec_ma(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        const struct kv_item *before = kv_store_peek(s, r->key, r->keylen), *it = NULL;
        bool incr = r->mode != 'D' && r->mode != '-', created = false;
        int64_t now = kv_store_now(s), exptime;
        char num[20];

        res->rc = kv_store_arith(s, r->key, r->keylen, incr, r->delta,
                                 r->has_cas ? r->cas : 0, r->batch, &res->number, &it);
        if (res->rc == KV_NOT_FOUND && r->vivify) {
                it = vivify(s, r, num, (size_t)kv_fmt_u64(num, r->initial));
                if (it == NULL) {
                        res->rc = KV_NOT_STORED;
                        return;
                }
                created = true;
                res->number = r->initial;
        }
        if (it == NULL)
                return;
        res->rc = created ? KV_STORED : KV_OK;
        res->cas = it->cas;
        /* memcached sets T's time on the item it read, and t reads that
         * one: when the number grew into a new item, the stored item keeps
         * its old time while t tells the new. */
        exptime = it->exptime;
        for (unsigned i = 0; i < r->mstop; i++) {
                switch (r->mflags[i]) {
                case 't':
                        res->ttl = exptime == 0 ? -1 : exptime - now;
                        break;
                case 'T':
                        exptime = kv_store_abs_exptime(s, r->exptime);
                        if (it == before || created)
                                kv_store_set_exptime(s, it, r->exptime);
                        break;
                case 'N':
                        if (created) {
                                exptime = kv_store_abs_exptime(s, r->viv_exptime);
                                kv_store_set_exptime(s, it, r->viv_exptime);
                        }
                        break;
                default:
                        break;
                }
        }
}

static void exec_me(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        const struct kv_item *it = kv_store_peek(s, r->key, r->keylen);
        int64_t now = kv_store_now(s);

        res->rc = it ? KV_OK : KV_NOT_FOUND;
        if (it == NULL)
                return;
        res->it = it;
        res->ttl = ttl_of(it, now);
        res->la = now - it->atime;
        res->fetched = (it->iflags & KV_IT_FETCHED) != 0;
        res->number = kv_mc_item_size(it->klen, it->vlen, it->flags);
}

void kv_exec_meta(struct kv_store *s, const struct kv_req *r, struct kv_result *res)
{
        res->won = res->stale = res->win_sent = res->fetched = false;
        res->ttl = -1;
        res->la = 0;
        switch (r->cmd) {
        case KV_MG:
                exec_mg(s, r, res);
                return;
        case KV_MS:
                exec_ms(s, r, res);
                return;
        case KV_MD:
                exec_md(s, r, res);
                return;
        case KV_MA:
                exec_ma(s, r, res);
                return;
        case KV_ME:
                exec_me(s, r, res);
                return;
        default:
                res->rc = KV_OK;
                return;
        }
}
