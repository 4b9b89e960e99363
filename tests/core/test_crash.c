/* SPDX-License-Identifier: MIT */
/*
 * A worker that fails: a fatal signal on a worker names the worker and the
 * function it ran, prints a backtrace and ends the process of that signal;
 * a fiber's stack overflow keeps its own message; a fault on a thread that
 * is not a worker is left to the handler that was there before; a worker
 * thread that cannot start, or that exits, fails pc_runtime_run() instead
 * of hanging it. Each case runs in a child process; an alarm ends a child
 * that would hang.
 *
 * The crashing functions are not static, so the reports can name them
 * (the test is linked with -rdynamic). pthread_create() is the test's
 * own, in front of the C library's, so that it can fail on demand.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pc_test.h"

static struct pc_runtime *RT;
static volatile int zero, seven = 7;
static volatile char sink;

/* ---- pthread_create, failing on demand --------------------------------------- */

static _Atomic int creates_left = -1; /* < 0: never fail */

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
        typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                              void *);
        static create_fn *real;

        if (atomic_load(&creates_left) == 0)
                return EAGAIN;
        if (atomic_load(&creates_left) > 0)
                atomic_fetch_sub(&creates_left, 1);
        if (real == NULL)
                *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
        return real(t, a, fn, arg);
}

/* ---- what the workers do ------------------------------------------------------ */

/* Faults the language does not call undefined (UBSan would report those
 * first): a store to a page mapped without access, a division by zero in
 * the instruction itself. */
void crash_segv(void *arg)
{
        volatile char *p =
                mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        (void)arg;
        if (p == MAP_FAILED)
                _exit(5);
        *p = 1;
}

void crash_fpe(void *arg)
{
        (void)arg;
#if defined(__x86_64__) || defined(__i386__)
        int a = seven, d = 0, b = zero;

        __asm__ volatile("idivl %2" : "+a"(a), "+d"(d) : "r"(b));
        sink = (char)a;
#else
        raise(SIGFPE);
#endif
}

void crash_ill(void *arg)
{
        (void)arg;
#if defined(__x86_64__) || defined(__i386__)
        __asm__ volatile("ud2");
#else
        raise(SIGILL);
#endif
}

void crash_abort(void *arg)
{
        (void)arg;
        abort();
}

/* A read past the end of a file mapped longer than the file. */
void crash_bus(void *arg)
{
        char path[] = "/tmp/pc-crash-bus-XXXXXX";
        int fd = mkstemp(path);
        char *p;

        (void)arg;
        unlink(path);
        p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                _exit(5);
        sink = p[0];
}

void *crash_in_fiber(void *arg)
{
        crash_segv(arg);
        return NULL;
}

static void spawn_fiber(void *arg)
{
        (void)arg;
        pc_fiber_spawn(crash_in_fiber, NULL, NULL);
}

static void spawn_overflow(void *arg)
{
        (void)arg;
        pc_fiber_spawn(pc_test_overflow, NULL, NULL);
}

void worker_exits(void *arg)
{
        (void)arg;
        pthread_exit(NULL);
}

/* Worker 0: send @arg to worker 1, and keep worker 0 busy-ish meanwhile. */
static void on_worker_1(void *arg)
{
        pc_spawn_on(1, (pc_task_fn)arg, NULL);
}

static void *fault_off_worker(void *arg)
{
        (void)arg;
        crash_segv(NULL);
        return NULL;
}

static void stop_now(void *arg)
{
        (void)arg;
        pc_runtime_stop(RT);
}

/* ---- the harness ------------------------------------------------------------ */

struct outcome {
        int status;       /* waitpid's */
        char err[16384];  /* the child's stderr */
};

typedef void (*child_fn)(void);

static void run(child_fn fn, struct outcome *o)
{
        char path[] = "/tmp/pc-crash-err-XXXXXX";
        int fd = mkstemp(path);
        ssize_t n;
        pid_t pid;

        assert_true(fd >= 0);
        unlink(path);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fd, STDERR_FILENO);
                alarm(60);
                fn();
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &o->status, 0), pid);
        n = pread(fd, o->err, sizeof(o->err) - 1, 0);
        o->err[n > 0 ? n : 0] = '\0';
        close(fd);
        /* A child leaves by _exit() or a signal, before a sanitizer would
         * set its status: its reports are looked for here. */
        if (strstr(o->err, "Sanitizer") || strstr(o->err, "runtime error:"))
                fail_msg("a sanitizer report:\n%s", o->err);
}

static pc_task_fn victim;

static void crash_child(void)
{
        struct pc_config cfg;

        pc_test_config(&cfg, 2);
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        pc_runtime_run(RT, on_worker_1, (void *)victim);
        _exit(3); /* the run must not come back */
}

/* The child dies of @sig after a report of worker 1 running @running (a
 * function, or "fiber F") with a backtrace through @frame (a function a
 * frame is in: abort()'s caller returns past its own end, so that one
 * shows libc's abort). */
