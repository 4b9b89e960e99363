/* SPDX-License-Identifier: MIT */
/*
 * Who starts the workers: a backend that attaches at create may claim the
 * launch through its module (DPDK does, so that lcores run the workers);
 * when none does, the runtime starts its own pthreads. A fake backend,
 * registered the way DPDK's is, stands in here: it runs the workers on
 * threads it creates and counts every call the runtime makes of it.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

#define NW   3
#define RUNS 2

/* What the test asks of the backend, and what the runtime did with it.
 * Everything but on_fake is touched by the test's own thread only. */
static struct {
        bool want; /* attach and claim the launch */
        int fail;  /* attach fails with this */
        unsigned attaches, enters, launches, joins, leaves, finis;
        bool destroyed_before_fini;
} B;

/* Set on the threads the fake launcher runs workers on. */
static __thread bool on_fake;

struct fake {
        struct pc__module mod;
        pthread_t thread[NW];
};

static void *fake_body(void *arg)
{
        on_fake = true;
        pc__worker_main(arg);
        return NULL;
}

static int fake_enter(struct pc_runtime *rt)
{
        (void)rt;
        B.enters++;
        on_fake = true;
        return 0;
}

static int fake_launch(struct pc_runtime *rt, struct pc_worker *w)
{
        struct fake *f = rt->launcher_ctx;

        B.launches++;
        return -pthread_create(&f->thread[w->id], NULL, fake_body, w);
}

static void fake_join(struct pc_runtime *rt, struct pc_worker *w)
{
        struct fake *f = rt->launcher_ctx;

        pthread_join(f->thread[w->id], NULL);
        B.joins++;
}

static void fake_leave(struct pc_runtime *rt)
{
        (void)rt;
        B.leaves++;
        on_fake = false;
}

static void fake_fini(struct pc_runtime *rt)
{
        B.finis++;
        free(rt->launcher_ctx);
        rt->launcher_ctx = NULL;
}

static const struct pc__launcher fake_launcher = {
        .name = "fake",
        .enter = fake_enter,
        .launch = fake_launch,
        .join = fake_join,
        .leave = fake_leave,
        .fini = fake_fini,
};

static int fake_attach(struct pc_runtime *rt, char *err, size_t errlen)
{
        struct fake *f;

        B.attaches++;
        if (B.fail) {
                snprintf(err, errlen, "the fake backend refuses");
                return B.fail;
        }
        if (!B.want)
                return 0;
        f = calloc(1, sizeof(*f));
        if (f == NULL) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        f->mod.arg = f;
        f->mod.launcher = &fake_launcher;
        return pc__module_add(rt, &f->mod) == 0 ? 1 : -EBUSY;
}

static struct pc__backend fake_backend = {
        .name = "fake",
        .attach = fake_attach,
};

__attribute__((constructor)) static void fake_register(void)
{
        pc__backend_register(&fake_backend);
}

/* A module added after create, to see when destroy() runs against fini(). */
static void plain_destroy(struct pc_runtime *rt, void *arg)
{
        (void)rt;
        (void)arg;
        B.destroyed_before_fini = B.finis == 0;
}

static struct pc_runtime *RT;
static bool ran_on_fake[NW];
static _Atomic unsigned ran;
/* Each worker's thread name, and the process's as worker 0 saw it, during
 * the run, from /proc (what ps and pgrep read). */
static char thread_comm[NW][16], process_comm[16];

/* The first line of @path (a comm file) into @out, without its newline. */
static void read_comm(const char *path, char *out, size_t size)
{
        FILE *f = fopen(path, "r");

        out[0] = '\0';
        if (f == NULL)
                return;
        if (fgets(out, (int)size, f))
                out[strcspn(out, "\n")] = '\0';
        fclose(f);
}

static void probe(void *arg)
{
        unsigned w = pc_worker_id();

        (void)arg;
        ran_on_fake[w] = on_fake;
        read_comm("/proc/thread-self/comm", thread_comm[w], sizeof(thread_comm[w]));
        if (w == 0)
                read_comm("/proc/self/comm", process_comm, sizeof(process_comm));
        atomic_fetch_add(&ran, 1);
}

/* Worker 0: a probe on every worker, then wait for them all and stop. */
static void stopper(void *arg)
{
        (void)arg;
        if (atomic_load(&ran) == NW)
                pc_runtime_stop(RT);
        else
                pc_spawn(stopper, NULL);
}

static void start_all(void *arg)
{
        (void)arg;
        for (unsigned w = 0; w < NW; w++)
                pc_spawn_on(w, probe, NULL);
        pc_spawn(stopper, NULL);
}

