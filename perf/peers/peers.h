/* SPDX-License-Identifier: MIT */
/*
 * Peer drivers of the spawn suite: the same workload shape as
 * suite_spawn.c (batches of 64 empty tasks spawned by a driver on each
 * worker), run by another task scheduler. Plain C declarations, so the
 * C++ (oneTBB) driver can implement them and bench.c can call them.
 */
#ifndef PC_BENCH_PEERS_H
#define PC_BENCH_PEERS_H

#include <sched.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PEER_BATCH       64
#define PEER_MAX_THREADS 256

/* A count one thread owns, alone on its cache line. */
struct peer_count {
        unsigned long long ran;
        char pad[56];
};

/*
 * Run the spawn workload with @workers OpenMP threads (libgomp) for
 * @seconds. When @cpus is not NULL, thread i is pinned to @cpus[i] for the
 * run, like percore's worker i. Returns tasks run per second per thread,
 * or a negative errno (-ENOTSUP when built without OpenMP).
 * Main thread only; not reentrant.
 */
double peer_openmp_spawn(unsigned workers, const int *cpus, double seconds);

/* The same with a oneTBB task_arena of @workers slots and task_groups. */
double peer_tbb_spawn(unsigned workers, const int *cpus, double seconds);

/* Helpers both drivers share (peer_util.c). */
double peer_now_s(void);
/* Pin the calling thread to @cpu; 0 or a negative errno. */
int peer_pin_self(int cpu);
/* Save and restore the calling thread's affinity around a pinned run, so
 * the bench's main thread, which joins the peer's team, gets its mask back. */
int peer_affinity_save(cpu_set_t *set);
void peer_affinity_restore(const cpu_set_t *set);

#ifdef __cplusplus
}
#endif

#endif
