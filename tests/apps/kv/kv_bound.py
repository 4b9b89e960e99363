#!/usr/bin/env python3
"""The reply amplification probe against a running pc-kv.

kv_bound.py HOST PORT PID WORKERS VALUE_BYTES BOUND_MB CASE:N[,CASE:N...]

Two values of VALUE_BYTES are stored under one-letter keys on different
shards (pc_shard_of() computed here), so that whichever worker serves a
connection, one key is its own and the other comes from another worker.
Then, for each CASE, a client with a small receive buffer sends N
requests naming those keys (alternately) and reads nothing:

  get   one ASCII line "get a b a b ..." of N keys (8 KB for 4,000)
  pipe  N pipelined ASCII "get K" lines
  meta  N pipelined "mg K v" lines
  binq  N binary getkq (quiet, key in the reply), then a noop
  udp   one UDP datagram "get a b a b ..." of N keys (UDP on PORT too)

While that reply waits, the server's VmRSS (/proc/PID/status) must stay
within BOUND_MB of what it was before, the server must stop running keys
ahead of the reader (its get_hits settle well below N), and another client
must still be served. Then the client reads the whole reply, which must be
byte for byte what memcached sends, and the server's memory is checked
again. A negative BOUND_MB checks no memory (ThreadSanitizer's shadow
grows with every byte touched). Prints the figures; exits non-zero on a
failure.
"""
import socket
import struct
import sys
import time

M64 = (1 << 64) - 1


def shard_of(key, workers):
    """pc_shard_of(): FNV-1a 64, fmix64, multiply-shift of the high half."""
    h = 0xcbf29ce484222325
    for b in key:
        h = ((h ^ b) * 0x100000001b3) & M64
    h ^= h >> 33
    h = (h * 0xff51afd7ed558ccd) & M64
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) & M64
    h ^= h >> 33
    return ((h >> 32) * workers) >> 32


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise SystemExit("no VmRSS for pid %d" % pid)


