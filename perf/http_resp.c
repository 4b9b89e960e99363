/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 responses counted as they arrive; see http_resp.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "http_resp.h"

/* Where the header block ends ("\r\n\r\n"), or NULL. */
static const char *headers_end(const char *buf, size_t len)
{
        for (size_t i = 3; i < len; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
                    buf[i - 3] == '\r')
                        return buf + i + 1;
        return NULL;
}

/* Whether header line @line (@n bytes, no CRLF) is @name followed by a
 * colon; *@value is then past the colon and its blanks. */
static bool header_is(const char *line, size_t n, const char *name, const char **value)
{
        size_t k = strlen(name);

        if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
                return false;
        *value = line + k + 1;
        while (*value < line + n && (**value == ' ' || **value == '\t'))
                (*value)++;
        return true;
}

ssize_t http_resp_len(const char *buf, size_t len)
{
        const char *end = headers_end(buf, len), *line, *v;
        long long body = -1;

        if (end == NULL) {
                /* Not a response at all shows before the headers end. */
                if (len >= 5 && strncmp(buf, "HTTP/", 5) != 0)
                        return -EPROTO;
                return len >= HTTP_RESP_MAX ? -EMSGSIZE : 0;
        }
        /* "HTTP/1.x NNN ..." */
        if (end - buf < 13 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
            buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' ||
            buf[11] > '9' || (buf[12] != ' ' && buf[12] != '\r'))
                return -EPROTO;
        if (buf[9] != '2')
                return -EBADMSG;
        line = (const char *)memchr(buf, '\n', (size_t)(end - buf)) + 1;
        while (line < end - 2) {
                const char *eol = memchr(line, '\n', (size_t)(end - line));
                size_t n = (size_t)(eol - line) - 1; /* without the CRLF */

                if (header_is(line, n, "Transfer-Encoding", &v))
                        return -EPROTO;
                if (header_is(line, n, "Content-Length", &v)) {
                        long long x = 0;
                        const char *d = v;

                        while (d < line + n && *d >= '0' && *d <= '9' && x < HTTP_RESP_MAX)
                                x = x * 10 + (*d++ - '0');
                        while (d < line + n && (*d == ' ' || *d == '\t'))
                                d++;
                        /* Two lengths, none, or one past what a response may hold. */
                        if (body >= 0 || d == v || d != line + n || x >= HTTP_RESP_MAX)
                                return -EPROTO;
                        body = x;
                }
                line = eol + 1;
        }
        if (body < 0)
                return -EPROTO;
        if ((size_t)(end - buf) + (size_t)body > HTTP_RESP_MAX)
                return -EMSGSIZE;
        if ((size_t)(end - buf) + (size_t)body > len)
                return 0;
        return (end - buf) + (ssize_t)body;
}

int http_resp_feed(struct http_resp_rx *rx, const void *data, size_t len)
{
        const char *in = data;
        int count = 0;

        /* A piece at a time, as much as the buffer takes, so a burst of
         * responses larger than the buffer still frames. */
        while (len) {
                size_t take = sizeof(rx->buf) - rx->len, off = 0;

                if (take == 0)
                        return -EMSGSIZE;
                if (take > len)
                        take = len;
                memcpy(rx->buf + rx->len, in, take);
                rx->len += take;
                in += take;
                len -= take;
                for (;;) {
                        ssize_t n = http_resp_len(rx->buf + off, rx->len - off);

                        if (n < 0)
                                return (int)n;
                        if (n == 0)
                                break;
                        off += (size_t)n;
                        count++;
                }
                memmove(rx->buf, rx->buf + off, rx->len - off);
                rx->len -= off;
        }
        return count;
}
