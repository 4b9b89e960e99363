/* SPDX-License-Identifier: MIT */
/*
 * percore-bench's ratios fed fixed numbers: a floor peer (one that bounds
 * what a percore side can reach) gets no ratio from a side that measured
 * better than it, any other peer keeps its ratio. Nothing here is timed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bench_ratio.h"

/* This cmocka has no double assert; the values compared are exact or
 * nearly so. */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static struct bench_record rec(const char *mode, bool lower, bool floor, unsigned group,
                               const double *v, unsigned n)
{
        struct bench_record r;

        memset(&r, 0, sizeof(r));
        r.suite = "msg";
        r.kase = "call";
        snprintf(r.mode, sizeof(r.mode), "%s", mode);
        r.workers = 2;
        r.metric = "call_rtt_ns";
        r.unit = "ns";
        r.lower_is_better = lower;
        r.floor = floor;
        r.group = group;
        for (unsigned i = 0; i < n; i++)
                r.values[r.nvalues++] = v[i];
        return r;
}

static void test_refuses_plain_numbers(void **state)
{
        (void)state;
        /* Lower is better: a floor of 120 ns under a side of 100 ns is no floor. */
        assert_true(bench_floor_refuses(true, 100, 120));
        assert_false(bench_floor_refuses(true, 100, 80));
        assert_false(bench_floor_refuses(true, 100, 100)); /* reached, not beaten */
        /* Within BENCH_FLOOR_SLACK: the side reached its floor, by the noise. */
        assert_false(bench_floor_refuses(true, 100, 104));
        assert_true(bench_floor_refuses(true, 100, 106));
        assert_false(bench_floor_refuses(false, 104e6, 100e6));
        /* Higher is better: a floor of 40 M/s under a side of 50 M/s is beaten. */
        assert_true(bench_floor_refuses(false, 50e6, 40e6));
        assert_false(bench_floor_refuses(false, 50e6, 60e6));
        /* Nothing measured: nothing to refuse. */
        assert_false(bench_floor_refuses(true, NAN, 100));
        assert_false(bench_floor_refuses(true, 100, NAN));
        assert_false(bench_floor_refuses(true, INFINITY, 100));
}

static void test_floor_slower_than_side(void **state)
{
        const double side[] = {100, 110, 105}, slow_floor[] = {120, 130, 125};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:pingpong", true, true, 1, slow_floor, 3);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_ptr_equal(x[0].side, &r[0]);
        assert_ptr_equal(x[0].peer, &r[1]);
        assert_true(x[0].refused);
        /* The number is still computed, for whoever wants to see why. */
        assert_int_equal(x[0].rounds, 3);
        assert_true(x[0].value > 1);
}

static void test_floor_faster_than_side(void **state)
{
        const double side[] = {200, 180, 190}, floor[] = {60, 61, 59};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 3);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_false(x[0].refused);
        /* Per-round ratios 60/200, 61/180, 59/190: the median is 59/190. */
        assert_near(x[0].value, 59.0 / 190, 1e-12);
        assert_near(x[0].min, 60.0 / 200, 1e-12);
        assert_near(x[0].max, 61.0 / 180, 1e-12);
}

static void test_plain_peer_may_be_beaten(void **state)
{
        const double side[] = {100, 100, 100}, peer[] = {200, 210, 190};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:rte_ring_rtt", true, false, 1, peer, 3);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_false(x[0].refused);
        assert_near(x[0].value, 2.0, 1e-12);
}

static void test_judged_on_the_ratio(void **state)
{
        /* One round has the floor above the side; the ratio does not. */
        const double side[] = {100, 100, 100}, floor[] = {150, 90, 95};
        /* And the other way round: only one round below the side. */
        const double side2[] = {100, 100, 100}, floor2[] = {50, 120, 130};
        struct bench_record r[4];
        struct bench_ratio x[8];
        unsigned n;

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 3);
        r[2] = rec("elastic", true, false, 2, side2, 3);
        r[3] = rec("peer:pingpong", true, true, 2, floor2, 3);
        r[2].kase = r[3].kase = "call2";
        n = bench_ratios(r, 4, x, 8);
        assert_int_equal(n, 2);
        assert_ptr_equal(x[0].peer, &r[1]);
        assert_false(x[0].refused);
        assert_ptr_equal(x[1].peer, &r[3]);
        assert_true(x[1].refused);
}

