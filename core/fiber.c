/* SPDX-License-Identifier: MIT */
/*
 * Fibers (pc_fiber.h). A fiber runs inside a task: resume_task() switches
 * from the task runner's stack to the fiber's, and the fiber switches back
 * when it yields, waits or ends, telling the runner what to do next
 * (w->fib.action). Only then, with the fiber's stack left, is it queued
 * again or freed, so no other code can resume a fiber that is still
 * running on its stack.
 *
 * A wait registers the fiber with whoever will wake it (a timer, a fiber
 * it joins), then switches out; the runner moves it from RUN to
 * SUSPENDED. A wake-up that comes before that finds RUN and leaves
 * NOTIFIED, which the runner sees and queues the fiber again at once: no
 * wake-up is lost, none is taken twice.
 *
 * Memory: one mapping per fiber, [guard page][stack ... struct pc_fiber],
 * made on first use and kept in its worker's cache after the fiber ends.
 * Every mapping is on the runtime's list, freed at pc_runtime_destroy().
 * A fault in a guard page ends the process with "fiber stack overflow on
 * worker W" (the handler runs on an alternate signal stack).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pc_core_pvt.h"
#include "pc_fiber.h"

/* Boost.Context's fcontext interface: plain C symbols in libboost_context,
 * and on x86-64 our own switch_x86_64.S, which keeps the floating-point
 * control state out of the switch (half its cost). */
typedef void *fcontext_t;
typedef struct {
        fcontext_t fctx;
        void *data;
} transfer_t;
#if defined(__x86_64__) && defined(__LP64__)
extern transfer_t pc__fctx_jump(fcontext_t const to, void *vp);
extern fcontext_t pc__fctx_make(void *sp, size_t size, void (*fn)(transfer_t));
#define ctx_jump pc__fctx_jump
#define ctx_make pc__fctx_make
#else
extern transfer_t jump_fcontext(fcontext_t const to, void *vp);
extern fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));
#define ctx_jump jump_fcontext
#define ctx_make make_fcontext
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PC_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define PC_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PC_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define PC_TSAN 1
#endif

#ifdef PC_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* A stack ASan saw frames on keeps their poison in its shadow after the
 * frames are gone (a fiber that ended, a mapping unmapped and mapped again
 * at the same address): cleared whenever a stack is handed out. */
#define STACK_CLEAN(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define STACK_CLEAN(p, n) ((void)(p), (void)(n))
#endif
#ifdef PC_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define FIBER_CACHE 256 /* finished fibers a worker keeps for reuse */

enum { F_READY = 1, F_RUN, F_SUSPENDED, F_NOTIFIED, F_DONE };
enum { A_YIELD = 1, A_SUSPEND, A_DONE };
#define JOIN_DONE ((struct pc_fiber *)1)

struct pc_fiber {
        fcontext_t ctx; /* where it resumes while switched out */
        pc_fiber_fn fn;
        void *arg, *result;
        struct pc_task task;   /* queues its next run */
        struct pc_timer timer; /* pc_fiber_sleep_ns */
        _Atomic int state;
        /* NULL, the fiber waiting in pc_fiber_join, or JOIN_DONE once ended */
        _Atomic(struct pc_fiber *) joiner;
        int wake_rc; /* what the wait it returns from reports */
        bool detached;
        bool sticky;   /* never leaves @home (thread-per-core mode) */
        unsigned home; /* the worker it last ran on */
        struct pc_runtime *rt;
        struct pc_fiber *next;               /* in a worker's cache */
        struct pc_fiber *all_prev, *all_next; /* rt->fib_all */
        char *map, *stack_lo;
        size_t maplen, stack_size;
        void *tsan;      /* its ThreadSanitizer fiber */
        void *asan_fake; /* AddressSanitizer's fake stack while switched out */
} PC_ALIGNED;

/* The worker running the caller, read afresh: never cached across a
 * context switch by the compiler. */
