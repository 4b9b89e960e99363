/* SPDX-License-Identifier: MIT */
/*
 * Fibers: stackful coroutines that run on the reactor. A fiber is a task
 * to the scheduler (FIFO with the other tasks of its worker); when it
 * waits (yield, sleep, join) it gives its worker back and is queued again
 * once it may go on. Each has its own mmap'ed stack of
 * PERCORE_FIBER_STACK_KB (64) with a guard page below it; finished fibers'
 * stacks are kept per worker for the next spawn. A context switch is a few
 * instructions and no system call (core/switch_x86_64.S on x86-64,
 * Boost.Context's fcontext elsewhere), with the sanitizers' fiber hooks
 * around it in ASan and TSan builds. On x86-64 the floating-point control
 * state (rounding mode, exception masks) is the worker thread's, not the
 * fiber's, as with goroutines: a fiber that changes it (fesetround) puts it
 * back before a call that may suspend.
 *
 * In thread-per-core mode a fiber stays on the worker that spawned it. In
 * elastic mode it is queued like any elastic task each time it may run
 * (new, yielded, woken), so an idle worker may take it and continue it
 * there; such steals count in the steal matrix. Code in a fiber must not
 * keep a thread-local variable's address across a call that may suspend.
 *
 * Included by percore.h; programs include <percore.h>.
 */
#ifndef PC_FIBER_H
#define PC_FIBER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pc_fiber;

/** A fiber's body; its return value is what pc_fiber_join() gets. */
typedef void *(*pc_fiber_fn)(void *arg);

/**
 * Start fn(arg) as a fiber on the calling worker: it is queued like a task
 * and first runs when the worker reaches it. *out may be NULL: then the
 * fiber is detached and frees itself when fn returns; otherwise it must be
 * joined exactly once. Errors: -EINVAL (fn NULL), -ENOMEM (no stack could
 * be mapped: see vm.max_map_count, two mappings a fiber), -EPERM
 * off-worker. A fiber spawned while the runtime stops runs in the drain.
 * Worker only (tasks and fibers).
 */
int pc_fiber_spawn(pc_fiber_fn fn, void *arg, struct pc_fiber **out);

/** pc_fiber_spawn_flags(): the fiber never leaves the calling worker, in
 * elastic mode too (it uses what belongs to that worker: a connection, a
 * shard's data). Thread-per-core mode makes every fiber sticky. */
#define PC_FIBER_STICKY (1u << 0)

/**
 * pc_fiber_spawn() with @flags: 0 or PC_FIBER_STICKY. Errors: those of
 * pc_fiber_spawn(), and -EINVAL for an unknown flag. Worker only.
 */
int pc_fiber_spawn_flags(pc_fiber_fn fn, void *arg, unsigned flags, struct pc_fiber **out);

/**
 * Wait for @f to return, then free it; *result (if not NULL) gets fn's
 * return value. Each joinable fiber is joined exactly once, by one fiber
 * (a fiber cannot join itself). Errors: -EINVAL (f NULL, f is the caller,
 * or f already has a joiner), -EPERM off-fiber. Fiber only.
 */
int pc_fiber_join(struct pc_fiber *f, void **result);

/**
 * Let the worker run the tasks, fibers and pollers queued before us; we
 * are queued again at the tail. A fiber of a thread-per-core worker
 * takes a shortcut where it can: with nothing queued before it, it goes
 * on at once, the worker's next task anyway; with another such fiber
 * first in line, it switches straight to that one. The pollers, timers
 * and injector keep their turns, every yield counted as a task run. Does
 * nothing off-fiber. Fiber only.
 */
void pc_fiber_yield(void);

/**
 * Sleep @ns nanoseconds on the worker's timers, the worker free meanwhile.
 * Returns 0, -ECANCELED if the runtime began stopping while we slept (we
 * run on, to our end, in the drain), -ESHUTDOWN if it already had, or
 * -EPERM off-fiber. Fiber only.
 */
int pc_fiber_sleep_ns(uint64_t ns);

/** The calling fiber, or NULL off-fiber. Any thread. */
struct pc_fiber *pc_fiber_self(void);

#ifdef __cplusplus
}
#endif

#endif
