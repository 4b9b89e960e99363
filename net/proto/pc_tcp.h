/* SPDX-License-Identifier: MIT */
/*
 * percore's TCP (RFC 9293) as a pure engine over byte buffers, with no
 * DPDK, no clock and no thread of its own, so it is unit-tested with a
 * virtual clock and fuzzed on its own like the rest of proto/.
 *
 * One engine serves one worker: it owns that worker's connections and is
 * never shared, so nothing in it is locked or atomic. Its caller (the
 * DPDK stack) drives it through four doors:
 *
 *   - segments in: pc_tcpe_input() with the TCP bytes of one IPv4 datagram
 *     (header and payload) and the datagram's addresses;
 *   - segments out: the emit callback (struct pc_tcpe_ops) receives each
 *     outgoing datagram as a descriptor: a complete IPv4 + TCP header with
 *     both checksums filled, then the payload in a few pieces (the send
 *     buffer is a ring, and bytes given by reference, pc_tcb_send_ref(),
 *     stay where the application keeps them). The engine knows no link
 *     layer: the caller resolves the next hop,
 *     writes the Ethernet header into a fresh mbuf and copies the pieces
 *     behind it. That is the one copy a copying stack makes anyway (send
 *     buffer to frame), a test wire concatenates the same pieces, and a
 *     later checksum offload only has to skip what the engine filled;
 *   - time: every entry point takes "now" (any monotonic clock, in ns).
 *     Each connection keeps its timers (retransmission or persist, delayed
 *     ACK, keepalive, TIME-WAIT) as deadlines, and the engine keeps its
 *     connections in a heap ordered by their earliest one, so the caller
 *     needs one timer of its own: armed at pc_tcpe_next_deadline(), and on
 *     expiry calling pc_tcpe_tick(). One heap entry per worker rather than
 *     one per connection, and a test drives all of it with a fake clock;
 *   - output: pc_tcb_send() and the state changes queue work, and
 *     pc_tcpe_flush() (called once per poller pass, after the RX burst)
 *     sends it, so the sends a handler makes in one pass leave as full
 *     segments and one ACK covers a burst's segments.
 *
 * Application events reach per-connection callbacks of the same shape as
 * the kernel backend's struct pc_tcp_callbacks (pc_knet.h): accept (or
 * connected), data (length 0 at the peer's FIN), writable, and close with
 * 0 or -errno, so that backend's service API can sit on this engine.
 *
 * What it implements: the whole state machine (simultaneous open and
 * close included), a bounded SYN backlog per listener with SYN cookies
 * past it, keyed ISNs (RFC 6528), MSS and window scale (RFC 7323; no
 * timestamps, hence no PAWS: an old duplicate that a path held for as long
 * as the sequence space takes to wrap, 1.7 s at 10 Gb/s, could be taken
 * for new data; the paths this stack serves hold a segment microseconds),
 * RTO per RFC 6298 (Karn, backoff, retry limits), NewReno fast retransmit
 * and recovery (RFC 5681, 6582) from an initial window of 10 segments,
 * delayed ACKs, Nagle (off by default), persist probes, sender and
 * receiver silly-window avoidance, a bounded out-of-order store, a short
 * TIME-WAIT, RFC 5961's challenge ACKs (rate-limited), resets for
 * segments to no connection, keepalive (opt-in), send and receive caps
 * per connection and a connection cap per engine, gather sends and sends
 * by reference (no copy into the send buffer). No SACK, no ECN, no
 * urgent data (the urgent flag is ignored and its bytes are ordinary).
 *
 * Every segment the engine does not take is counted by reason
 * (enum pc_tcp_err); bad input is a counted drop, never a crash, and the
 * memory an engine holds is bounded by its configuration whatever arrives.
 *
 * Threads: an engine and its connections belong to the thread that
 * created them; none of these functions may run concurrently on one
 * engine. Multi-byte values are in host byte order.
 */
#ifndef PC_TCP_H
#define PC_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_TCP_HLEN 20

#define PC_TCP_FIN 0x01
#define PC_TCP_SYN 0x02
#define PC_TCP_RST 0x04
#define PC_TCP_PSH 0x08
#define PC_TCP_ACK 0x10
#define PC_TCP_URG 0x20

