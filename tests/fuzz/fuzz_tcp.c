/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the TCP engine (net/proto/pc_tcp.h): arbitrary segments
 * to a listening engine, or to one connection it has established, with the
 * clock, the timers and the application's calls interleaved.
 *
 * An input is one mode byte, then records of [ctl][len][len bytes]:
 *
 *   mode  bit 0: the segments go to an established connection (else to the
 *                listener, from varying ports)
 *         bit 6: (without bit 0) the engine first connects to the peer, so
 *                the segments meet SYN-SENT
 *         bit 1: a 4 KiB receive window (window edges, zero windows)
 *         bit 2: the application starts paused (held data)
 *         bit 3: no window scaling offered
 *         bit 4: a backlog of 2 (SYN cookies)
 *         bit 5: the application echoes what it reads
 *   ctl   bit 0: fix the checksum
 *         bit 1: rebase: the connection's ports, and sequence and ACK
 *                fields taken as offsets from the first sequence numbers
 *                of the connection (the peer's data, ours); to the
 *                listener, the ACK field as an offset from the last ISS
 *                the engine sent (so offset 1 completes a handshake, SYN
 *                cookie included); in SYN-SENT, from our ISS
 *         bits 2-3: then advance the clock 0, 1 ms, 300 ms or 30 s (and run
 *                the timers)
 *         bit 4: flush after it
 *         bit 5: not a segment but an application call: the first byte
 *                picks it (send the rest, close, shutdown, pause or resume,
 *                abort, Nagle on, keepalive)
 *         bit 6: a two-byte length (big segments)
 *
 * Oracles: every segment the engine emits parses back (IPv4 and TCP
 * checksums included), pc_tcpe_audit() holds after every step, memory stays
 * within the configured caps, and the sanitizers see no bad access or leak.
 * At the end the clock runs 30 minutes on, so every timer path runs out.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_proto.h"
#include "pc_tcp.h"

#define CHECK(c)                                                                                \
        do {                                                                                    \
                if (!(c)) {                                                                     \
                        fprintf(stderr, "fuzz_tcp: %s:%d: %s\n", __FILE__, __LINE__, #c);       \
                        abort();                                                                \
                }                                                                               \
        } while (0)

#define PEER 0x0a000001u
#define US 0x0a000002u
#define PEER_PORT 5555
#define PORT 80
#define CLIENT_PORT 6000

struct fz {
        struct pc_tcpe *e;
        struct pc_tcb *conn;    /* the established connection, NULL once gone */
        uint32_t last_seq, last_ack; /* what the engine last sent to the peer */
        uint8_t last_flags;
        uint64_t now;
        bool echo, paused;
        uint32_t rcv_base, snd_base; /* the first data byte each way */
};

static struct fz fz;

static int emit(void *ctx, const struct pc_tcp_frame *f)
{
        static uint8_t buf[70000];
        struct pc_pkt p;
        struct pc_tcp_seg s;
        size_t n;

        (void)ctx;
        CHECK(f->len <= sizeof(buf) && f->hdr_len <= f->len);
        memcpy(buf, f->hdr, f->hdr_len);
        n = f->hdr_len;
        CHECK(f->pieces <= PC_TCP_FRAME_PIECES);
        for (unsigned i = 0; i < f->pieces; i++) {
                CHECK(n + f->data_len[i] <= f->len);
                if (f->data_len[i])
                        memcpy(buf + n, f->data[i], f->data_len[i]);
                n += f->data_len[i];
        }
        CHECK(n == f->len);
        memset(&p, 0, sizeof(p));
        CHECK(pc_ipv4_parse(buf, n, &p) == PC_PKT_OK);
        CHECK(p.ip_proto == PC_IPPROTO_TCP && p.ip_src == US && p.ip_dst == f->daddr);
        CHECK(pc_tcp_parse(p.ip_src, p.ip_dst, buf + p.l4_off, p.l4_len, &s) == PC_TCP_OK);
        fz.last_seq = s.seq;
        fz.last_ack = s.ack;
        fz.last_flags = s.flags;
        return 0;
}

static void on_accept(struct pc_tcb *c, void *arg)
{
        struct pc_tcb_info i;

        (void)arg;
        pc_tcb_info(c, &i);
        if ((i.rport == PEER_PORT || i.lport == CLIENT_PORT) && fz.conn == NULL) {
                fz.conn = c;
                if (fz.paused)
                        pc_tcb_pause(c, true);
        }
}

static void on_data(struct pc_tcb *c, const void *data, size_t len, void *arg)
{
        (void)arg;
        if (fz.echo && len)
                pc_tcb_send(c, data, len);
}

static void on_close(struct pc_tcb *c, int err, void *arg)
{
        (void)err, (void)arg;
        if (c == fz.conn)
                fz.conn = NULL;
}

static void on_writable(struct pc_tcb *c, void *arg)
{
        (void)c, (void)arg;
}

static const struct pc_tcpe_callbacks cb = {
        .on_accept = on_accept,
        .on_data = on_data,
        .on_close = on_close,
        .on_writable = on_writable,
};

static void wr32(uint8_t *b, uint32_t v)
{
        b[0] = (uint8_t)(v >> 24), b[1] = (uint8_t)(v >> 16);
        b[2] = (uint8_t)(v >> 8), b[3] = (uint8_t)v;
}

static uint32_t rd32(const uint8_t *b)
{
        return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void check(const struct pc_tcpe_config *cfg)
{
        struct pc_tcpe_stats st;

        CHECK(pc_tcpe_audit(fz.e) == 0);
        pc_tcpe_stats(fz.e, &st);
        CHECK(st.conns <= cfg->max_conns);
        /* Each connection: a send ring within 2 * snd_cap, a receive ring
         * within 2 * rcv_cap (powers of two); one more for a connection the
         * application aborted, whose buffers wait for the next flush. */
        CHECK(st.mem <= (uint64_t)(st.conns + 1) * 2 * (cfg->snd_cap + cfg->rcv_cap));
        if (fz.conn) {
                struct pc_tcb_info i;
                pc_tcb_info(fz.conn, &i);
                CHECK(i.held <= cfg->rcv_cap && i.buffered <= cfg->snd_cap);
        }
}

/* Ports and sequence numbers of segment @b made to fit (ctl bit 1). */
static void rebase(uint8_t *b, uint8_t mode)
{
        uint16_t sp = PEER_PORT, dp = PORT;
        uint32_t seq_base = fz.rcv_base, ack_base = fz.snd_base;

        if (!(mode & 1) && (mode & 64)) {
                sp = PORT;
                dp = CLIENT_PORT;
                seq_base = 0;
        } else if (!(mode & 1)) {
                sp = (uint16_t)(PEER_PORT + b[0]);
                seq_base = 0;
                ack_base = fz.last_seq;
        }
        b[0] = (uint8_t)(sp >> 8), b[1] = (uint8_t)sp;
        b[2] = (uint8_t)(dp >> 8), b[3] = (uint8_t)dp;
        wr32(b + 4, rd32(b + 4) + seq_base);
        wr32(b + 8, rd32(b + 8) + ack_base);
}

static void app_call(const uint8_t *b, size_t n)
{
        struct pc_tcb *c = fz.conn;

        if (c == NULL || n == 0)
                return;
        switch (b[0] % 7) {
        case 0:
                pc_tcb_send(c, b + 1, n - 1);
                break;
        case 1:
                pc_tcb_close(c);
                break;
        case 2:
                pc_tcb_shutdown(c);
                break;
        case 3:
                fz.paused = !fz.paused;
                pc_tcb_pause(c, fz.paused);
                break;
        case 4:
                pc_tcb_abort(c);
                break;
        case 5:
                pc_tcb_nodelay(c, false);
                break;
        default:
                pc_tcb_keepalive(c, 1000000000ull, 100000000ull, 2);
                break;
        }
}

static void handshake(void)
{
        uint8_t b[28] = {0};
        static const uint8_t opts[8] = {2, 4, 0x05, 0xb4, 1, 3, 3, 6};
        uint16_t c;

        b[0] = PEER_PORT >> 8, b[1] = PEER_PORT & 0xff, b[3] = PORT;
        wr32(b + 4, 1000);
        b[12] = 7 << 4;
        b[13] = PC_TCP_SYN;
        b[14] = b[15] = 0xff;
        memcpy(b + 20, opts, 8);
        c = pc_csum_fold(pc_csum_add(pc_ipv4_pseudo(PEER, US, PC_IPPROTO_TCP, 28), b, 28));
        b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
        pc_tcpe_input(fz.e, PEER, US, b, 28, fz.now);
        pc_tcpe_flush(fz.e, fz.now);
        CHECK(fz.last_flags == (PC_TCP_SYN | PC_TCP_ACK));
        memset(b, 0, sizeof(b));
        b[0] = PEER_PORT >> 8, b[1] = PEER_PORT & 0xff, b[3] = PORT;
        wr32(b + 4, 1001);
        wr32(b + 8, fz.last_seq + 1);
        b[12] = 5 << 4;
        b[13] = PC_TCP_ACK;
        b[14] = b[15] = 0xff;
        c = pc_csum_fold(pc_csum_add(pc_ipv4_pseudo(PEER, US, PC_IPPROTO_TCP, 20), b, 20));
        b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
        pc_tcpe_input(fz.e, PEER, US, b, 20, fz.now);
        pc_tcpe_flush(fz.e, fz.now);
        CHECK(fz.conn != NULL);
        fz.rcv_base = 1001;
        fz.snd_base = fz.last_seq + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const uint64_t steps[4] = {0, 1000000ull, 300000000ull, 30000000000ull};
        struct pc_tcpe_config cfg;
        struct pc_tcpe_ops ops = {.emit = emit};
        uint8_t mode, *seg;
        size_t i = 1;
        unsigned nrec = 0;

        if (size < 1)
                return 0;
        mode = data[0];
        memset(&fz, 0, sizeof(fz));
        memset(&cfg, 0, sizeof(cfg));
        memset(cfg.secret, 0x33, sizeof(cfg.secret));
        cfg.max_conns = 64;
        cfg.snd_cap = 64 * 1024;
        cfg.rcv_cap = (mode & 2) ? 4096 : 64 * 1024;
        cfg.no_wscale = (mode & 8) != 0;
        cfg.backlog = (mode & 16) ? 2 : 16;
        cfg.rx_chunk = 4096;
        fz.echo = (mode & 32) != 0;
        fz.paused = (mode & 4) != 0;
        fz.now = 1000000000ull;
        CHECK(pc_tcpe_create(&cfg, &ops, NULL, &fz.e) == 0);
        CHECK(pc_tcpe_listen(fz.e, US, PORT, &cb, NULL) == 0);
        if (mode & 1) {
                handshake();
        } else if (mode & 64) {
                /* Our SYN to the peer's port 80. */
                CHECK(pc_tcpe_connect(fz.e, US, CLIENT_PORT, PEER, PORT, &cb, NULL, fz.now,
                                      &fz.conn) == 0);
                pc_tcpe_flush(fz.e, fz.now);
                CHECK(fz.last_flags == PC_TCP_SYN);
                fz.snd_base = fz.last_seq;
        }
        check(&cfg);

        seg = malloc(65536);
        CHECK(seg != NULL);
        while (i + 2 <= size && nrec++ < 512) {
                uint8_t ctl = data[i++];
                size_t len = data[i++];
                if ((ctl & 0x40) && i < size)
                        len = len << 8 | data[i++];
                if (len > size - i)
                        len = size - i;
                /* A buffer of the segment's exact size: ASan sees overreads. */
                memcpy(seg, data + i, len);
                i += len;
                if (ctl & 0x20) {
                        app_call(seg, len);
                } else {
                        uint8_t *b = len ? malloc(len) : malloc(1);
                        CHECK(b != NULL);
                        memcpy(b, seg, len);
                        if (len >= PC_TCP_HLEN) {
                                if (ctl & 2)
                                        rebase(b, mode);
                                if (ctl & 1) {
                                        uint16_t c;
                                        b[16] = b[17] = 0;
                                        c = pc_csum_fold(pc_csum_add(
                                                pc_ipv4_pseudo(PEER, US, PC_IPPROTO_TCP, len), b,
                                                len));
                                        b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
                                }
                        }
                        CHECK((unsigned)pc_tcpe_input(fz.e, PEER, US, b, len, fz.now) <
                              PC_TCP_NR);
                        free(b);
                }
                if (ctl & 0x0c) {
                        fz.now += steps[(ctl >> 2) & 3];
                        pc_tcpe_tick(fz.e, fz.now);
                }
                if (ctl & 0x10)
                        pc_tcpe_flush(fz.e, fz.now);
                check(&cfg);
        }
        free(seg);
        pc_tcpe_flush(fz.e, fz.now);
        check(&cfg);
        /* Let every timer run out: retransmissions, persist, keepalive,
         * TIME-WAIT, the half-open connections' end. */
        for (uint64_t end = fz.now + 1800000000000ull;;) {
                uint64_t d = pc_tcpe_next_deadline(fz.e);
                if (d > end)
                        break;
                fz.now = d > fz.now ? d : fz.now;
                pc_tcpe_tick(fz.e, fz.now);
                check(&cfg);
        }
        pc_tcpe_destroy(fz.e);
        return 0;
}
