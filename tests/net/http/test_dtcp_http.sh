#!/usr/bin/env bash
# net/http's conformance suite (test_http.py) against the DPDK backend:
# http_server --dpdk serves on pc_h_v0 (root namespace, no kernel address,
# DPDK's af_packet PMD) at 10.89.0.1 with two workers; Linux is the
# client, from pc_h_v1 in namespace pc_h_ns at 10.89.0.2. The namespace
# and the veth pair are removed on every exit, and stale ones at start.
set -uo pipefail
server=$1 client=$2
ns=pc_h_ns v0=pc_h_v0 v1=pc_h_v1
ours=10.89.0.1 theirs=10.89.0.2
spid= out=$(mktemp) tmp=$(mktemp -d)

# shellcheck source=../../veth.sh
. "$(dirname "$0")/../../veth.sh"
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	veth_down "$ns" "$v0"
	rm -rf "$out" "$out.fifo" "$tmp"
}
trap cleanup EXIT

veth_need_root
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"
# The kernel must not coalesce what it sends into segments past our MSS.
ip netns exec "$ns" ethtool -K "$v1" tso off gso off >/dev/null 2>&1

python3 "$client" --make-root "$tmp/root" || fail "static tree"
mkfifo "$out.fifo"
PERCORE_LOG=warn "$server" --dpdk "$v0" "$ours" --root "$tmp/root" --log "$tmp/access.log" \
	>"$out.fifo" 2>"$out" &
spid=$!
exec 3<"$out.fifo"
read -r -t 60 ready port <&3 || fail "http_server did not start"
[ "$ready" = ready ] || fail "http_server said: $ready $port"
cat <&3 >>"$out" &
ip netns exec "$ns" python3 "$client" --connect "$ours" "$port" --log "$tmp/access.log" ||
	fail "test_http.py against DPDK"
# It stops cleanly on SIGTERM (and, in sanitizer builds, without a report).
kill -TERM "$spid"
wait "$spid"
rc=$?
spid=
[ "$rc" = 0 ] || fail "http_server exited $rc"
