#!/usr/bin/env bash
# percore's stack behind a router: pc-echo --backend dpdk on DPDK's
# af_packet PMD over veth pc_r_v0 (root namespace, no kernel address) at
# 10.82.0.1/24 with gateway 10.82.0.2, which is namespace pc_r_rt, a Linux
# router (ip_forward) to 10.83.0.0/24, where namespace pc_r_cl (10.83.0.2,
# default route via the router) is the client: off our subnet. Without
# --gateway our answers go nowhere (we would ask ARP for the client's own
# address, which nobody on our link answers): the connect fails. With it,
# TCP streams are echoed byte-exact both ways through the router, and UDP
# datagrams and pings come back. Namespaces and veths are removed on every
# exit, and stale ones at start.
set -uo pipefail
echo_bin=$1
rt=pc_r_rt cl=pc_r_cl v0=pc_r_v0 v1=pc_r_v1 r0=pc_r_r0 r1=pc_r_r1
ours=10.82.0.1 gw=10.82.0.2 client=10.83.0.2
out=$(mktemp)
spid=

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
stop_server() { dpdk_stop; }
# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
trap 'veth_cleanup "$rt" "$v0" "$cl"' EXIT

veth_need_root
ip netns del "$cl" 2>/dev/null
msg=$(veth_up "$rt" "$v0" "$v1" "$gw/24") || fail "$msg"
# The client's namespace, behind the router; every kernel side finishes
# its own checksums (see veth.sh).
ip netns add "$cl" || fail "ip netns add $cl"
ip -n "$rt" link add "$r0" type veth peer name "$r1" || fail "veth $r0"
ip -n "$rt" link set "$r1" netns "$cl" || fail "moving $r1"
ip -n "$rt" addr add 10.83.0.1/24 dev "$r0" && ip -n "$rt" link set "$r0" up || fail "$r0"
ip -n "$cl" addr add "$client/24" dev "$r1" && ip -n "$cl" link set "$r1" up &&
	ip -n "$cl" link set lo up || fail "$r1"
ip -n "$cl" route add default via 10.83.0.1 || fail "default route"
ip netns exec "$rt" sysctl -qw net.ipv4.ip_forward=1 || fail "ip_forward"
for x in "$rt $r0" "$cl $r1"; do
	set -- $x
	ip netns exec "$1" ethtool -K "$2" tx off >/dev/null || fail "ethtool -K $2 tx off"
done

export PERCORE_PIN=0 PERCORE_LOG=warn
export PERCORE_EAL_ARGS="--no-huge --no-pci -m 256 --file-prefix pc_routed \
--log-level=lib.eal:error --vdev net_af_packet0,iface=$v0,qpairs=2"

start() { # wait for the banner
	dpdk_start "$out" "dpdk backend" "$@" || fail "$1 did not start"
}

# Without a gateway: the SYN arrives, its answer does not leave.
start "$echo_bin" --backend dpdk -l "$ours" -p 7 -U 0 -t 2
ip netns exec "$cl" python3 - "$ours" <<'PY' || fail "a connect without a route succeeded"
import socket, sys
try:
    socket.create_connection((sys.argv[1], 7), timeout=2).close()
except OSError:
    print("ok: without --gateway the client off our subnet gets no answer")
    sys.exit(0)
sys.exit(1)
PY
stop_server || fail "pc-echo exit status"

start "$echo_bin" --backend dpdk -l "$ours/24" --gateway "$gw" -p 7 -U 7 -t 2
ip netns exec "$cl" ping -c 3 -W 2 -q "$ours" >/dev/null || fail "ping through the router"
echo "ok: pings through the router answered"
ip netns exec "$cl" python3 - "$ours" <<'PY' || fail "UDP through the router"
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
for i in range(10):
    msg = b"routed %d " % i + b"y" * (i * 90)
    u.sendto(msg, (sys.argv[1], 7))
    data, peer = u.recvfrom(4096)
    assert data == msg and peer == (sys.argv[1], 7), (data[:30], peer)
print("ok: 10 datagrams echoed through the router")
PY
bytes=$(ip netns exec "$cl" /usr/bin/python3 "$(dirname "$0")/tcp_streams.py" "$ours" 7 16 \
	1,1460,1461,65536,300000,7,20000,900000) || fail "TCP through the router"
echo "ok: 16 TCP streams ($bytes bytes) echoed through the router, byte-exact"
stop_server || fail "pc-echo exit status"
grep -q "pc-echo: tcp accepted=16 " "$out" || fail "pc-echo TCP counters"
echo "ok: percore's stack answers off its subnet through --gateway"
