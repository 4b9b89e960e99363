/* SPDX-License-Identifier: MIT */
/*
 * The headline of percore-bench's plot (bench_headline()) on made-up
 * records: per row the tpc side against its strongest peer, floors,
 * baselines and the metrics reported beside a case's left out, and never
 * more than BENCH_HEADLINE_MAX bars however many cases, each suite still
 * shown. Nothing here is timed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench_ratio.h"

#define MAX_RECS 256

static struct bench_record recs[MAX_RECS];
static unsigned nrecs;
static struct bench_ratio x[BENCH_MAX_RATIOS], head[BENCH_MAX_RATIOS];

/* A record of @mode in @suite/@kase at @workers, higher is better, every
 * round @v; in a comparison of its own per case and workers. */
static struct bench_record *add(const char *suite, const char *kase, unsigned workers,
                                const char *mode, double v)
{
        struct bench_record *r = &recs[nrecs++];

        assert_true(nrecs <= MAX_RECS);
        memset(r, 0, sizeof(*r));
        r->suite = suite;
        r->kase = kase;
        snprintf(r->mode, sizeof(r->mode), "%s", mode);
        r->workers = workers;
        r->metric = "ops_per_sec";
        r->unit = "ops/s";
        r->group = 1;
        for (unsigned i = 0; i < 3; i++)
                r->values[r->nvalues++] = v;
        return r;
}

static unsigned headline(unsigned max)
{
        unsigned nx = bench_ratios(recs, nrecs, x, BENCH_MAX_RATIOS);

        return bench_headline(x, nx, head, max);
}

static void reset(void **state)
{
        (void)state;
        nrecs = 0;
}

static void test_strongest_peer(void **state)
{
        reset(state);
        add("kv", "get", 1, "tpc", 100);
        add("kv", "get", 1, "elastic", 50);
        add("kv", "get", 1, "peer:memcached", 80); /* tpc 1.25x */
        add("kv", "get", 1, "peer:redis", 125);    /* tpc 0.8x: the strongest */
        assert_int_equal(headline(BENCH_HEADLINE_MAX), 1);
        assert_string_equal(head[0].side->mode, "tpc");
        assert_string_equal(head[0].peer->mode, "peer:redis");
        assert_true(fabs(head[0].value - 0.8) < 1e-12);
}

static void test_left_out(void **state)
{
        struct bench_record *r;

        reset(state);
        /* A floor bounds, a baseline is percore: neither is a peer a user
         * picks instead. */
        add("msg", "call", 2, "tpc", 100);
        r = add("msg", "call", 2, "peer:pingpong", 400);
        r->floor = true;
        add("msg", "call", 2, "base:callbacks", 300);
        add("msg", "call", 2, "peer:rte_ring_rtt", 90);
        /* A metric reported beside the compared one. */
        r = add("msg", "call", 2, "tpc", 10);
        r->metric = "p99_us";
        r->extra = true;
        r = add("msg", "call", 2, "peer:rte_ring_rtt", 1000);
        r->metric = "p99_us";
        r->extra = true;
        /* A row with only a floor and a baseline has no bar. */
        add("fiber", "yield", 1, "tpc", 100);
        add("fiber", "yield", 1, "base:pc_call", 400);
        assert_int_equal(headline(BENCH_HEADLINE_MAX), 1);
        assert_string_equal(head[0].peer->mode, "peer:rte_ring_rtt");
        assert_string_equal(head[0].side->metric, "ops_per_sec");
}

static void test_side_without_tpc(void **state)
{
        reset(state);
        /* PERCORE_MODE=elastic: the one percore side there is. */
        add("spawn", "batch", 2, "elastic", 100);
        add("spawn", "batch", 2, "peer:tbb", 50);
        add("spawn", "batch", 2, "peer:openmp", 200);
        /* tpc after another side in record order still wins the row. */
        add("spawn", "deep", 2, "fibers", 100);
        add("spawn", "deep", 2, "tpc", 100);
        add("spawn", "deep", 2, "peer:tbb", 25);
        assert_int_equal(headline(BENCH_HEADLINE_MAX), 2);
        assert_string_equal(head[0].side->mode, "elastic");
        assert_string_equal(head[0].peer->mode, "peer:openmp");
        assert_string_equal(head[1].side->mode, "tpc");
}

