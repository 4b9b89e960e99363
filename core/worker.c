/* SPDX-License-Identifier: MIT */
/*
 * The reactor loop, one per worker, and parking. Each iteration:
 *   1. take tasks other workers sent (inbox), run up to a budget of tasks
 *      (every 61st looks at the global injector first; timers are checked
 *      every 32 tasks);
 *   2. run the pollers;
 *   3. expire timers;
 *   4. if nothing was found: spin, then park.
 *
 * Parking is the Dekker pattern with producers: the worker publishes its
 * sleeping flag (seq_cst) and then re-reads every source; a producer
 * publishes its work (seq_cst) and then reads the flag. At least one side
 * sees the other, so no wake-up is lost, and a producer makes the eventfd
 * syscall only when the worker really sleeps.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pc_core_pvt.h"

static uint64_t splitmix64(uint64_t x)
{
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return x ^ (x >> 31);
}

/*
 * Whether worker @cpu's idle spin runs a pause per iteration. A pause is
 * there to give a core's shared pipeline to its other hardware thread
 * (and, on a core of its own, costs about half of an idle iteration,
 * time in which a message that arrived waits).
 * So it pauses when the core has another online thread, or when it is
 * not pinned and cannot know; a worker alone on its core polls flat out,
 * as a DPDK or Seastar poll loop does, except while a poller says its
 * looks slow a far line's writer (PC__POLL_PACE).
 */
static bool spin_pauses(const struct pc_runtime *rt, int cpu)
{
        const struct pc_topo *t = rt->topo;

        if (!rt->cfg.pin || t == NULL || cpu < 0 || (unsigned)cpu >= t->ncpus ||
            !t->cpu[cpu].online)
                return true;
        for (unsigned c = 0; c < t->ncpus; c++)
                if ((int)c != cpu && t->cpu[c].online && t->cpu[c].core == t->cpu[cpu].core)
                        return true;
        return false;
}

int pc__worker_init(struct pc_worker *w, struct pc_runtime *rt, unsigned id, unsigned runq)
{
        memset(w, 0, sizeof(*w));
        w->node = rt->nodes[id];
        w->rt = rt;
        w->id = id;
        w->cpu = rt->cpus[id];
        w->inject_countdown = PC_INJECT_EVERY;
        w->rng = splitmix64(rt->cfg.seed ^ ((uint64_t)id << 32)) | 1;
        w->mode = atomic_load(&rt->mode);
        w->elastic = w->mode == PC_MODE_ELASTIC && rt->nworkers > 1;
        w->spin_pause = spin_pauses(rt, w->cpu);
        w->remote_min = rt->cfg.remote_steal_min;
        w->efd = -1;
        w->rq.mask = runq - 1;
        w->rq.slots = pc_numa_alloc(runq * sizeof(*w->rq.slots), w->node);
        w->sq.mask = runq - 1;
        w->sq.slots = pc_numa_alloc(runq * sizeof(*w->sq.slots), w->node);
        w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (w->rq.slots == NULL || w->sq.slots == NULL || w->efd < 0) {
                int err = w->efd < 0 ? -errno : -ENOMEM;
                pc__worker_fini(w);
                return err;
        }
        return 0;
}

void pc__worker_fini(struct pc_worker *w)
{
        for (unsigned i = 0; i < w->npollers; i++)
                free(w->pollers[i]);
        free(w->pollers);
        free(w->theap);
        for (unsigned i = 0; i < w->nchunks; i++)
                pc_numa_free(w->chunks[i], PC_TASK_CHUNK * sizeof(struct pc_task));
        free(w->chunks);
        pc_numa_free(w->rq.slots, (w->rq.mask + 1) * sizeof(*w->rq.slots));
        pc_numa_free(w->sq.slots, (w->sq.mask + 1) * sizeof(*w->sq.slots));
        if (w->efd >= 0)
                close(w->efd);
}

