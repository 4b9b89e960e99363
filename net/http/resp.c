/* SPDX-License-Identifier: MIT */
/*
 * The response builder: status, headers and body pieces kept with the
 * connection until the response is sent in its protocol's framing
 * (struct pc__http_proto). Requests are read through small accessors so
 * that a second protocol fills the same struct pc_http_req.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_pvt.h"
#include "pc_module_pvt.h"
#include "percore.h"

void pc__http_resp_reset(struct pc_http_resp *r, struct pc__http_conn *hc, bool head_only)
{
        r->conn = hc;
        r->status = 200;
        r->in_handler = r->later = r->sent = r->streaming = false;
        r->head_only = head_only;
        r->close = hc->close;
        r->hlen = r->blen = 0;
        r->npiece = 0;
        r->body_out = 0;
        r->waiter = NULL;
}

void pc__http_resp_release(struct pc_http_resp *r)
{
        for (unsigned i = 0; i < r->npiece; i++) {
                struct pc__piece *p = &r->piece[i];

                if (p->p && p->done) {
                        pc_conn_ref_fn done = p->done;

                        p->done = NULL;
                        done(p->arg);
                }
        }
        r->npiece = 0;
}

void pc__http_resp_fini(struct pc_http_resp *r)
{
        pc__http_resp_release(r);
        free(r->hdrs);
        free(r->buf);
        r->hdrs = r->buf = NULL;
        r->hcap = r->bcap = r->hlen = r->blen = 0;
}

static int grow(char **buf, size_t *cap, size_t need, size_t max)
{
        size_t c = *cap ? *cap : 256;
        char *b;

        if (need > max)
                return -E2BIG;
        while (c < need)
                c *= 2;
        if (c > max)
                c = max;
        b = realloc(*buf, c);
        if (b == NULL)
                return -ENOMEM;
        *buf = b;
        *cap = c;
        return 0;
}

static bool open_for_more(const struct pc_http_resp *r)
{
        return !r->sent && !r->streaming;
}

int pc_http_resp_status(struct pc_http_resp *r, int status)
{
        if (r == NULL || status < 200 || status > 599)
                return -EINVAL;
        if (!open_for_more(r))
                return -EALREADY;
        r->status = status;
        return 0;
}

static bool ours(const char *name)
{
        static const char *const names[] = {"date", "content-length", "transfer-encoding",
                                            "connection"};

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcasecmp(name, names[i]) == 0)
                        return true;
        return false;
}

int pc_http_resp_header(struct pc_http_resp *r, const char *name, const char *value)
{
        size_t n, v;
        int rc;

        if (r == NULL || name == NULL || value == NULL || name[0] == '\0' || ours(name) ||
            strpbrk(name, "\r\n: ") || strpbrk(value, "\r\n"))
                return -EINVAL;
        if (!open_for_more(r))
                return -EALREADY;
        n = strlen(name);
        v = strlen(value);
        if (r->hlen + n + v + 4 > r->hcap &&
            (rc = grow(&r->hdrs, &r->hcap, r->hlen + n + v + 4, PC__RESP_HDR_MAX)))
                return rc;
        memcpy(r->hdrs + r->hlen, name, n);
        memcpy(r->hdrs + r->hlen + n, ": ", 2);
        memcpy(r->hdrs + r->hlen + n + 2, value, v);
        memcpy(r->hdrs + r->hlen + n + 2 + v, "\r\n", 2);
        r->hlen += n + v + 4;
        return 0;
}

int pc_http_resp_body(struct pc_http_resp *r, const void *data, size_t len)
{
        int rc;

        if (r == NULL || (data == NULL && len))
                return -EINVAL;
        if (!open_for_more(r))
                return -EALREADY;
        if (len == 0)
                return 0;
        if (r->blen + len > r->bcap &&
            (rc = grow(&r->buf, &r->bcap, r->blen + len, SIZE_MAX / 2)))
                return rc == -E2BIG ? -ENOMEM : rc;
        memcpy(r->buf + r->blen, data, len);
        /* Consecutive copies make one piece. */
        if (r->npiece && r->piece[r->npiece - 1].p == NULL) {
                r->piece[r->npiece - 1].len += len;
        } else {
                if (r->npiece == PC__RESP_PIECES)
                        return -ENOMEM;
                r->piece[r->npiece++] = (struct pc__piece){.off = r->blen, .len = len};
        }
        r->blen += len;
        return 0;
}

