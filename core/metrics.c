/* SPDX-License-Identifier: MIT */
/*
 * PERCORE_METRICS=ADDR:PORT: GET /metrics in the Prometheus text format,
 * from a thread of its own. The socket is bound in pc_runtime_create(), so
 * a bad address or a port in use fails the start; the thread serves while
 * pc_runtime_run() runs (connections made before wait in the backlog) and
 * reads only what the workers publish, never stopping one.
 *
 * The server is small on purpose: one poll(2) loop, at most
 * PC_METRICS_CLIENTS connections (a new one evicts the oldest), a request
 * of at most PC_METRICS_REQ_MAX bytes, and PC_METRICS_TIMEOUT_NS for a
 * whole exchange, so a slow or silent client holds a slot, never the
 * thread. Every answer closes its connection (HTTP/1.1 "Connection:
 * close"); after the answer the server reads what the client still sends
 * until it closes too, so that closing never resets the answer away.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pc_core_pvt.h"

#define PC_METRICS_CLIENTS 16
#define PC_METRICS_REQ_MAX 4096
#define PC_METRICS_TIMEOUT_NS 5000000000ull
#define PC_METRICS_LINGER_NS 1000000000ull
#define PC_METRICS_BACKLOG 128

enum { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct client {
        int fd;
        int state;
        uint64_t deadline;
        uint64_t since; /* accepted: the oldest goes first when full */
        size_t rlen;
        char req[PC_METRICS_REQ_MAX];
        char *out;
        size_t olen, off;
};

struct pc__metrics {
        struct pc_runtime *rt;
        int lfd;
        int stop_fd; /* eventfd: the thread's end */
        uint16_t port;
        bool running;
        pthread_t thread;
        struct pc__metrics_prev prev[PC_MAX_WORKERS];
        struct client c[PC_METRICS_CLIENTS];
};

/* ---- ADDR:PORT ---------------------------------------------------------------- */

int pc__metrics_addr(const char *s, struct sockaddr_storage *ss, unsigned *len)
{
        char host[INET6_ADDRSTRLEN + 2];
        const char *colon, *hs = s;
        size_t hl;
        unsigned long port = 0;
        struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
        bool bracket = s[0] == '[';

        colon = strrchr(s, ':');
        if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) > 5)
                return -EINVAL;
        for (const char *d = colon + 1; *d; d++) {
                if (*d < '0' || *d > '9')
                        return -EINVAL;
                port = port * 10 + (unsigned long)(*d - '0');
        }
        if (port > 65535)
                return -EINVAL;
        hl = (size_t)(colon - s);
        if (bracket) {
                if (hl < 3 || s[hl - 1] != ']')
                        return -EINVAL;
                hs = s + 1;
                hl -= 2;
        }
        if (hl == 0 || hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, hs, hl);
        host[hl] = '\0';
        memset(ss, 0, sizeof(*ss));
        if (bracket) {
                if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1)
                        return -EINVAL;
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t)port);
                *len = sizeof(*v6);
                return 0;
        }
        if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
                return -EINVAL;
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof(*v4);
        return 0;
}

/* ---- requests ------------------------------------------------------------------ */

