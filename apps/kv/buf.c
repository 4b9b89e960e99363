/* SPDX-License-Identifier: MIT */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

bool buf__grow(struct buf *b, size_t n)
{
        size_t cap = b->cap ? b->cap : 256;
        char *p;

        while (cap < b->len + n)
                cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL) {
                b->oom = true;
                return false;
        }
        b->p = p;
        b->cap = cap;
        return true;
}

void buf_free(struct buf *b)
{
        free(b->p);
        memset(b, 0, sizeof(*b));
}
