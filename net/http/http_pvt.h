/* SPDX-License-Identifier: MIT */
/*
 * Private to net/http. Three layers, after h2o's lib/http1.c: the parser
 * wrapper (h1_parse.c: libhttp-parser plus our limits, pure over byte
 * buffers, so unit tests and the fuzz target drive it without a
 * network), the connection (h1_conn.c: the fiber's read/parse/dispatch
 * loop, timeouts, lingering close) and response writing (h1_out.c). A
 * connection reaches its protocol through a struct pc__http_proto, so a
 * second protocol (HTTP/2) serves the same requests, responses and
 * routes with its own framing. Not part of the API.
 */
#ifndef PC_HTTP_PVT_H
#define PC_HTTP_PVT_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "pc_http.h"

struct pc_runtime;
struct pc_fiber;

/* ---- The parser wrapper (h1_parse.c) ---------------------------------------- */

/* Where a piece of the head lies in the connection's input buffer. */
struct pc__h1span {
        uint32_t off, len;
};

struct pc__h1hdr {
        struct pc__h1span name, value;
};

/* What pc__h1p_feed() found. */
enum pc__h1ev {
        PC__H1_MORE,  /* everything was taken; a request needs more bytes */
        PC__H1_DONE,  /* a whole request is parsed (the parser pauses) */
        PC__H1_ERROR, /* refused: @status says how to answer */
};

/* The limits the wrapper applies (a copy of the server's options'). */
struct pc__h1lim {
        size_t max_head, max_uri, max_body;
        unsigned max_headers;
};

struct pc__h1p {
        http_parser p;
        struct pc__h1lim lim;
        const char *base; /* the buffer offsets refer to, during a feed */
        size_t start;     /* where the current request's bytes begin */
        size_t head_bytes; /* of the current head, fed so far */
        struct pc__h1span url;
        struct pc__h1hdr hdr[PC_HTTP_MAX_HEADERS];
        unsigned nhdr;     /* kept (at most max_headers) */
        unsigned lines;    /* seen */
        uint8_t last;      /* the previous callback: 0 none, 1 field, 2 value */
        bool in_msg;       /* a request has begun */
        bool line_done;    /* its request line was complete */
        bool head_done;    /* its head was */
        bool msg_done;     /* and all of it */
        bool scan_method;  /* the parser refused the method: we look at it */
        bool expect_continue;
        bool keep_alive;
        unsigned method;   /* PC_HTTP_* (0 before the head is done) */
        int version;       /* 10 or 11 */
        int status;        /* the answer to a refused request */
        char *body;        /* the body, dechunked, malloc()ed */
        size_t body_len, body_cap;
};

/* Set @h up (zeroed or not) with @lim. */
void pc__h1p_init(struct pc__h1p *h, const struct pc__h1lim *lim);
/* Free what @h holds (the body). */
void pc__h1p_fini(struct pc__h1p *h);
/* Ready for the next request, starting at offset @start of the buffer
 * (keeps the body's memory when it is small). */
void pc__h1p_next(struct pc__h1p *h, size_t start);
/* Parse @base[@from, @to): *@used gets how many bytes were taken (all of
 * them unless DONE, when the rest belongs to the next request). Offsets in
 * @h are relative to @base; bytes of the head must stay where they are
 * until the request is answered, body bytes need not (they are copied).
 * Once ERROR, it stays so until pc__h1p_next(). */
enum pc__h1ev pc__h1p_feed(struct pc__h1p *h, const char *base, size_t from, size_t to,
                           size_t *used);

/* ---- Requests, responses, connections ---------------------------------------- */

struct pc__http_conn;

struct pc_http_req {
        struct pc__http_conn *conn;
        unsigned method;
        int version;
        struct pc_http_slice target, path, query, body;
        struct pc_http_slice (*hdr)[2]; /* name, value */
        unsigned nhdr;
};

/* A body piece: copied (@off into the response's buffer) or by reference. */
struct pc__piece {
        const char *p; /* NULL: copied, at @off */
        size_t off, len;
        pc_conn_ref_fn done;
        void *arg;
};

#define PC__RESP_PIECES 64
#define PC__RESP_HDR_MAX 8192

struct pc_http_resp {
        struct pc__http_conn *conn;
        int status;
        bool in_handler; /* the handler's call is running */
        bool later;      /* it returned PC_HTTP_LATER */
        bool sent;       /* complete: nothing more may be added */
        bool streaming;  /* chunked: the head has gone */
        bool head_only;  /* a HEAD request: no body bytes */
        bool close;      /* Connection: close */
        char *hdrs;      /* "Name: value\r\n"... */
        size_t hlen, hcap;
        char *buf;       /* copied body bytes */
        size_t blen, bcap;
        struct pc__piece piece[PC__RESP_PIECES];
        unsigned npiece;
        uint64_t body_out; /* body bytes sent, for the access log */
        struct pc_fiber *waiter; /* the connection's fiber, waiting for a later answer */
};

