/* SPDX-License-Identifier: MIT */
/*
 * msg: cross-core messages between two workers.
 *
 *   submit  one-way pc_submit() throughput from worker 0 to worker 1
 *           (msgs_per_sec); beside it peer:rte_ring, DPDK's SP/SC ring
 *           between two threads pinned to the same two CPUs, bursts of 32.
 *   submit-burst32  the same with pc_submit_burst() of 32, the peer's
 *           own burst, beside the same peer.
 *   call    pc_call() round trip, worker 0 -> 1 -> 0, one call in flight
 *           (call_rtt_ns, mean per run; the table shows the median run);
 *           beside it peer:pingpong, two pinned threads bouncing a counter
 *           on one cache line: the hardware's floor for a round trip (a
 *           floor: a call that measures faster gets no ratio to it), and
 *           peer:rte_ring_rtt, a request and a reply rte_ring between two
 *           pinned threads: the best off-the-shelf ring's round trip.
 *   idle-Nw the cost of an idle loop iteration with N workers (2, 8, 32),
 *           thread-per-core only.
 *
 * The percore modes and the peers of a case run in alternated rounds, all
 * on the two CPUs a 2-worker runtime places its workers on. Every timed
 * thread, the workers and the peers' alike, reads sched_getcpu() before
 * and after its timed part: a run that was not where it was placed, or
 * during which the line probe says the host moved a vCPU, is run again
 * (retried(), up to MSG_TRIES in all) and not used after the last try.
 * The suite says which CPUs those are and whether the topology calls them
 * SMT siblings (table footer, JSON "info").
 *
 * Both sides run the same sink per message. The submit driver keeps at most
 * WINDOW messages in flight (reading the receiver's published count once
 * per batch), so it measures the rings, not the overflow: the peer's
 * producer waits on a full ring, and pc_submit() never fails, so without
 * a window that stays clear of a full ring (the count lags by up to 63,
 * and the receiver frees slots only after running up to 256 in place)
 * most messages would take the overflow path instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "msg_peers.h"
#include "pc_shard.h"
#include "pc_topo.h"

#define MSG_WORKERS 2
#define MSG_RING 1024
#define SUBMIT_BATCH 64
#define WINDOW (MSG_RING / 2)
#define RUN_EXTEND_MAX 100
#define MSG_TRIES 3 /* runs of a side per round while the host moves a vCPU */
#define MSG_MAX_RAN 16 /* (case, side) pairs whose CPUs the JSON reports */
#define MSG_MAX_PEERS 2

void msg_sink_fn(void *arg)
{
        struct msg_sink *s = arg;

        if ((++s->n & 63) == 0)
                atomic_store_explicit(&s->pub, s->n, memory_order_relaxed);
}

static uint64_t thread_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Both threads wait for a go (1) or a no-go (-1), so a pair whose second
 * thread could not start never leaves the first spinning on its peer. */
struct pair_arg {
        void *(*fn)(void *);
        void *arg;
        _Atomic int *go;
        struct msg_cpu *seen;
};

static void *pair_main(void *arg)
{
        struct pair_arg *pa = arg;
        int go;

        while ((go = atomic_load_explicit(pa->go, memory_order_acquire)) == 0)
                sched_yield();
        if (go < 0)
                return NULL;
        uint64_t wall = pc_now_ns(), cpu = thread_cpu_ns();

        pa->seen->before = sched_getcpu();
        pa->seen->switches = -msg_thread_preemptions();
        pa->fn(pa->arg);
        pa->seen->switches += msg_thread_preemptions();
        pa->seen->after = sched_getcpu();
        wall = pc_now_ns() - wall;
        pa->seen->oncpu = wall ? (double)(thread_cpu_ns() - cpu) / (double)wall : NAN;
        return NULL;
}

