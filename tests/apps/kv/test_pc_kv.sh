#!/usr/bin/env bash
# pc-kv end to end on loopback with a small python3 client: bad flags exit
# 2; with 3 workers, keys spread over the shards, multi-get order, a cas
# race between connections, noreply, pipelined replies in order, garbage
# and oversized input answered with memcached's errors, the server still up;
# the admin commands, and shutdown with -A. The client's session runs twice:
# by default other workers' keys go by call alone; overprovisioned, parked
# owners lend their shards.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

for bad in "-p 70000" "-p 0 -U 0" "-U -1" "-t 0" "-m 0" "-m x" "-I 12q" "-I 10" "-c 0" \
        "-l 1.2.3" "--backend dpdk" "--backend x" "--nope" "extra" "-l 10.0.0.1/24" \
        "--gateway 10.0.0.2" "--backend dpdk -l 10.0.0.1/0" "--backend dpdk --gateway 1.2.3.4"; do
        rc=0
        # shellcheck disable=SC2086
        "$bin" $bad >/dev/null 2>&1 || rc=$?
        [ "$rc" = 2 ] || fail "'$bad' exited $rc, expected 2"
done
"$bin" --help | grep -q "usage: pc-kv" || fail "--help"
"$bin" --help | grep -q -- "--backend B" || fail "--help lists --backend"