/* Wake @w if it sleeps. The plain load keeps a busy target free of RMWs;
 * the exchange makes sure only one producer pays for the syscall. */
void pc__wake(struct pc_worker *w)
{
        static const uint64_t one = 1;

        if (atomic_load_explicit(&w->sleeping, memory_order_seq_cst) &&
            atomic_exchange_explicit(&w->sleeping, 0, memory_order_seq_cst)) {
                /* A worker of the same runtime that is itself just out
                 * of a park (parked until its iteration ends) says when it
                 * woke us: see pc__spin_after_park(). A busy worker's wake,
                 * or another thread's, does not; nor any wake where no
                 * spin adapts (idle() reads the stamp only then). */
                if (pc__self != NULL && pc__self->rt == w->rt && pc__self->parked &&
                    w->rt->cfg.idle == PC_IDLE_ADAPTIVE)
                        atomic_store_explicit(&w->woken_at, pc__now(), memory_order_release);
                /* EAGAIN means the counter is already non-zero: awake enough. */
                if (write(w->efd, &one, sizeof(one)) < 0)
                        return;
        }
}

void pc_worker_wake(struct pc_runtime *rt, unsigned w)
{
        if (rt && w < rt->nworkers)
                pc__wake(rt->workers[w]);
}

/* Move tasks other workers sent into the run queue, oldest first. */
static __attribute__((noinline)) unsigned drain_inbox_slow(struct pc_worker *w)
{
        struct pc_task *t, *rev = NULL, *next;
        unsigned n = 0;

        t = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
        while (t) {
                next = t->next;
                t->next = rev;
                rev = t;
                t = next;
        }
        while (rev) {
                next = rev->next;
                pc__push_local(w, rev);
                rev = next;
                n++;
        }
        pc__count_recv(w, n);
        w->ls.tasks_remote += n;
        return n;
}

/* The look an idle pass makes, inline; the move out of line. */
static inline unsigned drain_inbox(struct pc_worker *w)
{
        if (atomic_load_explicit(&w->inbox, memory_order_relaxed) == NULL)
                return 0;
        return drain_inbox_slow(w);
}

/* Take a fair share of the injector, min(len/N + 1, 128): return the first
 * task to run now and queue the rest locally, in order. */
static __attribute__((noinline)) struct pc_task *take_injector_slow(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;
        struct pc_task *first, *last;
        uint64_t len, n;

        pthread_mutex_lock(&rt->inj_lock);
        len = atomic_load_explicit(&rt->inj_len, memory_order_relaxed);
        if (len == 0) {
                pthread_mutex_unlock(&rt->inj_lock);
                return NULL;
        }
        n = len / rt->nworkers + 1;
        if (n > PC_INJECT_BATCH_MAX)
                n = PC_INJECT_BATCH_MAX;
        if (n > len)
                n = len;
        first = last = rt->inj_head;
        for (uint64_t i = 1; i < n; i++)
                last = last->next;
        rt->inj_head = last->next;
        if (rt->inj_head == NULL)
                rt->inj_tail = NULL;
        atomic_store_explicit(&rt->inj_len, len - n, memory_order_relaxed);
        pthread_mutex_unlock(&rt->inj_lock);

        last->next = NULL;
        for (struct pc_task *t = first->next, *next; t; t = next) {
                next = t->next;
                pc__push_local(w, t);
        }
        pc__owner_add(&w->inj_recv, n);
        w->ls.tasks_inject += n;
        if (len > n) {
                /* More is waiting: pass the baton to a sleeping worker. */
                for (unsigned i = 1; i < rt->nworkers; i++) {
                        struct pc_worker *o = rt->workers[(w->id + i) % rt->nworkers];
                        if (atomic_load_explicit(&o->sleeping, memory_order_relaxed)) {
                                pc__wake(o);
                                break;
                        }
                }
        }
        return first;
}

static inline struct pc_task *take_injector(struct pc_worker *w)
{
        if (atomic_load_explicit(&w->rt->inj_len, memory_order_relaxed) == 0)
                return NULL;
        return take_injector_slow(w);
}

