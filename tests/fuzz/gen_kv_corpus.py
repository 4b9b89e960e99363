#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_kvascii, fuzz_kvbin and fuzz_kvudp
(tests/fuzz/corpus/kv*): real memcached requests, ASCII and binary, a
stream of each kind of refusal, and UDP request datagrams."""
import os
import struct
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus')

ascii_seeds = {
    'get': b'get foo\r\ngets a bb ccc\r\n',
    'gat': b'gat 100 foo bar\r\ngats 0 k\n',
    'set': b'set k 5 100 5\r\nhello\r\nadd k2 0 0 1 noreply\r\nx\r\n',
    'cas': b'cas k 0 0 3 12345\r\nabc\r\nreplace k 1 -1 0\r\n\r\n',
    'append': b'append k 0 0 2\r\nzz\r\nprepend k 0 0 2 noreply\r\naa\r\n',
    'arith': b'incr n 5\r\ndecr n 18446744073709551615 noreply\r\ntouch k 10\r\n',
    'misc': b'delete k 0\r\nflush_all 5 noreply\r\nversion\r\nverbosity 1\r\nstats settings\r\nquit\r\n',
    'too-large': b'set big 0 0 100\r\n' + b'v' * 100 + b'\r\nget big\r\n',
    'bad': b'set k 0 0 3\r\nabcd\r\nget\r\nincr n x\r\nbogus\r\ndelete k 5\r\n',
}
# The meta commands: every flag, base64 keys, quiet pipelines ended by mn,
# and memcached's refusals (unknown, repeated and bad flags, long opaques,
# too many flags, an ms whose data is skipped).
ascii_seeds.update({
    'meta-get': b'mg foo v k f t c s h l u O123 q\r\nmg foo T30 N60 R10 t v\r\nmg Zm9v b k v\r\n',
    'meta-set': b'ms foo 5 T100 F7 c k O1 q\r\nhello\r\nms foo 1 MA C12 I\r\nx\r\n'
                b'ms Zm9v 2 b ME\r\nhi\r\nms big 100 MS\r\n' + b'v' * 100 + b'\r\n',
    'meta-delete': b'md foo q k O9\r\nmd foo I T30 C5\r\nmd AAEC b\r\n',
    'meta-arith': b'ma n\r\nma n N0 J10 D3 MD v t c k O1\r\nma n M+ q\r\nme n\r\nme Zm9v b\r\n',
    'meta-quiet': b''.join(b'mg k%d v q k\r\n' % i for i in range(20)) + b'mn\r\n',
    'meta-bad': b'mg\r\nmg foo E5\r\nmg foo v v\r\nmg foo Tx\r\nmg $$ b\r\nms foo 2 Z\r\nhi\r\n'
                b'ms foo x\r\nmg foo O' + b'o' * 40 + b'\r\nma foo Mx\r\n'
                b'mg k a b c d e f g h i j k l m n o p q r\r\nmx\r\nme\r\n',
    'admin': b'shutdown\r\nshutdown graceful\r\ncache_memlimit 64 noreply\r\n'
             b'cache_memlimit 7\r\nlru_crawler crawl all\r\nslabs automove 1\r\n',
})
# The item limit at its edge, as memcached counts it (the targets' largest
# value of a 1-byte key with flags 0 is 64 bytes; flags take 4 more), and
# an incr after an mg of the same batch.
ascii_seeds.update({
    'item-limit': b'set k 0 0 64\r\n' + b'v' * 64 + b'\r\nset k 0 0 65\r\n' + b'v' * 65 +
                  b'\r\nset k 1 0 61\r\n' + b'v' * 61 + b'\r\nms kk 63 F0\r\n' + b'v' * 63 +
                  b'\r\nms k 61 F9 MA\r\n' + b'v' * 61 + b'\r\nappend k 0 0 1\r\nx\r\n',
    'meta-held': b'ms n 1\r\n5\r\nmg n h\r\nma n\r\nmg n h v\r\nmn\r\nincr n 1\r\nme n\r\n',
})
# A multi-get line of exactly KV_LINE_MAX (8192) bytes, then one a byte over.
keys = b'get ' + b' '.join(b'k%04d' % i for i in range(1364))
line = keys + b' ' + b'x' * (8192 - len(keys) - 1)
assert len(line) == 8192
ascii_seeds['line-max'] = line + b'\r\n' + line + b'y\r\n'


REQ = 0x80


def frame(op, key=b'', ext=b'', val=b'', opaque=0, cas=0):
    return struct.pack('!BBHBBHIIQ', REQ, op, len(key), len(ext), 0, 0,
                       len(ext) + len(key) + len(val), opaque, cas) + ext + key + val


def store_ext(flags=0, exp=0):
    return struct.pack('!II', flags, exp)


def incr_ext(delta, initial, exp):
    return struct.pack('!QQI', delta, initial, exp)


bin_seeds = {
    'get': frame(0x00, b'foo', opaque=1) + frame(0x09, b'a') + frame(0x0c, b'b') +
    frame(0x0d, b'c') + frame(0x0a),
    'set': frame(0x01, b'k', store_ext(7, 100), b'hello') + frame(0x11, b'q', store_ext(), b'v'),
    'add-replace': frame(0x02, b'k', store_ext(), b'1') + frame(0x12, b'k', store_ext(), b'2') +
    frame(0x03, b'k', store_ext(), b'3') + frame(0x13, b'k', store_ext(), b'4'),
    'cas': frame(0x01, b'k', store_ext(), b'new', cas=42),
    'append': frame(0x0e, b'k', val=b'xy') + frame(0x19, b'k', val=b'z') +
    frame(0x0f, b'k', val=b'ab') + frame(0x1a, b'k', val=b'c'),
    'delete': frame(0x04, b'k') + frame(0x14, b'k', cas=3),
    'arith': frame(0x05, b'n', incr_ext(1, 10, 0)) + frame(0x15, b'n', incr_ext(2, 0, 60)) +
    frame(0x06, b'n', incr_ext(1, 0, 0xffffffff)) + frame(0x16, b'n', incr_ext(5, 5, 0)),
    'touch-gat': frame(0x1c, b'k', struct.pack('!I', 10)) + frame(0x1d, b'k', struct.pack('!I', 0)) +
    frame(0x1e, b'k', struct.pack('!I', 1)) + frame(0x23, b'k', struct.pack('!I', 2)) +
    frame(0x24, b'k', struct.pack('!I', 3)),
    'misc': frame(0x08) + frame(0x18, ext=struct.pack('!I', 30)) + frame(0x0b) +
    frame(0x10) + frame(0x10, b'settings') + frame(0x1b, ext=struct.pack('!I', 1)) +
    frame(0x07) + frame(0x17),
    'too-large': frame(0x01, b'big', store_ext(), b'v' * 100) + frame(0x00, b'big'),
    'item-limit': frame(0x01, b'k', store_ext(), b'v' * 64) +
    frame(0x01, b'k', store_ext(5), b'v' * 64) + frame(0x01, b'k', store_ext(5), b'v' * 60) +
    frame(0x0e, b'k', val=b'x' * 5),
    'invalid': frame(0x00, b'k', ext=b'\0\0\0\0') + frame(0x42, val=b'junk') + frame(0x04) +
    frame(0x0a, b'k'),
    'bad-lengths': frame(0x00, b'k')[:8] + struct.pack('!I', 0) + frame(0x00, b'k')[12:],
}


def udp(req_id, payload, seq=0, total=1):
    return struct.pack('!HHHH', req_id, seq, total, 0) + payload


udp_seeds = {
    'get': udp(1, b'get foo\r\n'),
    'set': udp(0xffff, b'set k 0 0 5\r\nhello\r\n'),
    'binary': udp(7, frame(0x00, b'k')),
    'multi': udp(2, b'get k\r\n', total=2),
    'header-only': udp(3, b''),
    'meta': udp(8, b'ms k 2 T0 q\r\nhi\r\nmg k v k c\r\nmg nope q\r\nmn\r\n'),
    'short': b'\x00\x01\x00',
    'meta-cut': udp(9, b'mn\r\nmg k v'),
    # Long enough to split into three reply datagrams.
    # A get of hits and misses: a response per key, an empty one first.
    'get-misses': udp(10, b'get nope k nope2 k\r\nverbosity 0\r\nget nope k\r\nmn\r\n'),
    'long': udp(4, b'get ' + b' '.join(b'key%03d' % i for i in range(400)) + b'\r\n'),
}

for name, seeds in (('kvascii', ascii_seeds), ('kvbin', bin_seeds), ('kvudp', udp_seeds)):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    for seed, data in seeds.items():
        with open(os.path.join(d, seed), 'wb') as f:
            f.write(data)
