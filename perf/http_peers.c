/* SPDX-License-Identifier: MIT */
/*
 * nginx and h2o as the http suite runs them; see http_peers.h.
 *
 * nginx (Debian 1.22, nginx-light or nginx): as its users tune it for a
 * benchmark: worker_processes as many as our workers, each pinned by
 * worker_cpu_affinity to one of the server CPUs (the master too, by the
 * process affinity it starts with), access_log off, keepalive_requests so
 * high no connection is closed during a run (it bounds HTTP/2 connections
 * too since 1.19.7), and `return 200 "Hello, World!"` with default_type
 * text/plain, answered from the configuration with no file read. HTTP/2
 * over cleartext needs a listen of its own (`http2` there means prior
 * knowledge only). It runs as the bench's user (root: its workers drop to
 * nobody), as users run it: master_process on, daemon off so it stays the
 * bench's child, its pid file, error log and temporary paths in the
 * directory.
 *
 * h2o (Debian 2.2.5): num-threads as many as our workers, one listen for
 * HTTP/1.1 and h2c. Its configuration has no directive that answers a
 * fixed body (that takes mruby, which Debian's build has but which runs
 * a Ruby handler per request); its users serve a small static file, so
 * `/` maps to a file index.txt holding "Hello, World!" (file.file; h2o
 * types .txt as text/plain and keeps the file open across requests, it
 * adds Last-Modified, ETag and Accept-Ranges). h2o 2.2 has no setting to
 * pin its threads: the whole process gets the server CPUs, as taskset
 * would, and its threads may share them. Started as root it drops to
 * nobody, so the directory is world-readable.
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "child.h"
#include "http_peers.h"
#include "lgen.h"

const char *http_peer_name(enum http_peer_kind kind)
{
        return kind == HTTP_NGINX ? "nginx" : "h2o";
}

/* Write @text to @dir/@name: 0 or -errno. */
static int write_file(const char *dir, const char *name, const char *text)
{
        char path[128];
        FILE *f;
        int rc = 0;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        if (f == NULL)
                return -errno;
        if (fputs(text, f) < 0)
                rc = -EIO;
        if (fclose(f) && rc == 0)
                rc = -errno;
        return rc;
}

/* worker_cpu_affinity's masks: one per worker, bit c set for its CPU c,
 * the lowest CPU rightmost ("10 01" for CPUs 1 and 0). */
static int affinity_masks(const struct lgen_place *place, char *out, size_t len)
{
        size_t at = 0;

        out[0] = '\0';
        for (unsigned w = 0; w < place->workers; w++) {
                int cpu = place->cpus[w];

                if (cpu < 0 || at + (size_t)cpu + 3 > len)
                        return -ERANGE;
                if (w)
                        out[at++] = ' ';
                out[at++] = '1';
                for (int b = cpu - 1; b >= 0; b--)
                        out[at++] = '0';
                out[at] = '\0';
        }
        return 0;
}

static int nginx_config(const struct http_peer *p, const struct lgen_place *place)
{
        char masks[1024], conf[4096];

        if (affinity_masks(place, masks, sizeof(masks)))
                return -ERANGE;
        snprintf(conf, sizeof(conf),
                 "worker_processes %u;\n"
                 "worker_cpu_affinity %s;\n"
                 "master_process on;\n"
                 "daemon off;\n"
                 "pid %s/nginx.pid;\n"
                 "error_log %s/error.log warn;\n"
                 "events {\n"
                 "    worker_connections 4096;\n"
                 "}\n"
                 "http {\n"
                 "    access_log off;\n"
                 "    keepalive_requests 1000000000;\n"
                 "    client_body_temp_path %s/body;\n"
                 "    proxy_temp_path %s/proxy;\n"
                 "    server {\n"
                 "        listen 127.0.0.1:%u;\n"
                 "        listen 127.0.0.1:%u http2;\n"
                 "        location / {\n"
                 "            default_type text/plain;\n"
                 "            return 200 \"Hello, World!\";\n"
                 "        }\n"
                 "    }\n"
                 "}\n",
                 place->workers, masks, p->dir, p->dir, p->dir, p->dir, p->port, p->h2_port);
        return write_file(p->dir, "nginx.conf", conf);
}

