#!/usr/bin/env bash
# pc-kv driven by real memcached clients from Debian, unchanged:
#   - libmemcached's memcapable: every ASCII and binary protocol check;
#   - libmemcached's tools (memcp/memcat/memstat/memrm/memexist/memflush),
#     in ASCII, binary and UDP;
#   - pymemcache (Debian's python3-pymemcache) across shards;
# then the binary protocol's quiet pipeline, memcached's UDP frames (a reply
# over several datagrams, a bad header counted and not answered, a
# multi-datagram request refused) and the stats groups, from Python.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
# Debian's client tools (libmemcached 1.1 names them memc*).
capable=$(command -v memccapable || command -v memcapable || true)
[ -n "$capable" ] || fail "memcapable not installed (libmemcached-tools)"
pfx=$(basename "$capable")
pfx=${pfx%capable}
pyc=/usr/bin/python3 # Debian's python, where python3-pymemcache lives
"$pyc" -c "import pymemcache" || fail "python3-pymemcache not installed"

out=$(mktemp)
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out" "$work"; }
trap cleanup EXIT
PERCORE_PIN=0 PERCORE_IDLE=park start_on_free_port "$out" listening "$bin" -p @PORT@ -U @PORT@ -t 3 -m 16 ||
        { cat "$out"; fail "pc-kv did not start"; }
srv=127.0.0.1:$port

# memcapable: the protocol conformance suite libmemcached ships.
"$capable" -h 127.0.0.1 -p "$port" -t 10 >"$work/capable" 2>&1 ||
        { cat "$work/capable"; fail "memcapable"; }
grep -q "All tests passed" "$work/capable" || { cat "$work/capable"; fail "memcapable"; }
[ "$(grep -c '\[pass\]' "$work/capable")" -ge 50 ] || { cat "$work/capable"; fail "memcapable ran few"; }

# The tools, in each protocol.
head -c 5000 /dev/urandom >"$work/blob"
for mode in "" "--binary" "--udp"; do
        # shellcheck disable=SC2086
        "${pfx}cp" --servers="$srv" $mode "$work/blob" || fail "${pfx}cp $mode"
        if [ "$mode" = "--udp" ]; then
                # libmemcached sends only writes over UDP; read back over TCP.
                "${pfx}cat" --servers="$srv" blob >"$work/back" || fail "${pfx}cat after udp"
        else
                # shellcheck disable=SC2086
                "${pfx}cat" --servers="$srv" $mode blob >"$work/back" || fail "${pfx}cat $mode"
        fi
        # memcat ends what it prints with a newline of its own.
        [ "$(stat -c %s "$work/back")" = 5001 ] && cmp -s -n 5000 "$work/blob" "$work/back" ||
                fail "${pfx}cat $mode returned other bytes"
        # shellcheck disable=SC2086
        "${pfx}rm" --servers="$srv" ${mode/--udp/} blob || fail "${pfx}rm $mode"
        ! "${pfx}exist" --servers="$srv" blob || fail "blob still there after ${pfx}rm $mode"
done
"${pfx}stat" --servers="$srv" | grep -q "threads: 3" || fail "${pfx}stat"
"${pfx}stat" --servers="$srv" --binary | grep -q "version: 1.6.0-pc-kv" || fail "${pfx}stat --binary"
"${pfx}flush" --servers="$srv" || fail "${pfx}flush"

# pymemcache, then the binary and UDP framing byte by byte.
# Under ASan or TSan freed memory is held back: RSS says nothing there.
rss_check=1
# (ldd's output taken whole first: under pipefail, grep -q quitting early
# could fail the pipeline with ldd's SIGPIPE and leave the check on.)
case "$(ldd "$bin" 2>/dev/null)" in *libasan* | *libtsan*) rss_check=0 ;; esac
"$pyc" - "$port" "$pid" "$rss_check" <<'PY'
import socket, struct, sys
from pymemcache.client.base import Client
port = int(sys.argv[1])

c = Client(("127.0.0.1", port), timeout=10)
keys = ["py:%d" % i for i in range(200)]  # spread over the 3 shards
for k in keys:
    assert c.set(k, k.upper(), expire=0, noreply=False)