static void test_floor_reached_within_noise(void **state)
{
        /* A call at its floor: rounds either side of it by a few percent
         * (ratio median 1.02) keep their ratio; 1.10 does not. */
        const double side[] = {350, 349, 362}, floor[] = {357, 355, 360};
        const double fast[] = {320, 322, 330};
        struct bench_record r[4];
        struct bench_ratio x[8];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 3);
        r[2] = rec("elastic", true, false, 2, fast, 3);
        r[3] = rec("peer:pingpong", true, true, 2, floor, 3);
        r[2].kase = r[3].kase = "call2";
        assert_int_equal(bench_ratios(r, 4, x, 8), 2);
        assert_true(x[0].value > 1 && x[0].value < BENCH_FLOOR_SLACK);
        assert_false(x[0].refused);
        assert_true(x[1].value > BENCH_FLOOR_SLACK);
        assert_true(x[1].refused);
}

static void test_judged_on_round_ratios(void **state)
{
        /* The medians put the floor below the side (61.5k against 4.17M ns)
         * but the rounds pair 49.8 with 8.33M and 123k with 5.98k: the ratio
         * the table would print, their median, is 10.3, a floor beaten. */
        const double side[] = {8.33e6, 5.98e3}, floor[] = {49.8, 123e3};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 2);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 2);
        assert_true(bench_median(&r[1]) < bench_median(&r[0]));
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_true(x[0].value > 1);
        assert_true(x[0].refused);
}

static void test_round_not_used(void **state)
{
        /* A round whose side moved off its CPU holds NAN: it is left out of
         * the medians and pairs with nothing. */
        const double side[] = {100, NAN, 100}, floor[] = {60, 10, 60};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 3);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 3);
        assert_int_equal(bench_finite_count(&r[0]), 2);
        assert_near(bench_median(&r[0]), 100, 0);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 2);
        assert_false(x[0].refused);
        assert_near(x[0].value, 0.6, 1e-12);
}

static void test_conditions_pair_rounds(void **state)
{
        /* Round 1 ran the side at a 330 ns line, the peer at 85 ns (the host
         * moved a vCPU between them): no ratio from it. */
        const double side[] = {50e6, 15e6, 52e6}, peer[] = {80e6, 90e6, 84e6};
        const double scond[] = {85, 330, 86}, pcond[] = {86, 84, 330 * 1.4};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        assert_true(bench_cond_match(85, 105));
        assert_false(bench_cond_match(61, 85)); /* two placements seen on one VM */
        assert_false(bench_cond_match(85, 330));
        assert_true(bench_cond_match(NAN, 330)); /* said nothing: pairs */
        assert_true(bench_cond_match(0, 330));
        r[0] = rec("tpc", false, false, 1, side, 3);
        r[1] = rec("peer:rte_ring", false, false, 1, peer, 3);
        r[0].metric = r[1].metric = "msgs_per_sec";
        for (unsigned i = 0; i < 3; i++) {
                r[0].cond[i][0] = scond[i];
                r[1].cond[i][0] = pcond[i];
        }
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        /* Round 2 is left out too: 86 against 462. */
        assert_int_equal(x[0].rounds, 1);
        assert_near(x[0].value, 50.0 / 80, 1e-12);
        /* With every round matched, all three pair. */
        for (unsigned i = 0; i < 3; i++)
                r[1].cond[i][0] = r[0].cond[i][0];
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 3);
        /* A second condition (the CPU share the threads had) must match
         * too: round 1's side had half its CPUs. */
        r[0].cond[1][1] = 0.5;
        r[1].cond[1][1] = 0.98;
        r[0].cond[2][1] = 0.95;
        r[1].cond[2][1] = 0.99;
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 2);
}

