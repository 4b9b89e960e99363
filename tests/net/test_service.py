#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The service API's conformance client: drives tests/net/svc_server.c
over plain sockets and checks exact bytes, errors and counters.

Either it starts the server itself (kernel backend, same host):

    test_service.py --server PATH --addr 127.0.0.1

or it talks to one started elsewhere (the DPDK run, from inside a
namespace), whose "ready F C L U" line gave the ports:

    test_service.py --addr 10.0.0.1 --ports F,C,L,U [--pid PID]

Without --server the cases that start a server of their own (SIGTERM)
are left out; with --pid the drain command runs last and the server's
exit is awaited through the pid. --cases picks cases by name.
"""
import argparse
import errno
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
import traceback

PATTERN = bytes((k * 7 + k // 251) & 0xFF for k in range(1 << 20))
WAIT_S = 60  # longest wait for any expected outcome: a bound, not a timing
STARTED = []  # the servers we started, killed at the end whatever happened


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class Server:
    """A svc_server: its ports, and its process when we started it."""

    def __init__(self, args, addr, ports=None, pid=None, extra=()):
        self.addr = addr
        self.proc = None
        self.pid = pid
        if args.server:
            self.proc = subprocess.Popen([args.server, *extra, "--kernel", addr],
                                         stdout=subprocess.PIPE, text=True)
            STARTED.append(self.proc)
            self.pid = self.proc.pid
            line = self.proc.stdout.readline().split()
            check(line[:1] == ["ready"], "server did not start: %r" % line)
            ports = [int(x) for x in line[1:5]]
        self.fiber, self.cb, self.limit, self.udp = ports
        self.family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    def connect(self, port, rcvbuf=None):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(WAIT_S)
        s.connect((self.addr, port))
        return s

    def request(self, port, line, rcvbuf=None):
        s = self.connect(port, rcvbuf)
        s.sendall(line.encode() + b"\n")
        return s

    def stats(self):
        s = self.request(self.fiber, "stats")
        out = read_line(s)
        s.close()
        return {k: int(v) for k, v in (f.split("=") for f in out.split())}

    def wait_stats(self, pred, what):
        end = time.monotonic() + WAIT_S
        while True:
            st = self.stats()
            if pred(st):
                return st
            check(time.monotonic() < end, "%s: never came (%r)" % (what, st))
            time.sleep(0.02)

    def rss_kb(self):
        if self.pid is None:
            return None
        with open("/proc/%d/status" % self.pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1])
        return None

    def wait_exit(self):
        if self.proc:
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise Fail("server did not exit")
            rest = self.proc.stdout.read()
            check("exit 0" in rest, "server exit: %r" % rest)
        elif self.pid:
            end = time.monotonic() + WAIT_S
            while os.path.exists("/proc/%d" % self.pid):
                check(time.monotonic() < end, "server did not exit")
                time.sleep(0.05)


def read_line(s):
    b = b""
    while not b.endswith(b"\n"):
        c = s.recv(1)
        check(c, "EOF inside a line after %r" % b)
        b += c
    return b.decode().rstrip("\n")


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(min(1 << 20, n - len(b)))
        check(c, "EOF after %d of %d bytes" % (len(b), n))
        b += c
    return bytes(b)


def ended(s):
    """The peer ended the connection: 'eof' (FIN) or 'reset'."""
    try:
        c = s.recv(65536)
    except ConnectionResetError:
        return "reset"
    check(c == b"", "data where the end was expected: %r" % c[:40])
    return "eof"


def refused(srv, port):
    """Connect until the listener refuses (it closes on each worker)."""
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        try:
            s = srv.connect(port)
        except (ConnectionRefusedError, ConnectionResetError):
            return True  # a reset: accepted as the listener closed
        s.close()
        time.sleep(0.02)
    return False


# ---- cases ---------------------------------------------------------------------


def case_echo(srv, args):
    for port in (srv.fiber, srv.cb):
        s = srv.request(port, "echo")
        data = PATTERN[: 300000]
        s.sendall(data)
        check(recv_exact(s, len(data)) == data, "echo bytes")
        s.shutdown(socket.SHUT_WR)
        check(ended(s) == "eof", "echo ends with EOF")
        s.close()


def case_read_timeout(srv, args):
    s = srv.request(srv.fiber, "read-timeout 200")
    check(read_line(s) == "timeout", "a read with nothing to read times out")

    def expect(want):
        while True:
            ln = read_line(s)
            if ln != "timeout":
                check(ln == want, "%r where %r was expected" % (ln, want))
                return

    s.sendall(b"hello\n")
    expect("line hello")  # the connection stayed usable
    s.sendall(b"par")  # a request that stalls midway
    expect("stalled 3")
    check(ended(s) == "eof", "stalled request closed")
    s.close()


def case_idle(srv, args):
    before = srv.stats()
    s = srv.request(srv.fiber, "idle 300")
    check(ended(s) == "eof", "fiber idle timeout closes")
    s.close()
    c = srv.request(srv.cb, "idle 300")
    check(ended(c) == "reset", "callback idle timeout resets")
    c.close()
    srv.wait_stats(lambda st: st["idle_timeouts"] == before["idle_timeouts"] + 1 and
                   st["cb_idle_timeouts"] == before["cb_idle_timeouts"] + 1, "idle counts")


def case_write_timeout(srv, args):
    """A peer that never reads: the write timeout fires, the output held
    stays within the cap, and the connection is ended."""
    before = srv.stats()
    f = srv.request(srv.fiber, "write-timeout 300", rcvbuf=4096)
    c = srv.request(srv.cb, "write-timeout 300", rcvbuf=4096)
    st = srv.wait_stats(lambda st: st["wt_fiber"] == before["wt_fiber"] + 1 and
                        st["cb_wtimeouts"] == before["cb_wtimeouts"] + 1, "write timeouts")
    check(0 < st["wt_buffered"] <= args.out_cap, "fiber output held %d" % st["wt_buffered"])
    check(0 < st["cb_wt_buffered"] <= args.out_cap,
          "callback output held %d" % st["cb_wt_buffered"])
    # The fiber's handler returned with output queued: the same timeout
    # ends that connection too.
    srv.wait_stats(lambda st: st["fiber_open"] == 1 and st["cb_open"] == 0, "ended")
    f.close()
    c.close()


def push_until_stalled(s, args):
    """Send to @s until a second passes with no room (or 4 x in_bound went):
    the bytes sent."""
    s.setblocking(False)
    total, chunk = 0, PATTERN[:65536]
    while total < 4 * args.in_bound:
        try:
            total += s.send(chunk)
        except BlockingIOError:
            p = select.poll()
            p.register(s, select.POLLOUT)
            if not p.poll(1000):
                break
    return total


def case_noread(srv, args):
    """A peer that sends to a handler that does not read is pushed back."""
    before = srv.stats()
    s = srv.request(srv.fiber, "noread")
    total = push_until_stalled(s, args)
    check(total < args.in_bound, "the server took %d bytes unread" % total)
    s.setblocking(True)
    g = srv.request(srv.fiber, "noread-go")
    s.shutdown(socket.SHUT_WR)
    st = srv.wait_stats(lambda st: st["noread_done"] == before["noread_done"] + 1, "noread")
    check(st["noread_bytes"] - before["noread_bytes"] == total, "every byte read after")
    g.close()
    s.close()


def case_pause(srv, args):
    """A callback connection whose reading is paused gets no on_data: the
    peer is pushed back; resumed from its worker's loop, every byte comes."""
    before = srv.stats()
    s = srv.request(srv.cb, "pause")
    check(read_line(s) == "paused", "pause acknowledged")
    total = push_until_stalled(s, args)
    check(total < args.in_bound, "a paused connection took %d bytes" % total)
    s.setblocking(True)
    r = srv.request(srv.cb, "resume")
    check(read_line(r) == "resuming", "resume found the paused connection")
    r.close()
    s.shutdown(socket.SHUT_WR)
    check(read_line(s) == "got %d" % total, "every byte delivered after the resume")
    check(ended(s) == "eof", "closed after the count")
    s.close()
    st = srv.wait_stats(lambda st: True, "pause")
    check(st["pause_leak"] == before["pause_leak"], "bytes delivered while paused")
    check(st["pause_bad"] == before["pause_bad"], "pc_conn_pause_read() results")