/** Why a segment was not taken. The first group is malformed input. */
enum pc_tcp_err {
        PC_TCP_OK = 0,
        PC_TCP_SHORT,        /**< shorter than a TCP header */
        PC_TCP_HLEN_BAD,     /**< data offset < 5 or beyond the segment (or a
                                  segment over 64 KiB) */
        PC_TCP_CSUM,         /**< bad checksum */
        PC_TCP_OPTIONS,      /**< an option with a bad length */
        PC_TCP_PORT,         /**< source or destination port 0 */
        PC_TCP_ADDR,         /**< source address 0, broadcast or multicast */
        PC_TCP_FLAGS,        /**< SYN with RST or FIN, or none of SYN, ACK, RST */
        PC_TCP_MALFORMED_END, /**< codes below are well-formed segments */
        PC_TCP_NO_CONN = PC_TCP_MALFORMED_END, /**< no connection, no listener
                                                    (a reset was sent) */
        PC_TCP_LISTEN,       /**< to a listener, neither a SYN nor a cookie */
        PC_TCP_COOKIE,       /**< an ACK to a listener with a bad SYN cookie */
        PC_TCP_CONN_LIMIT,   /**< a SYN past the engine's connection cap */
        PC_TCP_NOMEM,        /**< no memory for the connection or its data */
        PC_TCP_SYN_SENT,     /**< in SYN-SENT: bad ACK, RST without ACK, no SYN */
        PC_TCP_WINDOW,       /**< outside the receive window (an ACK was sent) */
        PC_TCP_RST_CHALLENGE, /**< RST in the window but not at RCV.NXT */
        PC_TCP_SYN_CHALLENGE, /**< SYN on a synchronized connection */
        PC_TCP_RST_TIME_WAIT, /**< RST in TIME-WAIT (ignored, RFC 1337) */
        PC_TCP_ACK_INVALID,  /**< ACK of unsent data or too old (RFC 5961 5.2) */
        PC_TCP_OOO_FULL,     /**< out of order with the out-of-order store full */
        PC_TCP_CLOSED,       /**< data after our close (the connection is reset) */
        PC_TCP_DISCARD,      /**< data after our close while our output is not
                                  all acknowledged (dropped unacknowledged;
                                  the reset waits for the output) */
        PC_TCP_NR
};

/** Short name of a reason ("csum", "window"), "?" for an unknown one. */
const char *pc_tcp_err_name(enum pc_tcp_err e);

/** Whether @e counts as malformed input (rather than one we don't take). */
static inline bool pc_tcp_err_malformed(enum pc_tcp_err e)
{
        return e > PC_TCP_OK && e < PC_TCP_MALFORMED_END;
}

/** A parsed segment. Pointers are into the caller's buffer. */
struct pc_tcp_seg {
        uint16_t sport, dport;
        uint32_t seq, ack;
        uint8_t flags;     /**< PC_TCP_* bits */
        uint16_t wnd;      /**< the window field, unscaled */
        size_t hlen;       /**< header length, options included */
        const uint8_t *data;
        size_t len;        /**< payload bytes */
        uint16_t mss;      /**< MSS option, 0 when absent */
        int8_t wscale;     /**< window scale option (0..14), -1 when absent */
};

/**
 * Parse the TCP segment @buf of @len bytes (the IPv4 payload) from @saddr
 * to @daddr: header and data offset, checksum over the pseudo-header,
 * options, ports, flags. Returns PC_TCP_OK or a malformed reason.
 */
enum pc_tcp_err pc_tcp_parse(uint32_t saddr, uint32_t daddr, const uint8_t *buf, size_t len,
                             struct pc_tcp_seg *s);

/** TCP states (RFC 9293 3.3.2). */
enum pc_tcp_state {
        PC_TCP_CLOSED_STATE = 0,
        PC_TCP_LISTEN_STATE,
        PC_TCP_SYN_SENT_STATE,
        PC_TCP_SYN_RCVD_STATE,
        PC_TCP_ESTABLISHED,
        PC_TCP_FIN_WAIT_1,
        PC_TCP_FIN_WAIT_2,
        PC_TCP_CLOSE_WAIT,
        PC_TCP_CLOSING,
        PC_TCP_LAST_ACK,
        PC_TCP_TIME_WAIT,
        PC_TCP_STATE_NR
};

