/* SPDX-License-Identifier: MIT */
/*
 * The server: options, routes, the per-worker Date header, counters (read
 * by pc_http_server_stats() and the runtime's Prometheus metrics through
 * a module hook) and the access log.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_pvt.h"
#include "pc_module_pvt.h"
#include "percore.h"

#define S_NS 1000000000ull

void pc_http_opts_init(struct pc_http_opts *o)
{
        *o = (struct pc_http_opts){
                .max_head = 16 * 1024,
                .max_uri = 8 * 1024,
                .max_body = 1024 * 1024,
                .max_headers = 64,
                .head_timeout_ns = 10 * S_NS,
                .body_timeout_ns = 30 * S_NS,
                .idle_timeout_ns = 5 * S_NS,
                .write_timeout_ns = 30 * S_NS,
                .linger_ns = 2 * S_NS,
                .linger_bytes = 1024 * 1024,
                .access_log = NULL,
        };
}

/* ---- Metrics ------------------------------------------------------------- */

static void sum_into(struct pc_http_stats *out, const struct pc__http_wstat *w)
{
        for (int i = 0; i < 5; i++)
                out->responses[i] += __atomic_load_n(&w->responses[i], __ATOMIC_RELAXED);
        out->bytes_in += __atomic_load_n(&w->bytes_in, __ATOMIC_RELAXED);
        out->bytes_out += __atomic_load_n(&w->bytes_out, __ATOMIC_RELAXED);
        out->conns_open += __atomic_load_n(&w->conns_open, __ATOMIC_RELAXED);
        out->conns_total += __atomic_load_n(&w->conns_total, __ATOMIC_RELAXED);
        out->parse_errors += __atomic_load_n(&w->parse_errors, __ATOMIC_RELAXED);
        out->timeouts += __atomic_load_n(&w->timeouts, __ATOMIC_RELAXED);
}

int pc_http_server_stats(const struct pc_http_server *s, uint32_t worker,
                         struct pc_http_stats *out)
{
        unsigned n;

        if (s == NULL || out == NULL)
                return -EINVAL;
        n = pc_runtime_workers(s->rt);
        if (worker != UINT32_MAX && worker >= n)
                return -EINVAL;
        memset(out, 0, sizeof(*out));
        for (unsigned w = 0; w < n; w++)
                if (worker == UINT32_MAX || worker == w)
                        sum_into(out, &s->ws[w]);
        return 0;
}

/* The runtime's hooks. The module outlives the server or not, whichever
 * is freed first: pc_http_server_destroy() and the runtime's destroy
 * each cut the link to the other. */
struct http_module {
        struct pc__module m;
        struct pc_http_server *s;
};

static void http_metrics(struct pc_runtime *rt, struct pc__prom *p, void *arg)
{
        static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
        static const struct {
                const char *name, *type, *help;
                size_t off;
        } fam[] = {
#define F(n, t, f, h) {"percore_http_" n, t, h, offsetof(struct pc_http_stats, f)}
                F("received_bytes_total", "counter", bytes_in, "HTTP request bytes read."),
                F("sent_bytes_total", "counter", bytes_out, "HTTP response bytes written."),
                F("connections", "gauge", conns_open, "HTTP connections open."),
                F("connections_total", "counter", conns_total, "HTTP connections served."),
                F("parse_errors_total", "counter", parse_errors,
                  "Requests refused as malformed or over a limit."),
                F("timeouts_total", "counter", timeouts,
                  "Connections ended by a head, body or keep-alive timeout."),
#undef F
        };
        struct pc_http_server *s = ((struct http_module *)arg)->s;
        unsigned n = pc_runtime_workers(rt);

        if (s == NULL)
                return;
        pc__prom_family(p, "percore_http_responses_total", "counter",
                        "HTTP responses by status class.");
        for (unsigned w = 0; w < n; w++) {
                struct pc_http_stats st;
                char wid[16];

                pc_http_server_stats(s, w, &st);
                snprintf(wid, sizeof(wid), "%u", w);
                for (int c = 0; c < 5; c++) {
                        const char *labels[] = {"worker", wid, "class", classes[c]};

                        pc__prom_u64(p, "percore_http_responses_total", labels, 2,
                                     st.responses[c]);
                }
        }
        for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
                pc__prom_family(p, fam[f].name, fam[f].type, fam[f].help);
                for (unsigned w = 0; w < n; w++) {
                        struct pc_http_stats st;

                        pc_http_server_stats(s, w, &st);
                        pc__prom_worker_u64(p, fam[f].name, w,
                                            *(const uint64_t *)((const char *)&st + fam[f].off));
                }
        }
}

