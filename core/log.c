/* SPDX-License-Identifier: MIT */
/*
 * Logging and error text. A line is formatted into one buffer and written
 * with a single write(2), so lines from several threads never interleave.
 * numa/, the layer below, logs through a hook the runtime points here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pc_core_pvt.h"

static _Atomic int log_level = PC_LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void pc__log_set_level(enum pc_log_level level)
{
        atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

void pc_log(enum pc_log_level level, const char *fmt, ...)
{
        char buf[1024];
        va_list ap;
        int n;

        if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed))
                return;
        if ((unsigned)level > PC_LOG_DEBUG)
                level = PC_LOG_DEBUG;
        n = snprintf(buf, sizeof(buf), "percore: %s: ", level_names[level]);
        va_start(ap, fmt);
        n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        va_end(ap);
        if (n > (int)sizeof(buf) - 2)
                n = (int)sizeof(buf) - 2;
        buf[n++] = '\n';
        /* A short write to stderr is not worth retrying for a log line. */
        if (write(STDERR_FILENO, buf, (size_t)n) < 0)
                return;
}

static void topo_log(enum pc_topo_log_level level, const char *msg)
{
        pc_log((enum pc_log_level)level, "%s", msg);
}

void pc__log_hook_topo(void)
{
        pc_topo_set_log(topo_log);
}

const char *pc_strerror(int err)
{
        if (err == 0)
                return "success";
        if (err < 0)
                err = -err;
        switch (err) {
        case ESHUTDOWN:
                return "runtime is stopping";
        case EXDEV:
                return "object belongs to another worker";
        case EPERM:
                return "not called from a worker thread";
        default:
                return strerror(err);
        }
}
