/* SPDX-License-Identifier: MIT */
/*
 * spawn peer: OpenMP tasks (libgomp). Each thread of the parallel region
 * is a driver: it spawns a batch of 64 empty tasks, waits for them
 * (taskwait, running tasks meanwhile) and repeats until the deadline.
 * percore's driver is itself a spawned task that runs after its batch in
 * FIFO order; here the driver is the thread's loop, which is not a task,
 * so only the leaf tasks are counted.
 */
#include <errno.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "peers.h"

static struct peer_count count[PEER_MAX_THREADS];

static void leaf(void)
{
        count[omp_get_thread_num()].ran++;
}

double peer_openmp_spawn(unsigned workers, const int *cpus, double seconds)
{
        _Atomic int pin_err = 0;
        int team = 0;
        unsigned long long total = 0;
        double t0, t1, deadline;
        cpu_set_t saved;
        int rc;

        if (workers == 0 || workers > PEER_MAX_THREADS)
                return -EINVAL;
        rc = peer_affinity_save(&saved);
        if (rc)
                return rc;
        memset(count, 0, sizeof(count));
        omp_set_dynamic(0);
        omp_set_num_threads((int)workers);
        t0 = peer_now_s();
        deadline = t0 + seconds;
#pragma omp parallel
        {
                int me = omp_get_thread_num();

                if (me == 0)
                        team = omp_get_num_threads();

                if (cpus) {
                        int e = peer_pin_self(cpus[me]);
                        if (e)
                                atomic_store(&pin_err, e);
                }
                while (peer_now_s() < deadline) {
                        for (int i = 0; i < PEER_BATCH; i++) {
#pragma omp task
                                leaf();
                        }
#pragma omp taskwait
                }
        }
        t1 = peer_now_s();
        if (cpus)
                peer_affinity_restore(&saved);
        if (atomic_load(&pin_err))
                return atomic_load(&pin_err);
        /* libgomp may give a smaller team than asked (thread limits). */
        if ((unsigned)team != workers)
                return -EAGAIN;
        for (unsigned i = 0; i < workers; i++)
                total += count[i].ran;
        return (double)total / workers / (t1 - t0);
}
