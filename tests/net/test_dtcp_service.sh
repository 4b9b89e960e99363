#!/usr/bin/env bash
# The service API's conformance suite (test_service.py) against the DPDK
# backend: svc_server --dpdk serves on pc_s_v0 (root namespace, no kernel
# address, DPDK's af_packet PMD) at 10.81.0.1 with two workers; Linux is
# the client, from pc_s_v1 in namespace pc_s_ns at 10.81.0.2. The
# namespace and the veth pair are removed on every exit, and stale ones at
# start.
set -uo pipefail
server=$1 client=$2 idle=${3:-2000}
ns=pc_s_ns v0=pc_s_v0 v1=pc_s_v1
ours=10.81.0.1 theirs=10.81.0.2
spid= out=$(mktemp)

# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	veth_down "$ns" "$v0"
	rm -f "$out" "$out.fifo"
}
trap cleanup EXIT

veth_need_root
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"
# The kernel must not coalesce what it sends into segments past our MSS.
ip netns exec "$ns" ethtool -K "$v1" tso off gso off >/dev/null 2>&1

mkfifo "$out.fifo"
PERCORE_LOG=warn "$server" --dpdk "$v0" "$ours" >"$out.fifo" 2>"$out" &
spid=$!
exec 3<"$out.fifo"
read -r -t 60 ready f c l u <&3 || fail "svc_server did not start"
[ "$ready" = ready ] || fail "svc_server said: $ready $f $c $l $u"
# The rest of its output (the exit line) goes on being read, to the log.
cat <&3 >>"$out" &
# The engine's output cap (snd_cap) is 256 KiB.
ip netns exec "$ns" python3 "$client" --addr "$ours" --ports "$f,$c,$l,$u" --pid "$spid" \
	--out-cap 262144 --idle-conns "$idle" || fail "test_service.py against DPDK"
