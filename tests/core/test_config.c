/* SPDX-License-Identifier: MIT */
/* Configuration: defaults, environment, validation, CPU lists, messages. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "pc_test.h"

static const char *const all_vars[] = {
        "PERCORE_MODE",         "PERCORE_WORKERS",     "PERCORE_CPUS",
        "PERCORE_PLACEMENT",    "PERCORE_PIN",         "PERCORE_STEAL_BATCH",
        "PERCORE_STEAL_TIERS",  "PERCORE_REMOTE_STEAL_MIN", "PERCORE_IDLE",
        "PERCORE_IDLE_SPIN_US", "PERCORE_MONITOR_MS",  "PERCORE_SEED",
        "PERCORE_SYSFS_ROOT",   "PERCORE_TOPOLOGY",    "PERCORE_EAL_ARGS",
        "PERCORE_LOG",          "PERCORE_STATS",       "PERCORE_STALL_MS",
        "PERCORE_METRICS",      "PERCORE_OVERPROVISIONED",
        /* no longer read: set, each is an error */
        "PERCORE_SCHED",        "PERCORE_SHARED",      "PERCORE_PACK",
};

static int clear_env(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
                unsetenv(all_vars[i]);
        return 0;
}

static void test_defaults(void **state)
{
        struct pc_config c;

        (void)state;
        pc_config_init(&c);
        assert_int_equal(c.mode, PC_MODE_TPC);
        assert_int_equal(c.workers, 0);
        assert_null(c.cpus);
        assert_int_equal(c.placement, PC_PLACE_COMPACT);
        assert_true(c.pin);
        assert_false(c.overprovisioned);
        assert_int_equal(c.steal_batch, 32);
        assert_int_equal(c.steal_tiers, PC_TIERS_NUMA);
        assert_int_equal(c.remote_steal_min, 4);
        assert_int_equal(c.idle, PC_IDLE_ADAPTIVE);
        assert_int_equal(c.idle_spin_us, 50);
        assert_int_equal(c.monitor_ms, 0);
        assert_int_equal(c.seed, 1);
        assert_string_equal(c.sysfs_root, "/sys");
        assert_int_equal(c.topology, PC_TOPO_SYSFS);
        assert_null(c.eal_args);
        assert_int_equal(c.log_level, PC_LOG_INFO);
        assert_false(c.stats);
        assert_int_equal(c.stall_ms, 100);
        assert_null(c.metrics);
        assert_int_equal(pc_config_validate(&c, NULL, 0), 0);
}

static void test_env_applies(void **state)
{
        struct pc_config c;
        char err[256] = "";

        (void)state;
        pc_config_init(&c);
        setenv("PERCORE_MODE", "elastic", 1);
        setenv("PERCORE_WORKERS", "7", 1);
        setenv("PERCORE_CPUS", "0-3,8", 1);
        setenv("PERCORE_PLACEMENT", "spread", 1);
        setenv("PERCORE_PIN", "0", 1);
        setenv("PERCORE_STEAL_BATCH", "128", 1);
        setenv("PERCORE_STEAL_TIERS", "flat", 1);
        setenv("PERCORE_REMOTE_STEAL_MIN", "9", 1);
        setenv("PERCORE_IDLE", "poll", 1);
        setenv("PERCORE_IDLE_SPIN_US", "0", 1);
        setenv("PERCORE_MONITOR_MS", "100", 1);
        setenv("PERCORE_SEED", "18446744073709551615", 1);
        setenv("PERCORE_SYSFS_ROOT", "/tmp/fake", 1);
        setenv("PERCORE_TOPOLOGY", "hwloc", 1);
        setenv("PERCORE_EAL_ARGS", "--no-huge -m 512", 1);
        setenv("PERCORE_LOG", "debug", 1);
        setenv("PERCORE_STATS", "1", 1);
        setenv("PERCORE_STALL_MS", "0", 1);
        setenv("PERCORE_METRICS", "[::1]:9100", 1);
        setenv("PERCORE_OVERPROVISIONED", "1", 1);
        assert_int_equal(pc_config_from_env(&c, err, sizeof(err)), 0);
        assert_int_equal(c.mode, PC_MODE_ELASTIC);
        assert_int_equal(c.workers, 7);
        assert_string_equal(c.cpus, "0-3,8");
        assert_int_equal(c.placement, PC_PLACE_SPREAD);
        assert_false(c.pin);
        assert_int_equal(c.steal_batch, 128);
        assert_int_equal(c.steal_tiers, PC_TIERS_FLAT);
        assert_int_equal(c.remote_steal_min, 9);
        assert_int_equal(c.idle, PC_IDLE_POLL);
        assert_int_equal(c.idle_spin_us, 0);
        assert_int_equal(c.monitor_ms, 100);
        assert_true(c.seed == UINT64_MAX);
        assert_string_equal(c.sysfs_root, "/tmp/fake");
        assert_int_equal(c.topology, PC_TOPO_HWLOC);
        assert_string_equal(c.eal_args, "--no-huge -m 512");
        assert_int_equal(c.log_level, PC_LOG_DEBUG);
        assert_true(c.stats);
        assert_int_equal(c.stall_ms, 0);
        assert_string_equal(c.metrics, "[::1]:9100");
        assert_true(c.overprovisioned);
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), 0);
        setenv("PERCORE_OVERPROVISIONED", "0", 1);
        assert_int_equal(pc_config_from_env(&c, err, sizeof(err)), 0);
        assert_false(c.overprovisioned);
        clear_env(NULL);
}

