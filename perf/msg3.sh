#!/usr/bin/env bash
# The msg suite in 3 separate percore-bench processes, compared: per
# process the median over its alternated rounds of each ratio that has a
# target below, then the spread of each across the processes.
#
#   call vs pingpong       call round trip <= 1.5x peer:pingpong's
#   call vs rte_ring_rtt   call round trip <= 1.0x peer:rte_ring_rtt's
#   submit vs rte_ring     pc_submit >= 1.0x peer:rte_ring's throughput
#   burst vs rte_ring      the same for pc_submit_burst() of 32 (the peer's
#                          own burst), no target
#   spread                 each ratio's max/min over the processes <= 1.2
#
# Ratios are the bench's: above 1 when percore is better (a round-trip
# ratio is the peer's time over the call's), so the call targets read as
# ratio >= 0.67 and >= 1. Beside them, what tells processes apart: the CPUs
# and whether the topology calls them SMT siblings, the floor's round trip
# (a host that put both vCPUs on one core's SMT threads shows a short one),
# the host's steal time and the load average over each process, and
# "preempt": the runs (warm-ups included) in which a timed thread was
# switched out for another runnable thread, of all the runs; "line_ns":
# the range of the line round trip the suite probed around its runs (two
# placements of the vCPUs show as two levels); "core_ns": each CPU's core
# probe (ns a step of plain work, higher while the host runs another
# guest on the same core). A ratio pairs only rounds whose side and peer
# ran under matching probes; "/N" says how many did. A process none of
# whose rounds paired measured nothing there: "unmeasured", not a miss.
# The same ratios per placement follow, each level with its own verdict
# (the target, and the spread over the processes that ran there).
#
# usage: perf/msg3.sh [-b BENCH] [-n PROCESSES] [-o DIR] [-- BENCH ARGS...]
#        perf/msg3.sh -a DIR
#   -b  percore-bench to run (default build/perf/percore-bench)
#   -n  processes (default 3)
#   -o  keep the JSON and logs in DIR (default a temporary directory)
#   -a  run nothing: compare again the processes an earlier -o DIR kept
# PERCORE_MODE defaults to tpc (the targets are thread-per-core's); set it
# to another mode to measure that one. Exits 1 when a run fails, 0
# otherwise (a missed target is a result, not a failure).
set -uo pipefail
bench=build/perf/percore-bench n=3 out= again=
while getopts "b:n:o:a:h" opt; do
	case $opt in
	b) bench=$OPTARG ;;
	n) n=$OPTARG ;;
	o) out=$OPTARG ;;
	a) again=$OPTARG ;;
	h) sed -n '2,/^set -uo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
	echo "msg3: -n $n: expected a number of processes, 1 or more" >&2
	exit 2
fi
if [ -n "$again" ]; then
	n=$(find "$again" -maxdepth 1 -name 'p*.json' | wc -l)
	if [ "$n" -eq 0 ]; then
		echo "msg3: -a $again: no p*.json there (from -o DIR)" >&2
		exit 2
	fi
	out=$again
elif [ ! -x "$bench" ]; then
	echo "msg3: $bench is not an executable percore-bench (-b BENCH)" >&2
	exit 2
fi
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
export PERCORE_MODE=${PERCORE_MODE:-tpc}
[ -n "$again" ] && n_run=0 || n_run=$n

# The cpu line of /proc/stat: total ticks and steal ticks.
ticks() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9 }' /proc/stat
}

for i in $(seq 1 "$n_run"); do
	read -r t0 s0 < <(ticks)
	load=$(cut -d' ' -f1 /proc/loadavg)
	echo "msg3: process $i of $n (load $load)" >&2
	if ! "$bench" --suite msg --json "$out/p$i.json" "$@" >"$out/p$i.out" 2>"$out/p$i.err"; then
		echo "msg3: process $i failed:" >&2
		tail -20 "$out/p$i.err" >&2
		exit 1
	fi
	read -r t1 s1 < <(ticks)
	echo "$load $((t1 - t0)) $((s1 - s0))" >"$out/p$i.host"
done

python3 - "$out" "$n" <<'PY'
import json, sys