static void test_steal_pairs_rounds(void **state)
{
        /* memcached's round 1 ran while the host took a fifth of the CPUs
         * and pc-kv's did not: that round says how each copes with a busy
         * host, not which is faster, and gives no ratio. */
        const double side[] = {120e3, 118e3, 121e3, 119e3}, peer[] = {100e3, 45e3, 99e3, 101e3};
        const double ssteal[] = {0.01, 0.02, 0.18, NAN}, psteal[] = {0.02, 0.21, 0.15, 0.30};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        assert_true(bench_steal_match(0.01, 0.05));
        assert_true(bench_steal_match(0.10, 0.15));
        assert_false(bench_steal_match(0.02, 0.21));
        assert_true(bench_steal_match(NAN, 0.30)); /* not known: pairs */
        r[0] = rec("tpc", false, false, 1, side, 4);
        r[1] = rec("peer:memcached", false, false, 1, peer, 4);
        r[0].suite = r[1].suite = "kv";
        r[0].kase = r[1].kase = "get-set-1k";
        r[0].metric = r[1].metric = "ops_per_sec";
        for (unsigned i = 0; i < 4; i++) {
                r[0].steal[i] = ssteal[i];
                r[1].steal[i] = psteal[i];
        }
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        /* Rounds 0, 2 (both busy alike) and 3 (side's steal unknown). */
        assert_int_equal(x[0].rounds, 3);
        assert_near(x[0].value, 1.2, 1e-12);
        assert_near(x[0].min, 119e3 / 101e3, 1e-12);
        assert_near(x[0].max, 121e3 / 99e3, 1e-12);
        /* The unpaired round alone would have said 2.6x. */
        r[1].steal[1] = r[0].steal[1];
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 4);
        assert_near(x[0].max, 118e3 / 45e3, 1e-12);
}

static void test_floor_judged_on_paired_rounds(void **state)
{
        /* A run of each was not used (NAN), in different rounds: over all
         * rounds the floor's median (799) is above the side's (719.5); the
         * rounds that pair, 0, 2 and 3, each have the floor below. */
        const double side[] = {445, 397, 1126, 994, NAN}, floor[] = {230, NAN, 799, 833, NAN};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 5);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 5);
        assert_true(bench_median(&r[1]) > bench_median(&r[0]));
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 3);
        assert_false(x[0].refused);
        assert_near(x[0].value, 799.0 / 1126, 1e-12);
}

static void test_floor_over_two_placements(void **state)
{
        /* Every round pairs, one at a near placement (93 against 152 ns),
         * three at a far one: the paired medians put the floor above the
         * side (483.5 against 464) though every round but one has it below;
         * the ratio, 0.75, stands. */
        const double side[] = {152, 438, 490, 2696}, floor[] = {93, 344, 623, 1924};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 4);
        r[1] = rec("peer:pingpong", true, true, 1, floor, 4);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 4);
        assert_false(x[0].refused);
        assert_near(x[0].value, (1924.0 / 2696 + 344.0 / 438) / 2, 1e-12);
}

static void test_apart_judged_on_medians(void **state)
{
        /* Measured in two comparisons: no rounds, the medians decide. */
        const double side[] = {100, 101}, floor[] = {120, 119};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", true, false, 1, side, 2);
        r[1] = rec("peer:pingpong", true, true, 2, floor, 2);
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_int_equal(x[0].rounds, 0);
        assert_true(x[0].refused);
}

static void test_higher_is_better_floor(void **state)
{
        /* A throughput bound: the side may not pass it either. */
        const double side[] = {90e6, 95e6, 92e6}, floor[] = {80e6, 85e6, 82e6};
        struct bench_record r[2];
        struct bench_ratio x[4];

        (void)state;
        r[0] = rec("tpc", false, false, 1, side, 3);
        r[1] = rec("peer:bound", false, true, 1, floor, 3);
        r[0].metric = r[1].metric = "msgs_per_sec";
        assert_int_equal(bench_ratios(r, 2, x, 4), 1);
        assert_true(x[0].refused);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refuses_plain_numbers),
                cmocka_unit_test(test_floor_slower_than_side),
                cmocka_unit_test(test_floor_faster_than_side),
                cmocka_unit_test(test_plain_peer_may_be_beaten),
                cmocka_unit_test(test_judged_on_the_ratio),
                cmocka_unit_test(test_floor_reached_within_noise),
                cmocka_unit_test(test_judged_on_round_ratios),
                cmocka_unit_test(test_round_not_used),
                cmocka_unit_test(test_conditions_pair_rounds),
                cmocka_unit_test(test_steal_pairs_rounds),
                cmocka_unit_test(test_floor_judged_on_paired_rounds),
                cmocka_unit_test(test_floor_over_two_placements),
                cmocka_unit_test(test_apart_judged_on_medians),
                cmocka_unit_test(test_higher_is_better_floor),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
