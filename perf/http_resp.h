/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 responses counted as they arrive, for percore-tcpload's --http
 * mode: a connection's bytes are appended to its buffer, and each whole
 * response (a status line, headers, then the Content-Length bytes of body)
 * is counted and dropped. The bench's requests are GETs of a small body,
 * so a response without Content-Length (chunked, or delimited by the
 * close) is refused rather than framed: every server measured here sizes
 * its answer. Pure; a buffer belongs to one connection, on one thread.
 */
#ifndef PC_BENCH_HTTP_RESP_H
#define PC_BENCH_HTTP_RESP_H

#include <stddef.h>
#include <sys/types.h>

/* The largest response (headers and body) a connection may hold. */
#define HTTP_RESP_MAX 2048

struct http_resp_rx {
        size_t len;
        char buf[HTTP_RESP_MAX];
};

/*
 * The length of the whole response at the start of @buf[0..len): 0 while
 * it is incomplete; -EPROTO when it is not an HTTP/1.x response the bench
 * can frame (no status line, no Content-Length, chunked, a bad length),
 * -EBADMSG for a status other than 2xx (a server that answers 404 is not
 * serving the bench), -EMSGSIZE when its headers pass HTTP_RESP_MAX.
 */
ssize_t http_resp_len(const char *buf, size_t len);

/*
 * Append @data[0..len) to @rx and drop every whole response now at its
 * start. Returns how many there were (0 or more), or http_resp_len()'s
 * error, or -EMSGSIZE when a response does not fit HTTP_RESP_MAX.
 */
int http_resp_feed(struct http_resp_rx *rx, const void *data, size_t len);

#endif
