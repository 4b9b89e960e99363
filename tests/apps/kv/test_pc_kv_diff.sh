#!/usr/bin/env bash
# pc-kv against Debian's memcached 1.6, byte for byte: the same requests go
# to both and the replies must be identical (cas uniques and the version
# string masked, stats numbers not compared). Keys with every byte value
# memcached takes (all but NUL, '\n' and ' '), 250 and 251 bytes long, in
# every command, with noreply, in multi-gets over both of pc-kv's shards;
# the line's edge cases (NUL, '\r' before '\n', runs of spaces); numbers
# as memcached's strtol() reads them; the binary protocol's keys. Then
# libmemcached's memcaslap, whose keys carry control and high bytes, runs
# for 2 s against pc-kv: no errors, and pc-kv counts its sets and hits.
#
# Left out on purpose: a binary frame refused as EINVAL (memcached closes
# the connection after the reply, so only the reply is compared).
# test_pc_kv_meta.py has incr on padded values and with noreply. Two of memcached's timing quirks are kept out of the way too:
# a get with a key too long drops the replies memcached has not yet sent
# for earlier pipelined requests (so such a get goes alone), and a value
# too large is answered only once all of it has arrived.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
mc=$(command -v memcached || true)
[ -n "$mc" ] || { echo "SKIP: memcached not installed"; exit 77; }
slap=$(command -v memcaslap || command -v memaslap || true)
[ -n "$slap" ] || fail "memcaslap not installed (libmemcached-tools)"
"$mc" -V

mc_out=$(mktemp)
kv_out=$(mktemp)
slap_out=$(mktemp)
mc_pid=
kv_pid=
cleanup() {
        [ -n "$mc_pid" ] && kill "$mc_pid" 2>/dev/null
        [ -n "$kv_pid" ] && kill "$kv_pid" 2>/dev/null
        rm -f "$mc_out" "$kv_out" "$slap_out"
}
trap cleanup EXIT

# memcached says "server listening" only at -vv; as root it wants -u.
user=()
[ "$(id -u)" = 0 ] && user=(-u root)
start_on_free_port "$mc_out" "server listening" "$mc" -p @PORT@ -U 0 -l 127.0.0.1 -vv \
        ${user[@]+"${user[@]}"} || { cat "$mc_out"; fail "memcached did not start"; }
mc_pid=$pid
mc_port=$port
PERCORE_PIN=0 PERCORE_IDLE=park start_on_free_port "$kv_out" listening "$bin" -p @PORT@ \
        -l 127.0.0.1 -t 2 || { cat "$kv_out"; fail "pc-kv did not start"; }
kv_pid=$pid
kv_port=$port

python3 - "$mc_port" "$kv_port" <<'PY'
import random, socket, struct, sys
random.seed(20240601)
ports = {"memcached": int(sys.argv[1]), "pc-kv": int(sys.argv[2])}
steps = 0


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s


class Server:
    def __init__(self, name, port):
        self.name, self.port = name, port
        self.s = connect(port)
        self.s.sendall(b"version\r\n")
        self.sentinel = read_until(self.s, b"\r\n")
        assert self.sentinel.startswith(b"VERSION "), self.sentinel
        self.cas = {}

    def exchange(self, data):
        """Send data, then "version"; the replies up to the version's."""
        self.s.sendall(data + b"version\r\n")
        return read_until(self.s, self.sentinel)[:-len(self.sentinel)]


def read_until(s, end):
    got = b""
    while not got.endswith(end):
        try:
            b = s.recv(1 << 20)
        except socket.timeout:
            raise AssertionError("timed out on port %d; so far %r" % (s.getpeername()[1],
                                                                      got[-300:]))
        assert b, "closed; so far %r" % got[-300:]
        got += b
    return got


def parse(raw):
    """The reply stream as entries: a VALUE block or one other line."""
    out, i = [], 0
    while i < len(raw):
        j = raw.find(b"\r\n", i)  # a key never holds "\r\n"
        assert j >= 0, "reply ends mid-line: %r" % raw[i:i + 300]
        line = raw[i:j]
        i = j + 2
        if line.startswith(b"VALUE "):
            f = line.split(b" ")
            assert len(f) in (4, 5), line
            n = int(f[3])
            out.append(("value", f[1], f[2], f[3], f[4] if len(f) == 5 else None,
                        raw[i:i + n + 2]))
            i += n + 2
        elif line.startswith(b"VERSION "):
            out.append(("line", b"VERSION (masked)"))
        else:
            out.append(("line", line))
    return out