/* A connection's protocol: how a response goes out in its framing. */
struct pc__http_proto {
        const char *name;
        /* The response is complete (pc_http_resp_send()/end()). */
        int (*send)(struct pc_http_resp *r);
        /* One chunk of a streamed body (@len 0 with @last: the end). */
        int (*chunk)(struct pc_http_resp *r, const void *data, size_t len, bool last);
        /* The whole response with @len bytes of @fd from @off as its body
         * (@fd -1: none, as for a 304), read as the client takes it. */
        int (*file)(struct pc_http_resp *r, int fd, off_t off, size_t len);
};

/* A worker's counters: written by the worker, read anywhere (relaxed). */
struct pc__http_wstat {
        _Alignas(64) uint64_t responses[5];
        uint64_t bytes_in, bytes_out, conns_open, conns_total, parse_errors, timeouts;
};

/* A route; exact ones before prefixes, longer prefixes first. */
struct pc__route {
        char *path;
        size_t len;
        bool prefix;
        unsigned methods;
        pc_http_handler_fn fn;
        void *arg;
};

struct pc__http_conn_list {
        struct pc__http_conn *head;
};

struct pc_http_server {
        struct pc_runtime *rt;
        struct pc_http_opts o;
        struct pc__h1lim lim;
        struct pc__route *routes;
        unsigned nroutes;
        void **statics; /* pc_http_static()'s roots, freed with the server */
        unsigned nstatics;
        struct pc__http_wstat *ws;             /* per worker */
        struct pc__http_conn_list *conns;      /* per worker: open connections */
        void *module;                          /* core's struct pc__module */
};

struct pc__http_conn {
        const struct pc__http_proto *proto;
        struct pc_http_server *srv;
        struct pc_conn *c;
        struct pc__http_wstat *ws;
        struct pc__http_conn *next, *prev; /* the worker's list */
        bool failed;     /* writing failed: the connection ends */
        bool close;      /* end after this response */
        int err;
        /* HTTP/1.1 */
        struct pc__h1p h;
        char *in;        /* input: [0, parsed) is the head being answered */
        size_t in_len, in_cap, parsed;
        char *out;       /* responses gathered, not yet written */
        size_t out_len, out_cap;
        struct pc_http_req req;
        struct pc_http_resp resp;
        struct pc_http_slice hdr[PC_HTTP_MAX_HEADERS][2];
};

/* server.c */
/* The worker's Date header value and access-log time, formatted at most
 * once a second per worker. */
const char *pc__http_date(void);
const char *pc__http_clf_date(void);
/* Route @req: the handler and its argument, or a status (404, 405 with
 * *@allow the methods that would be served). */
int pc__http_route_find(const struct pc_http_server *s, const struct pc_http_req *req,
                        pc_http_handler_fn *fn, void **arg, unsigned *allow);
/* Count a response of @status and log it if the server logs. */
void pc__http_done(struct pc__http_conn *hc, const struct pc_http_req *req, int status,
                   uint64_t body_bytes);
/* The reason phrase of @status. */
const char *pc__http_reason(int status);
static inline void pc__http_inc(uint64_t *c, uint64_t n)
{
        __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
/* The method bit's name ("GET"), NULL for none. */
const char *pc__http_method_name(unsigned m);

/* resp.c */
void pc__http_resp_reset(struct pc_http_resp *r, struct pc__http_conn *hc, bool head_only);
/* Run the done() of every piece by reference (sent or dropped). */
void pc__http_resp_release(struct pc_http_resp *r);
void pc__http_resp_fini(struct pc_http_resp *r);
/* Send @r with a file's bytes as its body (struct pc__http_proto's file).
 * In the handler only: -EPERM elsewhere. */
int pc__http_resp_file(struct pc_http_resp *r, int fd, off_t off, size_t len);

/* h1_out.c */
extern const struct pc__http_proto pc__h1_proto;
/* Gather @len bytes in hc->out. 0 or -ENOMEM (the connection fails). */
int pc__h1_out_add(struct pc__http_conn *hc, const void *p, size_t len);
/* Write what is gathered in hc->out; 0 or the connection's error. */
int pc__h1_flush(struct pc__http_conn *hc);
/* Answer @status with a short body of its own, Connection: close. */
int pc__h1_error(struct pc__http_conn *hc, int status);

#endif /* PC_HTTP_PVT_H */
