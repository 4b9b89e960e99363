/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 responses on the wire. A response's head, and its body when
 * small and copied, are gathered in the connection's output buffer with
 * the answers to the requests before it (pipelining), and written once
 * the buffer passes OUT_FLUSH or the connection is about to wait for
 * input. A body given by reference, or a large one, goes out with the
 * gathered bytes in one pc_conn_writev() of the pieces, uncopied by us.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_pvt.h"
#include "percore.h"

/* Gathered output is written once it passes this. */
#define OUT_FLUSH (16 * 1024)
/* A copied body up to this joins the gathered output; a larger one is
 * written from where it lies. */
#define OUT_SMALL (4 * 1024)
/* A file is read and written this much at a time. */
#define FILE_PIECE (64 * 1024)

/* Room for @len more bytes in the output buffer. */
static int out_room(struct pc__http_conn *hc, size_t len)
{
        size_t cap = hc->out_cap ? hc->out_cap : 2048;
        char *o;

        if (hc->out_len + len <= hc->out_cap)
                return 0;
        while (cap < hc->out_len + len)
                cap *= 2;
        o = realloc(hc->out, cap);
        if (o == NULL) {
                hc->failed = true;
                return -ENOMEM;
        }
        hc->out = o;
        hc->out_cap = cap;
        return 0;
}

int pc__h1_out_add(struct pc__http_conn *hc, const void *p, size_t len)
{
        if (out_room(hc, len))
                return -ENOMEM;
        memcpy(hc->out + hc->out_len, p, len);
        hc->out_len += len;
        return 0;
}

/* Write the gathered bytes followed by @n more pieces. */
static int write_out(struct pc__http_conn *hc, const struct iovec *more, int n)
{
        struct iovec iov[PC__RESP_PIECES + 4];
        size_t total = hc->out_len;
        int k = 0;
        ssize_t w;

        if (hc->failed)
                return hc->err ? hc->err : -EPIPE;
        if (hc->out_len)
                iov[k++] = (struct iovec){hc->out, hc->out_len};
        for (int i = 0; i < n; i++) {
                if (more[i].iov_len == 0)
                        continue;
                iov[k++] = more[i];
                total += more[i].iov_len;
        }
        hc->out_len = 0;
        /* Shrink a buffer a large pipelined burst grew. */
        if (hc->out_cap > 4 * OUT_FLUSH) {
                free(hc->out);
                hc->out = NULL;
                hc->out_cap = 0;
        }
        if (k == 0)
                return 0;
        w = pc_conn_writev(hc->c, iov, k);
        if (w < 0) {
                hc->failed = true;
                hc->err = (int)w;
                if (w == -ETIMEDOUT)
                        pc__http_inc(&hc->ws->timeouts, 1); /* the client took nothing */
                return (int)w;
        }
        pc__http_inc(&hc->ws->bytes_out, total);
        return 0;
}

int pc__h1_flush(struct pc__http_conn *hc)
{
        return write_out(hc, NULL, 0);
}

/* How a response's body is framed. */
enum framing { FR_LENGTH, FR_CHUNKED, FR_NONE };

static char *put_str(char *p, const char *s, size_t n)
{
        memcpy(p, s, n);
        return p + n;
}

#define PUT_LIT(p, lit) put_str(p, lit, sizeof(lit) - 1)

static char *put_uint(char *p, uint64_t v)
{
        char tmp[24];
        int n = 0;

        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        while (n)
                *p++ = tmp[--n];
        return p;
}

/*
 * The status line, our headers and the handler's, and the blank line,
 * written straight into the output buffer: this runs once a response,
 * and formatting it with printf() would cost more than the rest of a
 * small response together.
 */
static int put_head(struct pc_http_resp *r, enum framing fr, uint64_t len)
{
        struct pc__http_conn *hc = r->conn;
        const char *reason = pc__http_reason(r->status), *date = pc__http_date();
        size_t need = 160 + strlen(reason) + strlen(date) + r->hlen;
        char *p;

        if (out_room(hc, need))
                return -ENOMEM;
        p = hc->out + hc->out_len;
        p = PUT_LIT(p, "HTTP/1.1 ");
        p = put_uint(p, (uint64_t)r->status);
        *p++ = ' ';
        p = put_str(p, reason, strlen(reason));
        p = PUT_LIT(p, "\r\nDate: ");
        p = put_str(p, date, strlen(date));
        p = PUT_LIT(p, "\r\n");
        if (fr == FR_LENGTH) {
                p = PUT_LIT(p, "Content-Length: ");
                p = put_uint(p, len);
                p = PUT_LIT(p, "\r\n");
        } else if (fr == FR_CHUNKED) {
                p = PUT_LIT(p, "Transfer-Encoding: chunked\r\n");
        }
        if (r->close)
                p = PUT_LIT(p, "Connection: close\r\n");
        else if (hc->req.version == 10)
                p = PUT_LIT(p, "Connection: keep-alive\r\n");
        p = put_str(p, r->hdrs, r->hlen);
        p = PUT_LIT(p, "\r\n");
        hc->out_len = (size_t)(p - hc->out);
        return 0;
}

static size_t body_len(const struct pc_http_resp *r)
{
        size_t len = 0;

        for (unsigned i = 0; i < r->npiece; i++)
                len += r->piece[i].len;
        return len;
}

static const char *piece_at(const struct pc_http_resp *r, const struct pc__piece *p)
{
        return p->p ? p->p : r->buf + p->off;
}

/* The body pieces after the gathered bytes: joined to them when small and
 * copied, else written with them. */
