/* SPDX-License-Identifier: MIT */
/*
 * What the kernel backend's loopback tests (test_knet_*.c) share: CHECK()
 * for the threads that must not assert, an echo server on percore (parking
 * workers, so I/O completions must wake them through the ring's eventfd)
 * served by callbacks or by fibers, and the plain-socket clients' helpers.
 * Only a test's own thread asserts: client threads and server callbacks
 * CHECK().
 */
#ifndef PC_TEST_KNET_HARNESS_H
#define PC_TEST_KNET_HARNESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pc_test.h"
#include "pc_knet.h"

/* ---- checks off the test's thread ---------------------------------------- */

/* Count a failure of @ok (its text @what, at @line) for checks_pass();
 * returns @ok. Any thread. */
#define CHECK(cond) check_at((cond), #cond, __LINE__)
bool check_at(bool ok, const char *what, int line);

/* The test's thread, after every thread that may CHECK() was joined: fail
 * the test when any CHECK() failed since checks_reset(). */
void checks_pass(void);
void checks_reset(void);

/* ---- the server ----------------------------------------------------------- */

/* The echo server's counts (callbacks and fibers alike), reset by
 * srv_create() and reset_counts(). */
extern _Atomic uint64_t wrong_worker, send_errors, opens, closes_clean, closes_err;
/* The fiber handler's: reads ended by the run's stop, reads after it that
 * said -ESHUTDOWN, refused calls that were not refused. */
extern _Atomic uint64_t fib_cancels, fib_shutdowns, fib_misuse;

/* The echo server's callbacks (a record of the accepting worker per
 * connection), and the same server as a fiber per connection. */
void srv_accept(struct pc_conn *c, void *arg);
void srv_data(struct pc_conn *c, const void *data, size_t len, void *arg);
void srv_close(struct pc_conn *c, int err, void *arg);
extern const struct pc_tcp_callbacks echo_cb;
void fiber_echo(struct pc_conn *c, void *arg);
void reset_counts(void);

struct srv {
        struct pc_runtime *rt;
        uint16_t port;
        void *(*client)(void *);
        void *arg;
};

/* Test modes beside the backend's flags, in a test's prestate. */
#define T_FIBERS (1u << 16) /* serve with pc_tcp_serve_kernel(fiber_echo) */
#define T_ELASTIC (1u << 17) /* PC_MODE_ELASTIC */
#define T_MODES (T_FIBERS | T_ELASTIC)

/* A runtime of @workers with the echo server listening on a port of
 * 127.0.0.1, configured by @o (NULL: the defaults) and its T_ modes. */
void srv_create(struct srv *s, unsigned workers, const struct pc_knet_opts *o);
/* Run the server until @client returns, then assert that neither the
 * client nor a server callback failed a CHECK(). */
void srv_run(struct srv *s, void *(*client)(void *), void *arg);
/* The server's counters, on the test's thread. */
struct pc_knet_stats stats(struct pc_runtime *rt);
/* The same from a client thread: a failure is a CHECK() (and all zeros). */
struct pc_knet_stats client_stats(struct pc_runtime *rt);
/* Wait until @pred holds (polling the stats), up to 20 s. Client threads:
 * the caller CHECK()s the result. */
bool wait_for(struct pc_runtime *rt, bool (*pred)(const struct pc_knet_stats *, void *),
              void *arg);

/* ---- client helpers ------------------------------------------------------- */

/* A connected (or, @nonblock, connecting) socket, or -1 after a failed
 * CHECK(). */
int tcp_client(uint16_t port, bool nonblock);
/* Byte @i of stream @k. */
uint8_t pattern(unsigned k, size_t i);

/* The receive mode a test asks for (its prestate, one of the flags
 * below, or 0: the default, multishot where the kernel has it). */
unsigned recv_flags(void **state);
extern const unsigned single_recv, no_defer, efd_sleep, fibers_only, fibers_single,
        fibers_elastic;
/* Assert that the stats show the receive mode and ring mode @flags ask
 * for, as far as this kernel has them. */
void check_recv_mode(const struct pc_knet_stats *st, unsigned flags);
/* Let this process open as many descriptors as its hard limit allows. */
void raise_nofile(void);

/* Send pattern @k on non-blocking @fd from byte *@sent on, up to @total,
 * until @stopped (on the server's stats) says it stopped reading and the
 * socket takes no more. Client threads. Returns whether it stalled so. */
bool send_until_stopped(struct pc_runtime *rt, int fd, unsigned k, size_t *sent,
                        size_t total, bool (*stopped)(const struct pc_knet_stats *, void *));
/* Send @msg on a new connection to @port and read its echo: *@ok says
 * whether it came back whole. Client threads. */
void echo_once(uint16_t port, const char *msg, bool *ok);
/* A UDP echo handler for pc_kudp_bind(). */
void udp_echo(struct pc_kudp *u, const struct pc_udp_peer *from, uint16_t dport,
              const void *data, size_t len, void *arg);

#endif
