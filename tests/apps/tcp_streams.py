#!/usr/bin/python3
# tcp_streams.py ADDR PORT N SIZES: N TCP connections at once to an echo
# server, connection i writing a stream of SIZES[i % len] + i bytes (SIZES
# a comma list) in pieces of varied size (1 byte to 64 KiB) while reading
# the echo; every byte must come back once, in order. Prints the bytes
# streamed; exits non-zero, saying why, on a difference, an early EOF or a
# stall of 20 s. Shared by the apps' DPDK tests.
import selectors
import socket
import sys

addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sizes = [int(x) for x in sys.argv[4].split(",")]
sel = selectors.DefaultSelector()
conns = []
for i in range(n):
    s = socket.create_connection((addr, port), timeout=5)
    s.setblocking(False)
    total = sizes[i % len(sizes)] + i
    data = bytes((k * 7 + i * 13 + (k >> 9)) & 255 for k in range(total))
    c = {"s": s, "data": data, "sent": 0, "got": bytearray(), "w": 1 + i * 37}
    conns.append(c)
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
left = n
while left:
    ev = sel.select(timeout=20)
    assert ev, "stalled: %d connections unfinished" % left
    for key, mask in ev:
        c = key.data
        s = c["s"]
        if mask & selectors.EVENT_WRITE and c["sent"] < len(c["data"]):
            k = min(c["w"] % 65536 + 1, len(c["data"]) - c["sent"])
            c["w"] = c["w"] * 1103515245 + 12345
            c["sent"] += s.send(c["data"][c["sent"]:c["sent"] + k])
            if c["sent"] == len(c["data"]):
                sel.modify(s, selectors.EVENT_READ, c)
        if mask & selectors.EVENT_READ:
            b = s.recv(262144)
            assert b, "EOF before the whole echo"
            c["got"] += b
            assert c["data"].startswith(c["got"]), "echo differs"
            if len(c["got"]) == len(c["data"]):
                sel.unregister(s)
                s.close()
                left -= 1
print(sum(len(c["data"]) for c in conns))
