#!/usr/bin/env bash
# The veth checksum trap, said once. A veth leaves the TCP and UDP
# checksums of what the kernel sends for "hardware" to finish, and DPDK
# 22.11's af_packet PMD does not say which frames those are, so percore's
# stack drops them as corrupt. Here the kernel's side pc_c_v1 (namespace
# pc_c_ns, 10.87.0.2) keeps its offload on: its connects to reply_server
# on pc_c_v0 (10.87.0.1) must fail, each SYN counted in bad_cksum, and the
# server must log one warning (not one per frame) naming the interface and
# the remedy. Then the remedy, `ethtool -K pc_c_v1 tx off`, makes TCP work.
# The namespace and veth are removed on every exit, and stale ones at
# start.
set -uo pipefail
server=$1
ns=pc_c_ns v0=pc_c_v0 v1=pc_c_v1
ours=10.87.0.1 theirs=10.87.0.2
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
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"
# veth_up turns the offload off; this test wants it on, as a veth starts.
ip netns exec "$ns" ethtool -K "$v1" tx on >/dev/null || fail "ethtool -K $v1 tx on"
ip netns exec "$ns" ethtool -K "$v1" tso off gso off >/dev/null 2>&1

PERCORE_LOG=warn "$server" "$v0" "$ours" 60 >"$out" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q ready "$out" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
grep -q ready "$out" || fail "server did not start"

connect() { # expect: ok or fail
	ip netns exec "$ns" python3 - "$ours" "$1" <<'PY'
import socket, sys
addr, expect = sys.argv[1], sys.argv[2]
try:
    # Three SYNs in 3.5 s (Linux resends after 1 s, then 2 s more).
    s = socket.create_connection((addr, 8080), timeout=3.5)
    s.sendall(b"GET / HTTP/1.1\r\n\r\n")
    reply = s.recv(4096)
    got = "ok" if reply.startswith(b"HTTP/1.1 431 ") else "fail"
except OSError as e:
    print("connect:", e)
    got = "fail"
print("TCP with offload", "off:" if expect == "ok" else "on:", got)
sys.exit(0 if got == expect else 1)
PY
}
connect fail || fail "TCP worked with the kernel's checksums unfinished"
ip netns exec "$ns" ethtool -K "$v1" tx off >/dev/null || fail "ethtool -K $v1 tx off"
connect ok || fail "TCP failed after the remedy"

kill -TERM "$spid"
wait "$spid"
rc=$?
spid=
cat "$out"
[ $rc -eq 0 ] || fail "server exit $rc"
n=$(grep -c "checksum failed" "$out")
[ "$n" -eq 1 ] || fail "$n checksum warnings, want 1"
grep "checksum failed" "$out" | grep -q "($v0)" || fail "the warning does not name $v0"
grep "checksum failed" "$out" | grep -q "ethtool -K <peer> tx off" ||
	fail "the warning does not name the remedy"
bad=$(sed -n 's/^bad_cksum \([0-9]*\)$/\1/p' "$out")
[ "${bad:-0}" -ge 2 ] || fail "bad_cksum ${bad:-none}, want every SYN counted (>= 2)"
echo "ok: $bad bad checksums, one warning naming $v0 and the remedy, which works"
