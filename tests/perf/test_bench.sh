#!/usr/bin/env bash
# percore-bench end to end, one suite at a time: a two-round run writes
# JSON with every record key, the suite's percore records and its peer
# records (or the peer is reported skipped on stderr), and a "ratios" array
# whose entries pair a percore side with a peer of the same row; the table
# fits in 100 columns; the SVG plot (--plots-all) is complete, headline
# first. Nothing depends on how fast anything ran.
# SUITE "cli" checks the flags instead: bad ones exit 2; --plot without
# gnuplot on PATH exits 1 before running anything; --plot alone draws the
# headline and no per-suite chart.
# Args: SUITE BENCH HAVE_GNUPLOT (1 or 0). Exits 77 (skipped) when the
# run made no record and said it skipped (a server binary not built).
set -uo pipefail
suite=$1 bench=$2 have_gnuplot=$3
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PERCORE_MODE
export PERCORE_LOG=warn

if [ "$suite" = cli ]; then
	# Without gnuplot on PATH, --plot fails at once with a clear message.
	out=$(env PATH=/nonexistent "$bench" --suite spawn --plot "$tmp/x.svg" 2>&1)
	rc=$?
	if [ $rc -ne 1 ] || ! grep -q 'gnuplot' <<<"$out" || grep -q 'warm-up' <<<"$out"; then
		echo "FAIL: --plot without gnuplot: exit $rc, expected 1 before any run"; echo "$out"
		fail=1
	else
		echo "ok: --plot without gnuplot exits 1"
	fi
	for bad in "--duration 0" "--suite nope" "--runs 0" "--workers x" "--duration x" \
		"--runs 65" "--bogus" "extra" "--plots-all"; do
		# shellcheck disable=SC2086
		out=$("$bench" $bad 2>&1)
		rc=$?
		if [ $rc -ne 2 ] || [ -z "$out" ]; then
			echo "FAIL: '$bad' exit $rc, expected 2 with a message"; fail=1
		else
			echo "ok: '$bad' exits 2"
		fi
	done
	if [ "$have_gnuplot" = 1 ]; then
		"$bench" --quick --suite spawn --runs 1 --duration 0.02 --plot "$tmp/h.svg" \
			>"$tmp/out" 2>&1
		rc=$?
		# A build without the spawn peers (ThreadSanitizer) has no ratio to
		# draw: the headline then says so instead.
		headline='strongest peer'
		grep -q 'peer:.*skipped' "$tmp/out" && ! grep -q 'peer:[a-z]*: tasks' "$tmp/out" &&
			headline='no headline'
		if [ $rc -ne 0 ] || ! grep -q '</svg>' "$tmp/h.svg" ||
			! grep -q "$headline" "$tmp/h.svg" ||
			grep -q 'every percore side' "$tmp/h.svg" || grep -q 'is better)' "$tmp/h.svg"; then
			echo "FAIL: --plot alone: exit $rc, not the headline alone"; cat "$tmp/out"
			fail=1
		else
			echo "ok: --plot alone draws the headline alone"
		fi
	fi
	exit $fail
fi

runs=2
args=(--quick --suite "$suite" --runs "$runs" --duration 0.05 --json "$tmp/b.json")
[ "$have_gnuplot" = 1 ] && args+=(--plot "$tmp/b.svg" --plots-all)
"$bench" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: percore-bench ${args[*]} exited $rc"; cat "$tmp/out" "$tmp/err"; exit 1
fi
# No record at all, and the bench said why: the suite is skipped here.
if [ ! -s "$tmp/b.json" ] && grep -qE "^percore-bench: ${suite}[ /:].*skipped" "$tmp/err"; then
	grep "skipped" "$tmp/err"
	exit 77
fi

# The peers the bench said it skipped, from "SUITE/CASE peer:NAME: skipped"
# (or a suite's own "peer:NAME skipped: why").
skipped=$(grep -oE 'peer:[A-Za-z0-9_.-]+:? skipped' "$tmp/err" | sed 's/:\? skipped$//' |
	sort -u | tr '\n' ' ')
