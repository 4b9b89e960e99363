/* SPDX-License-Identifier: MIT */
/*
 * Static files under a directory (pc_http_static()). The path is decoded,
 * refused if any segment is "..", and the file it names is resolved with
 * its symbolic links and must still lie under the root: a link pointing
 * out is answered 404, as a missing file would be.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http_pvt.h"

struct static_root {
        char *root; /* realpath() of the directory */
        size_t root_len, prefix_len;
};

static const struct {
        const char *ext, *type;
} types[] = {
        {"html", "text/html; charset=utf-8"}, {"htm", "text/html; charset=utf-8"},
        {"txt", "text/plain; charset=utf-8"}, {"css", "text/css"},
        {"js", "text/javascript"},            {"json", "application/json"},
        {"xml", "application/xml"},           {"svg", "image/svg+xml"},
        {"png", "image/png"},                 {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},               {"gif", "image/gif"},
        {"webp", "image/webp"},               {"ico", "image/x-icon"},
        {"wasm", "application/wasm"},         {"pdf", "application/pdf"},
        {"gz", "application/gzip"},           {"woff2", "font/woff2"},
};

static const char *content_type(const char *path)
{
        const char *dot = strrchr(path, '.');

        if (dot && strchr(dot, '/') == NULL)
                for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                        if (strcasecmp(dot + 1, types[i].ext) == 0)
                                return types[i].type;
        return "application/octet-stream";
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decode @in into @out (NUL-terminated); -1 for a bad escape, a
 * NUL byte or a path too long. */
static int decode(struct pc_http_slice in, char *out, size_t cap)
{
        size_t o = 0;

        for (size_t i = 0; i < in.len; i++) {
                char c = in.p[i];

                if (c == '%') {
                        int hi, lo;

                        if (i + 2 >= in.len)
                                return -1;
                        hi = hexval(in.p[i + 1]);
                        lo = hexval(in.p[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -1;
                        c = (char)(hi * 16 + lo);
                        i += 2;
                }
                if (c == '\0' || o + 1 >= cap)
                        return -1;
                out[o++] = c;
        }
        out[o] = '\0';
        return 0;
}

static bool has_dotdot(const char *p)
{
        for (const char *s = p; *s;) {
                const char *e = strchr(s, '/');
                size_t n = e ? (size_t)(e - s) : strlen(s);

                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                s += n;
                while (*s == '/')
                        s++;
        }
        return false;
}

static int simple(struct pc_http_resp *r, int status)
{
        char text[64];

        snprintf(text, sizeof(text), "%d %s\n", status, pc__http_reason(status));
        pc_http_resp_status(r, status);
        pc_http_resp_header(r, "Content-Type", "text/plain");
        pc_http_resp_body(r, text, strlen(text));
        return pc_http_resp_send(r);
}

static void http_time(time_t t, char *out, size_t len)
{
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(out, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* "bytes=a-b", "bytes=a-", "bytes=-n" against @size: 1 and [*a, *b] for a
 * range, 0 to ignore the header (several ranges, another unit, garbage),
 * -1 when unsatisfiable. */
static int parse_range(struct pc_http_slice v, off_t size, off_t *a, off_t *b)
{
        char buf[64], *end;
        const char *dash;
        unsigned long long x, y;

        if (v.len >= sizeof(buf) || v.len < 7 || strncasecmp(v.p, "bytes=", 6))
                return 0;
        memcpy(buf, v.p + 6, v.len - 6);
        buf[v.len - 6] = '\0';
        if (strchr(buf, ',') || (dash = strchr(buf, '-')) == NULL)
                return 0;
        if (dash == buf) { /* the last n bytes */
                if (buf[1] < '0' || buf[1] > '9')
                        return 0;
                y = strtoull(buf + 1, &end, 10);
                if (*end)
                        return 0;
                if (y == 0 || size == 0)
                        return -1;
                *a = (off_t)y >= size ? 0 : size - (off_t)y;
                *b = size - 1;
                return 1;
        }
        if (buf[0] < '0' || buf[0] > '9')
                return 0;
        x = strtoull(buf, &end, 10);
        if (end != dash)
                return 0;
        if (dash[1] == '\0') {
                y = (unsigned long long)size - 1;
        } else {
                if (dash[1] < '0' || dash[1] > '9')
                        return 0;
                y = strtoull(dash + 1, &end, 10);
                if (*end || y < x)
                        return 0;
        }
        if ((off_t)x >= size)
                return -1;
        *a = (off_t)x;
        *b = (off_t)y >= size ? size - 1 : (off_t)y;
        return 1;
}

static int serve_file(struct pc_http_req *q, struct pc_http_resp *r, int fd, const struct stat *st,
                      const char *path)
{
        struct pc_http_slice v;
        char lm[40], cr[96];
        off_t a = 0, b = st->st_size - 1;
        int rng = 0;

        http_time(st->st_mtime, lm, sizeof(lm));
        if (pc_http_req_header(q, "If-Modified-Since", &v) == 0 && v.len < sizeof(cr)) {
                struct tm tm = {0};
                char *end;

                memcpy(cr, v.p, v.len);
                cr[v.len] = '\0';
                end = strptime(cr, "%a, %d %b %Y %H:%M:%S GMT", &tm);
                if (end && *end == '\0' && st->st_mtime <= timegm(&tm)) {
                        pc_http_resp_status(r, 304);
                        pc_http_resp_header(r, "Last-Modified", lm);
                        return pc__http_resp_file(r, -1, 0, 0);
                }
        }
        if (pc_http_req_header(q, "Range", &v) == 0)
                rng = parse_range(v, st->st_size, &a, &b);
        pc_http_resp_header(r, "Content-Type", content_type(path));
        pc_http_resp_header(r, "Last-Modified", lm);
        pc_http_resp_header(r, "Accept-Ranges", "bytes");
        if (rng < 0) {
                snprintf(cr, sizeof(cr), "bytes */%lld", (long long)st->st_size);
                pc_http_resp_header(r, "Content-Range", cr);
                return simple(r, 416);
        }
        if (rng > 0) {
                snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld", (long long)a, (long long)b,
                         (long long)st->st_size);
                pc_http_resp_status(r, 206);
                pc_http_resp_header(r, "Content-Range", cr);
        }
        return pc__http_resp_file(r, fd, a, st->st_size ? (size_t)(b - a + 1) : 0);
}

static int static_get(struct pc_http_req *q, struct pc_http_resp *r, void *arg)
{
        const struct static_root *sr = arg;
        struct pc_http_slice path = pc_http_req_path(q);
        char rel[PATH_MAX], full[PATH_MAX + 32], real[PATH_MAX];
        struct stat st;
        int fd, rc;

        path.p += sr->prefix_len;
        path.len -= sr->prefix_len;
        if (decode(path, rel, sizeof(rel)))
                return simple(r, 400);
        if (has_dotdot(rel))
                return simple(r, 403);
        snprintf(full, sizeof(full), "%s/%s", sr->root, rel);
        if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
                strcat(full, "/index.html");
        /* Resolved, links and all, it must still be under the root. */
        if (realpath(full, real) == NULL || strncmp(real, sr->root, sr->root_len) ||
            real[sr->root_len] != '/')
                return simple(r, 404);
        fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return simple(r, errno == EACCES ? 403 : 404);
        if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
                close(fd);
                return simple(r, 404);
        }
        rc = serve_file(q, r, fd, &st, real);
        close(fd);
        return rc;
}

int pc_http_static(struct pc_http_server *s, const char *prefix, const char *dir)
{
        struct static_root *sr;
        char route[PATH_MAX], real[PATH_MAX];
        struct stat st;
        size_t n;
        void **v;
        int rc;

        if (s == NULL || prefix == NULL || dir == NULL)
                return -EINVAL;
        n = strlen(prefix);
        if (n == 0 || prefix[0] != '/' || prefix[n - 1] != '/' || n + 2 > sizeof(route))
                return -EINVAL;
        if (realpath(dir, real) == NULL)
                return -errno;
        if (stat(real, &st))
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        /* One allocation with the root's text, freed with the server. */
        sr = calloc(1, sizeof(*sr) + strlen(real) + 1);
        v = realloc(s->statics, sizeof(*v) * (s->nstatics + 1));
        if (v)
                s->statics = v;
        if (sr == NULL || v == NULL) {
                free(sr);
                return -ENOMEM;
        }
        sr->root = (char *)(sr + 1);
        strcpy(sr->root, real);
        /* "/" as the root would make every path "//x": keep it empty. */
        if (strcmp(sr->root, "/") == 0)
                sr->root[0] = '\0';
        sr->root_len = strlen(sr->root);
        sr->prefix_len = n;
        snprintf(route, sizeof(route), "%s*", prefix);
        rc = pc_http_route(s, PC_HTTP_GET | PC_HTTP_HEAD, route, static_get, sr);
        if (rc) {
                free(sr);
                return rc;
        }
        s->statics[s->nstatics++] = sr;
        return 0;
}