static void expect_death(pc_task_fn fn, int sig, const char *signame, const char *running,
                         const char *frame)
{
        struct outcome o;
        char want[128];

        victim = fn;
        run(crash_child, &o);
        if (!WIFSIGNALED(o.status) || WTERMSIG(o.status) != sig)
                fail_msg("status %#x, expected death by %s; stderr:\n%s", o.status,
                         signame, o.err);
        snprintf(want, sizeof(want), "percore: error: worker 1 got %s", signame);
        if (strstr(o.err, want) == NULL)
                fail_msg("no '%s':\n%s", want, o.err);
        snprintf(want, sizeof(want), " in %s (", running);
        if (strstr(o.err, want) == NULL)
                fail_msg("the function is not named '%s':\n%s", running, o.err);
        snprintf(want, sizeof(want), "(%s+", frame);
        if (strstr(o.err, "percore:   #0 ") == NULL || strstr(o.err, want) == NULL)
                fail_msg("no backtrace through %s:\n%s", frame, o.err);
}

static void test_segv(void **state)
{
        (void)state;
        expect_death(crash_segv, SIGSEGV, "SIGSEGV", "crash_segv", "crash_segv");
}

static void test_bus(void **state)
{
        (void)state;
        expect_death(crash_bus, SIGBUS, "SIGBUS", "crash_bus", "crash_bus");
}

static void test_fpe(void **state)
{
        (void)state;
        expect_death(crash_fpe, SIGFPE, "SIGFPE", "crash_fpe", "crash_fpe");
}

static void test_ill(void **state)
{
        (void)state;
        expect_death(crash_ill, SIGILL, "SIGILL", "crash_ill", "crash_ill");
}

static void test_abort(void **state)
{
        (void)state;
        expect_death(crash_abort, SIGABRT, "SIGABRT", "crash_abort", "abort");
}

static void test_fiber(void **state)
{
        (void)state;
        expect_death(spawn_fiber, SIGSEGV, "SIGSEGV", "fiber crash_in_fiber",
                     "crash_in_fiber");
}

static void overflow_child(void)
{
        struct pc_config cfg;

        pc_test_config(&cfg, 1);
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        pc_runtime_run(RT, spawn_overflow, NULL);
        _exit(3);
}

/* The fiber guard's handler is in front of the report's and keeps its
 * message. */
static void test_fiber_overflow_keeps_its_message(void **state)
{
        struct outcome o;

        (void)state;
        run(overflow_child, &o);
        if (!WIFSIGNALED(o.status) || WTERMSIG(o.status) != SIGSEGV ||
            strstr(o.err, "percore: fiber stack overflow on worker 0") == NULL)
                fail_msg("status %#x:\n%s", o.status, o.err);
}

static void off_worker_child(void)
{
        struct pc_config cfg;
        pthread_t t;

        signal(SIGSEGV, SIG_DFL); /* not cmocka's: the default is "before" here */
        pc_test_config(&cfg, 1);
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        pthread_create(&t, NULL, fault_off_worker, NULL);
        pthread_join(t, NULL);
        _exit(3);
}

/* A thread that is no worker gets no worker's report: its fault goes to
 * the handler that was there before (here the default one). */
static void test_fault_off_worker(void **state)
{
        struct outcome o;

        (void)state;
        run(off_worker_child, &o);
        if (!WIFSIGNALED(o.status) || WTERMSIG(o.status) != SIGSEGV ||
            strstr(o.err, "got SIGSEGV") != NULL)
                fail_msg("status %#x:\n%s", o.status, o.err);
}

static void exit_child(void)
{
        struct pc_config cfg;
        int rc;

        pc_test_config(&cfg, 3);
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        rc = pc_runtime_run(RT, on_worker_1, (void *)worker_exits);
        if (rc != -EOWNERDEAD)
                _exit(10);
        /* Failed for good: destroy it. */
        if (pc_runtime_run(RT, stop_now, NULL) != -EOWNERDEAD)
                _exit(11);
        pc_runtime_destroy(RT);
        _exit(0);
}

/* A worker thread that exits fails the run: no hang, -EOWNERDEAD, said. */
static void test_worker_exits(void **state)
{
        struct outcome o;

        (void)state;
        run(exit_child, &o);
        if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0 ||
            strstr(o.err, "worker 1: its thread exited inside the worker loop") == NULL)
                fail_msg("status %#x:\n%s", o.status, o.err);
}

static void create_fails_child(void)
{
        struct pc_config cfg;
        int rc;

        pc_test_config(&cfg, 3);
        if (pc_runtime_create(&cfg, &RT))
                _exit(2);
        /* Worker 1's thread starts, worker 2's cannot. */
        atomic_store(&creates_left, 1);
        rc = pc_runtime_run(RT, stop_now, NULL);
        atomic_store(&creates_left, -1);
        if (rc != -EAGAIN)
                _exit(10);
        /* Nothing was left behind: the next run works. */
        if (pc_runtime_run(RT, stop_now, NULL) != 0)
                _exit(11);
        pc_runtime_destroy(RT);
        _exit(0);
}

static void test_thread_cannot_start(void **state)
{
        struct outcome o;

        (void)state;
        run(create_fails_child, &o);
        if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0 ||
            strstr(o.err, "cannot start worker 2") == NULL)
                fail_msg("status %#x:\n%s", o.status, o.err);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_segv),
                cmocka_unit_test(test_bus),
                cmocka_unit_test(test_fpe),
                cmocka_unit_test(test_ill),
                cmocka_unit_test(test_abort),
                cmocka_unit_test(test_fiber),
                cmocka_unit_test(test_fiber_overflow_keeps_its_message),
                cmocka_unit_test(test_fault_off_worker),
                cmocka_unit_test(test_worker_exits),
                cmocka_unit_test(test_thread_cannot_start),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
