/* SPDX-License-Identifier: MIT */
/*
 * Sending: what the application queues (copied into the send ring, or
 * held by reference), the pieces a segment is built from, and what an
 * acknowledgement gives back.
 *
 * The ring holds copies only, without gaps, so a reference costs the
 * ring nothing however large it is: a copied byte's ring position is its
 * sequence number less the reference bytes queued before it (tcp_pvt.h).
 * With no reference held that is the sequence number less a constant,
 * and nothing here walks a list. A segment is built from at most
 * PC_TCP_FRAME_PIECES pieces, in order: ring runs (a run may wrap) and
 * references; tcp_output.c sends a segment that many tiny references cut
 * short at once, as it would a full one.
 *
 * A reference is given back (its done runs) once the peer acknowledged
 * all of its bytes, checked where acknowledgements arrive and at each
 * output (a reference of no bytes may be due at once), or when the
 * connection ends, at the reap before on_close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_pvt.h"

static struct tcp_sref *sref_at(const struct pc_tcb *c, uint32_t i)
{
        return &c->sref[(c->sref_head + i) & (c->sref_cap - 1)];
}

static uint32_t sref_end(const struct tcp_sref *r)
{
        return r->seq + r->len;
}

/* The first held reference that ends past @s (index in the list), or
 * sref_n when there is none. */
static uint32_t sref_find(const struct pc_tcb *c, uint32_t s)
{
        uint32_t i = 0;

        while (i < c->sref_n && !seq_gt(sref_end(sref_at(c, i)), s))
                i++;
        return i;
}

uint32_t pc__tcb_ring_pos(const struct pc_tcb *c, uint32_t s)
{
        uint32_t i = sref_find(c, s);
        const struct tcp_sref *r;

        if (i == c->sref_n)
                return s - c->sref_bytes;
        r = sref_at(c, i);
        return s - r->rb - (seq_gt(s, r->seq) ? s - r->seq : 0);
}

/* Queued bytes the ring holds (the rest are references). */
static uint32_t ring_held(const struct pc_tcb *c)
{
        if (snd_buffered(c) == 0)
                return 0;
        return c->snd_end - c->sref_bytes - pc__tcb_ring_pos(c, snd_data_start(c));
}

unsigned pc__tcb_pieces(const struct pc_tcb *c, uint32_t seq, uint32_t len, const uint8_t **d,
                        size_t *l, uint32_t *covered)
{
        uint32_t done = 0, i = c->sref_n ? sref_find(c, seq) : 0;
        unsigned n = 0;

        while (done < len && n < PC_TCP_FRAME_PIECES) {
                uint32_t s = seq + done, want = len - done, k, pos, off;
                const struct tcp_sref *r;

                while (i < c->sref_n && !seq_gt(sref_end(sref_at(c, i)), s))
                        i++;
                r = i < c->sref_n ? sref_at(c, i) : NULL;
                if (r && seq_ge(s, r->seq)) {
                        k = min_u32(want, sref_end(r) - s);
                        d[n] = r->p + (s - r->seq);
                } else {
                        /* Ring bytes up to the next reference; the ring may
                         * wrap, which the next piece continues. */
                        if (r)
                                want = min_u32(want, r->seq - s);
                        pos = s - (r ? r->rb : c->sref_bytes);
                        off = pos & (c->sbuf_size - 1);
                        k = min_u32(want, c->sbuf_size - off);
                        d[n] = c->sbuf + off;
                }
                l[n++] = k;
                done += k;
        }
        *covered = done;
        return n;
}

/* Make the ring hold @need bytes. */
static int sbuf_reserve(struct pc_tcb *c, uint32_t need)
{
        uint32_t size = c->sbuf_size ? c->sbuf_size : TCP_SBUF_MIN, start, n, off, k;
        uint8_t *nb;

        if (c->sbuf && c->sbuf_size >= need)
                return 0;
        while (size < need)
                size *= 2;
        nb = malloc(size);
        if (nb == NULL)
                return -ENOMEM;
        /* Re-place what is held: ring position s lives at s mod size. */
        n = ring_held(c);
        if (n) {
                start = pc__tcb_ring_pos(c, snd_data_start(c));
                off = start & (c->sbuf_size - 1);
                k = min_u32(n, c->sbuf_size - off);
                pc__ring_copy_in(nb, size, start, c->sbuf + off, k);
                if (n > k)
                        pc__ring_copy_in(nb, size, start + k, c->sbuf, n - k);
        }
        if (c->sbuf) {
                pc__tcp_mem(c->e, -(int64_t)c->sbuf_size);
                free(c->sbuf);
        }
        pc__tcp_mem(c->e, size);
        c->sbuf = nb;
        c->sbuf_size = size;
        return 0;
}

/* Whether @len more bytes may be queued on @c: 0 or -errno. */
static int send_check(struct pc_tcb *c, size_t len)
{
        struct pc_tcpe *e = c->e;

        if (tcb_app(c) == NULL || (c->flags & TF_FIN_QUEUED))
                return -EPIPE;
        if (c->state != PC_TCP_SYN_SENT_STATE && c->state != PC_TCP_SYN_RCVD_STATE &&
            c->state != PC_TCP_ESTABLISHED && c->state != PC_TCP_CLOSE_WAIT)
                return -EPIPE;
        if (len > e->cfg.snd_cap)
                return -EMSGSIZE;
        if (snd_buffered(c) + len > e->cfg.snd_cap) {
                c->flags |= TF_WANT_WRITABLE;
                e->st.send_refused++;
                return -ENOBUFS;
        }
        return 0;
}

