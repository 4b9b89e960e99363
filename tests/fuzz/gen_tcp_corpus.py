#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_tcp (tests/fuzz/corpus/tcp), in the record
format fuzz_tcp.c describes: handshakes to the listener, data in and out of
order, FINs, resets and SYNs where RFC 5961 challenges them, window probes,
bad options, cookie ACKs, application calls, and clock jumps."""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'tcp')
os.makedirs(out, exist_ok=True)

FIN, SYN, RST, PSH, ACK = 1, 2, 4, 8, 16
FIX, REBASE, FLUSH, APP, BIG = 1, 2, 16, 32, 64
MS, MS300, S30 = 4, 8, 12  # clock steps (bits 2-3)


def seg(seq=0, ack=0, flags=ACK, wnd=0xffff, opts=b'', data=b'', sport=0, dport=80, doff=None):
    hl = 20 + len(opts)
    off = (doff if doff is not None else hl // 4) << 4
    return struct.pack('!HHIIBBHHH', sport, dport, seq & 0xffffffff, ack & 0xffffffff, off,
                       flags, wnd, 0, 0) + opts + data


def rec(ctl, body):
    if len(body) > 255:
        return bytes([ctl | BIG, len(body) >> 8, len(body) & 0xff]) + body
    return bytes([ctl, len(body)]) + body


def app(op, data=b''):
    return rec(APP | FLUSH, bytes([op]) + data)


def est(body, step=0):
    """A segment to the established connection; its seq and ack are offsets
    from the first data byte of each direction."""
    return rec(FIX | REBASE | FLUSH | step, body)


MSSWS = bytes([2, 4, 5, 0xb4, 1, 3, 3, 7])
seeds = {}

# Listener mode (mode 0): SYNs, ACKs, garbage to port 80 from varying ports.
seeds['listen-syn'] = bytes([0]) + rec(FIX | REBASE | FLUSH, seg(100, 0, SYN, opts=MSSWS))
seeds['listen-syn-ack-rst'] = bytes([0]) + b''.join([
    rec(FIX | REBASE | FLUSH, seg(100, 0, SYN)),
    rec(FIX | REBASE | FLUSH, seg(101, 5, ACK)),
    rec(FIX | REBASE | FLUSH, seg(101, 0, RST)),
    rec(FIX | REBASE | FLUSH | S30, seg(7, 0, SYN | ACK)),
])
seeds['listen-flood-cookies'] = bytes([16]) + b''.join(
    rec(FIX | FLUSH, seg(1000 * k, 0, SYN, sport=2000 + k, opts=MSSWS)) for k in range(12)) + \
    rec(FIX | FLUSH, seg(11001, 12345, ACK, sport=2011))
# Backlog 2: the third SYN gets a cookie, and the ACK at offset 1 from it
# (with the peer's ISN + 1) completes it; data follows on the connection.
seeds['listen-cookie-accept'] = bytes([16]) + b''.join([
    rec(FIX | REBASE | FLUSH, seg(100, 0, SYN, sport=0x0000, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH, seg(200, 0, SYN, sport=0x0100, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH, seg(300, 0, SYN, sport=0x0200, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH, seg(301, 1, ACK | PSH, sport=0x0200, data=b'GET / HTTP/1.0')),
    rec(FIX | REBASE | FLUSH, seg(101, 1, ACK, sport=0x0000)),
])
# Active open (mode 64): the peer answers our SYN, badly, then well.
seeds['active-open'] = bytes([64]) + b''.join([
    rec(FIX | REBASE | FLUSH, seg(5000, 9, ACK)),
    rec(FIX | REBASE | FLUSH, seg(5000, 0, RST)),
    rec(FIX | REBASE | FLUSH, seg(5000, 1, SYN | ACK, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH, seg(5001, 1, ACK | PSH, data=b'220 hello')),
    app(0, b'QUIT'),
    rec(FIX | REBASE | FLUSH | MS300, seg(5010, 5, ACK | FIN)),
])
seeds['active-simultaneous'] = bytes([64]) + b''.join([
    rec(FIX | REBASE | FLUSH, seg(7000, 0, SYN, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH, seg(7000, 1, SYN | ACK, opts=MSSWS)),
    rec(FIX | REBASE | FLUSH | S30, seg(7001, 1, ACK)),
])
seeds['active-refused'] = bytes([64]) + rec(FIX | REBASE | FLUSH, seg(0, 1, RST | ACK))
seeds['listen-bad-options'] = bytes([0]) + b''.join(
    rec(FIX | REBASE | FLUSH, seg(1, 0, SYN, opts=o)) for o in
    [bytes([2, 3, 5, 0]), bytes([8, 0, 0, 0]), bytes([1, 1, 1, 2]), bytes([3, 3, 99, 0]),
     bytes([2, 4, 0, 0]), bytes([0, 0, 0, 0])])
seeds['listen-short'] = bytes([0]) + rec(FIX, b'\x15\xb3\x00\x50') + rec(FIX, seg(doff=15))

# Established mode (mode 1): offsets from RCV.NXT / SND.UNA.
seeds['est-data'] = bytes([1]) + b''.join([
    est(seg(0, 0, ACK | PSH, data=b'hello')),
    est(seg(5, 0, ACK | PSH, data=b' world')),
    est(seg(11, 0, ACK | FIN)),
])
seeds['est-ooo'] = bytes([1]) + b''.join([
    est(seg(100, 0, ACK, data=b'B' * 100)),
    est(seg(300, 0, ACK, data=b'D' * 100)),
    est(seg(0, 0, ACK, data=b'A' * 100)),
    est(seg(200, 0, ACK, data=b'C' * 100)),
    est(seg(400, 0, ACK | FIN, data=b'E')),
])
seeds['est-rst'] = bytes([1]) + b''.join([
    est(seg(50, 0, RST)),
    est(seg(1 << 30, 0, RST)),
    est(seg(0, 0, RST)),
])
seeds['est-syn'] = bytes([1]) + est(seg(0, 0, SYN)) + est(seg(-1, 0, SYN))
seeds['est-acks'] = bytes([1]) + b''.join([
    app(0, b'x' * 3000),
    est(seg(0, 1000, ACK)),
    est(seg(0, 1000, ACK)),
    est(seg(0, 1000, ACK)),
    est(seg(0, 1000, ACK)),
    est(seg(0, 100000, ACK)),
    est(seg(0, -(1 << 24), ACK)),
    est(seg(0, 3000, ACK, wnd=0), MS300),
])
seeds['est-zero-window'] = bytes([1 | 2 | 4]) + b''.join([
    est(seg(0, 0, ACK, data=bytes(2000))),
    est(seg(2000, 0, ACK, data=bytes(2096))),
    est(seg(4096, 0, ACK, data=b'p')),
    app(3),
    est(seg(4096, 0, ACK | FIN), S30),
])
seeds['est-echo-close'] = bytes([1 | 32]) + b''.join([
    est(seg(0, 0, ACK | PSH, data=b'ping' * 100)),
    app(1),
    est(seg(400, 0, ACK, data=b'late')),
])
seeds['est-shutdown-timers'] = bytes([1 | 8]) + b''.join([
    app(6),
    app(0, b'y' * 5000),
    app(2),
    est(seg(0, 0, ACK), S30),
    est(seg(0, 5001, ACK | FIN), S30),
])
seeds['est-window-probe'] = bytes([1]) + b''.join([
    app(0, b'z' * 60000),
    est(seg(0, 0, ACK, wnd=0), MS300),
    est(seg(0, 1, ACK, wnd=0), S30),
    est(seg(0, 1, ACK, wnd=100), MS),
    est(seg(0, 40000, ACK, wnd=100), MS),
    app(5),
    app(4),
])
seeds['est-big'] = bytes([1]) + est(seg(0, 0, ACK | PSH, data=bytes(range(256)) * 40))

for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
