#!/usr/bin/env python3
"""pc-kv against Debian's memcached 1.6, byte for byte, for what
test_pc_kv_diff.sh leaves out: the meta commands (mg ms md ma me mn and
every flag memcached 1.6.18 takes), pipelines in quiet mode ended by mn,
refusals in memcached's words, the item limit at its edge, an incr after
an mg of the same batch, the admin commands, the classic commands' last
differences, binary sessions with quiet requests, and meta commands over
UDP. Then random meta sessions (a fixed seed; PC_KV_META_SEED and
PC_KV_META_ROUNDS explore more) over keys on both of pc-kv's shards.
Meanwhile, on a server pair of their own, l and la over 12 seconds.

The same bytes go to both servers, each on its own connection, and the
replies must be equal except for what is each server's own: cas values
(masked; a request that needs one gets each server's), and the seconds of
t, l and me's exp and la, which may differ by one when the two servers'
clocks tick apart (l and la: see lru_times() and random_sessions()).
Exits 77 (skipped) without memcached.

usage: test_pc_kv_meta.py PC_KV_BINARY
"""
import base64
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

PC_KV = sys.argv[1]
steps = 0


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def start(argv, banner, log):
    """Run argv (with @PORT@ for a random port) until its output shows
    banner; five tries on other ports. Returns (process, port)."""
    for _ in range(5):
        port = random.randint(20000, 39999)
        f = open(log, "w+b")
        p = subprocess.Popen([a.replace("@PORT@", str(port)) for a in argv], stdout=f,
                             stderr=subprocess.STDOUT)
        for _ in range(100):
            f.seek(0)
            if banner in f.read():
                return p, port
            if p.poll() is not None:
                break
            time.sleep(0.05)
        p.kill()
        p.wait()
    f.seek(0)
    fail("%s did not start: %r" % (argv[0], f.read()[-500:]))


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s


def read_until(s, end):
    got = b""
    while not got.endswith(end):
        try:
            b = s.recv(1 << 20)
        except socket.timeout:
            raise AssertionError("timed out; so far %r" % got[-300:])
        assert b, "closed; so far %r" % got[-300:]
        got += b
    return got


def read_all(s):
    got = b""
    while True:
        b = s.recv(1 << 20)
        if not b:
            return got
        got += b


class Server:
    def __init__(self, name, port):
        self.name, self.port = name, port
        self.s = connect(port)
        self.s.sendall(b"version\r\n")
        self.sentinel = read_until(self.s, b"\r\n")
        self.cas = {}

    def exchange(self, data):
        """Send data, then "version": the replies up to the version's."""
        self.s.sendall(data + b"version\r\n")
        return read_until(self.s, self.sentinel)[:-len(self.sentinel)]


# ---- replies as entries, with what is each server's own masked -----------------------

def entries(raw):
    """The reply stream as (kind, fields) entries: a line, or a line with
    its data block (VALUE, VA)."""
    out, i = [], 0
    while i < len(raw):
        j = raw.find(b"\r\n", i)
        assert j >= 0, "reply ends mid-line: %r" % raw[i:i + 300]
        line = raw[i:j]
        i = j + 2
        data = None
        f = line.split(b" ")
        if f[0] in (b"VALUE", b"VA"):
            n = int(f[3] if f[0] == b"VALUE" else f[1])
            data = raw[i:i + n + 2]
            i += n + 2
        out.append((line, data))
    return out


def fields(line):
    """A line's tokens, cas values masked, t and l (and ME's exp and la)
    kept as numbers, compared within a tolerance."""
    f = line.split(b" ")
    if f[0] == b"ME":
        out = f[:2]
        for t in f[2:]:
            name, _, val = t.partition(b"=")
            if name == b"cas":
                out.append(b"cas=(cas)")
            elif name in (b"exp", b"la") and re.fullmatch(rb"-?\d+", val):
                out.append((name, int(val)))
            else:
                out.append(t)
        return out
    if f[0] == b"VALUE":
        return f[:4] + [b"(cas)"] * (len(f) > 4)
    if f[0] in (b"HD", b"VA", b"EN", b"NS", b"EX", b"NF"):
        out = []
        for t in f:
            if re.fullmatch(rb"c\d+", t):
                out.append(b"c(cas)")
            elif re.fullmatch(rb"[tl]\d+", t):
                out.append((t[:1], int(t[1:])))
            else:
                out.append(t)
        return out
    return f


def same_entry(x, y, slack=1, lru_slack=1):
    (la, da), (lb, db) = x, y
    fa, fb = fields(la), fields(lb)
    if da != db or len(fa) != len(fb):
        return False
    for u, v in zip(fa, fb):
        if isinstance(u, tuple) and isinstance(v, tuple):
            # slack: seconds t and exp may differ by; l and la too, unless
            # lru_slack says otherwise (None: any).
            lim = lru_slack if u[0] in (b"l", b"la") else slack
            if u[0] != v[0] or (lim is not None and abs(u[1] - v[1]) > lim):
                return False
        elif u != v:
            return False
    return True


def same(a, b, slack=1, lru_slack=1):
    ea, eb = entries(a), entries(b)
    return len(ea) == len(eb) and all(same_entry(x, y, slack, lru_slack)
                                      for x, y in zip(ea, eb))


def first_diff(a, b, slack=1, lru_slack=1):
    """The first replies that differ, as (memcached's, pc-kv's), and where."""
    for i, (x, y) in enumerate(zip(entries(a), entries(b))):
        if not same_entry(x, y, slack, lru_slack):
            return i, x[0][:300], y[0][:300]
    return len(entries(a)), len(entries(b))


def learn_cas(srv, raw):
    """Each server's cas per key, from its replies that carry k and c."""
    for line, _ in entries(raw):
        f = line.split(b" ")
        if f[0] == b"VALUE" and len(f) == 5:
            srv.cas[f[1]] = int(f[4])
        keys = [t[1:] for t in f[1:] if t.startswith(b"k")]
        cas = [t[1:] for t in f[1:] if re.fullmatch(rb"c\d+", t)]
        if f[0] in (b"HD", b"VA") and keys and cas:
            key = keys[0]
            if b"b" in f[1:]:
                key = base64.b64decode(key)
            srv.cas[key] = int(cas[0])


