#!/usr/bin/env bash
# Runs every meson test of one build dir and ends with the one summary line
# 'tests: N passed, N failed, N skipped' taken from meson's own totals.
# A test in suite needs-root (a namespace, a veth pair, a packet socket)
# skips without root; run as root it must not: root has every right it
# asks for, so its skip means a tool or a kernel feature is missing, and
# it counts as failed, named with the reason it gave.
set -uo pipefail
build=${1:-build}
shift || true
meson test -C "$build" --print-errorlogs "$@"
rc=$?
intro=$(meson introspect --tests "$build") || { echo "meson introspect failed"; exit 1; }
python3 - "$build/meson-logs/testlog.json" "$(id -u)" "$intro" <<'PY' || rc=1
import json, sys

log, uid, intro = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
# Suites read "project:suite" in the introspection.
needs_root = {t["name"] for t in intro
              if "needs-root" in (s.split(":", 1)[-1] for s in t["suite"])}
ok = bad = 0
skipped, as_root = [], []
for line in open(log):
    r = json.loads(line)
    name = r["name"].rsplit(" / ", 1)[-1]  # "project:suites / name"
    if r["result"] in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif r["result"] == "SKIP" and uid == "0" and name in needs_root:
        why = [l for l in r.get("stdout", "").splitlines() if "SKIP" in l]
        as_root.append(f"{name} ({why[-1].strip() if why else 'no reason given'})")
    elif r["result"] == "SKIP":
        skipped.append(name)
    else:
        bad += 1
for t in as_root:
    print(f"FAIL: {t}: skipped while running as root; a needs-root test must run here")
print(f"tests: {ok} passed, {bad + len(as_root)} failed, {len(skipped)} skipped")
sys.exit(1 if as_root else 0)
PY
exit $rc
