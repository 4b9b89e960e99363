#!/usr/bin/env bash
# pc-fwd end to end, with 2 workers:
#  - io/mac/macswap between two net_null ports: both queues are polled, and
#    on every port and direction the counts add up (what one port received
#    the other sent or dropped; no device errors);
#  - io/mac/macswap between two net_pcap ports, and mac on one port back to
#    itself: the test writes a pcap file per RX queue and reads what leaves
#    from a pcap file per TX queue. Every frame it wrote leaves once, in
#    order, on the same worker's queue of the peer port, byte for byte what
#    the mode makes of it (mac: dst 02:00:00:00:00:<TX port>, src the TX
#    port's MAC; macswap: the two swapped; io: unchanged), and pc-fwd's
#    counters are exactly those frames, queue by queue; io also with 1
#    and with 64 RX bursts a loop pass;
#  - a net_ring port looping to itself starts and stops cleanly;
#  - bad flags exit 2.
set -uo pipefail
fwd=$1
fail=0
eal_base="--no-huge --no-pci -m 256 --log-level=lib.eal:error"
export PERCORE_WORKERS=2 PERCORE_PIN=0 PERCORE_LOG=warn
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Checks pc-fwd's table: for every port P and its peer Q (itself with one
# port), rx(P) = tx(Q) + drops(Q); the totals line says the same; no errors.
counts_add_up() { # name, output
	python3 - "$1" "$2" <<'PY'
import re, sys
name, out = sys.argv[1], sys.argv[2]
rows = {int(m[0]): [int(x) for x in m[1:]] for m in
        re.findall(r"^(\d+) +\S+ +all +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$", out, re.M)}
tot = re.search(r"^pc-fwd: total rx=(\d+) tx=(\d+) drops=(\d+) errors=(\d+)$", out, re.M)
bad = []
if sorted(rows) not in ([0], [0, 1]) or not tot:
    bad.append("no per-port 'all' rows or no totals line")
else:
    for p, (rx, tx, drops, errors, malformed) in rows.items():
        q = rows[1 - p] if len(rows) == 2 else rows[p]
        if rx != q[1] + q[2]:
            bad.append(f"port {p} received {rx}, its peer sent {q[1]} and dropped {q[2]}")
        if errors or malformed:
            bad.append(f"port {p}: errors={errors} malformed={malformed}")
    rx, tx, drops, errors = map(int, tot.groups())
    sums = [sum(r[i] for r in rows.values()) for i in range(4)]
    if [rx, tx, drops, errors] != sums:
        bad.append(f"totals {tot.group(0)} are not the sums of the rows {sums}")
    if rx == 0 or rx != tx + drops:
        bad.append(f"totals: rx={rx} is not tx={tx} + drops={drops}, or 0")
for b in bad:
    print(f"FAIL {name}: {b}")
if not bad:
    print(f"ok {name}: rx={tot.group(1)} = tx={tot.group(2)} + drops={tot.group(3)}, "
          "every port's rx is its peer's tx + drops")
sys.exit(1 if bad else 0)
PY
}

for mode in io mac macswap; do
	out=$("$fwd" --eal "$eal_base --file-prefix pc_fwd_t_$mode --vdev net_null0 --vdev net_null1" \
		--mode "$mode" --duration 0.5 2>&1) || { echo "FAIL $mode: exit $?"; echo "$out"; fail=1; continue; }
	counts_add_up "null $mode" "$out" || { echo "$out"; fail=1; continue; }
	# Both queues of every port were polled.
	for p in net_null0 net_null1; do
		grep -qE "^[0-9]+ +$p +1 +[1-9]" <<<"$out" ||
			{ echo "FAIL null $mode: queue 1 of $p saw nothing"; echo "$out"; fail=1; }
	done
done

