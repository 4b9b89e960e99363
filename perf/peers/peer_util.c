/* SPDX-License-Identifier: MIT */
/* What the spawn peers share: a clock and thread pinning. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "peers.h"

double peer_now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int peer_pin_self(int cpu)
{
        cpu_set_t set;

        if (cpu < 0 || cpu >= CPU_SETSIZE)
                return -EINVAL;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int peer_affinity_save(cpu_set_t *set)
{
        return -pthread_getaffinity_np(pthread_self(), sizeof(*set), set);
}

void peer_affinity_restore(const cpu_set_t *set)
{
        pthread_setaffinity_np(pthread_self(), sizeof(*set), set);
}
