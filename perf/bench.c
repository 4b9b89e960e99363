/* SPDX-License-Identifier: MIT */
/*
 * percore-bench: the main job. Runs the suites in thread-per-core and
 * elastic modes (or the one PERCORE_MODE names), each measurement after a
 * warm-up and repeated, and prints the medians as a table; --json writes
 * one record per measurement.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static struct bench_record records[BENCH_MAX_RECORDS];
static unsigned nrecords;

/* The measurement in progress, for bench_extra(); NULL during warm-up. */
static struct bench_record *measuring;
static unsigned first_extra;

struct suite {
        const char *name;
        int (*run)(const struct bench_opts *o);
        const char *what;
};

static const struct suite suites[] = {
        {"spawn", suite_spawn, "local spawn+run throughput per worker"},
        {"imbalance", suite_imbalance, "makespan of uneven work, skewed and balanced"},
        {"msg", suite_msg, "cross-core submit throughput and call round trip, 2 workers"},
        {"fwd", suite_fwd, "DPDK forwarding Mpps on one core, pc-fwd vs dpdk-testpmd"},
#ifdef PC_HAVE_URING
        {"echo", suite_echo, "TCP echo 64 B requests/s per worker, kernel backend vs epoll"},
        {"kv", suite_kv, "memcached get/set ops/s per worker, pc-kv vs memcached"},
#endif
};
#define NSUITES (sizeof(suites) / sizeof(suites[0]))

void bench_extra(const char *metric, const char *unit, bool lower_is_better, double v)
{
        struct bench_record *r;
        unsigned i;

        if (measuring == NULL)
                return;
        for (i = first_extra; i < nrecords; i++)
                if (strcmp(records[i].metric, metric) == 0)
                        break;
        if (i == nrecords) {
                if (nrecords == BENCH_MAX_RECORDS)
                        return;
                r = &records[nrecords++];
                *r = *measuring;
                r->metric = metric;
                r->unit = unit;
                r->lower_is_better = lower_is_better;
                r->nvalues = 0;
        }
        r = &records[i];
        if (r->nvalues < BENCH_MAX_RUNS)
                r->values[r->nvalues++] = v;
}