class Conn:
    """A client connection that reads exact lengths or up to a delimiter."""

    def __init__(self, host, port, rcvbuf=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(20)
        self.s.connect((host, port))
        self.left = b""

    def sendall(self, b):
        self.s.sendall(b)

    def close(self):
        self.s.close()

    def read_into(self, view):
        """Fill @view exactly."""
        got = min(len(self.left), len(view))
        view[:got] = self.left[:got]
        self.left = self.left[got:]
        while got < len(view):
            n = self.s.recv_into(view[got:])
            if n == 0:
                raise SystemExit("closed after %d of %d bytes" % (got, len(view)))
            got += n

    def read(self, n):
        b = bytearray(n)
        self.read_into(memoryview(b))
        return bytes(b)

    def read_until(self, end):
        while end not in self.left:
            b = self.s.recv(65536)
            if not b:
                raise SystemExit("closed while waiting for %r" % end)
            self.left += b
        i = self.left.index(end) + len(end)
        got, self.left = self.left[:i], self.left[i:]
        return got


def get_hits(s):
    s.sendall(b"stats\r\n")
    for line in s.read_until(b"\r\nEND\r\n").split(b"\r\n"):
        if line.startswith(b"STAT get_hits "):
            return int(line.split()[2])
    raise SystemExit("no get_hits in stats")


def bin_getkq(key):
    return struct.pack(">BBHBBHIIQ", 0x80, 0x0d, len(key), 0, 0, 0, len(key), 0, 0) + key


def bin_reply(key, value, cas):
    extras = struct.pack(">I", 0)
    body = len(extras) + len(key) + len(value)
    return (struct.pack(">BBHBBHIIQ", 0x81, 0x0d, len(key), len(extras), 0, 0, body, 0, cas)
            + extras + key + value)


def udp_frames(sock, rid):
    """One response's bytes: its datagrams (8-byte header: id, sequence,
    count, 0) reassembled in sequence order."""
    parts, total = {}, None
    while total is None or len(parts) < total:
        d = sock.recv(65536)
        r, seq, total, _ = struct.unpack(">HHHH", d[:8])
        if r != rid:
            raise SystemExit("udp: reply for request %d, not %d" % (r, rid))
        parts[seq] = d[8:]
    return b"".join(parts[i] for i in range(total))


def udp_case(host, port, pid, honest, n, order, keys, values, bound):
    """One datagram naming N large values, from a client that reads none:
    UDP has no backpressure, so every key runs, and the server's peak RSS
    (VmHWM, reset first) must stay within the bound: it sends each
    response as it completes rather than gathering the datagram's reply.
    Then a small multi-key get of the same values is read back exactly."""
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")  # VmHWM := VmRSS
    base = rss_mb(pid)
    hits0 = get_hits(honest)
    mute = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    mute.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    mute.sendto(struct.pack(">HHHH", 1, 0, 1, 0) + b"get " + b" ".join(order) + b"\r\n",
                (host, port))
    deadline = time.time() + 120
    while get_hits(honest) - hits0 < n:
        if time.time() > deadline:
            raise SystemExit("udp x%d: only %d keys ran" % (n, get_hits(honest) - hits0))
        time.sleep(0.1)
    peak = hwm_mb(pid)
    if bound >= 0 and peak - base > bound:
        raise SystemExit("udp x%d: server RSS peaked %.1f MB over its start (bound %.0f)"
                         % (n, peak - base, bound))
    mute.close()
    # The responses are exact: one per key, END with the last.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: root
    s.settimeout(10)
    want = [keys[i % 2] for i in range(4)]
    s.sendto(struct.pack(">HHHH", 2, 0, 1, 0) + b"get " + b" ".join(want) + b"\r\n",
             (host, port))
    for i, k in enumerate(want):
        got = udp_frames(s, 2)
        block = b"VALUE %s 0 %d\r\n" % (k, len(values[k])) + values[k] + b"\r\n"
        if got != block + (b"END\r\n" if i == len(want) - 1 else b""):
            raise SystemExit("udp: response %d (key %r) differs" % (i, k))
    s.close()
    print("ok: udp x%d of %d-byte values (%.0f MB of reply) in one datagram: server RSS "
          "%.1f MB before, %.1f MB at the peak" % (n, len(values[keys[0]]),
                                                  n * len(values[keys[0]]) / 1e6, base, peak))


def hwm_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise SystemExit("no VmHWM for pid %d" % pid)


def main():
    host, port, pid, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    vlen, bound = int(sys.argv[5]), float(sys.argv[6])
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in sys.argv[7].split(",")]

    # One key per shard, the first two shards (one shard: both its own).
    keys = []
    for c in b"abcdefghijklmnopqrstuvwxyz":
        k = bytes([c])
        if workers == 1 or shard_of(k, workers) == len(keys):
            keys.append(k)
        if len(keys) == 2 or (workers == 1 and keys):
            break
    if len(keys) == 1:
        keys.append(keys[0])
    values = {k: bytes((i * 7 + k[0]) & 0xff for i in range(256)) * (vlen // 256) +
              k * (vlen % 256) for k in keys}
    setter = Conn(host, port)
    for k in keys:
        setter.sendall(b"set %s 0 0 %d\r\n" % (k, vlen) + values[k] + b"\r\n")
        if setter.read_until(b"\r\n") != b"STORED\r\n":
            raise SystemExit("set %r failed" % k)
    cas = {}
    for k in keys:
        setter.sendall(b"gets %s\r\n" % k)
        head = setter.read_until(b"\r\n")
        cas[k] = int(head.split()[4])
        setter.read(vlen + 7)  # the value, "\r\n", "END\r\n"
    honest = Conn(host, port)

    for name, n in cases:
        order = [keys[i % 2] for i in range(n)]
        if name == "udp":
            udp_case(host, port, pid, honest, n, order, keys, values, bound)
            continue
        if name == "get":
            req = b"get " + b" ".join(order) + b"\r\n"
            blocks = {k: b"VALUE %s 0 %d\r\n" % (k, vlen) + values[k] + b"\r\n" for k in keys}
            tail = b"END\r\n"
        elif name == "pipe":
            req = b"".join(b"get %s\r\n" % k for k in order)
            blocks = {k: b"VALUE %s 0 %d\r\n" % (k, vlen) + values[k] + b"\r\nEND\r\n"
                      for k in keys}
            tail = b""
        elif name == "meta":
            req = b"".join(b"mg %s v\r\n" % k for k in order)
            blocks = {k: b"VA %d\r\n" % vlen + values[k] + b"\r\n" for k in keys}
            tail = b""
        elif name == "binq":
            req = b"".join(bin_getkq(k) for k in order)
            req += struct.pack(">BBHBBHIIQ", 0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0)
            blocks = {k: bin_reply(k, values[k], cas[k]) for k in keys}
            tail = struct.pack(">BBHBBHIIQ", 0x81, 0x0a, 0, 0, 0, 0, 0, 0, 0)
        else:
            raise SystemExit("unknown case " + name)

        base = rss_mb(pid)
        hits0 = get_hits(honest)
        reader = Conn(host, port, rcvbuf=16384)
        reader.sendall(req)
        # Until the server stops producing (its hits settle), memory must stay
        # within the bound; the old server ran every key at once.
        peak, last, same = base, -1, 0
        while same < 5:
            hits = get_hits(honest) - hits0
            peak = max(peak, rss_mb(pid))
            if bound >= 0 and peak - base > bound:
                raise SystemExit("%s x%d: server RSS grew %.1f MB (bound %.0f) with %d keys "
                                 "run" % (name, n, peak - base, bound, hits))
            same = same + 1 if hits == last else 0
            last = hits
            time.sleep(0.1)
        if hits >= n // 4:
            raise SystemExit("%s x%d: the server ran %d keys for a client that reads none"
                             % (name, n, hits))
        # Another client is served meanwhile.
        honest.sendall(b"set other 0 0 2\r\nok\r\nget other\r\n")
        want = b"STORED\r\nVALUE other 0 2\r\nok\r\nEND\r\n"
        got = honest.read(len(want))
        if got != want:
            raise SystemExit("honest client got %r" % got)
        # The reader now takes the whole reply, checked as it comes.
        buf = {k: bytearray(len(b)) for k, b in blocks.items()}
        for i, k in enumerate(order):
            reader.read_into(memoryview(buf[k]))
            if buf[k] != blocks[k]:
                raise SystemExit("%s x%d: reply %d (key %r) differs" % (name, n, i, k))
        if tail and reader.read(len(tail)) != tail:
            raise SystemExit("%s x%d: wrong end of the reply" % (name, n))
        after = rss_mb(pid)
        if bound >= 0 and after - base > bound:
            raise SystemExit("%s x%d: server RSS %.1f MB over the start after the reply"
                             % (name, n, after - base))
        reader.close()
        print("ok: %s x%d of %d-byte values (%.0f MB of reply): server RSS %.1f MB before, "
              "%.1f MB at most while unread (%d keys run ahead), %.1f MB after reading it all"
              % (name, n, vlen, n * vlen / 1e6, base, peak, hits, after))


if __name__ == "__main__":
    main()
