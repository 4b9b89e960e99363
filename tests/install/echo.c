/* SPDX-License-Identifier: MIT */
/*
 * A minimal network service on the installed library: TCP echo on one
 * SO_REUSEPORT listener per worker (kernel backend). A plain client
 * thread sends four bytes, reads them back and stops the runtime. The README
 * shows this file; the install test builds and runs it.
 */
#include <arpa/inet.h>
#include <pc_knet.h>
#include <percore.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct pc_runtime *rt;
static uint16_t port;

/* Runs on the worker that accepted the connection, and only there. */
static void on_data(struct pc_conn *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (len)
                pc_conn_send(c, data, len); /* -ENOBUFS would mean: slow reader */
}

static void *client(void *arg)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        char buf[64] = "";
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        ssize_t n = 0;

        (void)arg;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            send(fd, "ping", 4, 0) == 4)
                n = recv(fd, buf, 4, MSG_WAITALL);
        printf("echoed: %.*s\n", n > 0 ? (int)n : 0, buf);
        if (fd >= 0)
                close(fd);
        pc_runtime_stop(rt);
        return NULL;
}

static void start(void *arg)
{
        (void)arg; /* nothing to spawn: the listeners serve on their own */
}

int main(void)
{
        static const struct pc_tcp_callbacks cb = {.on_data = on_data};
        struct pc_tcp_listener *l;
        pthread_t t;
        int rc = pc_runtime_create(NULL, &rt);

        if (rc == 0)
                rc = pc_tcp_listen_kernel(rt, "127.0.0.1", 0, &cb, NULL, &l); /* 0: any free port */
        if (rc) {
                fprintf(stderr, "%s\n", pc_strerror(rc));
                return 1;
        }
        port = pc_tcp_listener_port(l);
        /* The client may connect before the run: the listeners' backlog holds it. */
        if (pthread_create(&t, NULL, client, NULL)) {
                pc_runtime_destroy(rt);
                return 1;
        }
        pc_runtime_run(rt, start, NULL); /* until the client stops it */
        pthread_join(t, NULL);
        pc_runtime_destroy(rt);
        return 0;
}