static inline void run_task(struct pc_worker *w, struct pc_task *t)
{
        pc_task_fn fn = t->fn;
        void *arg = t->arg;
        uint16_t owner = t->owner;

        /* Release before running, so a spawn inside fn reuses this (hot)
         * object. A caller-owned task is not touched after this point. */
        if (likely(owner < PC_OWNER_HEAP))
                pc__task_release(w, t);
        else if (owner == PC_OWNER_HEAP)
                free(t);
        w->cur_fn = (const void *)fn;
        fn(arg);
}

/* Elastic mode: take from the sticky and the stealable queue in turn, so
 * neither can starve the other. */
static struct pc_task *pop_elastic(struct pc_worker *w)
{
        struct pc_task *t;

        w->sticky_turn = !w->sticky_turn;
        if (w->sticky_turn && (t = pc__runq_pop(&w->rq)) != NULL)
                return t;
        if (w->batch_i == w->batch_n) {
                w->batch_i = 0;
                w->batch_n = pc__stealq_pop_batch(&w->sq, w->batch, PC_OWNER_BATCH);
                /* Back at our own queue: thieves need not drain it. */
                if (atomic_load_explicit(&w->sq.drained, memory_order_relaxed))
                        atomic_store_explicit(&w->sq.drained, false, memory_order_relaxed);
                if (atomic_load_explicit(&w->sq.adv, memory_order_relaxed) &&
                    pc__stealq_ring_len(&w->sq) < PC_ADVERTISE_MIN)
                        pc__unadvertise(w);
        }
        t = w->batch_i < w->batch_n ? w->batch[w->batch_i++] : NULL;
        if (t == NULL)
                t = pc__runq_pop(&w->rq);
        return t;
}

static inline struct pc_task *next_task(struct pc_worker *w)
{
        if (likely(!w->elastic))
                return pc__runq_pop(&w->rq);
        return pop_elastic(w);
}

static unsigned run_tasks(struct pc_worker *w)
{
        unsigned i;

        for (i = 0; i < PC_TASK_BUDGET; i++) {
                struct pc_task *t = NULL;

                if (unlikely(--w->inject_countdown == 0)) {
                        w->inject_countdown = PC_INJECT_EVERY;
                        t = take_injector(w);
                }
                if (unlikely((++w->tick & (PC_TIMER_EVERY - 1)) == 0) && w->tn)
                        pc__timers_expire(w, pc__now());
                if (t == NULL)
                        t = next_task(w);
                if (unlikely(t == NULL)) {
                        if (drain_inbox(w))
                                t = next_task(w);
                        else
                                t = take_injector(w);
                        if (t == NULL)
                                break;
                }
                /* A fiber yielding in place spends this budget too. */
                w->budget_left = PC_TASK_BUDGET - 1 - i;
                run_task(w, t);
                i = PC_TASK_BUDGET - 1 - w->budget_left;
        }
        w->budget_left = 0;
        if (i) /* an idle pass finds it NULL already */
                w->cur_fn = NULL;
        w->ls.tasks_run += i;
        return i;
}

/*
 * A fiber yields and will run the loop's next task itself: go on in place
 * when nothing is queued (it would be next), or switch straight to the
 * fiber first in line, without the two switches through this loop. It
 * takes the loop's turn for it (budget, injector countdown, timer tick),
 * counted as one more task run, but not the turn where the loop would
 * look at the injector or the timers first, nor once the budget is spent
 * (the pollers' turn), nor outside run_tasks(): then the fiber switches
 * out and the loop does its part. Caladan's thread_yield() takes the same
 * shortcuts.
 */
bool pc__take_turn(struct pc_worker *w)
{
        if (w->budget_left == 0 || w->inject_countdown == 1 ||
            (((w->tick + 1) & (PC_TIMER_EVERY - 1)) == 0 && w->tn))
                return false;
        w->budget_left--;
        w->inject_countdown--;
        w->tick++;
        return true;
}