struct bad {
        const char *var, *val, *must_say;
};

/* Every bad value is refused with a message naming the variable and what
 * it accepts; nothing falls back to a default. */
static void test_env_rejects_bad_values(void **state)
{
        static const struct bad cases[] = {
                {"PERCORE_MODE", "fast", "tpc, elastic, deterministic"},
                {"PERCORE_MODE", "TPC", "tpc"},
                {"PERCORE_MODE", "", "tpc"},
                {"PERCORE_WORKERS", "0", "from 1 to 128"},
                {"PERCORE_WORKERS", "129", "from 1 to 128"},
                {"PERCORE_WORKERS", "-1", "integer"},
                {"PERCORE_WORKERS", "4x", "integer"},
                {"PERCORE_WORKERS", " 4", "integer"},
                {"PERCORE_WORKERS", "99999999999999999999999", "integer"},
                {"PERCORE_CPUS", "0-", "CPU list"},
                {"PERCORE_CPUS", "3-1", "CPU list"},
                {"PERCORE_CPUS", "a", "CPU list"},
                {"PERCORE_CPUS", "0,,1", "CPU list"},
                {"PERCORE_CPUS", "5000", "CPU list"},
                {"PERCORE_CPUS", "", "empty"},
                {"PERCORE_PLACEMENT", "scatter", "compact, spread"},
                {"PERCORE_PIN", "yes", "0, 1"},
                {"PERCORE_PIN", "2", "0, 1"},
                {"PERCORE_STEAL_BATCH", "0", "from 1 to 1024"},
                {"PERCORE_STEAL_BATCH", "2000", "from 1 to 1024"},
                {"PERCORE_STEAL_TIERS", "tiered", "numa, flat"},
                {"PERCORE_REMOTE_STEAL_MIN", "0", "from 1"},
                {"PERCORE_IDLE", "sleep", "poll, park, adaptive"},
                {"PERCORE_OVERPROVISIONED", "yes", "accepted values are 0, 1"},
                {"PERCORE_OVERPROVISIONED", "on", "accepted values are 0, 1"},
                {"PERCORE_OVERPROVISIONED", "", "accepted values are 0, 1"},
                /* Gone, whatever their value: the message says what to set. */
                {"PERCORE_SHARED", "off", "PERCORE_OVERPROVISIONED=1"},
                {"PERCORE_SHARED", "auto", "no longer supported"},
                {"PERCORE_PACK", "1", "PERCORE_OVERPROVISIONED=1"},
                {"PERCORE_SCHED", "normal", "PERCORE_OVERPROVISIONED=1"},
                {"PERCORE_SCHED", "batch", "no longer supported"},
                {"PERCORE_IDLE_SPIN_US", "1.5", "integer"},
                {"PERCORE_MONITOR_MS", "-5", "integer"},
                {"PERCORE_SEED", "0x10", "integer"},
                {"PERCORE_SYSFS_ROOT", "", "empty"},
                {"PERCORE_TOPOLOGY", "proc", "sysfs, hwloc"},
                {"PERCORE_EAL_ARGS", "", "empty"},
                {"PERCORE_LOG", "verbose", "error, warn, info, debug"},
                {"PERCORE_STATS", "true", "0, 1"},
                {"PERCORE_STALL_MS", "10ms", "integer from 0 to 3600000"},
                {"PERCORE_STALL_MS", "3600001", "integer from 0 to 3600000"},
                {"PERCORE_STALL_MS", "", "integer"},
                {"PERCORE_METRICS", "127.0.0.1", "expected ADDR:PORT"},
                {"PERCORE_METRICS", "localhost:9100", "expected ADDR:PORT"},
                {"PERCORE_METRICS", "127.0.0.1:99999", "port from 0 to 65535"},
                {"PERCORE_METRICS", "", "empty"},
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct pc_config c;
                struct pc_runtime *rt = NULL;
                char err[256] = "";

                clear_env(NULL);
                setenv(cases[i].var, cases[i].val, 1);
                pc_config_init(&c);
                assert_int_equal(pc_config_from_env(&c, err, sizeof(err)), -EINVAL);
                if (strstr(err, cases[i].var) == NULL || strstr(err, cases[i].must_say) == NULL)
                        fail_msg("%s='%s': message '%s' lacks the variable or '%s'",
                                 cases[i].var, cases[i].val, err, cases[i].must_say);
                /* The runtime refuses to start the same way. */
                assert_int_equal(pc_runtime_create(NULL, &rt), -EINVAL);
                assert_null(rt);
        }
        clear_env(NULL);
}