static bool is_tchar(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * Route the request in @buf[0..len): 0 while its head (request line and
 * headers, up to an empty line) is incomplete, else the HTTP status to
 * answer with: 200 for GET /metrics (a query string is ignored), 404 for
 * another path, 405 for another method, 505 for a version other than 1.0
 * or 1.1, 400 for anything malformed, 431 for a head that does not end
 * within PC_METRICS_REQ_MAX bytes. Lines end in CRLF or LF.
 */
int pc__http_route(const char *buf, size_t len)
{
        const char *end = NULL, *p = buf, *eol, *sp1, *sp2, *tgt;
        size_t mlen, tlen;

        for (size_t i = 0; i < len; i++) {
                if (buf[i] != '\n')
                        continue;
                if ((i >= 1 && buf[i - 1] == '\n') ||
                    (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')) {
                        end = buf + i + 1;
                        break;
                }
        }
        if (end == NULL)
                return len >= PC_METRICS_REQ_MAX ? 431 : 0;
        if ((size_t)(end - buf) > PC_METRICS_REQ_MAX)
                return 431;

        /* Request line: METHOD SP TARGET SP HTTP/1.x */
        eol = memchr(p, '\n', (size_t)(end - p));
        sp1 = memchr(p, ' ', (size_t)(eol - p));
        if (sp1 == NULL || sp1 == p)
                return 400;
        mlen = (size_t)(sp1 - p);
        for (size_t i = 0; i < mlen; i++)
                if (!is_tchar(p[i]))
                        return 400;
        tgt = sp1 + 1;
        sp2 = memchr(tgt, ' ', (size_t)(eol - tgt));
        if (sp2 == NULL || sp2 == tgt)
                return 400;
        tlen = (size_t)(sp2 - tgt);
        for (size_t i = 0; i < tlen; i++)
                if ((unsigned char)tgt[i] <= ' ' || tgt[i] == 0x7f)
                        return 400;
        {
                const char *v = sp2 + 1;
                size_t vlen = (size_t)(eol - v);

                if (vlen && v[vlen - 1] == '\r')
                        vlen--;
                if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.' ||
                    v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9')
                        return 400;
                if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
                        return 505;
        }
        /* Headers: "name: value" lines, nothing but tab among the
         * controls. */
        for (p = eol + 1; p < end; p = eol + 1) {
                const char *colon;

                eol = memchr(p, '\n', (size_t)(end - p));
                if (eol == p || (eol == p + 1 && *p == '\r'))
                        break; /* the empty line */
                colon = memchr(p, ':', (size_t)(eol - p));
                if (colon == NULL || colon == p)
                        return 400;
                for (const char *c = p; c < colon; c++)
                        if (!is_tchar(*c))
                                return 400;
                for (const char *c = colon + 1; c < eol; c++)
                        if (((unsigned char)*c < ' ' && *c != '\t' &&
                             !(*c == '\r' && c + 1 == eol)) ||
                            *c == 0x7f)
                                return 400;
        }
        if (tgt[0] != '/')
                return 400;
        if ((tlen != 8 && (tlen < 8 || tgt[8] != '?')) || memcmp(tgt, "/metrics", 8) != 0)
                return 404;
        if (mlen != 3 || memcmp(buf, "GET", 3) != 0)
                return 405;
        return 200;
}

static const char *reason(int status)
{
        switch (status) {
        case 200:
                return "OK";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 431:
                return "Request Header Fields Too Large";
        case 505:
                return "HTTP Version Not Supported";
        case 500:
                return "Internal Server Error";
        default:
                return "Bad Request";
        }
}

/* The whole answer to a request routed to @status, in c->out. */
static int answer(struct pc__metrics *m, struct client *c, int status)
{
        struct pc__prom body = {0};
        char head[256];
        int hl;

        if (status == 200) {
                pc__prom_runtime(m->rt, &body, m->prev);
                if (body.failed) {
                        free(body.buf);
                        body = (struct pc__prom){0};
                        status = 500;
                }
        }
        if (status != 200) {
                char text[64];
                int n = snprintf(text, sizeof(text), "%d %s\n", status, reason(status));

                body.buf = malloc((size_t)n);
                if (body.buf == NULL)
                        return -ENOMEM;
                memcpy(body.buf, text, (size_t)n);
                body.len = (size_t)n;
        }
        hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\n"
                      "Content-Type: %s\r\n"
                      "Content-Length: %zu\r\n"
                      "%s"
                      "Connection: close\r\n\r\n",
                      status, reason(status),
                      status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
                                    : "text/plain; charset=utf-8",
                      body.len, status == 405 ? "Allow: GET\r\n" : "");
        c->out = malloc((size_t)hl + body.len);
        if (c->out == NULL) {
                free(body.buf);
                return -ENOMEM;
        }
        memcpy(c->out, head, (size_t)hl);
        if (body.len)
                memcpy(c->out + hl, body.buf, body.len);
        free(body.buf);
        c->olen = (size_t)hl + body.len;
        c->off = 0;
        c->state = C_WRITE;
        return 0;
}

/* ---- the server ------------------------------------------------------------------ */

static void client_close(struct client *c)
{
        close(c->fd);
        free(c->out);
        c->out = NULL;
        c->state = C_FREE;
}

/* Take a waiting connection, evicting the oldest when every slot is
 * taken. Returns false when none waits. */
static bool accept_one(struct pc__metrics *m, uint64_t now)
{
        struct client *slot = NULL;
        int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0)
                return false;
        for (int i = 0; i < PC_METRICS_CLIENTS; i++) {
                struct client *c = &m->c[i];
                if (c->state == C_FREE) {
                        slot = c;
                        break;
                }
                if (slot == NULL || c->since < slot->since)
                        slot = c;
        }
        if (slot->state != C_FREE)
                client_close(slot);
        slot->fd = fd;
        slot->state = C_READ;
        slot->since = now;
        slot->deadline = now + PC_METRICS_TIMEOUT_NS;
        slot->rlen = 0;
        return true;
}

static void client_read(struct pc__metrics *m, struct client *c, uint64_t now)
{
        char sink[512];
        ssize_t n;
        int status;

        if (c->state == C_DRAIN) {
                while ((n = read(c->fd, sink, sizeof(sink))) > 0)
                        ;
                if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        client_close(c);
                return;
        }
        n = read(c->fd, c->req + c->rlen, sizeof(c->req) - c->rlen);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                client_close(c);
                return;
        }
        if (n < 0)
                return;
        c->rlen += (size_t)n;
        status = pc__http_route(c->req, c->rlen);
        if (status == 0)
                return;
        if (answer(m, c, status))
                client_close(c);
        (void)now;
}

static void client_write(struct client *c, uint64_t now)
{
        ssize_t n = send(c->fd, c->out + c->off, c->olen - c->off, MSG_NOSIGNAL);

        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        client_close(c);
                return;
        }
        c->off += (size_t)n;
        if (c->off < c->olen)
                return;
        free(c->out);
        c->out = NULL;
        shutdown(c->fd, SHUT_WR);
        c->state = C_DRAIN;
        c->deadline = now + PC_METRICS_LINGER_NS;
}

