#!/usr/bin/env bash
# A reply written before a close reaches a client that is still sending,
# over DPDK as over the kernel. percore's side is DPDK's af_packet PMD on
# pc_q_v0 (root namespace, no kernel address) at 10.86.0.1, running
# reply_server: its fiber reads the start of each request, writes an HTTP
# 431 with a Content-Length and returns. Linux's side pc_q_v1 in namespace
# pc_q_ns at 10.86.0.2 sends ROUNDS requests of 20 KB each and reads: every
# client must get the whole reply (a reset after it is fine, before it is
# not), and percore's engine must have dropped data that came after its
# close (the case under test) rather than reset it away. The namespace and
# veth are removed on every exit, and stale ones at start.
set -uo pipefail
server=$1 rounds=${2:-20}
ns=pc_q_ns v0=pc_q_v0 v1=pc_q_v1
ours=10.86.0.1 theirs=10.86.0.2
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
# No segment larger than our MSS from the kernel (af_packet sees frames).
ip netns exec "$ns" ethtool -K "$v1" tso off gso off >/dev/null 2>&1

PERCORE_LOG=warn "$server" "$v0" "$ours" 60 >"$out" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q ready "$out" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
grep -q ready "$out" || fail "server did not start"

ip netns exec "$ns" python3 - "$ours" "$rounds" <<'PY' || fail "a client lost its reply"
import socket, sys, threading

addr, rounds = sys.argv[1], int(sys.argv[2])
request = b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"

def complete(buf):
    """Whether buf holds a whole reply: headers and Content-Length bytes."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False

bad = 0
for i in range(rounds):
    s = socket.create_connection((addr, 8080), timeout=10)
    # The client sends its whole request while it reads, as a browser
    # would: the send may fail once the server resets, which is fine.
    def send():
        try:
            s.sendall(request)
        except OSError:
            pass
    t = threading.Thread(target=send)
    t.start()
    got, end = b"", "EOF"
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError as e:
        end = type(e).__name__
    t.join()
    s.close()
    ok = got.startswith(b"HTTP/1.1 431 ") and complete(got)
    if not ok:
        bad += 1
    print(f"round {i}: {len(got)} bytes, then {end}: {'ok' if ok else 'REPLY LOST'}")
sys.exit(1 if bad else 0)
PY
echo "ok: $rounds clients got the whole 431 reply"

kill -TERM "$spid"
wait "$spid"
rc=$?
spid=
cat "$out"
[ $rc -eq 0 ] || fail "server exit $rc"
grep -q "^refused $rounds$" "$out" || fail "the server did not refuse every request"
# The engine dropped data after its close while the reply was in flight:
# what this test is about happened at least once.
grep -Eq "^tcp drops:.* discard=[1-9]" "$out" || fail "no data arrived after a close"
echo "ok: data after the close was dropped until the reply was acknowledged"