static __attribute__((noinline)) struct pc_worker *cur_worker(void)
{
        struct pc_worker *w = pc__self;

        __asm__ volatile("" ::: "memory");
        return w;
}

struct pc_fiber *pc_fiber_self(void)
{
        struct pc_worker *w = cur_worker();

        return w ? w->fib.cur : NULL;
}

/* ---- stacks ----------------------------------------------------------------- */

static void overflow_guard_install(void);

static struct pc_fiber *fiber_get(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t stack = ((size_t)rt->cfg.fiber_stack_kb * 1024 + page - 1) & ~(page - 1);
        size_t len = page + stack;
        struct pc_fiber *f = w->fib.cache;
        char *m;

        if (f) {
                w->fib.cache = f->next;
                w->fib.ncache--;
                STACK_CLEAN(f->stack_lo, f->stack_size);
                return f;
        }
        overflow_guard_install();
        m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m == MAP_FAILED)
                return NULL;
        if (mprotect(m, page, PROT_NONE)) {
                munmap(m, len);
                return NULL;
        }
        /* Node-local like the rest of the worker's memory; a stolen fiber
         * runs on from where it started. */
        (void)pc_numa_prefer(m + page, len - page, w->node);
        STACK_CLEAN(m + page, len - page);
        f = (struct pc_fiber *)(m + len - ((sizeof(*f) + PC_CACHE_LINE - 1) &
                                            ~(size_t)(PC_CACHE_LINE - 1)));
        memset(f, 0, sizeof(*f));
        f->map = m;
        f->maplen = len;
        f->stack_lo = m + page;
        f->stack_size = (size_t)((char *)f - f->stack_lo);
        f->rt = rt;
        pthread_mutex_lock(&rt->fib_lock);
        f->all_next = rt->fib_all;
        if (rt->fib_all)
                rt->fib_all->all_prev = f;
        rt->fib_all = f;
        pthread_mutex_unlock(&rt->fib_lock);
        return f;
}

static void fiber_put(struct pc_worker *w, struct pc_fiber *f)
{
        struct pc_runtime *rt = f->rt;

        if (w->fib.ncache < FIBER_CACHE) {
                f->next = w->fib.cache;
                w->fib.cache = f;
                w->fib.ncache++;
                return;
        }
        pthread_mutex_lock(&rt->fib_lock);
        if (f->all_prev)
                f->all_prev->all_next = f->all_next;
        else
                rt->fib_all = f->all_next;
        if (f->all_next)
                f->all_next->all_prev = f->all_prev;
        pthread_mutex_unlock(&rt->fib_lock);
        STACK_CLEAN(f->stack_lo, f->stack_size); /* for whatever is mapped there next */
        munmap(f->map, f->maplen);
}

void pc__fiber_runtime_fini(struct pc_runtime *rt)
{
        struct pc_fiber *f = rt->fib_all, *next;

        for (; f; f = next) {
                next = f->all_next;
#ifdef PC_TSAN
                if (f->tsan)
                        __tsan_destroy_fiber(f->tsan);
#endif
                STACK_CLEAN(f->stack_lo, f->stack_size);
                munmap(f->map, f->maplen);
        }
        rt->fib_all = NULL;
}

/* ---- switching ---------------------------------------------------------------- */

/* Queue @f to run on: a sticky one on its worker, an elastic one on the
 * caller's (a worker; thieves may take it from there). A caller-owned task
 * needs no allocation, so this cannot fail on a worker. */
static void requeue(struct pc_fiber *f)
{
        if (f->sticky)
                (void)pc_spawn_task_on(f->home, &f->task);
        else
                (void)pc_spawn_task(&f->task);
}

/* Queue @f again on @w, the worker that just ran it (its home now): the
 * local push requeue() comes to, without the public spawns' checks. */
static inline void requeue_here(struct pc_worker *w, struct pc_fiber *f)
{
        pc__push_local(w, &f->task);
}

