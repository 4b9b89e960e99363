/* SPDX-License-Identifier: MIT */
/*
 * SIGINT and SIGTERM stop the runtime (pc_runtime_stop_on_signals()),
 * taken on a thread of their own so that the workers never see them.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pc_core_pvt.h"

static _Atomic(struct pc_runtime *) signal_rt;
/* pc_runtime_drain_on_signals(): SIGTERM drains with this deadline (0: stops). */
static _Atomic uint64_t signal_drain_ns;
static struct sigaction old_int, old_term;
static bool signals_installed;

/* Handlers between their look at signal_rt and the end of the stop they
 * started: destroy waits for none to be left before it frees (a handler
 * that TSan defers, or one on a slow thread, may still be waking the
 * workers' eventfds). */
static _Atomic int signal_busy;

/*
 * Where the signals land. A process-directed signal goes to any thread
 * that does not block it, the main thread first, and that is often a
 * worker: its loop is interrupted (a system call of its returns EINTR),
 * and under ThreadSanitizer the handler waits until that thread next
 * enters an intercepted call, which a worker that polls a device and never
 * sleeps (the DPDK backend) may never do: a SIGTERM was seen to leave such
 * a run going for good. So pc_runtime_stop_on_signals() starts a thread of
 * its own, pc-signals, that waits in poll() with SIGINT and SIGTERM open,
 * and every worker blocks the two while it runs (pc__signals_block()): the
 * handler runs there at once, and the workers never see a signal. The
 * thread ends when pc_runtime_destroy() puts the old handlers back
 * (signal_quit: an eventfd it polls).
 */
static pthread_t signal_thread;
static _Atomic bool signal_thread_on;
static int signal_quit = -1;

static void on_signal(int sig)
{
        struct pc_runtime *rt;
        uint64_t drain;

        atomic_fetch_add(&signal_busy, 1);
        rt = atomic_load(&signal_rt);
        drain = atomic_load(&signal_drain_ns);
        /* A drain already under way (a second SIGTERM) refuses: stop. */
        if (sig != SIGTERM || drain == 0 || pc_runtime_drain(rt, drain) != 0)
                pc_runtime_stop(rt);
        atomic_fetch_sub(&signal_busy, 1);
}

static void stop_signals_set(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGINT);
        sigaddset(set, SIGTERM);
}

static void *signal_main(void *arg)
{
        struct pollfd pfd = {.fd = signal_quit, .events = POLLIN};
        sigset_t set;

        (void)arg;
        stop_signals_set(&set);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        /* A signal ends the wait with EINTR once its handler has run. */
        while (poll(&pfd, 1, -1) <= 0)
                ;
        return NULL;
}

/* Let go of pc-signals, ended (signal_thread_stop()) or, in a child of
 * fork(), never there: its workers then keep the signals open, and the
 * handler (inherited) runs wherever they land. */
static void signal_thread_forget(void)
{
        if (!atomic_load(&signal_thread_on))
                return;
        atomic_store(&signal_thread_on, false);
        close(signal_quit);
        signal_quit = -1;
}

static void signal_atfork_install(void)
{
        int rc = pthread_atfork(NULL, NULL, signal_thread_forget);

        if (rc)
                pc_log(PC_LOG_WARN, "pc-signals: a fork()ed child's runtime may keep "
                       "SIGINT/SIGTERM blocked: pthread_atfork: %s", pc_strerror(-rc));
}

static int signal_thread_start(void)
{
        static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
        sigset_t set, old;
        int rc;

        pthread_once(&atfork_once, signal_atfork_install);

        signal_quit = eventfd(0, EFD_CLOEXEC);
        if (signal_quit < 0)
                return -errno;
        /* Born with the two blocked: it opens them itself. */
        stop_signals_set(&set);
        pthread_sigmask(SIG_BLOCK, &set, &old);
        rc = pthread_create(&signal_thread, NULL, signal_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc) {
                close(signal_quit);
                signal_quit = -1;
                return -rc;
        }
        pthread_setname_np(signal_thread, "pc-signals");
        atomic_store(&signal_thread_on, true);
        return 0;
}

static void signal_thread_stop(void)
{
        uint64_t one = 1;

        if (!atomic_load(&signal_thread_on))
                return;
        if (write(signal_quit, &one, sizeof(one)) != sizeof(one))
                pc_log(PC_LOG_WARN, "pc-signals: cannot tell it to end: %s", pc_strerror(-errno));
        pthread_join(signal_thread, NULL);
        signal_thread_forget();
}

bool pc__signals_block(sigset_t *old)
{
        sigset_t set;

        if (!atomic_load(&signal_thread_on))
                return false;
        stop_signals_set(&set);
        return pthread_sigmask(SIG_BLOCK, &set, old) == 0;
}

void pc__signals_restore(bool blocked, const sigset_t *old)
{
        if (blocked)
                pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int signals_install(struct pc_runtime *rt, uint64_t drain_ns)
{
        struct sigaction sa;
        int rc;

        if (rt == NULL)
                return -EINVAL;
        atomic_store(&signal_drain_ns, drain_ns);
        atomic_store(&signal_rt, rt);
        if (signals_installed)
                return 0;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(SIGINT, &sa, &old_int) != 0)
                return -errno;
        if (sigaction(SIGTERM, &sa, &old_term) != 0) {
                rc = -errno;
                sigaction(SIGINT, &old_int, NULL);
                return rc;
        }
        signals_installed = true;
        rc = signal_thread_start();
        if (rc) /* the handlers still work, on whichever thread they land */
                pc_log(PC_LOG_WARN, "pc-signals: no thread for SIGINT/SIGTERM (%s): they "
                       "may interrupt a worker", pc_strerror(rc));
        return 0;
}

int pc_runtime_stop_on_signals(struct pc_runtime *rt)
{
        return signals_install(rt, 0);
}

int pc_runtime_drain_on_signals(struct pc_runtime *rt, uint64_t deadline_ns)
{
        if (deadline_ns == 0)
                return -EINVAL;
        return signals_install(rt, deadline_ns);
}

/* When @rt is the runtime the signals stop: the old handlers back,
 * pc-signals ended, and no handler still stopping @rt. */
void pc__signals_forget(struct pc_runtime *rt)
{
        if (atomic_load(&signal_rt) != rt)
                return;
        atomic_store(&signal_rt, NULL);
        if (signals_installed) {
                sigaction(SIGINT, &old_int, NULL);
                sigaction(SIGTERM, &old_term, NULL);
                signals_installed = false;
                signal_thread_stop();
        }
        /* A handler that read rt before the store above finishes its stop
         * before anything of rt is freed (seq_cst: its count comes before
         * its read). */
        while (atomic_load(&signal_busy) != 0)
                sched_yield();
}
