/* SPDX-License-Identifier: MIT */
/*
 * Test helpers shared by the topology tests and the fuzz driver: find the
 * fixtures, copy one into a scratch directory to damage it, clean up.
 */
#ifndef PC_FIXTURE_UTIL_H
#define PC_FIXTURE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *fixtures_dir(void)
{
        const char *d = getenv("PC_FIXTURES");
#ifdef PC_FIXTURES_DIR
        if (d == NULL)
                d = PC_FIXTURES_DIR;
#endif
        return d ? d : "tests/fixtures";
}

/* "<fixtures>/<name>/sys": what pc_topo_load() takes. */
static inline void fixture_sys(const char *name, char *buf, size_t len)
{
        snprintf(buf, len, "%s/%s/sys", fixtures_dir(), name);
}

static char copy_src[PATH_MAX], copy_dst[PATH_MAX];

static inline int copy_one(const char *path, const struct stat *st, int type,
                           struct FTW *ftw)
{
        char to[PATH_MAX * 2];
        char buf[8192];
        int in, out;
        ssize_t n;

        (void)ftw;
        snprintf(to, sizeof(to), "%s%s", copy_dst, path + strlen(copy_src));
        if (type == FTW_D)
                return mkdir(to, 0755) == 0 || errno == EEXIST ? 0 : -1;
        if (type != FTW_F)
                return 0;
        in = open(path, O_RDONLY);
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC, st->st_mode & 0777);
        if (in < 0 || out < 0)
                goto fail;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t)n) != n)
                        goto fail;
        close(in);
        close(out);
        return 0;
fail:
        if (in >= 0)
                close(in);
        if (out >= 0)
                close(out);
        return -1;
}

/* Copy fixture @name into a new scratch directory; @root receives the
 * copy's "sys" path, @top the scratch directory. Returns 0 or -1. */
static inline int fixture_copy(const char *name, char *top, size_t toplen, char *root,
                               size_t rootlen)
{
        char tmpl[] = "/tmp/pc-topo-XXXXXX";

        if (mkdtemp(tmpl) == NULL)
                return -1;
        snprintf(top, toplen, "%s", tmpl);
        snprintf(copy_src, sizeof(copy_src), "%s/%s", fixtures_dir(), name);
        snprintf(copy_dst, sizeof(copy_dst), "%s", tmpl);
        if (nftw(copy_src, copy_one, 16, FTW_PHYS) != 0)
                return -1;
        snprintf(root, rootlen, "%s/sys", tmpl);
        return 0;
}

static inline int rm_one(const char *path, const struct stat *st, int type,
                         struct FTW *ftw)
{
        (void)st;
        (void)type;
        (void)ftw;
        return remove(path);
}

/* Remove @path and everything under it (a scratch copy). */
static inline void rm_tree(const char *path)
{
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write @text into <root>/<rel>, creating or truncating it. */
static inline int put_file(const char *root, const char *rel, const void *text,
                           size_t len)
{
        char path[PATH_MAX + 256];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        f = fopen(path, "w");
        if (f == NULL)
                return -1;
        n = fwrite(text, 1, len, f);
        return fclose(f) == 0 && n == len ? 0 : -1;
}

#endif /* PC_FIXTURE_UTIL_H */