long msg_thread_preemptions(void)
{
        struct rusage ru;

        return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

int msg_pair_run(bool pin, int cpu0, void *(*a)(void *), int cpu1, void *(*b)(void *),
                 void *arg, struct msg_cpu seen[2])
{
        _Atomic int go = 0;
        struct msg_cpu own[2];
        struct msg_cpu *where = seen ? seen : own;
        struct pair_arg pa[2] = {{a, arg, &go, &where[0]}, {b, arg, &go, &where[1]}};
        int cpus[2] = {cpu0, cpu1};
        pthread_t th[2];
        unsigned started = 0;
        int rc = 0;

        for (unsigned i = 0; i < 2 && rc == 0; i++) {
                pthread_attr_t attr;
                cpu_set_t set;

                where[i] = (struct msg_cpu){pin ? cpus[i] : -1, -1, -1, 0, NAN};
                pthread_attr_init(&attr);
                if (pin) {
                        CPU_ZERO(&set);
                        CPU_SET(cpus[i], &set);
                        rc = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
                }
                if (rc == 0)
                        rc = -pthread_create(&th[i], &attr, pair_main, &pa[i]);
                pthread_attr_destroy(&attr);
                if (rc == 0)
                        started++;
        }
        atomic_store_explicit(&go, rc ? -1 : 1, memory_order_release);
        for (unsigned i = 0; i < started; i++)
                pthread_join(th[i], NULL);
        return rc;
}

#ifndef PC_BENCH_DPDK
double msg_peer_rte_ring(bool pin, int cpu0, int cpu1, double duration_s,
                         struct msg_cpu seen[2])
{
        (void)pin;
        (void)cpu0;
        (void)cpu1;
        (void)duration_s;
        (void)seen;
        return -ENOTSUP;
}

double msg_peer_rte_ring_rtt(bool pin, int cpu0, int cpu1, double duration_s, unsigned pace,
                             struct msg_cpu seen[2])
{
        (void)pace;
        return msg_peer_rte_ring(pin, cpu0, cpu1, duration_s, seen);
}
#endif

/* ---- where the runs ran -------------------------------------------------- */

/* The two CPUs of the suite, from the topology a 2-worker runtime places
 * its workers by. */
struct placement {
        bool known;     /* found by this suite (not when another suite borrows a case) */
        int cpu[2];
        bool pin;
        bool smt;       /* one core's threads (SMT siblings) */
        bool same_l3;
        bool l3_known; /* the topology names both CPUs' L3 (a /sys without caches does not) */
        int node[2];
        bool hypervisor; /* a virtual machine: the host may place vCPUs anywhere */
        char source[64];
};

static struct placement P;

/* One run of a side as the JSON lists it, the warm-up first: its value,
 * the lower on-CPU share of its two timed threads, and the line round trip
 * between the two CPUs probed just before and just after it. */
struct run_note {
        double value, oncpu, line0, line1;
        double core0, core1; /* each CPU's core probe, before and after averaged */
};

/* What the suite probes around every run: the line round trip between its
 * two CPUs (line_probe()) and how fast each CPU runs plain code
 * (core_probe()). */
struct probe {
        double line;
        double core[2];
};

/* The CPUs each (case, side) ran on in its last run, its runs (warm-ups
 * included), the runs not used because a thread was elsewhere, and a note
 * of each run. */
struct ran {
        const char *kase;
        char side[32];
        int cpu[2];
        unsigned runs, moved;
        unsigned preempted; /* runs in which a timed thread was preempted */
        long switches;      /* and how often, in all */
        unsigned nnotes;
        struct run_note notes[BENCH_MAX_RUNS + 1];
};

static struct ran ran[MSG_MAX_RAN];
static unsigned nran;

/*
 * Account a run of @side in @kase that ran where @seen says, with the
 * probes @b before it and @a after: @v when every pinned thread stayed on
 * its CPU and neither probe changed during the run, else BENCH_MOVED after
 * saying what happened. Errors pass through.
 */
static double checked(const char *kase, const char *side, const struct msg_cpu seen[2],
                      double v, const struct probe *b, const struct probe *a)
{
        struct ran *r = NULL;
        bool moved = false;
        double line0 = b->line, line1 = a->line, core[2];

        if (v < 0)
                return v;
        for (unsigned i = 0; i < nran && r == NULL; i++)
                if (strcmp(ran[i].kase, kase) == 0 && strcmp(ran[i].side, side) == 0)
                        r = &ran[i];
        if (r == NULL && nran < MSG_MAX_RAN) {
                r = &ran[nran++];
                r->kase = kase;
                snprintf(r->side, sizeof(r->side), "%s", side);
        }
        for (unsigned i = 0; i < 2; i++) {
                if (r)
                        r->cpu[i] = seen[i].after;
                if (msg_cpu_moved(&seen[i])) {
                        moved = true;
                        bench_progress("msg/%s %s: thread %u, pinned to CPU %d, ran on CPU %d "
                                       "before and %d after its timed part",
                                       kase, side, i, seen[i].want, seen[i].before,
                                       seen[i].after);
                }
        }
        /* The host moved a vCPU during the run when the line round trip
         * changed that much: the run measured two machines. */
        if (!bench_cond_match(line0, line1)) {
                moved = true;
                bench_progress("msg/%s %s: the line round trip between CPUs %d and %d went "
                               "from %.0f to %.0f ns during the run (the host moved a vCPU)",
                               kase, side, P.cpu[0], P.cpu[1], line0, line1);
        }
        /* A CPU whose core the host gave to another guest's thread as
         * well (its SMT sibling busy) during the run, or took away from
         * one: the run measured two machines. */
        for (unsigned i = 0; i < 2; i++) {
                core[i] = isfinite(b->core[i]) && isfinite(a->core[i])
                                  ? (b->core[i] + a->core[i]) / 2
                                  : NAN;
                if (!bench_cond_match(b->core[i], a->core[i])) {
                        moved = true;
                        bench_progress("msg/%s %s: CPU %d's core probe went from %.2f to %.2f "
                                       "ns during the run (the host shares its core)",
                                       kase, side, P.cpu[i], b->core[i], a->core[i]);
                }
        }
        /* Where the host had the vCPUs, how much of them this run's
         * threads had and how fast each CPU ran: a side and a peer pair
         * only when all match. Only for the suite's own cases (P.known),
         * which probe. */
        if (!moved && P.known) {
                bench_condition(0, isfinite(line0) && isfinite(line1) ? (line0 + line1) / 2
                                                                      : NAN);
                bench_condition(1, fmin(seen[0].oncpu, seen[1].oncpu));
                bench_condition(2, core[0]);
                bench_condition(3, core[1]);
        }
        if (r && r->nnotes < BENCH_MAX_RUNS + 1)
                r->notes[r->nnotes++] = (struct run_note){moved ? NAN : v,
                                                          fmin(seen[0].oncpu, seen[1].oncpu),
                                                          line0, line1, core[0], core[1]};
        if (r) {
                r->runs++;
                r->moved += moved;
                r->preempted += seen[0].switches + seen[1].switches > 0;
                r->switches += seen[0].switches + seen[1].switches;
        }
        return moved ? BENCH_MOVED : v;
}

static bool cpuinfo_has_flag(const char *flag)
{
        char line[4096];
        size_t n = strlen(flag);
        bool found = false;
        FILE *f = fopen("/proc/cpuinfo", "r");

        if (f == NULL)
                return false;
        while (!found && fgets(line, sizeof(line), f))
                if (strncmp(line, "flags", 5) == 0)
                        for (char *p = strstr(line, flag); p && !found; p = strstr(p + 1, flag))
                                found = (p[-1] == ' ' || p[-1] == '\t') &&
                                        (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
        fclose(f);
        return found;
}

#define PP_STOP UINT64_MAX /* odd, so the answering side looks at it */
#define PROBE_SAMPLES 16
#define PROBE_ROUNDS 256

struct pingpong {
        _Atomic uint64_t v __attribute__((aligned(64)));
        char pad[56];
        uint64_t duration_ns;
        unsigned pace; /* pauses between two looks at the line (msg_pause()) */
        uint64_t t0, t1, rounds;
        double best; /* the probe's */
};

static void *pp_answer(void *arg)
{
        struct pingpong *p = arg;
        const unsigned pace = p->pace;

        for (;;) {
                uint64_t v = atomic_load_explicit(&p->v, memory_order_acquire);
                if (v == PP_STOP)
                        break;
                if (v & 1)
                        atomic_store_explicit(&p->v, v + 1, memory_order_release);
                else
                        msg_pause(pace);
        }
        return NULL;
}

/* The line round trip in PROBE_SAMPLES short samples, the fastest kept:
 * a sample in which a thread was preempted is slow, not fast. */
static void *probe_ask(void *arg)
{
        struct pingpong *p = arg;
        const unsigned pace = p->pace;
        uint64_t i = 0;

        p->best = INFINITY;
        for (unsigned s = 0; s < PROBE_SAMPLES; s++) {
                uint64_t t0 = pc_now_ns();
                for (unsigned k = 0; k < PROBE_ROUNDS; k++, i++) {
                        atomic_store_explicit(&p->v, 2 * i + 1, memory_order_release);
                        while (atomic_load_explicit(&p->v, memory_order_acquire) != 2 * i + 2)
                                msg_pause(pace);
                }
                p->best = fmin(p->best, (double)(pc_now_ns() - t0) / PROBE_ROUNDS);
        }
        atomic_store_explicit(&p->v, PP_STOP, memory_order_release);
        return NULL;
}

/* The line round trip between the suite's two CPUs now, both threads
 * spinning with @pace pauses between looks, in a few milliseconds; NAN
 * when it cannot be had. */
static double line_rtt(unsigned pace)
{
        static struct pingpong p __attribute__((aligned(MSG_PEER_ALIGN)));

        if (!P.known)
                return NAN;
        memset(&p, 0, sizeof(p));
        p.pace = pace;
        if (msg_pair_run(P.pin, P.cpu[0], probe_ask, P.cpu[1], pp_answer, &p, NULL))
                return NAN;
        return p.best;
}

/*
 * The hardware's line round trip between the suite's two CPUs now, with a
 * tight spin (always the same, so two probes compare). Taken before and
 * after every run: the guest cannot see where a host runs its vCPUs (one
 * core's SMT threads, two cores of one L3, two L3s), and the host may
 * change that at any time, which changes every figure of the suite several
 * times over. The probe shows which placement a run had, and a run during
 * which it changed.
 */
static double line_probe(void)
{
        return line_rtt(0);
}

#define CORE_ITERS 20000
#define CORE_SAMPLES 8

/* Plain work that a core's throughput bounds: six independent chains of
 * adds and xors, CORE_ITERS steps, the fastest of CORE_SAMPLES; ns per
 * step into *@arg. */
static void *core_spin(void *arg)
{
        double *out = arg, best = INFINITY;
        uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6;

        for (unsigned s = 0; s < CORE_SAMPLES; s++) {
                uint64_t t0 = pc_now_ns();

                for (uint64_t i = 0; i < CORE_ITERS; i++) {
                        a += i;
                        b ^= i;
                        c += a;
                        d ^= b;
                        e += c;
                        f ^= d;
                        __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e),
                                         "+r"(f));
                }
                best = fmin(best, (double)(pc_now_ns() - t0) / CORE_ITERS);
        }
        *out = best; /* the asm keeps every chain's work */
        return NULL;
}

