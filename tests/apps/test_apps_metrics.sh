#!/usr/bin/env bash
# PERCORE_METRICS in the apps, taken from the environment like every other
# setting: a value that is not ADDR:PORT, or a port already taken, stops
# start-up with a message naming the variable; while a load runs, a scrape
# (parsed by python3-prometheus-client, scrape.py) shows pc-echo's
# kernel-backend counters per worker, pc-kv's mailboxes between its
# shards (which balance at rest), and, with DPDK, pc-fwd's per-port, per-queue counters.
# Arguments: pc-echo, pc-kv, and pc-fwd where DPDK is built.
set -euo pipefail
echo_bin=$1 kv_bin=$2 fwd_bin=${3:-}
here=$(dirname "$0")
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=lib.sh
. "$here/lib.sh"
export PERCORE_PIN=0 PERCORE_LOG=warn
out=$(mktemp)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$out"; }
trap cleanup EXIT

# Refused at start-up, naming the variable.
for bad in nope 127.0.0.1 localhost:9100 127.0.0.1:70000; do
	for b in "$echo_bin -p 0 -U 7" "$kv_bin -p 0 -U 7"; do
		rc=0
		# shellcheck disable=SC2086
		PERCORE_METRICS=$bad $b >"$out" 2>&1 || rc=$?
		[ "$rc" = 1 ] || { cat "$out"; fail "PERCORE_METRICS=$bad $b exited $rc"; }
		grep -q "PERCORE_METRICS='$bad' is not valid" "$out" || { cat "$out"; fail "message"; }
	done
done
# A port already taken (held by a listener of this test).
exec 3< <(/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)')
holder=$!
read -r taken <&3
rc=0
PERCORE_METRICS=127.0.0.1:$taken "$echo_bin" -p 0 -U 7 >"$out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$out"; fail "a taken port: pc-echo exited $rc"; }
grep -q "PERCORE_METRICS=127.0.0.1:$taken: cannot listen there" "$out" || { cat "$out"; fail "taken"; }
kill "$holder"
exec 3<&-

# The port a server's PERCORE_METRICS=127.0.0.1:0 chose, from its log in
# $1 (it logs at info level), waiting for the line.
metrics_port() {
	local p
	for _ in $(seq 200); do
		p=$(sed -n 's/.*metrics: GET \/metrics on .* (port \([0-9]*\)).*/\1/p' "$1")
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}

# term PID: SIGTERM the server and wait for it; returns its exit status.
# (The signal goes to the runtime's pc-signals thread, never to a worker,
# so it is handled at once, also under ThreadSanitizer.)
term() {
	local rc=0
	kill -TERM "$1"
	wait "$1" || rc=$?
	return $rc
}

# metric NAME{LABELS} in the scrape $1: its value (empty when absent).
metric() { awk -v k="$2" '$1 == k { print $2 }' <<<"$1"; }

# pc-echo, 2 workers: 8 connections echo while the test scrapes.
PERCORE_LOG=info PERCORE_METRICS=127.0.0.1:0 start_on_free_port "$out" "tcp=" "$echo_bin" \
	-p @PORT@ -t 2 || { cat "$out"; fail "pc-echo did not start"; }
mport=$(metrics_port "$out") || { cat "$out"; fail "pc-echo: no metrics port"; }
/usr/bin/python3 - "$port" "$mport" "$here/scrape.py" <<'PY' || { cat "$out"; fail "pc-echo scrapes"; }
import socket, subprocess, sys, threading
port, mport, scrape = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def client(i):
    s = socket.create_connection(("127.0.0.1", port))
    for k in range(200):
        msg = b"%d-%d " % (i, k) * 10
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            got += s.recv(65536)
        assert got == msg
    s.close()
threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
during = subprocess.run([scrape, mport], capture_output=True, text=True, check=True).stdout
for t in threads:
    t.join()
assert "percore_knet_accepted_total{worker=0}" in during, during
PY
for _ in $(seq 50); do
	s=$("$here/scrape.py" "$mport")
	[ "$(metric "$s" 'percore_knet_closed_total{worker=0}')" != "" ] || fail "no knet family"
	acc=$(( $(metric "$s" 'percore_knet_accepted_total{worker=0}' | cut -d. -f1) +
		$(metric "$s" 'percore_knet_accepted_total{worker=1}' | cut -d. -f1) ))
	closed=$(( $(metric "$s" 'percore_knet_closed_total{worker=0}' | cut -d. -f1) +
		$(metric "$s" 'percore_knet_closed_total{worker=1}' | cut -d. -f1) ))
	[ "$closed" = 8 ] && break
	sleep 0.1