int pc_http_resp_body_ref(struct pc_http_resp *r, const void *data, size_t len,
                          pc_conn_ref_fn done, void *arg)
{
        if (r == NULL || data == NULL)
                return -EINVAL;
        if (!open_for_more(r))
                return -EALREADY;
        if (r->npiece == PC__RESP_PIECES)
                return -ENOMEM;
        r->piece[r->npiece++] = (struct pc__piece){.p = data, .len = len, .done = done, .arg = arg};
        return 0;
}

int pc_http_resp_send(struct pc_http_resp *r)
{
        struct pc__http_conn *hc;

        if (r == NULL || r->conn == NULL)
                return -EINVAL;
        hc = r->conn;
        if (r->sent || r->streaming)
                return -EALREADY;
        if ((unsigned)pc_worker_id() != pc_conn_worker(hc->c))
                return -EXDEV;
        r->sent = true;
        if (r->in_handler)
                return hc->proto->send(r) == 0 || hc->failed ? 0 : -ENOMEM;
        /* Later: the connection's fiber writes it. */
        if (r->waiter)
                pc__fiber_wake(r->waiter, 0);
        return 0;
}

int pc__http_resp_file(struct pc_http_resp *r, int fd, off_t off, size_t len)
{
        if (r->sent || r->streaming)
                return -EALREADY;
        if (!r->in_handler)
                return -EPERM;
        r->sent = true;
        return r->conn->proto->file(r, fd, off, len) == 0 || r->conn->failed ? 0 : -ENOMEM;
}

int pc_http_resp_chunk(struct pc_http_resp *r, const void *data, size_t len)
{
        if (r == NULL || r->conn == NULL || (data == NULL && len))
                return -EINVAL;
        if (r->sent)
                return -EALREADY;
        if (!r->in_handler)
                return -EPERM;
        return r->conn->proto->chunk(r, data, len, false);
}

int pc_http_resp_end(struct pc_http_resp *r)
{
        int rc;

        if (r == NULL || r->conn == NULL)
                return -EINVAL;
        if (r->sent)
                return -EALREADY;
        if (!r->streaming)
                return pc_http_resp_send(r);
        if (!r->in_handler)
                return -EPERM;
        r->sent = true;
        rc = r->conn->proto->chunk(r, NULL, 0, true);
        return rc;
}

/* ---- Requests ------------------------------------------------------------ */

enum pc_http_method pc_http_req_method(const struct pc_http_req *r)
{
        return (enum pc_http_method)r->method;
}

struct pc_http_slice pc_http_req_path(const struct pc_http_req *r)
{
        return r->path;
}

struct pc_http_slice pc_http_req_query(const struct pc_http_req *r)
{
        return r->query;
}

int pc_http_req_version(const struct pc_http_req *r)
{
        return r->version;
}

struct pc_http_slice pc_http_req_body(const struct pc_http_req *r)
{
        return r->body;
}

struct pc_conn *pc_http_req_conn(const struct pc_http_req *r)
{
        return r->conn->c;
}

int pc_http_req_header(const struct pc_http_req *r, const char *name, struct pc_http_slice *out)
{
        size_t n;

        if (r == NULL || name == NULL || out == NULL)
                return -EINVAL;
        n = strlen(name);
        for (unsigned i = 0; i < r->nhdr; i++) {
                if (r->hdr[i][0].len == n && strncasecmp(r->hdr[i][0].p, name, n) == 0) {
                        struct pc_http_slice v = r->hdr[i][1];

                        /* Optional whitespace around a value is not part of it. */
                        while (v.len && (v.p[0] == ' ' || v.p[0] == '\t'))
                                v.p++, v.len--;
                        while (v.len && (v.p[v.len - 1] == ' ' || v.p[v.len - 1] == '\t'))
                                v.len--;
                        *out = v;
                        return 0;
                }
        }
        return -ENOENT;
}

unsigned pc_http_req_header_count(const struct pc_http_req *r)
{
        return r ? r->nhdr : 0;
}

int pc_http_req_header_at(const struct pc_http_req *r, unsigned i, struct pc_http_slice *name,
                          struct pc_http_slice *value)
{
        if (r == NULL || name == NULL || value == NULL)
                return -EINVAL;
        if (i >= r->nhdr)
                return -ERANGE;
        *name = r->hdr[i][0];
        *value = r->hdr[i][1];
        return 0;
}
