/* SPDX-License-Identifier: MIT */
/*
 * Where the msg suite runs and what it probes around every run
 * (msg_probe.h): the two CPUs and what the topology says of them, the
 * cache line's round trip between them, and how fast each runs plain
 * code.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "msg_probe.h"
#include "pc_topo.h"

struct msg_placement msg_where;

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
                        for (char *p = strstr(line, flag); p && !found;
                             p = strstr(p + 1, flag))
                                found = (p[-1] == ' ' || p[-1] == '\t') &&
                                        (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
        fclose(f);
        return found;
}

void msg_find_placement(struct pc_runtime *rt, struct msg_placement *pl)
{
        const struct pc_topo *t;

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
                const struct pc_topo_cpu *a = &t->cpu[pl->cpu[0]],
                                         *b = &t->cpu[pl->cpu[1]];

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
}

#define PROBE_SAMPLES 16
#define PROBE_ROUNDS 256
#define PROBE_STOP UINT64_MAX /* odd, so the answering side looks at it */

/* One cache line two threads bounce a counter on: the asking side writes
 * odd values, the answering side the even ones, until PROBE_STOP. */
struct probe_line {
        _Atomic uint64_t v __attribute__((aligned(64)));
        char pad[56];
        double best; /* ns a round trip, the fastest sample */
};

static void *probe_answer(void *arg)
{
        struct probe_line *p = arg;

        for (;;) {
                uint64_t v = atomic_load_explicit(&p->v, memory_order_acquire);

                if (v == PROBE_STOP)
                        break;
                if (v & 1)
                        atomic_store_explicit(&p->v, v + 1, memory_order_release);
        }
        return NULL;
}

/* The line round trip in PROBE_SAMPLES short samples, the fastest kept:
 * a sample in which a thread was preempted is slow, not fast. */
static void *probe_ask(void *arg)
{
        struct probe_line *p = arg;
        uint64_t i = 0;

        p->best = INFINITY;
        for (unsigned s = 0; s < PROBE_SAMPLES; s++) {
                uint64_t t0 = pc_now_ns();
                for (unsigned k = 0; k < PROBE_ROUNDS; k++, i++) {
                        atomic_store_explicit(&p->v, 2 * i + 1, memory_order_release);
                        while (atomic_load_explicit(&p->v, memory_order_acquire) !=
                               2 * i + 2)
                                ;
                }
                p->best = fmin(p->best, (double)(pc_now_ns() - t0) / PROBE_ROUNDS);
        }
        atomic_store_explicit(&p->v, PROBE_STOP, memory_order_release);
        return NULL;
}

/*
 * The hardware's line round trip between the suite's two CPUs now, both
 * threads spinning with nothing between two looks (always the same, so
 * two probes compare), in a few milliseconds; NAN when it cannot be had.
 * Taken before and after every run: the guest cannot see where a host
 * runs its vCPUs (one core's SMT threads, two cores of one L3, two L3s),
 * and the host may change that at any time, which changes every figure of
 * the suite several times over. The probe shows which placement a run
 * had, and a run during which it changed.
 */
static double line_probe(void)
{
        static struct probe_line p __attribute__((aligned(MSG_PEER_ALIGN)));

        if (!msg_where.known)
                return NAN;
        memset(&p, 0, sizeof(p));
        if (msg_pair_run(msg_where.pin, msg_where.cpu[0], probe_ask, msg_where.cpu[1],
                         probe_answer, &p, NULL))
                return NAN;
        return p.best;
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
 * another guest at any time, which slows percore's side (more
 * instructions a message) far more than a peer's that mostly waits on
 * memory: rounds on either side of such a change compare two machines.
 */
static void core_probe(double out[2])
{
        out[0] = out[1] = NAN;
        if (msg_where.known)
                (void)msg_pair_run(msg_where.pin, msg_where.cpu[0], core_spin,
                                   msg_where.cpu[1], core_spin1, out, NULL);
}

struct msg_probe msg_probe_now(void)
{
        struct msg_probe p = {line_probe(), {NAN, NAN}};

        core_probe(p.core);
        return p;
}
