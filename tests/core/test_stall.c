/* SPDX-License-Identifier: MIT */
/*
 * The stall detector (PERCORE_STALL_MS): a task, a fiber or a poller that
 * keeps its worker is reported on stderr with its name and a backtrace,
 * one stall again as it doubles, a few reports a minute at most, every
 * stall counted; a worker whose tasks each end in time, or that waits in
 * the kernel, never is. Each case runs a runtime in a child process whose
 * stderr is a file the test then reads. Tasks spin on their thread's CPU
 * clock, the clock the detector measures, so no assertion depends on how
 * the machine schedules the test; the kernel samples a thread's CPU timer
 * at its scheduler tick, so on a loaded machine a report can come late
 * (never early), and every stall a test asserts is ten thresholds long.
 *
 * The spinning functions are not static: the test is linked with
 * -rdynamic so that the reports can name them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pc_test.h"

#define MS 1000000ull

static struct pc_runtime *RT;
static uint64_t spin_ns; /* how long each spinning task runs */
static unsigned ntasks;  /* how many a case spawns */
static _Atomic unsigned done;

static uint64_t cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_cpu(uint64_t ns)
{
        uint64_t end = cpu_ns() + ns;

        while (cpu_ns() < end)
                ;
}

void stall_spin_task(void *arg)
{
        (void)arg;
        spin_cpu(spin_ns);
        if (atomic_fetch_add(&done, 1) + 1 == ntasks)
                pc_runtime_stop(RT);
}

void *stall_spin_fiber(void *arg)
{
        stall_spin_task(arg);
        return NULL;
}

unsigned stall_spin_poll(void *arg)
{
        static unsigned polls;

        (void)arg;
        if (polls++ == 0) {
                spin_cpu(spin_ns);
                pc_runtime_stop(RT);
        }
        return 0;
}

static const struct pc_poller_ops spin_poller = {
        .name = "spinner",
        .poll = stall_spin_poll,
};

/* Waits in the kernel: no CPU time passes, so this is no stall. */
static void sleep_task(void *arg)
{
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)spin_ns};

        (void)arg;
        nanosleep(&ts, NULL);
        if (atomic_fetch_add(&done, 1) + 1 == ntasks)
                pc_runtime_stop(RT);
}

static void spawn_tasks(void *arg)
{
        for (unsigned i = 0; i < ntasks; i++)
                pc_spawn_on(i % pc_runtime_workers(RT), arg, NULL);
}

static void spawn_fiber(void *arg)
{
        (void)arg;
        pc_fiber_spawn(stall_spin_fiber, NULL, NULL);
}

static void add_poller(void *arg)
{
        (void)arg;
        pc_poller_register(&spin_poller, NULL, NULL);
}

enum what { TASKS, SLEEPS, FIBER, POLLER };

struct result {
        uint64_t stalls;  /* the workers' stalls counters, summed */
        unsigned reports; /* report lines on stderr */
        unsigned frames;  /* backtrace lines */
        char err[16384];  /* the child's stderr */
};

/* In a child: a runtime of @workers with PERCORE_STALL_MS @stall_ms runs
 * @what, then writes its stalls count to stdout. */
static void child(unsigned workers, unsigned stall_ms, enum what what)
{
        struct pc_config cfg;
        struct pc_worker_stats st[4];
        uint64_t stalls = 0;
        int n;

        pc_test_config(&cfg, workers);
        cfg.stall_ms = stall_ms;
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        switch (what) {
        case TASKS:
                n = pc_runtime_run(RT, spawn_tasks, (void *)stall_spin_task);
                break;
        case SLEEPS:
                n = pc_runtime_run(RT, spawn_tasks, (void *)sleep_task);
                break;
        case FIBER:
                n = pc_runtime_run(RT, spawn_fiber, NULL);
                break;
        default:
                n = pc_runtime_run(RT, add_poller, NULL);
                break;
        }
        if (n)
                _exit(3);
        n = pc_stats_snapshot(RT, st, 4);
        for (int i = 0; i < n; i++)
                stalls += st[i].stalls;
        printf("stalls=%llu\n", (unsigned long long)stalls);
        fflush(stdout);
        pc_runtime_destroy(RT);
        _exit(0);
}

static unsigned count(const char *s, const char *what)
{
        unsigned n = 0;

        for (; (s = strstr(s, what)) != NULL; s += strlen(what))
                n++;
        return n;
}

