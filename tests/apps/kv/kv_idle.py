#!/usr/bin/env python3
"""-o idle_timeout against a running pc-kv.

kv_idle.py HOST PORT SECONDS

The server runs with -o idle_timeout=SECONDS. A connection that sent half a
command is closed, not before SECONDS; one that keeps sending requests
meanwhile stays and is served; one whose reply (20 values of 1,000,000
bytes) its client never reads is closed too. stats counts both closes in
idle_kicks, and stats settings shows the timeout. Exits non-zero on a
failure.
"""
import socket
import sys
import time

host, port, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
DEADLINE = 30 + 4 * secs  # seconds: a close later than this is a failure


def conn(rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect((host, port))
    return s


def read_until(s, end):
    got = b""
    while not got.endswith(end):
        b = s.recv(65536)
        if not b:
            raise SystemExit("the active connection was closed")
        got += b
    return got


def stats(s, group=b""):
    s.sendall(b"stats %s\r\n" % group if group else b"stats\r\n")
    out = {}
    for line in read_until(s, b"END\r\n").split(b"\r\n"):
        if line.startswith(b"STAT "):
            _, name, val = line.split(b" ", 2)
            out[name.decode()] = val.decode()
    return out


active = conn()
if stats(active, b"settings").get("idle_timeout") != str(secs):
    raise SystemExit("stats settings does not show idle_timeout %d" % secs)
kicks0 = int(stats(active)["idle_kicks"])
value = b"v" * 1000000
active.sendall(b"set big 0 0 %d\r\n" % len(value) + value + b"\r\n")
if read_until(active, b"\r\n") != b"STORED\r\n":
    raise SystemExit("set big failed")

idle = conn()
idle.sendall(b"get fo")  # half a command, then nothing
sent = time.monotonic()
idle.settimeout(0.1)
unread = conn(rcvbuf=16384)
unread.sendall(b"get" + b" big" * 20 + b"\r\n")

# The active connection asks something every 0.1 s until the idle one is
# closed; then it has outlived the timeout and must still be served.
closed_after = None
while closed_after is None:
    active.sendall(b"version\r\n")
    if not read_until(active, b"\r\n").startswith(b"VERSION "):
        raise SystemExit("bad version reply")
    try:
        if idle.recv(1) == b"":
            closed_after = time.monotonic() - sent
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed_after = time.monotonic() - sent
    if closed_after is None and time.monotonic() - sent > DEADLINE:
        raise SystemExit("an idle connection still open after %d s" % DEADLINE)
if closed_after < secs * 0.99:
    raise SystemExit("an idle connection closed after %.2f s, before %d s" % (closed_after, secs))
print("ok: a connection idle with half a command closed after %.1f s; one asking every "
      "0.1 s stayed" % closed_after)

# The unread reply: its connection goes too, and both count.
while int(stats(active)["idle_kicks"]) - kicks0 < 2:
    if time.monotonic() - sent > DEADLINE:
        raise SystemExit("idle_kicks %s, want 2" % (int(stats(active)["idle_kicks"]) - kicks0))
    time.sleep(0.1)
st = stats(active)
if int(st["idle_kicks"]) - kicks0 != 2:
    raise SystemExit("idle_kicks %s, want 2" % st["idle_kicks"])
active.sendall(b"get big\r\n")
if len(read_until(active, b"END\r\n")) != len(b"VALUE big 0 1000000\r\n\r\nEND\r\n") + len(value):
    raise SystemExit("bad get big")
print("ok: a connection whose reply was never read closed too; stats idle_kicks %s, "
      "curr_connections %s" % (int(st["idle_kicks"]) - kicks0, st["curr_connections"]))