done
[ "$acc" = 8 ] && [ "$closed" = 8 ] || { echo "$s"; fail "pc-echo: accepted $acc closed $closed"; }
grep -q '^percore_worker_tasks_total{worker=1} ' <<<"$s" || fail "no per-worker tasks"
term "$pid" || fail "pc-echo exited $?"
pid=

# pc-kv, 2 workers: keys of both shards.
PERCORE_LOG=info PERCORE_METRICS=127.0.0.1:0 start_on_free_port "$out" listening "$kv_bin" \
	-p @PORT@ -t 2 -m 16 || { cat "$out"; fail "pc-kv did not start"; }
mport=$(metrics_port "$out") || { cat "$out"; fail "pc-kv: no metrics port"; }
/usr/bin/python3 - "$port" <<'PY' || { cat "$out"; fail "pc-kv load"; }
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rwb")
for i in range(200):
    f.write(b"set key%d 0 0 1\r\nv\r\n" % i)
    f.flush()
    assert f.readline() == b"STORED\r\n"
s.close()
PY
# Requests for the other worker's keys went to it by message: once idle,
# what was sent was received.
s=$("$here/scrape.py" "$mport")
total() { awk -v k="$2" 'index($1, k "{") == 1 { n += $2 } END { print n + 0 }' <<<"$1"; }
for w in 0 1; do
	[ -n "$(metric "$s" "percore_mailbox_sent_total{worker=$w}")" ] &&
		[ -n "$(metric "$s" "percore_mailbox_received_total{worker=$w}")" ] ||
		{ echo "$s"; fail "pc-kv: no mailbox counters of worker $w"; }
done
[ "$(total "$s" percore_mailbox_sent_total)" = "$(total "$s" percore_mailbox_received_total)" ] ||
	{ echo "$s"; fail "pc-kv: mailbox sent and received differ at rest"; }
term "$pid" || { cat "$out"; fail "pc-kv exited $?"; }
grep -q "send_failed=0" "$out" || { cat "$out"; fail "pc-kv: sends failed"; }
pid=

# pc-fwd on two net_null ports: every queue of both, labelled.
if [ -n "$fwd_bin" ]; then
	PERCORE_WORKERS=2 PERCORE_LOG=info PERCORE_METRICS=127.0.0.1:0 "$fwd_bin" --eal \
		"--no-huge --no-pci -m 256 --log-level=lib.eal:error --file-prefix pc_metrics_fwd \
		--vdev net_null0 --vdev net_null1" --mode io --duration 3 >"$out" 2>&1 &
	pid=$!
	mport=$(metrics_port "$out") || { cat "$out"; fail "pc-fwd: no metrics port"; }
	s=
	for _ in $(seq 100); do
		s=$("$here/scrape.py" "$mport" 2>/dev/null) || s=
		[ -n "$(metric "$s" 'percore_port_rx_packets_total{port=net_null1,queue=1}')" ] &&
			[ "$(metric "$s" 'percore_port_rx_packets_total{port=net_null0,queue=0}')" != 0 ] &&
			break
		sleep 0.1
	done
	for p in net_null0 net_null1; do
		for q in 0 1; do
			v=$(metric "$s" "percore_port_rx_packets_total{port=$p,queue=$q}")
			[ -n "$v" ] || { echo "$s"; cat "$out"; fail "pc-fwd: no rx of $p queue $q"; }
		done
	done
	[ -n "$(metric "$s" 'percore_port_device_errors_total{port=net_null0}')" ] ||
		fail "pc-fwd: no device errors family"
	# pc-fwd's ports have no TCP: the TCP counters are there, and 0.
	[ "$(metric "$s" 'percore_port_tcp_handoffs_total{port=net_null0,queue=1}')" = 0 ] ||
		fail "pc-fwd: no TCP hand-off counter"
	wait "$pid" || { cat "$out"; fail "pc-fwd exited $?"; }
	pid=
fi
echo "apps metrics: ok"
