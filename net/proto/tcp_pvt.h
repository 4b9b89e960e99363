/* SPDX-License-Identifier: MIT */
/*
 * The TCP engine's insides, shared by its files: tcp_engine.c (engine,
 * listeners, connection table, lifecycle), tcp_timer.c (the deadline heap
 * and what each timer does), tcp_input.c (SEGMENT ARRIVES), tcp_output.c
 * (segments out), tcp_opts.c (header and options), tcp_isn.c (keyed hash,
 * ISNs, cookies), tcp_conn.c (the application's calls, buffers, delivery),
 * tcp_send.c (what the application queues: the ring and references).
 *
 * Sequence space, for a connection: the SYN is at iss; data byte i is at
 * iss + 1 + i; snd_end is one past the last queued byte, and our FIN, once
 * queued, is at snd_end. snd_una <= snd_nxt <= snd_max <= snd_end + 1.
 * Queued data is [max(snd_una, iss + 1), snd_end): the ranges given by
 * reference (pc_tcb_send_ref()) are listed in sref, oldest first, and the
 * send ring holds the rest, copied, without gaps: its byte for sequence
 * number s is at ring position s - (reference bytes queued before s),
 * sbuf[pos & (sbuf_size - 1)]. Without references that is s itself, less
 * a constant. On receive, rcv_read <= rcv_nxt: the bytes
 * between are held in the receive ring (at rbuf[s & (rbuf_size - 1)]),
 * waiting for the application; out-of-order ranges lie in (rcv_nxt,
 * rcv_read + rcv_space], in the same ring.
 */
#ifndef PC_TCP_PVT_H
#define PC_TCP_PVT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pc_proto.h"
#include "pc_tcp.h"

/* Tunables that are not configuration. */
#define TCP_MAX_LISTEN 16            /* listeners per engine */
#define TCP_OOO_MAX 16               /* out-of-order ranges per connection */
#define TCP_IW_SEGS 10               /* initial window, segments (RFC 6928) */
#define TCP_DEFAULT_MSS 536          /* peer MSS without the option */
#define TCP_MIN_MSS 64               /* smaller MSS options are raised */
#define TCP_SBUF_MIN 4096            /* first send ring */
#define TCP_SREF_MIN 8               /* first list of send references */
#define TCP_FREE_KEEP 64             /* connection structs kept for reuse */
#define TCP_COOKIE_PERIOD_NS (64ull * 1000000000ull) /* a cookie lives 1-2 */
#define TCP_PERSIST_MIN_NS 200000000ull /* first window probe after 200 ms */
#define TCP_OOW_ACK_NS 500000000ull /* out-of-window ACKs: one per 500 ms */
/* After our close, how long the peer may go without acknowledging anything
 * new (while we still have output in flight, or it keeps our window
 * probes answered at zero) before we reset: what bounds a closed
 * connection whose peer neither reads nor goes away. */
#define TCP_LINGER_NS (60ull * 1000000000ull)
#define TCP_NEVER UINT64_MAX
#define TCP_HDR_MAX (PC_IPV4_HLEN + 60)

/* Connection flags. */
#define TF_ACK_NOW (1u << 0)     /* send an ACK at the next output */
#define TF_DELACK (1u << 1)      /* an ACK is owed, delayed */
#define TF_NODELAY (1u << 2)     /* Nagle off */
#define TF_FIN_QUEUED (1u << 3)  /* our FIN follows the queued data */
#define TF_FIN_RCVD (1u << 4)    /* the peer's FIN is in sequence */
#define TF_FIN_SEEN (1u << 5)    /* fin_seq holds the peer's FIN position */
#define TF_EOF_DONE (1u << 6)    /* on_data(len 0) delivered */
#define TF_APP_CLOSED (1u << 7)  /* the application will read no more */
#define TF_LINGER (1u << 8)
#define TF_WANT_WRITABLE (1u << 9)
#define TF_PASSIVE (1u << 10)    /* from a listener */
#define TF_OPEN (1u << 11)       /* on_accept ran: the application knows it */
#define TF_WSCALE (1u << 12)     /* window scaling agreed */
#define TF_PAUSED (1u << 13)     /* pc_tcb_pause() */
#define TF_BACKPRESSURE (1u << 14) /* send buffer full: reading paused */
#define TF_PENDING (1u << 15)    /* on the engine's output list */
#define TF_RTT (1u << 16)        /* a segment is being timed */
#define TF_RECOVERY (1u << 17)   /* in NewReno fast recovery */
#define TF_PERSIST (1u << 18)    /* t_rexmt is the persist timer */
#define TF_REXMT_ONE (1u << 19)  /* retransmit the first unacked segment */
#define TF_DELIVER (1u << 20)    /* deliver held data at the next flush */
#define TF_REAP (1u << 21)       /* on the engine's reap list */
#define TF_DEAD (1u << 22)       /* closed: freed at the next reap */
#define TF_NOTIFY (1u << 23)     /* on_close is owed */
#define TF_KEEPALIVE (1u << 24)
#define TF_SYN_REXMT (1u << 25)  /* our SYN was sent more than once */
#define TF_PARTIAL_SEEN (1u << 26) /* a partial ACK in this recovery */
#define TF_PROBE (1u << 27)      /* the next output sends a window probe */
#define TF_WND_CHECK (1u << 28)  /* held data was read: maybe a window update */
#define TF_DISCARDED (1u << 29)  /* data after our close was dropped: reset
                                    once our output is acknowledged */

