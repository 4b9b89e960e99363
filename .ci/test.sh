#!/usr/bin/env bash
# Runs every meson test of one build dir and ends with the one summary line
# 'tests: N passed, N failed' taken from meson's own totals.
set -uo pipefail
build=${1:-build}
shift || true
meson test -C "$build" --print-errorlogs "$@"
rc=$?
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif r == "SKIP":
        skip += 1
    else:
        bad += 1
print(f"tests: {ok} passed, {bad} failed" + (f", {skip} skipped" if skip else ""))
PY
exit $rc
