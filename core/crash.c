/* SPDX-License-Identifier: MIT */
/*
 * A worker that fails says which it was. A fatal signal on a worker thread
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) writes one line naming the
 * worker, the signal and the task, poller or fiber function that ran, then
 * the backtrace from where it happened, and the process ends of that
 * signal: the handler puts back the default action, so a fault faults
 * again and dies of it, and a signal that was sent or raised is raised
 * again. On a thread that is not a worker the handler that was there
 * before percore's gets the signal, as if percore's had not been there.
 *
 * The handlers are installed when the first runtime is created, and run on
 * the worker's alternate signal stack, which every worker thread has, so a
 * worker whose own stack overflowed is reported too. fiber.c's guard-page
 * handler sits in front of this one once fibers run: an overflow of a
 * fiber's stack is its report ("fiber stack overflow on worker W"), any
 * other fault it passes here.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "pc_core_pvt.h"

static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL (sizeof(fatal) / sizeof(fatal[0]))

static struct sigaction previous[NFATAL];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static __thread bool reporting; /* a fault inside the report itself */

static const char *signal_name(int sig)
{
        switch (sig) {
        case SIGSEGV:
                return "SIGSEGV";
        case SIGBUS:
                return "SIGBUS";
        case SIGFPE:
                return "SIGFPE";
        case SIGILL:
                return "SIGILL";
        default:
                return "SIGABRT";
        }
}

static void report(struct pc_worker *w, int sig, const siginfo_t *si, const void *uc)
{
        struct pc__line l = {.len = 0};

        pc__line_str(&l, "percore: error: worker ");
        pc__line_u64(&l, w->id);
        pc__line_str(&l, " got ");
        pc__line_str(&l, signal_name(sig));
        if (si->si_code > 0 && sig != SIGABRT) {
                /* A fault: where. */
                pc__line_str(&l, " at ");
                pc__line_sym(&l, si->si_addr);
        }
        pc__line_running(&l, w);
        pc__line_write(&l);
        pc__backtrace(uc);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
        struct pc_worker *w = pc__self;
        struct sigaction dfl;
        unsigned i = 0;
        int saved = errno;

        while (i < NFATAL && fatal[i] != sig)
                i++;
        if (w == NULL && i < NFATAL && (previous[i].sa_flags & SA_SIGINFO) &&
            previous[i].sa_sigaction) {
                /* Not ours to report: as if we had never been there. */
                previous[i].sa_sigaction(sig, si, uc);
                errno = saved;
                return;
        }
        if (w == NULL && i < NFATAL && !(previous[i].sa_flags & SA_SIGINFO) &&
            previous[i].sa_handler != SIG_DFL) {
                if (previous[i].sa_handler != SIG_IGN)
                        previous[i].sa_handler(sig);
                errno = saved;
                return;
        }
        if (w && !reporting) {
                reporting = true;
                report(w, sig, si, uc);
        }
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        /* A fault happens again as we return; a signal that was sent
         * (kill, raise, abort) is sent again, and arrives once this
         * handler has returned. */
        if (si->si_code <= 0)
                raise(sig);
        errno = saved;
}

static void install(void)
{
        struct sigaction sa;

        pc__backtrace_warm();
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (unsigned i = 0; i < NFATAL; i++)
                if (sigaction(fatal[i], &sa, &previous[i]))
                        pc_log(PC_LOG_WARN, "no report of %s on workers: %s",
                               signal_name(fatal[i]), pc_strerror(-errno));
}

void pc__crash_install(void)
{
        pthread_once(&install_once, install);
}