struct tcp_range {
        uint32_t start, end;
};

/* Bytes queued by reference: [seq, seq + len) at p. @rb: reference bytes
 * queued before this one (mod 2^32), which places the ring's bytes. */
struct tcp_sref {
        uint32_t seq, len, rb;
        const uint8_t *p;
        pc_tcb_ref_fn done;
        void *arg;
};

struct tcp_listener {
        uint32_t addr;
        uint16_t port;
        bool used;
        unsigned syn_rcvd;       /* half-open connections from it */
        uint64_t cookie_until;   /* cookies are checked until then */
        const struct pc_tcpe_callbacks *cb;
        void *arg;
};

struct pc_tcb {
        struct pc_tcpe *e;
        struct pc_tcb *hnext;    /* hash chain */
        struct pc_tcb *pnext, **pprev; /* output list */
        struct pc_tcb *rnext;    /* reap list */
        struct pc_tcb *tw_prev, *tw_next; /* TIME-WAIT list, oldest first */
        uint32_t heap_idx;       /* UINT32_MAX when not in the heap */
        uint64_t deadline;       /* min of the t_* below */
        uint64_t t_rexmt, t_delack, t_keep, t_2msl;

        uint32_t laddr, raddr;
        uint16_t lport, rport;
        uint8_t state;
        uint32_t flags;
        int close_err;
        struct tcp_listener *lst; /* passive: where it came from */
        const struct pc_tcpe_callbacks *cb;
        void *arg;
        void *data;

        /* Send side. */
        uint32_t iss, snd_una, snd_nxt, snd_max, snd_end;
        uint32_t snd_wnd, snd_wl1, snd_wl2, max_sndwnd;
        uint8_t snd_ws, rcv_ws;
        uint16_t mss;            /* what we send */
        uint32_t cwnd, ssthresh, recover, bytes_acked;
        unsigned dupacks;
        uint32_t lt_base;        /* SND.MAX at the first duplicate ACK */
        uint64_t srtt, rttvar, rto;
        uint32_t rtt_seq;
        uint64_t rtt_ts;
        unsigned retries;        /* timeouts (or unanswered probes) in a row */
        unsigned persist_n;      /* window probes since the window shut */
        uint8_t *sbuf;
        uint32_t sbuf_size;
        struct tcp_sref *sref;   /* a ring of sref_cap (a power of two) */
        uint32_t sref_head, sref_n, sref_cap;
        uint32_t sref_bytes;     /* reference bytes ever queued */
        uint32_t snd_queued, snd_acked; /* data bytes ever queued / reported
                                           to on_acked (mod 2^32) */

        /* Receive side. */
        uint32_t irs, rcv_nxt, rcv_read, rcv_adv, fin_seq;
        uint32_t rcv_space;      /* the window we offer when all is read */
        uint32_t rcv_unacked;    /* in-order bytes not yet acknowledged */
        uint16_t rcv_mss;        /* largest segment seen */
        uint8_t *rbuf;
        uint32_t rbuf_size;
        unsigned nooo;
        struct tcp_range ooo[TCP_OOO_MAX];

