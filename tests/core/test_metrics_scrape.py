#!/usr/bin/python3
# PERCORE_METRICS scraped while a load runs (metrics_load), parsed with
# Debian's python3-prometheus-client: every family the issue asks for is
# there with HELP, TYPE and its labels, counters grow between scrapes, the
# busy ratio is a ratio; other paths, methods and malformed or oversized
# requests get their status; silent clients and a crowd of idle ones do
# not keep a scrape from being answered. Debian's python3 on purpose: the
# package installs there.
import os
import socket
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def request(port, raw, timeout=5.0):
    """Send raw bytes, return (status, headers, body) of the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    if not lines[0].startswith("HTTP/1.1 "):
        fail("status line %r" % lines[0])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if int(headers["content-length"]) != len(body):
        fail("content-length %s, body %d bytes" % (headers["content-length"], len(body)))
    return status, headers, body


def scrape(port):
    status, headers, body = request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    if status != 200:
        fail("scrape answered %d" % status)
    if headers["content-type"] != "text/plain; version=0.0.4; charset=utf-8":
        fail("content-type %r" % headers["content-type"])
    text = body.decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    # Every family has its HELP and TYPE lines, before its samples.
    for name, f in fams.items():
        if not f.documentation or f.type not in ("counter", "gauge"):
            fail("family %s: help %r type %r" % (name, f.documentation, f.type))
    return fams


def values(fams, family, sample=None):
    """{labels tuple: value} of one family's samples."""
    f = fams.get(family)
    if f is None:
        fail("no family %s" % family)
    out = {}
    for s in f.samples:
        if sample is None or s.name == sample:
            out[tuple(sorted(s.labels.items()))] = s.value
    return out


def main():
    helper = sys.argv[1]
    env = dict(os.environ, PERCORE_METRICS="127.0.0.1:0", PERCORE_PIN="0",
               PERCORE_LOG="warn")
    p = subprocess.Popen([helper], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        line = p.stdout.readline().decode()
        if not line.startswith("port="):
            fail("helper said %r" % line)
        port = int(line[5:])
        run(p, port)
    finally:
        if p.poll() is None:
            p.stdin.close()
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                fail("the helper did not stop")
            if rc != 0:
                fail("the helper exited %d" % rc)
    print("metrics scrape: ok")


def run(p, port):
    for _ in range(20):
        p.stdin.write(b"i")
    p.stdin.flush()
    first = scrape(port)
    time.sleep(0.3)
    for _ in range(20):
        p.stdin.write(b"i")
    p.stdin.flush()
    # Worker 1 starts with the stalling task, then takes messages.
    deadline = time.time() + 20
    while True:
        fams = scrape(port)
        stalls = values(fams, "percore_stalls", "percore_stalls_total")
        recv = values(fams, "percore_mailbox_received", "percore_mailbox_received_total")
        if (sum(stalls.values()) >= 1 and recv[(("worker", "1"),)] > 0) or \
                time.time() > deadline:
            break
        time.sleep(0.1)

    workers = [(("worker", "0"),), (("worker", "1"),)]
    for fam, sample in [("percore_worker_tasks", "percore_worker_tasks_total"),
                        ("percore_worker_parks", "percore_worker_parks_total"),
                        ("percore_worker_roams", "percore_worker_roams_total"),
                        ("percore_worker_roaming", "percore_worker_roaming"),
                        ("percore_worker_packed", "percore_worker_packed"),
                        ("percore_worker_yields", "percore_worker_yields_total"),
                        ("percore_stalls", "percore_stalls_total"),
                        ("percore_mailbox_sent", "percore_mailbox_sent_total"),
                        ("percore_mailbox_received", "percore_mailbox_received_total"),
                        ("percore_worker_busy_ratio", "percore_worker_busy_ratio")]:
        v = values(fams, fam, sample)
        if sorted(v) != workers:
            fail("%s labels %r" % (fam, sorted(v)))
    t0 = values(first, "percore_worker_tasks", "percore_worker_tasks_total")
    t1 = values(fams, "percore_worker_tasks", "percore_worker_tasks_total")
    if not t1[workers[0]] > t0[workers[0]]:
        fail("worker 0's tasks did not grow: %r then %r" % (t0, t1))
    for k, r in values(fams, "percore_worker_busy_ratio").items():
        if not 0.0 <= r <= 1.0:
            fail("busy ratio %r of %r" % (r, k))
    if sum(values(fams, "percore_stalls", "percore_stalls_total").values()) < 1:
        fail("the stalling task was not counted")
    sent = values(fams, "percore_mailbox_sent", "percore_mailbox_sent_total")
    recv = values(fams, "percore_mailbox_received", "percore_mailbox_received_total")
    if sent[workers[0]] == 0 or recv[workers[1]] == 0:
        fail("mailbox counters: sent %r received %r" % (sent, recv))
    steals = values(fams, "percore_steals", "percore_steals_total")
    want = {(("dst", d), ("src", s)) for s, d in [("0", "1"), ("1", "0"),
                                                  ("injector", "0"), ("injector", "1")]}
    if set(steals) != want:
        fail("steal labels %r" % sorted(steals))
    if steals[(("dst", "0"), ("src", "injector"))] + \
            steals[(("dst", "1"), ("src", "injector"))] == 0:
        fail("no injected task counted: %r" % steals)
    if values(fams, "percore_mode") != {(("mode", "elastic"),): 1.0}:
        fail("mode %r" % values(fams, "percore_mode"))

    # Other paths, methods, versions, garbage, a head too large.
    for raw, want in [(b"GET /nope HTTP/1.1\r\n\r\n", 404),
                      (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
                      (b"GET /metrics HTTP/3.0\r\n\r\n", 505),
                      (b"\x00\x01\x02 garbage\r\n\r\n", 400),
                      (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000, 431)]:
        status, _, _ = request(port, raw)
        if status != want:
            fail("%r answered %d, expected %d" % (raw[:40], status, want))

    # A client that sends half a request and waits holds a slot, not the
    # thread; so do more idle clients than there are slots.
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"GET /met")
    start = time.time()
    scrape(port)
    if time.time() - start > 2:
        fail("a silent client delayed the scrape")
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    start = time.time()
    scrape(port)
    if time.time() - start > 2:
        fail("idle clients delayed the scrape")
    for s in idle + [slow]:
        s.close()


if __name__ == "__main__":
    main()
