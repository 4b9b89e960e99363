/* SPDX-License-Identifier: MIT */
/*
 * The notes the msg suite keeps of its runs (msg_runs.h): where each side
 * ran and what the probes said around each run, which runs are used, the
 * paces the spinning peers picked, and the JSON and text of it all.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "msg_runs.h"

#define MSG_MAX_RAN 16 /* (case, side) pairs whose CPUs the JSON reports */

/* One run of a side as the JSON lists it, the warm-up first: its value,
 * the lower on-CPU share of its two timed threads, and the line round trip
 * between the two CPUs probed just before and just after it. */
struct run_note {
        double value, oncpu, line0, line1;
        double core0, core1; /* each CPU's core probe, before and after averaged */
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

double msg_checked(const char *kase, const char *side, const struct msg_cpu seen[2],
                   double v, const struct msg_probe *b, const struct msg_probe *a)
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
                        bench_progress(
                            "msg/%s %s: thread %u, pinned to CPU %d, ran on CPU %d "
                            "before and %d after its timed part",
                            kase, side, i, seen[i].want, seen[i].before, seen[i].after);
                }
        }
        /* The host moved a vCPU during the run when the line round trip
         * changed that much: the run measured two machines. */
        if (!bench_cond_match(line0, line1)) {
                moved = true;
                bench_progress(
                    "msg/%s %s: the line round trip between CPUs %d and %d went "
                    "from %.0f to %.0f ns during the run (the host moved a vCPU)",
                    kase, side, msg_where.cpu[0], msg_where.cpu[1], line0, line1);
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
                        bench_progress(
                            "msg/%s %s: CPU %d's core probe went from %.2f to %.2f "
                            "ns during the run (the host shares its core)",
                            kase, side, msg_where.cpu[i], b->core[i], a->core[i]);
                }
        }
        /* Where the host had the vCPUs, how much of them this run's
         * threads had and how fast each CPU ran: a side and a peer pair
         * only when all match. Only for the suite's own cases (msg_where.known),
         * which probe. */
        if (!moved && msg_where.known) {
                bench_condition(
                    0, isfinite(line0) && isfinite(line1) ? (line0 + line1) / 2 : NAN);
                bench_condition(1, fmin(seen[0].oncpu, seen[1].oncpu));
                bench_condition(2, core[0]);
                bench_condition(3, core[1]);
        }
        if (r && r->nnotes < BENCH_MAX_RUNS + 1)
                r->notes[r->nnotes++] =
                    (struct run_note){moved ? NAN : v, fmin(seen[0].oncpu, seen[1].oncpu),
                                      line0,           line1,
                                      core[0],         core[1]};
        if (r) {
                r->runs++;
                r->moved += moved;
                r->preempted += seen[0].switches + seen[1].switches > 0;
                r->switches += seen[0].switches + seen[1].switches;
        }
        return moved ? BENCH_MOVED : v;
}

/*
 * The paces a spinning peer (peer:rte_ring_rtt) tries before each run, the
 * fastest kept: where two CPUs are far apart, back-to-back loads at a line
 * the other side is about to write can slow that write's hand-off, and a
 * few pauses between polls make the ring's round trip faster. The floor
 * (peer:pingpong) is not paced: it spins as a user writes it.
 */
static const unsigned msg_paces[] = {0, 1, 2, 3, 4, 5, 6, 8, 12, 16};
#define MSG_NPACES (sizeof(msg_paces) / sizeof(msg_paces[0]))

/* How often each pace won, per peer, for the footer and the JSON. */
static struct {
        const char *side;
        unsigned won[MSG_NPACES];
} pace_won[MSG_MAX_PEERS];

unsigned msg_pace_pick(const char *side, double (*sample)(unsigned pace), unsigned tries)
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

static int json_nums(char *buf, size_t len, const char *key, const struct ran *r,
                     size_t off)
{
        int n = snprintf(buf, len, ", \"%s\": [", key);

        for (unsigned i = 0; i < r->nnotes && n > 0 && (size_t)n < len; i++) {
                double v = *(const double *)((const char *)&r->notes[i] + off);
                n += isfinite(v)
                         ? snprintf(buf + n, len - (size_t)n, "%s%.4g", i ? ", " : "", v)
                         : snprintf(buf + n, len - (size_t)n, "%snull", i ? ", " : "");
        }
        if (n > 0 && (size_t)n < len)
                n += snprintf(buf + n, len - (size_t)n, "]");
        return n;
}

struct msg_call_pairs msg_call_pairs;

/* Append what @fmt says to @buf, which holds *@n of its @len bytes; once
 * it is full (or after an error) nothing more. */
static void put(char *buf, size_t len, int *n, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, int *n, const char *fmt, ...)
{
        va_list ap;

        if (*n < 0 || (size_t)*n >= len)
                return;
        va_start(ap, fmt);
        *n += vsnprintf(buf + *n, len - (size_t)*n, fmt, ap);
        va_end(ap);
}

static const char *yes(bool b)
{
        return b ? "true" : "false";
}

