/* SPDX-License-Identifier: MIT */
/*
 * The lines the stall detector and the fatal-signal report write from a
 * signal handler: no stdio, no allocation, one write(2) per line so that
 * lines of several workers do not interleave. Names come from dladdr(),
 * which knows the dynamic symbols (a program's own functions need
 * -rdynamic); otherwise a line says "file+0xoffset", which addr2line
 * resolves.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "pc_core_pvt.h"

#define BT_MAX 64 /* frames a backtrace shows */

void pc__line_str(struct pc__line *l, const char *s)
{
        size_t n = strlen(s), room = sizeof(l->buf) - 1 - l->len;

        if (n > room)
                n = room;
        memcpy(l->buf + l->len, s, n);
        l->len += n;
}

void pc__line_u64(struct pc__line *l, uint64_t v)
{
        char d[20];
        int n = 0;

        do
                d[n++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        while (n && l->len < sizeof(l->buf) - 1)
                l->buf[l->len++] = d[--n];
}

static void line_hex(struct pc__line *l, uintptr_t v)
{
        char d[2 * sizeof(v)];
        int n = 0;

        do
                d[n++] = "0123456789abcdef"[v & 15];
        while ((v >>= 4) != 0);
        pc__line_str(l, "0x");
        while (n && l->len < sizeof(l->buf) - 1)
                l->buf[l->len++] = d[--n];
}

void pc__line_sym(struct pc__line *l, const void *addr)
{
        Dl_info di;

        if (addr == NULL || dladdr(addr, &di) == 0 || di.dli_fname == NULL) {
                line_hex(l, (uintptr_t)addr);
                return;
        }
        if (di.dli_sname) {
                pc__line_str(l, di.dli_sname);
                pc__line_str(l, " (");
        }
        pc__line_str(l, di.dli_fname);
        pc__line_str(l, "+");
        line_hex(l, (uintptr_t)addr - (uintptr_t)di.dli_fbase);
        if (di.dli_sname)
                pc__line_str(l, ")");
}

void pc__line_running(struct pc__line *l, const struct pc_worker *w)
{
        /* Read as the interrupted code left them: it is this thread's. */
        const struct pc_poller *p =
                *(const struct pc_poller *const volatile *)&w->cur_poller;
        const void *fn = *(const void *const volatile *)&w->cur_fn;
        const struct pc_fiber *f = *(struct pc_fiber *const volatile *)&w->fib.cur;

        if (f) {
                pc__line_str(l, " in fiber ");
                pc__line_sym(l, pc__fiber_fn(f));
        } else if (p) {
                pc__line_str(l, " in poller ");
                pc__line_str(l, p->ops->name ? p->ops->name : "?");
                pc__line_str(l, " (");
                pc__line_sym(l, (const void *)p->ops->poll);
                pc__line_str(l, ")");
        } else if (fn) {
                pc__line_str(l, " in ");
                pc__line_sym(l, fn);
        } else {
                pc__line_str(l, " in the worker loop");
        }
}

void pc__line_write(struct pc__line *l)
{
        l->buf[l->len++] = '\n';
        if (write(STDERR_FILENO, l->buf, l->len) < 0)
                l->len = 0; /* nowhere else to say it */
        l->len = 0;
}

/* The program counter the signal interrupted. */
static const void *interrupted_pc(const void *uc)
{
        const ucontext_t *u = uc;

        if (u == NULL)
                return NULL;
#if defined(__x86_64__)
        return (const void *)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
        return (const void *)u->uc_mcontext.pc;
#else
        return NULL;
#endif
}

void pc__backtrace(const void *uc)
{
        void *frames[BT_MAX];
        const void *pc = interrupted_pc(uc);
        int n = backtrace(frames, BT_MAX), first = 0;
        struct pc__line l = {.len = 0};

        /* Skip the handler's own frames: start at the interrupted one. */
        for (int i = 0; i < n && pc; i++) {
                if (frames[i] == pc) {
                        first = i;
                        break;
                }
        }
        for (int i = first; i < n; i++) {
                pc__line_str(&l, "percore:   #");
                pc__line_u64(&l, (uint64_t)(i - first));
                pc__line_str(&l, " ");
                if (write(STDERR_FILENO, l.buf, l.len) < 0)
                        return;
                l.len = 0;
                backtrace_symbols_fd(&frames[i], 1, STDERR_FILENO);
        }
}

void pc__backtrace_warm(void)
{
        void *frames[2];

        (void)backtrace(frames, 2);
}