def masked(raw):
    return [e[:4] + (e[4] is not None, e[5]) if e[0] == "value" else e for e in parse(raw)]


servers = [Server(n, p) for n, p in ports.items()]


def step(what, req):
    """req: bytes, or a function of the server (for its own cas values)."""
    global steps
    steps += 1
    raws = [srv.exchange(req(srv) if callable(req) else req) for srv in servers]
    for srv, raw in zip(servers, raws):
        for e in parse(raw):
            if e[0] == "value" and e[4] is not None:
                srv.cas[e[1]] = int(e[4])
    if masked(raws[0]) != masked(raws[1]):
        shown = req(servers[0]) if callable(req) else req
        print("DIFF in %s\n request:   %r\n memcached: %r\n pc-kv:     %r" %
              (what, shown[:600], raws[0][:600], raws[1][:600]), file=sys.stderr)
        sys.exit(1)
    return raws


def read_all(s):
    got = b""
    while True:
        b = s.recv(1 << 20)
        if not b:
            return got
        got += b


def fresh(what, req, read):
    """@req on a fresh connection to each server; read(sock, srv) gives
    what its replies come to, and the two must be equal."""
    global steps
    steps += 1
    got = []
    for srv in servers:
        s = connect(srv.port)
        s.sendall(req)
        got.append(read(s, srv))
        s.close()
    if got[0] != got[1]:
        print("DIFF in %s\n request: %r\n memcached: %r\n pc-kv:     %r" %
              (what, req[:300], got[0][:600], got[1][:600]), file=sys.stderr)
        sys.exit(1)


def oneshot(what, req, until=None):
    """Requests that leave the connection unusable: the replies up to
    @until, or (None) until the server closes."""
    fresh(what, req, lambda s, srv: read_until(s, until) if until else read_all(s))


def cas_cmd(key, data, extra=b""):
    return lambda srv: b"cas %s 0 0 %d %d%s\r\n%s\r\n" % (key, len(data), srv.cas[key], extra,
                                                        data)


# Every byte memcached takes in a key, alone, first, inside and last, with
# every command on it.
ok_bytes = [b for b in range(256) if b not in (0x00, 0x0a, 0x20)]
for b in ok_bytes:
    c = bytes([b])
    keys = [c, c + b"key", b"k" + c + b"y", b"key" + c, c * 7]
    req = b""
    for k in keys:
        req += b"set %s %d 0 2\r\n10\r\n" % (k, b)
    req += b"get " + b" ".join(keys) + b"\r\n" + b"gets " + b" ".join(keys) + b"\r\n"
    step("keys with byte 0x%02x: set, get" % b, req)
    k = keys[2]
    step("byte 0x%02x: cas" % b, cas_cmd(k, b"11"))
    step("byte 0x%02x: stale cas" % b, lambda srv, k=k: b"cas %s 0 0 2 %d\r\n12\r\n" %
         (k, srv.cas[k]))
    k, k0, k3, k4 = keys[1], keys[0], keys[3], keys[4]
    step("byte 0x%02x: the other commands" % b, b"\r\n".join([
        b"incr %s 5" % k, b"decr %s 3" % k, b"incr %s 1 noreply" % k, b"decr %s 1 noreply" % k,
        b"append %s 0 0 1\r\na" % k, b"prepend %s 0 0 1\r\np" % k,
        b"replace %s 7 0 3\r\nabc" % k, b"add %s 0 0 1\r\nx" % k, b"touch %s 100" % k,
        b"gat 0 %s" % k, b"gats 100 %s %s" % (k, k3),
        b"append %s 0 0 1 noreply\r\nA" % k, b"prepend %s 0 0 1 noreply\r\nP" % k,
        b"set %s 1 0 1 noreply\r\nv" % k0, b"add %s 1 0 1 noreply\r\nw" % k0,
        b"touch %s 0 noreply" % k4, b"get %s %s" % (k, k0), b"delete %s" % k0,
        b"delete %s" % k0, b"delete %s noreply" % keys[2], b"delete %s 0" % k3,
        b"delete %s 0 noreply" % k4, b"get " + b" ".join(keys)]) + b"\r\n")

# 64-byte keys like memcaslap's, from all those bytes, over both shards:
# multi-gets, gets and gats of 40 keys at a time, misses among them.
alphabet = bytes(ok_bytes)
keys = [bytes(random.choice(alphabet) for _ in range(64)) for _ in range(400)]
vals = {k: bytes(random.choice(b"abcdefghij") for _ in range(random.randint(0, 1100)))
        for k in keys}