assert c.get_many(keys) == {k: k.upper().encode() for k in keys}
assert c.add(keys[0], "x", noreply=False) is False
assert c.replace("py:none", "x", noreply=False) is False
v, cas = c.gets(keys[1])
assert c.cas(keys[1], "new", cas) is True and c.cas(keys[1], "newer", cas) is False
assert c.get(keys[1]) == b"new"
c.set("n", "41")
assert c.incr("n", 1) == 42 and c.decr("n", 50) == 0 and c.incr("nope", 1) is None
assert c.append(keys[2], "!") and c.prepend(keys[2], "<")
assert c.get(keys[2]) == ("<" + keys[2].upper() + "!").encode()
assert c.touch(keys[3], 100, noreply=False) and not c.touch("py:none", 100, noreply=False)
assert c.delete(keys[4], noreply=False) and not c.delete(keys[4], noreply=False)
st = c.stats()
assert st[b"threads"] == 3 and st[b"curr_items"] >= 199, st
assert c.stats("settings")[b"num_threads"] == 3
assert c.stats("items")[b"items:1:number"] >= 199
assert b"total_malloced" in c.stats("slabs")
assert c.version() == b"1.6.0-pc-kv"
c.flush_all()
assert c.get(keys[0]) is None

# A write flood of 3x the cache's 16 MB: the LRU evicts, item bytes stay
# under the cap, the process does not grow with what was written.
val = b"w" * 20000
for i in range(2400):
    c.set("flood:%d" % i, val, noreply=True)
assert c.get("flood:2399") == val  # the newest survive
st = c.stats()
assert st[b"bytes"] <= st[b"limit_maxbytes"] == 16 * 1024 * 1024, st
assert st[b"evictions"] > 0 and c.get("flood:0") is None, st
rss_kb = int([l for l in open("/proc/%s/status" % sys.argv[2]) if l.startswith("VmRSS")][0].split()[1])
assert sys.argv[3] == "0" or rss_kb < 64 * 1024, "pc-kv RSS %d kB after the flood" % rss_kb

# Binary: a pipeline of quiet commands ended by a noop answers only what
# memcached answers (hits of getq/getkq, errors of setq and friends), in order.
def req(op, key=b"", extras=b"", value=b"", opaque=0, cas=0):
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0,
                       len(extras) + len(key) + len(value), opaque, cas) + extras + key + value

def read_frames(s, until_opaque):
    frames, buf = [], b""
    while True:
        while len(buf) >= 24:
            magic, op, kl, el, dt, status, bl, opaque, cas = struct.unpack(">BBHBBHIIQ", buf[:24])
            if len(buf) < 24 + bl:
                break
            body = buf[24:24 + bl]
            frames.append((op, status, opaque, body[el:el + kl], body[el + kl:]))
            buf = buf[24 + bl:]
            if opaque == until_opaque:
                return frames
        b = s.recv(65536)
        assert b, "closed"
        buf += b

s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
flags = struct.pack(">II", 7, 0)
pipe = b""
for i in range(50):
    pipe += req(0x11, b"bq:%d" % i, flags, b"v%d" % i, opaque=i)          # setq: silent
pipe += req(0x12, b"bq:3", flags, b"dup", opaque=1000)                     # addq: EEXISTS
pipe += req(0x09, b"bq:missing", opaque=1001)                              # getq miss: silent
pipe += req(0x0d, b"bq:7", opaque=1002)                                    # getkq hit
pipe += req(0x09, b"bq:8", opaque=1003)                                    # getq hit
pipe += req(0x14, b"bq:missing", opaque=1004)                              # deleteq: ENOENT
pipe += req(0x15, b"bq:ctr", struct.pack(">QQI", 5, 100, 0), opaque=1005)  # incrq create: silent
pipe += req(0x05, b"bq:ctr", struct.pack(">QQI", 5, 100, 0), opaque=1006)  # incr: 105
pipe += req(0x0a, opaque=2000)                                             # noop
s.sendall(pipe)
got = [(op, st, op_) for op, st, op_, k, v in read_frames(s, 2000)]
assert got == [(0x12, 2, 1000), (0x0d, 0, 1002), (0x09, 0, 1003), (0x14, 1, 1004),
               (0x05, 0, 1006), (0x0a, 0, 2000)], got
s.sendall(req(0x05, b"bq:ctr", struct.pack(">QQI", 1, 0, 0), opaque=9))
(f,) = read_frames(s, 9)
assert f[4] == struct.pack(">Q", 106), f