static int put_body(struct pc_http_resp *r, size_t len)
{
        struct pc__http_conn *hc = r->conn;
        struct iovec iov[PC__RESP_PIECES];
        bool by_ref = false;

        if (r->head_only || len == 0)
                return 0;
        for (unsigned i = 0; i < r->npiece; i++)
                by_ref |= r->piece[i].p != NULL;
        r->body_out = len;
        if (!by_ref && len <= OUT_SMALL) {
                for (unsigned i = 0; i < r->npiece; i++)
                        if (pc__h1_out_add(hc, piece_at(r, &r->piece[i]), r->piece[i].len))
                                return -ENOMEM;
                return 0;
        }
        for (unsigned i = 0; i < r->npiece; i++)
                iov[i] = (struct iovec){(void *)piece_at(r, &r->piece[i]), r->piece[i].len};
        return write_out(hc, iov, (int)r->npiece);
}

static int h1_send(struct pc_http_resp *r)
{
        struct pc__http_conn *hc = r->conn;
        size_t len = body_len(r);
        int rc;

        /* A 204 or 304 has no body, and says no length. */
        if (r->status == 204 || r->status == 304) {
                r->npiece = 0;
                rc = put_head(r, FR_NONE, 0);
                len = 0;
        } else {
                rc = put_head(r, FR_LENGTH, len);
        }
        if (rc == 0)
                rc = put_body(r, len);
        if (rc == 0 && hc->out_len >= OUT_FLUSH)
                rc = pc__h1_flush(hc);
        pc__http_done(hc, &hc->req, r->status, r->body_out);
        pc__http_resp_release(r);
        return rc;
}

/*
 * A streamed body: chunked to an HTTP/1.1 client; an HTTP/1.0 one has no
 * chunks, so its body simply runs to our close.
 */
static int h1_chunk(struct pc_http_resp *r, const void *data, size_t len, bool last)
{
        struct pc__http_conn *hc = r->conn;
        bool chunked = hc->req.version == 11;
        char size[24];
        struct iovec iov[3];
        int rc;

        if (!r->streaming) {
                size_t first = body_len(r);

                r->streaming = true;
                if (!chunked)
                        r->close = hc->close = true;
                rc = put_head(r, chunked ? FR_CHUNKED : FR_NONE, 0);
                if (rc)
                        return rc;
                if (first && !r->head_only) {
                        rc = 0;
                        for (unsigned i = 0; rc == 0 && i < r->npiece; i++)
                                rc = h1_chunk(r, piece_at(r, &r->piece[i]), r->piece[i].len,
                                              false);
                        if (rc)
                                return rc;
                }
        }
        if (r->head_only)
                len = 0;
        if (len) {
                int n = chunked ? snprintf(size, sizeof(size), "%zx\r\n", len) : 0;

                iov[0] = (struct iovec){size, (size_t)n};
                iov[1] = (struct iovec){(void *)data, len};
                iov[2] = (struct iovec){"\r\n", chunked ? 2u : 0u};
                r->body_out += len;
                rc = write_out(hc, iov, 3);
                if (rc)
                        return rc;
        }
        if (!last)
                return 0;
        if (chunked && !r->head_only && (rc = pc__h1_out_add(hc, "0\r\n\r\n", 5)))
                return rc;
        pc__http_done(hc, &hc->req, r->status, r->body_out);
        pc__http_resp_release(r);
        return hc->out_len >= OUT_FLUSH ? pc__h1_flush(hc) : 0;
}

/* A file's bytes, read in pieces as the writes go out: memory stays at
 * one piece whatever the file's size. */
static int h1_file(struct pc_http_resp *r, int fd, off_t off, size_t len)
{
        struct pc__http_conn *hc = r->conn;
        char *buf = NULL;
        int rc;

        if (fd < 0) {
                pc__http_resp_release(r);
                r->npiece = 0;
                return h1_send(r);
        }
        rc = put_head(r, FR_LENGTH, len);
        if (rc == 0 && !r->head_only && len && (buf = malloc(FILE_PIECE)) == NULL)
                rc = -ENOMEM;
        while (rc == 0 && !r->head_only && len) {
                ssize_t n = pread(fd, buf, len < FILE_PIECE ? len : FILE_PIECE, off);
                struct iovec iov;

                if (n <= 0) {
                        /* The file shrank under us: the length we sent
                         * cannot be kept, so the connection ends. */
                        hc->failed = true;
                        rc = n < 0 ? -errno : -EIO;
                        break;
                }
                iov = (struct iovec){buf, (size_t)n};
                rc = write_out(hc, &iov, 1);
                off += n;
                len -= (size_t)n;
                r->body_out += (uint64_t)n;
        }
        free(buf);
        if (rc == 0 && hc->out_len >= OUT_FLUSH)
                rc = pc__h1_flush(hc);
        pc__http_done(hc, &hc->req, r->status, r->body_out);
        return rc;
}

int pc__h1_error(struct pc__http_conn *hc, int status)
{
        char line[320], body[64];
        int b = snprintf(body, sizeof(body), "%d %s\n", status, pc__http_reason(status));
        int n = snprintf(line, sizeof(line),
                         "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: text/plain\r\n"
                         "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                         status, pc__http_reason(status), pc__http_date(), b, body);

        hc->req = (struct pc_http_req){.conn = hc};
        pc__http_done(hc, NULL, status, (uint64_t)b);
        return pc__h1_out_add(hc, line, (size_t)n);
}

const struct pc__http_proto pc__h1_proto = {
        .name = "http/1.1",
        .send = h1_send,
        .chunk = h1_chunk,
        .file = h1_file,
};