for i in range(0, len(keys), 40):
    step("set 40 random keys", b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k, j, len(vals[k]), vals[k])
                                        for j, k in enumerate(keys[i:i + 40])))
for i in range(30):
    pick = random.sample(keys, 40) + [bytes(random.choice(alphabet) for _ in range(64))
                                      for _ in range(5)]
    random.shuffle(pick)
    cmd = random.choice([b"get", b"gets", b"gat 0", b"gats 1000"])
    step("multi-get over shards", cmd + b"  " + b"   ".join(pick) + b" \r\n")
step("noreply sets then a get", b"".join(b"set %s 0 0 3 noreply\r\nnew\r\n" % k for k in keys[:50]) +
     b"get " + b" ".join(keys[:50]) + b"\r\n")
step("noreply deletes", b"".join(b"delete %s noreply\r\n" % k for k in keys[:25]) +
     b"get " + b" ".join(keys[:50]) + b"\r\n")

# 250 bytes is the longest key, in every command; 251 is refused. A refused
# storage line's data block is read as a command (here "delete dk").
k250 = bytes(random.choice(alphabet) for _ in range(250))
k251 = bytes(random.choice(alphabet) for _ in range(251))
step("250-byte key", b"set %s 0 0 1\r\n5\r\nget %s\r\nappend %s 0 0 1\r\n0\r\nincr %s 1\r\n"
     b"touch %s 10\r\ngets %s %s\r\n" % ((k250,) * 7))
step("250-byte key: cas", cas_cmd(k250, b"z"))
step("250-byte key: delete", b"get %s %s\r\ndelete %s\r\ndelete %s\r\n" % ((k250,) * 4))
for cmd in [b"set", b"add", b"replace", b"append", b"prepend"]:
    step("251-byte key: " + cmd.decode(), b"set dk 0 0 1\r\nd\r\n%s %s 0 0 9\r\ndelete dk\r\n"
         b"%s %s 0 0 9 noreply\r\ndelete dk\r\n%s %s 0 0 z\r\n%s %s 0 0 2000000\r\n"
         % (cmd, k251, cmd, k251, cmd, k251, cmd, k251))
step("251-byte key: cas", b"cas %s 0 0 1 5\r\nx\r\ncas %s 0 0 1 5 noreply\r\nx\r\n" % (k251, k251))
for cmd in [b"delete %s", b"delete %s noreply", b"delete %s 0", b"delete %s 5", b"incr %s 1",
            b"decr %s 1 noreply", b"incr %s x", b"touch %s 1", b"touch %s x", b"touch %s 1 noreply",
            b"delete %s 0 noreply"]:
    step("251-byte key: " + (cmd % b"K").decode(), cmd % k251 + b"\r\n")
# memcached answers a get with a key too long with the error alone: each on
# its own, since it also drops what it had queued for earlier requests.
step("set a", b"set a 0 0 1\r\nx\r\n")
for line in [b"get %s", b"get a %s", b"get %s a", b"gets a a %s a", b"gat 0 a %s",
             b"gats 0 %s", b"gat x %s", b"get a b c d e f g h i j k l m n o p q r s t u v w x y %s"]:
    step("251-byte key in " + (line % b"K").decode(), line % k251 + b"\r\n")
step("250-byte keys in a multi-get", b"set %s 0 0 1\r\n1\r\nget %s a %s\r\n" % ((k250,) * 3))

# The line: NUL ends it (memcached reads a C string), one '\r' before '\n'
# is dropped (a second stays in the key), tokens split on ' ' only, runs of
# them, leading and trailing ones.
step("NUL", b"set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\nget a\x00 b\r\nget a \x00\r\n"
     b"get\x00 a\r\n\x00\r\n\x00get a\r\nset c 0 0 1\x00junk\r\nz\r\nget c\r\n"
     b"set d 0 0 1 noreply\x00zz\r\nd\r\nget d\r\nset e\x00f 0 0 1\r\ne\r\n"
     b"delete a\x00 noreply\r\nincr c\x00 1\r\ntouch c\x00 1\r\nget a b c d\r\n")