static void *core_spin1(void *arg)
{
        return core_spin((double *)arg + 1);
}

/*
 * How fast each of the suite's two CPUs runs plain work now (ns per step
 * of core_spin(), both at once, a fraction of a millisecond). A vCPU is a
 * thread of a host core whose other SMT thread the host may give to
 * another guest at any time: on this project's Zen 5 host (2026-12-03)
 * one CPU's probe read 0.54 ns and the other's 0.79 for minutes, then
 * both 0.54, and pc_submit() measured 175-186 M/s in the first state and
 * 290-300 M/s in the second at the same line round trip, while the
 * rte_ring producer on the same CPU (fewer instructions per message, more
 * of them waiting on memory) moved little. Such rounds compare two
 * machines.
 */
static void core_probe(double out[2])
{
        out[0] = out[1] = NAN;
        if (P.known)
                (void)msg_pair_run(P.pin, P.cpu[0], core_spin, P.cpu[1], core_spin1, out, NULL);
}

static struct probe probe(void)
{
        struct probe p = {line_probe(), {NAN, NAN}};

        core_probe(p.core);
        return p;
}

/*
 * The spinning peers' paces: the pauses between two polls tried before
 * each of their runs, the fastest kept. A tight spin is not always the
 * fastest: on a Zen 5 host whose two vCPUs were ~400 ns apart (2026-12-02),
 * the bounced line took 436-460 ns with back-to-back loads and 350-420 ns
 * with 8 pauses between them (the waiting side's loads slow the hand-off
 * of the line the other side is about to write), and a call measured
 * faster than that "floor". A peer spun at its best pace is a floor again.
 * The steps are fine where the best lies there: on the same host on
 * 2026-12-04 a second-long ping-pong took 381-329, 335-349, 328-346,
 * 353-362 and 339-387 ns at 3, 4, 5, 6 and 8 pauses (two runs each; a
 * pause ~18 ns), and a call with paced far pairs 322 ns beside them.
 */
static const unsigned msg_paces[] = {0, 1, 2, 3, 4, 5, 6, 8, 12, 16};
#define MSG_NPACES (sizeof(msg_paces) / sizeof(msg_paces[0]))

/* How often each pace won, per peer, for the footer and the JSON. */
static struct {
        const char *side;
        unsigned won[MSG_NPACES];
} pace_won[MSG_MAX_PEERS];

/* The pace whose @sample (ns per round trip, lower is better; NAN when it
 * could not be had) was shortest, each tried @tries times; counted for
 * @side. Pace 0 when nothing could be measured. */
static unsigned pace_pick(const char *side, double (*sample)(unsigned pace), unsigned tries)
{
        unsigned best = 0;
        double best_ns = INFINITY;

        for (unsigned t = 0; t < tries; t++)
                for (unsigned i = 0; i < MSG_NPACES; i++) {
                        double ns = sample(msg_paces[i]);
                        if (isfinite(ns) && ns < best_ns) {
                                best_ns = ns;
                                best = i;
                        }
                }
        for (unsigned k = 0; k < MSG_MAX_PEERS; k++)
                if (pace_won[k].side == NULL || strcmp(pace_won[k].side, side) == 0) {
                        pace_won[k].side = side;
                        pace_won[k].won[best]++;
                        break;
                }
        return msg_paces[best];
}