/* The JSON object of where the suite ran and what each side's runs saw. */
static void placement_json(char *json, size_t len)
{
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
        const struct msg_placement *w = &msg_where;
        const struct msg_call_pairs *cp = &msg_call_pairs;
        int n = 0;

        put(json, len, &n,
            "{\"cpus\": [%d, %d], \"pinned\": %s, \"smt_siblings\": %s, "
            "\"same_l3\": %s, \"l3_known\": %s, \"nodes\": [%d, %d], \"hypervisor\": %s, "
            "\"topology\": \"%s\", \"peer_align\": %d, \"ran_on\": [",
            w->cpu[0], w->cpu[1], yes(w->pin), yes(w->smt), yes(w->same_l3),
            yes(w->l3_known), w->node[0], w->node[1], yes(w->hypervisor), w->source,
            MSG_PEER_ALIGN);
        for (unsigned i = 0; i < nran; i++) {
                put(json, len, &n,
                    "%s{\"case\": \"%s\", \"side\": \"%s\", \"cpus\": [%d, %d], "
                    "\"runs\": %u, \"moved\": %u, \"preempted_runs\": %u, "
                    "\"preemptions\": %ld",
                    i ? ", " : "", ran[i].kase, ran[i].side, ran[i].cpu[0], ran[i].cpu[1],
                    ran[i].runs, ran[i].moved, ran[i].preempted, ran[i].switches);
                for (unsigned a = 0; a < sizeof(arrays) / sizeof(arrays[0]); a++)
                        if (n >= 0 && (size_t)n < len)
                                n += json_nums(json + n, len - (size_t)n, arrays[a].key,
                                               &ran[i], arrays[a].off);
                put(json, len, &n, "}");
        }
        put(json, len, &n, "], \"paces_tried\": [");
        for (unsigned i = 0; i < MSG_NPACES; i++)
                put(json, len, &n, "%s%u", i ? ", " : "", msg_paces[i]);
        put(json, len, &n, "], \"pace_won\": {");
        for (unsigned k = 0; k < MSG_MAX_PEERS && pace_won[k].side; k++) {
                put(json, len, &n, "%s\"%s\": [", k ? ", " : "", pace_won[k].side);
                for (unsigned i = 0; i < MSG_NPACES; i++)
                        put(json, len, &n, "%u%s", pace_won[k].won[i],
                            i + 1 < MSG_NPACES ? ", " : "]");
        }
        put(json, len, &n,
            "}, \"call_pairs\": {\"runs\": %u, \"near_runs\": %u, \"far_runs\": %u, "
            "\"slot_calls\": %" PRIu64 ", \"slot_calls_near\": %" PRIu64 "}}",
            cp->runs, cp->near_runs, cp->far_runs, cp->slot_calls, cp->slot_calls_near);
}

/* The footer's lines after the first: the probes' ranges, the paces, the
 * call pairs, the hypervisor. */
static void placement_lines(char *text, size_t len)
{
        const struct msg_call_pairs *cp = &msg_call_pairs;
        double lo = INFINITY, hi = -INFINITY, clo[2] = {INFINITY, INFINITY},
               chi[2] = {-INFINITY, -INFINITY};
        int n = 0;

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
                put(text, len, &n,
                    ";\n  the line round trip between them, probed around each run: "
                    "%.0f-%.0f ns;\n  each CPU's core probe (ns a step, higher when "
                    "the host shares its core): %.2f-%.2f and %.2f-%.2f;\n  rounds pair "
                    "under probes and CPU shares within %gx",
                    lo, hi, clo[0], chi[0], clo[1], chi[1], BENCH_COND_MATCH);
        put(text, len, &n,
            ";\n  peer:pingpong, the floor, spins with no pause between looks");
        for (unsigned k = 0; k < MSG_MAX_PEERS && pace_won[k].side; k++) {
                unsigned most = 0;

                for (unsigned i = 1; i < MSG_NPACES; i++)
                        if (pace_won[k].won[i] > pace_won[k].won[most])
                                most = i;
                put(text, len, &n, "%s%s %u",
                    k ? ", "
                      : ";\n  spinning peers poll with the pauses (0-16) that were "
                        "fastest just\n  before each run, most often: ",
                    pace_won[k].side + 5, msg_paces[most]);
        }
        if (cp->runs)
                put(text, len, &n,
                    ";\n  percore's call runs ended with the pair near in %u, far in "
                    "%u of %u;\n  %.0f %% of their slot calls reused a near line",
                    cp->near_runs, cp->far_runs, cp->runs,
                    cp->slot_calls ? 100.0 * (double)cp->slot_calls_near /
                                             (double)cp->slot_calls
                                   : 0.0);
        if (msg_where.hypervisor)
                put(text, len, &n,
                    ";\n  a virtual machine: its host may still run these vCPUs on one "
                    "core's\n  SMT threads, or elsewhere");
}

void msg_placement_info(void)
{
        static char json[65536];
        const struct msg_placement *w = &msg_where;
        char text[1024], lines[768] = "";

        placement_json(json, sizeof(json));
        placement_lines(lines, sizeof(lines));
        snprintf(text, sizeof(text), "CPUs %d and %d (%s), %s, %s (topology: %s)%s",
                 w->cpu[0], w->cpu[1], w->pin ? "pinned" : "not pinned",
                 w->smt ? "SMT siblings of one core" : "not SMT siblings",
                 !w->l3_known ? "L3 unknown" : w->same_l3 ? "one L3" : "different L3s",
                 w->source, lines);
        bench_info("msg", json, text);
}

void msg_drop_last_note(const char *kase, const char *side)
{
        for (unsigned i = 0; i < nran; i++)
                if (strcmp(ran[i].kase, kase) == 0 && strcmp(ran[i].side, side) == 0 &&
                    ran[i].nnotes)
                        ran[i].nnotes--;
}

void msg_runs_reset(void)
{
        nran = 0;
        memset(pace_won, 0, sizeof(pace_won));
}