step("'\\r' before '\\n'", b"set r\r 0 0 1\r\n1\r\nget r\r\r\nget r\r\nset r 0 0 1\r\r\n2\r\n"
     b"get r r\r\r\nget r\r r\r\nincr r 1\r\r\ntouch r\r 10\r\r\ndelete r\r\r\nget r\r\r\n"
     b"\r\n\r\r\n\n\r\r\r\n")
step("control bytes inside", b"set \t 0 0 1\r\nt\r\nset a\tb 0 0 1\r\nu\r\nset \x0b\x0c 0 0 1\r\nv\r\n"
     b"set a\rb 0 0 1\r\nw\r\nset \x7f\xff\x80 0 0 1\r\nx\r\n"
     b"get \t a\tb \x0b\x0c a\rb \x7f\xff\x80 \t\r\nget a\tb\t\r\n")
step("spaces", b"set  sp   0  0  1  \r\nx\r\n   get    sp     \r\n  delete   sp  \r\n"
     b"get \r\nget  \r\nset  0 0 1\r\nx\r\n   \r\n \r\nset sp 0 0 1\r\nx\r\n"
     b"incr  sp  1  \r\ntouch   sp   10   noreply   \r\ngets sp  sp\r\n")
step("empty and missing keys", b"get\r\ngets\r\ngat\r\ngat 10\r\ngats 10  \r\ndelete\r\n"
     b"incr\r\nincr k\r\ntouch k\r\nset\r\nset k\r\ncas k 0 0 1\r\nx\r\n")
many = [b"m%d" % i for i in range(60)]
step("a multi-get of 60 keys (more than memcached's 24 tokens)",
     b"".join(b"set %s 0 0 2\r\n%s\r\n" % (k, k[-2:].rjust(2, b"_")) for k in many[::3]) +
     b"get " + b" ".join(many) + b"\r\ngets " + b" ".join(many[::-1] + many[:5]) + b"\r\n")

# Numbers, read as strtoul()/strtol()/strtoull() read them.
step("flags", b"set f +7 0 1\r\nx\r\nset g \t7 0 1\r\nx\r\nset h 7\tjunk 0 1\r\nx\r\n"
     b"set i -0 0 1\r\nx\r\nset j 4294967296 0 1\r\nx\r\nset k 18446744073709551615 0 1\r\nx\r\n"
     b"set l -18446744073709551615 0 1\r\nx\r\nset m -1 0 1\r\nx\r\nset n 1x 0 1\r\nx\r\n"
     b"set o 18446744073709551616 0 1\r\nx\r\nset p + 0 1\r\nx\r\nset q \x0b 0 1\r\nx\r\n"
     b"get f g h i j k l m n o p q\r\n")
step("exptime", b"set e1 0 -2147483649 1\r\nx\r\nset e2 0 2147483648 1\r\nx\r\n"
     b"set e3 0 4294967396 1\r\nx\r\nset e4 0 -1 1\r\nx\r\nset e5 0 +100 1\r\nx\r\n"
     b"set e6 0 9223372036854775808 1\r\nx\r\nset e7 0 -9223372036854775808 1\r\nx\r\n"
     b"set e8 0 \r100 1\r\nx\r\nget e1 e2 e3 e4 e5 e6 e7 e8\r\n")
step("bytes", b"set b1 0 0 +1\r\nx\r\nset b2 0 0 1\x0c\r\nx\r\nset b3 0 0 4294967297\r\nx\r\n"
     b"set b4 0 0 01\r\nx\r\nset b5 0 0 -0\r\n\r\nset b6 0 0 1\n\r\nx\r\n"
     b"set b7 0 0 2147483646\r\nset b8 0 0 -1\r\nset b9 0 0 2000000\r\n" + b"v" * 2000000 +
     b"\r\nset b9 0 0 2000000 noreply\r\n" + b"v" * 2000000 + b"\r\nget b1 b2 b3 b4 b5 b6 b9\r\n")
step("gets for cas numbers", b"set c1 0 0 1\r\nx\r\ngets c1\r\n")
step("cas numbers", lambda srv: b"cas c1 0 0 1 +%d\r\ny\r\ncas c1 0 0 1 -0\r\nz\r\n"
     b"cas c1 0 0 1 -1\r\nz\r\ncas c1 0 0 1 18446744073709551616\r\nz\r\n"
     b"cas c1 0 0 1 %d\tjunk\r\nz\r\ncas c1 0 0 1 noreply\r\nz\r\nget c1\r\n" %
     (srv.cas[b"c1"], srv.cas[b"c1"]))