static void test_program_then_env(void **state)
{
        struct pc_config c;
        struct pc_runtime *rt;

        (void)state;
        pc_config_init(&c);
        c.workers = 3;
        c.pin = false;
        c.log_level = PC_LOG_WARN;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), 3);
        pc_runtime_destroy(rt);

        setenv("PERCORE_WORKERS", "2", 1);
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), 2);
        assert_int_equal(pc_runtime_config(rt)->workers, 2);
        pc_runtime_destroy(rt);
        clear_env(NULL);
}

static void test_workers_vs_cpus(void **state)
{
        struct pc_config c;
        struct pc_runtime *rt = NULL;
        cpu_set_t mask;
        int ncpu, last = -1;
        char list[32];

        (void)state;
        sched_getaffinity(0, sizeof(mask), &mask);
        ncpu = CPU_COUNT(&mask);
        for (int i = 0; i < CPU_SETSIZE; i++)
                if (CPU_ISSET(i, &mask))
                        last = i;

        /* Default: one worker per allowed CPU, each on its own CPU. */
        pc_config_init(&c);
        c.log_level = PC_LOG_ERROR;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), ncpu);
        for (int w = 0; w < ncpu; w++)
                assert_true(CPU_ISSET(pc_runtime_worker_cpu(rt, (unsigned)w), &mask));
        assert_int_equal(pc_runtime_worker_cpu(rt, (unsigned)ncpu), -EINVAL);
        pc_runtime_destroy(rt);

        /* Pinned, more workers than CPUs: refused. Unpinned: allowed. */
        c.workers = (unsigned)ncpu + 1;
        rt = NULL;
        assert_int_equal(pc_runtime_create(&c, &rt), -EINVAL);
        assert_null(rt);
        c.pin = false;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), ncpu + 1);
        pc_runtime_destroy(rt);

        /* A listed CPU this process may not use is refused when pinning. */
        c.pin = true;
        c.workers = 0;
        c.cpus = "1023";
        rt = NULL;
        if (!CPU_ISSET(1023, &mask))
                assert_int_equal(pc_runtime_create(&c, &rt), -EINVAL);
        /* PERCORE_CPUS picks exactly the listed CPUs. */
        snprintf(list, sizeof(list), "%d", last);
        c.cpus = list;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), 1);
        assert_int_equal(pc_runtime_worker_cpu(rt, 0), last);
        pc_runtime_destroy(rt);

        /* Deterministic mode runs one worker and refuses more. */
        pc_config_init(&c);
        c.log_level = PC_LOG_ERROR;
        c.mode = PC_MODE_DETERMINISTIC;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        assert_int_equal(pc_runtime_workers(rt), 1);
        pc_runtime_destroy(rt);
        c.workers = 2;
        assert_int_equal(pc_runtime_create(&c, &rt), -EINVAL);
}