/* Back on the fiber's stack, on whichever worker resumed it: from its
 * task runner, or straight from the fiber that yielded to it, whose
 * context we keep for it. */
static void resumed(struct pc_fiber *f, transfer_t t)
{
        struct pc_worker *w = cur_worker();
        struct pc_fiber *from = w->fib.from;

        if (from) {
                w->fib.from = NULL;
                from->ctx = t.fctx;
#ifdef PC_ASAN
                __sanitizer_finish_switch_fiber(f->asan_fake, NULL, NULL);
#endif
                return;
        }
#ifdef PC_ASAN
        __sanitizer_finish_switch_fiber(f->asan_fake, &w->fib.sched_bottom, &w->fib.sched_size);
#else
        (void)f;
#endif
        w->fib.sched = t.fctx;
}

/* Give the worker back to the task runner that resumed us; @w is the
 * worker running us now. */
static void switch_out(struct pc_worker *w, int action)
{
        struct pc_fiber *f = w->fib.cur;
        transfer_t t;

        w->fib.action = action;
#ifdef PC_TSAN
        __tsan_switch_to_fiber(w->fib.tsan_sched, 0);
#endif
#ifdef PC_ASAN
        __sanitizer_start_switch_fiber(action == A_DONE ? NULL : &f->asan_fake,
                                       w->fib.sched_bottom, w->fib.sched_size);
#endif
        t = ctx_jump(w->fib.sched, NULL);
        resumed(f, t);
}

static void resume_task(void *arg);

/*
 * A sticky fiber @f yields on @w. With nothing queued it is the loop's
 * next task, and goes on in place. With a sticky fiber first in line, it
 * switches straight to that one, queued at the tail as a yield queues it,
 * and returns once resumed. Either takes the loop's turn (pc__take_turn());
 * where it cannot, or a task that is no fiber is first, the yield goes
 * through the loop. Returns whether the yield is done. Only @w's thread
 * resumes a sticky fiber, so @f is queued safely while still on its
 * stack: nothing runs it before the switch is over.
 */
static bool yield_direct(struct pc_worker *w, struct pc_fiber *f)
{
        struct pc_runq *rq = &w->rq;
        struct pc_fiber *next;
        struct pc_task *t;
        transfer_t tr;

        if (rq->head == rq->tail) {
                /* In tpc mode the ring and its overflow are all there is. */
                return rq->ovf_head == NULL && pc__take_turn(w);
        }
        t = rq->slots[rq->head & rq->mask];
        if (t->fn != resume_task || !((struct pc_fiber *)t->arg)->sticky || !pc__take_turn(w))
                return false;
        rq->head++;
        next = t->arg;
        atomic_store_explicit(&f->state, F_READY, memory_order_relaxed);
        requeue_here(w, f);
        w->fib.cur = next;
        w->fib.from = f;
        atomic_store_explicit(&next->state, F_RUN, memory_order_relaxed);
#ifdef PC_TSAN
        __tsan_switch_to_fiber(next->tsan, 0);
#endif
#ifdef PC_ASAN
        __sanitizer_start_switch_fiber(&f->asan_fake, next->stack_lo, next->stack_size);
#endif
        tr = ctx_jump(next->ctx, next);
        resumed(f, tr);
        return true;
}

static void fiber_entry(transfer_t t)
{
        struct pc_fiber *f = t.data;

        resumed(f, t);
        f->result = f->fn(f->arg);
        switch_out(cur_worker(), A_DONE);
        abort(); /* a finished fiber is never resumed */
}

static void wake(struct pc_fiber *f, int rc);

/* Ended: freed if detached, else its joiner (if one waits) is woken; the
 * joiner frees it. Nothing touches @f after the exchange hands it over. */