step("delta", b"set n 0 0 2\r\n10\r\nincr n +5\r\nincr n -0\r\nincr n \t3\r\nincr n 2\x0b\r\n"
     b"decr n 1\tjunk\r\nincr n -1\r\nincr n 18446744073709551616\r\nincr n 1x\r\nget n\r\n"
     b"incr n 18446744073709551615\r\nincr n -18446744073709551615\r\nget n\r\n")
step("touch, gat exptime", b"set t 0 0 1\r\nx\r\ntouch t +100\r\ntouch t 100\rjunk\r\n"
     b"touch t x\r\ntouch t 1x\r\ngat x t\r\ngat + t\r\ngat -0 t\r\ngats \t0 t\r\n"
     b"touch t 0 noreply\r\ntouch t x noreply\r\ngat -1 t\r\nget t\r\n")
step("verbosity", b"verbosity 1\r\nverbosity 4294967296\r\nverbosity -1\r\nverbosity +1\r\n"
     b"verbosity x\r\nverbosity 1 2\r\nverbosity 1 noreply\r\nverbosity x noreply\r\n"
     b"verbosity noreply\r\nverbosity\r\nverbosity 1 2 3\r\nverbosity 0\r\n")
step("flush_all", b"set fa 0 0 1\r\nx\r\nflush_all\r\nget fa\r\nset fa 0 0 1\r\nx\r\n"
     b"flush_all 0 x\r\nget fa\r\nflush_all x\r\nflush_all x y\r\nflush_all x noreply\r\n"
     b"flush_all noreply\r\nflush_all 0 noreply\r\nflush_all 1 2 3\r\nflush_all noreply 5\r\n"
     b"flush_all +0\r\n")

# Token counts and noreply as memcached counts them.
step("token counts", b"set n 0 0 1\r\n5\r\nincr n 1 2\r\ndecr n 1 x\r\ntouch n 1 2\r\nget n\r\n"
     b"delete n 0 x\r\ndelete n x\r\ndelete n noreply noreply\r\ndelete n 0 noreply extra\r\n"
     b"set k 0 0 1 1\r\nx\r\nset k 0 0 1 noreply x\r\nx\r\nincr n 1 noreply x\r\n"
     b"cas k 0 0 1 1 2 3\r\nx\r\nset k 0 0 1 a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n"
     b"get k n\r\n")
step("noreply refusals", b"set k 0 0 z noreply\r\nset k 0 0 noreply\r\nx\r\nincr k x noreply\r\n"
     b"touch k x noreply\r\nset k 0 0 1 noreply\r\nab\r\nflush_all x noreply\r\n"
     b"cas k 0 0 1 x noreply\r\nset noreply 0 0 1\r\nn\r\ndelete noreply\r\nget noreply\r\n"
     b"delete k 5 noreply\r\nset k 0 0 1\r\nx\r\nappend k 0 0 1 noreply\r\nyz\r\nget k\r\n")
step("unknown commands", b"bogus\r\nGET k\r\nx\r\n\x80\xff\x01\x02\r\ngetx k\r\nsetx k 0 0 1\r\n")

# The numbers are each server's own: only the form is compared. memcached
# ignores what follows "version".
for srv in servers:
    srv.s.sendall(b"stats\r\n")
    st = read_until(srv.s, b"END\r\n").split(b"\r\n")[:-2]
    assert st and all(l.startswith(b"STAT ") for l in st), (srv.name, st[:5])
    assert srv.exchange(b"version x y\r\n") == srv.sentinel, srv.name

oneshot("quit", b"set q 0 0 1\r\nx\r\nquit\r\nget q\r\n")

# The binary protocol: a key is any bytes, 1..250 of them.
def frame(op, key=b"", extras=b"", value=b"", opaque=0, cas=0):
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0,
                       len(extras) + len(key) + len(value), opaque, cas) + extras + key + value


def frames(raw):
    out = []
    while len(raw) >= 24:
        n = struct.unpack(">I", raw[8:12])[0]
        assert len(raw) >= 24 + n, raw
        out.append(raw[:16] + b"(cas)" + raw[24:24 + n])  # the cas is each server's own
        raw = raw[24 + n:]
    assert raw == b"", raw
    return out


def opaques(raw):
    """The opaque of each whole frame in raw."""
    seen = []
    while len(raw) >= 24 and len(raw) >= 24 + struct.unpack(">I", raw[8:12])[0]:
        seen.append(struct.unpack(">I", raw[12:16])[0])
        raw = raw[24 + struct.unpack(">I", raw[8:12])[0]:]
    return seen