void bench_progress(const char *fmt, ...)
{
        va_list ap;

        fputs("percore-bench: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

void bench_config(struct pc_config *cfg, const struct bench_opts *o, enum pc_mode mode)
{
        pc_config_init(cfg);
        cfg->mode = mode;
        cfg->workers = mode == PC_MODE_DETERMINISTIC ? 0 : o->workers;
        cfg->idle = PC_IDLE_POLL;
        cfg->log_level = PC_LOG_WARN;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(const struct bench_record *r)
{
        double v[BENCH_MAX_RUNS];

        memcpy(v, r->values, r->nvalues * sizeof(double));
        qsort(v, r->nvalues, sizeof(double), cmp_double);
        if (r->nvalues % 2)
                return v[r->nvalues / 2];
        return (v[r->nvalues / 2 - 1] + v[r->nvalues / 2]) / 2;
}

static double vmin(const struct bench_record *r)
{
        double m = r->values[0];

        for (unsigned i = 1; i < r->nvalues; i++)
                m = fmin(m, r->values[i]);
        return m;
}

static double vmax(const struct bench_record *r)
{
        double m = r->values[0];

        for (unsigned i = 1; i < r->nvalues; i++)
                m = fmax(m, r->values[i]);
        return m;
}

void bench_stats(const struct bench_record *r, double *med, double *lo, double *hi)
{
        *med = median(r);
        *lo = vmin(r);
        *hi = vmax(r);
}

int bench_measure(const struct bench_opts *o, const char *suite, const char *kase,
                  const char *mode_name, enum pc_mode mode, const char *metric,
                  const char *unit, bool lower_is_better, bench_run_fn fn, void *ctx)
{
        struct bench_record *r;
        struct bench_opts warm = *o;
        unsigned workers = 0;
        double v;

        if (nrecords == BENCH_MAX_RECORDS)
                return -ENOSPC;
        r = &records[nrecords];
        memset(r, 0, sizeof(*r));
        r->suite = suite;
        r->kase = kase;
        snprintf(r->mode, sizeof(r->mode), "%s", mode_name);
        r->metric = metric;
        r->unit = unit;
        r->lower_is_better = lower_is_better;

        bench_progress("%s/%s %s: warm-up", suite, kase, mode_name);
        warm.duration = o->duration / 4;
        v = fn(&warm, mode, &workers, ctx);
        if (v < 0) {
                fprintf(stderr, "percore-bench: %s/%s %s: %s\n", suite, kase, mode_name,
                        pc_strerror((int)v));
                return (int)v;
        }
        r->workers = workers;
        nrecords++;
        measuring = r;
        first_extra = nrecords;
        for (unsigned i = 0; i < o->runs; i++) {
                v = fn(o, mode, &workers, ctx);
                if (v < 0) {
                        fprintf(stderr, "percore-bench: %s/%s %s: %s\n", suite, kase,
                                mode_name, pc_strerror((int)v));
                        measuring = NULL;
                        nrecords = first_extra - 1;
                        return (int)v;
                }
                r->values[r->nvalues++] = v;
        }
        measuring = NULL;
        bench_progress("%s/%s %s: %s median %.4g %s", suite, kase, mode_name, metric,
                       median(r), unit);
        return 0;
}

/* 61234567 -> "61.2M" */
static void human(double v, char *buf, size_t len)
{
        static const char *const sfx[] = {"", "k", "M", "G", "T"};
        int i = 0;

        while (fabs(v) >= 1000 && i < 4) {
                v /= 1000;
                i++;
        }
        snprintf(buf, len, "%.3g%s", v, sfx[i]);
}

static bool same_row(const struct bench_record *a, const struct bench_record *b)
{
        return strcmp(a->suite, b->suite) == 0 && strcmp(a->kase, b->kase) == 0 &&
               strcmp(a->metric, b->metric) == 0;
}

/* One row per (suite, case, metric), one column per mode or peer. */
static void print_table(const struct bench_opts *o)
{
        const char *cols[16];
        unsigned ncols = 0;
        bool done[BENCH_MAX_RECORDS] = {false};

        for (unsigned i = 0; i < nrecords; i++) {
                unsigned c;
                for (c = 0; c < ncols; c++)
                        if (strcmp(cols[c], records[i].mode) == 0)
                                break;
                if (c == ncols && ncols < 16)
                        cols[ncols++] = records[i].mode;
        }
        printf("\n%u run%s of %.2f s per measurement after a warm-up; median (min-max)\n\n",
               o->runs, o->runs == 1 ? "" : "s", o->duration);
        printf("%-10s %-10s %-28s %3s", "suite", "case", "metric", "w");
        for (unsigned c = 0; c < ncols; c++)
                printf("  %-24s", cols[c]);
        printf("\n");
        for (unsigned i = 0; i < nrecords; i++) {
                if (done[i])
                        continue;
                printf("%-10s %-10s %-28s %3u", records[i].suite, records[i].kase,
                       records[i].metric, records[i].workers);
                for (unsigned c = 0; c < ncols; c++) {
                        char cell[64] = "-", a[16], b[16], m[16];
                        for (unsigned j = i; j < nrecords; j++) {
                                const struct bench_record *r = &records[j];
                                if (done[j] || !same_row(r, &records[i]) ||
                                    strcmp(r->mode, cols[c]) != 0)
                                        continue;
                                human(median(r), m, sizeof(m));
                                human(vmin(r), a, sizeof(a));
                                human(vmax(r), b, sizeof(b));
                                snprintf(cell, sizeof(cell), "%s (%s-%s)", m, a, b);
                                done[j] = true;
                                break;
                        }
                        printf("  %-24s", cell);
                }
                printf("\n");
        }
        /* Ratios of each percore mode against each peer in the same row. */
        for (unsigned i = 0; i < nrecords; i++) {
                const struct bench_record *p = &records[i];
                if (strncmp(p->mode, "peer:", 5) != 0)
                        continue;
                for (unsigned j = 0; j < nrecords; j++) {
                        const struct bench_record *r = &records[j];
                        double ratio;
                        if (!same_row(r, p) || strncmp(r->mode, "peer:", 5) == 0)
                                continue;
                        ratio = r->lower_is_better ? median(p) / median(r)
                                                   : median(r) / median(p);
                        printf("ratio %s/%s %s: %s vs %s = %.2fx%s\n", r->suite, r->kase,
                               r->metric, r->mode, p->mode, ratio,
                               ratio >= 1 ? " (percore faster)" : " (peer faster)");
                }
        }
}

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

static int write_json(const struct bench_opts *o, const char *path)
{
        struct pc_config cfg;
        char line[1024], model[256];
        FILE *f = fopen(path, "w");

        if (f == NULL) {
                fprintf(stderr, "percore-bench: cannot write %s: %s\n", path, strerror(errno));
                return -errno;
        }
        /* The configuration the runs used: the bench's settings, then the
         * environment on top, as pc_runtime_create() applies them. */
        bench_config(&cfg, o, o->modes[0]);
        pc_config_from_env(&cfg, NULL, 0);
        pc_config_format(&cfg, line, sizeof(line));
        cpu_model(model, sizeof(model));
        fprintf(f, "{\n  \"config\": ");
        json_str(f, line);
        fprintf(f, ",\n  \"duration_s\": %g,\n  \"machine\": {\"cpu_model\": ", o->duration);
        json_str(f, model);
        fprintf(f, ", \"cpus\": %ld, \"nodes\": %d},\n  \"records\": [\n",
                sysconf(_SC_NPROCESSORS_ONLN), count_nodes());
        for (unsigned i = 0; i < nrecords; i++) {
                const struct bench_record *r = &records[i];
                fprintf(f, "    {\"suite\": ");
                json_str(f, r->suite);
                fprintf(f, ", \"case\": ");
                json_str(f, r->kase);
                fprintf(f, ", \"mode\": ");
                json_str(f, r->mode);
                fprintf(f, ", \"workers\": %u, \"metric\": ", r->workers);
                json_str(f, r->metric);
                fprintf(f, ", \"value\": %.6g, \"unit\": ", median(r));
                json_str(f, r->unit);
                fprintf(f, ", \"min\": %.6g, \"max\": %.6g, \"runs\": %u}%s\n", vmin(r),
                        vmax(r), r->nvalues, i + 1 < nrecords ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        if (fclose(f) != 0)
                return -errno;
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f,
                "usage: percore-bench [--suite a,b,...] [--duration S] [--workers N]\n"
                "                     [--runs N] [--json FILE] [--plot FILE.svg] [--quick]\n"
                "                     [--help]\n"
                "\n"
                "Measures percore's per-core throughput. Without PERCORE_MODE in the\n"
                "environment every mode runs side by side; with it, only that mode.\n"
                "\n"
                "  --suite LIST     suites to run (default: all)\n"
                "  --duration S     seconds per measured run (default 1, quick 0.2)\n"
                "  --workers N      workers (default: one per usable CPU)\n"
                "  --runs N         measured runs per case, after a warm-up (default 5, quick 3)\n"
                "  --json FILE      write one record per measurement\n"
                "  --plot FILE.svg  draw the results with gnuplot (Debian: gnuplot-nox)\n"
                "  --quick          short runs, for CI smoke tests\n"
                "\nsuites:\n");
        for (size_t i = 0; i < NSUITES; i++)
                fprintf(f, "  %-10s %s\n", suites[i].name, suites[i].what);
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= lo && v <= hi))
                return -EINVAL;
        *out = v;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"suite", required_argument, NULL, 's'},
                {"duration", required_argument, NULL, 'd'},
                {"workers", required_argument, NULL, 'w'},
                {"runs", required_argument, NULL, 'r'},
                {"json", required_argument, NULL, 'j'},
                {"plot", required_argument, NULL, 'p'},
                {"quick", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct bench_opts o = {.duration = 0, .runs = 0};
        bool want[NSUITES];
        const char *suite_arg = NULL;
        struct pc_config env;
        char err[256];
        double d;
        int c, rc = 0;

        while ((c = getopt_long(argc, argv, "s:d:w:r:j:p:qh", longopts, NULL)) != -1) {
                switch (c) {
                case 's':
                        suite_arg = optarg;
                        break;
                case 'd':
                        if (parse_double(optarg, 0.01, 600, &o.duration)) {
                                fprintf(stderr, "percore-bench: --duration '%s': expected "
                                                "seconds from 0.01 to 600\n", optarg);
                                return 2;
                        }
                        break;
                case 'w':
                        if (parse_double(optarg, 1, PC_MAX_WORKERS, &d) || d != (unsigned)d) {
                                fprintf(stderr, "percore-bench: --workers '%s': expected an "
                                                "integer from 1 to %d\n", optarg,
                                        PC_MAX_WORKERS);
                                return 2;
                        }
                        o.workers = (unsigned)d;
                        break;
                case 'r':
                        if (parse_double(optarg, 1, BENCH_MAX_RUNS, &d) || d != (unsigned)d) {
                                fprintf(stderr, "percore-bench: --runs '%s': expected an "
                                                "integer from 1 to %d\n", optarg,
                                        BENCH_MAX_RUNS);
                                return 2;
                        }
                        o.runs = (unsigned)d;
                        break;
                case 'j':
                        o.json = optarg;
                        break;
                case 'p':
                        o.plot = optarg;
                        break;
                case 'q':
                        o.quick = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "percore-bench: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        if (o.duration == 0)
                o.duration = o.quick ? 0.2 : 1.0;
        if (o.runs == 0)
                o.runs = o.quick ? 3 : 5;

        for (size_t i = 0; i < NSUITES; i++)
                want[i] = suite_arg == NULL;
        if (suite_arg) {
                char *copy = strdup(suite_arg), *save = NULL;
                for (char *tok = strtok_r(copy, ",", &save); tok;
                     tok = strtok_r(NULL, ",", &save)) {
                        size_t i;
                        for (i = 0; i < NSUITES; i++)
                                if (strcmp(tok, suites[i].name) == 0)
                                        break;
                        if (i == NSUITES) {
                                fprintf(stderr, "percore-bench: unknown suite '%s'\n", tok);
                                usage(stderr);
                                free(copy);
                                return 2;
                        }
                        want[i] = true;
                }
                free(copy);
        }

        if (o.plot && !bench_plot_available()) {
                fprintf(stderr, "percore-bench: --plot needs gnuplot, which is not on PATH "
                                "(Debian: apt-get install gnuplot-nox, or .ci/deps.sh)\n");
                return 1;
        }

        /* The environment decides the modes: one if PERCORE_MODE is set. */
        pc_config_init(&env);
        if (pc_config_from_env(&env, err, sizeof(err)) != 0) {
                fprintf(stderr, "percore-bench: %s\n", err);
                return 2;
        }
        if (getenv("PERCORE_MODE")) {
                o.modes[o.nmodes++] = env.mode;
        } else {
                o.modes[o.nmodes++] = PC_MODE_TPC;
                o.modes[o.nmodes++] = PC_MODE_ELASTIC;
        }

        for (size_t i = 0; i < NSUITES && rc == 0; i++)
                if (want[i])
                        rc = suites[i].run(&o);
        if (nrecords)
                print_table(&o);
        if (o.json && nrecords) {
                int jrc = write_json(&o, o.json);
                if (jrc && rc == 0)
                        rc = jrc;
        }
        if (o.plot && nrecords) {
                int prc = bench_plot(o.plot, records, nrecords);
                if (prc && rc == 0)
                        rc = prc;
        }
        return rc ? 1 : 0;
}