int pc_tcb_send(struct pc_tcb *c, const void *data, size_t len)
{
        struct iovec v = {.iov_base = (void *)(uintptr_t)data, .iov_len = len};

        if (c == NULL || (data == NULL && len))
                return -EINVAL;
        return pc_tcb_sendv(c, &v, 1);
}

int pc_tcb_sendv(struct pc_tcb *c, const struct iovec *iov, int n)
{
        size_t total = 0;
        uint32_t pos;
        int rc;

        if (c == NULL || n < 0 || (iov == NULL && n))
                return -EINVAL;
        for (int i = 0; i < n; i++) {
                if (iov[i].iov_base == NULL && iov[i].iov_len)
                        return -EINVAL;
                total += iov[i].iov_len;
                if (total < iov[i].iov_len)
                        return -EMSGSIZE;
        }
        rc = send_check(c, total);
        if (rc || total == 0)
                return rc;
        rc = sbuf_reserve(c, ring_held(c) + (uint32_t)total);
        if (rc)
                return rc;
        pos = c->snd_end - c->sref_bytes;
        for (int i = 0; i < n; i++) {
                if (iov[i].iov_len == 0) /* its base may be NULL */
                        continue;
                pc__ring_copy_in(c->sbuf, c->sbuf_size, pos, iov[i].iov_base, iov[i].iov_len);
                pos += (uint32_t)iov[i].iov_len;
        }
        c->snd_end += (uint32_t)total;
        c->snd_queued += (uint32_t)total;
        pc__tcb_pending(c);
        return 0;
}

/* Room for one more reference. */
static int sref_grow(struct pc_tcb *c)
{
        uint32_t cap = c->sref_cap ? 2 * c->sref_cap : TCP_SREF_MIN;
        struct tcp_sref *n;

        if (c->sref_n < c->sref_cap)
                return 0;
        n = malloc(cap * sizeof(*n));
        if (n == NULL)
                return -ENOMEM;
        for (uint32_t i = 0; i < c->sref_n; i++)
                n[i] = *sref_at(c, i);
        if (c->sref) {
                pc__tcp_mem(c->e, -(int64_t)(c->sref_cap * sizeof(*n)));
                free(c->sref);
        }
        pc__tcp_mem(c->e, cap * sizeof(*n));
        c->sref = n;
        c->sref_head = 0;
        c->sref_cap = cap;
        return 0;
}

int pc_tcb_send_ref(struct pc_tcb *c, const void *data, size_t len, pc_tcb_ref_fn done,
                    void *arg)
{
        struct tcp_sref *r;
        int rc;

        if (c == NULL || (data == NULL && len) || done == NULL)
                return -EINVAL;
        rc = send_check(c, len);
        if (rc)
                return rc;
        if (c->sref_n == PC_TCP_SREF_MAX) {
                c->flags |= TF_WANT_WRITABLE;
                c->e->st.send_refused++;
                return -ENOBUFS;
        }
        rc = sref_grow(c);
        if (rc)
                return rc;
        r = sref_at(c, c->sref_n++);
        r->seq = c->snd_end;
        r->len = (uint32_t)len;
        r->rb = c->sref_bytes;
        r->p = data;
        r->done = done;
        r->arg = arg;
        c->sref_bytes += (uint32_t)len;
        c->snd_end += (uint32_t)len;
        c->snd_queued += (uint32_t)len;
        pc__tcb_pending(c);
        return 0;
}

void pc__tcb_refs_release(struct pc_tcb *c, bool all)
{
        /* Data is acknowledged up to SND.UNA, and all of it once our FIN is. */
        uint32_t upto = seq_lt(c->snd_una, c->snd_end) ? c->snd_una : c->snd_end;

        /* done may queue more (even grow the list) or end @c: the head is
         * taken off before it runs. */
        while (c->sref_n) {
                struct tcp_sref *r = sref_at(c, 0);
                pc_tcb_ref_fn fn = r->done;
                void *arg = r->arg;

                if (!all && seq_gt(sref_end(r), upto))
                        break;
                c->sref_head = (c->sref_head + 1) & (c->sref_cap - 1);
                c->sref_n--;
                fn(arg);
        }
}

void pc__tcb_acked(struct pc_tcb *c)
{
        const struct pc_tcpe_callbacks *cb = tcb_app(c);
        uint32_t half = c->e->cfg.snd_cap / 2;
        uint32_t acked = c->snd_queued - snd_buffered(c);

        if (acked != c->snd_acked) {
                uint32_t n = acked - c->snd_acked;
                c->snd_acked = acked;
                if (cb && cb->on_acked)
                        cb->on_acked(c, n, c->arg);
        }
        if (c->sref_n)
                pc__tcb_refs_release(c, false);
        if ((c->flags & TF_DEAD) || snd_buffered(c) > half || c->sref_n > PC_TCP_SREF_MAX / 2)
                return;
        cb = tcb_app(c);
        if ((c->flags & TF_WANT_WRITABLE) && !(c->flags & TF_FIN_QUEUED)) {
                c->flags &= ~TF_WANT_WRITABLE;
                if (cb && cb->on_writable) {
                        cb->on_writable(c, c->arg);
                        if (c->flags & TF_DEAD)
                                return;
                }
        }
        if (c->flags & TF_BACKPRESSURE)
                pc__tcb_deliver(c);
}

