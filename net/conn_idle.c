/* SPDX-License-Identifier: MIT */
/*
 * Idle timeouts of a connection (pc_conn_set_timeout(),
 * pc_conn_set_write_timeout()), written once for both backends. The
 * backends only count: bytes delivered to the service (rx_bytes) and
 * bytes of output done with (tx_done, pc_net_pvt.h). A periodic timer per
 * connection, every eighth of its shorter timeout, compares them with
 * what it saw last and notes the time of any progress, so the fast paths
 * never read the clock. Progress is noted up to a period after it
 * happened, and a timeout seen up to a period after it passed: so a
 * timeout comes between 1 and 1.25 times its length after the last
 * progress, never early.
 *
 * What a timeout does depends on who serves the connection:
 * - a fiber (its handler still running): a reader that has waited the
 *   read timeout without a byte, or a writer that has waited the write
 *   timeout for room while the output made no progress, is woken with
 *   -ETIMEDOUT (tcp_fiber.c); the connection stays open;
 * - callbacks (or a fiber's connection once its handler returned): no
 *   byte in for the read timeout while nothing waits to go out, or queued
 *   output that makes no progress for the write timeout, ends it through
 *   the backend's abort with -ETIMEDOUT, which on_close reports.
 *
 * Everything here runs on the connection's worker.
 */
#include <errno.h>
#include <stdlib.h>

#include "pc_net_pvt.h"
#include "pc_tcp_fiber_pvt.h"

#define IDLE_TICK_MIN_NS 1000000ull

/* The fiber part of @c while its handler runs, else NULL. */
static struct pc__fconn *live_fiber(struct pc_conn *c)
{
        const struct pc__fiber_ops *f = pc__conn_ops(c)->fiber;
        struct pc__fconn *fc;

        if (f == NULL || f->check(c) != 0)
                return NULL;
        fc = f->fc(c);
        return fc->live ? fc : NULL;
}

static void idle_tick(struct pc_timer *t, void *arg)
{
        struct pc_conn *c = arg;
        struct pc__conn_base *b = pc__conn_base(c);
        struct pc__conn_idle *id = b->idle;
        uint64_t now = pc_now_ns();
        struct pc__fconn *fc = live_fiber(c);
        bool queued = b->ops->buffered(c) > 0;

        if (b->rx_bytes != id->rd_mark) {
                id->rd_mark = b->rx_bytes;
                id->rd_at = now;
        }
        if (b->tx_done != id->wr_mark || !queued) {
                id->wr_mark = b->tx_done;
                id->wr_at = now;
        }
        if (fc) {
                if (id->rd_ns && now - id->rd_at >= id->rd_ns && pc__fconn_timeout(fc, false))
                        id->rd_at = now;
                if (id->wr_ns && now - id->wr_at >= id->wr_ns && pc__fconn_timeout(fc, true))
                        id->wr_at = now;
                return;
        }
        /* While output waits, the write timeout is the one that applies;
         * after our close nothing is read. */
        if (queued || b->closed)
                id->rd_at = now;
        if ((id->rd_ns && now - id->rd_at >= id->rd_ns) ||
            (id->wr_ns && now - id->wr_at >= id->wr_ns)) {
                pc_timer_cancel(t);
                b->closed = true;
                /* May end @c and free it (with @id, @t) before it returns. */
                b->ops->abort(c, -ETIMEDOUT);
        }
}

static void idle_arm(struct pc_conn *c, struct pc__conn_idle *id)
{
        uint64_t shortest = id->rd_ns, period;

        if (id->wr_ns && (shortest == 0 || id->wr_ns < shortest))
                shortest = id->wr_ns;
        if (shortest == 0) {
                if (pc_timer_armed(&id->timer))
                        pc_timer_cancel(&id->timer);
                return;
        }
        period = shortest / 8 > IDLE_TICK_MIN_NS ? shortest / 8 : IDLE_TICK_MIN_NS;
        /* The one error left on the connection's worker: a stopping run
         * (-ESHUTDOWN), after which the next run arms it again. */
        (void)pc_timer_start(&id->timer, period, period);
        (void)c;
}

static int set(struct pc_conn *c, uint64_t ns, bool read_too)
{
        struct pc__conn_base *b;
        struct pc__conn_idle *id;
        int rc;

        if (c == NULL)
                return -EINVAL;
        rc = pc__conn_ops(c)->owner(c);
        if (rc)
                return rc;
        b = pc__conn_base(c);
        if (b->closed)
                return -EPIPE;
        id = b->idle;
        if (id == NULL) {
                if (ns == 0)
                        return 0;
                id = calloc(1, sizeof(*id));
                if (id == NULL)
                        return -ENOMEM;
                pc_timer_init(&id->timer, idle_tick, c);
                b->idle = id;
        }
        if (read_too)
                id->rd_ns = ns;
        id->wr_ns = ns;
        id->rd_mark = b->rx_bytes;
        id->wr_mark = b->tx_done;
        id->rd_at = id->wr_at = pc_now_ns();
        idle_arm(c, id);
        return 0;
}

int pc_conn_set_timeout(struct pc_conn *c, uint64_t idle_ns)
{
        return set(c, idle_ns, true);
}

int pc_conn_set_write_timeout(struct pc_conn *c, uint64_t idle_ns)
{
        return set(c, idle_ns, false);
}

void pc__conn_idle_wait(struct pc_conn *c, bool write)
{
        struct pc__conn_idle *id = pc__conn_base(c)->idle;
        uint64_t now;

        if (id == NULL || (write ? id->wr_ns : id->rd_ns) == 0)
                return;
        now = pc_now_ns();
        if (write) {
                id->wr_mark = pc__conn_base(c)->tx_done;
                id->wr_at = now;
        } else {
                id->rd_mark = pc__conn_base(c)->rx_bytes;
                id->rd_at = now;
        }
}

void pc__conn_idle_restart(struct pc__conn_base *b)
{
        struct pc__conn_idle *id = b->idle;

        if (id == NULL)
                return;
        id->rd_at = id->wr_at = pc_now_ns();
        idle_arm((struct pc_conn *)(void *)b, id);
}
