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

cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	ip link del "$v0" 2>/dev/null
	rm -f "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server output:"; cat "$out"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (netns, veth, af_packet)"; exit 77; fi
command -v ping >/dev/null || { echo "SKIP: ping not installed (iputils-ping)"; exit 77; }
command -v ethtool >/dev/null || { echo "SKIP: ethtool not installed"; exit 77; }
cleanup_stale() { ip netns del "$ns" 2>/dev/null; ip link del "$v0" 2>/dev/null; true; }
cleanup_stale

ip netns add "$ns" || fail "ip netns add"
ip link add "$v0" type veth peer name "$v1" || fail "veth"
ip link set "$v1" netns "$ns" || fail "move veth"
sysctl -qw "net.ipv6.conf.$v0.disable_ipv6=1" 2>/dev/null
ip link set "$v0" up || fail "v0 up"
ip -n "$ns" addr add "$theirs/24" dev "$v1" || fail "addr"
ip -n "$ns" link set "$v1" up || fail "v1 up"
ip -n "$ns" link set lo up
# veth leaves the UDP checksum to "hardware" (CHECKSUM_PARTIAL): a packet
# socket, and so af_packet, sees it unfinished, and our stack (which
# verifies every non-zero UDP checksum) would drop it. Make the kernel
# finish its checksums, as it does for a real NIC without offloads.
ip netns exec "$ns" ethtool -K "$v1" tx off >/dev/null || fail "ethtool -K tx off"

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
