#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_pkt (tests/fuzz/corpus/pkt): good ARP,
ICMP echo and UDP frames, and one of each malformed kind."""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'pkt')
os.makedirs(out, exist_ok=True)

A = bytes([2, 0, 0, 0, 0, 0xa])
B = bytes([2, 0, 0, 0, 0, 0xb])
IPA, IPB = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def eth(t, payload):
    return B + A + struct.pack('!H', t) + payload


def ip(proto, l4, ttl=64, frag=0x4000, opts=b''):
    ihl = (20 + len(opts)) // 4
    h = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0, 20 + len(opts) + len(l4), 0, frag, ttl, proto, 0, IPA, IPB) + opts
    h = h[:10] + struct.pack('!H', csum(h)) + h[12:]
    return h + l4


def udp(payload, sport=1234, dport=7777):
    u = struct.pack('!HHHH', sport, dport, 8 + len(payload), 0) + payload
    ph = IPA + IPB + struct.pack('!BBH', 0, 17, len(u))
    c = csum(ph + u) or 0xffff
    return u[:6] + struct.pack('!H', c) + u[8:]


def icmp(t=8, data=b'0123456789abcdef'):
    m = struct.pack('!BBHHH', t, 0, 0, 0x1234, 1) + data
    return m[:2] + struct.pack('!H', csum(m)) + m[4:]


def arp(op=1):
    return struct.pack('!HHBBH6s4s6s4s', 1, 0x0800, 6, 4, op, A, IPA, b'\0' * 6, IPB)


good_udp = eth(0x0800, ip(17, udp(b'hello')))
seeds = {
    'udp': good_udp,
    'udp-nocsum': eth(0x0800, ip(17, udp(b'x')[:6] + b'\0\0' + b'x')),
    'udp-badcsum': good_udp[:-1] + b'!',
    'udp-badlen': eth(0x0800, ip(17, struct.pack('!HHHH', 1, 2, 200, 0))),
    'icmp-echo': eth(0x0800, ip(1, icmp())),
    'icmp-echo-opts': eth(0x0800, ip(1, icmp(), opts=b'\x01\x01\x01\x01')),
    'icmp-reply': eth(0x0800, ip(1, icmp(0))),
    'arp-request': eth(0x0806, arp(1)),
    'arp-reply': eth(0x0806, arp(2)),
    'arp-short': eth(0x0806, arp(1)[:20]),
    'ip-frag': eth(0x0800, ip(17, udp(b'f'), frag=0x2000)),
    'ip-ttl0': eth(0x0800, ip(17, udp(b't'), ttl=0)),
    'ip-short': eth(0x0800, b'\x45\0\0'),
    'ip-v6': eth(0x86dd, b'\x60' + b'\0' * 39),
    'vlan': eth(0x8100, b'\0\x01\x08\x00' + ip(17, udp(b'v'))),
    'eth-short': good_udp[:13],
    'tcp': eth(0x0800, ip(6, b'\0' * 20)),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