/* The run stops: a fiber waiting for a later answer will not get one. */
static void http_stopping(struct pc_worker *w, void *arg)
{
        struct pc_http_server *s = ((struct http_module *)arg)->s;
        int id = pc_worker_id();

        (void)w;
        if (s == NULL || id < 0)
                return;
        for (struct pc__http_conn *hc = s->conns[id].head; hc; hc = hc->next)
                if (hc->resp.waiter)
                        pc__fiber_wake(hc->resp.waiter, -ECANCELED);
}

static void http_module_destroy(struct pc_runtime *rt, void *arg)
{
        struct http_module *mod = arg;

        (void)rt;
        if (mod->s)
                mod->s->module = NULL;
        free(mod);
}

int pc_http_server_create(struct pc_runtime *rt, const struct pc_http_opts *o,
                          struct pc_http_server **out)
{
        struct pc_http_server *s;
        struct http_module *mod;
        unsigned n;

        if (rt == NULL || out == NULL)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (s == NULL)
                return -ENOMEM;
        if (o)
                s->o = *o;
        else
                pc_http_opts_init(&s->o);
        o = &s->o;
        if (!o->max_head || !o->max_uri || !o->max_body || !o->max_headers ||
            o->max_headers > PC_HTTP_MAX_HEADERS || !o->head_timeout_ns ||
            !o->body_timeout_ns || !o->idle_timeout_ns || !o->write_timeout_ns || !o->linger_ns || !o->linger_bytes ||
            o->max_head > UINT32_MAX / 2) {
                free(s);
                return -EINVAL;
        }
        s->rt = rt;
        s->lim = (struct pc__h1lim){o->max_head, o->max_uri, o->max_body, o->max_headers};
        n = pc_runtime_workers(rt);
        s->ws = aligned_alloc(64, sizeof(*s->ws) * n);
        s->conns = calloc(n, sizeof(*s->conns));
        mod = calloc(1, sizeof(*mod));
        if (s->ws == NULL || s->conns == NULL || mod == NULL) {
                free(s->ws);
                free(s->conns);
                free(mod);
                free(s);
                return -ENOMEM;
        }
        memset(s->ws, 0, sizeof(*s->ws) * n);
        mod->s = s;
        mod->m.arg = mod;
        mod->m.metrics = http_metrics;
        mod->m.worker_stopping = http_stopping;
        mod->m.destroy = http_module_destroy;
        pc__module_add(rt, &mod->m);
        s->module = mod;
        *out = s;
        return 0;
}

void pc_http_server_destroy(struct pc_http_server *s)
{
        if (s == NULL)
                return;
        if (s->module)
                ((struct http_module *)s->module)->s = NULL;
        for (unsigned i = 0; i < s->nroutes; i++)
                free(s->routes[i].path);
        for (unsigned i = 0; i < s->nstatics; i++)
                free(s->statics[i]);
        free(s->statics);
        free(s->routes);
        free(s->conns);
        free(s->ws);
        free(s);
}

/* ---- Routes -------------------------------------------------------------- */

int pc_http_route(struct pc_http_server *s, unsigned methods, const char *path,
                  pc_http_handler_fn fn, void *arg)
{
        struct pc__route *r, nr;
        size_t len;

        if (s == NULL || path == NULL || fn == NULL || path[0] != '/' || methods == 0 ||
            (methods & ~(2u * PC_HTTP_PATCH - 1)))
                return -EINVAL;
        len = strlen(path);
        nr = (struct pc__route){.len = len, .methods = methods, .fn = fn, .arg = arg};
        if (path[len - 1] == '*') {
                nr.prefix = true;
                nr.len--;
        }
        for (unsigned i = 0; i < s->nroutes; i++)
                if (s->routes[i].prefix == nr.prefix && s->routes[i].len == nr.len &&
                    memcmp(s->routes[i].path, path, nr.len) == 0 &&
                    (s->routes[i].methods & methods))
                        return -EEXIST;
        nr.path = strndup(path, nr.len);
        r = realloc(s->routes, sizeof(*r) * (s->nroutes + 1));
        if (nr.path == NULL || r == NULL) {
                free(nr.path);
                if (r)
                        s->routes = r;
                return -ENOMEM;
        }
        s->routes = r;
        s->routes[s->nroutes++] = nr;
        return 0;
}

