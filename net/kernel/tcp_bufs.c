/* SPDX-License-Identifier: MIT */
/*
 * The worker's provided receive buffers for multishot recv (tcp.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knet_pvt.h"

/* On the worker, once its ring exists: register the buffer ring, or leave
 * the worker on single-shot recvs where the kernel has none (before 5.19 it
 * refuses the registration with -EINVAL). */
void pc__tcp_bufs_setup(struct kworker *kw)
{
        const struct pc_knet_opts *o = &kw->k->opts;
        size_t ringsz = (size_t)o->recv_bufs * sizeof(struct io_uring_buf);
        long page = sysconf(_SC_PAGESIZE);
        struct io_uring_buf_reg reg;
        void *br;
        int rc;

        if (o->flags & PC_KNET_SINGLE_RECV)
                return;
        if (posix_memalign(&br, page > 0 ? (size_t)page : 4096, ringsz))
                goto nomem;
        kw->br = br;
        kw->bufs = malloc((size_t)o->recv_bufs * o->rbuf);
        if (kw->bufs == NULL)
                goto nomem;
        memset(br, 0, ringsz);
        io_uring_buf_ring_init(kw->br);
        memset(&reg, 0, sizeof(reg));
        reg.ring_addr = (uint64_t)(uintptr_t)br;
        reg.ring_entries = o->recv_bufs;
        reg.bgid = KNET_BGID;
        rc = io_uring_register_buf_ring(&kw->ring, &reg, 0);
        if (rc) {
                pc_log(PC_LOG_INFO, "worker %u: no provided-buffer ring (%s); single-shot recv",
                       kw->id, pc_strerror(rc));
                pc__tcp_bufs_free(kw);
                return;
        }
        kw->nbufs = o->recv_bufs;
        for (unsigned i = 0; i < kw->nbufs; i++)
                io_uring_buf_ring_add(kw->br, kw->bufs + (size_t)i * o->rbuf, o->rbuf,
                                      (unsigned short)i, io_uring_buf_ring_mask(kw->nbufs),
                                      (int)i);
        io_uring_buf_ring_advance(kw->br, (int)kw->nbufs);
        kw->mshot = true;
        return;
nomem:
        pc_log(PC_LOG_WARN, "worker %u: no memory for %u receive buffers; single-shot recv",
               kw->id, o->recv_bufs);
        pc__tcp_bufs_free(kw);
}

/* After the ring is gone (or never took them). */
void pc__tcp_bufs_free(struct kworker *kw)
{
        free(kw->br);
        free(kw->bufs);
        kw->br = NULL;
        kw->bufs = NULL;
        kw->nbufs = 0;
        kw->mshot = false;
}
