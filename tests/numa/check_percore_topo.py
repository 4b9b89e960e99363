#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""percore-topo end to end: each fixture prints as a table and as valid
JSON whose worker map and steal tiers hold together; bad flags exit 2."""
import json
import os
import subprocess
import sys

tool, fixtures = sys.argv[1], sys.argv[2]
failed = 0


def run(*args, env=None):
    return subprocess.run([tool, *args], capture_output=True, text=True, env=env)


def check(cond, what):
    global failed
    if not cond:
        print("FAIL:", what)
        failed += 1


for name in sorted(os.listdir(fixtures)):
    root = os.path.join(fixtures, name, "sys")
    if not os.path.isdir(root):
        continue
    for placement in ("compact", "spread"):
        r = run("--root", root, "--placement", placement)
        check(r.returncode == 0 and "steal tiers" in r.stdout, f"{name} {placement} table")
        r = run("--root", root, "--placement", placement, "--json")
        check(r.returncode == 0, f"{name} {placement} json exit {r.returncode}: {r.stderr}")
        doc = json.loads(r.stdout)
        workers = doc["workers"]
        n = len(workers)
        check(n == doc["counts"]["usable"], f"{name}: one worker per usable CPU")
        check(len({w["cpu"] for w in workers}) == n, f"{name}: distinct CPUs")
        for c in doc["cpus"]:
            check(c["cpu"] not in c["smt_siblings"], f"{name}: cpu {c['cpu']} not its own sibling")
            for k in ("cpu", "package", "die", "core", "node", "l3"):
                check(k in c, f"{name}: cpu record has {k}")
        for nd in doc["nodes"]:
            check(len(nd["distance"]) == len(doc["nodes"]), f"{name}: distance row")
            check(isinstance(nd["cpus"], list) and "has_memory" in nd and "node" in nd,
                  f"{name}: node record shape")
        for w in workers:
            victims = [v for tier in w["tiers"] for v in tier["victims"]]
            check([v for t in w["steal_tiers"] for v in t] == victims,
                  f"{name}: steal_tiers lists the tiers")
            check(sorted(victims) == [v for v in range(n) if v != w["worker"]],
                  f"{name}: worker {w['worker']} steals from every other worker once")
    check(("flat_fallback\":true" in run("--root", root, "--json").stdout) == (name == "broken"),
          f"{name}: flat fallback only for the broken tree")

for args in (["--bogus"], ["--workers"], ["--workers", "0"], ["--workers", "129"],
             ["--workers", "3x"], ["--placement", "wide"], ["--cpus", "1-"]):
    r = run(*args)
    check(r.returncode == 2 and r.stderr.startswith("percore-topo: "), f"{args} exits 2")
r = run("--root", os.path.join(fixtures, "laptop", "sys"), "--workers", "9")
check(r.returncode == 1 and "--no-pin" in r.stderr, "too many pinned workers")
r = run("--root", os.path.join(fixtures, "laptop", "sys"), "--workers", "9", "--no-pin")
check(r.returncode == 0, "--no-pin wraps around")
r = run("--help")
check(r.returncode == 0 and "usage:" in r.stdout, "--help")
r = run("--hwloc", "pack:2 numa:1 core:2 pu:2", "--json")
check(r.returncode in (0, 1), "--hwloc synthetic")
if r.returncode == 0:
    check(json.loads(r.stdout)["counts"]["packages"] == 2, "hwloc packages")
env = dict(os.environ, PERCORE_SYSFS_ROOT=os.path.join(fixtures, "epyc-nps4", "sys"))
r = run("--json", env=env)
check(r.returncode == 0 and json.loads(r.stdout)["counts"]["nodes"] == 4,
      "PERCORE_SYSFS_ROOT")
sys.exit(1 if failed else 0)
