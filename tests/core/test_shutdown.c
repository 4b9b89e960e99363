/* SPDX-License-Identifier: MIT */
/*
 * Shutdown: stopping drains every queued task (including tasks spawned
 * while draining, across workers), stop works from any thread and from a
 * signal, a runtime can run again, and destroy frees what never ran.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pc_test.h"

struct drain {
        struct pc_runtime *rt;
        unsigned nworkers;
        uint64_t queued;   /* tasks queued before stop */
        unsigned depth;    /* chain length spawned while draining */
        _Atomic uint64_t ran;
        _Atomic uint64_t chain_ran;
        _Atomic uint64_t wrong;
};

static struct drain D;

static void leaf(void *arg)
{
        if ((uintptr_t)arg != (uintptr_t)pc_worker_id())
                atomic_fetch_add(&D.wrong, 1);
        atomic_fetch_add(&D.ran, 1);
}

/* A chain that hops worker to worker after stop was requested. */
static void chain(void *arg)
{
        uintptr_t left = (uintptr_t)arg;

        atomic_fetch_add(&D.chain_ran, 1);
        if (left > 0)
                pc_spawn_on(((unsigned)pc_worker_id() + 1) % D.nworkers, chain,
                            (void *)(left - 1));
}

static void fill_and_stop(void *arg)
{
        (void)arg;
        for (uint64_t i = 0; i < D.queued; i++) {
                unsigned w = (unsigned)(i % D.nworkers);
                pc_spawn_on(w, leaf, (void *)(uintptr_t)w);
        }
        pc_runtime_stop(D.rt);
        for (unsigned w = 0; w < D.nworkers; w++)
                pc_spawn_on(w, chain, (void *)(uintptr_t)D.depth);
}

static void test_stop_drains_everything(void **state)
{
        struct pc_config cfg;

        (void)state;
        memset(&D, 0, sizeof(D));
        pc_test_config(&cfg, 4);
        assert_int_equal(pc_runtime_create(&cfg, &D.rt), 0);
        D.nworkers = pc_runtime_workers(D.rt);
        D.queued = pc_test_scaled(200000);
        D.depth = (unsigned)pc_test_scaled(5000);
        assert_int_equal(pc_runtime_run(D.rt, fill_and_stop, NULL), 0);
        assert_int_equal(atomic_load(&D.ran), D.queued);
        assert_int_equal(atomic_load(&D.chain_ran), (uint64_t)D.nworkers * (D.depth + 1));
        assert_int_equal(atomic_load(&D.wrong), 0);

        /* The same runtime runs again, and drains again. */
        memset((void *)&D.ran, 0, sizeof(D.ran));
        atomic_store(&D.chain_ran, 0);
        assert_int_equal(pc_runtime_run(D.rt, fill_and_stop, NULL), 0);
        assert_int_equal(atomic_load(&D.ran), D.queued);
        assert_int_equal(atomic_load(&D.chain_ran), (uint64_t)D.nworkers * (D.depth + 1));
        pc_runtime_destroy(D.rt);
}

/* ---- stop from an outside thread in the middle of a storm --------------- */

static _Atomic int storm_started;
static _Atomic uint64_t storm_spawned, storm_ran;

static void storm_leaf(void *arg)
{
        (void)arg;
        atomic_fetch_add(&storm_ran, 1);
}

static void storm(void *arg)
{
        unsigned n = pc_runtime_workers(pc_runtime_current());

        (void)arg;
        atomic_store(&storm_started, 1);
        if (pc_runtime_stopping(pc_runtime_current()))
                return;
        for (unsigned i = 0; i < 64; i++) {
                if (pc_spawn_on(i % n, storm_leaf, NULL) == 0)
                        atomic_fetch_add(&storm_spawned, 1);
        }
        pc_spawn(storm, NULL);
}

static void storm_main(void *arg)
{
        unsigned n = pc_runtime_workers(pc_runtime_current());

        (void)arg;
        for (unsigned w = 0; w < n; w++)
                pc_spawn_on(w, storm, NULL);
}

static void *stopper(void *arg)
{
        struct pc_runtime *rt = arg;

        while (!atomic_load(&storm_started) || atomic_load(&storm_ran) < 100000)
                sched_yield();
        pc_runtime_stop(rt);
        return NULL;
}

static void test_stop_from_outside_thread(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;
        pthread_t th;

        (void)state;
        pc_test_config(&cfg, 3);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        pthread_create(&th, NULL, stopper, rt);
        assert_int_equal(pc_runtime_run(rt, storm_main, NULL), 0);
        pthread_join(th, NULL);
        assert_true(atomic_load(&storm_spawned) >= 100000);
        assert_int_equal(atomic_load(&storm_ran), atomic_load(&storm_spawned));
        assert_false(pc_runtime_stopping(rt)); /* reset for the next run */
        pc_runtime_destroy(rt);
}

/* ---- SIGTERM stops gracefully ------------------------------------------- */

static _Atomic int after_signal_ran;

static void after_signal(void *arg)
{
        (void)arg;
        atomic_store(&after_signal_ran, 1);
}

static void signal_main(void *arg)
{
        (void)arg;
        pc_spawn(after_signal, NULL);
        kill(getpid(), SIGTERM);
}

static void test_sigterm_stops(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;

        (void)state;
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_stop_on_signals(rt), 0);
        assert_int_equal(pc_runtime_run(rt, signal_main, NULL), 0);
        assert_int_equal(atomic_load(&after_signal_ran), 1);
        pc_runtime_destroy(rt);
        assert_int_equal(pc_runtime_stop_on_signals(NULL), -EINVAL);
}

