#!/usr/bin/env bash
# Runs the lines example as a user would: start it, talk to it, SIGTERM it.
# A connection open at SIGTERM is served to its end while new ones are
# refused; the server then exits 0 with an access log line per connection.
# Usage: lines.sh PATH-TO-BUILT-lines
set -euo pipefail
prog=$1
out=$(mktemp)
trap 'kill -9 $pid 2>/dev/null || true; rm -f "$out"' EXIT

PERCORE_WORKERS=2 PERCORE_PIN=0 "$prog" 127.0.0.1 0 >"$out" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -q '^lines: serving' "$out" && break
	sleep 0.1
done
port=$(sed -n 's/^lines: serving 127.0.0.1:\([0-9]*\) .*/\1/p' "$out")
[ -n "$port" ] || { cat "$out"; echo "lines.sh: the server did not start"; exit 1; }

python3 - "$port" "$pid" <<'PY'
import os, signal, socket, sys, time

port, pid = int(sys.argv[1]), int(sys.argv[2])

def lines(s, n):
    buf = b""
    while buf.count(b"\n") < n:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf

a = socket.create_connection(("127.0.0.1", port), timeout=10)
a.sendall(b"hello\nworld\r\n")
got = lines(a, 2)
assert got == b"1 hello\n2 world\n", got

os.kill(pid, signal.SIGTERM)
# New connections are refused once the listener has closed...
end = time.monotonic() + 10
while True:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except (ConnectionRefusedError, ConnectionResetError):
        break
    assert time.monotonic() < end, "still accepting after SIGTERM"
    time.sleep(0.05)
# ...while the open one is served to its end.
a.sendall(b"again\nquit\n")
got = lines(a, 2)
assert got == b"3 again\n4 quit\n", got
assert a.recv(16) == b"", "not closed after quit"
a.close()
PY

for _ in $(seq 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
rc=0
wait "$pid" || rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "lines.sh: exit status $rc after the drain"; exit 1; }
grep -q '127.0.0.1:[0-9]*: 4 lines, quit' "$out" || { echo "lines.sh: no access log line"; exit 1; }
grep -q '^lines: stopped' "$out" || { echo "lines.sh: did not stop"; exit 1; }
echo "lines.sh: ok"
