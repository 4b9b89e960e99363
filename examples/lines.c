/* SPDX-License-Identifier: MIT */
/*
 * A line service on percore, the complete example of docs/service.md: each
 * connection is served by a fiber that reads lines and answers each with
 * "<n> <line>\n" (n counting the connection's lines); "quit" ends the
 * connection after its answer. It shows what a real service needs:
 *
 *   - an idle timeout (a client that sends nothing for IDLE_S seconds is
 *     told so and closed);
 *   - a bound on what one client can make the server hold (a line longer
 *     than LINE_MAX is answered with an error and the connection closed);
 *   - an access log line per connection with the peer's address;
 *   - a graceful stop: SIGTERM stops accepting, lets open connections
 *     finish for up to DRAIN_S seconds, then stops; a second SIGTERM or a
 *     SIGINT stops at once.
 *
 *   lines [ADDR] [PORT]        default 127.0.0.1 7000, the kernel backend
 *
 * Build against the installed library:
 *   cc -O2 -o lines lines.c $(pkg-config --cflags --libs percore)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pc_knet.h>
#include <percore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_S 30
#define DRAIN_S 5
#define LINE_MAX 1024

/* "1.2.3.4:5678" or "[::1]:5678" of @ss into @out. */
static void addr_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *a = (const void *)ss;

                inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
                port = ntohs(a->sin_port);
                snprintf(out, len, "%s:%u", host, port);
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const void *)ss;

                inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
                port = ntohs(a->sin6_port);
                snprintf(out, len, "[%s]:%u", host, port);
        } else {
                snprintf(out, len, "?");
        }
}

/* Answer one line: the count, a space, the line, a newline, gathered from
 * three pieces without copying them into one buffer. */
static ssize_t answer(struct pc_conn *c, unsigned long n, const char *line, size_t len)
{
        char num[24];
        struct iovec iov[3];

        iov[0].iov_base = num;
        iov[0].iov_len = (size_t)snprintf(num, sizeof(num), "%lu ", n);
        iov[1].iov_base = (void *)line;
        iov[1].iov_len = len;
        iov[2].iov_base = "\n";
        iov[2].iov_len = 1;
        return pc_conn_writev(c, iov, 3);
}

/* One connection, in a fiber of its own on the worker that accepted it. */
static void serve(struct pc_conn *c, void *arg)
{
        char buf[LINE_MAX], who[64];
        struct sockaddr_storage peer;
        unsigned long lines = 0;
        size_t have = 0;
        const char *why = "closed by peer";

        (void)arg;
        if (pc_conn_peer(c, &peer) == 0)
                addr_text(&peer, who, sizeof(who));
        else
                snprintf(who, sizeof(who), "?");
        pc_conn_set_timeout(c, (uint64_t)IDLE_S * 1000000000u);
        for (;;) {
                ssize_t n = pc_conn_read(c, buf + have, sizeof(buf) - have);
                char *nl;

                if (n == -ETIMEDOUT) {
                        static const char msg[] = "idle too long, bye\n";

                        pc_conn_write(c, msg, sizeof(msg) - 1);
                        why = "idle";
                        break;
                }
                if (n <= 0) {
                        if (n < 0)
                                why = pc_strerror((int)n); /* reset, or the run stopping */
                        break;
                }
                have += (size_t)n;
                /* Answer every whole line in the buffer. */
                while ((nl = memchr(buf, '\n', have)) != NULL) {
                        size_t len = (size_t)(nl - buf), rest = have - len - 1;
                        bool quit;

                        if (len && buf[len - 1] == '\r')
                                len--;
                        quit = len == 4 && memcmp(buf, "quit", 4) == 0;
                        if (answer(c, ++lines, buf, len) < 0 || quit) {
                                why = quit ? "quit" : "write failed";
                                goto out;
                        }
                        memmove(buf, nl + 1, rest);
                        have = rest;
                }
                if (have == sizeof(buf)) {
                        static const char msg[] = "line too long\n";

                        pc_conn_write(c, msg, sizeof(msg) - 1);
                        why = "line too long";
                        break;
                }
        }
out:
        printf("worker %d: %s: %lu lines, %s\n", pc_worker_id(), who, lines, why);
        /* Returning closes the connection; what was written is still sent. */
}

static void start(void *arg)
{
        (void)arg; /* the listener serves on its own: nothing to spawn */
}

int main(int argc, char **argv)
{
        const char *addr = argc > 1 ? argv[1] : "127.0.0.1";
        long port = argc > 2 ? strtol(argv[2], NULL, 10) : 7000;
        struct pc_runtime *rt;
        struct pc_tcp_listener *l;
        int rc;

        if (port < 0 || port > 65535) {
                fprintf(stderr, "lines: bad port %s\n", argv[2]);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        rc = pc_runtime_create(NULL, &rt);
        if (rc) {
                fprintf(stderr, "lines: %s\n", pc_strerror(rc));
                return 1;
        }
        rc = pc_tcp_serve_kernel(rt, addr, (uint16_t)port, serve, NULL, &l);
        if (rc == 0)
                rc = pc_runtime_drain_on_signals(rt, (uint64_t)DRAIN_S * 1000000000u);
        if (rc) {
                fprintf(stderr, "lines: %s:%ld: %s\n", addr, port, pc_strerror(rc));
                pc_runtime_destroy(rt);
                return 1;
        }
        printf("lines: serving %s:%u on %u workers\n", addr, pc_tcp_listener_port(l),
               pc_runtime_workers(rt));
        rc = pc_runtime_run(rt, start, NULL);
        printf("lines: stopped\n");
        pc_runtime_destroy(rt);
        return rc ? 1 : 0;
}