static void test_validate_program_values(void **state)
{
        struct pc_config c;
        char err[256];

        (void)state;
        pc_config_init(&c);
        c.runq_size = 1000;
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "runq_size"));
        pc_config_init(&c);
        c.steal_batch = 0;
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        pc_config_init(&c);
        c.mode = (enum pc_mode)7;
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        pc_config_init(&c);
        c.workers = PC_MAX_WORKERS + 1;
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        pc_config_init(&c);
        c.cpus = "1,x";
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        pc_config_init(&c);
        c.stall_ms = 3600001;
        assert_int_equal(pc_config_validate(&c, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "stall_ms"));
}

/* Run pc_runtime_create(NULL) with stderr going to @log. */
static int create_logged(struct pc_runtime **rt, char *log, size_t len)
{
        FILE *cap = tmpfile();
        int saved, rc;
        size_t n;

        assert_non_null(cap);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fileno(cap), STDERR_FILENO);
        rc = pc_runtime_create(NULL, rt);
        dup2(saved, STDERR_FILENO);
        close(saved);
        rewind(cap);
        n = fread(log, 1, len - 1, cap);
        log[n] = '\0';
        fclose(cap);
        return rc;
}

/* What each worker's thread saw as its task ran. */
static struct {
        _Atomic int ncpus;  /* CPUs it may run on */
        _Atomic int cpu;    /* the one of them, when one */
        _Atomic int policy; /* its scheduling policy + 1 */
} seen[PC_MAX_WORKERS];
static _Atomic unsigned seen_left;
static struct pc_runtime *seen_rt;

static void look(void *arg)
{
        unsigned me = (unsigned)pc_worker_id();
        cpu_set_t m;

        (void)arg;
        if (sched_getaffinity(0, sizeof(m), &m) == 0) {
                seen[me].ncpus = CPU_COUNT(&m);
                for (int c = 0; c < CPU_SETSIZE; c++)
                        if (CPU_ISSET(c, &m))
                                seen[me].cpu = c;
        }
        seen[me].policy = sched_getscheduler(0) + 1;
        if (atomic_fetch_sub(&seen_left, 1) == 1)
                pc_runtime_stop(seen_rt);
}

static void look_everywhere(void *arg)
{
        (void)arg;
        for (unsigned w = 1; w < pc_runtime_workers(seen_rt); w++)
                assert_int_equal(pc_spawn_on(w, look, NULL), 0);
        look(NULL);
}

/* With no PERCORE_* set, the thread-per-core contract: every worker runs
 * pinned to its own CPU and SCHED_OTHER (the policy of the thread that
 * started it), and the logged configuration says so. */
static void test_defaults_keep_tpc(void **state)
{
        int before = sched_getscheduler(0);
        struct pc_runtime *rt = NULL;
        char log[4096];
        unsigned n;

        (void)state;
        assert_int_equal(create_logged(&rt, log, sizeof(log)), 0);
        assert_non_null(strstr(log, " shared=off sched=normal "));
        n = pc_runtime_workers(rt);
        memset(seen, 0, sizeof(seen));
        seen_left = n;
        seen_rt = rt;
        assert_int_equal(pc_runtime_run(rt, look_everywhere, NULL), 0);
        for (unsigned w = 0; w < n; w++) {
                assert_int_equal(seen[w].ncpus, 1);
                assert_int_equal(seen[w].cpu, pc_runtime_worker_cpu(rt, w));
                assert_int_equal(seen[w].policy - 1, before);
        }
        pc_runtime_destroy(rt);

        /* The switch, logged the same way. */
        setenv("PERCORE_OVERPROVISIONED", "1", 1);
        assert_int_equal(create_logged(&rt, log, sizeof(log)), 0);
        assert_non_null(strstr(log, " shared=overprovisioned sched=batch-when-roaming "));
        assert_true(pc_runtime_config(rt)->overprovisioned);
        pc_runtime_destroy(rt);
        clear_env(NULL);
}

static void test_format_one_line(void **state)
{
        struct pc_config c;
        char buf[1024];

        (void)state;
        pc_config_init(&c);
        c.workers = 4;
        assert_true(pc_config_format(&c, buf, sizeof(buf)) < (int)sizeof(buf));
        assert_non_null(strstr(buf, "mode=tpc"));
        assert_non_null(strstr(buf, "workers=4"));
        assert_non_null(strstr(buf, "idle=adaptive"));
        assert_non_null(strstr(buf, " shared=off sched=normal "));
        assert_non_null(strstr(buf, "stall_ms=100"));
        assert_non_null(strstr(buf, "metrics=off"));
        assert_null(strchr(buf, '\n'));
        assert_string_equal(pc_mode_name(PC_MODE_ELASTIC), "elastic");
}