/** The RFC's name of @s ("SYN-RECEIVED"), "?" for an unknown one. */
const char *pc_tcp_state_name(enum pc_tcp_state s);

struct pc_tcpe;
struct pc_tcb;

/** Most payload pieces of one frame: the ring's two (it wraps) and the
 * ranges given by reference between them. A segment that would need more
 * leaves shorter, as if it were full. */
#define PC_TCP_FRAME_PIECES 8

/** One outgoing IPv4 datagram: hdr_len bytes of IPv4 and TCP header
 * (checksums filled), then the @pieces pieces data[i] of data_len[i]
 * bytes; len is the total. */
struct pc_tcp_frame {
        uint32_t saddr, daddr;
        const uint8_t *hdr;
        size_t hdr_len;
        unsigned pieces;
        const uint8_t *data[PC_TCP_FRAME_PIECES];
        size_t data_len[PC_TCP_FRAME_PIECES];
        size_t len;
        struct pc_tcb *conn; /**< the connection, NULL for a reply to no
                                  connection (reset, SYN cookie) */
};

/** What the engine asks of its caller. */
struct pc_tcpe_ops {
        /** Send @f (valid during the call). Return 0, or -errno when it
         * could not be sent (counted as tx_errors; TCP recovers as from a
         * loss). Must not call back into the engine. */
        int (*emit)(void *ctx, const struct pc_tcp_frame *f);
        /** Optional: the initial sequence number for a new connection. NULL
         * (the default) uses RFC 6528's keyed hash; tests set it to reach
         * sequence-number wraparound. */
        uint32_t (*isn)(void *ctx, uint32_t laddr, uint16_t lport, uint32_t raddr,
                        uint16_t rport);
};

/** Engine configuration; zero fields take the defaults named. */
struct pc_tcpe_config {
        unsigned max_conns;    /**< connections of any state (4096) */
        unsigned backlog;      /**< half-open connections per listener before
                                    SYN cookies (128) */
        uint32_t snd_cap;      /**< bytes a connection buffers to send, unsent
                                    and unacknowledged (256 KiB) */
        uint32_t rcv_cap;      /**< receive window and out-of-order store per
                                    connection (256 KiB; at most 1 GiB) */
        uint32_t rx_chunk;     /**< most bytes one on_data call brings (16 KiB),
                                    at most snd_cap / 2 */
        uint16_t mss;          /**< our MSS: MTU 1500 less headers (1460) */
        bool no_wscale;        /**< do not offer window scaling */
        bool no_backpressure;  /**< keep delivering while the send buffer is
                                    full (the default pauses reading, as the
                                    kernel backend does: see tcp_conn.c) */
        uint64_t rto_init_ns;  /**< RTO before any RTT sample (1 s) */
        uint64_t rto_min_ns;   /**< RTO floor (200 ms) */
        uint64_t rto_max_ns;   /**< RTO ceiling and persist ceiling (60 s) */
        unsigned max_retries;  /**< timeouts without progress before a
                                    connection fails with -ETIMEDOUT (15) */
        unsigned syn_retries;  /**< SYN or SYN-ACK retransmissions (6) */
        uint64_t delack_ns;    /**< delayed ACK timeout (40 ms) */
        uint64_t time_wait_ns; /**< TIME-WAIT length (2 s) */
        uint64_t fin_wait2_ns; /**< FIN-WAIT-2 limit after our close (30 s) */
        unsigned challenge_acks; /**< challenge ACKs per second, engine-wide
                                      (1000) */
        uint8_t secret[16];    /**< key of ISNs and cookies; all zero: random */
};

/** Application callbacks, the shape of pc_knet.h's pc_tcp_callbacks. They
 * run inside engine calls; any may be NULL; @arg is the one given to
 * pc_tcpe_listen() or pc_tcpe_connect(). */
