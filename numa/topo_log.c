/* SPDX-License-Identifier: MIT */
/*
 * Where numa/'s few messages go. The runtime installs a hook into its
 * pc_log(); a program that uses numa/ alone (percore-topo, the tests)
 * gets the same line pc_log() writes at its default level, so the two
 * read alike.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "topo_pvt.h"

static _Atomic(pc_topo_log_fn) log_hook;

void pc_topo_set_log(pc_topo_log_fn fn)
{
        atomic_store_explicit(&log_hook, fn, memory_order_relaxed);
}

/* One write(2) per line, so lines of several threads never interleave. */
static void log_stderr(enum pc_topo_log_level level, const char *msg)
{
        static const char *const names[] = {"error", "warn", "info", "debug"};
        char buf[1100];
        int n;

        if (level > PC_TOPO_LOG_INFO)
                return;
        n = snprintf(buf, sizeof(buf), "percore: %s: %s\n", names[level], msg);
        if (n > (int)sizeof(buf) - 1) {
                n = (int)sizeof(buf) - 1;
                buf[n - 1] = '\n';
        }
        /* A short write to stderr is not worth retrying for a log line. */
        if (write(STDERR_FILENO, buf, (size_t)n) < 0)
                return;
}

void pc__topo_log(enum pc_topo_log_level level, const char *fmt, ...)
{
        pc_topo_log_fn fn = atomic_load_explicit(&log_hook, memory_order_relaxed);
        char msg[1024];
        va_list ap;

        if ((unsigned)level > PC_TOPO_LOG_DEBUG)
                level = PC_TOPO_LOG_DEBUG;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        (fn ? fn : log_stderr)(level, msg);
}