static unsigned run_pollers(struct pc_worker *w)
{
        unsigned n = 0, i, j;

        for (i = 0; i < w->npollers; i++) {
                struct pc_poller *p = w->pollers[i];
                w->cur_poller = p;
                if (!p->dead)
                        n += p->ops->poll(p->arg);
        }
        w->cur_poller = NULL;
        if (unlikely(w->pollers_dirty)) {
                for (i = j = 0; i < w->npollers; i++) {
                        if (w->pollers[i]->dead)
                                free(w->pollers[i]);
                        else
                                w->pollers[j++] = w->pollers[i];
                }
                w->npollers = j;
                w->pollers_dirty = false;
        }
        w->ls.polls += n;
        return n;
}

/* Whether anything is pending that parking would sit on. Called after the
 * sleeping flag is published, so the loads pair with producers' stores. */
static bool work_pending(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;

        if (pc__queued(w) != 0)
                return true;
        if (atomic_load_explicit(&w->inbox, memory_order_seq_cst) != NULL)
                return true;
        if (atomic_load_explicit(&rt->inj_len, memory_order_seq_cst) != 0)
                return true;
        if (atomic_load_explicit(&rt->done, memory_order_seq_cst))
                return true;
        if (atomic_load_explicit(&rt->mode, memory_order_seq_cst) !=
            atomic_load_explicit(&w->mode, memory_order_relaxed))
                return true; /* pc_runtime_set_mode(): apply it first */
        /* Another worker advertises work we may take: pairs with the
         * seq_cst bit set in pc__advertise(), which then reads nsleeping. */
        if (w->elastic && !w->stop_seen && pc__steal_possible(w))
                return true;
        if (!w->drain_seen &&
            atomic_load_explicit(&rt->drain_req, memory_order_seq_cst) == PC__DRAIN_ON)
                return true; /* pc_runtime_drain(): begin it first */
        return !w->stop_seen && atomic_load_explicit(&rt->stop_req, memory_order_seq_cst);
}

/* The poller that sleeps the worker in its own wait, if one offers to. */
static struct pc_poller *sleeper(struct pc_worker *w)
{
        for (unsigned i = 0; i < w->npollers; i++) {
                struct pc_poller *p = w->pollers[i];
                if (!p->dead && p->ops->sleep)
                        return p;
        }
        return NULL;
}

/* Sleep until woken or @deadline (CLOCK_MONOTONIC ns, 0 = none): in the
 * sleeping poller's wait when one offers it, else in ppoll on the eventfd. */
static void park(struct pc_worker *w, uint64_t deadline)
{
        unsigned ok = 0;

        if (w->elastic)
                atomic_fetch_add_explicit(&w->rt->nsleeping, 1, memory_order_seq_cst);
        atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
        if (work_pending(w))
                goto out;
        for (ok = 0; ok < w->npollers; ok++) {
                struct pc_poller *p = w->pollers[ok];
                if (!p->dead && p->ops->prepare_sleep && !p->ops->prepare_sleep(p->arg))
                        break;
        }
        if (ok == w->npollers) {
                struct pc_poller *sp = sleeper(w);

                /* Published now, not at the next iteration: a reader then
                 * sees a worker that is asleep counted as parked. */
                w->ls.parks++;
                atomic_store_explicit(&w->stats.parks, w->ls.parks, memory_order_relaxed);
                int rc = sp ? sp->ops->sleep(sp->arg, w->efd, deadline) : -EOPNOTSUPP;

                if (rc > 0) {
                        w->ls.wakeups++;
                } else if (rc < 0) {
                        struct pollfd pfd = {.fd = w->efd, .events = POLLIN};
                        struct timespec ts, *tsp = NULL;
                        uint64_t v, now = pc__now();

                        if (deadline) {
                                uint64_t d = deadline > now ? deadline - now : 0;
                                ts.tv_sec = (time_t)(d / 1000000000u);
                                ts.tv_nsec = (long)(d % 1000000000u);
                                tsp = &ts;
                        }
                        if (ppoll(&pfd, 1, tsp, NULL) > 0 &&
                            read(w->efd, &v, sizeof(v)) == sizeof(v))
                                w->ls.wakeups++;
                }
        }
        for (unsigned i = 0; i < ok; i++) {
                struct pc_poller *p = w->pollers[i];
                if (!p->dead && p->ops->prepare_sleep && p->ops->after_sleep)
                        p->ops->after_sleep(p->arg);
        }
out:
        atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
        if (w->elastic)
                atomic_fetch_sub_explicit(&w->rt->nsleeping, 1, memory_order_relaxed);
}