static int json_nums(char *buf, size_t len, const char *key, const struct ran *r, size_t off)
{
        int n = snprintf(buf, len, ", \"%s\": [", key);

        for (unsigned i = 0; i < r->nnotes && n > 0 && (size_t)n < len; i++) {
                double v = *(const double *)((const char *)&r->notes[i] + off);
                n += isfinite(v) ? snprintf(buf + n, len - (size_t)n, "%s%.4g", i ? ", " : "", v)
                                 : snprintf(buf + n, len - (size_t)n, "%snull", i ? ", " : "");
        }
        if (n > 0 && (size_t)n < len)
                n += snprintf(buf + n, len - (size_t)n, "]");
        return n;
}

/* What percore's call runs found of their pair (pc_shard_stats() of the
 * caller, worker 0, after each run): whether it ran near or far at the end
 * (by pc_shard_opts.call_near_ns and, between it and 4 times it, by trying
 * both), and how many slot calls reused a near pair's line. */
static struct {
        unsigned runs, near_runs, far_runs;
        uint64_t slot_calls, slot_calls_near;
} call_pairs;

/* The JSON object and the footer line of where the suite ran. */
static void placement_info(void)
{
        static char json[65536];
        char text[1024];
        int n;

        n = snprintf(json, sizeof(json),
                     "{\"cpus\": [%d, %d], \"pinned\": %s, \"smt_siblings\": %s, "
                     "\"same_l3\": %s, \"l3_known\": %s, \"nodes\": [%d, %d], \"hypervisor\": %s, "
                     "\"topology\": \"%s\", \"peer_align\": %d, \"ran_on\": [",
                     P.cpu[0], P.cpu[1], P.pin ? "true" : "false", P.smt ? "true" : "false",
                     P.same_l3 ? "true" : "false", P.l3_known ? "true" : "false", P.node[0],
                     P.node[1],
                     P.hypervisor ? "true" : "false", P.source, MSG_PEER_ALIGN);
        for (unsigned i = 0; i < nran && n > 0 && (size_t)n < sizeof(json); i++) {
                n += snprintf(json + n, sizeof(json) - (size_t)n,
                              "%s{\"case\": \"%s\", \"side\": \"%s\", \"cpus\": [%d, %d], "
                              "\"runs\": %u, \"moved\": %u, \"preempted_runs\": %u, "
                              "\"preemptions\": %ld",
                              i ? ", " : "", ran[i].kase, ran[i].side, ran[i].cpu[0],
                              ran[i].cpu[1], ran[i].runs, ran[i].moved, ran[i].preempted,
                              ran[i].switches);
                static const struct {
                        const char *key;
                        size_t off;
                } arrays[] = {
                        {"values", offsetof(struct run_note, value)},
                        {"oncpu", offsetof(struct run_note, oncpu)},
                        {"line_rtt_ns", offsetof(struct run_note, line0)},
                        {"line_rtt_after_ns", offsetof(struct run_note, line1)},
                        {"core0_ns", offsetof(struct run_note, core0)},
                        {"core1_ns", offsetof(struct run_note, core1)},
                };
                for (unsigned a = 0; a < sizeof(arrays) / sizeof(arrays[0]) && n > 0 && (size_t)n < sizeof(json); a++)
                        n += json_nums(json + n, sizeof(json) - (size_t)n, arrays[a].key, &ran[i],
                                       arrays[a].off);
                if (n > 0 && (size_t)n < sizeof(json))
                        n += snprintf(json + n, sizeof(json) - (size_t)n, "}");
        }
        if (n > 0 && (size_t)n < sizeof(json))
                n += snprintf(json + n, sizeof(json) - (size_t)n, "], \"paces_tried\": [");
        for (unsigned i = 0; i < MSG_NPACES && n > 0 && (size_t)n < sizeof(json); i++)
                n += snprintf(json + n, sizeof(json) - (size_t)n, "%s%u", i ? ", " : "",
                              msg_paces[i]);
        if (n > 0 && (size_t)n < sizeof(json))
                n += snprintf(json + n, sizeof(json) - (size_t)n, "], \"pace_won\": {");
        for (unsigned k = 0; k < MSG_MAX_PEERS && pace_won[k].side; k++)
                for (unsigned i = 0; i < MSG_NPACES && n > 0 && (size_t)n < sizeof(json); i++) {
                        if (i == 0)
                                n += snprintf(json + n, sizeof(json) - (size_t)n, "%s\"%s\": [",
                                              k ? ", " : "", pace_won[k].side);
                        if (n > 0 && (size_t)n < sizeof(json))
                                n += snprintf(json + n, sizeof(json) - (size_t)n, "%u%s",
                                              pace_won[k].won[i],
                                              i + 1 < MSG_NPACES ? ", " : "]");
                }
        if (n > 0 && (size_t)n < sizeof(json))
                snprintf(json + n, sizeof(json) - (size_t)n,
                         "}, \"call_pairs\": {\"runs\": %u, \"near_runs\": %u, \"far_runs\": %u, "
                         "\"slot_calls\": %" PRIu64 ", \"slot_calls_near\": %" PRIu64 "}}",
                         call_pairs.runs, call_pairs.near_runs, call_pairs.far_runs,
                         call_pairs.slot_calls, call_pairs.slot_calls_near);
        double lo = INFINITY, hi = -INFINITY, clo[2] = {INFINITY, INFINITY},
               chi[2] = {-INFINITY, -INFINITY};
        char range[320] = "";

        for (unsigned i = 0; i < nran; i++)
                for (unsigned k = 0; k < ran[i].nnotes; k++) {
                        const struct run_note *t = &ran[i].notes[k];

                        lo = fmin(lo, fmin(t->line0, t->line1));
                        hi = fmax(hi, fmax(t->line0, t->line1));
                        clo[0] = fmin(clo[0], t->core0);
                        chi[0] = fmax(chi[0], t->core0);
                        clo[1] = fmin(clo[1], t->core1);
                        chi[1] = fmax(chi[1], t->core1);
                }
        if (lo <= hi)
                snprintf(range, sizeof(range),
                         ";\n  the line round trip between them, probed around each run: "
                         "%.0f-%.0f ns;\n  each CPU's core probe (ns a step, higher when the "
                         "host shares its core): %.2f-%.2f and %.2f-%.2f;\n  rounds pair under "
                         "probes and CPU shares within %gx",
                         lo, hi, clo[0], chi[0], clo[1], chi[1], BENCH_COND_MATCH);
        char paces[256] = "";
        int m = 0;

        for (unsigned k = 0; k < MSG_MAX_PEERS && pace_won[k].side && m >= 0 &&
                             (size_t)m < sizeof(paces);
             k++) {
                unsigned most = 0;
                for (unsigned i = 1; i < MSG_NPACES; i++)
                        if (pace_won[k].won[i] > pace_won[k].won[most])
                                most = i;
                m += snprintf(paces + m, sizeof(paces) - (size_t)m, "%s%s %u",
                              k ? ", " : ";\n  spinning peers poll with the pauses (0-16) that "
                                         "were fastest just\n  before each run, most often: ",
                              pace_won[k].side + 5, msg_paces[most]);
        }
        char pairs[256] = "";

        if (call_pairs.runs)
                snprintf(pairs, sizeof(pairs),
                         ";\n  percore's call runs ended with the pair near in %u, far in "
                         "%u of %u;\n  %.0f %% of their slot calls reused a near line",
                         call_pairs.near_runs, call_pairs.far_runs, call_pairs.runs,
                         call_pairs.slot_calls
                                 ? 100.0 * (double)call_pairs.slot_calls_near /
                                           (double)call_pairs.slot_calls
                                 : 0.0);
        snprintf(text, sizeof(text), "CPUs %d and %d (%s), %s, %s (topology: %s)%s%s%s%s",
                 P.cpu[0], P.cpu[1], P.pin ? "pinned" : "not pinned",
                 P.smt ? "SMT siblings of one core" : "not SMT siblings",
                 !P.l3_known ? "L3 unknown"
                 : P.same_l3 ? "one L3"
                             : "different L3s",
                 P.source, range, paces, pairs,
                 P.hypervisor ? ";\n  a virtual machine: its host may still run these vCPUs "
                                "on one core's\n  SMT threads, or elsewhere"
                              : "");
        bench_info("msg", json, text);
}