static void finish(struct pc_worker *w, struct pc_fiber *f)
{
        struct pc_fiber *j;

        atomic_store_explicit(&f->state, F_DONE, memory_order_relaxed);
#ifdef PC_TSAN
        __tsan_destroy_fiber(f->tsan);
        f->tsan = NULL;
#endif
        if (f->detached) {
                fiber_put(w, f);
                return;
        }
        j = atomic_exchange_explicit(&f->joiner, JOIN_DONE, memory_order_acq_rel);
        if (j)
                wake(j, 0);
}

/* The task that runs a fiber until it switches out, then does what it
 * asked for, off its stack. */
static void resume_task(void *arg)
{
        struct pc_fiber *f = arg;
        struct pc_worker *w = pc__self;
        transfer_t t;
        int expected = F_RUN;

        pc__alt_stack_ensure();
        w->fib.cur = f;
        f->home = w->id; /* a thief may have taken it */
        atomic_store_explicit(&f->state, F_RUN, memory_order_relaxed);
#ifdef PC_TSAN
        w->fib.tsan_sched = __tsan_get_current_fiber();
        __tsan_switch_to_fiber(f->tsan, 0);
#endif
#ifdef PC_ASAN
        __sanitizer_start_switch_fiber(&w->fib.asan_fake, f->stack_lo, f->stack_size);
#endif
        t = ctx_jump(f->ctx, f);
#ifdef PC_ASAN
        __sanitizer_finish_switch_fiber(w->fib.asan_fake, NULL, NULL);
#endif
        /* Back from @f, or from a fiber it yielded to straight. */
        f = w->fib.cur;
        f->ctx = t.fctx;
        w->fib.cur = NULL;
        switch (w->fib.action) {
        case A_YIELD:
                atomic_store_explicit(&f->state, F_READY, memory_order_relaxed);
                requeue_here(w, f);
                break;
        case A_SUSPEND:
                if (!atomic_compare_exchange_strong_explicit(&f->state, &expected, F_SUSPENDED,
                                                             memory_order_acq_rel,
                                                             memory_order_acquire)) {
                        /* Woken before it was even suspended. */
                        atomic_store_explicit(&f->state, F_READY, memory_order_relaxed);
                        requeue_here(w, f);
                }
                break;
        default:
                finish(w, f);
                break;
        }
}

/* Make @f runnable again, its wait returning @rc. Worker only. */
static void wake(struct pc_fiber *f, int rc)
{
        int s = atomic_load_explicit(&f->state, memory_order_acquire);

        for (;;) {
                /* Each wait has one waker; a wake that finds the fiber
                 * already woken (READY) leaves its result alone. */
                if (s == F_SUSPENDED || s == F_RUN)
                        f->wake_rc = rc;
                if (s == F_SUSPENDED) {
                        if (atomic_compare_exchange_weak_explicit(&f->state, &s, F_READY,
                                                                  memory_order_acq_rel,
                                                                  memory_order_acquire)) {
                                requeue(f);
                                return;
                        }
                } else if (s == F_RUN) {
                        if (atomic_compare_exchange_weak_explicit(&f->state, &s, F_NOTIFIED,
                                                                  memory_order_acq_rel,
                                                                  memory_order_acquire))
                                return;
                } else {
                        return; /* already woken */
                }
        }
}

/* ---- the API -------------------------------------------------------------------- */

int pc_fiber_spawn(pc_fiber_fn fn, void *arg, struct pc_fiber **out)
{
        return pc_fiber_spawn_flags(fn, arg, 0, out);
}

