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

struct buf {
        char *p;
        size_t len, cap;
        bool oom; /* an append failed: the sink closes at the next flush */
};

/** Append @n bytes of @d (nothing for 0). On failure sets b->oom. */
void buf_add(struct buf *b, const void *d, size_t n);

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
