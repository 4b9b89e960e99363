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

stop_server() {
	[ -n "$spid" ] || return 0
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	local rc=$?
	spid=
	return $rc
}
# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
cleanup() {
	stop_server
	ip netns del "$cl" 2>/dev/null
	veth_down "$rt" "$v0"
	rm -f "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server output:"; cat "$out"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (netns, veth, af_packet)"; exit 77; fi
command -v ethtool >/dev/null || { echo "SKIP: ethtool not installed"; exit 77; }
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
	"$@" >"$out" 2>&1 &
	spid=$!
	for _ in $(seq 150); do
		grep -q "dpdk backend" "$out" && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	fail "$1 did not start"
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
ip netns exec "$cl" python3 - "$ours" <<'PY' || fail "TCP and UDP through the router"
import selectors, socket, sys
ours = sys.argv[1]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
for i in range(10):
    msg = b"routed %d " % i + b"y" * (i * 90)
    u.sendto(msg, (ours, 7))
    data, peer = u.recvfrom(4096)
    assert data == msg and peer == (ours, 7), (data[:30], peer)
N = 16
sel = selectors.DefaultSelector()
conns = []
for i in range(N):
    s = socket.create_connection((ours, 7), timeout=5)
    s.setblocking(False)
    total = [1, 1460, 1461, 65536, 300000, 7, 20000, 900000][i % 8] + i
    data = bytes((k * 11 + i * 5 + (k >> 8)) & 255 for k in range(total))
    c = {"s": s, "data": data, "sent": 0, "got": bytearray(), "w": 3 + i * 41}
    conns.append(c)
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
left = N
while left:
    ev = sel.select(timeout=20)
    assert ev, "stalled: %d connections unfinished" % left
    for key, mask in ev:
        c = key.data
        s = c["s"]
        if mask & selectors.EVENT_WRITE and c["sent"] < len(c["data"]):
            n = min(c["w"] % 65536 + 1, len(c["data"]) - c["sent"])
            c["w"] = c["w"] * 1103515245 + 12345
            c["sent"] += s.send(c["data"][c["sent"]:c["sent"] + n])
            if c["sent"] == len(c["data"]):
                sel.modify(s, selectors.EVENT_READ, c)
        if mask & selectors.EVENT_READ:
            b = s.recv(262144)
            assert b, "EOF before the whole echo"
            c["got"] += b
            assert c["data"].startswith(c["got"]), "echo differs"
            if len(c["got"]) == len(c["data"]):
                sel.unregister(s)
                s.close()
                left -= 1
print("ok: 10 datagrams and %d TCP streams (%d bytes) echoed through the router, byte-exact"
      % (N, sum(len(c["data"]) for c in conns)))
PY
stop_server || fail "pc-echo exit status"
grep -q "pc-echo: tcp accepted=16 " "$out" || fail "pc-echo TCP counters"
echo "ok: percore's stack answers off its subnet through --gateway"
