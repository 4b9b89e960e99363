#!/usr/bin/env bash
# percore-bench end to end: a one-run spawn suite writes JSON with every
# record key and both modes beside the peers that were built, and an SVG
# plot; bad flags exit 2; --plot without gnuplot exits 1 before running.
# Args: BENCH HAVE_GNUPLOT HAVE_OPENMP HAVE_TBB (1 or 0).
set -uo pipefail
bench=$1 have_gnuplot=$2 have_openmp=$3 have_tbb=$4
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PERCORE_MODE
export PERCORE_LOG=warn

args=(--quick --suite spawn --runs 1 --duration 0.05 --json "$tmp/b.json")
[ "$have_gnuplot" = 1 ] && args+=(--plot "$tmp/b.svg")
"$bench" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: percore-bench ${args[*]} exited $rc"; cat "$tmp/out" "$tmp/err"; exit 1
fi

want="tpc elastic"
[ "$have_openmp" = 1 ] && want+=" peer:openmp"
[ "$have_tbb" = 1 ] && want+=" peer:tbb"
python3 - "$tmp/b.json" "$want" <<'PY' || fail=1
import json, sys
doc = json.load(open(sys.argv[1]))
want = set(sys.argv[2].split())
keys = {"suite", "case", "mode", "workers", "metric", "value", "unit", "min", "max", "runs"}
bad = []
for k in ("config", "machine", "records"):
    if k not in doc:
        bad.append(f"top-level key {k} missing")
m = doc.get("machine", {})
if not (m.get("cpus", 0) >= 1 and m.get("nodes", 0) >= 1 and m.get("cpu_model")):
    bad.append(f"machine incomplete: {m}")
modes = set()
for r in doc.get("records", []):
    if set(r) != keys:
        bad.append(f"record keys {sorted(r)}")
        continue
    modes.add(r["mode"])
    if (r["suite"], r["case"], r["metric"]) != ("spawn", "local", "tasks_per_sec_per_worker"):
        bad.append(f"unexpected record {r}")
    if not (r["workers"] >= 1 and r["runs"] == 1 and r["unit"] == "tasks/s"):
        bad.append(f"workers/runs/unit wrong: {r}")
    if not (0 < r["min"] <= r["value"] <= r["max"]):
        bad.append(f"value not within min-max or not positive: {r}")
if modes != want:
    bad.append(f"modes {sorted(modes)}, expected {sorted(want)}")
for b in bad:
    print("FAIL json:", b)
if not bad:
    print(f"ok json: {len(doc['records'])} records, modes {sorted(modes)}")
sys.exit(1 if bad else 0)
PY

if [ "$have_gnuplot" = 1 ]; then
	ok=1
	[ -s "$tmp/b.svg" ] && head -c 2048 "$tmp/b.svg" | grep -q '<svg' &&
		grep -q '</svg>' "$tmp/b.svg" || ok=0
	for m in $want; do
		grep -q ">$m<" "$tmp/b.svg" || ok=0
	done
	if [ $ok = 1 ]; then
		echo "ok plot: $(wc -c <"$tmp/b.svg") bytes of SVG, a bar for each of $want"
	else
		echo "FAIL plot: $tmp/b.svg is not a complete SVG with a bar for each of $want"
		fail=1
	fi
else
	echo "note: gnuplot not found at configure time, plot not checked"
fi

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
	"--runs 65" "--bogus" "extra"; do
	# shellcheck disable=SC2086
	out=$("$bench" $bad 2>&1)
	rc=$?
	if [ $rc -ne 2 ] || [ -z "$out" ]; then
		echo "FAIL: '$bad' exit $rc, expected 2 with a message"; fail=1
	else
		echo "ok: '$bad' exits 2"
	fi
done
exit $fail