[ -n "$skipped" ] && echo "note: skipped on stderr: $skipped"
# percore's own sides it said it skipped ("SUITE/CASE tpc: skipped"): a
# suite whose server is not built yet (the http suite before pc-http)
# still measures its peers.
ours_skipped=$(grep -cE "^percore-bench: $suite/[^ ]+ (tpc|elastic): skipped" "$tmp/err")
[ "$ours_skipped" -gt 0 ] && echo "note: $ours_skipped percore side(s) skipped on stderr"

# A run that the host's moving a vCPU spoiled is left out, which no test
# can prevent (the msg suite probes the line between its CPUs around
# each run): its rounds and ratios may then be incomplete.
hostmoved=0
grep -q 'the host moved a vCPU' "$tmp/err" && hostmoved=1
# memcaslap (libmemcached-tools) drives the kv suite's slap- cases.
HAVE_SLAP=0
command -v memcaslap >/dev/null 2>&1 || command -v memaslap >/dev/null 2>&1 && HAVE_SLAP=1
export HAVE_SLAP
python3 - "$tmp/b.json" "$suite" "$runs" "$skipped" "$hostmoved" "$ours_skipped" <<'PY' || fail=1
import json, math, os, sys

def no_nan(name):
    raise ValueError(f"JSON holds {name}, which is not JSON")

path, suite, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
skipped = set(sys.argv[4].split())
host_moved = sys.argv[5] == "1"
ours_skipped = int(sys.argv[6])
bad = []
try:
    doc = json.load(open(path), parse_constant=no_nan)
except ValueError as e:
    print(f"FAIL json: {e}")
    sys.exit(1)

def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

for k in ("config", "machine", "records", "ratios"):
    if k not in doc:
        bad.append(f"top-level key {k} missing")
m = doc.get("machine", {})
if not (m.get("cpus", 0) >= 1 and m.get("nodes", 0) >= 1 and m.get("cpu_model")):
    bad.append(f"machine incomplete: {m}")

keys = {"suite", "case", "mode", "workers", "metric", "value", "unit", "min", "max", "runs",
        "info", "steal"}
rows = {}  # (case, metric, workers) -> {mode: record}
full = set()  # modes with a record of every round
for r in doc.get("records", []):
    if set(r) != keys:
        bad.append(f"record keys {sorted(r)}")
        continue
    if r["suite"] != suite:
        bad.append(f"record of another suite: {r}")
    if not (isinstance(r["workers"], int) and r["workers"] >= 1 and r["unit"]):
        bad.append(f"workers/unit wrong: {r}")
    if host_moved and r["runs"] == 0 and r["value"] is None:
        print(f"note: every round of {r['case']} {r['mode']} left out (the host moved a vCPU)")
    elif not (isinstance(r["runs"], int) and 1 <= r["runs"] <= runs):
        bad.append(f"runs not within 1-{runs}: {r}")
    elif not all(num(r[k]) for k in ("value", "min", "max")):
        bad.append(f"value/min/max not finite numbers: {r}")
    elif not (0 <= r["min"] <= r["value"] <= r["max"]):
        bad.append(f"value not within min-max, or negative: {r}")
    if not isinstance(r["info"], bool):
        bad.append(f"record info not a boolean: {r}")
    # The host's steal over each round's run (a share, or null: unknown).
    if not (isinstance(r["steal"], list) and len(r["steal"]) == runs and
            all(x is None or (num(x) and 0 <= x <= 1) for x in r["steal"])):
        bad.append(f"steal not {runs} shares or nulls: {r}")
    if r["runs"] == runs:
        full.add(r["mode"])
    rows.setdefault((r["case"], r["metric"], r["workers"]), {})[r["mode"]] = r

modes = {mode for row in rows.values() for mode in row}
def is_peer(x):
    """A peer, or a baseline (percore in its usual style): ratios' right side."""
    return x.startswith("peer:") or x.startswith("base:")