/* ---- SIGTERM reaches workers that never make a system call ------------- */

/* Workers that spin (PC_IDLE_POLL) make no system call, and a signal
 * handler that ThreadSanitizer defers on such a thread would never run:
 * the signals go to pc-signals instead, and the workers block them while
 * they run. */
static _Atomic int masked_on[2];
static _Atomic bool spin_started;

static void record_mask(void *arg)
{
        sigset_t cur;

        (void)arg;
        assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
        atomic_store(&masked_on[pc_worker_id()],
                     1 + (sigismember(&cur, SIGTERM) == 1 && sigismember(&cur, SIGINT) == 1));
}

static void spin_main(void *arg)
{
        (void)arg;
        record_mask(NULL);
        assert_int_equal(pc_spawn_on(1, record_mask, NULL), 0);
        atomic_store(&spin_started, true);
}

static void *killer(void *arg)
{
        sigset_t set;

        (void)arg;
        /* Not here either: the signal must find pc-signals. */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        while (!atomic_load(&spin_started) || atomic_load(&masked_on[1]) == 0)
                usleep(1000);
        kill(getpid(), SIGTERM);
        return NULL;
}

/* Threads of this process named @name. */
static unsigned threads_named(const char *name)
{
        char path[300], comm[32];
        struct dirent *d;
        unsigned n = 0;
        DIR *dir = opendir("/proc/self/task");

        assert_non_null(dir);
        while ((d = readdir(dir)) != NULL) {
                FILE *f;

                if (d->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
                f = fopen(path, "r");
                if (f == NULL) /* ended meanwhile */
                        continue;
                if (fgets(comm, sizeof(comm), f) && strncmp(comm, name, strlen(name)) == 0)
                        n++;
                fclose(f);
        }
        closedir(dir);
        return n;
}

static void record_mask_stop(void *arg)
{
        record_mask(arg);
        pc_runtime_stop(pc_runtime_current());
}

/* In a child of fork(): a runtime's worker 0 records its mask
 * (masked_on[0]); the child exits with that record. Returns it (1: open,
 * 2: blocked), or -1 when the child failed. */
static int fork_child_masked(void)
{
        pid_t pid = fork();
        int st;

        if (pid == 0) {
                struct pc_config cfg;
                struct pc_runtime *crt;

                pc_test_config(&cfg, 1);
                atomic_store(&masked_on[0], 0);
                if (pc_runtime_create(&cfg, &crt) || pc_runtime_run(crt, record_mask_stop, NULL))
                        _exit(100);
                pc_runtime_destroy(crt);
                _exit(atomic_load(&masked_on[0]));
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) > 2)
                return -1;
        return WEXITSTATUS(st);
}

static void test_sigterm_spinning_workers(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;
        sigset_t cur;
        pthread_t th;

        (void)state;
        pc_test_config(&cfg, 2);
        cfg.idle = PC_IDLE_POLL;
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_stop_on_signals(rt), 0);
        assert_int_equal(threads_named("pc-signals"), 1);
        assert_int_equal(pthread_create(&th, NULL, killer, NULL), 0);
        assert_int_equal(pc_runtime_run(rt, spin_main, NULL), 0);
        pthread_join(th, NULL);
        /* Both workers ran with the two blocked ... */
        assert_int_equal(atomic_load(&masked_on[0]), 2);
        assert_int_equal(atomic_load(&masked_on[1]), 2);
        /* ... and the caller has its own mask back. */
        assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
        assert_int_equal(sigismember(&cur, SIGTERM), 0);
        /* A child of fork() has no pc-signals: its workers keep the
         * signals open (else nothing would ever take them). */
        assert_int_equal(fork_child_masked(), 1);
        pc_runtime_destroy(rt);
        assert_int_equal(threads_named("pc-signals"), 0);
}

/* ---- run twice guards, stop before run, destroy frees the never-run ----- */

static int nested_rc;
static int run_count;

static void count_and_stop(void *arg)
{
        struct pc_runtime *rt = pc_runtime_current();

        (void)arg;
        run_count++;
        nested_rc = pc_runtime_run(rt, count_and_stop, NULL);
        pc_runtime_stop(rt);
}

static void test_lifecycle_edges(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;
        struct pc_task t;

        (void)state;
        pc_test_config(&cfg, 2);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        /* Injected before run: queued, not lost; they run in the next run. */
        atomic_store(&after_signal_ran, 0);
        assert_int_equal(pc_runtime_inject(rt, after_signal, NULL), 0);
        assert_int_equal(pc_runtime_run(rt, count_and_stop, NULL), 0);
        assert_int_equal(run_count, 1);
        assert_int_equal(nested_rc, -EPERM);
        assert_int_equal(atomic_load(&after_signal_ran), 1);

        /* A stop before run: run still runs main and every queued task. */
        pc_runtime_stop(rt);
        assert_int_equal(pc_runtime_run(rt, count_and_stop, NULL), 0);
        assert_int_equal(run_count, 2);

        /* Tasks injected but never run are freed by destroy (ASan checks),
         * and caller-owned ones are left alone. */
        assert_int_equal(pc_runtime_inject(rt, after_signal, NULL), 0);
        pc_task_init(&t, after_signal, NULL, 0);
        assert_int_equal(pc_runtime_inject_task(rt, &t), 0);
        pc_runtime_destroy(rt);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stop_drains_everything),
                cmocka_unit_test(test_stop_from_outside_thread),
                cmocka_unit_test(test_sigterm_stops),
                cmocka_unit_test(test_sigterm_spinning_workers),
                cmocka_unit_test(test_lifecycle_edges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