def bin_step(what, req, until_opaque):
    """Binary frames up to the one with @until_opaque, cas values masked."""
    def read(s, srv):
        raw = b""
        while until_opaque not in opaques(raw):
            b = s.recv(1 << 20)
            assert b, "%s: %s closed early: %r" % (what, srv.name, raw[-200:])
            raw += b
        return frames(raw)
    fresh("binary " + what, req, read)


ext = struct.pack(">II", 5, 0)
bkeys = [bytes([b]) for b in range(256)] + [bytes(range(250)), bytes(range(6, 256)),
                                            b"a b\r\nc\x00d", bytes(range(255, 5, -1)),
                                            alphabet[:250], alphabet[-250:]]
req = b""
for i, k in enumerate(bkeys):
    req += frame(0x01, k, ext, b"v%d" % i, opaque=i)                       # set
    req += frame(0x00, k, opaque=1000 + i) + frame(0x0c, k, opaque=2000 + i)  # get, getk
    req += frame(0x05, k[:249] + b"#", struct.pack(">QQI", 1, 7, 0), opaque=3000 + i)  # incr
    req += frame(0x1c, k, struct.pack(">I", 100), opaque=4000 + i)         # touch
    req += frame(0x1d, k, struct.pack(">I", 0), opaque=5000 + i)           # gat
    req += frame(0x04, k, opaque=6000 + i) + frame(0x00, k, opaque=7000 + i)  # delete, get
req += frame(0x0a, opaque=99999)
bin_step("keys of every byte, every command", req, 99999)
# Binary keys without NUL, '\n' or ' ' read back over ASCII.
ak = [k for k in bkeys if k and not set(k) & {0, 10, 32}]
bin_step("set for ASCII", b"".join(frame(0x01, k, ext, b"b", opaque=i) for i, k in enumerate(ak)) +
         frame(0x0a, opaque=99999), 99999)
for i in range(0, len(ak), 30):
    step("binary keys over ASCII", b"get " + b" ".join(ak[i:i + 30]) + b"\r\n")
for op in [0x00, 0x01, 0x04, 0x05, 0x1c]:
    extras = {0x01: ext, 0x05: struct.pack(">QQI", 1, 0, 0), 0x1c: struct.pack(">I", 0)}.get(op, b"")
    bin_step("251-byte key, opcode 0x%02x" % op, frame(op, bytes(251), extras, b"v" if op == 1 else b"",
                                                       opaque=42), 42)
bin_step("empty key", frame(0x00, b"", opaque=42), 42)
print("diff: %d steps identical" % steps)
PY

# memcaslap, libmemcached's load generator: 64-byte keys with control and
# high bytes, 9 gets to 1 set, values near 1 KB, a tenth of them verified.
timeout 30 "$slap" -s "127.0.0.1:$kv_port" -t 2s -T 1 -c 16 -v 0.1 >"$slap_out" 2>&1 ||
        { cat "$slap_out"; fail "memcaslap exited $?"; }
# It prints each error reply it gets ("<fd CLIENT_ERROR ...") and goes on.
! grep -q "ERROR" "$slap_out" || { head -20 "$slap_out"; fail "memcaslap got errors"; }
num() { sed -n "s/^$1: \([0-9]*\)$/\1/p" "$slap_out"; }
if [ "$(num cmd_get)" -eq 0 ] || [ "$(num cmd_set)" -eq 0 ]; then
        cat "$slap_out"
        fail "memcaslap ran nothing"
fi
[ "$(num verify_failed)" = 0 ] || { cat "$slap_out"; fail "memcaslap read back other values"; }
python3 - "$kv_port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"stats\r\n")
got = b""
while not got.endswith(b"END\r\n"):
    b = s.recv(65536)
    assert b, got
    got += b
st = {l.split(b" ")[1]: l.split(b" ")[2] for l in got.split(b"\r\n") if l.startswith(b"STAT ")}
assert int(st[b"cmd_set"]) > 0 and int(st[b"get_hits"]) > 0, st
print("memcaslap: cmd_set %s get_hits %s" % (st[b"cmd_set"].decode(), st[b"get_hits"].decode()))
PY
grep -E "^(cmd_get|cmd_set|get_misses|verify_failed):" "$slap_out"

stop_pc_kv "$kv_pid" "$kv_out" || fail "pc-kv did not stop cleanly"
kv_pid=
echo "pc-kv diff: ok"