static void test_at_most_max(void **state)
{
        static const char *const suites[] = {"echo", "kv", "fwd"};
        static char kases[40][16];
        unsigned n, per[3] = {0, 0, 0};

        reset(state);
        /* echo: 20 cases at 1 and 2 workers (40 rows); kv: 8 cases at one;
         * fwd: 1 case. 49 rows, 29 cases. */
        for (unsigned c = 0; c < 20; c++) {
                snprintf(kases[c], sizeof(kases[c]), "e%u", c);
                for (unsigned w = 1; w <= 2; w++) {
                        add("echo", kases[c], w, "tpc", 100);
                        add("echo", kases[c], w, "peer:tokio", 100 + c + 10 * w);
                }
        }
        for (unsigned c = 0; c < 8; c++) {
                snprintf(kases[20 + c], sizeof(kases[20 + c]), "k%u", c);
                add("kv", kases[20 + c], 1, "tpc", 100);
                add("kv", kases[20 + c], 1, "peer:memcached", 50 + c);
        }
        add("fwd", "io", 1, "tpc", 100);
        add("fwd", "io", 1, "peer:testpmd", 90);
        n = headline(BENCH_HEADLINE_MAX);
        assert_int_equal(n, BENCH_HEADLINE_MAX);
        for (unsigned i = 0; i < n; i++) {
                for (unsigned s = 0; s < 3; s++)
                        per[s] += strcmp(head[i].side->suite, suites[s]) == 0;
                /* A case's worst row: echo's at 2 workers. */
                if (strcmp(head[i].side->suite, "echo") == 0)
                        assert_int_equal(head[i].side->workers, 2);
                /* No case twice. */
                for (unsigned j = 0; j < i; j++)
                        assert_false(
                                strcmp(head[i].side->suite, head[j].side->suite) == 0 &&
                                strcmp(head[i].side->kase, head[j].side->kase) == 0);
        }
        /* Every suite shown: the suites took turns, fwd's one and kv's
         * eight in full, echo's worst sixteen. */
        assert_int_equal(per[1], 8);
        assert_int_equal(per[2], 1);
        assert_int_equal(per[0], 16);
        /* echo's worst: e4 to e19, its peer faster with each case. */
        for (unsigned i = 0; i < n; i++)
                for (unsigned c = 0; c < 4; c++)
                        assert_string_not_equal(head[i].side->kase, kases[c]);
        /* A smaller cap: the suites still take turns. */
        n = headline(3);
        assert_int_equal(n, 3);
        assert_string_equal(head[0].side->suite, "echo");
        assert_string_equal(head[1].side->suite, "kv");
        assert_string_equal(head[2].side->suite, "fwd");
        /* The worst of kv (k0, 2x) and of echo (e19 at 2 workers). */
        assert_string_equal(head[0].side->kase, "e19");
        assert_string_equal(head[1].side->kase, "k7");
}

static void test_few_rows_all_kept(void **state)
{
        reset(state);
        /* Under the cap every row stays, both worker counts of a case. */
        add("echo", "tcp64", 1, "tpc", 100);
        add("echo", "tcp64", 1, "peer:tokio", 90);
        add("echo", "tcp64", 2, "tpc", 100);
        add("echo", "tcp64", 2, "peer:tokio", 110);
        assert_int_equal(headline(BENCH_HEADLINE_MAX), 2);
        assert_int_equal(head[0].side->workers, 1);
        assert_int_equal(head[1].side->workers, 2);
        assert_true(head[1].value < 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strongest_peer),
                cmocka_unit_test(test_left_out),
                cmocka_unit_test(test_side_without_tpc),
                cmocka_unit_test(test_at_most_max),
                cmocka_unit_test(test_few_rows_all_kept),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