out=$(mktemp)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$out"; }
trap cleanup EXIT
# session NAME=VALUE...: pc-kv with 3 workers, parked when idle, and the
# settings given; the whole client session against it; its totals in $out.
session() {
PERCORE_PIN=0 PERCORE_IDLE=park start_on_free_port "$out" listening env "$@" "$bin" -p @PORT@ \
        -t 3 -m 16 || { cat "$out"; fail "pc-kv ($*) did not start"; }

python3 - "$port" <<'PY'
import os, random, socket, sys, time
port = int(sys.argv[1])
random.seed(7)

def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s

def read_exact(s, n):
    got = b""
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b:
            break
        got += b
    return got

def ask(s, req, want):
    """Send req, expect exactly want back (and nothing more queued)."""
    s.sendall(req)
    got = read_exact(s, len(want))
    assert got == want, "%r:\n got %r\nwant %r" % (req[:200], got[:400], want[:400])

def read_until(s, end):
    got = b""
    while not got.endswith(end):
        b = s.recv(65536)
        assert b, "closed while waiting for %r, got %r" % (end, got[-200:])
        got += b
    return got

a = conn()
# Many keys: with 3 workers every shard owns some, and most requests on this
# connection go to another worker's shard and back.
keys = [b"key:%d" % i for i in range(300)]
for k in keys:
    ask(a, b"set " + k + b" %d 0 %d\r\n" % (len(k), len(k) * 2) + k + k + b"\r\n", b"STORED\r\n")
for k in keys:
    ask(a, b"get " + k + b"\r\n",
        b"VALUE " + k + b" %d %d\r\n" % (len(k), len(k) * 2) + k + k + b"\r\nEND\r\n")

# Multi-get: key order, misses left out, one END.
pick = random.sample(keys, 60) + [b"missing:%d" % i for i in range(10)]
random.shuffle(pick)
want = b"".join(b"VALUE " + k + b" %d %d\r\n" % (len(k), len(k) * 2) + k + k + b"\r\n"
                for k in pick if k.startswith(b"key:")) + b"END\r\n"
ask(a, b"get " + b" ".join(pick) + b"\r\n", want)

# gets shows cas uniques; a cas race between two connections: one wins.
conns = [conn() for _ in range(6)]
for i, k in enumerate(keys[:20]):
    x, y = conns[i % 6], conns[(i + 1) % 6]
    x.sendall(b"gets " + k + b"\r\n")
    line = read_until(x, b"END\r\n").split(b"\r\n")[0].split()
    cas = int(line[4])
    y.sendall(b"gets " + k + b"\r\n")
    assert int(read_until(y, b"END\r\n").split(b"\r\n")[0].split()[4]) == cas
    ask(x, b"cas " + k + b" 0 0 1 %d\r\nX\r\n" % cas, b"STORED\r\n")
    ask(y, b"cas " + k + b" 0 0 1 %d\r\nY\r\n" % cas, b"EXISTS\r\n")
    ask(y, b"get " + k + b"\r\n", b"VALUE " + k + b" 0 1\r\nX\r\nEND\r\n")
ask(a, b"cas nosuch 0 0 1 1\r\nZ\r\n", b"NOT_FOUND\r\n")

# noreply: nothing comes back for the quiet commands.
ask(a, b"set nr 5 0 1 noreply\r\nq\r\nadd nr 0 0 1 noreply\r\nz\r\n"
       b"append nr 0 0 1 noreply\r\nr\r\nincr cnt 1 noreply\r\ndelete gone noreply\r\n"
       b"get nr\r\n", b"VALUE nr 5 2\r\nqr\r\nEND\r\n")

# Pipelined: one write of many commands over many shards, replies in order.
req = []
for i in range(2000):
    k = random.choice(keys[100:200])
    op = random.randrange(5)
    if op == 0:
        v = b"v%d" % i
        req.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
    elif op == 1:
        req.append(b"delete %s\r\n" % k)
    elif op == 2:
        req.append(b"get " + b" ".join(random.sample(keys[100:200], 3)) + b"\r\n")
    elif op == 3:
        req.append(b"version\r\n")
    else:
        req.append(b"bogus %d\r\n" % i)
# Keys 100..199 still hold what the first loop stored.
model0 = {k: k + k for k in keys[100:200]}
# Recompute expectations against the true starting state.
state = dict(model0)
want = []
for r in req:
    parts = r.split(b"\r\n")[0].split()
    if parts[0] == b"set":
        state[parts[1]] = r.split(b"\r\n")[1]; want.append(b"STORED\r\n")
    elif parts[0] == b"delete":
        want.append(b"DELETED\r\n" if state.pop(parts[1], None) is not None else b"NOT_FOUND\r\n")
    elif parts[0] == b"get":
        def flags(x):
            return len(x) if state[x] == x + x else 0
        want.append(b"".join(b"VALUE %s %d %d\r\n%s\r\n" % (x, flags(x), len(state[x]), state[x])
                             for x in parts[1:] if x in state) + b"END\r\n")
    elif parts[0] == b"version":
        want.append(b"VERSION 1.6.0-pc-kv\r\n")
    else:
        want.append(b"ERROR\r\n")
p = conn()
ask(p, b"".join(req), b"".join(want))

# The other commands.
ask(a, b"set n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nincr n 18446744073709551615\r\n"
       b"incr n 2\r\nincr nn 1\r\nincr nr 1\r\nincr n x\r\n",
    b"STORED\r\n15\r\n0\r\n18446744073709551615\r\n1\r\nNOT_FOUND\r\n"
    b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    b"CLIENT_ERROR invalid numeric delta argument\r\n")
# A number no longer than the value it replaces is written in place,
# padded with spaces, as memcached does.
ask(a, b"touch n 100\r\ntouch nope 1\r\ngat 100 n nope\r\n",
    b"TOUCHED\r\nNOT_FOUND\r\nVALUE n 0 20\r\n1" + b" " * 19 + b"\r\nEND\r\n")
a.sendall(b"gats 0 n\r\n")
assert read_until(a, b"END\r\n").startswith(b"VALUE n 0 20 ")
ask(a, b"set e 0 -1 1\r\nx\r\nget e\r\n", b"STORED\r\nEND\r\n")
ask(a, b"replace nope 0 0 1\r\nx\r\nprepend nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\nNOT_STORED\r\n")
ask(a, b"verbosity 1\r\nverbosity\r\n", b"OK\r\nERROR\r\n")
# cache_memlimit splits a new cap over the shards as -m does; the slab and
# crawler commands pc-kv has nothing for are answered as memcached answers
# a subcommand it does not know, and so are debug builds' commands.
ask(a, b"cache_memlimit 8\r\n", b"OK\r\n")
a.sendall(b"stats\r\n")
assert b"STAT limit_maxbytes 8388608\r\n" in read_until(a, b"END\r\n")
ask(a, b"cache_memlimit 16 noreply\r\ncache_memlimit 7\r\n",
    b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n")
a.sendall(b"stats settings\r\n")
assert b"STAT maxbytes 16777216\r\n" in read_until(a, b"END\r\n")
ask(a, b"slabs automove 1\r\nslabs reassign 1 2\r\nlru_crawler crawl all\r\n"
       b"lru_crawler metadump all\r\nlru_crawler enable\r\nwatch\r\nmisbehave\r\n"
       b"debugtime 10\r\nlru mode flat\r\nshutdown\r\nversion\r\n",
    b"ERROR\r\n" * 9 + b"ERROR: shutdown not enabled\r\nVERSION 1.6.0-pc-kv\r\n")

# Errors leave the connection usable.
ask(a, b"set k 0 0 3\r\nabcd\r\nget\r\nset k 0 0 -1\r\nset k 0 0 x\r\n"
       b"delete k 9\r\n\x00\x01\x02\xff\r\n",
    # "abc" then "d\r" is a bad chunk; the "\n" left over is an empty command.
    b"CLIENT_ERROR bad data chunk\r\nERROR\r\nERROR\r\n"
    b"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"
    b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\nERROR\r\n")
ask(a, b"get " + b"x" * 251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n")
# Too large: refused, the value swallowed (even in pieces), the old value gone.
ask(a, b"set big 0 0 1\r\nb\r\n", b"STORED\r\n")
big = 1024 * 1024 + 1
a.sendall(b"set big 0 0 %d\r\n" % big)
blob = os.urandom(big) + b"\r\n"
for off in range(0, len(blob), 100000):
    a.sendall(blob[off:off + 100000])
ask(a, b"get big\r\n", b"SERVER_ERROR object too large for cache\r\nEND\r\n")
# The largest value memcached takes for a 4-byte key and flags 0: -I
# (1 MB) counts its item header (kv_mc_item_size), 59 bytes and the key.
ok = 1024 * 1024 - 59 - 4
ask(a, b"set big0 0 0 %d\r\n" % (ok + 1) + b"v" * (ok + 1) + b"\r\n",
    b"SERVER_ERROR object too large for cache\r\n")
val = b"v" * ok
ask(a, b"set big 0 0 %d\r\n" % ok + val + b"\r\n", b"STORED\r\n")
ask(a, b"get big\r\n", b"VALUE big 0 %d\r\n" % ok + val + b"\r\nEND\r\n")
# Replies larger than the connection's output cap (about 4 MB here) wait
# for the client to read, in order, rather than end the connection.
bigs = [b"big%d" % i for i in range(6)]
for i, k in enumerate(bigs):
    ask(a, b"set %s 0 0 %d\r\n" % (k, ok) + bytes([65 + i]) * ok + b"\r\n", b"STORED\r\n")
want = b"".join(b"VALUE %s 0 %d\r\n" % (k, ok) + bytes([65 + i]) * ok + b"\r\n"
                for i, k in enumerate(bigs)) + b"END\r\n"
ask(a, (b"get " + b" ".join(bigs) + b"\r\n") * 2 + b"version\r\n",
    want * 2 + b"VERSION 1.6.0-pc-kv\r\n")

# Binary garbage: errors, never a crash.
g = conn()
g.sendall(bytes(random.randrange(256) for _ in range(5000)) + b"\r\nversion\r\n")
assert read_until(g, b"VERSION 1.6.0-pc-kv\r\n")
# A line over the limit: the error, then the connection closes.
g.sendall(b"get " + b"k" * 10000)
assert read_until(g, b"CLIENT_ERROR line too long\r\n")
assert g.recv(100) == b""

# stats, flush_all, quit.
a.sendall(b"stats\r\n")
st = read_until(a, b"END\r\n")
assert b"STAT threads 3\r\n" in st and b"STAT curr_items " in st, st
assert b"STAT cas_badval 20\r\n" in st, st
ask(a, b"flush_all\r\nget key:1 key:2 key:3\r\n", b"OK\r\nEND\r\n")
ask(a, b"set after 0 0 1\r\nx\r\nflush_all noreply\r\nget after\r\n", b"STORED\r\nEND\r\n")
q = conn()
q.sendall(b"set q 0 0 1\r\nx\r\nquit\r\nget q\r\n")
assert read_until(q, b"STORED\r\n") == b"STORED\r\n"
assert q.recv(100) == b""
ask(a, b"version\r\n", b"VERSION 1.6.0-pc-kv\r\n")

# A client that shuts its write side right after its requests (printf |
# nc) still gets every reply, those from other workers' shards included,
# then the close.
for k in keys[:30]:
    ask(a, b"set " + k + b" 0 0 1\r\nh\r\n", b"STORED\r\n")
h = conn()
h.sendall(b"get " + b" ".join(keys[:30]) + b"\r\n" + b"".join(b"get " + k + b"\r\n" for k in keys[:30]))
h.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = h.recv(65536)
    if not b:
        break
    got += b
one = lambda k: b"VALUE " + k + b" 0 1\r\nh\r\n"
assert got == b"".join(one(k) for k in keys[:30]) + b"END\r\n" + \
    b"".join(one(k) + b"END\r\n" for k in keys[:30]), got[-300:]
print("client: ok")
PY

stop_pc_kv "$pid" "$out" || fail "pc-kv ($*) did not stop cleanly"
pid=
grep -q "pc-kv: workers=3 " "$out" || { cat "$out"; fail "no totals at exit"; }
}

# By default a shard is reached through its owner's mailbox alone.
session
grep -Eq " calls=[1-9][0-9]* borrowed=0$" "$out" ||
	{ grep "pc-kv: workers" "$out"; fail "a shard was lent by default"; }
# Overprovisioned, parked owners (PERCORE_IDLE=park) lent their shards:
# some requests for another worker's keys ran on the borrowed shard, the
# rest went by call.
session PERCORE_OVERPROVISIONED=1
grep -Eq " calls=[1-9][0-9]* borrowed=[1-9]" "$out" ||
	{ grep "pc-kv: workers" "$out"; fail "no request both called and borrowed"; }

# With -A the shutdown command stops the server, as memcached's: the
# connection closes unanswered and pc-kv exits 0 with its totals.
PERCORE_PIN=0 start_on_free_port "$out" listening "$bin" -p @PORT@ -t 2 -m 64 -I 8m -A ||
        { cat "$out"; fail "pc-kv -A did not start"; }
python3 - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"shutdown now\r\ncache_memlimit 8\r\nset k 0 0 1\r\nx\r\n")
want = (b"CLIENT_ERROR invalid shutdown mode\r\n"
        b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\nSTORED\r\n")
got = b""
while len(got) < len(want):
    got += s.recv(4096)
assert got == want, got
s.sendall(b"shutdown\r\nget k\r\n")
assert s.recv(4096) == b"", "replied after shutdown"
PY
wait "$pid" || fail "pc-kv -A exited $? after shutdown"
pid=
grep -q "pc-kv: workers=2 " "$out" ||
        { cat "$out"; fail "pc-kv -A: no totals after shutdown"; }
echo "pc-kv: ok"