int pc_fiber_spawn_flags(pc_fiber_fn fn, void *arg, unsigned flags, struct pc_fiber **out)
{
        struct pc_worker *w = cur_worker();
        struct pc_fiber *f;
        int rc;

        if (w == NULL)
                return -EPERM;
        if (fn == NULL || (flags & ~PC_FIBER_STICKY))
                return -EINVAL;
        f = fiber_get(w);
        if (f == NULL)
                return -ENOMEM;
        f->fn = fn;
        f->arg = arg;
        f->result = NULL;
        f->wake_rc = 0;
        f->detached = out == NULL;
        f->sticky = !w->elastic || (flags & PC_FIBER_STICKY);
        f->home = w->id;
        f->asan_fake = NULL;
        atomic_store_explicit(&f->joiner, NULL, memory_order_relaxed);
        atomic_store_explicit(&f->state, F_READY, memory_order_relaxed);
        f->ctx = ctx_make(f->stack_lo + f->stack_size, f->stack_size, fiber_entry);
#ifdef PC_TSAN
        f->tsan = __tsan_create_fiber(0);
#endif
        /* Elastic mode: the mode's default, stealable whenever queued. */
        pc_task_init(&f->task, resume_task, f, f->sticky ? PC_STICKY : 0);
        rc = pc_spawn_task(&f->task);
        if (rc) {
#ifdef PC_TSAN
                __tsan_destroy_fiber(f->tsan);
                f->tsan = NULL;
#endif
                fiber_put(w, f);
                return rc;
        }
        if (out)
                *out = f;
        return 0;
}

int pc_fiber_join(struct pc_fiber *f, void **result)
{
        struct pc_worker *w = cur_worker();
        struct pc_fiber *me = w ? w->fib.cur : NULL, *expected = NULL;

        if (me == NULL)
                return -EPERM;
        if (f == NULL || f == me)
                return -EINVAL;
        if (atomic_compare_exchange_strong_explicit(&f->joiner, &expected, me,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
                /* Registered: finish() wakes us. */
                switch_out(w, A_SUSPEND);
        } else if (expected != JOIN_DONE) {
                return -EINVAL; /* someone else joins it */
        }
        if (result)
                *result = f->result;
        fiber_put(cur_worker(), f);
        return 0;
}

int pc__fiber_wait(void)
{
        struct pc_worker *w = cur_worker();
        struct pc_fiber *f = w->fib.cur;

        /* wake_rc is the waker's to write (it may already have). */
        switch_out(w, A_SUSPEND);
        return f->wake_rc;
}

void pc__fiber_wake(struct pc_fiber *f, int rc)
{
        wake(f, rc);
}

/*
 * A fiber woken on the worker it waits on from the loop itself (a
 * poller's callback: no fiber runs) goes on at once, as the callback it
 * stands for would have, instead of one loop pass later, so a fiber's
 * pc_call_await() round trip costs what a plain call's does. It runs as a
 * task would (resume_task()); whatever it does next, wait, yield past its
 * turn or end, brings the worker back here. An elastic fiber too: a
 * suspended fiber is in no queue, so no thief can hold it, and the
 * suspend-to-ready exchange makes it ours.
 */
void pc__fiber_wake_here(struct pc_fiber *f, int rc)
{
        struct pc_worker *w = pc__self;
        int s = F_SUSPENDED;

        if (w != NULL && w->fib.cur == NULL && f->home == w->id &&
            atomic_compare_exchange_strong_explicit(&f->state, &s, F_READY, memory_order_acq_rel,
                                                    memory_order_acquire)) {
                f->wake_rc = rc;
                resume_task(f);
                return;
        }
        wake(f, rc);
}

const void *pc__fiber_fn(const struct pc_fiber *f)
{
        return (const void *)f->fn;
}

void pc_fiber_yield(void)
{
        struct pc_worker *w = cur_worker();

        if (w == NULL || w->fib.cur == NULL)
                return;
        /* An elastic fiber always goes through the queue, where a thief
         * may take it. */
        if (w->fib.cur->sticky && yield_direct(w, w->fib.cur))
                return;
        switch_out(w, A_YIELD);
}

void pc__fiber_timer_fn(struct pc_timer *t, void *arg)
{
        (void)t;
        wake(arg, 0);
}

void pc__fiber_cancel(void *fiber_arg)
{
        wake(fiber_arg, -ECANCELED);
}

int pc_fiber_sleep_ns(uint64_t ns)
{
        struct pc_worker *w = cur_worker();
        struct pc_fiber *f = w ? w->fib.cur : NULL;
        int rc;

        if (f == NULL)
                return -EPERM;
        f->wake_rc = 0;
        pc_timer_init(&f->timer, pc__fiber_timer_fn, f);
        rc = pc_timer_start(&f->timer, ns, 0);
        if (rc)
                return rc;
        switch_out(w, A_SUSPEND);
        return f->wake_rc;
}

/* ---- stack overflow --------------------------------------------------------------- */

static struct sigaction old_segv, old_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static pthread_key_t alt_key;
static __thread void *alt_stack PC_TLS_IE; /* checked on every resume */

static void say(const char *s)
{
        ssize_t r = write(2, s, strlen(s));
        (void)r;
}

/* A fault in the guard page of the fiber running on this worker is a stack
 * overflow: say so and die of the fault. Any other fault goes to the
 * handler that was there before ours. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
        struct pc_worker *w = pc__self;
        struct pc_fiber *f = w ? w->fib.cur : NULL;
        const struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
        char *a = si->si_addr;

        if (f && a >= f->map && a < f->stack_lo) {
                char num[12];
                int n = 0;
                unsigned id = w->id;

                do
                        num[n++] = (char)('0' + id % 10);
                while ((id /= 10) && n < 11);
                say("percore: fiber stack overflow on worker ");
                while (n)
                        if (write(2, &num[--n], 1) < 0)
                                break;
                say(" (raise PERCORE_FIBER_STACK_KB)\n");
                signal(sig, SIG_DFL);
                return; /* the access faults again, now fatally */
        }
        if (old->sa_flags & SA_SIGINFO && old->sa_sigaction) {
                old->sa_sigaction(sig, si, uc);
        } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
                old->sa_handler(sig);
        } else {
                signal(sig, SIG_DFL);
        }
}