static void run(unsigned workers, unsigned stall_ms, enum what what, struct result *r)
{
        char outp[] = "/tmp/pc-stall-out-XXXXXX", errp[] = "/tmp/pc-stall-err-XXXXXX";
        int out = mkstemp(outp), err = mkstemp(errp), status;
        char buf[64] = "";
        unsigned long long stalls;
        ssize_t len;
        pid_t pid;

        assert_true(out >= 0 && err >= 0);
        unlink(outp);
        unlink(errp);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(out, STDOUT_FILENO);
                dup2(err, STDERR_FILENO);
                child(workers, stall_ms, what);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        len = pread(err, r->err, sizeof(r->err) - 1, 0);
        r->err[len > 0 ? len : 0] = '\0';
        /* The child leaves with _exit(), before a sanitizer would set its
         * exit status: its reports are looked for here. */
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            strstr(r->err, "Sanitizer") || strstr(r->err, "runtime error:"))
                fail_msg("child status %d; its stderr:\n%s", status, r->err);
        assert_true(pread(out, buf, sizeof(buf) - 1, 0) > 0);
        assert_int_equal(sscanf(buf, "stalls=%llu", &stalls), 1);
        r->stalls = stalls;
        r->reports = count(r->err, " stalled for ");
        r->frames = count(r->err, "percore:   #");
        close(out);
        close(err);
}

/* A task spinning ten times the threshold: reported, named, with a
 * backtrace through it; again as it doubles (at 1x, 2x, 4x, 8x), and
 * counted once. */
static void test_long_task_reported(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 200 * MS;
        ntasks = 1;
        run(1, 20, TASKS, &r);
        assert_int_equal(r.stalls, 1);
        if (r.reports < 1 || r.reports > 4)
                fail_msg("%u reports:\n%s", r.reports, r.err);
        assert_non_null(strstr(r.err, "worker 0 stalled for "));
        assert_non_null(strstr(r.err, "(PERCORE_STALL_MS=20) in stall_spin_task ("));
        assert_true(r.frames > 0);
        assert_non_null(strstr(r.err, "(stall_spin_task+"));
}

static void test_long_fiber_reported(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 200 * MS;
        ntasks = 1;
        run(1, 20, FIBER, &r);
        assert_int_equal(r.stalls, 1);
        if (strstr(r.err, " in fiber stall_spin_fiber (") == NULL)
                fail_msg("no fiber named:\n%s", r.err);
}

static void test_long_poller_reported(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 200 * MS;
        run(1, 20, POLLER, &r);
        assert_int_equal(r.stalls, 1);
        if (strstr(r.err, " in poller spinner (stall_spin_poll (") == NULL)
                fail_msg("no poller named:\n%s", r.err);
}

/* Two workers busy for 4 thresholds each (the default, 100 ms), every
 * task a fifth of it: never a stall. */
static void test_short_tasks_never_reported(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 20 * MS;
        ntasks = 40;
        run(2, 100, TASKS, &r);
        if (r.stalls || r.reports)
                fail_msg("%llu stalls:\n%s", (unsigned long long)r.stalls, r.err);
}

/* A task asleep in the kernel for ten thresholds uses no CPU time. */
static void test_kernel_wait_not_a_stall(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 200 * MS;
        ntasks = 2;
        run(2, 20, SLEEPS, &r);
        assert_int_equal(r.stalls, 0);
        assert_int_equal(r.reports, 0);
}

/* Eight stalls of ten thresholds each, in well under a minute: all
 * counted, PC_STALL_REPORTS (5) lines printed. */
static void test_rate_limit(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 100 * MS;
        ntasks = 8;
        run(1, 10, TASKS, &r);
        assert_int_equal(r.stalls, 8);
        if (r.reports != 5)
                fail_msg("%u reports:\n%s", r.reports, r.err);
}

static void test_off(void **state)
{
        struct result r;

        (void)state;
        spin_ns = 100 * MS;
        ntasks = 1;
        run(1, 0, TASKS, &r);
        assert_int_equal(r.stalls, 0);
        assert_int_equal(r.reports, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_long_task_reported),
                cmocka_unit_test(test_long_fiber_reported),
                cmocka_unit_test(test_long_poller_reported),
                cmocka_unit_test(test_short_tasks_never_reported),
                cmocka_unit_test(test_kernel_wait_not_a_stall),
                cmocka_unit_test(test_rate_limit),
                cmocka_unit_test(test_off),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