struct pc_tcpe_callbacks {
        /** A connection was accepted (passive) or connected (active). */
        void (*on_accept)(struct pc_tcb *c, void *arg);
        /** @len in-order bytes arrived (valid during the call). @len 0: the
         * peer's FIN; unless pc_tcb_linger() was called the engine closes
         * the connection when this returns, after what is queued. */
        void (*on_data)(struct pc_tcb *c, const void *data, size_t len, void *arg);
        /** The connection is done: 0 after a clean close, else -ECONNRESET,
         * -ECONNREFUSED, -ETIMEDOUT, -ECONNABORTED (our abort, or data after
         * our close), -ECANCELED (closed while connecting). @c stays valid
         * until this returns. Runs at the end of the engine call in which
         * the connection ended (pc_tcpe_flush() for an application's
         * pc_tcb_abort()), never inside another pc_tcb_* call. */
        void (*on_close)(struct pc_tcb *c, int err, void *arg);
        /** The send buffer drained to half of snd_cap after pc_tcb_send()
         * refused with -ENOBUFS. Once per refusal. */
        void (*on_writable)(struct pc_tcb *c, void *arg);
        /** The peer acknowledged @n more bytes of data (the first time
         * each): what an idle-write timer counts as progress. */
        void (*on_acked)(struct pc_tcb *c, size_t n, void *arg);
};

/** Counters of one engine. Gauges say "now"; the rest only grow. */
struct pc_tcpe_stats {
        uint64_t drops[PC_TCP_NR]; /**< segments not taken, by reason */
        uint64_t segs_in, segs_out, bytes_in, bytes_out; /**< payload bytes */
        uint64_t conns, syn_rcvd, time_wait; /**< gauges */
        uint64_t active_opens, passive_opens, established, closed;
        uint64_t resets_in, resets_out;
        uint64_t retransmits;       /**< segments sent again (any cause) */
        uint64_t timeouts;          /**< retransmission timer expiries */
        uint64_t fast_retransmits;  /**< entries into fast recovery */
        uint64_t persist_probes, keepalive_probes;
        uint64_t cookies_sent, cookies_ok;
        uint64_t challenge_acks, challenge_limited;
        uint64_t syn_timeouts;      /**< half-open connections given up */
        uint64_t tw_recycled;       /**< TIME-WAIT ended early for a new one */
        uint64_t ooo_segs;          /**< out-of-order segments stored */
        uint64_t backpressure;      /**< times reading paused for a full
                                         send buffer */
        uint64_t send_refused;      /**< pc_tcb_send() refusals (-ENOBUFS) */
        uint64_t tx_errors;         /**< emit callback failures */
        uint64_t mem;               /**< gauge: bytes of send and receive
                                         buffers held */
};

/** Write " reason=count" to @f for each reason @s counts a drop for, in
 * pc_tcp_err_name()'s words (nothing when there is none). Any thread. */
void pc_tcpe_drops_print(const struct pc_tcpe_stats *s, FILE *f);

/**
 * Make an engine. @cfg may be NULL (defaults); @ops->emit is required.
 * Errors: -EINVAL (bad value), -ENOMEM. Any thread; the engine then
 * belongs to it.
 */
int pc_tcpe_create(const struct pc_tcpe_config *cfg, const struct pc_tcpe_ops *ops,
                   void *ctx, struct pc_tcpe **out);

/** Free @e and every connection, without callbacks or segments, except
 * that bytes still held by reference are given back (their done runs
 * here: pc_tcb_send_ref()). NULL is a no-op. */
void pc_tcpe_destroy(struct pc_tcpe *e);

/**
 * Accept connections to @addr:@port (@addr 0: any address of ours).
 * Errors: -EINVAL, -EADDRINUSE, -ENOSPC (too many listeners).
 */
int pc_tcpe_listen(struct pc_tcpe *e, uint32_t addr, uint16_t port,
                   const struct pc_tcpe_callbacks *cb, void *arg);

/**
 * Stop accepting connections to @addr:@port: a later SYN there is
 * answered with a reset (as to a port nobody listens on), and the
 * half-open connections it had (SYN-RECEIVED, never seen by the
 * application) are reset now. Open connections go on. Errors: -EINVAL,
 * -ENOENT (no such listener).
 */
int pc_tcpe_unlisten(struct pc_tcpe *e, uint32_t addr, uint16_t port);

/**
 * Open a connection from @laddr:@lport (@lport 0: the engine picks a free
 * ephemeral one) to @raddr:@rport; the SYN leaves at the next flush.
 * on_accept runs once connected, on_close on failure. *@out (may be NULL)
 * gets the connection. Errors: -EINVAL, -EADDRINUSE (that 4-tuple is in
 * use), -EADDRNOTAVAIL (no free port), -EMFILE (connection cap), -ENOMEM.
 */