/* ---- percore runs -------------------------------------------------------- */

struct msg_ctx {
        struct pc_runtime *rt;
        struct pc_timer stop_timer;
        struct pc_task driver; /* sticky: elastic mode must not move it */
        uint64_t duration_ns;
        uint64_t t0, t1;
        uint64_t sent;    /* worker 0 */
        uint64_t done_at_stop;
        unsigned extended; /* periods added to a run that had done nothing */
        /* call case: on the caller's worker (worker 0, or the one an
         * elastic fiber moved to), read there by the stop timer */
        _Atomic uint64_t rounds;
        /* Where each worker ran, read on it before the clock starts and
         * after it stops; the main thread reads them once the run is over. */
        struct msg_cpu cpu[MSG_WORKERS];
        uint64_t wall0[MSG_WORKERS], cpu0[MSG_WORKERS];
        int mark_rc;
        pc_task_fn timed; /* the case's timed part, on worker 0 */
        struct msg_sink sink; /* worker 1 */
};

static struct msg_ctx C;

/* How many messages a driver run may send: what keeps WINDOW in flight,
 * at most SUBMIT_BATCH. */
static uint64_t window_room(void)
{
        uint64_t inflight = C.sent - atomic_load_explicit(&C.sink.pub, memory_order_relaxed);
        uint64_t n = inflight < WINDOW ? WINDOW - inflight : 0;

        return n < SUBMIT_BATCH ? n : SUBMIT_BATCH;
}

static void submit_driver(void *arg)
{
        uint64_t n;

        (void)arg;
        if (pc_runtime_stopping(C.rt))
                return;
        n = window_room();
        /* Counted in a register and stored once: a store per message to a
         * global (which the calls force) is work the peer's producer does
         * not do. */
        uint64_t sent = 0;
        for (uint64_t i = 0; i < n; i++)
                sent += pc_submit(1, msg_sink_fn, &C.sink) == 0;
        C.sent += sent;
        pc_spawn_task(&C.driver);
}

/* The submit-burst32 case's driver: the same window, in bursts of 32
 * through pc_submit_burst(), as the rte_ring peer enqueues. */
#define SUBMIT_BURST 32

static void submit_burst_driver(void *arg)
{
        void *args[SUBMIT_BURST];
        uint64_t n;

        (void)arg;
        if (pc_runtime_stopping(C.rt))
                return;
        n = window_room();
        for (unsigned j = 0; j < SUBMIT_BURST; j++)
                args[j] = &C.sink;
        while (n >= SUBMIT_BURST) {
                int rc = pc_submit_burst(1, msg_sink_fn, args, SUBMIT_BURST);

                if (rc <= 0)
                        break;
                C.sent += (uint64_t)rc;
                n -= (uint64_t)rc;
        }
        pc_spawn_task(&C.driver);
}

void *msg_echo(void *arg)
{
        return arg;
}

/* What issues the call case's round trips (see msg_call_rtt()). */
static pc_task_fn call_start;