static void alt_free(void *p)
{
        stack_t ss = {.ss_flags = SS_DISABLE};

        sigaltstack(&ss, NULL);
        munmap(p, (size_t)SIGSTKSZ * 4);
}

static void key_setup(void)
{
        pthread_key_create(&alt_key, alt_free);
}

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void guard_signal(int sig, struct sigaction *old)
{
        struct sigaction sa, cur;

        if (sigaction(sig, NULL, &cur) || ((cur.sa_flags & SA_SIGINFO) &&
                                           cur.sa_sigaction == on_fault))
                return;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, old);
}

/* Ours, in front of whatever handler is there: checked each time stacks
 * are mapped (rarely), so a handler installed after ours (a test harness,
 * the application) does not leave overflows unreported. */
static void overflow_guard_install(void)
{
        pthread_once(&guard_once, key_setup);
        pthread_mutex_lock(&guard_lock);
        guard_signal(SIGSEGV, &old_segv);
        guard_signal(SIGBUS, &old_bus);
        pthread_mutex_unlock(&guard_lock);
}

/* An overflowing fiber has no stack left to run the handler on: each worker
 * thread gets an alternate signal stack, freed when the thread ends. Kept
 * if the thread already has one of its own. */
void pc__alt_stack_ensure(void)
{
        stack_t ss, cur;

        if (alt_stack)
                return;
        pthread_once(&guard_once, key_setup);
        if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
                alt_stack = cur.ss_sp;
                return;
        }
        ss.ss_size = (size_t)SIGSTKSZ * 4;
        ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
        if (ss.ss_sp == MAP_FAILED)
                return;
        ss.ss_flags = 0;
        if (sigaltstack(&ss, NULL)) {
                munmap(ss.ss_sp, ss.ss_size);
                return;
        }
        alt_stack = ss.ss_sp;
        pthread_setspecific(alt_key, ss.ss_sp);
}
