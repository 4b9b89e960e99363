#!/usr/bin/env bash
# pc-http --backend dpdk against curl in a network namespace: our own TCP
# on DPDK's af_packet PMD over veth pc_p_v0 (root namespace, no kernel
# address) at 10.88.0.1 with two workers; curl runs from pc_p_v1 in
# namespace pc_p_ns at 10.88.0.2: GET / and /json, a file from --root, and
# keep-alive over several URLs on one connection. SIGTERM drains to exit
# 0. The namespace and veth are removed on every exit, and stale ones at
# start. Needs curl (skips without it).
set -uo pipefail
bin=$1
ns=pc_p_ns v0=pc_p_v0 v1=pc_p_v1
ours=10.88.0.1 theirs=10.88.0.2
out=$(mktemp) root=$(mktemp -d)
spid=

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
cleanup() {
	dpdk_stop
	veth_down "$ns" "$v0"
	rm -rf "$out" "$root"
}
trap cleanup EXIT

veth_need_root
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"
ip netns exec "$ns" ethtool -K "$v1" tso off gso off >/dev/null 2>&1

export PERCORE_PIN=0 PERCORE_LOG=warn
export PERCORE_EAL_ARGS="--no-huge --no-pci -m 256 --file-prefix pc_apps_http \
--log-level=lib.eal:error --vdev net_af_packet0,iface=$v0,qpairs=2"
head -c 200000 /dev/urandom >"$root/blob.bin"
dpdk_start "$out" "dpdk backend" "$bin" --backend dpdk -l "$ours" -p 80 -t 2 --root "$root" ||
	fail "pc-http --backend dpdk did not start"

c() { ip netns exec "$ns" curl -s --http1.1 --max-time 20 "$@"; }
[ "$(c "http://$ours/")" = "Hello, World!" ] || fail "GET / over DPDK"
[ "$(c "http://$ours/json")" = '{"message":"Hello, World!"}' ] || fail "GET /json over DPDK"
c -o "$root/got.bin" "http://$ours/blob.bin" || fail "GET /blob.bin over DPDK"
cmp -s "$root/blob.bin" "$root/got.bin" || fail "the file came back different"
# One connection for all three (curl reuses it: keep-alive).
n=$(c -w '%{num_connects}\n' -o /dev/null -o /dev/null -o /dev/null \
	"http://$ours/" "http://$ours/json" "http://$ours/" | awk '{s += $1} END {print s}')
[ "$n" = 1 ] || fail "keep-alive: $n connections for three requests"
echo "ok: curl against pc-http --backend dpdk: /, /json, a 200 KB file, keep-alive"
dpdk_stop || fail "pc-http --backend dpdk did not drain to exit 0"
echo "ok: pc-http --backend dpdk drained on SIGTERM"