bool msg_call_round(void)
{
        /* One writer at a time; relaxed, so the callback path pays no
         * read-modify-write. */
        atomic_store_explicit(&C.rounds,
                              atomic_load_explicit(&C.rounds, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return !pc_runtime_stopping(C.rt);
}

static void call_back(void *result, void *arg)
{
        (void)result;
        (void)arg;
        if (msg_call_round())
                pc_call(1, msg_echo, NULL, call_back, NULL);
}

static void call_first(void *arg)
{
        (void)arg;
        pc_call(1, msg_echo, NULL, call_back, NULL);
}

static void mark_before(void *arg)
{
        (void)arg;
        int w = pc_worker_id();

        C.cpu[w].before = sched_getcpu();
        C.cpu[w].switches = -msg_thread_preemptions();
        C.wall0[w] = pc_now_ns();
        C.cpu0[w] = thread_cpu_ns();
}

static void mark_after(void *arg)
{
        (void)arg;
        int w = pc_worker_id();
        uint64_t wall = pc_now_ns() - C.wall0[w];

        C.cpu[w].after = sched_getcpu();
        C.cpu[w].switches += msg_thread_preemptions();
        C.cpu[w].oncpu = wall ? (double)(thread_cpu_ns() - C.cpu0[w]) / (double)wall : NAN;
}

static void stop_now(void *arg)
{
        (void)arg;
        pc_runtime_stop(C.rt);
}

/* Every worker said where it is: the clock starts. */
static void timed_start(void *arg)
{
        (void)arg;
        C.timed(NULL);
}

/* The case's main: where the workers are first, then the timed part. */
static void case_main(void *arg)
{
        (void)arg;
        C.mark_rc = pc_for_each_worker(mark_before, NULL, timed_start, NULL);
        if (C.mark_rc)
                pc_runtime_stop(C.rt);
}

/* End the run with @done counted, or, where a loaded machine let none
 * finish in its time (a warm-up has a quarter of it), run on another such
 * period, at most RUN_EXTEND_MAX times: the rate stays what was done over
 * the time it took. Then every worker says where it is, and the runtime
 * stops; what runs meanwhile is not counted. */
static void end_run(struct pc_timer *t, uint64_t done)
{
        if (done == 0 && C.extended++ < RUN_EXTEND_MAX &&
            pc_timer_start(t, C.duration_ns, 0) == 0)
                return;
        C.t1 = pc_now_ns();
        C.done_at_stop = done;
        C.mark_rc = pc_for_each_worker(mark_after, NULL, stop_now, NULL);
        if (C.mark_rc)
                pc_runtime_stop(C.rt);
}

static void stop_submit(struct pc_timer *t, void *arg)
{
        (void)arg;
        end_run(t, atomic_load_explicit(&C.sink.pub, memory_order_relaxed));
}

static void stop_call(struct pc_timer *t, void *arg)
{
        (void)arg;
        end_run(t, atomic_load_explicit(&C.rounds, memory_order_relaxed));
}

static void submit_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_submit, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        pc_task_init(&C.driver, submit_driver, NULL, PC_STICKY);
        submit_driver(NULL);
}

static void submit_burst_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_submit, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        pc_task_init(&C.driver, submit_burst_driver, NULL, PC_STICKY);
        submit_burst_driver(NULL);
}

static void call_main(void *arg)
{
        (void)arg;
        pc_timer_init(&C.stop_timer, stop_call, NULL);
        pc_timer_start(&C.stop_timer, C.duration_ns, 0);
        C.t0 = pc_now_ns();
        call_start(NULL);
}

static int msg_runtime(const struct bench_opts *o, enum pc_mode mode, struct pc_runtime **rt)
{
        struct pc_shard_opts so;
        struct pc_config cfg;
        int rc;

        bench_config(&cfg, o, mode);
        cfg.workers = MSG_WORKERS;
        rc = pc_runtime_create(&cfg, rt);
        if (rc)
                return rc;
        if (pc_runtime_workers(*rt) != MSG_WORKERS) {
                pc_runtime_destroy(*rt);
                return -EINVAL;
        }
        pc_shard_opts_init(&so);
        so.ring_size = MSG_RING;
        so.blocking_threads = 0;
        rc = pc_shard_init(*rt, &so);
        if (rc)
                pc_runtime_destroy(*rt);
        return rc;
}

static double run_case(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       const char *kase, pc_task_fn main_fn)
{
        struct probe before = probe(), after;
        double v;
        bool pin;
        int rc;

        memset(&C, 0, sizeof(C));
        rc = msg_runtime(o, mode, &C.rt);
        if (rc)
                return rc;
        pin = pc_runtime_config(C.rt)->pin;
        for (unsigned w = 0; w < MSG_WORKERS; w++)
                C.cpu[w] = (struct msg_cpu){pin ? pc_runtime_worker_cpu(C.rt, w) : -1, -1, -1, 0,
                                            NAN};
        C.duration_ns = (uint64_t)(o->duration * 1e9);
        C.timed = main_fn;
        *workers = MSG_WORKERS;
        rc = pc_runtime_run(C.rt, case_main, NULL);
        if (rc == 0 && main_fn == call_main) {
                struct pc_shard_stats st;

                if (pc_shard_stats(C.rt, 0, &st) == 0) {
                        call_pairs.runs++;
                        call_pairs.near_runs += st.near_pairs != 0;
                        call_pairs.far_runs += st.near_pairs == 0 && st.far_pairs != 0;
                        call_pairs.slot_calls += st.slot_calls;
                        call_pairs.slot_calls_near += st.slot_calls_near;
                }
        }
        pc_runtime_destroy(C.rt);
        after = probe();
        if (rc == 0)
                rc = C.mark_rc;
        if (rc)
                return rc;
        if (C.done_at_stop == 0 || C.t1 <= C.t0)
                return -EIO;
        if (main_fn == submit_main || main_fn == submit_burst_main)
                v = (double)C.done_at_stop / ((double)(C.t1 - C.t0) / 1e9);
        else
                v = (double)(C.t1 - C.t0) / (double)C.done_at_stop;
        return checked(kase, pc_mode_name(mode), C.cpu, v, &before, &after);
}

static double submit_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                         void *ctx)
{
        (void)ctx;
        return run_case(o, mode, workers, "submit", submit_main);
}

static double submit_burst_run(const struct bench_opts *o, enum pc_mode mode,
                               unsigned *workers, void *ctx)
{
        (void)ctx;
        return run_case(o, mode, workers, "submit-burst32", submit_burst_main);
}

double msg_call_rtt(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    pc_task_fn start)
{
        call_start = start;
        return run_case(o, mode, workers, "call", call_main);
}

double msg_call_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                    void *ctx)
{
        (void)ctx;
        return msg_call_rtt(o, mode, workers, call_first);
}

/* ---- peers --------------------------------------------------------------- */

/* The CPUs (and pinning) a 2-worker runtime would use, so peers run on
 * the same two CPUs as the workers they stand beside, and what the
 * topology says of them. */