        /* Keepalive. */
        uint64_t ka_idle, ka_intvl, last_rx;
        uint64_t oow_ts;         /* last ACK to an out-of-window segment */
        unsigned ka_count, ka_sent;
};

struct pc_tcpe {
        struct pc_tcpe_config cfg;
        struct pc_tcpe_ops ops;
        void *ctx;
        uint64_t now;
        uint64_t key[2];         /* SipHash key */
        uint64_t hseed;          /* table hash seed */

        struct pc_tcb **tab;
        uint32_t tab_mask;
        struct pc_tcb **heap;
        uint32_t heap_len, heap_cap;
        struct pc_tcb *out_head, **out_tailp; /* output list, FIFO */
        struct pc_tcb *reap;
        struct pc_tcb *tw_head, *tw_tail;
        struct pc_tcb *free_list;
        unsigned nfree, nconns;
        struct tcp_listener lst[TCP_MAX_LISTEN];
        uint16_t next_port;
        uint64_t chal_start;
        unsigned chal_count;
        struct pc_tcpe_stats st;
};

/* Sequence-number comparisons modulo 2^32 (RFC 9293 3.4). */
static inline bool seq_lt(uint32_t a, uint32_t b)
{
        return (int32_t)(a - b) < 0;
}

static inline bool seq_le(uint32_t a, uint32_t b)
{
        return (int32_t)(a - b) <= 0;
}

static inline bool seq_gt(uint32_t a, uint32_t b)
{
        return (int32_t)(a - b) > 0;
}

static inline bool seq_ge(uint32_t a, uint32_t b)
{
        return (int32_t)(a - b) >= 0;
}

static inline uint32_t seq_max(uint32_t a, uint32_t b)
{
        return seq_gt(a, b) ? a : b;
}