# UDP: memcached's 8-byte frame header on every datagram; each response
# numbered from 0 in datagrams of its own (a multi-key get's: one per key,
# END with the last).
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(10)
def udp(payload, rid, replies=1):
    u.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + payload, ("127.0.0.1", port))
    out = b""
    for _ in range(replies):
        parts, total = {}, None
        while total is None or len(parts) < total:
            d, _ = u.recvfrom(65536)
            r, seq, tot, _res = struct.unpack(">HHHH", d[:8])
            assert r == rid, (r, rid)
            total = tot
            parts[seq] = d[8:]
        out += b"".join(parts[i] for i in range(total))
    return out
assert udp(b"set u1 3 0 5\r\nhello\r\n", 1) == b"STORED\r\n"
assert udp(b"get u1\r\n", 2) == b"VALUE u1 3 5\r\nhello\r\nEND\r\n"
big = b"x" * 5000  # a reply over several datagrams, reassembled in order
assert udp(b"set u2 0 0 5000\r\n" + big + b"\r\n", 3) == b"STORED\r\n"
assert udp(b"get u1 u2 nope\r\n", 4, 3) == (b"VALUE u1 3 5\r\nhello\r\nVALUE u2 0 5000\r\n" + big +
                                          b"\r\nEND\r\n")
# Keys on every shard, answered in key order.
assert udp(b"".join(b"set uk%d 0 0 1\r\n%d\r\n" % (i, i % 10) for i in range(30)), 5, 30) == \
    b"STORED\r\n" * 30
assert udp(b"get " + b" ".join(b"uk%d" % i for i in range(30)) + b"\r\n", 6, 30) == \
    b"".join(b"VALUE uk%d 0 1\r\n%d\r\n" % (i, i % 10) for i in range(30)) + b"END\r\n"
assert udp(req(0x0c, b"u1", opaque=77), 7)[:2] == b"\x81\x0c"  # binary over UDP
# A bad header is dropped and counted; a multi-datagram request is refused.
u.sendto(b"\x00\x01", ("127.0.0.1", port))
u.sendto(struct.pack(">HHHH", 8, 0, 2, 0) + b"get u1\r\n", ("127.0.0.1", port))
d, _ = u.recvfrom(65536)
assert d[8:] == b"SERVER_ERROR multi-packet request not supported\r\n", d
st = c.stats()
assert st[b"udp_dropped"] == 2 and st[b"udp_requests"] >= 7, st
# Mutated streams, ASCII and binary, on fresh connections: whatever comes
# back, the server stays up and keeps answering (under ASan in CI, so a
# bad read or a leak on these paths fails the run).
import random
random.seed(11)
seeds = [b"set m 1 0 3\r\nabc\r\nget m\r\n", b"gets m n o\r\nincr m 1\r\ndelete m\r\n",
         b"cas m 0 0 1 5\r\nx\r\ntouch m 10\r\ngat 5 m\r\nstats items\r\n",
         req(0x01, b"bm", flags, b"vv") + req(0x00, b"bm") + req(0x0a),
         req(0x05, b"bc", struct.pack(">QQI", 1, 2, 0)) + req(0x10, b"slabs") + req(0x0b),
         req(0x1d, b"bm", struct.pack(">I", 5)) + req(0x08, b"", struct.pack(">I", 0))]
for i in range(300):
    b = bytearray(random.choice(seeds) * random.randint(1, 3))
    for _ in range(random.randint(1, 6)):
        op = random.randrange(3)
        at = random.randrange(len(b))
        if op == 0:
            b[at] = random.randrange(256)
        elif op == 1:
            del b[at:at + random.randint(1, 8)]
        else:
            b[at:at] = bytes(random.randrange(256) for _ in range(random.randint(1, 8)))
    m = socket.create_connection(("127.0.0.1", port))
    m.settimeout(5)
    try:
        m.sendall(bytes(b))
        m.shutdown(socket.SHUT_WR)
        while m.recv(65536):
            pass
    except OSError:
        pass  # a reset or a timeout: the server's choice
    m.close()
    if i % 7 == 0:  # a datagram too
        u.sendto(struct.pack(">HHHH", i, 0, 1, 0) + bytes(b), ("127.0.0.1", port))
assert c.version() == b"1.6.0-pc-kv"
assert c.set("after-fuzz", "ok", noreply=False) and c.get("after-fuzz") == b"ok"
print("clients: ok")
PY

stop_pc_kv "$pid" "$out" || fail "pc-kv did not stop cleanly"
pid=
echo "pc-kv clients: ok"