# The frames the test sends: per (port, queue) a different number, each
# with its own addresses (dst != src, so a swap shows) and length.
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
for p in (0, 1):
    for q in (0, 1):
        n = 41 + 19 * p + 7 * q
        with open(f"{d}/in{p}{q}.pcap", "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for i in range(n):
                dst = bytes([0x0A, p, q, 0xD5, i >> 8, i & 255])
                src = bytes([0x0E, p, q, 0x5C, i >> 8, i & 255])
                body = bytes((i * 7 + k + p * 3 + q) & 255 for k in range(46 + i % 90))
                fr = dst + src + b"\x08\x00" + body
                f.write(struct.pack("<IIII", i, 0, len(fr), len(fr)) + fr)
PY

# pcap_run NAME MODE NPORTS: pc-fwd on net_pcap ports (one pcap file per
# queue each way) until every frame written has left, then SIGTERM; then
# the check. It waits for frames, not for time: the loop bound only ends a
# run that would otherwise hang.
pcap_run() {
	local name=$1 mode=$2 nports=$3 eal="$eal_base --file-prefix pc_fwd_t_pcap_$1" ports
	local extra=("${@:4}")
	local p q pid rc=0 want got
	for ((p = 0; p < nports; p++)); do
		eal+=" --vdev net_pcap$p"
		for q in 0 1; do eal+=",rx_pcap=$tmp/in$p$q.pcap"; done
		for q in 0 1; do eal+=",tx_pcap=$tmp/$name-out$p$q.pcap"; done
	done
	ports=net_pcap0
	[ "$nports" = 2 ] && ports=net_pcap0,net_pcap1
	"$fwd" --eal "$eal" --ports "$ports" --mode "$mode" ${extra[@]+"${extra[@]}"} \
		>"$tmp/$name.log" 2>&1 &
	pid=$!
	# A frame keeps its length, so every output file ends up as long as
	# the input file of the same queue of the peer port (24-byte header,
	# 16 bytes a record, in either timestamp precision).
	want=$(for ((p = 0; p < nports; p++)); do for q in 0 1; do
		stat -c %s "$tmp/in$(((p + 1) % nports))$q.pcap"; done; done)
	for _ in $(seq 1200); do
		got=$(for ((p = 0; p < nports; p++)); do for q in 0 1; do
			stat -c %s "$tmp/$name-out$p$q.pcap" 2>/dev/null || echo 0; done; done)
		[ "$got" = "$want" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAIL pcap $name: pc-fwd exited $rc"; cat "$tmp/$name.log"; fail=1; return
	fi
	python3 - "$tmp" "$name" "$mode" "$nports" <<'PY' ||
import re, struct, sys
d, name, mode, nports = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = open(f"{d}/{name}.log").read()

def frames(path):
    b = open(path, "rb").read()
    if len(b) < 24 or struct.unpack("<I", b[:4])[0] not in (0xA1B2C3D4, 0xA1B23C4D):
        raise SystemExit(f"FAIL pcap {name}: {path} is not a little-endian pcap file")
    fs, off = [], 24
    while off < len(b):
        caplen, origlen = struct.unpack("<II", b[off + 8:off + 16])
        fs.append(b[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return fs

macs = {int(p): bytes.fromhex(m.replace(":", "")) for p, m in
        re.findall(r"^pc-fwd: port (\d+) \S+ mac ([0-9a-f:]{17})$", out, re.M)}
rows = {(int(m[0]), int(m[1])): [int(x) for x in m[2:]] for m in
        re.findall(r"^(\d+) +\S+ +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+)$", out, re.M)}
bad = []
if sorted(macs) != list(range(nports)):
    bad.append(f"pc-fwd named the MACs of ports {sorted(macs)}, not 0..{nports - 1}")
sent = 0
for p in range(nports):
    tx_port = (p + 1) % nports
    for q in (0, 1):
        ins = frames(f"{d}/in{p}{q}.pcap")
        outs = frames(f"{d}/{name}-out{tx_port}{q}.pcap")
        sent += len(ins)
        if len(outs) != len(ins):
            bad.append(f"port {p} queue {q}: {len(ins)} frames in, {len(outs)} out "
                       f"of port {tx_port}")
        for i, (fi, fo) in enumerate(zip(ins, outs)):
            if mode == "io":
                want = fi
            elif mode == "macswap":
                want = fi[6:12] + fi[0:6] + fi[12:]
            else:
                want = b"\x02\x00\x00\x00\x00" + bytes([tx_port]) + \
                    macs.get(tx_port, b"?") + fi[12:]
            if fo != want:
                bad.append(f"port {p} queue {q} frame {i} left port {tx_port} as "
                           f"{fo[:14].hex()}..., expected {want[:14].hex()}... "
                           f"({len(fo)} vs {len(want)} bytes)")
                break
        # The counters: received here, sent by the peer's same queue.
        r, t = rows.get((p, q)), rows.get((tx_port, q))
        if r is None or t is None:
            bad.append(f"no counter rows for port {p}/{tx_port} queue {q}")
        elif r[0] != len(ins) or t[1] != len(ins) or r[2:] != [0, 0, 0] or t[2:] != [0, 0, 0]:
            bad.append(f"port {p} queue {q}: rx={r[0]} and port {tx_port} tx={t[1]}, "
                       f"{len(ins)} frames sent; drops/errors/malformed {r[2:]} {t[2:]}")
tot = re.search(r"^pc-fwd: total rx=(\d+) tx=(\d+) drops=(\d+) errors=(\d+)$", out, re.M)
if not tot or [int(x) for x in tot.groups()] != [sent, sent, 0, 0]:
    bad.append(f"totals '{tot.group(0) if tot else None}', {sent} frames sent")
for b in bad:
    print(f"FAIL pcap {name}: {b}")
if bad:
    sys.exit(1)
print(f"ok pcap {name}: {sent} frames sent, counted and left {mode}-forwarded byte for byte")
PY
		{ cat "$tmp/$name.log"; fail=1; }
}

pcap_run io io 2
pcap_run mac mac 2
pcap_run macswap macswap 2
pcap_run mac1 mac 1
# One burst a pass and the most: the same frames, in the same order.
pcap_run io_rb1 io 2 --rx-bursts 1
pcap_run io_rb64 io 2 --rx-bursts 64

out=$("$fwd" --eal "$eal_base --file-prefix pc_fwd_t_ring --vdev net_ring0" --ports net_ring0 \
	--duration 0.3 2>&1)
# A ring with nothing injected forwards nothing; it must still start and stop cleanly.
grep -q '^pc-fwd: total rx=0 ' <<<"$out" && echo "ok ring: starts, stops" ||
	{ echo "FAIL ring"; echo "$out"; fail=1; }

for bad in "--mode nope" "--duration -1" "--burst 0" "--rx-bursts 0" "--rx-bursts 65" \
	"--ports ,1" "--frobnicate" "extra"; do
	# shellcheck disable=SC2086
	"$fwd" --eal "$eal_base" $bad >/dev/null 2>&1
	rc=$?
	[ $rc -eq 2 ] && echo "ok bad flag '$bad' -> 2" || { echo "FAIL '$bad' -> $rc"; fail=1; }
done
env -u PERCORE_EAL_ARGS "$fwd" >/dev/null 2>&1
[ $? -eq 2 ] && echo "ok no EAL args -> 2" || { echo "FAIL no EAL args"; fail=1; }
exit $fail