static void test_cpulist(void **state)
{
        uint64_t set[PC_MAX_CPUS / 64];

        (void)state;
        assert_int_equal(pc_cpulist_parse("0-3,8,10-11", set, PC_MAX_CPUS), 7);
        assert_true(set[0] == 0xd0full);
        assert_int_equal(pc_cpulist_parse("5\n", set, PC_MAX_CPUS), 1);
        assert_int_equal(pc_cpulist_parse(" 1,1,1 ", set, PC_MAX_CPUS), 1);
        assert_int_equal(pc_cpulist_parse("0-1023", set, PC_MAX_CPUS), 1024);
        assert_int_equal(pc_cpulist_parse("1024", set, PC_MAX_CPUS), -ERANGE);
        assert_int_equal(pc_cpulist_parse("0-64", set, 64), -ERANGE);
        assert_int_equal(pc_cpulist_parse("", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse(",", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("1,", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("1-", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("-1", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("4-2", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("1 2", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("1;2", set, PC_MAX_CPUS), -EINVAL);
        assert_int_equal(pc_cpulist_parse("99999999999999999999999", set, PC_MAX_CPUS),
                         -ERANGE);
        assert_int_equal(pc_cpulist_parse(NULL, set, PC_MAX_CPUS), -EINVAL);
}

/* Run pc_topo_load(@root) with stderr going to @log. */
static int topo_load_logged(const char *root, char *log, size_t len)
{
        struct pc_topo *t = NULL;
        FILE *cap = tmpfile();
        int saved, rc;
        size_t n;

        assert_non_null(cap);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fileno(cap), STDERR_FILENO);
        rc = pc_topo_load(root, NULL, &t);
        dup2(saved, STDERR_FILENO);
        close(saved);
        rewind(cap);
        n = fread(log, 1, len - 1, cap);
        log[n] = '\0';
        fclose(cap);
        pc_topo_free(t);
        return rc;
}

/* numa/ knows no runtime: a runtime points its messages at pc_log(), so
 * they follow the runtime's log level. */
static void test_topo_messages(void **state)
{
        const char *fixtures = getenv("PC_FIXTURES");
        char root[4096], log[4096];
        struct pc_runtime *rt = NULL;
        struct pc_config c;

        (void)state;
        assert_non_null(fixtures);
        snprintf(root, sizeof(root), "%s/broken/sys", fixtures);
        pc_config_init(&c);
        c.pin = false;
        c.log_level = PC_LOG_WARN;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        pc_runtime_destroy(rt);
        assert_int_equal(topo_load_logged(root, log, sizeof(log)), 0);
        assert_non_null(strstr(log, "percore: warn: topology: "));
        assert_non_null(strstr(log, "using a flat topology"));

        c.log_level = PC_LOG_ERROR;
        assert_int_equal(pc_runtime_create(&c, &rt), 0);
        pc_runtime_destroy(rt);
        assert_int_equal(topo_load_logged(root, log, sizeof(log)), 0);
        assert_string_equal(log, "");
        assert_int_equal(topo_load_logged("/nonexistent-sysfs", log, sizeof(log)), -ENOENT);
        assert_non_null(strstr(log, "percore: error: topology: cannot use "));
}

static void test_strerror(void **state)
{
        (void)state;
        assert_string_equal(pc_strerror(0), "success");
        assert_string_equal(pc_strerror(-ESHUTDOWN), "runtime is stopping");
        assert_string_equal(pc_strerror(-EPERM), "not called from a worker thread");
        assert_non_null(pc_strerror(-ENOMEM));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_defaults, clear_env),
                cmocka_unit_test_setup(test_env_applies, clear_env),
                cmocka_unit_test_setup(test_env_rejects_bad_values, clear_env),
                cmocka_unit_test_setup(test_program_then_env, clear_env),
                cmocka_unit_test_setup(test_workers_vs_cpus, clear_env),
                cmocka_unit_test_setup(test_validate_program_values, clear_env),
                cmocka_unit_test_setup(test_format_one_line, clear_env),
                cmocka_unit_test_setup(test_defaults_keep_tpc, clear_env),
                cmocka_unit_test_setup(test_cpulist, clear_env),
                cmocka_unit_test_setup(test_topo_messages, clear_env),
                cmocka_unit_test_setup(test_strerror, clear_env),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