static int find_placement(const struct bench_opts *o, struct placement *pl)
{
        const struct pc_topo *t;
        struct pc_runtime *rt;
        int rc = msg_runtime(o, PC_MODE_TPC, &rt);

        if (rc)
                return rc;
        memset(pl, 0, sizeof(*pl));
        t = pc_runtime_topo(rt);
        for (unsigned i = 0; i < 2; i++) {
                pl->cpu[i] = pc_runtime_worker_cpu(rt, i);
                pl->known = true;
                pl->node[i] = pc_runtime_worker_node(rt, i);
        }
        pl->pin = pc_runtime_config(rt)->pin;
        if (t && pl->cpu[0] >= 0 && pl->cpu[1] >= 0 && (unsigned)pl->cpu[0] < t->ncpus &&
            (unsigned)pl->cpu[1] < t->ncpus) {
                const struct pc_topo_cpu *a = &t->cpu[pl->cpu[0]], *b = &t->cpu[pl->cpu[1]];

                pl->smt = pl->cpu[0] != pl->cpu[1] && a->core == b->core;
                pl->l3_known = a->l3 >= 0 && b->l3 >= 0;
                pl->same_l3 = pl->l3_known && a->l3 == b->l3;
                snprintf(pl->source, sizeof(pl->source), "%.63s", t->source);
                /* The source is a path a reader wrote; the JSON writer does
                 * not escape this one. */
                for (char *c = pl->source; *c; c++)
                        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
                                *c = '?';
        } else {
                snprintf(pl->source, sizeof(pl->source), "unknown");
        }
        pl->hypervisor = cpuinfo_has_flag("hypervisor");
        pc_runtime_destroy(rt);
        return 0;
}

static double rte_ring_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                           void *ctx)
{
        struct msg_cpu seen[2];
        struct probe before = probe(), after;
        double v;
        const char *kase = ctx; /* the case it runs beside (msg_case()) */

        (void)mode;
        *workers = MSG_WORKERS;
        v = msg_peer_rte_ring(P.pin, P.cpu[0], P.cpu[1], o->duration, seen);
        if (v == -ENOTSUP)
                bench_progress("msg/%s: peer:rte_ring not built (no DPDK)", kase);
        after = probe();
        return checked(kase, "peer:rte_ring", seen, v, &before, &after);
}

/* A short run of peer:rte_ring_rtt at @pace for pace_pick(). */
static double rtt_sample(unsigned pace)
{
        double v = msg_peer_rte_ring_rtt(P.pin, P.cpu[0], P.cpu[1], 0.002, pace, NULL);

        return v > 0 ? v : NAN;
}

static double rte_ring_rtt_run(const struct bench_opts *o, enum pc_mode mode,
                               unsigned *workers, void *ctx)
{
        struct msg_cpu seen[2];
        struct probe before = probe(), after;
        double v;
        unsigned pace = pace_pick("peer:rte_ring_rtt", rtt_sample, 2);

        (void)mode;
        (void)ctx;
        *workers = MSG_WORKERS;
        v = msg_peer_rte_ring_rtt(P.pin, P.cpu[0], P.cpu[1], o->duration, pace, seen);
        if (v == -ENOTSUP)
                bench_progress("msg/call: peer:rte_ring_rtt not built (no DPDK)");
        after = probe();
        return checked("call", "peer:rte_ring_rtt", seen, v, &before, &after);
}


/* Writes odd values and waits for the even answer. */
static void *pp_ask(void *arg)
{
        struct pingpong *p = arg;
        const unsigned pace = p->pace;
        uint64_t i, end;

        p->t0 = pc_now_ns();
        end = p->t0 + p->duration_ns;
        for (i = 0;; i++) {
                atomic_store_explicit(&p->v, 2 * i + 1, memory_order_release);
                while (atomic_load_explicit(&p->v, memory_order_acquire) != 2 * i + 2)
                        msg_pause(pace);
                if ((i & 1023) == 1023 && pc_now_ns() >= end)
                        break;
        }
        p->t1 = pc_now_ns();
        p->rounds = i + 1;
        atomic_store_explicit(&p->v, PP_STOP, memory_order_release);
        return NULL;
}

static double cacheline_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                            void *ctx)
{
        /* Page-aligned like the other peers' memory. */
        static struct pingpong p __attribute__((aligned(MSG_PEER_ALIGN)));
        struct msg_cpu seen[2];
        struct probe before = probe(), after;
        unsigned pace = pace_pick("peer:pingpong", line_rtt, 1);
        int rc;

        (void)mode;
        (void)ctx;
        memset(&p, 0, sizeof(p));
        p.duration_ns = (uint64_t)(o->duration * 1e9);
        p.pace = pace;
        *workers = MSG_WORKERS;
        rc = msg_pair_run(P.pin, P.cpu[0], pp_ask, P.cpu[1], pp_answer, &p, seen);
        if (rc)
                return rc;
        after = probe();
        return checked("call", "peer:pingpong", seen, (double)(p.t1 - p.t0) / (double)p.rounds,
                       &before, &after);
}

/* ---- idle iteration cost against worker count ---------------------------- */

/*
 * Every worker idles in a polling loop with its mailbox poller registered;
 * the cost is the worker thread's CPU time per loop iteration, so workers
 * sharing a CPU (32 on this machine's 2) do not inflate it. With doorbells
 * it should not grow with the worker count.
 */
struct idle_ctx {
        struct pc_runtime *rt;
        struct pc_timer stop;
        uint64_t duration_ns;
        uint64_t cpu0[PC_MAX_WORKERS], cpu1[PC_MAX_WORKERS];
        uint64_t it0[PC_MAX_WORKERS], it1[PC_MAX_WORKERS];
};

static struct idle_ctx I;

static uint64_t my_iterations(void)
{
        struct pc_worker_stats st[PC_MAX_WORKERS];
        int n = pc_stats_snapshot(I.rt, st, PC_MAX_WORKERS);
        int me = pc_worker_id();

        return me >= 0 && me < n ? st[me].iterations : 0;
}

static void idle_mark_start(void *arg)
{
        (void)arg;
        I.cpu0[pc_worker_id()] = thread_cpu_ns();
        I.it0[pc_worker_id()] = my_iterations();
}

static void idle_mark_end(void *arg)
{
        (void)arg;
        I.cpu1[pc_worker_id()] = thread_cpu_ns();
        I.it1[pc_worker_id()] = my_iterations();
}

static void idle_stop(void *arg)
{
        (void)arg;
        pc_runtime_stop(I.rt);
}

static void idle_timer(struct pc_timer *t, void *arg)
{
        (void)t;
        (void)arg;
        pc_for_each_worker(idle_mark_end, NULL, idle_stop, NULL);
}

static void idle_started(void *arg)
{
        (void)arg;
        pc_timer_init(&I.stop, idle_timer, NULL);
        pc_timer_start(&I.stop, I.duration_ns, 0);
}

static void idle_main(void *arg)
{
        (void)arg;
        pc_for_each_worker(idle_mark_start, NULL, idle_started, NULL);
}

