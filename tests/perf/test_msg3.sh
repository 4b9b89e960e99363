#!/usr/bin/env bash
# perf/msg3.sh's verdicts (-a: compare kept processes again) on two
# processes written here, with known ratios and probes: a target missed in
# one process is missed, one a process never paired is "unmeasured" there
# (not missed), a floor slower than the call prints "floor<", and the
# per-placement table splits the rounds by the probed line round trip and
# gives each level its own verdict. No timing: nothing runs but the report.
set -euo pipefail
msg3=${1:?usage: test_msg3.sh perf/msg3.sh}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$dir" <<'PY'
import json, sys

d = sys.argv[1]

def run(case, side, values, lines):
    n = len(values)
    return {"case": case, "side": side, "cpus": [0, 1], "runs": n, "moved": 0,
            "preempted_runs": 0, "preemptions": 0, "values": values,
            "oncpu": [1.0] * n, "line_rtt_ns": lines, "line_rtt_after_ns": lines,
            "core0_ns": [0.5] * n, "core1_ns": [0.8] * n}

def ratio(case, peer, value, rounds=3, refused=False):
    return {"suite": "msg", "case": case, "side": "tpc", "peer": peer,
            "value": value, "rounds": rounds, "refused": refused}

near, far = [70, 70, 72, 320, 322], [71, 70, 70, 318, 319]
procs = [
    # p1: the call 0.70x the ping-pong (met), burst never paired
    dict(call=[100, 90, 92, 400, 402], pp=[70, 63, 64, 300, 301],
         ratios=[ratio("call", "peer:pingpong", 0.70),
                 ratio("call", "peer:rte_ring_rtt", 2.5),
                 ratio("submit", "peer:rte_ring", 1.5)]),
    # p2: the call 0.60x (missed), its rte_ring_rtt floor slower than it
    dict(call=[100, 90, 91, 400, 400], pp=[70, 63, 63, 250, 250],
         ratios=[ratio("call", "peer:pingpong", 0.60),
                 ratio("call", "peer:rte_ring_rtt", 0.0, refused=True),
                 ratio("submit", "peer:rte_ring", 1.4),
                 ratio("submit-burst32", "peer:rte_ring", 2.8)]),
]
for i, p in enumerate(procs, 1):
    doc = {"records": [
        {"suite": "msg", "case": "call", "mode": "tpc", "value": p["call"][2]},
        {"suite": "msg", "case": "call", "mode": "peer:pingpong", "value": p["pp"][2]},
        {"suite": "msg", "case": "submit", "mode": "tpc", "value": 1.3e8},
        {"suite": "msg", "case": "submit", "mode": "peer:rte_ring", "value": 9e7}],
        "ratios": p["ratios"],
        "info": {"msg": {"cpus": [0, 1], "smt_siblings": False, "ran_on": [
            run("call", "tpc", p["call"], near),
            run("call", "peer:pingpong", p["pp"], far)]}}}
    json.dump(doc, open(f"{d}/p{i}.json", "w"))
    open(f"{d}/p{i}.host", "w").write("0.50 1000 2\n")
PY

out=$(bash "$msg3" -a "$dir")
echo "$out"
check() {
	if ! grep -qE -- "$1" <<<"$out"; then
		echo "test_msg3: expected a line matching: $1" >&2
		exit 1
	fi
}
check '^call vs pingpong +0\.70/3 +0\.60/3 +1\.17 .*: missed, spread met$'
check '^call vs rte_ring_rtt +2\.50/3 +floor< .*: met in 1 of 2, spread unmeasured in 1 of 2$'
check '^submit vs rte_ring +1\.50/3 +1\.40/3 .*: met, spread met$'
check '^submit-burst32 vs rte_ring +- +2\.80/3 .*: met in 1 of 2, spread unmeasured in 1 of 2$'
check '^floor<: '
check '^line 70-71 ns$'
check '^  call vs pingpong +0\.70/2 +0\.70/2 +1\.0[0-9] +met, spread met$'
check '^line 319-320 ns$'
check '^  call vs pingpong +0\.75/2 +0\.62/2 +1\.20 +missed, spread met$'
check '^missed: call <= 1\.5x pingpong$'
check '^unmeasured \(no paired rounds\): submit-burst32 vs rte_ring in 1 process\(es\)$'
echo "test_msg3: ok"