ours = {x for x in modes if not is_peer(x)}
peers = modes - ours
if not ours and not ours_skipped:
    bad.append("no percore records, and no percore side reported skipped")
if not peers and not skipped:
    bad.append("no peer records, and no peer reported skipped")
if peers & skipped:
    bad.append(f"peers both skipped and measured: {sorted(peers & skipped)}")
if modes - full and not host_moved:
    bad.append(f"modes without a record of all {runs} rounds: {sorted(modes - full)}")

rkeys = {"suite", "case", "workers", "metric", "side", "peer", "floor", "refused", "value",
         "min", "max", "rounds"}
paired = set()
ratios = doc.get("ratios")
if not isinstance(ratios, list):
    bad.append("ratios is not an array")
    ratios = []
for x in ratios:
    if set(x) != rkeys:
        bad.append(f"ratio keys {sorted(x)}")
        continue
    row = rows.get((x["case"], x["metric"], x["workers"]), {})
    if x["suite"] != suite or is_peer(x["side"]) or x["side"] not in row:
        bad.append(f"ratio side is no percore record of its row: {x}")
    if not is_peer(x["peer"]) or x["peer"] not in row:
        bad.append(f"ratio peer is no peer record of its row: {x}")
    if not isinstance(x["floor"], bool):
        bad.append(f"ratio floor not a boolean: {x}")
    if x["refused"] is not None:
        # A floor slower than the side it bounds: refused, with no number
        # (the records hold both medians).
        if x["refused"] != "floor slower than percore" or not x["floor"]:
            bad.append(f"ratio refused but not a floor's: {x}")
        elif any(x[k] is not None for k in ("value", "min", "max")):
            bad.append(f"refused ratio with a number: {x}")
    elif not (num(x["value"]) and x["value"] > 0):
        bad.append(f"ratio not a positive number: {x}")
    elif x["rounds"] == 0:
        if x["min"] is not None or x["max"] is not None:
            bad.append(f"ratio of medians with a range: {x}")
    elif not (isinstance(x["rounds"], int) and 1 <= x["rounds"] <= runs):
        bad.append(f"ratio rounds not within 0-{runs}: {x}")
    elif not (num(x["min"]) and num(x["max"]) and 0 < x["min"] <= x["value"] <= x["max"]):
        bad.append(f"ratio not within its min-max: {x}")
    paired.add((x["case"], x["metric"], x["workers"], x["side"], x["peer"]))
# Every percore side beside every peer of its row has its ratio wherever
# the bench must make one: both sides measured something in every round
# (ratios pair rounds, and a round that measured nothing pairs with
# nothing; a slow build's short rounds may). The msg suite pairs a round
# only when the line round trip it probed around the side's run and the
# peer's agree, the CPU share their threads had and each CPU's core probe
# (BENCH_COND_MATCH):
# when the host moved a vCPU, or other work took the CPUs, between them in
# every round, there is no ratio to make. Every suite also pairs a round
# only when the host's steal over the two runs is within 5 points
# (BENCH_STEAL_MATCH): a host that took a tenth of the CPUs from one side
# and none from the other in every round leaves no ratio either.
ran_on = {(r.get("case"), r.get("side")): r
          for r in doc.get("info", {}).get("msg", {}).get("ran_on", [])}

