/* SPDX-License-Identifier: MIT */
/* wrk's and h2load's summaries, read back; see http_out.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_out.h"

double http_out_time_us(const char *s, const char **end)
{
        static const struct {
                const char *unit;
                double us;
        } units[] = {{"us", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6}};
        char *p;
        double v = strtod(s, &p);

        if (p == s)
                return -1;
        /* "ms" before "m" and "s": the longest unit that matches. */
        for (unsigned i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                size_t n = strlen(units[i].unit);

                if (strncmp(p, units[i].unit, n) == 0 && (p[n] < 'a' || p[n] > 'z')) {
                        if (end)
                                *end = p + n;
                        return v * units[i].us;
                }
        }
        return -1;
}

/* The number after the first @label in @out, or -1 when absent. */
static double after(const char *out, const char *label)
{
        const char *p = strstr(out, label);
        char *end;
        double v;

        if (p == NULL)
                return -1;
        p += strlen(label);
        v = strtod(p, &end);
        return end == p ? -1 : v;
}

/* The number after @label in the line @line (up to its newline). */
static double in_line(const char *line, const char *label)
{
        const char *nl = strchr(line, '\n'), *p = strstr(line, label);

        if (p == NULL || (nl && p > nl))
                return -1;
        return after(p, label);
}

/* The count before @word (" done,"), in the line at @line. */
static double count_before(const char *line, const char *word)
{
        const char *nl = strchr(line, '\n'), *p = strstr(line, word), *q;

        if (p == NULL || (nl && p > nl))
                return -1;
        q = p;
        while (q > line && q[-1] >= '0' && q[-1] <= '9')
                q--;
        return q == p ? -1 : strtod(q, NULL);
}

int wrk_out_parse(const char *out, struct wrk_out *r)
{
        const char *p = strstr(out, " requests in "), *line = p, *q, *dist;
        double v;

        memset(r, 0, sizeof(*r));
        if (p == NULL)
                return -EPROTO;
        while (line > out && line[-1] != '\n')
                line--;
        r->requests = count_before(line, " requests in ");
        r->seconds = http_out_time_us(p + strlen(" requests in "), NULL) / 1e6;
        r->req_per_sec = after(out, "Requests/sec:");
        /* The 99% line of the distribution (not "99.xx%" of the thread
         * stats' "+/- Stdev" column, which comes before it). */
        dist = strstr(out, "Latency Distribution");
        q = dist ? strstr(dist, " 99%") : NULL;
        r->p99_us = q ? http_out_time_us(q + 4 + strspn(q + 4, " "), NULL) : -1;
        if (r->requests < 0 || r->seconds <= 0 || r->req_per_sec < 0 || r->p99_us < 0)
                return -EPROTO;
        v = after(out, "Non-2xx or 3xx responses:");
        r->non_2xx = v > 0 ? v : 0;
        p = strstr(out, "Socket errors:");
        if (p) {
                double c = in_line(p, "connect "), rd = in_line(p, "read "),
                       w = in_line(p, "write "), t = in_line(p, "timeout ");

                if (c < 0 || rd < 0 || w < 0 || t < 0)
                        return -EPROTO;
                r->sock_errors = c + rd + w;
                r->timeouts = t;
        }
        return 0;
}

int h2load_out_parse(const char *out, struct h2load_out *r)
{
        const char *fin = strstr(out, "finished in "), *req = strstr(out, "\nrequests: "),
                   *tfr = strstr(out, "time for request:"), *p;

        memset(r, 0, sizeof(*r));
        if (fin == NULL || req == NULL || tfr == NULL)
                return -EPROTO;
        r->seconds = http_out_time_us(fin + strlen("finished in "), &p) / 1e6;
        r->req_per_sec = r->seconds >= 0 && *p == ',' ? after(p, ", ") : -1;
        req++;
        r->total = count_before(req, " total,");
        r->done = count_before(req, " done,");
        r->succeeded = count_before(req, " succeeded,");
        r->failed = count_before(req, " failed,");
        r->errored = count_before(req, " errored,");
        r->timeouts = count_before(req, " timeout");
        /* min, max, then the mean. */
        p = tfr + strlen("time for request:");
        for (int i = 0; i < 3 && p; i++) {
                p += strspn(p, " ");
                r->mean_us = http_out_time_us(p, &p);
                if (r->mean_us < 0)
                        p = NULL;
        }
        r->h2c = strstr(out, "Application protocol: h2c") != NULL;
        if (r->seconds < 0 || r->req_per_sec < 0 || r->total < 0 || r->done < 0 ||
            r->succeeded < 0 || r->failed < 0 || r->errored < 0 || r->timeouts < 0 ||
            p == NULL)
                return -EPROTO;
        return 0;
}
