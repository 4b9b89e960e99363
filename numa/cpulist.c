/* SPDX-License-Identifier: MIT */
/*
 * CPU lists, the kernel's text form of a CPU set ("0-3,8"): the sysfs
 * loader reads them, PERCORE_CPUS and percore-topo's --cpus are one, and
 * the tables print them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_pvt.h"

/* Parse one unsigned decimal; advance *p past it. */
static int read_num(const char **p, unsigned long *out)
{
        char *end;

        if (!isdigit((unsigned char)**p))
                return -EINVAL;
        errno = 0;
        *out = strtoul(*p, &end, 10);
        if (errno != 0)
                return -ERANGE;
        *p = end;
        return 0;
}

int pc_cpulist_parse(const char *text, uint64_t *set, unsigned nbits)
{
        const char *p = text;
        int count = 0;

        if (text == NULL || set == NULL || nbits == 0)
                return -EINVAL;
        memset(set, 0, ((nbits + 63) / 64) * sizeof(uint64_t));
        while (*p == ' ' || *p == '\t')
                p++;
        for (;;) {
                unsigned long a, b;
                int rc = read_num(&p, &a);
                if (rc)
                        return rc == -ERANGE ? -ERANGE : -EINVAL;
                b = a;
                if (*p == '-') {
                        p++;
                        rc = read_num(&p, &b);
                        if (rc)
                                return rc == -ERANGE ? -ERANGE : -EINVAL;
                        if (b < a)
                                return -EINVAL;
                }
                if (b >= nbits)
                        return -ERANGE;
                for (unsigned long c = a; c <= b; c++) {
                        if (!(set[c / 64] & (1ull << (c % 64))))
                                count++;
                        set[c / 64] |= 1ull << (c % 64);
                }
                if (*p != ',')
                        break;
                p++;
        }
        while (*p == ' ' || *p == '\t' || *p == '\n')
                p++;
        if (*p != '\0')
                return -EINVAL;
        return count;
}

int pc_cpulist_format(const uint64_t *set, unsigned nbits, char *buf, size_t len)
{
        size_t off = 0;
        int total = 0;

        if (len)
                buf[0] = '\0';
        for (unsigned c = 0; c < nbits; c++) {
                unsigned e = c;
                int n;

                if (!pc__bit(set, c))
                        continue;
                while (e + 1 < nbits && pc__bit(set, e + 1))
                        e++;
                if (e == c)
                        n = snprintf(buf + off, off < len ? len - off : 0, "%s%u",
                                     total ? "," : "", c);
                else
                        n = snprintf(buf + off, off < len ? len - off : 0, "%s%u-%u",
                                     total ? "," : "", c, e);
                total += n;
                off = off + (size_t)n < len ? off + (size_t)n : len;
                c = e;
        }
        return total;
}
