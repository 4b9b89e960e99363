/* SPDX-License-Identifier: MIT */
/*
 * percore-bench: the main job. Runs the suites in thread-per-core and
 * elastic modes (or the one PERCORE_MODE names) beside their peers
 * (bench.c measures them), and prints every percore figure beside each
 * peer's with the ratio; --json writes one record per measurement and one
 * per ratio, --plot draws them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_report.h"
#include "plot.h"

struct suite {
        const char *name;
        int (*run)(const struct bench_opts *o);
        const char *what;
};

static const struct suite suites[] = {
        {"spawn", suite_spawn, "local spawn+run throughput per worker"},
        {"imbalance", suite_imbalance, "makespan of uneven work, skewed and balanced"},
        {"msg", suite_msg, "cross-core submit throughput and call round trip, 2 workers"},
        {"fiber", suite_fiber, "fiber yield, spawn+join and call-await, vs goroutines and Tokio"},
        {"fwd", suite_fwd, "DPDK forwarding Mpps on one core, pc-fwd vs dpdk-testpmd"},
#ifdef PC_HAVE_URING
        {"echo", suite_echo, "TCP echo 64 B req/s, pc-echo vs Tokio and epoll, two clients"},
        {"kv", suite_kv, "memcached get/set ops/s, pc-kv vs memcached, 32 B and 1 KB values"},
        {"tcp", suite_tcp, "TCP echo 64 B per core: percore's TCP on DPDK vs kernel TCP, Tokio"},
        {"http", suite_http, "HTTP/1.1 and h2c req/s, pc-http vs nginx and h2o (wrk, h2load)"},
#endif
};
#define NSUITES (sizeof(suites) / sizeof(suites[0]))
_Static_assert(NSUITES <= BENCH_MAX_SUITES, "a steal share per suite");

static void usage(FILE *f)
{
        fprintf(f,
                "usage: percore-bench [--suite a,b,...] [--duration S] [--workers N]\n"
                "                     [--runs N] [--json FILE] [--plot FILE.svg]\n"
                "                     [--plots-all] [--quick] [--help]\n"
                "\n"
                "Measures percore's per-core throughput. Without PERCORE_MODE in the\n"
                "environment every mode runs side by side; with it, only that mode.\n"
                "\n"
                "  --suite LIST     suites to run (default: all)\n"
                "  --duration S     seconds per measured run (default 1, quick 0.2)\n"
                "  --workers N      workers (default: one per usable CPU)\n"
                "  --runs N         measured rounds per case, each running every side once,\n"
                "                   after a warm-up of each (default 5, quick 3)\n"
                "  --json FILE      write one record per measurement and one per ratio\n"
                "  --plot FILE.svg  draw the headline with gnuplot (Debian: gnuplot-nox):\n"
                "                   each case, percore against its strongest peer\n"
                "  --plots-all      with --plot, every ratio and a chart per case too\n"
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
                {"plots-all", no_argument, NULL, 'a'},
                {"quick", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0},
        };
        struct bench_opts o = {.duration = 0, .runs = 0};
        bool want[NSUITES];
        const char *suite_arg = NULL;
        struct pc_config env;
        struct bench_results res;
        char err[256], config[1024];
        double d;
        int c, rc = 0;

        while ((c = getopt_long(argc, argv, "s:d:w:r:j:p:aqh", longopts, NULL)) != -1) {
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
                case 'a':
                        o.plots_all = true;
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

        if (o.plots_all && !o.plot) {
                fprintf(stderr, "percore-bench: --plots-all goes with --plot FILE.svg\n");
                usage(stderr);
                return 2;
        }
        if (o.plot && !bench_on_path("gnuplot")) {
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
                        rc = bench_run_suite(suites[i].name, suites[i].run, &o);
        bench_results(&o, &res, config, sizeof(config));
        if (res.n)
                bench_table_print(&res);
        if (o.json && res.n) {
                int jrc = bench_json_write(o.json, &res);
                if (jrc && rc == 0)
                        rc = jrc;
        }
        if (o.plot && res.n) {
                int prc = bench_plot(o.plot, res.recs, res.n, o.plots_all);
                if (prc && rc == 0)
                        rc = prc;
        }
        return rc ? 1 : 0;
}