/* One wave of the four-counter termination check: every worker quiet, and
 * every task sent or injected also received. */
static bool wave(struct pc_runtime *rt, uint64_t sig[2])
{
        uint64_t sent = 0, recv = 0, injr = 0, injp;

        for (unsigned i = 0; i < rt->nworkers; i++) {
                struct pc_worker *w = rt->workers[i];
                if (!atomic_load_explicit(&w->quiet, memory_order_seq_cst))
                        return false;
                sent += atomic_load_explicit(&w->sent, memory_order_seq_cst);
                recv += atomic_load_explicit(&w->recv, memory_order_seq_cst);
                injr += atomic_load_explicit(&w->inj_recv, memory_order_seq_cst);
        }
        pthread_mutex_lock(&rt->inj_lock);
        injp = rt->inj_pushed;
        pthread_mutex_unlock(&rt->inj_lock);
        sig[0] = sent;
        sig[1] = injr;
        return sent == recv && injp == injr;
}

/* Worker 0 decides when draining is over: two identical balanced waves
 * with everyone quiet mean no task is queued or in flight anywhere. */
static bool quiescent(struct pc_runtime *rt)
{
        uint64_t a[2], b[2];

        return wave(rt, a) && wave(rt, b) && a[0] == b[0] && a[1] == b[1];
}

/* Idle while stopping: drop timers, publish quiet, and let worker 0 detect
 * the end of the drain. Returns true when this worker should exit. */
static bool idle_stopping(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;

        if (!w->stop_seen) {
                w->stop_seen = true;
                for (struct pc__module *m = rt->modules; m; m = m->next)
                        if (m->worker_stopping)
                                m->worker_stopping(w, m->arg);
                pc__timers_drop(w);
        }
        /* Dropping timers (here, or in this pass's pc__timers_expire) woke
         * the fibers asleep on them: run them before we call ourselves
         * quiet, or worker 0 would end the run on its own queue. */
        if (pc__queued(w) != 0)
                return false;
        if (atomic_load_explicit(&rt->done, memory_order_acquire))
                return true;
        atomic_store_explicit(&w->quiet, 1, memory_order_seq_cst);
        w->quiet_published = true;
        if (w->id == 0) {
                if (quiescent(rt)) {
                        atomic_store_explicit(&rt->done, 1, memory_order_seq_cst);
                        for (unsigned i = 1; i < rt->nworkers; i++)
                                pc__wake(rt->workers[i]);
                        return true;
                }
                park(w, pc__now() + PC_STOP_POLL_NS);
        } else {
                pc__wake(rt->workers[0]);
                park(w, 0);
        }
        return false;
}

