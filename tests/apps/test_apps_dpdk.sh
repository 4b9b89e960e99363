#!/usr/bin/env bash
# The apps on the DPDK backend, against the kernel in a network namespace:
# pc-echo --backend dpdk and pc-kv --backend dpdk run our own stack on
# DPDK's af_packet PMD over veth pc_a_v0 (root namespace, no kernel
# address), at 10.78.0.1 with two workers (a queue pair each); the kernel
# side, pc_a_v1 in namespace pc_a_ns at 10.78.0.2, resolves us with ARP and
# sends UDP: echo datagrams, then TCP streams to percore's own TCP, then
# memcached UDP frames (set, get across shards, a reply over several
# datagrams), then memcapable over TCP, the reply memory bound and
# -o idle_timeout over TCP. A scrape of pc-echo's metrics shows
# its TCP engines' counters. The namespace and veth are
# removed on every exit, and stale ones at start.
set -uo pipefail
echo_bin=$1 kv_bin=$2
ns=pc_a_ns v0=pc_a_v0 v1=pc_a_v1
ours=10.78.0.1 theirs=10.78.0.2
out=$(mktemp)
spid=

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
stop_server() { dpdk_stop; }
# shellcheck source=../veth.sh
. "$(dirname "$0")/../veth.sh"
trap 'veth_cleanup "$ns" "$v0"' EXIT

veth_need_root
msg=$(veth_up "$ns" "$v0" "$v1" "$theirs/24") || fail "$msg"

export PERCORE_PIN=0 PERCORE_LOG=warn
export PERCORE_EAL_ARGS="--no-huge --no-pci -m 256 --file-prefix pc_apps \
--log-level=lib.eal:error --vdev net_af_packet0,iface=$v0,qpairs=2"

start() { # wait for the app's banner
	dpdk_start "$out" "$banner" "$@" || fail "$1 did not start"
}

# ---- pc-echo
banner="dpdk backend"
PERCORE_LOG=info PERCORE_METRICS=127.0.0.1:0 start "$echo_bin" --backend dpdk -l "$ours" -U 7 \
	-p 7 -t 2
ip netns exec "$ns" python3 - "$ours" <<'PY' || fail "pc-echo UDP"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
for i in range(20):
    msg = b"dpdk echo %d " % i + b"x" * (i * 50)
    s.sendto(msg, (sys.argv[1], 7))
    data, peer = s.recvfrom(4096)
    assert data == msg and peer == (sys.argv[1], 7), (data[:40], peer)
print("ok: pc-echo --backend dpdk echoed 20 datagrams")
PY
# TCP: Linux's own TCP connects to percore's, 64 connections at once, each
# writing its stream in pieces of varied size (1 byte to 64 KiB, 1.5 MB at
# most) while reading the echo; every byte must come back once, in order.
SIZES=1,100,1460,1461,65536,200000,1500000,7
tcp_echo_check() { # N connections
	local bytes
	bytes=$(ip netns exec "$ns" /usr/bin/python3 "$(dirname "$0")/tcp_streams.py" "$ours" 7 "$1" \
		"$SIZES") || return 1
	echo "ok: pc-echo --backend dpdk echoed $1 TCP streams ($bytes bytes) byte-exact"
}
tcp_echo_check 64 || fail "pc-echo TCP"
# The engines' counters reach a scraper (PERCORE_METRICS): every worker
# publishes them every 10 ms of its loop, so wait for the figures to come.
mport=$(sed -n 's/.*metrics: GET \/metrics on .* (port \([0-9]*\)).*/\1/p' "$out")
[ -n "$mport" ] || fail "pc-echo: no metrics port in its log"
/usr/bin/python3 - "$mport" "$(dirname "$0")/scrape.py" "$SIZES" <<'PY' || fail "pc-echo TCP metrics"
import subprocess, sys, time
mport, scrape = sys.argv[1], sys.argv[2]
sizes = [int(x) for x in sys.argv[3].split(",")]
want_bytes = sum(sizes[i % len(sizes)] + i for i in range(64))
def total(lines, name):
    return sum(float(l.rsplit(" ", 1)[1]) for l in lines if l.startswith(name + "{"))