def unpaired(case, s, p, rs, rp):
    a, b = ran_on.get((case, s)), ran_on.get((case, p))
    msg = suite == "msg" and a is not None and b is not None
    def conds(r, i):
        x, y = r["line_rtt_ns"][i], r["line_rtt_after_ns"][i]
        return ((x + y) / 2 if x and y else None, r["oncpu"][i],
                r["core0_ns"][i], r["core1_ns"][i])
    def match(p, q):
        return p is None or q is None or p <= 0 or q <= 0 or max(p, q) / min(p, q) <= 1.3  # BENCH_COND_MATCH
    def steal_pairs(i):
        # Surely within 5 points (the JSON's 6 digits round the shares).
        x, y = rs["steal"][i], rp["steal"][i]
        return x is None or y is None or abs(x - y) <= 0.05 - 1e-4
    # A round pairs when both runs were used and their conditions match.
    for i in range(runs):
        if not steal_pairs(i):
            continue
        if not msg:
            return False
        # The msg suite's runs list the warm-up first.
        k = i + 1
        if k >= min(len(a["line_rtt_ns"]), len(b["line_rtt_ns"])):
            continue
        if a["values"][k] is None or b["values"][k] is None:
            continue
        if all(match(p, q) for p, q in zip(conds(a, k), conds(b, k))):
            return False
    return True

for (case, metric, workers), row in rows.items():
    for s, rs in row.items():
        for p, rp in row.items():
            if is_peer(s) or not is_peer(p):
                continue
            if rs["info"] or rp["info"]:
                # A diagnostic (the client's own CPU): no ratio, ever.
                if (case, metric, workers, s, p) in paired:
                    bad.append(f"a ratio for diagnostic {case} {metric}: {s} vs {p}")
                continue
            if (rs["min"] or 0) > 0 and (rp["min"] or 0) > 0 and \
                    (case, metric, workers, s, p) not in paired:
                if unpaired(case, s, p, rs, rp):
                    print(f"note: no ratio for {case} {s} vs {p}: their conditions "
                          "(host steal, or what the suite probes) differed in every round")
                else:
                    bad.append(f"no ratio for {case} {metric} w{workers}: {s} vs {p}")

# The msg suite: its peers beside each case, and where it ran (the CPUs,
# whether the topology calls them SMT siblings, where every side ran).
if suite == "msg":
    want = {"submit": {"peer:rte_ring"}, "call": {"peer:pingpong", "peer:rte_ring_rtt"}}
    for case, names in want.items():
        have = {m for (c, _, _), row in rows.items() if c == case for m in row}
        for name in names - skipped:
            if name not in have:
                bad.append(f"msg/{case}: no {name} record")
    floors = {(x["case"], x["peer"]): x["floor"] for x in ratios}
    for (case, peer), floor in floors.items():
        if floor != (peer == "peer:pingpong"):
            bad.append(f"msg/{case} {peer}: floor is {floor}")
    info = doc.get("info", {}).get("msg")
    if not isinstance(info, dict):
        bad.append(f"no info.msg: {doc.get('info')}")
        info = {}
    cpus = info.get("cpus")
    if not (isinstance(cpus, list) and len(cpus) == 2 and all(isinstance(c, int) and c >= 0
                                                               for c in cpus)):
        bad.append(f"info.msg.cpus not two CPU numbers: {cpus}")
    for k in ("pinned", "smt_siblings", "same_l3", "hypervisor"):
        if not isinstance(info.get(k), bool):
            bad.append(f"info.msg.{k} not a boolean: {info.get(k)}")
    if not (isinstance(info.get("topology"), str) and info["topology"]):
        bad.append(f"info.msg.topology missing: {info.get('topology')}")
    ran = {(r.get("case"), r.get("side")): r for r in info.get("ran_on", [])}
    # percore's call runs say how their pair ran: near, far, or neither
    # (untimed), each run once, and how many slot calls reused a line.
    cp = info.get("call_pairs")
    calls = sum(r.get("runs", 0) for (c, side), r in ran.items()
                if c == "call" and not side.startswith("peer:"))
    if not (isinstance(cp, dict) and all(isinstance(cp.get(k), int) for k in
                                         ("runs", "near_runs", "far_runs", "slot_calls",
                                          "slot_calls_near"))):
        bad.append(f"info.msg.call_pairs: {cp}")
    elif not (cp["runs"] >= calls > 0 and cp["near_runs"] + cp["far_runs"] <= cp["runs"] and
              0 <= cp["slot_calls_near"] <= cp["slot_calls"] and cp["slot_calls"] > 0):
        bad.append(f"info.msg.call_pairs {cp}: not one record per call run ({calls})")
    # The paced peer picks its pace (pauses between polls) before every
    # run: one win per run, over the paces tried. The floor is a plain
    # spin: it picks none.
    tried = info.get("paces_tried")
    won = info.get("pace_won", {})
    if not (isinstance(tried, list) and tried and tried[0] == 0):
        bad.append(f"info.msg.paces_tried: {tried}")
    if "peer:pingpong" in won:
        bad.append(f"info.msg.pace_won paces the floor: {won}")
    for peer in ("peer:rte_ring_rtt",):
        w, r = won.get(peer), ran.get(("call", peer))
        if not (isinstance(w, list) and isinstance(tried, list) and len(w) == len(tried)):
            bad.append(f"info.msg.pace_won[{peer}]: {w}")
        elif r is not None and sum(w) != r.get("runs"):
            bad.append(f"info.msg.pace_won[{peer}] {w}: not one per run ({r.get('runs')})")
    for (case, _, _), row in rows.items():
        if case not in want:
            continue
        for mode in row:
            r = ran.get((case, mode))
            if r is None:
                bad.append(f"info.msg.ran_on has no {case}/{mode}")
                continue
            if not (isinstance(r.get("cpus"), list) and len(r["cpus"]) == 2 and
                    r.get("runs", 0) >= runs and (r.get("moved") == 0 or host_moved)):
                bad.append(f"info.msg.ran_on {case}/{mode} incomplete or moved: {r}")
            elif info.get("pinned") and r["cpus"] != cpus:
                bad.append(f"pinned {case}/{mode} ran on {r['cpus']}, not {cpus}")