static inline void publish(struct pc_worker *w)
{
        struct pc_pub_stats *s = &w->stats;
        const struct pc_local_stats *l = &w->ls;

        atomic_store_explicit(&s->tasks_run, l->tasks_run, memory_order_relaxed);
        atomic_store_explicit(&s->tasks_remote, l->tasks_remote, memory_order_relaxed);
        atomic_store_explicit(&s->tasks_inject, l->tasks_inject, memory_order_relaxed);
        atomic_store_explicit(&s->timers_fired, l->timers_fired, memory_order_relaxed);
        atomic_store_explicit(&s->polls, l->polls, memory_order_relaxed);
        atomic_store_explicit(&s->iterations, l->iterations, memory_order_relaxed);
        atomic_store_explicit(&s->parks, l->parks, memory_order_relaxed);
        atomic_store_explicit(&s->wakeups, l->wakeups, memory_order_relaxed);
        atomic_store_explicit(&s->queue_depth, pc__queued(w), memory_order_relaxed);
        atomic_store_explicit(&s->busy_ns, l->busy_ns, memory_order_relaxed);
        atomic_store_explicit(&s->idle_ns, l->idle_ns, memory_order_relaxed);
        if (w->elastic) {
                atomic_store_explicit(&s->stolen, l->stolen, memory_order_relaxed);
                atomic_store_explicit(&s->steal_attempts, l->steal_attempts,
                                      memory_order_relaxed);
                atomic_store_explicit(&s->steal_failures, l->steal_failures,
                                      memory_order_relaxed);
                atomic_store_explicit(&s->searches, l->searches, memory_order_relaxed);
        }
}

/* How often an idle iteration reads the clock (see pc__worker_loop). */
#define PC_IDLE_CLOCK_EVERY 16
/* How often a busy iteration that follows a busy one reads the clock and
 * publishes its counters (a power of two). */
#define PC_BUSY_CLOCK_EVERY 4

/*
 * Adaptive idle spins before parking, but not always the configured
 * idle_spin_us: a spin that ends in a park found nothing and only took the
 * CPU from whatever else could run there (on a shared machine, often the
 * very client whose next request the worker waits for), so the next spin
 * is half as long, down to 1/PC_SPIN_SHRINK_MAX of it; a spin that finds
 * work doubles it back up to idle_spin_us. A worker whose work arrives
 * within the spin keeps spinning in full; one that waits on a co-located
 * producer soon parks almost at once.
 */
#define PC_SPIN_SHRINK_MAX 64

static void spin_set(struct pc_worker *w, uint64_t ns)
{
        if (ns == w->spin_ns)
                return;
        w->spin_ns = ns;
        atomic_store_explicit(&w->stats.spin_ns, ns, memory_order_relaxed);
}

/*
 * A park that a worker ended in the iteration right after its own park
 * (two workers calling each other, each woken by the other) says when the
 * work came: woken_at - idle_since after this one went idle. That gap
 * holds the waker's own wake latency, about ours (now - woken_at: the same
 * kernel and host). Less that latency, a gap within a full spin (@max)
 * means the spin should have lasted: it grows to twice what it was when
 * the idle period began. Otherwise, and with no such waker (a timeout, a
 * kernel completion, a busy worker's message, another thread's
 * pc_runtime_inject(), a sleep that never began), it halves, down to @min:
 * a spin that keeps a CPU from a client on it gives way.
 * Halving there too lets two such workers reach the shortest spin
 * together, after which each waits out the other's wake latency, longer
 * than any spin it tries, and every call parks both for good (a wake-up
 * per call instead of a spin).
 */
uint64_t pc__spin_after_park(uint64_t spin, uint64_t max, uint64_t min, uint64_t idle_since,
                             uint64_t woken_at, uint64_t now)
{
        uint64_t halved = spin / 2 > min ? spin / 2 : min;

        if (woken_at == 0 || woken_at < idle_since || now < woken_at ||
            woken_at - idle_since >= max + (now - woken_at))
                return halved;
        return spin < max / 2 ? spin * 2 : max;
}

/* Work found: an idle period that ended in its spin doubles the spin. */
static void busy_again(struct pc_worker *w)
{
        uint64_t max = (uint64_t)w->rt->cfg.idle_spin_us * 1000u;

        if (w->idle_since == 0)
                return;
        if (!w->parked)
                spin_set(w, w->spin_ns * 2 < max ? w->spin_ns * 2 : max);
        w->parked = false;
        w->idle_since = 0;
}