def step(what, req, on=None, slack=1, lru_slack=1):
    """req: bytes, or a function of the server (for its own cas values);
    on: the servers' connections (the main ones unless given)."""
    global steps
    steps += 1
    on = on or servers
    raws = [srv.exchange(req(srv) if callable(req) else req) for srv in on]
    for srv, raw in zip(on, raws):
        learn_cas(srv, raw)
    if not same(raws[0], raws[1], slack, lru_slack):
        shown = req(on[0]) if callable(req) else req
        fail("%s\n request:   %r\n memcached: %r\n pc-kv:     %r\n first difference: %r" %
             (what, shown[:800], raws[0][:800], raws[1][:800],
              first_diff(raws[0], raws[1], slack, lru_slack)))
    return raws


def fresh(what, req, read):
    """req on a fresh connection to each; read(sock) gives the replies."""
    global steps
    steps += 1
    got = []
    for srv in servers:
        s = connect(srv.port)
        s.sendall(req)
        got.append(read(s))
        s.close()
    if got[0] != got[1]:
        fail("%s\n request: %r\n memcached: %r\n pc-kv:     %r" %
             (what, req[:300], got[0][:600], got[1][:600]))


def cas_of(key):
    return lambda srv: srv.cas[key]


# ---- binary frames --------------------------------------------------------------------

def frame(op, key=b"", extras=b"", value=b"", opaque=0, cas=0):
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0,
                       len(extras) + len(key) + len(value), opaque, cas) + extras + key + value


def frames(raw):
    """The response frames, each server's cas masked."""
    out = []
    while len(raw) >= 24:
        n = struct.unpack(">I", raw[8:12])[0]
        assert len(raw) >= 24 + n, raw
        out.append(raw[:16] + b"(cas)" + raw[24:24 + n])
        raw = raw[24 + n:]
    assert raw == b"", raw
    return out


def bin_step(what, req, until_opaque):
    """Binary frames up to the one with @until_opaque, compared."""
    def read(s):
        raw = b""
        while True:
            seen, rest = [], raw
            while len(rest) >= 24 and len(rest) >= 24 + struct.unpack(">I", rest[8:12])[0]:
                seen.append(struct.unpack(">I", rest[12:16])[0])
                rest = rest[24 + struct.unpack(">I", rest[8:12])[0]:]
            if until_opaque in seen:
                return frames(raw)
            b = s.recv(1 << 20)
            assert b, "%s: closed early: %r" % (what, raw[-200:])
            raw += b
    fresh("binary " + what, req, read)


def ext(flags=0, exp=0):
    return struct.pack(">II", flags, exp)


def arith_ext(delta, initial, exp=0):
    return struct.pack(">QQI", delta, initial, exp)


# ---- UDP: memcached's frame header ------------------------------------------------------