def case_shutdown(srv, args):
    before = srv.stats()
    for port, read_key, epipe_key in ((srv.fiber, "shut_read", "shut_epipe"),
                                      (srv.cb, "cb_shut_read", "cb_shut_epipe")):
        s = srv.request(port, "shutdown")
        check(read_line(s) == "reply", "reply before the FIN")
        check(ended(s) == "eof", "FIN after the reply")
        s.sendall(b"more data")  # the server still reads
        s.shutdown(socket.SHUT_WR)
        srv.wait_stats(lambda st: st[read_key] == 9 and
                       st[epipe_key] == before[epipe_key] + 1, "read after shutdown")
        s.close()


def case_writev(srv, args):
    s = srv.request(srv.fiber, "writev")
    check(recv_exact(s, 17) == b"alpha beta gamma\n", "small gather")
    check(read_line(s) == "17", "small gather's count")
    big = b"".join(PATTERN[i * 1000: i * 1000 + 300000] for i in range(3))
    check(recv_exact(s, len(big)) == big, "large gather")
    check(read_line(s) == str(len(big)), "large gather's count")
    check(ended(s) == "eof", "end")
    s.close()
    c = srv.request(srv.cb, "sendv")
    check(read_line(c) == "one two three", "callback gather")
    c.close()


def case_sendref(srv, args):
    n, size = 8, 65536
    s = srv.request(srv.fiber, "sendref %d %d" % (n, size))
    for i in range(n):
        want = b"R%d:" % i + PATTERN[i * 17: i * 17 + size]
        check(recv_exact(s, len(want)) == want, "reference %d's bytes" % i)
    check(read_line(s) == "done %d rc 0" % n, "every done ran")
    s.close()
    before = srv.stats()
    size = min(100000, args.out_cap // 4)  # all four at once, within the cap
    c = srv.request(srv.cb, "sendref 4 %d" % size)
    want = b"".join(PATTERN[i * 17: i * 17 + size] for i in range(4))
    check(recv_exact(c, len(want)) == want, "callback references' bytes")
    check(ended(c) == "eof", "closed after them")
    srv.wait_stats(lambda st: st["cb_ref_ok"] == before["cb_ref_ok"] + 1 and
                   st["cb_ref_bad"] == before["cb_ref_bad"], "done before on_close")
    c.close()


def case_abort(srv, args):
    before = srv.stats()
    s = srv.request(srv.cb, "abort")
    check(ended(s) == "reset", "abort resets, sending nothing queued")
    srv.wait_stats(lambda st: st["cb_aborted"] == before["cb_aborted"] + 1, "aborted")
    s.close()


def case_addr(srv, args):
    s = srv.request(srv.fiber, "addr")
    fam = "inet6" if srv.family == socket.AF_INET6 else "inet"
    me, it = s.getsockname(), s.getpeername()
    want = "peer %s %s %d local %s %s %d" % (fam, me[0], me[1], fam, it[0], it[1])
    check(read_line(s) == want, "addresses")
    s.close()


def case_opts(srv, args):
    s = srv.request(srv.fiber, "opts")
    check(read_line(s) == "opts %d 0 0 0 %d 0 %d" % ((-errno.EINVAL,) * 3), "options")
    s.close()


def case_limit(srv, args):
    """Over the limit a connection is closed with nothing sent, counted,
    while the others are served."""
    before = srv.stats()
    a = srv.request(srv.limit, "echo")
    b = srv.request(srv.limit, "echo")
    for s in (a, b):
        s.sendall(b"ping")
        check(recv_exact(s, 4) == b"ping", "served under the limit")
    # Refused at once (DPDK may reset during the handshake) or closed before
    # or after our first write: never served.
    try:
        c = srv.connect(srv.limit)
    except (ConnectionResetError, ConnectionRefusedError):
        c = None
    if c is not None:
        try:
            c.sendall(b"echo\nx")
        except (BrokenPipeError, ConnectionResetError):
            pass
        ended(c)  # a FIN or, with our bytes unread, a reset: never data
        c.close()
    srv.wait_stats(lambda st: st["limit_refused"] == before["limit_refused"] + 1, "refused")
    a.sendall(b"pong")
    check(recv_exact(a, 4) == b"pong", "still served")
    a.close()
    srv.wait_stats(lambda st: st["limit_open"] == 1, "a slot back")
    d = srv.request(srv.limit, "echo")
    d.sendall(b"again")
    check(recv_exact(d, 5) == b"again", "served again")
    b.close()
    d.close()


def case_udp(srv, args):
    s = socket.socket(srv.family, socket.SOCK_DGRAM)
    s.settimeout(WAIT_S)
    for i in range(3):
        s.sendto(b"datagram %d" % i, (srv.addr, srv.udp))
        check(s.recvfrom(2048)[0] == b"datagram %d" % i, "UDP echo")
    s.close()


def case_many_idle(srv, args):
    """Many idle connections all time out; a fresh one is served meanwhile."""
    before = srv.stats()
    conns = [srv.request(srv.fiber, "idle 1000") for _ in range(args.idle_conns)]
    f = srv.request(srv.cb, "echo")
    f.sendall(b"fresh")
    check(recv_exact(f, 5) == b"fresh", "a fresh connection served")
    f.close()
    left = {s.fileno(): s for s in conns}
    p = select.poll()
    for fd in left:
        p.register(fd, select.POLLIN)
    end = time.monotonic() + WAIT_S
    while left:
        check(time.monotonic() < end, "%d idle connections left open" % len(left))
        for fd, _ in p.poll(1000):
            s = left.pop(fd)
            p.unregister(fd)
            check(ended(s) == "eof", "idle end")
            s.close()
    srv.wait_stats(lambda st: st["idle_timeouts"] ==
                   before["idle_timeouts"] + args.idle_conns, "every idle timeout")


def case_drain(srv, args):
    """Drain by command: listeners refuse, open connections go on, the
    server exits once they end, long before the deadline."""
    a = srv.request(srv.fiber, "echo")
    a.sendall(b"up")  # accepted before the drain starts
    check(recv_exact(a, 2) == b"up", "served before the drain")
    d = srv.request(srv.fiber, "drain 600000")
    check(read_line(d) == "draining 0 %d" % -errno.ESHUTDOWN, "drain, then again refused")
    d.close()
    check(refused(srv, srv.fiber) and refused(srv, srv.cb), "listeners closed")
    a.sendall(b"still")
    check(recv_exact(a, 5) == b"still", "open connection served while draining")
    a.close()
    srv.wait_exit()


def spawn(args, extra):
    return Server(args, args.addr, extra=extra)


def case_sigterm(srv, args):
    """SIGTERM drains; the last connection's end stops the server."""
    s = spawn(args, ["--drain-on-signals", "600000"])
    a = s.request(s.fiber, "echo")
    # One round trip first: a connection still in the accept queue when
    # the listener closes is reset by the kernel, not drained.
    a.sendall(b"up")
    check(recv_exact(a, 2) == b"up", "served before SIGTERM")
    os.kill(s.pid, signal.SIGTERM)
    check(refused(s, s.fiber), "listener closed by SIGTERM")
    a.sendall(b"on")
    check(recv_exact(a, 2) == b"on", "served while draining")
    a.close()
    s.wait_exit()


def case_sigterm_twice(srv, args):
    """A second SIGTERM stops at once: the open connection is cut."""
    s = spawn(args, ["--drain-on-signals", "600000"])
    a = s.request(s.fiber, "echo")
    os.kill(s.pid, signal.SIGTERM)
    check(refused(s, s.fiber), "listener closed by SIGTERM")
    os.kill(s.pid, signal.SIGTERM)
    s.wait_exit()
    ended(a)
    a.close()


def case_drain_deadline(srv, args):
    """A connection that never ends is cut at the drain's deadline."""
    s = spawn(args, ["--drain-on-signals", "300"])
    a = s.request(s.fiber, "hold")
    os.kill(s.pid, signal.SIGTERM)
    s.wait_exit()
    ended(a)
    a.close()


CASES = [
    ("echo", case_echo), ("read_timeout", case_read_timeout), ("idle", case_idle),
    ("write_timeout", case_write_timeout), ("noread", case_noread),
    ("pause", case_pause), ("shutdown", case_shutdown), ("writev", case_writev), ("sendref", case_sendref),
    ("abort", case_abort), ("addr", case_addr), ("opts", case_opts), ("limit", case_limit),
    ("udp", case_udp), ("many_idle", case_many_idle),
]
LAST = [("drain", case_drain)]  # ends the server
OWN_SERVER = [("sigterm", case_sigterm), ("sigterm_twice", case_sigterm_twice),
              ("drain_deadline", case_drain_deadline)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", help="svc_server to start (kernel backend)")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--ports", help="F,C,L,U of a server started elsewhere")
    ap.add_argument("--pid", type=int, help="that server's pid")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--idle-conns", type=int, default=2000)
    ap.add_argument("--out-cap", type=int, default=1 << 20,
                    help="the backend's output cap per connection")
    ap.add_argument("--in-bound", type=int, default=32 << 20,
                    help="most bytes a handler that does not read may be sent")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ports = [int(x) for x in args.ports.split(",")] if args.ports else None
    check(args.server or ports, "--server or --ports")
    srv = Server(args, args.addr, ports, args.pid)
    cases = CASES + (LAST if srv.pid else []) + (OWN_SERVER if args.server else [])
    if args.cases:
        want = args.cases.split(",")
        cases = [c for c in cases if c[0] in want]
        check(len(cases) == len(want), "unknown case in %r" % want)
    rss0 = srv.rss_kb()
    failed = 0
    try:
        for name, fn in cases:
            if name == "drain" and rss0 is not None:
                print("server RSS %d KiB -> %d KiB" % (rss0, srv.rss_kb()))
            try:
                fn(srv, args)
                print("ok   %s" % name)
            except Exception as e:  # a case's failure, whatever it raised
                failed += 1
                print("FAIL %s: %r" % (name, e))
                traceback.print_exc()
            sys.stdout.flush()
    finally:
        for p in STARTED:
            if p.poll() is None:
                p.kill()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
