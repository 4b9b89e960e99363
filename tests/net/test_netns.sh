#!/usr/bin/env bash
# A kernel peer in a network namespace talks to a percore service over a
# veth pair: percore's side is DPDK's af_packet PMD on pc_t_v0 (root
# namespace, no kernel address), the kernel's side pc_t_v1 in namespace
# pc_t_ns with 10.77.0.2/24. The kernel resolves 10.77.0.1 with ARP,
# pings it, and exchanges UDP datagrams with the echo service. The
# namespace and veth are removed on every exit, and stale ones at start.
set -uo pipefail
server=$1
ns=pc_t_ns v0=pc_t_v0 v1=pc_t_v1
ours=10.77.0.1 theirs=10.77.0.2
out=$(mktemp)
spid=

# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	veth_down "$ns" "$v0"
	rm -f "$out"
}
trap cleanup EXIT

veth_need_root
command -v ping >/dev/null || { echo "SKIP: ping not installed (iputils-ping)"; exit 77; }
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"

PERCORE_LOG=warn "$server" "$v0" "$ours" 30 >"$out" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q ready "$out" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
grep -q ready "$out" || fail "server did not start"

ip netns exec "$ns" ping -c 3 -W 2 -i 0.2 "$ours" || fail "ping"
mac=$(ip -n "$ns" neigh show "$ours" | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
[ -n "$mac" ] || fail "the kernel has no ARP entry for $ours"
echo "ok: kernel resolved $ours to $mac with ARP; ping answered"

ip netns exec "$ns" python3 - "$ours" <<'PY' || fail "UDP exchange"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for i in range(5):
    msg = b"percore datagram %d" % i
    s.sendto(msg, (sys.argv[1], 7))
    data, peer = s.recvfrom(2048)
    assert data == msg and peer == (sys.argv[1], 7), (data, peer)
print("ok: 5 UDP datagrams echoed")
PY

kill -TERM "$spid"
wait "$spid"
rc=$?
spid=
cat "$out"
[ $rc -eq 0 ] || fail "server exit $rc"
grep -q "^served 5 failures 0" "$out" || fail "server counts"
echo "ok: server served 5 datagrams on the RX queue's worker"