static bool matches(const struct pc__route *r, struct pc_http_slice path)
{
        if (r->prefix)
                return path.len >= r->len && memcmp(path.p, r->path, r->len) == 0;
        return path.len == r->len && memcmp(path.p, r->path, r->len) == 0;
}

/* The best route for @path among those serving @m: exact first, then the
 * longest prefix. */
static const struct pc__route *best(const struct pc_http_server *s, struct pc_http_slice path,
                                    unsigned m)
{
        const struct pc__route *b = NULL;

        for (unsigned i = 0; i < s->nroutes; i++) {
                const struct pc__route *r = &s->routes[i];

                if (!(r->methods & m) || !matches(r, path))
                        continue;
                if (b == NULL || (b->prefix && !r->prefix) ||
                    (b->prefix == r->prefix && r->len > b->len))
                        b = r;
        }
        return b;
}

int pc__http_route_find(const struct pc_http_server *s, const struct pc_http_req *req,
                        pc_http_handler_fn *fn, void **arg, unsigned *allow)
{
        const struct pc__route *r = best(s, req->path, req->method);

        if (r == NULL && req->method == PC_HTTP_HEAD)
                r = best(s, req->path, PC_HTTP_GET);
        if (r) {
                *fn = r->fn;
                *arg = r->arg;
                return 0;
        }
        *allow = 0;
        for (unsigned i = 0; i < s->nroutes; i++)
                if (matches(&s->routes[i], req->path))
                        *allow |= s->routes[i].methods;
        if (*allow & PC_HTTP_GET)
                *allow |= PC_HTTP_HEAD;
        return *allow ? 405 : 404;
}

/* ---- Dates, reasons, the access log --------------------------------------- */

/* The worker's formatted times: each worker is a thread, so a thread's
 * copy is a worker's, and it is formatted once in the second it changes. */
static _Thread_local struct {
        time_t sec;
        char http[40], clf[40];
} dates;

static void dates_now(void)
{
        struct timespec ts;
        struct tm tm;

        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        if (ts.tv_sec == dates.sec && dates.http[0])
                return;
        dates.sec = ts.tv_sec;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(dates.http, sizeof(dates.http), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        strftime(dates.clf, sizeof(dates.clf), "%d/%b/%Y:%H:%M:%S +0000", &tm);
}

const char *pc__http_date(void)
{
        dates_now();
        return dates.http;
}

const char *pc__http_clf_date(void)
{
        dates_now();
        return dates.clf;
}

const char *pc__http_method_name(unsigned m)
{
        switch (m) {
        case PC_HTTP_GET: return "GET";
        case PC_HTTP_HEAD: return "HEAD";
        case PC_HTTP_POST: return "POST";
        case PC_HTTP_PUT: return "PUT";
        case PC_HTTP_DELETE: return "DELETE";
        case PC_HTTP_OPTIONS: return "OPTIONS";
        case PC_HTTP_PATCH: return "PATCH";
        default: return NULL;
        }
}

const char *pc__http_reason(int status)
{
        switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 206: return "Partial Content";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 304: return "Not Modified";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 416: return "Range Not Satisfiable";
        case 417: return "Expectation Failed";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return status < 300 ? "OK" : status < 400 ? "Redirect" : status < 500 ? "Client Error" : "Server Error";
        }
}

static void log_line(struct pc__http_conn *hc, const struct pc_http_req *req, int status,
                     uint64_t body)
{
        char host[INET6_ADDRSTRLEN] = "-";
        struct sockaddr_storage ss;

        if (pc_conn_peer(hc->c, &ss) == 0) {
                if (ss.ss_family == AF_INET)
                        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host,
                                  sizeof(host));
                else if (ss.ss_family == AF_INET6)
                        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host,
                                  sizeof(host));
        }
        if (req && req->method)
                fprintf(hc->srv->o.access_log, "%s - - [%s] \"%s %.*s HTTP/1.%d\" %d %llu\n", host,
                        pc__http_clf_date(), pc__http_method_name(req->method),
                        (int)req->target.len, req->target.p, req->version == 11, status,
                        (unsigned long long)body);
        else
                fprintf(hc->srv->o.access_log, "%s - - [%s] \"-\" %d %llu\n", host,
                        pc__http_clf_date(), status, (unsigned long long)body);
}

void pc__http_done(struct pc__http_conn *hc, const struct pc_http_req *req, int status,
                   uint64_t body_bytes)
{
        int c = status / 100 - 1;

        if (c >= 0 && c < 5)
                pc__http_inc(&hc->ws->responses[c], 1);
        if (hc->srv->o.access_log)
                log_line(hc, req, status, body_bytes);
}