out, n = sys.argv[1], int(sys.argv[2])
mode = None
# (case, peer, bench ratio target, what the target says)
targets = [
    ("call", "peer:pingpong", 1 / 1.5, "call <= 1.5x pingpong"),
    ("call", "peer:rte_ring_rtt", 1.0, "call <= 1.0x rte_ring_rtt"),
    ("submit", "peer:rte_ring", 1.0, "submit >= 1.0x rte_ring"),
    ("submit-burst32", "peer:rte_ring", 1.0, "burst >= 1.0x rte_ring"),
]
SPREAD = 1.2
MATCH = 1.3  # the bench's BENCH_COND_MATCH

def rec(doc, case, mode):
    for r in doc["records"]:
        if r["case"] == case and r["mode"] == mode:
            return r["value"]
    return None

procs = []
for i in range(1, n + 1):
    doc = json.load(open(f"{out}/p{i}.json"))
    load, ticks, steal = open(f"{out}/p{i}.host").read().split()
    info = doc.get("info", {}).get("msg", {})
    sides = sorted({r["mode"] for r in doc["records"]
                    if r["case"] == "call" and not r["mode"].startswith(("peer:", "base:"))})
    mode = mode or (sides[0] if sides else "tpc")
    ratios = {}
    for x in doc["ratios"]:
        if x["side"] == mode:
            ratios[(x["case"], x["peer"])] = x
    ran = info.get("ran_on", [])
    lines = [v for r in ran for k in ("line_rtt_ns", "line_rtt_after_ns")
             for v in r.get(k, []) if v]
    cores = [[v for r in ran for v in r.get(k, []) if v == v and v]
             for k in ("core0_ns", "core1_ns")]
    procs.append(dict(info=info, ratios=ratios, load=float(load),
                      line=f"{min(lines):.0f}-{max(lines):.0f}" if lines else "-",
                      core="/".join(f"{min(c):.2f}-{max(c):.2f}" if c else "-" for c in cores),
                      pre=f"{sum(r.get('preempted_runs', 0) for r in ran)}/"
                          f"{sum(r.get('runs', 0) for r in ran)}",
                      steal=100.0 * int(steal) / max(int(ticks), 1),
                      pp=rec(doc, "call", "peer:pingpong"), call=rec(doc, "call", mode),
                      rtt=rec(doc, "call", "peer:rte_ring_rtt"),
                      sub=rec(doc, "submit", mode), ring=rec(doc, "submit", "peer:rte_ring")))

def fmt(v, unit=""):
    if v is None:
        return "-"
    for div, sfx in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{sfx}{unit}"
    return f"{v:.3g}{unit}"

print(f"msg suite in {n} processes, percore side {mode}: medians of each process's rounds")
print()
print("proc  cpus  smt   load  steal  preempt  line_ns   call_ns  pingpong_ns  rte_rtt_ns"
      "  submit/s  rte_ring/s  core_ns (cpu0/cpu1)")
for i, p in enumerate(procs, 1):
    cpus = p["info"].get("cpus", ["?", "?"])
    smt = p["info"].get("smt_siblings")
    print(f"{i:>4}  {cpus[0]},{cpus[1]:<3} {'yes' if smt else 'no' if smt is False else '?':<4} "
          f"{p['load']:>5.2f}  {p['steal']:>4.1f}%  {p['pre']:>7}  {p['line']:>7}  "
          f"{fmt(p['call']):>7}  {fmt(p['pp']):>11}  "
          f"{fmt(p['rtt']):>10}  {fmt(p['sub']):>8}  {fmt(p['ring']):>10}  {p['core']}")
