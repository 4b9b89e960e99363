/* SPDX-License-Identifier: MIT */
/*
 * A wire between two TCP engines for the tests: what one emits reaches the
 * other after a fixed one-way delay, on a virtual clock that jumps from
 * event to event (a segment's arrival or an engine's timer), so every test
 * is deterministic and none waits. A filter sees each segment as it leaves
 * and may drop it, duplicate it or hold it back (reordering). Either end
 * may instead be a "raw" host: its segments are captured for the test to
 * look at, and the test injects the segments it crafts.
 *
 * Also here: a per-connection test application (struct tapp) that records
 * what arrives, sends a known byte pattern in chunks, and counts events.
 */
#ifndef TCP_WIRE_H
#define TCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pc_proto.h"
#include "pc_tcp.h"

#define IP_A 0x0a000001u /* engine 0 */
#define IP_B 0x0a000002u /* engine 1 */
#define MS 1000000ull
#define SEC 1000000000ull

enum { WIRE_PASS, WIRE_DROP, WIRE_DUP, WIRE_DELAY };

#define WIRE_NCAP 4096

struct wire;

/* Called for each segment @from emits (parsed into @s); returns WIRE_*.
 * For WIRE_DELAY, *@extra is the added delay. */
typedef int (*wire_filter_fn)(struct wire *w, int from, const struct pc_tcp_seg *s,
                              uint64_t *extra, void *arg);

struct wire_pkt {
        uint64_t at, order;
        int to;
        size_t len;
        uint8_t *buf; /* the IPv4 datagram */
};

/* A segment a raw end received. */
struct wire_cap {
        struct pc_tcp_seg s;
        uint8_t flags;
        size_t len;
};

struct wire {
        struct pc_tcpe *e[2];
        uint32_t addr[2];
        bool raw[2];
        uint64_t now, delay;
        struct wire_pkt *q;
        size_t nq, qcap;
        uint64_t order;
        wire_filter_fn filter;
        void *filter_arg;
        bool fail_drops; /* a dropped segment is an emit failure (-ENOBUFS) */
        uint64_t sent[2], data_segs[2], dropped, duped;
        unsigned max_pieces; /* most payload pieces of one emitted frame */
        struct wire_cap cap[WIRE_NCAP]; /* the last ones, a ring */
        size_t ncap;                    /* captured in all */
        int ctx[2];
        uint32_t isn[2]; /* if non-zero: the ISN engine i uses */
};

/* Make both ends (@cfg NULL: defaults with a fixed secret); @raw0 makes
 * end 0 a raw host. The clock starts at 1 s. */
void wire_init(struct wire *w, const struct pc_tcpe_config *cfg0,
               const struct pc_tcpe_config *cfg1, bool raw0);
void wire_fini(struct wire *w);

/* Flush both engines at the current time. */
void wire_flush(struct wire *w);

/* Process the next event (arrival or timer) at or before @limit; false
 * when there is none. */
bool wire_step(struct wire *w, uint64_t limit);

/* Run events until @cond(@arg) holds (checked after each) or the clock
 * would pass @limit (absolute), where the clock then stops. Returns
 * whether @cond held. NULL @cond: run until @limit. */
bool wire_run(struct wire *w, bool (*cond)(void *), void *arg, uint64_t limit);

/* Write a TCP segment (header, options, payload, checksum) into @buf;
 * returns its length. */
size_t tcp_seg_build(uint8_t *buf, uint32_t saddr, uint32_t daddr, uint16_t sport,
                     uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
                     const uint8_t *opts, size_t optlen, const void *data, size_t len);

/* Build a segment from the raw end @from's address and hand it to the
 * other engine now (then flush it). Returns pc_tcpe_input()'s result. */
enum pc_tcp_err wire_inject(struct wire *w, int from, uint16_t sport, uint16_t dport,
                            uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
                            const uint8_t *opts, size_t optlen, const void *data, size_t len);

/* The last segment a raw end captured, NULL if none. */
const struct wire_cap *wire_last(const struct wire *w);

/* Counter helpers. */
uint64_t wire_drops(const struct wire *w, int i, enum pc_tcp_err why);
void wire_stats(const struct wire *w, int i, struct pc_tcpe_stats *st);

/* ---- The test application ------------------------------------------------- */

struct tapp {
        struct pc_tcb *c;
        int side;
        unsigned accepted, closed, eof, writable;
        uint64_t acked; /* bytes on_acked reported */
        int close_err;
        uint8_t *rx;
        size_t rx_len, rx_cap;
        uint64_t tx_total, tx_sent; /* pattern bytes to send, sent so far */
        size_t chunk;               /* bytes per pc_tcb_send() (8192) */
        bool close_when_sent;       /* pc_tcb_close() once tx_total is queued */
        bool shut_when_sent;        /* pc_tcb_shutdown() then */
        bool echo;                  /* send back what arrives */
        bool no_auto;               /* pc_tcb_linger() at accept */
        bool pause_at_accept;
        bool pause_each_chunk;      /* pc_tcb_pause() after each on_data */
        int refused;                /* -ENOBUFS seen */
        uint64_t pattern_seed;
};

/* A listener's server: up to 64 connections' apps, filled as they arrive. */
struct tserver {
        struct tapp apps[64];
        unsigned n;
        struct tapp tmpl; /* settings copied into each new app */
};

extern const struct pc_tcpe_callbacks tapp_cb;   /* arg: struct tapp * */
extern const struct pc_tcpe_callbacks tserver_cb; /* arg: struct tserver * */

uint8_t tpattern(uint64_t seed, uint64_t i);
/* Queue pattern bytes until tx_total or -ENOBUFS. */
void tapp_pump(struct tapp *a);
/* Whether @a received exactly @n pattern bytes of @seed. */
bool tapp_rx_is_pattern(const struct tapp *a, uint64_t seed, uint64_t n);
void tapp_free(struct tapp *a);
void tserver_free(struct tserver *s);

#endif