# kv: the cases memcaslap drives, beside the generator's, wherever it is
# installed; its gets found every key its sets had stored in pc-kv (the
# keys with control and high bytes, which pc-kv once refused, among them).
if suite == "kv" and "memcached" in " ".join(sorted(peers)):
    slap = {(c, m) for (c, _, _), row in rows.items() if c.startswith("slap-") for m in row}
    if os.environ.get("HAVE_SLAP") == "1":
        for m in ours | peers:
            if not any(x == m for _, x in slap):
                bad.append(f"kv: no slap- case record of {m}")
        for (c, metric, w), row in rows.items():
            if metric == "get_misses_per_get":
                for m, r in row.items():
                    if r["value"] is not None and not r["info"]:
                        bad.append(f"kv {c} {m}: get_misses_per_get not a diagnostic")
                    elif m in ours and r["value"] is not None and r["max"] != 0:
                        bad.append(f"kv {c} {m}: memcaslap's gets missed: {r}")
    elif slap:
        bad.append(f"kv: slap- records without memcaslap: {sorted(slap)}")

# echo: every case again under the second client (-eclient), with the
# same sides and worker counts, so the reader sees the clients' spread.
if suite == "echo":
    by_case = {}
    for (case, metric, workers), row in rows.items():
        if metric == "requests_per_sec":
            by_case.setdefault(case, {})[workers] = set(row)
    for case, rs in by_case.items():
        if case.endswith("-eclient"):
            continue
        other = by_case.get(case + "-eclient")
        if other != rs:
            bad.append(f"echo/{case}: the -eclient case has {other}, not {rs}")

# http: every side measured beside its requests per second the requests
# per server CPU-second (nginx's workers are children of its master) and
# the case's latency: wrk's p99 with keep-alive, h2load's mean for h2c.
if suite == "http":
    for (case, metric, workers), row in rows.items():
        if metric != "requests_per_sec":
            continue
        want = ["requests_per_server_cpu_sec"]
        if case.startswith("keepalive-") or case.startswith("memif-"):
            want.append("p99_us")
        if case.startswith("h2c-"):
            want.append("mean_us")
        for m in want:
            have = rows.get((case, m, workers), {})
            for mode in row:
                if mode not in have:
                    bad.append(f"http/{case} {mode}: no {m} record")