static void *serve(void *arg)
{
        struct pc__metrics *m = arg;
        struct pollfd pfd[PC_METRICS_CLIENTS + 2];
        int idx[PC_METRICS_CLIENTS + 2];

        for (;;) {
                uint64_t now = pc_now_ns(), next = now + PC_METRICS_TIMEOUT_NS;
                int n = 2, timeout;

                pfd[0] = (struct pollfd){.fd = m->stop_fd, .events = POLLIN};
                pfd[1] = (struct pollfd){.fd = m->lfd, .events = POLLIN};
                for (int i = 0; i < PC_METRICS_CLIENTS; i++) {
                        struct client *c = &m->c[i];
                        if (c->state == C_FREE)
                                continue;
                        if (c->deadline <= now) {
                                client_close(c);
                                continue;
                        }
                        if (c->deadline < next)
                                next = c->deadline;
                        pfd[n] = (struct pollfd){
                                .fd = c->fd,
                                .events = c->state == C_WRITE ? POLLOUT : POLLIN,
                        };
                        idx[n++] = i;
                }
                timeout = (int)((next - now) / 1000000u) + 1;
                if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
                        break;
                if (pfd[0].revents)
                        break;
                now = pc_now_ns();
                for (int k = 2; k < n; k++) {
                        struct client *c = &m->c[idx[k]];
                        if (!pfd[k].revents || c->state == C_FREE)
                                continue;
                        if (c->state == C_WRITE)
                                client_write(c, now);
                        else
                                client_read(m, c, now);
                        /* Answered at once: try to send it now. */
                        if (c->state == C_WRITE)
                                client_write(c, now);
                }
                if (pfd[1].revents & POLLIN)
                        for (int k = 0; k < PC_METRICS_CLIENTS && accept_one(m, now); k++)
                                ;
        }
        for (int i = 0; i < PC_METRICS_CLIENTS; i++)
                if (m->c[i].state != C_FREE)
                        client_close(&m->c[i]);
        return NULL;
}

/* ---- lifecycle -------------------------------------------------------------------- */

int pc__metrics_open(struct pc_runtime *rt, char *err, size_t errlen)
{
        struct sockaddr_storage ss;
        socklen_t sl;
        struct pc__metrics *m;
        int one = 1, rc;

        if (rt->cfg.metrics == NULL)
                return 0;
        if (pc__metrics_addr(rt->cfg.metrics, &ss, &sl)) {
                snprintf(err, errlen,
                         "PERCORE_METRICS='%s' is not valid: expected ADDR:PORT",
                         rt->cfg.metrics);
                return -EINVAL;
        }
        m = calloc(1, sizeof(*m));
        if (m == NULL)
                return -ENOMEM;
        m->rt = rt;
        m->stop_fd = -1;
        m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (m->lfd < 0 ||
            setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
            bind(m->lfd, (struct sockaddr *)&ss, sl) ||
            listen(m->lfd, PC_METRICS_BACKLOG) ||
            getsockname(m->lfd, (struct sockaddr *)&ss, &sl)) {
                rc = -errno;
                snprintf(err, errlen, "PERCORE_METRICS=%s: cannot listen there: %s",
                         rt->cfg.metrics, pc_strerror(rc));
                if (m->lfd >= 0)
                        close(m->lfd);
                free(m);
                return rc;
        }
        m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
        rt->metrics = m;
        pc_log(PC_LOG_INFO, "metrics: GET /metrics on %s (port %u)", rt->cfg.metrics,
               m->port);
        return 0;
}

int pc__metrics_start(struct pc_runtime *rt)
{
        struct pc__metrics *m = rt->metrics;
        int rc;

        if (m == NULL)
                return 0;
        m->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->stop_fd < 0)
                return -errno;
        rc = -pthread_create(&m->thread, NULL, serve, m);
        if (rc) {
                close(m->stop_fd);
                m->stop_fd = -1;
                return rc;
        }
        pthread_setname_np(m->thread, "pc-metrics");
        m->running = true;
        return 0;
}

void pc__metrics_stop(struct pc_runtime *rt)
{
        struct pc__metrics *m = rt->metrics;
        uint64_t one = 1;

        if (m == NULL || !m->running)
                return;
        if (write(m->stop_fd, &one, sizeof(one)) < 0)
                pc_log(PC_LOG_WARN, "metrics: cannot stop the thread: %s",
                       pc_strerror(-errno));
        pthread_join(m->thread, NULL);
        close(m->stop_fd);
        m->stop_fd = -1;
        m->running = false;
}

void pc__metrics_close(struct pc_runtime *rt)
{
        struct pc__metrics *m = rt->metrics;

        if (m == NULL)
                return;
        pc__metrics_stop(rt);
        close(m->lfd);
        free(m);
        rt->metrics = NULL;
}

int pc_runtime_metrics_port(const struct pc_runtime *rt)
{
        if (rt == NULL)
                return -EINVAL;
        return rt->metrics ? rt->metrics->port : -ENOENT;
}