static double idle_run(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                       void *ctx)
{
        unsigned n = *(unsigned *)ctx;
        struct pc_shard_opts so;
        struct pc_config cfg;
        double sum = 0;
        int rc;

        memset(&I, 0, sizeof(I));
        bench_config(&cfg, o, mode);
        cfg.workers = n;
        cfg.pin = n <= 2; /* more workers than this machine's CPUs share them */
        rc = pc_runtime_create(&cfg, &I.rt);
        if (rc)
                return rc;
        pc_shard_opts_init(&so);
        so.blocking_threads = 0;
        rc = pc_shard_init(I.rt, &so);
        if (rc == 0) {
                I.duration_ns = (uint64_t)(o->duration * 1e9);
                rc = pc_runtime_run(I.rt, idle_main, NULL);
        }
        *workers = pc_runtime_workers(I.rt);
        pc_runtime_destroy(I.rt);
        if (rc)
                return rc;
        for (unsigned w = 0; w < n; w++) {
                if (I.it1[w] <= I.it0[w])
                        return -EIO;
                sum += (double)(I.cpu1[w] - I.cpu0[w]) / (double)(I.it1[w] - I.it0[w]);
        }
        return sum / n;
}

/* A peer of a case; a floor bounds what percore can reach. */
struct msg_peer {
        const char *name;
        bench_run_fn fn;
        bool floor;
};

/* The notes of a side's runs keep one per round (the warm-up first): a
 * try that is run again leaves its counts (runs, moved), not its note. */
static void drop_last_note(const char *kase, const char *side)
{
        for (unsigned i = 0; i < nran; i++)
                if (strcmp(ran[i].kase, kase) == 0 && strcmp(ran[i].side, side) == 0 &&
                    ran[i].nnotes)
                        ran[i].nnotes--;
}

/* A side's run with its retries (retried()). */
struct msg_try {
        bench_run_fn fn;
        void *ctx;
        const char *kase, *name;
};

/*
 * Run a side; a run during which the host moved a vCPU (BENCH_MOVED) is
 * run again, up to MSG_TRIES in all. This host moves them several times a
 * second, so most 1-second runs of a round would otherwise be lost and a
 * case could end with no round in which a side and its peer pair.
 */
static double retried(const struct bench_opts *o, enum pc_mode mode, unsigned *workers,
                      void *ctx)
{
        const struct msg_try *t = ctx;
        double v = BENCH_MOVED;

        for (unsigned a = 0; a < MSG_TRIES && v == BENCH_MOVED; a++) {
                if (a) {
                        bench_progress("msg/%s %s: the host moved a vCPU: run again (try %u "
                                       "of %u)",
                                       t->kase, t->name, a + 1, MSG_TRIES);
                        drop_last_note(t->kase, t->name);
                }
                v = t->fn(o, mode, workers, t->ctx);
        }
        return v;
}

/* One case: the percore modes that run two workers, then @np peers. */
static int msg_case(const struct bench_opts *o, const char *kase, const char *metric,
                    const char *unit, bool lower_is_better, bench_run_fn fn,
                    const struct msg_peer *peers, unsigned np)
{
        struct bench_side sides[BENCH_MAX_SIDES];
        struct msg_try tries[BENCH_MAX_SIDES];
        unsigned n = 0;
        int rc;

        for (unsigned m = 0; m < o->nmodes && n < BENCH_MAX_SIDES; m++)
                if (o->modes[m] != PC_MODE_DETERMINISTIC) {
                        tries[n] = (struct msg_try){fn, NULL, kase, pc_mode_name(o->modes[m])};
                        sides[n] = (struct bench_side){pc_mode_name(o->modes[m]), o->modes[m],
                                                       retried, &tries[n]};
                        n++;
                }
        for (unsigned p = 0; p < np && n < BENCH_MAX_SIDES; p++) {
                tries[n] = (struct msg_try){peers[p].fn, (void *)kase, kase, peers[p].name};
                sides[n] = (struct bench_side){peers[p].name, PC_MODE_TPC, retried, &tries[n]};
                n++;
        }
        rc = bench_compare(o, "msg", kase, metric, unit, lower_is_better, sides, n);
        for (unsigned p = 0; p < np && rc == 0; p++)
                if (peers[p].floor)
                        bench_set_floor("msg", kase, peers[p].name);
        return rc;
}

int suite_msg(const struct bench_opts *o)
{
        static unsigned counts[] = {2, 8, 32};
        static const char *cases[] = {"idle-2w", "idle-8w", "idle-32w"};
        int rc;

        /* PERCORE_MODE=deterministic makes every runtime of the process one
         * worker, the peers' CPU probe included. */
        if (o->nmodes == 1 && o->modes[0] == PC_MODE_DETERMINISTIC) {
                bench_progress("msg: skipped in deterministic mode (one worker)");
                return 0;
        }
        static const struct msg_peer submit_peers[] = {
                {"peer:rte_ring", rte_ring_run, false},
        };
        /* A call can beat the ring pair (one line each way against a slot
         * and a tail each way), never the bounced line. */
        static const struct msg_peer call_peers[MSG_MAX_PEERS] = {
                {"peer:pingpong", cacheline_run, true},
                {"peer:rte_ring_rtt", rte_ring_rtt_run, false},
        };

        rc = find_placement(o, &P);
        if (rc)
                return rc;
        nran = 0;
        memset(pace_won, 0, sizeof(pace_won));
        rc = msg_case(o, "submit", "msgs_per_sec", "msgs/s", false, submit_run, submit_peers,
                      1);
        if (rc == 0)
                rc = msg_case(o, "submit-burst32", "msgs_per_sec", "msgs/s", false,
                              submit_burst_run, submit_peers, 1);
        if (rc == 0)
                rc = msg_case(o, "call", "call_rtt_ns", "ns", true, msg_call_run, call_peers,
                              MSG_MAX_PEERS);
        placement_info();
        /* The fiber suite borrows the call case: it runs without probes
         * or conditions, its sides paired as any suite's. */
        P.known = false;
        for (unsigned i = 0; i < 3 && rc == 0; i++) {
                const struct bench_side idle = {"tpc", PC_MODE_TPC, idle_run, &counts[i]};

                rc = bench_compare(o, "msg", cases[i], "idle_iter_ns", "ns", true, &idle, 1);
        }
        return rc;
}
