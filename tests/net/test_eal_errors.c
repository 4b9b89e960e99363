/* SPDX-License-Identifier: MIT */
/*
 * EAL errors come back from pc_runtime_create() as -errno with the reason
 * logged; the process goes on (no exit() in the library). The steps run in
 * order in one process, since a failed EAL start can end the EAL's one
 * chance in a process.
 */
#include <errno.h>

#include "pc_test.h"

static int create_with(const char *eal)
{
        struct pc_config cfg;
        struct pc_runtime *rt = NULL;
        int rc;

        pc_test_config(&cfg, 2);
        cfg.log_level = PC_LOG_ERROR;
        cfg.eal_args = eal;
        rc = pc_runtime_create(&cfg, &rt);
        if (rc == 0)
                pc_runtime_destroy(rt);
        else
                assert_null(rt);
        return rc;
}

#define BASE "--no-huge --no-pci -m 64 --file-prefix pc_test_ealerr "

static void test_eal_errors(void **state)
{
        (void)state;
        /* Our own checks, before the EAL sees anything. */
        assert_int_equal(create_with(BASE "--vdev 'net_null0"), -EINVAL);
        assert_int_equal(create_with(BASE "-l 0-1"), -EINVAL);
        assert_int_equal(create_with(BASE "--lcores=0@0"), -EINVAL);
        assert_int_equal(create_with(BASE "--main-lcore 1"), -EINVAL);
        /* The EAL's own argument parser: an option it does not know. */
        assert_int_equal(create_with(BASE "--no-such-eal-option"), -EINVAL);
        /* The EAL cannot start again after a failed start: a clear error,
         * not a crash. */
        assert_int_equal(create_with(BASE "--vdev \"net_null0\" --vdev 'net_ring0'"),
                         -EALREADY);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_eal_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
