/* SPDX-License-Identifier: MIT */
/*
 * What the http suite's clients print, read back: wrk 4.1's summary (with
 * --latency) and h2load's (nghttp2 1.52). Pure functions over the text,
 * so the tests feed them outputs captured from the real tools.
 */
#ifndef PC_BENCH_HTTP_OUT_H
#define PC_BENCH_HTTP_OUT_H

#include <stdbool.h>

/* wrk's figures. With a pipelining script wrk times a whole batch (from
 * its first request sent to its last response), so p99 is a batch's. */
struct wrk_out {
        double requests;      /* "N requests in T" */
        double seconds;       /* that T */
        double req_per_sec;   /* "Requests/sec:" */
        double p99_us;        /* the 99% line of "Latency Distribution" */
        double non_2xx;       /* "Non-2xx or 3xx responses:", 0 when absent */
        double sock_errors;   /* connect + read + write of "Socket errors:" */
        double timeouts;      /* its timeout count */
};

/*
 * Read wrk's output @out into @r. Returns 0, or -EPROTO when a figure the
 * bench needs (requests, time, requests/sec, the 99 % line) is missing or
 * unreadable. Errors the run reported are returned in @r, not judged
 * here. Any thread.
 */
int wrk_out_parse(const char *out, struct wrk_out *r);

/* h2load's figures. It prints no percentiles: mean_us is the mean of its
 * "time for request" line. */
struct h2load_out {
        double seconds;     /* "finished in T" */
        double req_per_sec; /* the req/s after it */
        double total, done, succeeded, failed, errored, timeouts; /* "requests:" */
        double mean_us;     /* "time for request:" mean */
        bool h2c;           /* "Application protocol: h2c" */
};

/* Read h2load's output @out into @r: 0, or -EPROTO when its "finished",
 * "requests:" or "time for request:" line is missing or unreadable. Any
 * thread. */
int h2load_out_parse(const char *out, struct h2load_out *r);

/* @s, a number with a time unit as wrk and h2load print one ("1.68ms",
 * "392.00us", "1.02s", "2.00m"), in microseconds; *@end (may be NULL)
 * past the unit. Returns -1 for no number or an unknown unit. */
double http_out_time_us(const char *s, const char **end);

#endif
