/* SPDX-License-Identifier: MIT */
/* The owner-only run queue: FIFO across the ring and its overflow list. */
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

static void test_fifo_through_overflow(void **state)
{
        enum { CAP = 8, N = 1000 };
        struct pc_task *slots[CAP];
        static struct pc_task tasks[N];
        struct pc_runq rq = {.mask = CAP - 1, .slots = slots};
        unsigned next_in = 0, next_out = 0;

        (void)state;
        /* Interleave pushes and pops so the ring fills, spills, drains and
         * refills from the overflow list many times over. */
        while (next_out < N) {
                unsigned burst = (next_in * 7 + 3) % 23;
                for (unsigned i = 0; i < burst && next_in < N; i++)
                        pc__runq_push(&rq, &tasks[next_in++]);
                assert_int_equal(pc__runq_len(&rq), next_in - next_out);
                unsigned pops = (next_out * 5 + 1) % 17 + 1;
                for (unsigned i = 0; i < pops && next_out < next_in; i++) {
                        struct pc_task *t = pc__runq_pop(&rq);
                        assert_ptr_equal(t, &tasks[next_out]);
                        next_out++;
                }
        }
        assert_null(pc__runq_pop(&rq));
        assert_int_equal(pc__runq_len(&rq), 0);
        assert_null(rq.ovf_head);
        assert_null(rq.ovf_tail);
}

static void test_push_while_overflowing_keeps_order(void **state)
{
        enum { CAP = 4 };
        struct pc_task *slots[CAP];
        struct pc_task t[10];
        struct pc_runq rq = {.mask = CAP - 1, .slots = slots};

        (void)state;
        for (int i = 0; i < 6; i++)
                pc__runq_push(&rq, &t[i]); /* 4 in the ring, 2 overflow */
        assert_int_equal(rq.ovf_len, 2);
        assert_ptr_equal(pc__runq_pop(&rq), &t[0]); /* ring has room now */
        pc__runq_push(&rq, &t[6]); /* must queue behind t[4], t[5] */
        for (int i = 1; i < 7; i++)
                assert_ptr_equal(pc__runq_pop(&rq), &t[i]);
        assert_null(pc__runq_pop(&rq));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fifo_through_overflow),
                cmocka_unit_test(test_push_while_overflowing_keeps_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