/* Nothing to do this iteration. Returns true when the worker must exit. */
static bool idle(struct pc_worker *w, uint64_t now)
{
        struct pc_runtime *rt = w->rt;
        uint64_t deadline, max;

        if (unlikely(atomic_load_explicit(&rt->stop_req, memory_order_relaxed)))
                return idle_stopping(w);
        if (w->elastic &&
            (rt->policy->on_idle == NULL || rt->policy->on_idle(rt->policy->ctx, w->id))) {
                struct pc_task *t = pc__steal(w);
                if (t) {
                        busy_again(w);
                        w->last_busy = true;
                        w->ls.tasks_run++;
                        run_task(w, t);
                        w->cur_fn = NULL;
                        return false;
                }
        }
        if (w->idle_since == 0)
                w->idle_since = now;
        /* A worker that roams (share.c) shares its CPUs: it parks at once,
         * leaving them to the thread it shares with. */
        if (rt->cfg.idle == PC_IDLE_POLL ||
            (rt->cfg.idle == PC_IDLE_ADAPTIVE && now - w->idle_since < w->spin_ns &&
             !w->share.roaming)) {
                if (w->spin_pause || (w->poll_hints & PC__POLL_PACE))
                        pc__cpu_relax();
                return false;
        }
        max = (uint64_t)rt->cfg.idle_spin_us * 1000u;
        /* The first park of an idle period halves the spin, as a park no
         * worker ends keeps it; a worker's wake judges again from the
         * spin the period began with (so does a park tried again after a
         * poller refused sleep: the same decision, not one more). */
        if (rt->cfg.idle == PC_IDLE_ADAPTIVE && !w->parked) {
                w->spin_idle = w->spin_ns;
                spin_set(w, pc__spin_after_park(w->spin_idle, max, max / PC_SPIN_SHRINK_MAX,
                                                w->idle_since, 0, 0));
        }
        w->parked = true;
        deadline = w->tn ? w->theap[0]->deadline_ns : 0;
        publish(w); /* an idle pass may not have (pc__worker_loop) */
        park(w, deadline);
        if (rt->cfg.idle == PC_IDLE_ADAPTIVE) {
                uint64_t at = atomic_exchange_explicit(&w->woken_at, 0, memory_order_acquire);

                if (at)
                        spin_set(w, pc__spin_after_park(w->spin_idle, max,
                                                        max / PC_SPIN_SHRINK_MAX,
                                                        w->idle_since, at, pc__now()));
        }
        w->idle_clock = PC_IDLE_CLOCK_EVERY; /* slept: read the clock next */
        return false;
}

/*
 * The first idle pass after work reads the clock to start the idle spell
 * (dear on some virtual machines), right when the next message of a near
 * pair (a call answered by a worker that shares our cache) is due: a
 * poller that waits on such a line asks for PC__POLL_EAGER, and then, when
 * the busy pass read the clock itself, the spell starts at that reading
 * instead. The accounting loses nothing: the busy pass's work was counted
 * up to its reading, and what follows it is this idle pass.
 */
static inline bool eager_idle(struct pc_worker *w)
{
        if (!(w->poll_hints & PC__POLL_EAGER) || !w->clock_fresh || !w->last_busy)
                return false;
        w->last_busy = false;
        w->idle_clock = 0;
        return true;
}