static int h2o_config(const struct http_peer *p, const struct lgen_place *place)
{
        char conf[2048];
        int rc = write_file(p->dir, "index.txt", "Hello, World!");

        if (rc)
                return rc;
        snprintf(conf, sizeof(conf),
                 "num-threads: %u\n"
                 "error-log: %s/error.log\n"
                 "listen:\n"
                 "  host: 127.0.0.1\n"
                 "  port: %u\n"
                 "hosts:\n"
                 "  default:\n"
                 "    paths:\n"
                 "      /:\n"
                 "        file.file: %s/index.txt\n",
                 place->workers, p->dir, p->port, p->dir);
        return write_file(p->dir, "h2o.conf", conf);
}

/* Two distinct free ports. */
static int two_ports(struct http_peer *p)
{
        int a = child_free_port(), b = a;

        for (int i = 0; i < 16 && b == a; i++)
                b = child_free_port();
        if (a < 0 || b < 0)
                return a < 0 ? a : b;
        if (a == b)
                return -EADDRINUSE;
        p->port = (uint16_t)a;
        p->h2_port = (uint16_t)b;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

int http_peer_start(enum http_peer_kind kind, const struct lgen_place *place,
                    struct http_peer *p)
{
        char conf[128];
        int rc;

        memset(p, 0, sizeof(*p));
        if (!bench_on_path(http_peer_name(kind))) {
                bench_progress("http: peer:%s skipped: %s is not installed (Debian: %s)",
                               http_peer_name(kind), http_peer_name(kind),
                               kind == HTTP_NGINX ? "nginx-light" : "h2o");
                return -ENOTSUP;
        }
        rc = two_ports(p);
        if (rc)
                return rc;
        snprintf(p->dir, sizeof(p->dir), "/tmp/percore-bench-%s-XXXXXX", http_peer_name(kind));
        if (mkdtemp(p->dir) == NULL) {
                p->dir[0] = '\0';
                return -errno;
        }
        /* h2o's threads run as nobody and read index.txt from here. */
        if (chmod(p->dir, 0755))
                rc = -errno;
        if (rc == 0)
                rc = kind == HTTP_NGINX ? nginx_config(p, place) : h2o_config(p, place);
        if (rc) {
                http_peer_stop(p);
                return rc;
        }
        snprintf(conf, sizeof(conf), "%s/%s.conf", p->dir, http_peer_name(kind));
        if (kind == HTTP_NGINX) {
                char *argv[] = {"nginx", "-p", p->dir, "-c", conf, NULL};

                p->pid = child_spawn(argv, NULL, place->server_cpus);
        } else {
                char *argv[] = {"h2o", "-c", conf, NULL};

                p->pid = child_spawn(argv, NULL, place->server_cpus);
        }
        if (p->pid < 0) {
                rc = p->pid;
                p->pid = 0;
                http_peer_stop(p);
                return rc;
        }
        rc = child_wait_port(p->port, p->pid);
        if (rc == 0 && kind == HTTP_NGINX)
                rc = child_wait_port(p->h2_port, p->pid);
        if (kind == HTTP_H2O)
                p->h2_port = p->port;
        if (rc) {
                bench_progress("http: %s did not start (%s; its log: %s/error.log)",
                               http_peer_name(kind), pc_strerror(rc), p->dir);
                if (rc != -ECHILD)
                        child_stop(p->pid);
                p->pid = 0;
                /* Its log stays for the reader. */
                p->dir[0] = '\0';
        }
        return rc;
}

void http_peer_stop(struct http_peer *p)
{
        if (p->pid > 0)
                child_stop(p->pid);
        p->pid = 0;
        if (p->dir[0])
                nftw(p->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
        p->dir[0] = '\0';
}
