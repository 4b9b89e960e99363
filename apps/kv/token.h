/* SPDX-License-Identifier: MIT */
/*
 * memcached's words and numbers, as its text protocols read and write
 * them: a command line split into tokens, the key rule, the safe_strto*()
 * number checks and decimal output. Shared by the two text parsers
 * (proto_ascii.c, proto_meta.c) and the store (incr's result), below all
 * of them. Inline: they run on every request line. Pure; any thread.
 */
#ifndef KV_TOKEN_H
#define KV_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Longest key memcached accepts (ASCII and binary). */
#define KV_KEY_MAX 250

/** One token of a command line: bytes between spaces, never empty. */
struct kv_tok {
        const char *s;
        size_t n;
};

/** Split on spaces (runs of them count as one), at most @max tokens;
 *  returns the count, or max + 1 when there are more. */
static inline unsigned kv__tokenize(const char *line, size_t len, struct kv_tok *t,
                                    unsigned max)
{
        unsigned n = 0;
        size_t i = 0;

        while (i < len) {
                size_t start;

                while (i < len && line[i] == ' ')
                        i++;
                if (i == len)
                        break;
                start = i;
                while (i < len && line[i] != ' ')
                        i++;
                if (n == max)
                        return max + 1;
                t[n].s = line + start;
                t[n].n = i - start;
                n++;
        }
        return n;
}

/** Is @t the word @word? */
static inline bool kv__tok_is(const struct kv_tok *t, const char *word)
{
        size_t n = strlen(word);

        return t->n == n && memcmp(t->s, word, n) == 0;
}

/** A key as memcached takes it: a token is never empty, so its length is
 *  the whole rule. */
static inline bool kv__key_ok(size_t n)
{
        return n > 0 && n <= KV_KEY_MAX;
}

/* isspace() in the C locale. */
static inline bool kv__is_space(char c)
{
        return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * What strtoull() and strtol() read of a token, the way memcached's
 * safe_strto*() wrappers judge it: white space, an optional sign, at least
 * one digit, then the token's end or a white-space byte (whatever follows
 * that is ignored: "5\tx" is 5). False when there are no digits, anything
 * else follows them, or the magnitude needs more than 64 bits.
 */
static inline bool kv__scan_num(const struct kv_tok *t, bool *neg, uint64_t *mag)
{
        size_t i = 0, first;
        uint64_t v = 0;
        bool fits = true;

        while (i < t->n && kv__is_space(t->s[i]))
                i++;
        *neg = i < t->n && t->s[i] == '-';
        if (i < t->n && (t->s[i] == '-' || t->s[i] == '+'))
                i++;
        for (first = i; i < t->n && t->s[i] >= '0' && t->s[i] <= '9'; i++) {
                unsigned d = (unsigned)(t->s[i] - '0');

                if (v > (UINT64_MAX - d) / 10)
                        fits = false;
                v = v * 10 + d;
        }
        if (i == first || !fits || (i < t->n && !kv__is_space(t->s[i])))
                return false;
        *mag = v;
        return true;
}

/** safe_strtoull(): strtoull() refusing a '-' that leaves the value
 *  negative as an int64, so "-0" is 0 and "-18446744073709551615"
 *  (wrapped) is 1. */
static inline bool kv__parse_u64(const struct kv_tok *t, uint64_t *out)
{
        uint64_t mag, v;
        bool neg;

        if (!kv__scan_num(t, &neg, &mag))
                return false;
        v = neg ? 0 - mag : mag;
        if (neg && v > INT64_MAX)
                return false;
        *out = v;
        return true;
}

/** safe_strtoul() with a 64-bit long, stored in 32 bits: the same as
 *  kv__parse_u64(), then truncated ("4294967296" is 0). */
static inline bool kv__parse_u32(const struct kv_tok *t, uint32_t *out)
{
        uint64_t v;

        if (!kv__parse_u64(t, &v))
                return false;
        *out = (uint32_t)v;
        return true;
}

/** safe_strtol(): strtol() in a 64-bit long, stored in an int32_t, so only
 *  the low 32 bits count ("2147483648" is INT32_MIN, "4294967297" is 1). */
static inline bool kv__parse_i32(const struct kv_tok *t, int64_t *out)
{
        uint64_t mag;
        uint32_t lo;
        bool neg;

        if (!kv__scan_num(t, &neg, &mag) ||
            mag > (neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX))
                return false;
        lo = (uint32_t)(neg ? 0 - mag : mag);
        *out = lo > INT32_MAX ? (int64_t)lo - ((int64_t)1 << 32) : (int64_t)lo;
        return true;
}

/** Write @v in decimal at @p (room for 20 digits, no NUL); returns the
 *  digit count. The protocol's numbers (VALUE lines, incr results). */
static inline int kv_fmt_u64(char *p, uint64_t v)
{
        char tmp[20];
        int n = 0;

        do
                tmp[n++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        for (int i = 0; i < n; i++)
                p[i] = tmp[n - 1 - i];
        return n;
}

#endif