print()
print("ratio/rounds paired (above 1: percore better)")
print(" " * 26 + "  ".join(f"p{i}".rjust(7) for i in range(1, n + 1)) + "  spread  target")
missed, unpaired = [], []
for case, peer, want, what in targets:
    vals, cells = [], []
    for p in procs:
        x = p["ratios"].get((case, peer))
        if x is None:
            cells.append("-")
        elif x["refused"]:
            cells.append("floor<")  # floor slower than percore: no ratio
        else:
            vals.append(x["value"])
            cells.append(f"{x['value']:.2f}/{x['rounds']}")
    # A process whose rounds never paired (every pair ran under different
    # probes) measured nothing: that is said, not counted as a miss.
    whole = len(vals) == len(procs)
    spread = max(vals) / min(vals) if len(vals) > 1 else None
    ok = bool(vals) and all(v >= want for v in vals)
    sp_ok = spread is not None and spread <= SPREAD
    name = f"{case} vs {peer[5:]}"
    part = "" if whole else f" in {len(vals)} of {len(procs)}"
    print(f"{name:<25} " + "  ".join(c.rjust(7) for c in cells) +
          f"  {(f'{spread:.2f}' if spread else '-'):>6}  {what} (>= {want:.2f}): "
          f"{('met' if ok else 'missed') if vals else 'unmeasured'}{part}, spread "
          f"{('met' if sp_ok else 'missed') if spread else 'unmeasured'}{part}")
    if vals and not ok:
        missed.append(what)
    if spread and not sp_ok:
        missed.append(f"{name} spread <= {SPREAD}")
    gaps = sum(p["ratios"].get((case, peer)) is None for p in procs)
    if gaps:
        unpaired.append(f"{name} in {gaps} process(es)")
if any(x["refused"] for p in procs for x in p["ratios"].values()):
    print("floor<: the floor measured slower than percore, so no ratio")

# The same ratios per placement: each round's pair of runs (matched as the
# bench pairs them) grouped by the line round trip probed around them,
# a level being the probes within sqrt(MATCH) of the densest one left. Comparing processes at one level leaves out the host's moves.
def notes(p, case, side):
    for r in p["info"].get("ran_on", []):
        if r["case"] == case and r["side"] == side:
            return list(zip(r["values"], r["line_rtt_ns"], r["line_rtt_after_ns"], r["oncpu"]))
    return []

def close(a, b):
    return a is None or b is None or a <= 0 or b <= 0 or max(a, b) / min(a, b) <= MATCH

pairs = {}  # (case, peer) -> per process [(probe, ratio)]
for case, peer, _, _ in targets:
    lower = case == "call"
    for k, p in enumerate(procs):
        a, b = notes(p, case, mode), notes(p, case, peer)
        for i in range(1, min(len(a), len(b))):  # 0 is the warm-up
            (va, a0, a1, ca), (vb, b0, b1, cb) = a[i], b[i]
            if not (va and vb and a0 and a1 and b0 and b1):
                continue
            pa, pb = (a0 + a1) / 2, (b0 + b1) / 2
            if close(pa, pb) and close(ca, cb):
                pairs.setdefault((case, peer), [[] for _ in procs])[k].append(
                    ((pa + pb) / 2, vb / va if lower else va / vb))
rest = sorted(x for per in pairs.values() for pp in per for x, _ in pp)
levels, h = [], MATCH ** 0.5
while rest:
    c = max(rest, key=lambda c: sum(c / h <= y <= c * h for y in rest))
    near = [y for y in rest if c / h <= y <= c * h]
    levels.append((min(near), max(near)))
    rest = [y for y in rest if y not in near]
levels.sort()
if levels:
    print()
    print("per placement (line round trip probed around the pair): median ratio/pairs")
    print(" " * 26 + "  ".join(f"p{i}".rjust(7) for i in range(1, n + 1)) +
          "  spread  target")
    for lo, hi in levels:
        print(f"line {lo:.0f}-{hi:.0f} ns")
        for case, peer, want, _ in targets:
            cells, vals = [], []
            for pp in pairs.get((case, peer), [[] for _ in procs]):
                xs = sorted(r for x, r in pp if lo <= x <= hi)
                if xs:
                    m = len(xs)
                    med = xs[m // 2] if m % 2 else (xs[m // 2 - 1] + xs[m // 2]) / 2
                    vals.append(med)
                    cells.append(f"{med:.2f}/{m}")
                else:
                    cells.append("-")
            if not vals:
                continue
            sp = max(vals) / min(vals) if len(vals) > 1 else None
            spread = f"{sp:.2f}" if sp else "-"
            sp_what = ("met" if sp <= SPREAD else "missed") if sp else "unmeasured"
            name = f"  {case} vs {peer[5:]}"
            print(f"{name:<25} " + "  ".join(c.rjust(7) for c in cells) + f"  {spread:>6}  "
                  f"{'met' if all(v >= want for v in vals) else 'missed'}, spread {sp_what}")
print()
print("missed: " + "; ".join(missed) if missed else "every target met where measured")
if unpaired:
    print("unmeasured (no paired rounds): " + "; ".join(unpaired))
PY