def udp_replies(srv, payload, rid):
    """@payload (ending in mn) in one datagram: the replies' payloads in
    order, up to MN's, each datagram's sequence number and count, and the
    responses (a datagram of sequence 0 starts one) as the bytes of each."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    s.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + payload, ("127.0.0.1", srv.port))
    got, frames, responses = b"", [], []
    try:
        while not got.endswith(b"MN\r\n"):
            d = s.recv(65536)
            assert len(d) >= 8 and len(d) <= 1400, "datagram of %d bytes" % len(d)
            h = struct.unpack(">HHHH", d[:8])
            assert h[0] == rid and h[3] == 0, h
            frames.append(h[1:3])
            if h[1] == 0:
                responses.append(b"")
            responses[-1] += d[8:]
            got += d[8:]
    except socket.timeout:
        raise AssertionError("UDP: %s timed out; so far %r" % (srv.name, got[-300:]))
    finally:
        s.close()
    return got, frames, responses


def udp_step(what, payload):
    """The same datagram to both servers: their replies' datagrams must be
    numbered alike (each response from 0, in datagrams of its own), and
    each response compares as step() compares replies."""
    global steps
    steps += 1
    rid = steps & 0xffff
    got = [udp_replies(srv, payload, rid) for srv in servers]
    raws, resps = [g[0] for g in got], [g[2] for g in got]
    if got[0][1] != got[1][1]:
        fail("UDP %s: datagrams (sequence, count)\n request:   %r\n memcached: %r\n"
             " pc-kv:     %r" % (what, payload[:800], got[0][1], got[1][1]))
    if not all(same(a, b) for a, b in zip(resps[0], resps[1])):
        fail("UDP %s\n request:   %r\n memcached: %r\n pc-kv:     %r" %
             (what, payload[:800], resps[0][:20], resps[1][:20]))
    if not same(raws[0], raws[1]):
        fail("UDP %s\n request:   %r\n memcached: %r\n pc-kv:     %r" %
             (what, payload[:800], raws[0][:800], raws[1][:800]))


def udp_sessions():
    udp_step("meta commands", b"ms u:1 2 T0 F3\r\nhi\r\nmg u:1 v t f s k O5\r\nmg u:nope\r\n"
             b"mg u:nope q\r\nmg u:nope k q O1\r\nma u:n N0 J3 v\r\nma u:n v MD\r\nmd u:1 q\r\n"
             b"mg u:1\r\nme u:n\r\nmd u:1\r\nmn\r\n")
    udp_step("meta refusals", b"mg\r\nmg u:1 Z\r\nms u:1 2 Z\r\nhi\r\nma u:1 Mx\r\nmd u:1 v v\r\n"
             b"ms u:1 2 q\r\nabcd\r\nmn\r\n")
    udp_step("quiet", b"".join(b"ms u:q%d 1 q\r\n%d\r\n" % (i, i % 10) for i in range(20)) +
             b"".join(b"mg u:q%d v q k\r\nmg u:qx%d v q\r\n" % (i, i) for i in range(20)) +
             b"mn\r\n")
    # Values over several datagrams: 1,400 bytes each, header included.
    udp_step("a large value", b"ms u:big 5000\r\n" + b"z" * 5000 + b"\r\nmn\r\n")
    udp_step("a large reply", b"mg u:big v k s\r\nmg u:big v\r\nme u:big\r\nmn\r\n")
    for pre in (19, 20, 21):
        udp_step("ma after mg, after %d commands" % pre, b"mg nope q\r\n" * pre +
                 b"ms u:h 1\r\n5\r\nmg u:h\r\nma u:h\r\nmg u:h h\r\nmn\r\n")
    udp_step("ma after mg", b"ms u:h 1\r\n5\r\nmg u:h h\r\nma u:h\r\nmg u:h h v\r\nmn\r\n")
    # A request line cut short by the datagram's end goes unanswered. (A
    # value cut short is not tried: memcached then reads the rest of the
    # value from the next datagram that reaches the same thread, whoever
    # sent it; pc-kv answers nothing.)
    udp_step("a request cut short", b"mn\r\nmg u:big v")
    udp_step("after it", b"mg u:cut v\r\nmg u:big s\r\nmn\r\n")
    udp_gets()


def udp_gets():
    """Multi-key gets over UDP, which memcached 1.6.18 answers with a
    response per key: a hit's VALUE block, END with the last key. A miss
    leaves its response empty, sent as a datagram of count 0 when it is the
    first response of what memcached sends together (from the datagram's
    start or after a get, an mn or 21, 41, ... commands), else not at all."""
    e = 1392 - len(b"VALUE ug:e 0 1371\r\n\r\n")  # a response of one full datagram
    step("UDP get keys", b"".join(b"set ug:%s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in
                                  ((b"a", b"1"), (b"b", b"22"), (b"c", b"333"), (b"d", b"4"),
                                   (b"big", b"v" * 3000), (b"e", b"e" * e),
                                   (b"f", b"f" * (e + 1)))) +
         b"delete ug:x\r\ndelete ug:y\r\ndelete ug:z\r\n")
    for what, keys in (("hits", b"a b c d"), ("a miss first", b"x b c"),
                       ("a miss in the middle", b"a x c"), ("misses in the middle", b"a x y d"),
                       ("a miss last", b"a b x"), ("misses first and last", b"x y a z"),
                       ("all misses", b"x y z"), ("one miss", b"x"), ("one hit", b"a"),
                       ("large values", b"big a big x"), ("a miss, a large value", b"x big"),
                       ("a datagram's worth", b"e f e"), ("a datagram's worth last", b"e"),
                       ("many keys", b" ".join(b"x" if i % 3 == 0 else b"abcd"[i % 4:i % 4 + 1]
                                               for i in range(40)))):
        keys = b" ".join(b"ug:" + k for k in keys.split(b" "))
        udp_step("get: " + what, b"get " + keys + b"\r\nmn\r\n")
    udp_step("gets", b"gets ug:x ug:a ug:b\r\ngets ug:a ug:x\r\nmn\r\n")
    udp_step("gat, gats", b"gat 0 ug:x ug:a ug:b\r\ngats 0 ug:a ug:x\r\nmn\r\n")
    miss_first = b"get ug:x ug:a\r\n"
    for what, before in (("after a reply", b"verbosity 0\r\n"),
                         ("after a get", b"get ug:a\r\n"),
                         ("after a get that missed", b"get ug:x\r\n"),
                         ("after a multi-key get", b"get ug:a ug:b\r\n"),
                         ("after an mn", b"mn\r\n"),
                         ("after an mg", b"mg ug:a v\r\n"),
                         ("after a quiet miss", b"mg ug:x v q\r\n"),
                         ("after a reply and a quiet miss", b"verbosity 0\r\nmg ug:y v q\r\n"),
                         ("after noreply", b"set ug:d 0 0 1 noreply\r\n4\r\n"),
                         ("after a reply and noreply",
                          b"verbosity 0\r\nset ug:d 0 0 1 noreply\r\n4\r\n"),
                         ("twice after a reply", b"verbosity 0\r\n" + miss_first)):
        udp_step("get, a miss first, " + what, before + miss_first + b"mn\r\n")
    for n in (19, 20, 21, 22, 40, 41):
        udp_step("get, a miss first, after %d replies" % n,
                 b"verbosity 0\r\n" * n + miss_first + b"mn\r\n")
        udp_step("get, a miss first, after a get and %d replies" % n,
                 b"get ug:a\r\n" + b"verbosity 0\r\n" * n + miss_first + b"mn\r\n")


# ---- l and la over time ------------------------------------------------------------------

def lru_times(out):
    """l and la as seconds pass, on connections of their own while the
    other sessions run: the access time moves on every read after the
    first (memcached moves it on a read that finds its item fetched and
    not ACTIVE, and its LRU maintainer clears ACTIVE within about a
    second). The two servers' seconds are compared within 2: each clock
    ticks on its own, and memcached moves the time of an item in its COLD
    queue a moment after the read, through its maintainer. A server pair
    of their own: how soon memcached's maintainer moves an item on
    depends on the other items in its queues."""
    mine = []
    try:
        p, mc_lru = start([mc, "-p", "@PORT@", "-U", "0", "-l", "127.0.0.1", "-vv"] + user,
                          b"server listening", logs + ".mc-lru")
        mine.append(p)
        p, kv_lru = start([PC_KV, "-p", "@PORT@", "-l", "127.0.0.1", "-t", "1"], b"listening",
                          logs + ".kv-lru")
        mine.append(p)
        on = [Server("memcached", mc_lru), Server("pc-kv", kv_lru)]
        step("l: a new item", b"ms lru:a 1\r\nx\r\nmg lru:a l h\r\nme lru:a\r\n", on)
        for i in range(3):
            time.sleep(3)
            step("l: %d seconds on" % (3 * i + 3), b"me lru:a\r\nmg lru:a l h t\r\n", on,
                 lru_slack=2)
        time.sleep(3)
        step("la: 12 seconds on", b"me lru:a\r\n", on, lru_slack=2)
    except SystemExit:
        out.append("failed")
    except Exception as e:  # a connection's trouble
        out.append(repr(e))
    finally:
        for p in mine:
            p.terminate()
            p.wait()


# ---- random meta sessions ---------------------------------------------------------------

KEYS = [b"a", b"bb", b"k%d" % 7, b"key:1", b"key:2", b"n", b"m", b"\x01x", b"\xffz"]
B64 = {b"YWJj": b"abc", b"AAEC": b"\x00\x01\x02", b"a2V5OjE=": b"key:1"}


def rand_key(rng):
    if rng.random() < 0.15:
        return rng.choice(list(B64)), True
    return rng.choice(KEYS), False


def cas_flag(rng, key):
    """A C flag for @key, each server's own: its cas as last seen, one
    below (stale for I), or one no item has; filled in by fill_cas()."""
    return "C@%s:%s@" % (rng.choice("MLH"), key.hex())


def fill_cas(srv, req):
    def one(m):
        cas = srv.cas.get(bytes.fromhex(m.group(2).decode()))
        if cas is None or m.group(1) == b"H":
            return b"C%d" % (1 << 60)
        return b"C%d" % (cas if m.group(1) == b"M" else max(cas - 1, 1))
    return re.sub(rb"C@([MLH]):([0-9a-f]*)@", one, req)


def rand_flags(rng, cmd, key):
    """Flags for @cmd on @key, mostly ones it takes, sometimes not."""
    common = ["k", "O%d" % rng.randint(0, 999), "q"]
    each = {
        b"mg": ["v", "f", "t", "c", "s", "h", "u", "T%d" % rng.choice([0, 100, 1000]),
                "N%d" % rng.choice([0, 100]), "R%d" % rng.choice([50, 500, 2000])],
        b"ms": ["c", "F%d" % rng.randint(0, 70000), "T%d" % rng.choice([0, 100, 1000]), "I",
                "M" + rng.choice("EAPRS"), cas_flag(rng, key)],
        b"md": ["I", "T%d" % rng.choice([0, 100]), cas_flag(rng, key)],
        b"ma": ["v", "t", "c", "N%d" % rng.choice([0, 100]), "J%d" % rng.randint(0, 99),
                "D%d" % rng.randint(0, 99), "M" + rng.choice("I+D-"),
                "T%d" % rng.choice([0, 100]), cas_flag(rng, key)],
    }[cmd]
    pool = common + each
    picked = rng.sample(pool, rng.randint(0, min(6, len(pool))))
    if rng.random() < 0.05:  # a refusal now and then
        picked.append(rng.choice(["Z", "v", "T", "Tx", "O" + "o" * 40, "MX", "Fx", "\x80"]))
    return [f.encode("latin1") for f in picked]


def rand_command(rng):
    r = rng.random()
    key, b64 = rand_key(rng)
    tail = [b"b"] if b64 else []
    plain = B64.get(key, key)
    if r < 0.35:
        return b" ".join([b"mg", key] + rand_flags(rng, b"mg", plain) + tail) + b"\r\n"
    if r < 0.6:
        val = rng.choice([b"", b"1", b"10", b"abc", b"99999", b" 5", b"x" * rng.randint(0, 40)])
        return (b" ".join([b"ms", key, b"%d" % len(val)] + rand_flags(rng, b"ms", plain) +
                          tail) + b"\r\n" + val + b"\r\n")
    if r < 0.72:
        return b" ".join([b"md", key] + rand_flags(rng, b"md", plain) + tail) + b"\r\n"
    if r < 0.9:
        return b" ".join([b"ma", key] + rand_flags(rng, b"ma", plain) + tail) + b"\r\n"
    if r < 0.95:
        return b"me " + key + (b" b" if b64 else b"") + b"\r\n"
    return rng.choice([b"mn\r\n", b"get %s\r\n" % KEYS[0], b"incr n 1\r\n",
                       b"set n 0 0 2\r\n10\r\n", b"gets a bb n\r\n"])


def random_sessions(seed, rounds):
    """Random batches, each sent at once: memcached changes a number in
    place only while no unsent reply holds the item (an mg hit's does,
    until an mn or the batch's end), else it stores a new item that
    forgets h, W, X and Z; pc-kv does the same."""
    rng = random.Random(seed)
    for r in range(rounds):
        batch = b""
        for _ in range(rng.randint(1, 12)):
            batch += rand_command(rng)
        if rng.random() < 0.3:
            batch += b"mn\r\n"
        # l and la not compared here: how soon memcached moves an item's
        # access time depends on its LRU maintainer and the queues of a
        # busy cache (lru_times() checks them on a quiet server pair).
        step("random meta (seed %d, round %d)" % (seed, r),
             lambda srv, batch=batch: fill_cas(srv, batch), lru_slack=None)


# ---- the sessions ---------------------------------------------------------------------------

def sessions():
    big = b"v" * 2000000

    # mg and its flags: the reply lists them in the order sent.
    step("mg miss", b"mg nope\r\nmg nope v\r\nmg nope k O123 v s\r\nmg nope q\r\nmn\r\n")
    step("ms then mg", b"ms foo 2 T0 F5\r\nhi\r\nmg foo\r\nmg foo v\r\nmg foo k v f t s\r\n"
         b"mg foo s f t k v\r\nmg foo O9 q\r\nmg foo q v k\r\nmn\r\n")
    step("mg h u", b"ms hit 1\r\nx\r\nmg hit h\r\nmg hit h\r\nms hit2 1\r\nx\r\n"
         b"mg hit2 h u\r\nmg hit2 h u\r\nmg hit2 h\r\nmg hit2 h\r\n")
    step("mg l on fresh items", b"ms la 1\r\nx\r\nmg la l\r\nmg la l h\r\nmg la l\r\n")
    step("mg T", b"ms tt 1 T100\r\nx\r\nmg tt t\r\nmg tt t T500 t\r\nmg tt T0 t\r\n"
         b"mg tt t\r\ntouch tt 900\r\nmg tt t v\r\n")
    step("mg N vivify, R recache, W Z", b"mg viv N30 v c t\r\nmg viv N30 v t\r\nmg viv v\r\n"
         b"mg viv R40 t\r\nmg viv R10 t\r\nms viv 1 T20\r\nx\r\nmg viv R40 t v\r\n"
         b"mg viv R40 t v\r\nmg viv2 t N40 t\r\nmg viv2 t\r\nmg viv3 N0 t\r\nmg viv3 t h\r\n")
    step("mg c", b"ms mc 1\r\nx\r\nmg mc c k\r\nmg mc k c v\r\n")
    step("mg every flag", b"ms every 3 F7 T1000\r\nabc\r\n"
         b"mg every v k f t c s h l u O1 q T1000 N1 R1 P L\r\n"
         b"mg every v f t c s k h l u O1 q T1 N1 R1 b\r\n")
    step("mg base64 keys", b"ms Zm9v 3 b k c O1\r\nbar\r\nmg Zm9v b k v\r\nmg foo k v\r\n"
         b"mg Zm9v k\r\nmg Zm9v\r\nmg Zm$9v b k\r\nms YWJj 1 b\r\nz\r\nget abc\r\n"
         b"mg AAEC b v k\r\nms AAEC 2 b\r\nxy\r\nmg AAEC b v k s\r\nmg YQ== v k N100 b\r\n"
         b"mg YQ== k b\r\n")
    step("mg bad base64", b"mg $$$ b\r\nmg Zm9 b\r\nmg Zm9v= b\r\nmg ==== b\r\nmg A=== b\r\n")
    # The refusals, each in memcached's words.
    step("mg refusals", b"mg\r\nmg foo E5 v\r\nmg foo v v\r\nmg foo T\r\nmg foo Tx\r\n"
         b"mg foo N\r\nmg foo R\r\nmg foo \x80\r\nmg foo Zq\r\nmg $$ b Tx\r\nmg $$ Tx b\r\n"
         b"mg foo Tx Z\r\nmg a b c d e f g h i j k l m n o p q r\r\n"
         b"mg foo v k f t c s h l u q P L T10 R5 O1 x\r\n"
         b"mg foo v k f t c s h l u q P L T10 R5 O1\r\n" + b"mg " + b"k" * 251 + b" v\r\n" +
         b"mg " + b"k" * 250 + b" v\r\n" + b"mx foo\r\nm\r\nmgg foo\r\nm foo\r\n")
    step("long opaques", b"ms op 1\r\nx\r\nmg op O1234567890123456789012345678901\r\n"
         b"mg op O12345678901234567890123456789012\r\nmg nope O12345678901234567890123456789012\r\n"
         b"mg op T77 O12345678901234567890123456789012 T5\r\nmg op t\r\n"
         b"ma opn N0 O12345678901234567890123456789012\r\nmg opn v\r\n"
         b"md op O12345678901234567890123456789012\r\nmg op v\r\n"
         b"ms op 1 O12345678901234567890123456789012\r\ny\r\nmg op v\r\n")

    # ms: modes, cas, invalidation, flags, errors and their skipped data.
    step("ms modes", b"ms mo 1 MA\r\nx\r\nms mo 1 ME c k O1\r\nx\r\nms mo 1 ME c\r\nx\r\n"
         b"ms mo 1 c MP\r\ny\r\nms mo 1 MA k\r\nz\r\nmg mo v\r\nms mo 2 MR\r\nrr\r\nmg mo v\r\n"
         b"ms nomo 1 MR\r\nx\r\nms nomo 1 MA\r\nx\r\nms nomo 1 MP\r\nx\r\nms mo 2 MS F3\r\nss\r\n"
         b"mg mo v f\r\nms mo 1 MX\r\nx\r\nms mo 1 MSS\r\nx\r\nms mo 1 M\r\nx\r\nmg mo v\r\n")
    step("ms q", b"ms q1 1 q\r\nx\r\nms q1 1 q ME\r\nx\r\nms q2 1 q MR\r\nx\r\nms q1 1 q k c\r\n"
         b"x\r\nmn\r\n")
    step("gets for cas", b"ms cs 1 c k\r\nx\r\nmg cs c k\r\n")
    step("ms C", lambda srv: b"ms cs 1 C%d c k\r\ny\r\nms cs 1 C%d c\r\nz\r\nmg cs v\r\n"
         b"ms cs 1 C0\r\nz\r\nms nocs 1 C5\r\nz\r\nms cs 1 C1 ME\r\nw\r\n" %
         (srv.cas[b"cs"], srv.cas[b"cs"]))
    step("cas for append", b"ms ca 1\r\nx\r\nmg ca k c\r\n")
    step("ms C with append", lambda srv: b"ms ca 1 MA C%d\r\ny\r\nms ca 1 MA C%d\r\nz\r\n"
         b"ms ca 1 MP C0\r\nw\r\nmg ca v\r\n" % (srv.cas[b"ca"], srv.cas[b"ca"] + 100))
    step("cas for I", b"ms st 1 T100\r\nx\r\nmg st k c\r\nms st 1 c k\r\ny\r\n")
    step("ms I", lambda srv: b"ms st 1 I C%d T5\r\nz\r\nmg st v t c\r\nmg st v\r\n"
         b"ms st 1 I C%d\r\nw\r\n" % (srv.cas[b"st"] - 1, srv.cas[b"st"] + 1000))
    step("ms flags and ttl", b"ms fl 1 F4294967295 T100\r\nx\r\nmg fl f t\r\n"
         b"ms fl 1 F4294967296\r\nx\r\nmg fl f\r\nms fl 1 F-1\r\nx\r\nms fl 1 Fx\r\nx\r\n"
         b"ms fl 1 T-1\r\nx\r\nmg fl v\r\nms fl 1 T2592001\r\nx\r\nmg fl v\r\n")
    step("ms refusals", b"ms\r\nms foo\r\nms foo x\r\nms foo -1\r\nms foo 2147483646\r\n"
         b"ms foo 2 Z\r\nhi\r\nms foo 2 E5\r\nhi\r\nms foo 2 v v\r\nhi\r\nms foo 2 Fx\r\nhi\r\n"
         b"ms foo 2 C\r\nhi\r\nms foo 2 T\r\nhi\r\nms $$ 1 b\r\nx\r\n" + b"ms " + b"k" * 251 +
         b" 2 Z\r\nhi\r\nms foo 1 a b c d e f g h i j k l m n o p q\r\nx\r\n"
         b"ms foo 1 v k f t c s h l u q P L T10 R5 O1\r\nx\r\nmg foo v\r\n")
    step("ms bad chunk", b"ms ch 2\r\nabcd\r\nms ch 2 q\r\nabcd\r\nmg ch v\r\n"
         b"ms ch 0\r\n\r\nmg ch v s\r\n")
    step("ms too large", b"ms big 1 T0\r\nx\r\nms big 2000000 T0\r\n" + big + b"\r\nmg big v\r\n"
         b"ms big 1\r\nx\r\nms big 2000000 q ME\r\n" + big + b"\r\nmg big v\r\n"
         b"ms big 2000000 Z\r\n" + big + b"\r\nmn\r\n")

    # memcached's -I (1 MB) counts its item header: 59 bytes, the key, and
    # 4 more for flags that are not 0. The data of a refused value is
    # skipped, the key's old value dropped.
    lim = 1024 * 1024 - 59
    for key, flags in ((b"a", 0), (b"lim:" + b"k" * 100, 0), (b"a", 1), (b"k" * 250, 7)):
        n = lim - len(key) - (4 if flags else 0)
        step("the item limit, key %d bytes, flags %d" % (len(key), flags),
             b"set %s %d 0 %d\r\n" % (key, flags, n) + b"v" * n + b"\r\nme %s\r\n" % key +
             b"set %s %d 0 %d\r\n" % (key, flags, n + 1) + b"w" * (n + 1) +
             b"\r\nmg %s s\r\n" % key +
             b"ms %s %d F%d\r\n" % (key, n, flags) + b"x" * n + b"\r\nmg %s s f\r\n" % key +
             b"ms %s %d F%d MR\r\n" % (key, n + 1, flags) + b"y" * (n + 1) +
             b"\r\nmg %s s\r\nmn\r\n" % key)
    n = lim - 2
    step("append past the limit", b"set ap 0 0 %d\r\n" % (n - 5) + b"v" * (n - 5) +
         b"\r\nappend ap 0 0 6\r\nxxxxxx\r\nprepend ap 0 0 6\r\nxxxxxx\r\nmg ap s\r\n"
         b"ms ap 6 MA\r\nxxxxxx\r\nms ap 6 MP\r\nxxxxxx\r\nms ap 5 MA\r\nxxxxx\r\n"
         b"mg ap s\r\nme ap\r\nappend ap 0 0 1\r\nx\r\nset ap 3 0 %d\r\n" % (n - 9) +
         b"v" * (n - 9) + b"\r\nappend ap 0 0 5\r\nxxxxx\r\nappend ap 0 0 4\r\nxxxx\r\n"
         b"mg ap s f\r\n")
    # me: memcached's item size and slab class, each class's edges.
    req = b""
    for vlen in (0, 1, 34, 35, 36, 37, 59, 60, 61, 500, 5000, 50000, 394780, 394781, 600000):
        req += b"ms me:%d %d\r\n" % (vlen, vlen) + b"m" * vlen + b"\r\nme me:%d\r\n" % vlen
    step("me sizes and classes", req + b"ms me:f 10 F1\r\n0123456789\r\nme me:f\r\n"
         b"ms bWU= 3 b\r\nabc\r\nme bWU= b\r\nmg me:1 v\r\nme me:1\r\n")

    # md
    step("md", b"ms d1 1\r\nx\r\nmd d1\r\nmd d1\r\nmd d1 q\r\nms d1 1\r\nx\r\nmd d1 q k O4\r\n"
         b"md d1 k O4\r\nmd d1 q\r\nmn\r\n")
    step("cas for md", b"ms d2 1\r\nx\r\nmg d2 k c\r\n")
    step("md C", lambda srv: b"md d2 C%d\r\nmd d2 C0\r\nmg d2 v\r\nmd d2 C%d q\r\nmg d2 v\r\n" %
         (srv.cas[b"d2"] + 1, srv.cas[b"d2"]))
    step("md I", b"ms d3 1 T100\r\nx\r\nmd d3 I T30 O5 k\r\nmg d3 t v c\r\nmg d3 t v c\r\n"
         b"md d3 I\r\nmg d3 t v\r\nmd d3 T5\r\nmg d3 v\r\nms d4 1 T100\r\nx\r\nmd d4 I q\r\n"
         b"mg d4 t\r\nmd nod I\r\nmn\r\n")
    step("md refusals", b"md\r\nmd foo Z\r\nmd foo v v\r\nmd foo C\r\nmd foo Cx\r\nmd foo T\r\n"
         b"md $$ b\r\nmd foo a b c d e f g h i j k l m n o p q r\r\n" + b"md " + b"k" * 251 +
         b"\r\n")
    step("md base64", b"ms AAEC 1 b\r\nx\r\nmd AAEC b k\r\nmd AAEC b k\r\n")

    # ma
    step("ma", b"ma n\r\nma n q\r\nma n N0 J5 q\r\nma n q v\r\nma n v\r\nma n v MD D2\r\n"
         b"ma n v M-\r\nma n v M+ D10\r\nma n v MI\r\nmn\r\n")
    step("ma t T c", b"set n 0 0 2\r\n10\r\nma n v t c\r\nma n T100 t v\r\nma n t\r\n"
         b"ma n MD D3 v\r\nma n D18446744073709551615 v\r\nma n v\r\n"
         b"set n 0 0 20\r\n18446744073709551615\r\nma n v D2\r\nget n\r\n")
    step("ma grows", b"set g 0 100 1\r\n9\r\nma g v t T500 t\r\nmg g t v\r\nma g v t T500\r\n"
         b"mg g t\r\n")
    step("ma N J", b"ma nj N100 J42 v t\r\nma nj v t\r\nma nj2 N0 J18446744073709551615 v\r\n"
         b"ma nj2 v\r\nma nj3 J5 v\r\nma nj4 N0 q\r\nma nj4 q\r\nmn\r\n")
    step("cas for ma", b"set nc 0 0 1\r\n5\r\nmg nc k c\r\n")
    step("ma C", lambda srv: b"ma nc C%d v\r\nma nc C%d v\r\nma nc C0 v\r\n" %
         (srv.cas[b"nc"] + 5, srv.cas[b"nc"]))
    step("ma non-numeric", b"set nn 0 0 1\r\nx\r\nma nn\r\nma nn q\r\nset nn 0 0 0\r\n\r\n"
         b"ma nn\r\nset nn 0 0 2\r\n 5\r\nma nn v\r\nget nn\r\n")
    step("ma refusals", b"ma\r\nma n Mx\r\nma n MII\r\nma n Jx\r\nma n Dx\r\nma n D\r\n"
         b"ma n J\r\nma n Z\r\nma n v v\r\nma n a b c d e f g h i j k l m n o p q r\r\n")
    # memcached's reply to an mg holds the item until the replies of what
    # it read at once go out (or an mn sends them): an incr meanwhile
    # stores a new item, which forgets h and the ma's T.
    step("ma after mg", b"ms h1 1 T100\r\n5\r\nmg h1 h\r\nma h1\r\nmg h1 h v\r\nma h1 v\r\n"
         b"mg h1 h t\r\nmn\r\nma h1 T50 t\r\nmg h1 h t\r\n")
    step("ma after mg, mn between", b"ms h2 1\r\n5\r\nmg h2 h\r\nmn\r\nma h2\r\nmg h2 h v\r\n")
    step("incr after quiet mg", b"ms h3 1\r\n5\r\nmg h3 q\r\nincr h3 1\r\nmg h3 h v\r\n"
         b"mg h3 s\r\nmg nope\r\ndecr h3 1\r\nmg h3 h\r\n")
    # memcached runs 21 commands of what it read at once, then sends their
    # replies (letting go of what they hold) and runs 20 more at a time.
    fillers = [b"mg nope q\r\n", b"bogus\r\n", b"ms f 1 q\r\nx\r\n", b"incr nope x noreply\r\n",
               b"mn\r\n", b"set big 0 0 2000000 noreply\r\n" + big + b"\r\n"]
    for pre in (19, 20, 21, 40, 61):
        for i, filler in enumerate(fillers[:5] if pre != 20 else fillers):
            step("ma after mg, after %d commands (filler %d)" % (pre, i),
                 b"ms r1 1\r\n5\r\nmn\r\n" + filler * (pre - 2) +
                 b"mg r1\r\nma r1\r\nmg r1 h\r\nmn\r\n")
    step("ma after gat, a vivified item, a refused mg, mg u",
         b"ms g1 1\r\n5\r\ngat 100 g1\r\nincr g1 1\r\nmg g1 h\r\nmd g3\r\nma g3 N0 J5\r\n"
         b"mg g3 h\r\nma g3\r\nmg g3 h v\r\nms g5 1\r\n5\r\n"
         b"mg g5 O123456789012345678901234567890123 v\r\nma g5\r\nmg g5 h v\r\n"
         b"ms g6 1\r\n5\r\nmg g6 v u\r\nma g6\r\nmg g6 h v\r\nmg g6 v\r\nma g6\r\n"
         b"mg g6 h v\r\n")
    step("ma after get, gets, ma, me", b"ms h4 1\r\n5\r\nget h4\r\nma h4\r\nmg h4 h\r\n"
         b"ms h5 1\r\n5\r\ngets h5\r\nincr h5 1\r\nmg h5 h\r\nms h6 1\r\n5\r\nmg h6 h\r\n"
         b"me h6\r\nma h6 v\r\nma h6 v\r\nmg h6 h\r\nmg nope2 h\r\nma nope2 N0\r\n"
         b"mg h6 v h\r\n")
    step("ma base64", b"ma bg== b N0 J3 v k\r\nma bg== b v k\r\nget n\r\n")

    # me, mn
    step("me", b"set t1 0 100 1\r\nx\r\nme t1\r\nme t1 x y\r\nme YQ== b\r\nms YQ== 1 b\r\nz\r\n"
         b"me YQ== b\r\nme a\r\nme nope\r\nme\r\nme $$ b\r\n" + b"me " + b"k" * 251 + b"\r\n")
    step("mn", b"mn\r\nmn x y\r\nmn\r\n")

    # Pipelines in quiet mode over both shards, ended by mn.
    keys = [b"p%d" % i for i in range(60)]
    step("quiet sets", b"".join(b"ms %s 2 q T0\r\n%s\r\n" % (k, k[-2:]) for k in keys[::2]) +
         b"mn\r\n")
    step("quiet gets", b"".join(b"mg %s v q k O%d\r\n" % (k, i) for i, k in enumerate(keys)) +
         b"mn\r\n")
    step("quiet mixed", b"".join(b"md %s q\r\nmg %s q v\r\nma %s q N0 J1 v\r\n" % (k, k, k)
                                 for k in keys[:20]) + b"mn\r\n" +
         b"".join(b"mg %s v k q\r\n" % k for k in keys[:30]) + b"mn\r\n")
    step("quiet errors", b"mg a q Z\r\nms a 1 q Fx\r\nx\r\nmd a q Z\r\nma nope q\r\n"
         b"ma a q Mx\r\nmn\r\n")
    step("meta and classic", b"set mix 0 0 1\r\nx\r\nmg mix v q\r\nget mix\r\nms mix 1 q\r\ny\r\n"
         b"gets mix\r\nmd mix q\r\nget mix\r\nmn\r\n")

    # The other admin commands, and memcached's answers pc-kv shares.
    step("shutdown disabled", b"shutdown\r\nshutdown graceful\r\nshutdown x\r\n")
    step("cache_memlimit", b"cache_memlimit 100\r\ncache_memlimit 7\r\ncache_memlimit x\r\n"
         b"cache_memlimit 1000000001\r\ncache_memlimit 64 noreply\r\ncache_memlimit\r\n"
         b"cache_memlimit 1 2 3\r\ncache_memlimit 8\r\ncache_memlimit 64\r\n")
    step("unsupported subcommands", b"slabs\r\nslabs foo\r\nslabs reassign\r\nlru_crawler\r\n"
         b"lru_crawler foo\r\nlru_crawler crawl\r\nlru_crawler foo bar baz\r\n"
         b"misbehave\r\ndebugtime 1\r\ndebugtime\r\nlru\r\nlru foo\r\nextstore\r\n")
    step("verbosity", b"verbosity 1\r\nverbosity 1 noreply\r\nverbosity x\r\nverbosity\r\n")

    # The classic commands' differences left after issue 13.
    step("incr noreply", b"set ni 0 0 1\r\nx\r\nincr ni 1 noreply\r\ndecr ni 1 noreply\r\n"
         b"incr ni x noreply\r\nincr nope 1 noreply\r\nset ni 0 0 2\r\n10\r\n"
         b"incr ni 5 noreply\r\nget ni\r\n")
    step("incr in place", b"set ip 0 0 3\r\n100\r\ndecr ip 1\r\nget ip\r\nincr ip 1\r\nget ip\r\n"
         b"set ip 0 0 3\r\n 99\r\nincr ip 1\r\nget ip\r\nset ip 0 0 4\r\n5  x\r\nincr ip 1\r\n"
         b"set ip 0 0 2\r\n-0\r\nincr ip 1\r\nget ip\r\nset ip 0 0 1\r\n9\r\nincr ip 1\r\n"
         b"get ip\r\nset ip 0 0 2\r\n+5\r\nincr ip 1\r\nget ip\r\n")
    step("too large, noreply", b"set tl 0 0 1\r\nx\r\nset tl 0 0 2000000 noreply\r\n" + big +
         b"\r\nget tl\r\n")

    # Binary sessions: quiet requests in a pipeline end with a noop.
    req = (frame(0x11, b"bq1", ext(3), b"one", 1) + frame(0x11, b"bq2", ext(), b"two", 2) +
           frame(0x12, b"bq1", ext(), b"x", 3) + frame(0x13, b"bqz", ext(), b"x", 4) +
           frame(0x09, b"bq1", opaque=5) + frame(0x09, b"bqz", opaque=6) +
           frame(0x0d, b"bq2", opaque=7) + frame(0x0d, b"bqz", opaque=8) +
           frame(0x19, b"bq1", value=b"+", opaque=9) + frame(0x1a, b"bqz", value=b"-", opaque=10) +
           frame(0x14, b"bq2", opaque=11) + frame(0x14, b"bq2", opaque=12) +
           frame(0x15, b"bqn", arith_ext(5, 100), opaque=13) +
           frame(0x15, b"bqn", arith_ext(5, 100), opaque=14) +
           frame(0x05, b"bqn", arith_ext(1, 0, 0xffffffff), opaque=15) +
           frame(0x06, b"bqm", arith_ext(1, 0, 0xffffffff), opaque=16) +
           frame(0x15, b"bq1", arith_ext(1, 0), opaque=17) +
           frame(0x00, b"bq1", opaque=18) + frame(0x0a, opaque=99))
    bin_step("quiet pipeline", req, 99)
    bin_step("too large", frame(0x01, b"btl", ext(), b"x", 1) +
             frame(0x11, b"btl", ext(), big, 2) + frame(0x00, b"btl", opaque=3) +
             frame(0x0a, opaque=99), 99)
    n = lim - 3
    bin_step("item limit",
             frame(0x01, b"bl1", ext(), b"x" * n, 1) + frame(0x00, b"bl1", opaque=2) +
             frame(0x01, b"bl1", ext(5), b"x" * n, 3) + frame(0x00, b"bl1", opaque=4) +
             frame(0x01, b"bl1", ext(5), b"x" * (n - 4), 5) +
             frame(0x0e, b"bl1", value=b"y", opaque=6) +
             frame(0x0f, b"bl1", value=b"y", opaque=7) +
             frame(0x01, b"bl1", ext(), b"x" * (n + 1), 8) +
             frame(0x00, b"bl1", opaque=9) + frame(0x0a, opaque=99), 99)
    bin_step("meta key over binary", frame(0x00, b"foo", opaque=1) + frame(0x0a, opaque=99), 99)

    udp_sessions()

    seed = int(os.environ.get("PC_KV_META_SEED", "20240611"))
    rounds = int(os.environ.get("PC_KV_META_ROUNDS", "300"))
    random_sessions(seed, rounds)


# ---- the servers ---------------------------------------------------------------------

mc = shutil.which("memcached")
if mc is None:
    print("SKIP: memcached not installed")
    sys.exit(77)
user = ["-u", "root"] if os.getuid() == 0 else []
logs = "/tmp/pc-kv-meta-%d" % os.getpid()
procs = []
try:
    p, mc_port = start([mc, "-p", "@PORT@", "-U", "@PORT@", "-l", "127.0.0.1", "-vv"] + user,
                       b"server listening", logs + ".mc")
    procs.append(p)
    env = dict(os.environ, PERCORE_PIN="0", PERCORE_IDLE="park")
    os.environ.update(env)
    p, kv_port = start([PC_KV, "-p", "@PORT@", "-U", "@PORT@", "-l", "127.0.0.1", "-t", "2"],
                       b"listening",
                       logs + ".kv")
    procs.append(p)
    subprocess.run([mc, "-V"])
    servers = [Server("memcached", mc_port), Server("pc-kv", kv_port)]
    lru_trouble = []
    lru = threading.Thread(target=lru_times, args=(lru_trouble,))
    lru.start()
    sessions()
    lru.join()
    if lru_trouble:
        fail("l and la over time: %s" % lru_trouble)
    # pc-kv stops cleanly on SIGTERM (a sanitizer's report would not).
    kv = procs.pop()
    kv.terminate()
    rc = kv.wait()
    out = open(logs + ".kv", "rb").read()
    if rc != 0 or b"send_failed=0" not in out:
        fail("pc-kv exited %d:\n%s" % (rc, out[-3000:].decode("latin1")))
finally:
    for p in procs:
        p.terminate()
        p.wait()
    for ext in (".mc", ".kv", ".mc-lru", ".kv-lru"):
        if os.path.exists(logs + ext):
            os.unlink(logs + ext)
print("meta diff: %d steps identical" % steps)