for _ in range(100):
    lines = subprocess.run([sys.executable, scrape, mport], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    opens = total(lines, "percore_tcp_passive_opens_total")
    rx = total(lines, "percore_tcp_received_bytes_total")
    tx = total(lines, "percore_tcp_sent_bytes_total")
    # Payload bytes of every segment each way: a retransmission (the
    # kernel's or ours, on a slow run) counts again.
    if opens == 64 and rx >= want_bytes and tx >= want_bytes:
        break
    time.sleep(0.1)
else:
    sys.exit("scraped passive opens %d, bytes in %d out %d; want 64 and at least %d"
             % (opens, rx, tx, want_bytes))
queues = {l.split("queue=")[1].split("}")[0] for l in lines
          if l.startswith("percore_tcp_segments_received_total{")}
assert queues == {"0", "1"}, queues
reasons = {l.split("reason=")[1].split("}")[0] for l in lines
           if l.startswith("percore_tcp_drops_total{")}
assert "csum" in reasons and len(reasons) > 10, reasons
drops = {l.split("reason=")[1].split("}")[0]: float(l.rsplit(" ", 1)[1]) for l in lines
         if l.startswith("percore_tcp_drops_total{") and not l.endswith(" 0")}
retx = total(lines, "percore_tcp_retransmits_total")
print("ok: the scrape shows 64 TCP connections accepted and %d and %d bytes in and out "
      "(%d streamed; our retransmits %d, drops %s), per queue, with drops by reason"
      % (rx, tx, want_bytes, retx, drops or "none"))
PY
stop_server || fail "pc-echo exit status"
grep -q "pc-echo: tcp accepted=64 " "$out" || fail "pc-echo TCP counters"
# The same, served blocking-style: a fiber per connection.
start "$echo_bin" --backend dpdk -l "$ours" -p 7 -U 0 -t 2 --fibers
tcp_echo_check 16 || fail "pc-echo --fibers TCP"
stop_server || fail "pc-echo --fibers exit status"
grep -q "pc-echo: tcp accepted=16 " "$out" || fail "pc-echo --fibers TCP counters"

# ---- pc-kv
banner="listening"
# As in test_pc_kv_bound.sh: a small ASan quarantine, no RSS bound under TSan.
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
# Under TSan the probe only checks every byte arrives, with fewer keys:
# it checks no bound there, and TSan's af_packet path is slow.
bound=48 probe=get:400,pipe:100,meta:100,binq:100
case "$(ldd "$kv_bin" 2>/dev/null)" in *libtsan*) bound=-1 probe=get:40,pipe:40,meta:40,binq:40 ;; esac
ASAN_OPTIONS=$asan start "$kv_bin" --backend dpdk -l "$ours" -U 11211 -p 11211 -t 2 -m 16
ip netns exec "$ns" python3 - "$ours" <<'PY' || fail "pc-kv UDP"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
def ask(payload, rid, gets=False):
    """The reply's bytes. A multi-key get answers a response per key, as
    memcached does (each its own datagrams, numbered from 0): read them
    until END."""
    s.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + payload, (sys.argv[1], 11211))
    out = b""
    while True:
        parts, total = {}, None
        while total is None or len(parts) < total:
            d, _ = s.recvfrom(65536)
            r, seq, total, _res = struct.unpack(">HHHH", d[:8])
            assert r == rid, (r, rid)
            parts[seq] = d[8:]
        out += b"".join(parts[i] for i in range(total))
        if not gets or out.endswith(b"END\r\n"):
            return out
keys = [b"dk%d" % i for i in range(40)]  # both workers own some
for i, k in enumerate(keys):
    assert ask(b"set %s %d 0 %d\r\n%s\r\n" % (k, i, len(k), k), i + 1) == b"STORED\r\n"
want = b"".join(b"VALUE %s %d %d\r\n%s\r\n" % (k, i, len(k), k) for i, k in enumerate(keys))
assert ask(b"get " + b" ".join(keys) + b"\r\n", 100, True) == want + b"END\r\n"
# A reply over several datagrams (each request fits one frame: our stack
# drops IP fragments).
bigs = [(b"big%d" % i, bytes([65 + i]) * 1000) for i in range(4)]
for i, (k, v) in enumerate(bigs):
    assert ask(b"set %s 0 0 1000\r\n%s\r\n" % (k, v), 200 + i) == b"STORED\r\n"
assert ask(b"get big0 big1 big2 big3\r\n", 102, True) == b"".join(
    b"VALUE %s 0 1000\r\n%s\r\n" % kv for kv in bigs) + b"END\r\n"
assert ask(b"version\r\n", 103) == b"VERSION 1.6.0-pc-kv\r\n"
print("ok: pc-kv --backend dpdk answered memcached UDP frames")
PY
# TCP on percore's own TCP: libmemcached's conformance suite (ASCII and
# binary), from the kernel's side of the veth.
capable=$(command -v memccapable || command -v memcapable || true)
if [ -n "$capable" ]; then
	ip netns exec "$ns" "$capable" -h "$ours" -p 11211 -t 10 >"$out.capable" 2>&1 &&
		grep -q "All tests passed" "$out.capable" &&
		[ "$(grep -c '\[pass\]' "$out.capable")" -ge 50 ] ||
		{ cat "$out.capable"; rm -f "$out.capable"; fail "memcapable over DPDK TCP"; }
	rm -f "$out.capable"
	echo "ok: memcapable passed against pc-kv --backend dpdk over TCP"
else
	echo "note: memcapable not installed (libmemcached-tools): TCP conformance not run"
fi
# What a client that reads no reply makes pc-kv hold, on percore's TCP:
# the amplification probe (test_pc_kv_bound.sh) from the kernel's side,
# smaller than there since af_packet is slower than loopback.
ip netns exec "$ns" python3 "$(dirname "$0")/kv/kv_bound.py" "$ours" 11211 "$spid" 2 1000000 "$bound" \
	"$probe" || fail "pc-kv reply memory bound over DPDK TCP"
stop_server || fail "pc-kv exit status"
grep -q "udp_requests=47 " "$out" || fail "pc-kv counted other than 47 UDP requests"
cat "$out"
# -o idle_timeout on percore's TCP.
start "$kv_bin" --backend dpdk -l "$ours" -p 11211 -t 2 -m 16 -o idle_timeout=2
ip netns exec "$ns" python3 "$(dirname "$0")/kv/kv_idle.py" "$ours" 11211 2 ||
	fail "pc-kv idle_timeout over DPDK TCP"
stop_server || fail "pc-kv -o idle_timeout exit status"
echo "ok: both apps on the DPDK backend"
