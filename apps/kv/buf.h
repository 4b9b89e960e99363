/* SPDX-License-Identifier: MIT */
/*
 * A growable byte buffer: where reply encoders write and sinks queue.
 * Owned by one worker; not thread-safe. An append that cannot grow the
 * buffer sets oom and drops the bytes; whoever sends the buffer checks
 * oom first (a sink closes the connection rather than send a reply with
 * a hole in it).
 */
#ifndef KV_BUF_H
#define KV_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct buf {
        char *p;
        size_t len, cap;
        bool oom; /* an append failed: the sink closes at the next flush */
};

/** Make room for @n more bytes; false (and b->oom) when it cannot. */
bool buf__grow(struct buf *b, size_t n);

/** Append @n bytes of @d (nothing for 0). On failure sets b->oom. Inline:
 *  the reply encoders call it for every piece of every reply. */
static inline void buf_add(struct buf *b, const void *d, size_t n)
{
        if (n == 0 || (b->len + n > b->cap && !buf__grow(b, n)))
                return;
        memcpy(b->p + b->len, d, n);
        b->len += n;
}

/** Free the bytes and zero @b. */
void buf_free(struct buf *b);

static inline void buf_str(struct buf *b, const char *s)
{
        size_t n = 0;

        while (s[n])
                n++;
        buf_add(b, s, n);
}

#endif
