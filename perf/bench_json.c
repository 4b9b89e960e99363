/* SPDX-License-Identifier: MIT */
/*
 * percore-bench's JSON (bench_report.h): the configuration and machine,
 * one record per measurement, one per ratio, and the suites' notes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_report.h"

static void json_str(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"' || *s == '\\')
                        fprintf(f, "\\%c", *s);
                else if ((unsigned char)*s < 0x20)
                        fprintf(f, "\\u%04x", *s);
                else
                        fputc(*s, f);
        }
        fputc('"', f);
}

static void cpu_model(char *buf, size_t len)
{
        char line[512];
        FILE *f = fopen("/proc/cpuinfo", "r");

        snprintf(buf, len, "unknown");
        if (f == NULL)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');
                if (strncmp(line, "model name", 10) == 0 && colon) {
                        snprintf(buf, len, "%s", colon + 2);
                        buf[strcspn(buf, "\n")] = '\0';
                        break;
                }
        }
        fclose(f);
}

static int count_nodes(void)
{
        int n = 0;
        char path[64];

        for (int i = 0; i < 1024; i++) {
                snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", i);
                if (access(path, F_OK) == 0)
                        n++;
        }
        return n ? n : 1;
}

/* JSON has no NaN: a number that is not finite is written as null. */
static void json_num(FILE *f, double v)
{
        if (isfinite(v))
                fprintf(f, "%.6g", v);
        else
                fputs("null", f);
}

static void json_row(FILE *f, const struct bench_record *r)
{
        fprintf(f, "{\"suite\": ");
        json_str(f, r->suite);
        fprintf(f, ", \"case\": ");
        json_str(f, r->kase);
}

int bench_json_write(const char *path, const struct bench_results *res)
{
        static struct bench_ratio x[BENCH_MAX_RATIOS];
        unsigned nx = bench_ratios(res->recs, res->n, x, BENCH_MAX_RATIOS);
        char model[256];
        FILE *f = fopen(path, "w");

        if (f == NULL) {
                fprintf(stderr, "percore-bench: cannot write %s: %s\n", path,
                        strerror(errno));
                return -errno;
        }
        cpu_model(model, sizeof(model));
        fprintf(f, "{\n  \"config\": ");
        json_str(f, res->config);
        fprintf(f, ",\n  \"duration_s\": %g,\n  \"machine\": {\"cpu_model\": ",
                res->duration);
        json_str(f, model);
        fprintf(f, ", \"cpus\": %ld, \"nodes\": %d, \"host_steal\": {",
                sysconf(_SC_NPROCESSORS_ONLN), count_nodes());
        for (unsigned i = 0; i < res->nsteals; i++) {
                fprintf(f, "%s", i ? ", " : "");
                json_str(f, res->steals[i].suite);
                fprintf(f, ": ");
                json_num(f, res->steals[i].share >= 0 ? res->steals[i].share : NAN);
        }
        fprintf(f, "}},\n  \"records\": [\n");
        for (unsigned i = 0; i < res->n; i++) {
                const struct bench_record *r = &res->recs[i];
                double med, lo, hi;

                bench_stats(r, &med, &lo, &hi);
                fprintf(f, "    ");
                json_row(f, r);
                fprintf(f, ", \"mode\": ");
                json_str(f, r->mode);
                fprintf(f, ", \"workers\": %u, \"metric\": ", r->workers);
                json_str(f, r->metric);
                fprintf(f, ", \"value\": ");
                json_num(f, med);
                fprintf(f, ", \"unit\": ");
                json_str(f, r->unit);
                fprintf(f, ", \"min\": ");
                json_num(f, lo);
                fprintf(f, ", \"max\": ");
                json_num(f, hi);
                fprintf(f, ", \"runs\": %u, \"info\": %s, \"steal\": [",
                        bench_finite_count(r), r->info ? "true" : "false");
                for (unsigned k = 0; k < r->nvalues; k++) {
                        fprintf(f, "%s", k ? ", " : "");
                        json_num(f, r->steal[k]);
                }
                fprintf(f, "]}%s\n", i + 1 < res->n ? "," : "");
        }
        fprintf(f, "  ],\n  \"ratios\": [\n");
        for (unsigned i = 0; i < nx; i++) {
                fprintf(f, "    ");
                json_row(f, x[i].side);
                fprintf(f, ", \"workers\": %u, \"metric\": ", x[i].side->workers);
                json_str(f, x[i].side->metric);
                fprintf(f, ", \"side\": ");
                json_str(f, x[i].side->mode);
                fprintf(f, ", \"peer\": ");
                json_str(f, x[i].peer->mode);
                /* A refused ratio is recorded as refused, with no number a
                 * reader could take for one. */
                fprintf(f, ", \"floor\": %s, \"refused\": ",
                        x[i].peer->floor ? "true" : "false");
                if (x[i].refused)
                        json_str(f, "floor slower than percore");
                else
                        fputs("null", f);
                fprintf(f, ", \"value\": ");
                json_num(f, x[i].refused ? NAN : x[i].value);
                fprintf(f, ", \"min\": ");
                json_num(f, x[i].refused ? NAN : x[i].min);
                fprintf(f, ", \"max\": ");
                json_num(f, x[i].refused ? NAN : x[i].max);
                fprintf(f, ", \"rounds\": %u}%s\n", x[i].rounds, i + 1 < nx ? "," : "");
        }
        fprintf(f, "  ],\n  \"info\": {");
        for (unsigned i = 0; i < res->nnotes; i++) {
                fprintf(f, "%s\n    ", i ? "," : "");
                json_str(f, res->notes[i].suite);
                fprintf(f, ": %s", res->notes[i].json);
        }
        fprintf(f, "%s}\n}\n", res->nnotes ? "\n  " : "");
        if (fclose(f) != 0)
                return -errno;
        return 0;
}
