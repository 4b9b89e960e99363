/* SPDX-License-Identifier: MIT */
/*
 * Command-line helpers the apps share: strict number parsing, so a bad
 * flag value is always a clear error (exit 2), never a guess.
 */
#ifndef PC_APP_CLI_H
#define PC_APP_CLI_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal integer in [lo, hi], nothing else. 0, or -1 for bad input. */
static inline int app_parse_uint(const char *s, unsigned long lo, unsigned long hi,
                                 unsigned long *out)
{
        char *end;
        unsigned long v;

        if (s[0] < '0' || s[0] > '9')
                return -1;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || v < lo || v > hi)
                return -1;
        *out = v;
        return 0;
}

/* Seconds, > 0 and under a million days' worth. 0, or -1 for bad input. */
static inline int app_parse_seconds(const char *s, double *out)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v > 0 && v < 1e6))
                return -1;
        *out = v;
        return 0;
}

/* "A.B.C.D" or "A.B.C.D/LEN" (LEN 1..32): the address in @a (network
 * order), LEN in *@len (0 when absent). 0, or -1 for bad input. */
static inline int app_parse_ipv4_prefix(const char *s, struct in_addr *a, unsigned *len)
{
        char buf[32];
        const char *slash = strchr(s, '/');
        unsigned long v = 0;
        size_t n = slash ? (size_t)(slash - s) : strlen(s);

        if (n == 0 || n >= sizeof(buf))
                return -1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (inet_pton(AF_INET, buf, a) != 1)
                return -1;
        if (slash && app_parse_uint(slash + 1, 1, 32, &v))
                return -1;
        *len = (unsigned)v;
        return 0;
}

/* --backend dpdk chosen: 0 when this build has DPDK and PERCORE_EAL_ARGS
 * names the device, else 2 (the exit status for bad usage) after saying
 * which is missing. PC_HAVE_DPDK is the project's. */
static inline int app_dpdk_ready(const char *prog)
{
#ifdef PC_HAVE_DPDK
        const char *eal = getenv("PERCORE_EAL_ARGS");

        if (eal && *eal)
                return 0;
        fprintf(stderr, "%s: --backend dpdk needs PERCORE_EAL_ARGS\n", prog);
#else
        fprintf(stderr, "%s: built without DPDK\n", prog);
#endif
        return 2;
}

/* After getopt: operands are not taken. Returns 0, or 2 (the exit status
 * for bad usage) after naming the first one and printing @usage. */
static inline int app_no_operands(const char *prog, int argc, char **argv, int optind_,
                                  void (*usage)(FILE *))
{
        if (optind_ >= argc)
                return 0;
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind_]);
        usage(stderr);
        return 2;
}

#endif
