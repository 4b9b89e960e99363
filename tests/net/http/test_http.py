#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""HTTP/1.1 conformance of net/http against http_server (its routes and
small limits are in http_server.c), over raw sockets so every byte the
server sends is seen: each status it promises, keep-alive and close,
pipelining in order behind a handler that answers later, 100-continue,
chunked bodies both ways, the lingering close, timeouts, static files and
the access log.

  test_http.py --server PATH [--addr A]      start it on the kernel backend
  test_http.py --connect ADDR PORT --root DIR [--log FILE]
                                             a server already started
  test_http.py --make-root DIR               write the static tree only
  test_http.py --curl PC_HTTP                curl --http1.1 against pc-http
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ADDR = None
PORT = None
ROOT = None
FAILS = []
TIMEOUT = 10.0


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def conn():
    s = socket.create_connection((ADDR, PORT), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Reads responses off one socket."""

    def __init__(self, s):
        self.s = s
        self.buf = b""
        self.eof = False

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            self.eof = True
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def response(self, head=False):
        """(status, headers dict lower-case, body)."""
        st = self.line()
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", st)
        if not m:
            raise ValueError("bad status line %r" % st)
        status = int(m.group(1))
        hdrs = {}
        while True:
            ln = self.line()
            if not ln:
                break
            k, v = ln.split(b":", 1)
            hdrs.setdefault(k.strip().lower().decode(), v.strip().decode())
        body = b""
        if head or status in (100, 204, 304):
            return status, hdrs, body
        if hdrs.get("transfer-encoding") == "chunked":
            while True:
                n = int(self.line().split(b";")[0], 16)
                if n == 0:
                    while self.line():
                        pass
                    break
                body += self.take(n)
                check(self.take(2) == b"\r\n", "chunk ends in CRLF")
        elif "content-length" in hdrs:
            body = self.take(int(hdrs["content-length"]))
        else:
            try:
                while True:
                    self.fill()
            except EOFError:
                pass
            body, self.buf = self.buf, b""
        return status, hdrs, body

    def closed(self):
        """True once the server closed (EOF) with nothing more sent."""
        try:
            self.fill()
        except EOFError:
            return self.buf == b""
        except (ConnectionResetError, socket.timeout):
            return False
        return False


def req(method, path, headers=None, body=b"", version="1.1"):
    h = "%s %s HTTP/%s\r\n" % (method, path, version)
    hd = {"Host": "test"} if version == "1.1" else {}
    hd.update(headers or {})
    if body and "Transfer-Encoding" not in hd:
        hd["Content-Length"] = str(len(body))
    for k, v in hd.items():
        if v is not None:
            h += "%s: %s\r\n" % (k, v)
    return (h + "\r\n").encode() + body


def exchange(data, head=False):
    s = conn()
    s.sendall(data)
    r = Reader(s)
    try:
        return r.response(head), r
    finally:
        pass


def status_of(data):
    (st, h, b), r = exchange(data)
    r.s.close()
    return st, h


# ---- cases -------------------------------------------------------------------


def case_basic():
    (st, h, b), r = exchange(req("GET", "/"))
    check(st == 200 and b == b"Hello, World!", "GET / is 200 Hello, World!")
    check(h.get("content-length") == "13", "GET / has Content-Length 13")
    check(re.match(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$", h.get("date", "")),
          "Date header in IMF-fixdate: %r" % h.get("date"))
    (st, h, b) = (r.s.sendall(req("HEAD", "/")), r.response(head=True))[1]
    check(st == 200 and h.get("content-length") == "13", "HEAD / says the GET's length")
    r.s.sendall(req("GET", "/headers?a=1&b", {"X-Test": " spaced ", "Zz": "last"}))
    st, h, b = r.response()
    check(b == b"n=3 host=test x=spaced last=Zz path=/headers query=a=1&b v=11",
          "headers: lookup, count, order, path, query: %r" % b)
    r.s.close()


def case_keepalive():
    s = conn()
    r = Reader(s)
    for i in range(3):
        s.sendall(req("GET", "/"))
        st, h, b = r.response()
        check(st == 200 and "connection" not in h, "keep-alive request %d" % i)
    s.sendall(req("GET", "/", {"Connection": "close"}))
    st, h, b = r.response()
    check(st == 200 and h.get("connection") == "close", "Connection: close answered close")
    check(r.closed(), "closed after Connection: close")
    # HTTP/1.0: closes unless asked to keep alive.
    (st, h, b), r = exchange(req("GET", "/", version="1.0"))
    check(st == 200 and h.get("connection") == "close" and r.closed(), "HTTP/1.0 closes")
    (st, h, b), r = exchange(req("GET", "/", {"Connection": "keep-alive"}, version="1.0"))
    check(st == 200 and h.get("connection") == "keep-alive", "HTTP/1.0 keep-alive kept")
    r.s.sendall(req("GET", "/", version="1.0"))
    st, h, b = r.response()
    check(st == 200 and r.closed(), "HTTP/1.0 second request then close")


def case_pipeline():
    s = conn()
    r = Reader(s)
    s.sendall(req("GET", "/slow") + req("GET", "/") + req("GET", "/block") +
              req("POST", "/echo", body=b"xyz") + req("GET", "/stream"))
    bodies = [r.response()[2] for _ in range(5)]
    check(bodies == [b"slow", b"Hello, World!", b"block", b"xyz", b"onetwothree"],
          "pipelined answers in request order: %r" % bodies)
    s.close()


def case_continue():
    s = conn()
    r = Reader(s)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
              b"Content-Length: 5\r\n\r\n")
    st, h, b = r.response()
    check(st == 100, "Expect: 100-continue answered 100 first (%d)" % st)
    s.sendall(b"hello")
    st, h, b = r.response()
    check(st == 200 and b == b"hello", "then the body is read and echoed")
    # Too large: refused before the body is sent.
    s = conn()
    r = Reader(s)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
              b"Content-Length: 100000\r\n\r\n")
    st, h, b = r.response()
    check(st == 413, "Expect with a too large body: 413, no 100 (%d)" % st)


def chunked(body, size):
    out = b""
    for i in range(0, len(body), size):
        p = body[i:i + size]
        out += b"%x;ext=1\r\n%s\r\n" % (len(p), p)
    return out + b"0\r\nTrailer: x\r\n\r\n"


def case_chunked():
    body = bytes(range(256)) * 8
    data = req("POST", "/echo", {"Transfer-Encoding": "chunked"}) + chunked(body, 100)
    (st, h, b), r = exchange(data)
    check(st == 200 and b == body and h.get("x-body-len") == str(len(body)),
          "chunked request body decoded")
    # The same, one byte per write.
    s = conn()
    r = Reader(s)
    small = req("POST", "/echo", {"Transfer-Encoding": "chunked"}) + chunked(b"abcdefg", 3)
    for i in range(len(small)):
        s.send(small[i:i + 1])
    st, h, b = r.response()
    check(st == 200 and b == b"abcdefg", "chunked body fed byte by byte")
    (st, h, b), r = exchange(req("GET", "/stream"))
    check(st == 200 and h.get("transfer-encoding") == "chunked" and b == b"onetwothree",
          "chunked response")
    r.s.sendall(req("GET", "/unended") + req("GET", "/"))
    st, h, b = r.response()
    check(st == 200 and b == b"ab", "a stream the handler left open is ended for it")
    check(r.response()[2] == b"Hello, World!", "and the connection goes on")
    (st, h, b), r = exchange(req("GET", "/stream", version="1.0"))
    check(st == 200 and "transfer-encoding" not in h and b == b"onetwothree",
          "streamed to HTTP/1.0: no chunks, ends with the close")
    data = req("POST", "/echo", {"Transfer-Encoding": "chunked"}) + chunked(b"x" * 5000, 1000)
    check(status_of(data)[0] == 413, "chunked body over the limit: 413")


def case_statuses():
    cases = [
        (b"GET / HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 without Host"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Hosts"),
        (b"\x16\x03\x01\x02\x00garbage\r\n\r\n", 400, "garbage"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", 400, "header without colon"),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Content-Length with chunked"),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
         b"Content-Length: 3\r\n\r\nabc", 400, "Content-Length with Transfer-Encoding"),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
         400, "differing Content-Lengths"),
        (b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414, "long target"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"b" * 5000 + b"\r\n\r\n", 431, "big header"),
        (b"GET / HTTP/1.1\r\nHost: a\r\n" + b"".join(b"X%d: y\r\n" % i for i in range(20)) +
         b"\r\n", 431, "too many headers"),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n", 413, "big body"),
        (b"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "unknown method"),
        (b"PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n", 501, "a method not served"),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "HTTP/2.0 in a request line"),
        (b"GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505, "HTTP/0.9"),
        (b"GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", 404, "no route"),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: tea\r\n\r\n", 417, "unknown Expect"),
    ]
    for data, want, what in cases:
        try:
            st, h = status_of(data)
        except (EOFError, ConnectionError, socket.timeout, ValueError) as e:
            st, h = repr(e), {}
        check(st == want, "%s: %d (got %s)" % (what, want, st))
        if want >= 400 and want not in (404, 405):
            check(h.get("connection") == "close", "%s: Connection: close" % what)
    st, h = status_of(req("DELETE", "/echo"))
    check(st == 405 and h.get("allow") == "POST, PUT", "405 with Allow: %r" % h.get("allow"))
    # A byte at a time still reaches the same answers.
    for data, want in ((b"BREW / HTTP/1.1\r\n\r\n", 501), (b"GET / HTTP/3.0\r\n\r\n", 505)):
        s = conn()
        for i in range(len(data)):
            s.send(data[i:i + 1])
        st = Reader(s).response()[0]
        check(st == want, "byte by byte: %d (got %d)" % (want, st))


def case_linger():
    # The client goes on sending a large body after the 413: it must still
    # read the whole answer (no reset destroys it).
    for head, want in ((b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", 413),
                       (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"y" * 8000, 431)):
        s = conn()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.sendall(head)
        sent = 0
        try:
            for _ in range(64):
                sent += s.send(b"z" * 16384)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
        r = Reader(s)
        try:
            st, h, b = r.response()
        except (ConnectionResetError, EOFError, ValueError) as e:
            st, b = repr(e), b""
        check(st == want and b.startswith(b"%d " % want),
              "lingering close: a %d read whole after %d more bytes (got %s)" % (want, sent, st))
        # Our side was shut (EOF after the answer), and what the client
        # still sends is read and dropped for a while, not reset.
        check(r.closed(), "lingering close: EOF after the %d" % want)
        try:
            for _ in range(8):
                s.sendall(b"z" * 16384)
                time.sleep(0.02)
            kept = True
        except (BrokenPipeError, ConnectionResetError):
            kept = False
        check(kept, "lingering close: input after a %d is discarded, not reset" % want)
        s.close()


def case_timeouts():
    # Idle keep-alive: closed quietly.
    s = conn()
    r = Reader(s)
    s.sendall(req("GET", "/"))
    r.response()
    check(r.closed(), "idle keep-alive connection closed")
    # A head trickled a byte at a time never completes in time: 408.
    s = conn()
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n")
    st = None
    try:
        for i in range(40):
            s.send(b"X")
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        st = Reader(s).response()[0]
    except (EOFError, ConnectionError, ValueError):
        pass
    check(st == 408, "slow head: 408 (got %s)" % st)
    # A body that stops coming: 408.
    s = conn()
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
    try:
        st = Reader(s).response()[0]
    except (EOFError, ConnectionError, ValueError):
        st = None
    check(st == 408, "stalled body: 408 (got %s)" % st)


def case_write_timeout():
    # A client that asks for a large file and reads nothing: once the
    # output is full and nothing moves for the write timeout, the
    # connection is closed, not kept with its buffers forever.
    s = socket.socket(socket.AF_INET6 if ":" in ADDR else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(TIMEOUT)
    s.connect((ADDR, PORT))
    s.sendall(req("GET", "/static/huge.bin"))
    time.sleep(4)
    got = 0
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            got += len(d)
    except (ConnectionResetError, socket.timeout):
        pass
    check(got < HUGE, "write timeout: closed after %d of %d bytes" % (got, HUGE))


HUGE = 16 << 20


def case_slowloris():
    # Many clients sending a head a byte at a time do not keep an honest
    # one from being served, and each is cut off by the head timeout.
    slow = []
    for _ in range(SLOW_CONNS):
        c = conn()
        c.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nX: ")
        slow.append(c)
    served = 0
    for _ in range(10):
        for c in slow:
            try:
                c.send(b"y")
            except OSError:
                pass
        (st, h, b), r = exchange(req("GET", "/"))
        r.s.close()
        served += st == 200 and b == b"Hello, World!"
        time.sleep(0.05)
    check(served == 10, "an honest client among %d slow ones: %d/10 served" % (SLOW_CONNS, served))
    cut = 0
    for c in slow:
        try:
            cut += Reader(c).response()[0] == 408
        except (EOFError, ConnectionError, ValueError, socket.timeout):
            pass
        c.close()
    check(cut == SLOW_CONNS, "slow heads cut off with 408: %d of %d" % (cut, SLOW_CONNS))


SLOW_CONNS = 200


def make_root(root):
    os.makedirs(os.path.join(root, "sub"), exist_ok=True)
    os.makedirs(os.path.join(root, "empty"), exist_ok=True)
    with open(os.path.join(root, "a.txt"), "wb") as f:
        f.write(b"0123456789" * 10)
    with open(os.path.join(root, "sub", "index.html"), "wb") as f:
        f.write(b"<p>index</p>")
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.write(bytes(i % 251 for i in range(300000)))
    with open(os.path.join(root, "huge.bin"), "wb") as f:
        f.truncate(HUGE)
    os.utime(os.path.join(root, "a.txt"), (1700000000, 1700000000))
    outside = os.path.join(os.path.dirname(os.path.abspath(root)), "outside-secret.txt")
    with open(outside, "wb") as f:
        f.write(b"secret")
    link = os.path.join(root, "escape.txt")
    if not os.path.lexists(link):
        os.symlink(outside, link)


def case_static():
    (st, h, b), r = exchange(req("GET", "/static/a.txt"))
    check(st == 200 and b == b"0123456789" * 10, "static file")
    check(h.get("content-type", "").startswith("text/plain"), "Content-Type from .txt")
    lm = h.get("last-modified")
    check(lm == "Tue, 14 Nov 2023 22:13:20 GMT", "Last-Modified: %r" % lm)
    r.s.sendall(req("HEAD", "/static/a.txt"))
    st, h, b = r.response(head=True)
    check(st == 200 and h.get("content-length") == "100", "HEAD of a file: its length")
    r.s.sendall(req("GET", "/static/a.txt", {"If-Modified-Since": lm}))
    st, h, b = r.response()
    check(st == 304 and "content-length" not in h, "If-Modified-Since: 304")
    r.s.sendall(req("GET", "/static/a.txt", {"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}))
    check(r.response()[0] == 200, "older If-Modified-Since: 200")
    r.s.sendall(req("GET", "/static/a.txt", {"Range": "bytes=10-19"}))
    st, h, b = r.response()
    check(st == 206 and b == b"0123456789" and h.get("content-range") == "bytes 10-19/100",
          "Range: 206 %r" % h.get("content-range"))
    r.s.sendall(req("GET", "/static/a.txt", {"Range": "bytes=-5"}))
    st, h, b = r.response()
    check(st == 206 and b == b"56789", "suffix Range")
    r.s.sendall(req("GET", "/static/a.txt", {"Range": "bytes=100-"}))
    st, h, b = r.response()
    check(st == 416 and h.get("content-range") == "bytes */100", "Range past the end: 416")
    r.s.sendall(req("GET", "/static/big.bin"))
    st, h, b = r.response()
    check(st == 200 and b == bytes(i % 251 for i in range(300000)), "a large file, whole")
    r.s.sendall(req("GET", "/static/sub/"))
    st, h, b = r.response()
    check(st == 200 and b == b"<p>index</p>" and h.get("content-type", "").startswith("text/html"),
          "directory: index.html")
    for path, want in (("/static/empty/", 404), ("/static/missing", 404),
                       ("/static/../outside-secret.txt", 403),
                       ("/static/%2e%2e/outside-secret.txt", 403),
                       ("/static/sub/../../outside-secret.txt", 403),
                       ("/static/escape.txt", 404), ("/static/a.txt%00", 400)):
        r.s.sendall(req("GET", path))
        st, h, b = r.response()
        check(st == want and b"secret" not in b, "%s: %d (got %d)" % (path, want, st))
    r.s.sendall(req("POST", "/static/a.txt", body=b"x"))
    st, h, b = r.response()
    check(st == 405 and h.get("allow") == "GET, HEAD", "POST to a file: 405 Allow GET, HEAD")


def case_stats():
    (st, h, b), r = exchange(req("GET", "/stats"))
    v = dict(kv.split("=") for kv in b.decode().split())
    check(int(v["2xx"]) > 0 and int(v["4xx"]) > 0 and int(v["1xx"]) > 0,
          "responses counted by class: %r" % v)
    check(int(v["parse_errors"]) > 0 and int(v["timeouts"]) > 0 and int(v["in"]) > 0 and
          int(v["out"]) > 0 and int(v["open"]) >= 1, "errors, timeouts, bytes, open: %r" % v)


def case_log(path):
    for _ in range(50):
        with open(path) as f:
            lines = f.read().splitlines()
        if any('"GET /stats HTTP/1.1" 200' in ln for ln in lines):
            break
        time.sleep(0.1)
    pat = re.compile(r'^\S+ - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "[^"]*" \d{3} \d+$')
    check(lines and all(pat.match(ln) for ln in lines),
          "access log in common log format: %r" % [ln for ln in lines if not pat.match(ln)][:3])
    check(any(re.search(r'"GET /static/a.txt HTTP/1.1" 200 100$', ln) for ln in lines),
          "access log names the request, status and body bytes")
    check(any('" 414 ' in ln for ln in lines), "access log has refused requests too")


CASES = ["basic", "keepalive", "pipeline", "continue", "chunked", "statuses", "linger",
         "timeouts", "slowloris", "static", "write_timeout", "stats"]


def run_cases(log):
    for name in CASES:
        print("case", name, flush=True)
        try:
            globals()["case_" + name]()
        except Exception as e:  # a case that crashed failed
            check(False, "%s raised %r" % (name, e))
    if log and "stats" in CASES:
        case_log(log)


def curl_test(binary):
    if not shutil.which("curl"):
        print("SKIP: curl not installed")
        return 77
    ports = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ports.append(s)
    port, mport = [s.getsockname()[1] for s in ports]
    for s in ports:
        s.close()
    tmp = tempfile.mkdtemp()
    log = os.path.join(tmp, "access.log")
    env = dict(os.environ, PERCORE_METRICS="127.0.0.1:%d" % mport)
    p = subprocess.Popen([binary, "-l", "127.0.0.1", "-p", str(port), "-t", "1",
                          "--access-log", log], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        check("listening" in line, "pc-http started: %r" % line)
        out = subprocess.run(["curl", "-s", "--http1.1", "-D", "-", "http://127.0.0.1:%d/" % port,
                              "-o", "/dev/stdout"], capture_output=True, text=True, timeout=30)
        check(out.stdout.startswith("HTTP/1.1 200 OK") and
              out.stdout.endswith("\n\nHello, World!"), "curl GET /: %r" % out.stdout)
        check(re.search(r"(?i)content-type: text/plain", out.stdout), "curl: text/plain")
        out = subprocess.run(["curl", "-s", "--http1.1", "http://127.0.0.1:%d/json" % port,
                              "http://127.0.0.1:%d/json" % port], capture_output=True, text=True,
                             timeout=30)
        check(out.stdout == '{"message":"Hello, World!"}' * 2, "curl /json twice: %r" % out.stdout)
        out = subprocess.run(["curl", "-s", "--http1.1", "-o", "/dev/null", "-w", "%{http_code}",
                              "http://127.0.0.1:%d/nothing" % port], capture_output=True,
                             text=True, timeout=30)
        check(out.stdout == "404", "curl: 404 for an unknown path")
        # The counters in the runtime's Prometheus metrics.
        out = subprocess.run(["curl", "-s", "http://127.0.0.1:%d/metrics" % mport],
                             capture_output=True, text=True, timeout=30)
        m = re.search(r'^percore_http_responses_total\{worker="0",class="2xx"\} (\d+)$',
                      out.stdout, re.M)
        check(m and int(m.group(1)) >= 3, "metrics: 2xx responses counted: %r" % out.stdout[-300:])
        m = re.search(r'^percore_http_responses_total\{worker="0",class="4xx"\} (\d+)$',
                      out.stdout, re.M)
        check(m and int(m.group(1)) >= 1, "metrics: the 404 counted")
    finally:
        p.terminate()
        p.wait(timeout=30)
    check(p.returncode == 0, "pc-http drained on SIGTERM and exited 0 (%s)" % p.returncode)
    with open(log) as f:
        lines = f.read().splitlines()
    check(len(lines) == 4 and '"GET /json HTTP/1.1" 200 27' in lines[1] and
          lines[3].endswith('"GET /nothing HTTP/1.1" 404 14'), "--access-log lines: %r" % lines)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if FAILS else 0


def main():
    global ADDR, PORT, ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--server")
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--connect", nargs=2)
    ap.add_argument("--root")
    ap.add_argument("--log")
    ap.add_argument("--make-root")
    ap.add_argument("--curl")
    ap.add_argument("--cases")
    a = ap.parse_args()
    if a.make_root:
        make_root(a.make_root)
        return 0
    if a.curl:
        return curl_test(a.curl)
    if a.cases:
        CASES[:] = a.cases.split(",")
    if a.connect:
        ADDR, PORT = a.connect[0], int(a.connect[1])
        run_cases(a.log)
        return 1 if FAILS else 0
    tmp = tempfile.mkdtemp()
    root = os.path.join(tmp, "root")
    log = os.path.join(tmp, "access.log")
    make_root(root)
    p = subprocess.Popen([a.server, "--kernel", a.addr, "--root", root, "--log", log],
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().split()
        if not line or line[0] != "ready":
            print("FAIL: server did not start: %r" % line)
            return 1
        ADDR, PORT = a.addr, int(line[1])
        run_cases(log)
    finally:
        p.terminate()
        rest = p.communicate(timeout=30)[0]
        shutil.rmtree(tmp, ignore_errors=True)
    check("exit 0" in rest and p.returncode == 0,
          "server exited cleanly: %r, status %s" % (rest, p.returncode))
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