int pc_tcpe_connect(struct pc_tcpe *e, uint32_t laddr, uint16_t lport, uint32_t raddr,
                    uint16_t rport, const struct pc_tcpe_callbacks *cb, void *arg,
                    uint64_t now, struct pc_tcb **out);

/**
 * Take one TCP segment (@seg, @len bytes: header and payload) of an IPv4
 * datagram from @saddr to @daddr, whose IPv4 header the caller checked
 * (pc_ipv4_parse()) and found addressed to us. Runs the application's
 * callbacks; replies wait for pc_tcpe_flush() except resets and
 * challenge ACKs, which are emitted at once. Returns PC_TCP_OK or why the
 * segment was dropped (already counted).
 */
enum pc_tcp_err pc_tcpe_input(struct pc_tcpe *e, uint32_t saddr, uint32_t daddr,
                              const uint8_t *seg, size_t len, uint64_t now);

/** Send what the connections have queued (data, ACKs, FINs) and run the
 * on_close callbacks that are due. */
void pc_tcpe_flush(struct pc_tcpe *e, uint64_t now);

/** Run every timer due at @now, then flush. */
void pc_tcpe_tick(struct pc_tcpe *e, uint64_t now);

/** The earliest timer deadline (ns, the clock of "now"), UINT64_MAX when
 * none is armed. Re-read it after every input, flush or tick. */
uint64_t pc_tcpe_next_deadline(const struct pc_tcpe *e);

/** Whether a flush has work (queued output or callbacks). */
bool pc_tcpe_pending(const struct pc_tcpe *e);

/** The engine's counters (a copy). */
void pc_tcpe_stats(const struct pc_tcpe *e, struct pc_tcpe_stats *out);

/**
 * Check the engine's invariants (sequence variables in order, buffers in
 * bounds, heap and counters consistent): 0, or -EFAULT after printing the
 * first broken one to stderr. For tests and fuzzing.
 */
int pc_tcpe_audit(const struct pc_tcpe *e);

/* ---- Connections ---------------------------------------------------------- */

/**
 * Queue @len bytes of @data (copied) to @c; they leave at the next flush
 * (queueing before the handshake ends is allowed).
 * Errors: -ENOBUFS (would exceed snd_cap; nothing queued; on_writable
 * follows), -EMSGSIZE (@len alone exceeds snd_cap), -EPIPE (closing or
 * closed), -EINVAL, -ENOMEM.
 */
int pc_tcb_send(struct pc_tcb *c, const void *data, size_t len);

/**
 * Queue the @n buffers of @iov to @c, in order, as one pc_tcb_send() of
 * their concatenation would: the cap is checked once for the total, and
 * either all of it is queued or nothing. Errors: those of pc_tcb_send(),
 * -EINVAL (@n < 0, a NULL base with a length).
 */
int pc_tcb_sendv(struct pc_tcb *c, const struct iovec *iov, int n);

/** Most ranges one connection holds by reference (pc_tcb_send_ref()). */
#define PC_TCP_SREF_MAX 1024

/** Called once the engine no longer needs bytes given by reference. */
typedef void (*pc_tcb_ref_fn)(void *arg);

/**
 * Queue @len bytes at @data to @c by reference: the send queue holds the
 * pointer, segments are built from the bytes where they are (and again
 * for a retransmission), and done(@arg) runs once the peer acknowledged
 * all of them, or when the connection ends (before its on_close), or at
 * pc_tcpe_destroy(); the caller keeps the bytes unchanged until then.
 * With @len 0, done runs once everything queued before is acknowledged.
 * Sent in order with pc_tcb_send()'s bytes, and counted in snd_cap and
 * pc_tcb_buffered(). done runs inside an engine call (input, flush,
 * tick), never inside this one; it may call pc_tcb_* on @c. Not called
 * when this fails. Errors: those of pc_tcb_send() (-ENOBUFS also when
 * PC_TCP_SREF_MAX ranges are held), -EINVAL for a NULL @done.
 */
int pc_tcb_send_ref(struct pc_tcb *c, const void *data, size_t len, pc_tcb_ref_fn done,
                    void *arg);