static inline uint32_t min_u32(uint32_t a, uint32_t b)
{
        return a < b ? a : b;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

/* The application's callbacks while it may hear of @c, else NULL. */
static inline const struct pc_tcpe_callbacks *tcb_app(const struct pc_tcb *c)
{
        return (c->flags & (TF_OPEN | TF_NOTIFY | TF_DEAD)) == TF_OPEN ? c->cb : NULL;
}

/* Copy @len bytes to the ring of @size bytes at position @pos (wrapping). */
static inline void pc__ring_copy_in(uint8_t *ring, uint32_t size, uint32_t pos, const uint8_t *p,
                                    size_t len)
{
        uint32_t off = pos & (size - 1), n = min_u32((uint32_t)len, size - off);

        memcpy(ring + off, p, n);
        if (len > n)
                memcpy(ring, p + n, len - n);
}

static inline bool tcb_synced(const struct pc_tcb *c)
{
        return c->state >= PC_TCP_ESTABLISHED;
}

/* First sequence number of queued data still in the send ring. */
static inline uint32_t snd_data_start(const struct pc_tcb *c)
{
        return seq_max(c->snd_una, c->iss + 1);
}

static inline uint32_t snd_buffered(const struct pc_tcb *c)
{
        uint32_t s = snd_data_start(c);

        return seq_lt(s, c->snd_end) ? c->snd_end - s : 0;
}

/* Whether our FIN has been acknowledged. */
static inline bool fin_acked(const struct pc_tcb *c)
{
        return (c->flags & TF_FIN_QUEUED) && seq_gt(c->snd_una, c->snd_end);
}

/* One past the last in-sequence data byte (the FIN is not data). */
static inline uint32_t rcv_data_end(const struct pc_tcb *c)
{
        return (c->flags & TF_FIN_RCVD) ? c->fin_seq : c->rcv_nxt;
}

/* tcp_engine.c */
void pc__tcp_count(struct pc_tcpe *e, enum pc_tcp_err why);
struct pc_tcb *pc__tcp_lookup(struct pc_tcpe *e, uint32_t laddr, uint16_t lport,
                              uint32_t raddr, uint16_t rport);
struct tcp_listener *pc__tcp_listener(struct pc_tcpe *e, uint32_t addr, uint16_t port);
struct pc_tcb *pc__tcb_new(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                           uint16_t rport);
void pc__tcb_set_state(struct pc_tcb *c, enum pc_tcp_state s);
void pc__tcb_done(struct pc_tcb *c, int err);
void pc__tcb_notify(struct pc_tcb *c, int err);
void pc__tcb_pending(struct pc_tcb *c);
void pc__tcp_reap(struct pc_tcpe *e);
bool pc__tcp_make_room(struct pc_tcpe *e);
void pc__tcp_mem(struct pc_tcpe *e, int64_t delta);

/* tcp_timer.c */
void pc__tcb_timers(struct pc_tcb *c);
void pc__tcp_heap_remove(struct pc_tcpe *e, struct pc_tcb *c);
void pc__tcp_timers_run(struct pc_tcpe *e, uint64_t now);
void pc__tcb_rtt_sample(struct pc_tcb *c, uint64_t rtt);
void pc__tcb_rexmt_start(struct pc_tcb *c);
void pc__tcb_rexmt_stop(struct pc_tcb *c);
void pc__tcb_persist_start(struct pc_tcb *c);
void pc__tcb_delack_start(struct pc_tcb *c);
void pc__tcb_keep_start(struct pc_tcb *c);
void pc__tcb_2msl_start(struct pc_tcb *c, uint64_t ns);

/* tcp_input.c */
enum pc_tcp_err pc__tcb_input(struct pc_tcb *c, struct pc_tcp_seg *s);

/* tcp_output.c */
void pc__tcb_output(struct pc_tcb *c);
void pc__tcb_send_ack(struct pc_tcb *c);
void pc__tcb_send_rst(struct pc_tcb *c);
void pc__tcp_reply_rst(struct pc_tcpe *e, uint32_t saddr, uint32_t daddr,
                       const struct pc_tcp_seg *s);
void pc__tcp_emit(struct pc_tcpe *e, struct pc_tcb *c, uint32_t saddr, uint32_t daddr,
                  uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                  uint16_t wnd, const uint8_t *opts, size_t optlen, const uint8_t *d0,
                  size_t l0, const uint8_t *d1, size_t l1);
/* pc__tcp_emit() of @n payload pieces (at most PC_TCP_FRAME_PIECES). */
void pc__tcp_emitv(struct pc_tcpe *e, struct pc_tcb *c, uint32_t saddr, uint32_t daddr,
                   uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                   uint16_t wnd, const uint8_t *opts, size_t optlen, const uint8_t *const *d,
                   const size_t *l, unsigned n);
bool pc__tcp_challenge_ok(struct pc_tcpe *e);
uint32_t pc__tcb_rcv_wnd(const struct pc_tcb *c);

/* tcp_opts.c */
size_t pc__tcp_syn_opts(uint8_t *o, uint16_t mss, int wscale);

/* tcp_isn.c */
uint64_t pc__siphash(const uint64_t key[2], const void *msg, size_t len);
uint32_t pc__tcp_isn(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                     uint16_t rport);
uint32_t pc__tcp_cookie(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                        uint16_t rport, uint32_t peer_isn, uint16_t mss);
uint16_t pc__tcp_cookie_check(struct pc_tcpe *e, uint32_t laddr, uint16_t lport,
                              uint32_t raddr, uint16_t rport, uint32_t peer_isn,
                              uint32_t cookie);

/* tcp_send.c */
uint32_t pc__tcb_ring_pos(const struct pc_tcb *c, uint32_t s);
/* The pieces of @len bytes from @seq, at most PC_TCP_FRAME_PIECES of
 * them: how many, and in *@covered how many bytes they hold. */
unsigned pc__tcb_pieces(const struct pc_tcb *c, uint32_t seq, uint32_t len, const uint8_t **d,
                        size_t *l, uint32_t *covered);
/* Give back the references the peer acknowledged (@all: every one). */
void pc__tcb_refs_release(struct pc_tcb *c, bool all);
void pc__tcb_acked(struct pc_tcb *c);

/* tcp_conn.c */
enum pc_tcp_err pc__tcb_rcv_data(struct pc_tcb *c, uint32_t seq, const uint8_t *data,
                                 size_t len);
void pc__tcb_deliver(struct pc_tcb *c);
void pc__tcb_free_bufs(struct pc_tcb *c);
/* Free the receive ring and forget what it held (not inside on_data: the
 * data it was given may lie there). */
void pc__tcb_free_rbuf(struct pc_tcb *c);
int pc__tcb_close(struct pc_tcb *c);

#endif /* PC_TCP_PVT_H */
