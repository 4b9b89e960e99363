/* SPDX-License-Identifier: MIT */
/*
 * The msg suite's pairs of pinned threads (msg_pair.h): the message work
 * percore and its peers both run, and a pair run that says where each
 * thread ran and how much of its CPU it had.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>

#include "msg_pair.h"

void msg_sink_fn(void *arg)
{
        struct msg_sink *s = arg;

        if ((++s->n & 63) == 0)
                atomic_store_explicit(&s->pub, s->n, memory_order_relaxed);
}

void *msg_echo(void *arg)
{
        return arg;
}

uint64_t msg_thread_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Both threads wait for a go (1) or a no-go (-1), so a pair whose second
 * thread could not start never leaves the first spinning on its peer. */
struct pair_arg {
        void *(*fn)(void *);
        void *arg;
        _Atomic int *go;
        struct msg_cpu *seen;
};

static void *pair_main(void *arg)
{
        struct pair_arg *pa = arg;
        int go;

        while ((go = atomic_load_explicit(pa->go, memory_order_acquire)) == 0)
                sched_yield();
        if (go < 0)
                return NULL;
        uint64_t wall = pc_now_ns(), cpu = msg_thread_cpu_ns();

        pa->seen->before = sched_getcpu();
        pa->seen->switches = -msg_thread_preemptions();
        pa->fn(pa->arg);
        pa->seen->switches += msg_thread_preemptions();
        pa->seen->after = sched_getcpu();
        wall = pc_now_ns() - wall;
        pa->seen->oncpu = wall ? (double)(msg_thread_cpu_ns() - cpu) / (double)wall : NAN;
        return NULL;
}

long msg_thread_preemptions(void)
{
        struct rusage ru;

        return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

int msg_pair_run(bool pin, int cpu0, void *(*a)(void *), int cpu1, void *(*b)(void *),
                 void *arg, struct msg_cpu seen[2])
{
        _Atomic int go = 0;
        struct msg_cpu own[2];
        struct msg_cpu *where = seen ? seen : own;
        struct pair_arg pa[2] = {{a, arg, &go, &where[0]}, {b, arg, &go, &where[1]}};
        int cpus[2] = {cpu0, cpu1};
        pthread_t th[2];
        unsigned started = 0;
        int rc = 0;

        for (unsigned i = 0; i < 2 && rc == 0; i++) {
                pthread_attr_t attr;
                cpu_set_t set;

                where[i] = (struct msg_cpu){pin ? cpus[i] : -1, -1, -1, 0, NAN};
                pthread_attr_init(&attr);
                if (pin) {
                        CPU_ZERO(&set);
                        CPU_SET(cpus[i], &set);
                        rc = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
                }
                if (rc == 0)
                        rc = -pthread_create(&th[i], &attr, pair_main, &pa[i]);
                pthread_attr_destroy(&attr);
                if (rc == 0)
                        started++;
        }
        atomic_store_explicit(&go, rc ? -1 : 1, memory_order_release);
        for (unsigned i = 0; i < started; i++)
                pthread_join(th[i], NULL);
        return rc;
}