/**
 * Close @c gracefully: stop reading, send what is queued, then FIN;
 * on_close follows. Data that arrives afterwards is lost, which RFC 1122
 * 4.2.2.13 says with a reset, but only once the peer has acknowledged all
 * we sent (our FIN included), so that a reply queued before the close
 * (an error for a request still arriving, say) reaches it: until then
 * such data is dropped unacknowledged (PC_TCP_DISCARD) and our output
 * goes on. A peer that acknowledges nothing new for a while (60 s) after
 * the close is reset. Closing while connecting cancels (-ECANCELED).
 * Idempotent: 0, or -EINVAL.
 */
int pc_tcb_close(struct pc_tcb *c);

/**
 * Half-close @c: send what is queued, then FIN, and keep reading until the
 * peer's FIN (on_data(len 0)); on_close follows once both directions are
 * done. A later pc_tcb_close() also stops reading. Idempotent: 0, or
 * -EINVAL.
 */
int pc_tcb_shutdown(struct pc_tcb *c);

/** Reset @c now (a RST to the peer); on_close(-ECONNABORTED) follows at
 * the next flush. 0, or -EINVAL when already closed. */
int pc_tcb_abort(struct pc_tcb *c);

/** Keep @c open after the peer's FIN until pc_tcb_close() (see on_data).
 * 0, or -EPIPE (closing or closed), -EINVAL. */
int pc_tcb_linger(struct pc_tcb *c);

/** Nagle's algorithm: @nodelay true (the default) sends small segments at
 * once; false holds one back while data is unacknowledged. 0 or -EINVAL. */
int pc_tcb_nodelay(struct pc_tcb *c, bool nodelay);

/**
 * Keepalive (RFC 9293 3.8.4, RFC 1122 4.2.3.6): after @idle_ns without a
 * segment from the peer, send a probe (no data, SEQ = SND.UNA - 1, which
 * the peer answers with an ACK) every @intvl_ns; when @count probes in a
 * row went unanswered, @intvl_ns after the last the connection fails
 * (-ETIMEDOUT). Any segment from the peer starts the idle time again.
 * @idle_ns 0 turns it off. Errors: -EINVAL.
 */
int pc_tcb_keepalive(struct pc_tcb *c, uint64_t idle_ns, uint64_t intvl_ns, unsigned count);

/** Stop delivering data (it is held, up to rcv_cap, then the window
 * closes) or resume (what is held is delivered at the next flush). A
 * handler that cannot take more yet pauses. 0 or -EINVAL. */
int pc_tcb_pause(struct pc_tcb *c, bool paused);

/** Bytes queued on @c and not yet acknowledged. */
size_t pc_tcb_buffered(const struct pc_tcb *c);

/** Attach / read a user pointer. */
void pc_tcb_set_data(struct pc_tcb *c, void *data);
void *pc_tcb_data(const struct pc_tcb *c);

/** What a connection looks like now (tests, diagnostics). */
struct pc_tcb_info {
        enum pc_tcp_state state;
        uint32_t laddr, raddr;
        uint16_t lport, rport;
        uint32_t iss, irs, snd_una, snd_nxt, rcv_nxt;
        uint32_t snd_wnd;      /**< peer's window, scaled */
        uint32_t rcv_wnd;      /**< what we would advertise now */
        uint32_t cwnd, ssthresh;
        uint16_t mss;          /**< send MSS */
        uint8_t snd_wscale, rcv_wscale; /**< 0 unless both sides offered it */
        uint64_t srtt_ns, rto_ns;
        unsigned retries;      /**< timeouts since the last progress */
        size_t buffered;       /**< pc_tcb_buffered() */
        size_t held;           /**< received bytes not delivered yet */
        unsigned ooo;          /**< out-of-order ranges held */
        unsigned refs;         /**< pc_tcb_send_ref() ranges held */
        bool nodelay;          /**< pc_tcb_nodelay() */
        bool keepalive;        /**< pc_tcb_keepalive() is on */
};

/** @c's addresses and ports (fixed for its life). */
void pc_tcb_addr(const struct pc_tcb *c, uint32_t *laddr, uint16_t *lport, uint32_t *raddr,
                 uint16_t *rport);

/** Fill @out for @c. */
void pc_tcb_info(const struct pc_tcb *c, struct pc_tcb_info *out);

#ifdef __cplusplus
}
#endif

#endif /* PC_TCP_H */