# echo and kv: where each case put the client, for a run read elsewhere.
if suite in ("echo", "kv", "http") and rows:
    place = doc.get("info", {}).get(suite)
    if not isinstance(place, dict) or not place:
        bad.append(f"no info.{suite} with the client's layout: {doc.get('info')}")
    else:
        for case, p in place.items():
            if not (isinstance(p, dict) and isinstance(p.get("client_threads"), int) and
                    1 <= p["client_threads"] <= p.get("conns", 0) and
                    isinstance(p.get("client_apart"), bool) and p.get("server_cpus") and
                    p.get("client_cpus")):
                bad.append(f"info.{suite}.{case} incomplete: {p}")
            # percore runs overprovisioned exactly where the client shares its CPUs.
            elif (not isinstance(p.get("percore_overprovisioned"), bool) or
                  p["percore_overprovisioned"] == p["client_apart"]):
                bad.append(f"info.{suite}.{case}: percore_overprovisioned wrong: {p}")

for b in bad:
    print("FAIL json:", b)
if not bad:
    print(f"ok json: {len(doc['records'])} records, {len(ratios)} ratios; "
          f"percore {sorted(ours)}, peers {sorted(peers)}")
sys.exit(1 if bad else 0)
PY

# The table: at most 100 columns, a heading per case, the legend.
long=$(awk 'length > 100' "$tmp/out")
if [ -n "$long" ]; then
	echo "FAIL table: lines over 100 columns:"; echo "$long"; fail=1
elif ! grep -q "^$suite/" "$tmp/out" || ! grep -q '^metrics:' "$tmp/out"; then
	echo "FAIL table: no '$suite/' heading or no legend:"; cat "$tmp/out"; fail=1
else
	widest=$(awk '{ if (length > n) n = length } END { print n }' "$tmp/out")
	echo "ok table: $(wc -l <"$tmp/out") lines, the longest $widest columns"
fi

# echo, kv and http: the note says which cases percore runs overprovisioned.
if [ "$suite" = echo ] || [ "$suite" = kv ] || [ "$suite" = http ]; then
	if grep -q "^$suite/.*shared" "$tmp/out" &&
		! grep -q "shared.*(PERCORE_OVERPROVISIONED=1)" "$tmp/out"; then
		echo "FAIL table: shared cases but no note naming PERCORE_OVERPROVISIONED=1"
		fail=1
	fi
fi

if [ "$have_gnuplot" = 1 ]; then
	# A side every round of which was left out has no bar.
	modes=$(python3 -c 'import json, sys
recs = json.load(open(sys.argv[1]))["records"]
print(" ".join(sorted({r["mode"] for r in recs if r["value"] is not None})))' "$tmp/b.json")
	# The chart of every ratio, where there are ratios (none while the
	# suite's percore sides, or all its peers, are skipped: a
	# ThreadSanitizer build has no spawn peers).
	nratios=$(python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["ratios"]))' "$tmp/b.json")
	ok=1
	[ -s "$tmp/b.svg" ] && head -c 2048 "$tmp/b.svg" | grep -q '<svg' &&
		grep -q '</svg>' "$tmp/b.svg" && grep -qE 'strongest peer|no headline' "$tmp/b.svg" &&
		{ [ "$nratios" = 0 ] || grep -q 'every percore side' "$tmp/b.svg"; } || ok=0
	for m in $modes; do
		grep -q ">$m" "$tmp/b.svg" || ok=0
	done
	if [ $ok = 1 ]; then
		echo "ok plot: $(wc -c <"$tmp/b.svg") bytes of SVG, a bar for each of $modes"
	else
		echo "FAIL plot: $tmp/b.svg is not a complete SVG with a bar for each of $modes"
		fail=1
	fi
else
	echo "note: gnuplot not found at configure time, plot not checked"
fi
[ $fail = 0 ] || { echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; }
exit $fail
