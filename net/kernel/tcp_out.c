/* SPDX-License-Identifier: MIT */
/*
 * A connection's output buffers (struct kbuf): copied bytes, and between
 * them the caller's own bytes that pc_conn_send_ref() queued (struct
 * kref), gathered into one send and walked past as the kernel takes them.
 * On the connection's worker.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "knet_pvt.h"

/* Make room for @len more bytes at @b's end, growing it (doubling) as
 * needed; consumed bytes before @b->off go first. */
int pc__kbuf_reserve(struct kbuf *b, size_t len)
{
        size_t need;

        if (b->off == b->len && b->refs == NULL)
                b->off = b->len = 0;
        need = b->len + len;
        if (need > b->cap && b->off && b->refs == NULL) {
                /* Compact first: bytes before off are consumed. */
                memmove(b->p, b->p + b->off, b->len - b->off);
                b->len -= b->off;
                b->off = 0;
                need = b->len + len;
        }
        if (need > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                char *p;

                while (cap < need)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL)
                        return -ENOMEM;
                b->p = p;
                b->cap = cap;
        }
        return 0;
}

/* Append @len bytes to @b. */
int pc__kbuf_put(struct kbuf *b, const void *data, size_t len)
{
        int rc = pc__kbuf_reserve(b, len);

        if (rc)
                return rc;
        memcpy(b->p + b->len, data, len);
        b->len += len;
        return 0;
}

/* Call done for every reference of the list @r, oldest first: the
 * kernel no longer reads them (nothing is armed), or they were sent. */
void pc__krefs_done(struct kref *r)
{
        while (r) {
                struct kref *next = r->next;

                r->done(r->arg);
                free(r);
                r = next;
        }
}

void pc__kconn_refs_release(struct pc_conn *c)
{
        struct kref *a = c->inflight.refs, *b = c->pending.refs;

        c->inflight.refs = c->inflight.refs_last = NULL;
        c->pending.refs = c->pending.refs_last = NULL;
        c->inflight.ref_bytes = c->pending.ref_bytes = 0;
        pc__krefs_done(a);
        pc__krefs_done(b);
}

/* The pieces of @b's unsent output, copied bytes and references in their
 * order, into @v (at most KNET_SEND_IOV). Returns how many. */
unsigned pc__kbuf_gather(const struct kbuf *b, struct iovec *v)
{
        const struct kref *r = b->refs;
        size_t off = b->off, roff = b->ref_off;
        unsigned n = 0;

        while (n < KNET_SEND_IOV) {
                size_t lim;

                if (r && off == r->at) {
                        v[n].iov_base = (void *)(uintptr_t)(r->p + roff);
                        v[n++].iov_len = r->len - roff;
                        roff = 0;
                        r = r->next;
                        continue;
                }
                lim = r ? r->at : b->len;
                if (off == lim)
                        break;
                v[n].iov_base = b->p + off;
                v[n++].iov_len = lim - off;
                off = lim;
        }
        return n;
}

/* The kernel took @res bytes of @b: move past them; the references wholly
 * sent go to the end of *@tail's list (their done is called after). */
void pc__kbuf_advance(struct kbuf *b, size_t res, struct kref ***tail)
{
        for (;;) {
                struct kref *r = b->refs;
                size_t n, lim;

                if (r && b->off == r->at) {
                        n = res < r->len - b->ref_off ? res : r->len - b->ref_off;
                        b->ref_off += n;
                        b->ref_bytes -= n;
                        res -= n;
                        if (b->ref_off < r->len)
                                return;
                        b->refs = r->next;
                        if (b->refs == NULL)
                                b->refs_last = NULL;
                        b->ref_off = 0;
                        r->next = NULL;
                        **tail = r;
                        *tail = &r->next;
                        continue;
                }
                lim = r ? r->at : b->len;
                n = res < lim - b->off ? res : lim - b->off;
                if (n == 0)
                        return;
                b->off += n;
                res -= n;
        }
}
