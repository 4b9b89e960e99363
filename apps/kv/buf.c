/* SPDX-License-Identifier: MIT */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void buf_add(struct buf *b, const void *d, size_t n)
{
        if (n == 0)
                return;
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *p;

                while (cap < b->len + n)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
        memcpy(b->p + b->len, d, n);
        b->len += n;
}

void buf_free(struct buf *b)
{
        free(b->p);
        memset(b, 0, sizeof(*b));
}
