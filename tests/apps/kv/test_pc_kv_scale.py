#!/usr/bin/env python3
"""pc-kv past one machine: three pc-kv nodes (one worker each) on
loopback, used the two ways the memcached world spreads keys over nodes.

- Debian's nutcracker (twemproxy) in front, ketama distribution with md5
  (its default fnv1a_64 leaves a node empty for keys like these), ejecting
  a server after one failure;
- libmemcached's consistent distribution from its C API (kv_ring_client),
  removing a server after one failure.

Through each: keys spread over all three nodes (each node holds some,
every key is on exactly one), gets return what was set; then one node is
killed (SIGKILL): it is ejected, its keys miss and, set again, land on the
other two, and every key the live nodes held is still there. The two
survivors then stop cleanly. Exits 77 (skipped) without nutcracker or the
client (libmemcached-dev).

usage: test_pc_kv_scale.py PC_KV_BINARY KV_RING_CLIENT
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PC_KV, CLIENT = sys.argv[1], sys.argv[2]
N = 300


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


nutcracker = shutil.which("nutcracker") or ("/usr/sbin/nutcracker"
                                            if os.path.exists("/usr/sbin/nutcracker") else None)
if nutcracker is None:
    print("SKIP: nutcracker not installed")
    sys.exit(77)
if not os.access(CLIENT, os.X_OK):
    print("SKIP: kv_ring_client not built (libmemcached-dev)")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="pc-kv-scale-")
procs = []


def start(argv, ready, log):
    """Run argv, with @PORT@ a random port, until ready(port) holds; five
    tries on other ports. Returns (process, port)."""
    for _ in range(5):
        port = random.randint(20000, 39999)
        f = open(log, "wb")
        p = subprocess.Popen([a.replace("@PORT@", str(port)) for a in argv], stdout=f,
                             stderr=subprocess.STDOUT)
        for _ in range(100):
            if p.poll() is not None:
                break
            if ready(port):
                procs.append(p)
                return p, port
            time.sleep(0.05)
        p.kill()
        p.wait()
    fail("%s did not start: %s" % (argv[0], open(log, "rb").read()[-500:]))


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    return s


def value(key):
    return b"v:" + key


def get(port, key):
    """'h' the value set, 'b' another, 'm' a miss, 'e' an error or a close."""
    try:
        s = connect(port)
        s.sendall(b"get " + key + b"\r\n")
        got = b""
        while not (got.endswith(b"END\r\n") or got.startswith((b"SERVER_ERROR", b"ERROR",
                                                               b"CLIENT_ERROR"))):
            b = s.recv(65536)
            if not b:
                break
            got += b
        s.close()
    except OSError:
        return "e"
    if got == b"END\r\n":
        return "m"
    want = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(value(key)), value(key))
    if got.startswith(b"VALUE"):
        return "h" if got == want else "b"
    return "e"


def set_all(port, keys):
    s = connect(port)
    s.sendall(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value(k)), value(k)) for k in keys))
    got = b""
    while got.count(b"\r\n") < len(keys):
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    if got != b"STORED\r\n" * len(keys):
        fail("sets through port %d: %r" % (port, got[:300]))


def holders(nodes, keys):
    """For each key, the nodes (ports) that hold it, asked directly."""
    return [[p for p in nodes if get(p, k) == "h"] for k in keys]


def spread(nodes, keys, what):
    where = holders(nodes, keys)
    counts = {p: sum(1 for w in where if w == [p]) for p in nodes}
    print("%s: %s" % (what, " ".join("%d:%d" % kv for kv in counts.items())))
    if any(len(w) != 1 for w in where):
        fail("%s: keys not on exactly one node: %s" % (what, [k for k, w in zip(keys, where)
                                                            if len(w) != 1][:10]))
    if min(counts.values()) == 0:
        fail("%s: a node holds no key: %s" % (what, counts))
    return {k: w[0] for k, w in zip(keys, where)}


class Ring:
    """kv_ring_client, one command line at a time."""

    def __init__(self, nodes):
        self.p = subprocess.Popen([CLIENT, ",".join("127.0.0.1:%d" % n for n in nodes)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        procs.append(self.p)

    def ask(self, line):
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().decode().rstrip("\n")
        if not out or out == "?":
            fail("kv_ring_client: %r -> %r" % (line, out))
        return out


try:
    os.environ.update(PERCORE_PIN="0", PERCORE_IDLE="park")
    nodes, kv = [], {}
    for i in range(3):
        p, port = start([PC_KV, "-p", "@PORT@", "-l", "127.0.0.1", "-t", "1", "-m", "16"],
                        listening, os.path.join(tmp, "kv%d.log" % i))
        nodes.append(port)
        kv[port] = (p, os.path.join(tmp, "kv%d.log" % i))
    conf = os.path.join(tmp, "nutcracker.yml")

    def nutcracker_ready(port):
        if not listening(port):
            return False
        return get(port, b"probe") == "m"

    def write_conf(port):
        with open(conf, "w") as f:
            f.write("kv:\n  listen: 127.0.0.1:%d\n  hash: md5\n  distribution: ketama\n"
                    "  timeout: 2000\n  auto_eject_hosts: true\n  server_retry_timeout: 600000\n"
                    "  server_failure_limit: 1\n  servers:\n" % port)
            for i, n in enumerate(nodes):
                f.write("   - 127.0.0.1:%d:1 node%d\n" % (n, i))

    # nutcracker reads its port from the configuration: written per try.
    for _ in range(5):
        port = random.randint(20000, 39999)
        write_conf(port)
        stats = random.randint(40000, 49999)
        p = subprocess.Popen([nutcracker, "-c", conf, "-o", os.path.join(tmp, "nc.log"),
                              "-p", os.path.join(tmp, "nc.pid"), "-s", str(stats),
                              "-a", "127.0.0.1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        for _ in range(100):
            if p.poll() is not None or nutcracker_ready(port):
                break
            time.sleep(0.05)
        if p.poll() is None and nutcracker_ready(port):
            procs.append(p)
            nc_port = port
            break
        p.kill()
        p.wait()
    else:
        fail("nutcracker did not start: %s" % open(os.path.join(tmp, "nc.log")).read()[-500:])

    # Both ways, every key on one node, all three used, every get a hit.
    np_keys = [b"np:%d" % i for i in range(N)]
    set_all(nc_port, np_keys)
    np_owner = spread(nodes, np_keys, "nutcracker ketama/md5")
    got = "".join(get(nc_port, k) for k in np_keys)
    if got != "h" * N:
        fail("gets through nutcracker: %s" % got)
    ring = Ring(nodes)
    if ring.ask("set lm: %d" % N) != "s" * N:
        fail("libmemcached sets")
    lm_keys = [b"lm:%d" % i for i in range(N)]
    lm_owner = spread(nodes, lm_keys, "libmemcached consistent")
    owners = [int(o) for o in ring.ask("owners lm: %d" % N).split()]
    if owners != [lm_owner[k] for k in lm_keys]:
        fail("libmemcached's ring and the nodes disagree")
    if ring.ask("get lm: %d" % N) != "h" * N:
        fail("gets through libmemcached")

    # A node dies. Once ejected (one failure each way), its keys miss, the
    # others' keys all hit, and its keys set again land on the survivors.
    dead = nodes[1]
    kv[dead][0].send_signal(signal.SIGKILL)
    kv[dead][0].wait()
    live = [n for n in nodes if n != dead]
    for what, keys, owner, read in (
            ("nutcracker", np_keys, np_owner, lambda: "".join(get(nc_port, k) for k in np_keys)),
            ("libmemcached", lm_keys, lm_owner, lambda: ring.ask("get lm: %d" % N))):
        first = read()  # the dead node's first keys fail until it is ejected
        if any(c == "e" for k, c in zip(keys, first) if owner[k] != dead):
            fail("%s: a live node's key failed: %s" % (what, first))
        got = read()
        want = "".join("m" if owner[k] == dead else "h" for k in keys)
        if got != want:
            fail("%s after the kill:\n got  %s\n want %s" % (what, got, want))
        print("%s: node %d ejected, %d keys remapped, %d kept" %
              (what, dead, want.count("m"), want.count("h")))
    set_all(nc_port, [k for k in np_keys if np_owner[k] == dead])
    if ring.ask("set lm: %d" % N) != "s" * N:
        fail("libmemcached sets after the kill")
    if "".join(get(nc_port, k) for k in np_keys) != "h" * N:
        fail("nutcracker: keys set again not all there")
    if ring.ask("get lm: %d" % N) != "h" * N:
        fail("libmemcached: keys set again not all there")
    if str(dead) in ring.ask("owners lm: %d" % N).split():
        fail("libmemcached still maps keys to the dead node")
    for keys, owner, what in ((np_keys, np_owner, "nutcracker"), (lm_keys, lm_owner, "libmemcached")):
        moved = [k for k in keys if owner[k] == dead]
        where = holders(live, moved)
        if any(len(w) != 1 for w in where):
            fail("%s: a remapped key is not on exactly one live node" % what)

    # The survivors stop cleanly, with no failed send.
    ring.p.stdin.close()
    ring.p.wait()
    for n in live:
        p, log = kv[n]
        p.terminate()
        rc = p.wait()
        out = open(log, "rb").read()
        if rc != 0 or b"send_failed=0" not in out:
            fail("pc-kv on %d exited %d:\n%s" % (n, rc, out[-2000:].decode("latin1")))
    print("pc-kv scale-out: ok")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
