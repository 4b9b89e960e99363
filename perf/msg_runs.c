/* SPDX-License-Identifier: MIT */
/*
 * The notes the msg suite keeps of its runs (msg_runs.h): where each side
 * ran and what the probes said around each run, which runs are used, the
 * paces the spinning peers picked, and the JSON and text of it all.
 */
#include <inttypes.h>
#include <math.h>
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

void msg_placement_info(void)
{
        static char json[65536];
        char text[1024];
        int n;

        n = snprintf(
            json, sizeof(json),
            "{\"cpus\": [%d, %d], \"pinned\": %s, \"smt_siblings\": %s, "
            "\"same_l3\": %s, \"l3_known\": %s, \"nodes\": [%d, %d], \"hypervisor\": %s, "
            "\"topology\": \"%s\", \"peer_align\": %d, \"ran_on\": [",
            msg_where.cpu[0], msg_where.cpu[1], msg_where.pin ? "true" : "false",
            msg_where.smt ? "true" : "false", msg_where.same_l3 ? "true" : "false",
            msg_where.l3_known ? "true" : "false", msg_where.node[0], msg_where.node[1],
            msg_where.hypervisor ? "true" : "false", msg_where.source, MSG_PEER_ALIGN);
        for (unsigned i = 0; i < nran && n > 0 && (size_t)n < sizeof(json); i++) {
                n += snprintf(
                    json + n, sizeof(json) - (size_t)n,
                    "%s{\"case\": \"%s\", \"side\": \"%s\", \"cpus\": [%d, %d], "
                    "\"runs\": %u, \"moved\": %u, \"preempted_runs\": %u, "
                    "\"preemptions\": %ld",
                    i ? ", " : "", ran[i].kase, ran[i].side, ran[i].cpu[0], ran[i].cpu[1],
                    ran[i].runs, ran[i].moved, ran[i].preempted, ran[i].switches);
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
                for (unsigned a = 0; a < sizeof(arrays) / sizeof(arrays[0]) && n > 0 &&
                                     (size_t)n < sizeof(json);
                     a++)
                        n += json_nums(json + n, sizeof(json) - (size_t)n, arrays[a].key,
                                       &ran[i], arrays[a].off);
                if (n > 0 && (size_t)n < sizeof(json))
                        n += snprintf(json + n, sizeof(json) - (size_t)n, "}");
        }
        if (n > 0 && (size_t)n < sizeof(json))
                n +=
                    snprintf(json + n, sizeof(json) - (size_t)n, "], \"paces_tried\": [");
        for (unsigned i = 0; i < MSG_NPACES && n > 0 && (size_t)n < sizeof(json); i++)
                n += snprintf(json + n, sizeof(json) - (size_t)n, "%s%u", i ? ", " : "",
                              msg_paces[i]);
        if (n > 0 && (size_t)n < sizeof(json))
                n += snprintf(json + n, sizeof(json) - (size_t)n, "], \"pace_won\": {");
        for (unsigned k = 0; k < MSG_MAX_PEERS && pace_won[k].side; k++)
                for (unsigned i = 0; i < MSG_NPACES && n > 0 && (size_t)n < sizeof(json);
                     i++) {
                        if (i == 0)
                                n += snprintf(json + n, sizeof(json) - (size_t)n,
                                              "%s\"%s\": [", k ? ", " : "",
                                              pace_won[k].side);
                        if (n > 0 && (size_t)n < sizeof(json))
                                n += snprintf(json + n, sizeof(json) - (size_t)n, "%u%s",
                                              pace_won[k].won[i],
                                              i + 1 < MSG_NPACES ? ", " : "]");
                }
        if (n > 0 && (size_t)n < sizeof(json))
                snprintf(json + n, sizeof(json) - (size_t)n,
                         "}, \"call_pairs\": {\"runs\": %u, \"near_runs\": %u, "
                         "\"far_runs\": %u, "
                         "\"slot_calls\": %" PRIu64 ", \"slot_calls_near\": %" PRIu64
                         "}}",
                         msg_call_pairs.runs, msg_call_pairs.near_runs,
                         msg_call_pairs.far_runs, msg_call_pairs.slot_calls,
                         msg_call_pairs.slot_calls_near);
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
                snprintf(
                    range, sizeof(range),
                    ";\n  the line round trip between them, probed around each run: "
                    "%.0f-%.0f ns;\n  each CPU's core probe (ns a step, higher when the "
                    "host shares its core): %.2f-%.2f and %.2f-%.2f;\n  rounds pair "
                    "under "
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
                              k ? ", "
                                : ";\n  spinning peers poll with the pauses (0-16) that "
                                  "were fastest just\n  before each run, most often: ",
                              pace_won[k].side + 5, msg_paces[most]);
        }
        char pairs[256] = "";

        if (msg_call_pairs.runs)
                snprintf(
                    pairs, sizeof(pairs),
                    ";\n  percore's call runs ended with the pair near in %u, far in "
                    "%u of %u;\n  %.0f %% of their slot calls reused a near line",
                    msg_call_pairs.near_runs, msg_call_pairs.far_runs,
                    msg_call_pairs.runs,
                    msg_call_pairs.slot_calls
                        ? 100.0 * (double)msg_call_pairs.slot_calls_near /
                              (double)msg_call_pairs.slot_calls
                        : 0.0);
        snprintf(text, sizeof(text), "CPUs %d and %d (%s), %s, %s (topology: %s)%s%s%s%s",
                 msg_where.cpu[0], msg_where.cpu[1],
                 msg_where.pin ? "pinned" : "not pinned",
                 msg_where.smt ? "SMT siblings of one core" : "not SMT siblings",
                 !msg_where.l3_known ? "L3 unknown"
                 : msg_where.same_l3 ? "one L3"
                                     : "different L3s",
                 msg_where.source, range, paces, pairs,
                 msg_where.hypervisor
                     ? ";\n  a virtual machine: its host may still run these vCPUs "
                       "on one core's\n  SMT threads, or elsewhere"
                     : "");
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
