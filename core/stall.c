/* SPDX-License-Identifier: MIT */
/*
 * The stall detector (PERCORE_STALL_MS, Seastar's blocked-reactor notice).
 * Each worker arms a timer on its own thread's CPU clock that signals that
 * thread PC_STALL_TICKS times per threshold of CPU time. The handler
 * compares the loop's progress with what it saw at the previous tick: the
 * tick count of the task loop and the iteration count, which the loop
 * keeps anyway. Unchanged means one task, poller, timer or fiber has held
 * the worker since then. The loop itself pays no system call and no store
 * for this, and a worker asleep or waiting in the kernel uses no CPU time,
 * so its timer does not advance and it is never called stalled.
 *
 * The length of a stall is counted from the first tick that saw it, so it
 * is short by less than one tick and a task that ran less than the
 * threshold is never reported. One stall is reported at the threshold,
 * then each time its length doubles; at most PC_STALL_REPORTS lines a
 * minute are printed for all workers together, and every stall is counted
 * in the worker's stats either way.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pc_core_pvt.h"

#define WINDOW_NS 60000000000ull

/* glibc before 2.41 names the SIGEV_THREAD_ID target only by its union. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_rc;

static uint64_t clock_ns(clockid_t c)
{
        struct timespec ts;

        clock_gettime(c, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The loop's progress: the task loop bumps tick once per task, the
 * iteration count moves once per pass; both only grow, so their sum
 * changes whenever either does. */
static uint64_t progress(const struct pc_worker *w)
{
        return (uint64_t)*(const volatile unsigned *)&w->tick +
               *(const volatile uint64_t *)&w->ls.iterations;
}

/* May this report be printed? PC_STALL_REPORTS a minute for the whole
 * runtime; the others are counted, and the next printed line says how
 * many were left out. */
static bool may_report(struct pc_runtime *rt, uint64_t *unreported)
{
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        uint64_t start = atomic_load_explicit(&rt->stall_window, memory_order_relaxed);

        if (now - start >= WINDOW_NS &&
            atomic_compare_exchange_strong_explicit(&rt->stall_window, &start, now,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed))
                atomic_store_explicit(&rt->stall_reports, 0, memory_order_relaxed);
        if (atomic_fetch_add_explicit(&rt->stall_reports, 1, memory_order_relaxed) >=
            PC_STALL_REPORTS) {
                atomic_fetch_add_explicit(&rt->stall_unreported, 1, memory_order_relaxed);
                return false;
        }
        *unreported =
                atomic_exchange_explicit(&rt->stall_unreported, 0, memory_order_relaxed);
        return true;
}

static void report(struct pc_worker *w, uint64_t len_ns, const void *uc)
{
        struct pc__line l = {.len = 0};
        uint64_t unreported;

        if (w->rt->cfg.log_level < PC_LOG_WARN || !may_report(w->rt, &unreported))
                return;
        pc__line_str(&l, "percore: warn: worker ");
        pc__line_u64(&l, w->id);
        pc__line_str(&l, " stalled for ");
        pc__line_u64(&l, len_ns / 1000000u);
        pc__line_str(&l, " ms of CPU (PERCORE_STALL_MS=");
        pc__line_u64(&l, w->rt->cfg.stall_ms);
        pc__line_str(&l, ")");
        pc__line_running(&l, w);
        if (unreported) {
                pc__line_str(&l, "; ");
                pc__line_u64(&l, unreported);
                pc__line_str(&l, " stall reports left out before this one");
        }
        pc__line_write(&l);
        pc__backtrace(uc);
}

static void on_tick(int sig, siginfo_t *si, void *uc)
{
        struct pc_worker *w = pc__self;
        struct pc__stall *s;
        uint64_t gen, now, threshold;
        int saved = errno;

        (void)sig;
        if (w == NULL || si->si_code != SI_TIMER || si->si_value.sival_ptr != w)
                goto out;
        s = &w->stall;
        if (!*(volatile bool *)&s->on)
                goto out;
        gen = progress(w);
        now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        threshold = (uint64_t)w->rt->cfg.stall_ms * 1000000u;
        if (gen != s->gen) {
                s->gen = gen;
                s->since_ns = now;
                s->next_ns = threshold;
                goto out;
        }
        if (now - s->since_ns < s->next_ns)
                goto out;
        if (s->next_ns == threshold)
                pc__owner_add(&w->stats.stalls, 1);
        report(w, now - s->since_ns, uc);
        s->next_ns *= 2;
out:
        errno = saved;
}

static void handler_install(void)
{
        struct sigaction sa;

        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_tick;
        /* On the alternate stack when the thread has one: a fiber near the
         * end of its stack has no room for a backtrace. */
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        handler_rc = sigaction(PC_STALL_SIGNAL, &sa, NULL) ? -errno : 0;
        pc__backtrace_warm();
}

void pc__stall_start(struct pc_worker *w)
{
        uint64_t period = (uint64_t)w->rt->cfg.stall_ms * 1000000u / PC_STALL_TICKS;
        struct sigevent sev;
        struct itimerspec its;

        if (w->rt->cfg.stall_ms == 0)
                return;
        pthread_once(&handler_once, handler_install);
        memset(&sev, 0, sizeof(sev));
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = PC_STALL_SIGNAL;
        sev.sigev_notify_thread_id = gettid();
        sev.sigev_value.sival_ptr = w;
        if (handler_rc || timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &w->stall.timer)) {
                pc_log(PC_LOG_WARN, "worker %u: no stall detector: %s", w->id,
                       pc_strerror(handler_rc ? handler_rc : -errno));
                return;
        }
        w->stall.gen = progress(w);
        w->stall.since_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        w->stall.next_ns = (uint64_t)w->rt->cfg.stall_ms * 1000000u;
        w->stall.on = true;
        its.it_interval.tv_sec = (time_t)(period / 1000000000u);
        its.it_interval.tv_nsec = (long)(period % 1000000000u);
        its.it_value = its.it_interval;
        timer_settime(w->stall.timer, 0, &its, NULL);
}

void pc__stall_stop(struct pc_worker *w)
{
        if (!w->stall.on)
                return;
        *(volatile bool *)&w->stall.on = false;
        timer_delete(w->stall.timer);
}