static int reset(void **state)
{
        (void)state;
        memset(&B, 0, sizeof(B));
        RT = NULL;
        return 0;
}

static void test_backend_claims_launch(void **state)
{
        struct pc__module other = {.launcher = &fake_launcher};
        struct pc__module plain = {.destroy = plain_destroy};
        struct pc_config cfg;

        (void)state;
        B.want = true;
        pc_test_config(&cfg, NW);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        assert_int_equal(B.attaches, 1);
        assert_ptr_equal(RT->launcher, &fake_launcher);
        /* One module starts the workers; a second may not. */
        assert_int_equal(pc__module_add(RT, &other), -EBUSY);
        assert_int_equal(pc__module_add(RT, &plain), 0);

        for (unsigned r = 1; r <= RUNS; r++) {
                memset(ran_on_fake, 0, sizeof(ran_on_fake));
                atomic_store(&ran, 0);
                assert_int_equal(pc_runtime_run(RT, start_all, NULL), 0);
                assert_int_equal(atomic_load(&ran), NW);
                for (unsigned w = 0; w < NW; w++)
                        assert_true(ran_on_fake[w]);
                assert_int_equal(B.enters, r);
                assert_int_equal(B.leaves, r);
                assert_int_equal(B.launches, r * (NW - 1));
                assert_int_equal(B.joins, r * (NW - 1));
        }
        assert_int_equal(B.finis, 0);
        pc_runtime_destroy(RT);
        assert_int_equal(B.finis, 1);
        assert_true(B.destroyed_before_fini);
}

static void test_pthreads_when_unclaimed(void **state)
{
        struct pc__module late = {.launcher = &fake_launcher};
        char before[16], after[16], want[16];
        struct pc_config cfg;

        (void)state;
        /* cmocka runs the tests on the process's main thread. */
        read_comm("/proc/self/comm", before, sizeof(before));
        assert_true(before[0] != '\0');
        pc_test_config(&cfg, NW);
        assert_int_equal(pc_runtime_create(&cfg, &RT), 0);
        /* Offered, declined: the runtime's own pinned pthreads. */
        assert_int_equal(B.attaches, 1);
        assert_string_equal(RT->launcher->name, "pthread");
        /* The launch was decided at create. */
        assert_int_equal(pc__module_add(RT, &late), -EBUSY);
        memset(ran_on_fake, 0, sizeof(ran_on_fake));
        atomic_store(&ran, 0);
        assert_int_equal(pc_runtime_run(RT, start_all, NULL), 0);
        assert_int_equal(atomic_load(&ran), NW);
        for (unsigned w = 0; w < NW; w++)
                assert_false(ran_on_fake[w]);
        /* Worker 0 ran on this thread and left the process's name alone;
         * the threads the runtime started say which worker they run. */
        assert_string_equal(process_comm, before);
        assert_string_equal(thread_comm[0], before);
        for (unsigned w = 1; w < NW; w++) {
                snprintf(want, sizeof(want), "pc-worker-%u", w);
                assert_string_equal(thread_comm[w], want);
        }
        read_comm("/proc/self/comm", after, sizeof(after));
        assert_string_equal(after, before);
        assert_int_equal(B.enters + B.launches + B.joins + B.leaves, 0);
        pc_runtime_destroy(RT);
        assert_int_equal(B.finis, 0);
}

static void test_attach_error_fails_create(void **state)
{
        struct pc_config cfg;

        (void)state;
        B.fail = -EIO;
        pc_test_config(&cfg, NW);
        assert_int_equal(pc_runtime_create(&cfg, &RT), -EIO);
        assert_null(RT);
        assert_int_equal(B.attaches, 1);
}

#ifndef PC_HAVE_DPDK
/* EAL arguments that no backend takes are an error, not a pthread run.
 * (With DPDK built in, its backend takes them: tests/net covers that.) */
static void test_eal_args_need_a_backend(void **state)
{
        struct pc_config cfg;

        (void)state;
        pc_test_config(&cfg, NW);
        cfg.eal_args = "--no-huge";
        assert_int_equal(pc_runtime_create(&cfg, &RT), -ENOTSUP);
        assert_null(RT);
        assert_int_equal(B.attaches, 1);
}
#endif

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_backend_claims_launch, reset),
                cmocka_unit_test_setup(test_pthreads_when_unclaimed, reset),
                cmocka_unit_test_setup(test_attach_error_fails_create, reset),
#ifndef PC_HAVE_DPDK
                cmocka_unit_test_setup(test_eal_args_need_a_backend, reset),
#endif
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
