#!/usr/bin/env bash
# pc-echo on loopback: bad flags exit 2; a run echoes TCP (a split write)
# and UDP, then prints counters that match what was sent.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

for bad in "--backend nope" "-p 70000" "-U x" "-t 0" "-l 1.2.3" "--duration -1" "-p 0 -U 0" "extra" \
	"-l 10.0.0.1/24" "--gateway 10.0.0.2" "--backend dpdk -l 10.0.0.1/33" \
	"--backend dpdk --gateway 10.0.0.2" "--backend dpdk -l 10.0.0.1/24 --gateway x"; do
        rc=0
        # shellcheck disable=SC2086
        "$bin" $bad >/dev/null 2>&1 || rc=$?
        [ "$rc" = 2 ] || fail "'$bad' exited $rc, expected 2"
done
"$bin" --help | grep -q "usage: pc-echo" || fail "--help"

# A port per run from a range, so parallel runs rarely meet. Each style:
# callbacks, then --fibers (a fiber per connection, same bytes, same flags).
out=$(mktemp)
pid=
# The server runs until told: a failed client must not leave it behind.
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -f "$out"' EXIT
for style in "" "--fibers"; do
# The server stops at the SIGTERM sent once its client is done. Its
# --duration is only the backstop, long enough for a loaded machine to
# start the client late. It listens on a
# port below the ephemeral range (32768 on), where other tests'
# connections do not take it; one that another test holds makes the
# server exit, and the next try takes another.
for _try in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 12000))
	# shellcheck disable=SC2086
	PERCORE_PIN=0 "$bin" -p "$port" -U "$port" -t 2 --duration 20 $style >"$out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		grep -q "tcp=$port" "$out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	grep -q "tcp=$port" "$out" && break
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	echo "pc-echo $style did not listen on $port:" >&2
	cat "$out" >&2
done
[ -n "$pid" ] || fail "pc-echo $style did not listen"
python3 - "$port" <<'PY'
import socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
data = bytes(range(256)) * 400
s.sendall(data[:1000]); s.sendall(data[1000:])
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
assert got == data, "tcp echo differs"
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(2)
for i in range(10):
    u.sendto(b"hello %d" % i, ("127.0.0.1", port))
    assert u.recvfrom(100)[0] == b"hello %d" % i, "udp echo differs"
PY
kill -TERM "$pid"
wait "$pid" || fail "pc-echo $style exited $?"
pid=
grep -q "total accepted=1 refused=0 closed=1 resets=0 bytes_in=102400 bytes_out=102400" "$out" \
        || { cat "$out"; fail "counters $style"; }
grep -q "udp_rx=10 udp_tx=10" "$out" || { cat "$out"; fail "udp counters $style"; }
[ -z "$style" ] || grep -q "tcp=$port (fibers)" "$out" || { cat "$out"; fail "not fibers"; }
done
echo "pc-echo: ok"