void pc__worker_loop(struct pc_worker *w)
{
        struct pc_runtime *rt = w->rt;

        pc__self = w;
        pc__alt_stack_ensure(); /* for the crash report of a stack overflow */
        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->worker_start)
                        m->worker_start(w, m->arg);
        w->stop_seen = false;
        w->drain_seen = false;
        w->idle_since = 0;
        w->spin_ns = (uint64_t)rt->cfg.idle_spin_us * 1000u;
        atomic_store_explicit(&w->stats.spin_ns, w->spin_ns, memory_order_relaxed);
        w->parked = false;
        w->last_ns = pc__now();
        w->last_busy = true;
        pc__stall_start(w);
        pc__share_start(w);
        for (;;) {
                unsigned n;
                uint64_t now;
                int mode;

                if (unlikely(w->quiet_published)) {
                        atomic_store_explicit(&w->quiet, 0, memory_order_seq_cst);
                        w->quiet_published = false;
                }
                n = drain_inbox(w);
                n += run_tasks(w);
                if (w->npollers)
                        n += run_pollers(w);
                /* An idle iteration reads the clock only every
                 * PC_IDLE_CLOCK_EVERY-th (an idle spin wants no finer grain:
                 * a timer fires at most that many idle iterations late, and
                 * the spin's length and the busy/idle split barely move),
                 * so a spinning worker answers a message sooner; a busy one
                 * that follows a busy one every PC_BUSY_CLOCK_EVERY-th (a
                 * poll loop's pass is a burst of packets, a few hundred
                 * nanoseconds, and the vDSO's clock is a tenth of that: a
                 * timer fires at most 3 passes late, and the time between
                 * reads is busy time either way). It looks for a
                 * pc_runtime_set_mode() as often, before it would steal.
                 * Nor does the first pass after an idle spell that queued
                 * tasks here (a fiber that a reply or a completion woke, a
                 * task a poller spawned): they run first, and the next pass
                 * reads the clock, counting both passes as the end of the
                 * idle spell. The clock is dear on some hosts, and a
                 * woken fiber that answers, or calls another worker, would
                 * wait behind it. */
                if (n == 0 && (w->idle_since || eager_idle(w)) &&
                    ++w->idle_clock < PC_IDLE_CLOCK_EVERY) {
                        /* Then the rest of the pass has nothing to do: no
                         * timer falls due at the time last read, the idle
                         * time it would add is 0, and the stats wait for
                         * the next pass that reads the clock (or parks). */
                        w->ls.iterations++;
                        if (idle(w, w->last_ns))
                                break;
                        continue;
                } else if (n && w->last_busy &&
                           (++w->busy_clock & (PC_BUSY_CLOCK_EVERY - 1)) != 0) {
                        w->clock_fresh = false;
                        w->ls.iterations++;
                        continue;
                } else if (n && !w->last_busy && !w->woke_queued && pc__queued(w)) {
                        w->woke_queued = true;
                        w->clock_fresh = false;
                        w->ls.iterations++;
                        continue;
                } else {
                        w->woke_queued = false;
                        w->clock_fresh = true;
                        now = pc__now();
                        w->idle_clock = 0;
                        if (w->share.fd >= 0 &&
                            unlikely(now - w->share.at_ns >= PC_SHARE_WINDOW_NS))
                                pc__share_check(w, now);
                        if (unlikely(w->share.packed))
                                pc__pack_turn(w, n, now);
                        mode = atomic_load_explicit(&rt->mode, memory_order_relaxed);
                        if (unlikely(mode !=
                                     atomic_load_explicit(&w->mode, memory_order_relaxed)))
                                pc__mode_apply(w, mode);
                        if (unlikely(atomic_load_explicit(&rt->drain_req,
                                                          memory_order_relaxed) ==
                                     PC__DRAIN_ON) &&
                            !w->drain_seen)
                                pc__drain_begin(w);
                }
                if (w->tn)
                        n += pc__timers_expire(w, now);
                if (w->last_busy)
                        w->ls.busy_ns += now - w->last_ns;
                else
                        w->ls.idle_ns += now - w->last_ns;
                w->last_ns = now;
                w->last_busy = n != 0;
                w->ls.iterations++;
                publish(w);
                if (n) {
                        busy_again(w);
                        continue;
                }
                if (idle(w, now))
                        break;
        }
        pc__share_stop(w);
        pc__stall_stop(w);
        for (struct pc__module *m = rt->modules; m; m = m->next)
                if (m->worker_stop)
                        m->worker_stop(w, m->arg);
        publish(w);
        pc__self = NULL;
}
