/* SPDX-License-Identifier: MIT */
/*
 * The replay driver linked into every fuzz target when libFuzzer is not
 * used: it runs each file of the given corpus directories (or files), then
 * a fixed number of deterministic mutations of each (bit flips, truncation,
 * byte insertion and deletion), so a gcc or sanitizer build still exercises
 * the parser beyond the corpus, identically on every run.
 */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 65536

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

static unsigned mutations(void)
{
        const char *e = getenv("PC_FUZZ_MUTATIONS");

        return e ? (unsigned)strtoul(e, NULL, 10) : 200;
}

static void mutate(const uint8_t *in, size_t n, uint8_t *out, size_t *outn)
{
        size_t m = n;

        memcpy(out, in, n);
        for (unsigned k = 0, edits = 1 + next() % 4; k < edits; k++) {
                size_t at = m ? next() % m : 0;
                switch (next() % 5) {
                case 0: /* flip a bit */
                        if (m)
                                out[at] ^= (uint8_t)(1u << (next() % 8));
                        break;
                case 1: /* truncate */
                        m = at;
                        break;
                case 2: /* insert a byte */
                        if (m < FUZZ_MAX_INPUT) {
                                memmove(out + at + 1, out + at, m - at);
                                out[at] = (uint8_t)next();
                                m++;
                        }
                        break;
                case 3: /* delete a byte */
                        if (m) {
                                memmove(out + at, out + at + 1, m - at - 1);
                                m--;
                        }
                        break;
                default: /* an interesting value */
                        if (m)
                                out[at] = (uint8_t[]){0, 0xff, 0x7f, 0x80, '-', ',', '\n',
                                                      '9'}[next() % 8];
                        break;
                }
        }
        *outn = m;
}

static int run_file(const char *path, unsigned *ran)
{
        static uint8_t buf[FUZZ_MAX_INPUT], mut[FUZZ_MAX_INPUT + 8];
        FILE *f = fopen(path, "rb");
        size_t n, mn;

        if (f == NULL) {
                fprintf(stderr, "fuzz driver: cannot open %s\n", path);
                return -1;
        }
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        (*ran)++;
        for (unsigned i = 0, k = mutations(); i < k; i++) {
                mutate(buf, n, mut, &mn);
                LLVMFuzzerTestOneInput(mut, mn);
                (*ran)++;
        }
        return 0;
}

int main(int argc, char **argv)
{
        unsigned ran = 0;

        for (int i = 1; i < argc; i++) {
                struct dirent **ents;
                char path[PATH_MAX + 256];
                int n = scandir(argv[i], &ents, NULL, alphasort);

                if (n < 0) {
                        if (run_file(argv[i], &ran) != 0)
                                return 1;
                        continue;
                }
                for (int e = 0; e < n; e++) {
                        if (ents[e]->d_name[0] != '.') {
                                snprintf(path, sizeof(path), "%s/%s", argv[i],
                                         ents[e]->d_name);
                                if (run_file(path, &ran) != 0)
                                        return 1;
                        }
                        free(ents[e]);
                }
                free(ents);
        }
        printf("fuzz driver: %u inputs, no crash\n", ran);
        return ran ? 0 : 1;
}
