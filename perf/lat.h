/* SPDX-License-Identifier: MIT */
/*
 * What the bench's load generators share: a log-linear latency histogram
 * (32 linear steps per power of two of nanoseconds, so a bucket is within
 * 1/32 of its values) and the CPU time of a process (and of its children)
 * from /proc.
 */
#ifndef PC_BENCH_LAT_H
#define PC_BENCH_LAT_H

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define HIST_SUB 32
#define HIST_BUCKETS (64 * HIST_SUB)

static inline unsigned hist_bucket(uint64_t ns)
{
        unsigned msb;

        if (ns < HIST_SUB)
                return (unsigned)ns;
        msb = 63u - (unsigned)__builtin_clzll(ns);
        /* The HIST_SUB values below the top bit pick the step. */
        return (msb - 4) * HIST_SUB + (unsigned)((ns >> (msb - 5)) & (HIST_SUB - 1));
}

/* The smallest value bucket @b holds. */
static inline uint64_t hist_value(unsigned b)
{
        unsigned msb;

        if (b < HIST_SUB)
                return b;
        msb = b / HIST_SUB + 4;
        return (1ull << msb) | ((uint64_t)(b % HIST_SUB) << (msb - 5));
}

/* The @q quantile of the @n values counted in @h, in nanoseconds. */
static inline double hist_quantile(const uint64_t *h, uint64_t n, double q)
{
        uint64_t want = (uint64_t)((double)n * q), seen = 0;

        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                seen += h[b];
                if (seen > want)
                        return (double)hist_value(b);
        }
        return 0;
}

/* CPU seconds the calling thread has used (user + system). */
static inline double thread_cpu_s(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
                return 0;
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of process @pid (all its threads), from /proc; -1 if gone. */
static inline double proc_cpu_s(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long utime, stime;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (f == NULL)
                return -1;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* Fields after the command (which may hold spaces) start at ") ";
         * utime and stime are the 12th and 13th of them. */
        p = strrchr(buf, ')');
        if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                &utime, &stime) != 2)
                return -1;
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of process @pid and of its children (an nginx master's
 * workers), from /proc; -1 if @pid is gone. A server whose work is in
 * threads of one process reads as proc_cpu_s(). */
static inline double proc_tree_cpu_s(pid_t pid)
{
        double sum = proc_cpu_s(pid);
        struct dirent *e;
        DIR *d;

        if (sum < 0)
                return -1;
        d = opendir("/proc");
        if (d == NULL)
                return sum;
        while ((e = readdir(d)) != NULL) {
                char path[300], buf[512], *p;
                int ppid;
                FILE *f;
                size_t n;

                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                f = fopen(path, "r");
                if (f == NULL)
                        continue;
                n = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[n] = '\0';
                /* The parent is the second field after the command. */
                p = strrchr(buf, ')');
                if (p && sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == pid) {
                        double c = proc_cpu_s((pid_t)atoi(e->d_name));

                        if (c > 0)
                                sum += c;
                }
        }
        closedir(d);
        return sum;
}

#endif
