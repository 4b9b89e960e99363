/* SPDX-License-Identifier: MIT */
/*
 * The load test_metrics_scrape.py scrapes: two workers in elastic mode,
 * worker 0 spawning batches of small tasks (its idle peer steals some),
 * submitting messages to worker 1, injected tasks from this thread, and
 * one task on worker 1 that stalls for ten times PERCORE_STALL_MS at the
 * start. PERCORE_METRICS comes from the environment; "port=N" on stdout
 * says where it listens.
 * Runs until stdin closes, then exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "percore.h"

static struct pc_runtime *RT;

static void spin_us(unsigned us)
{
        uint64_t end = pc_now_ns() + us * 1000ull;

        while (pc_now_ns() < end)
                ;
}

static void small(void *arg)
{
        (void)arg;
        spin_us(5);
}

static void stall(void *arg)
{
        struct timespec ts;
        uint64_t end;

        (void)arg;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        end = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 200000000u;
        do
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        while ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec < end);
}

/* Worker 0, again and again until the runtime stops. */
static void driver(void *arg)
{
        struct pc_spawn_opts o = {.affinity = PC_ELASTIC};

        (void)arg;
        if (pc_runtime_stopping(RT))
                return;
        for (int i = 0; i < 64; i++)
                pc_spawn_ex(small, NULL, &o);
        for (int i = 0; i < 16; i++)
                pc_submit(1, small, NULL);
        pc_spawn(driver, NULL);
}

static void start(void *arg)
{
        (void)arg;
        pc_spawn_on(1, stall, NULL);
        pc_spawn(driver, NULL);
}

/* stdin's end stops the run; meanwhile a trickle of injected tasks. */
static void *watcher(void *arg)
{
        char c;

        (void)arg;
        while (read(STDIN_FILENO, &c, 1) > 0)
                pc_runtime_inject(RT, small, NULL);
        pc_runtime_stop(RT);
        return NULL;
}

int main(void)
{
        struct pc_config cfg;
        pthread_t t;
        int rc;

        pc_config_init(&cfg);
        cfg.workers = 2;
        cfg.mode = PC_MODE_ELASTIC;
        cfg.pin = false;
        cfg.idle = PC_IDLE_PARK;
        cfg.stall_ms = 20;
        rc = pc_runtime_create(&cfg, &RT);
        if (rc == 0)
                rc = pc_shard_init(RT, NULL);
        if (rc) {
                fprintf(stderr, "metrics_load: %s\n", pc_strerror(rc));
                return 1;
        }
        printf("port=%d\n", pc_runtime_metrics_port(RT));
        fflush(stdout);
        if (pthread_create(&t, NULL, watcher, NULL))
                return 1;
        rc = pc_runtime_run(RT, start, NULL);
        pthread_join(t, NULL);
        pc_runtime_destroy(RT);
        return rc ? 1 : 0;
}
