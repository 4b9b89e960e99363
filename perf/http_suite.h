/* SPDX-License-Identifier: MIT */
/*
 * What the http suite's files share: suite_http.c's loopback cases and
 * http_memif.c's case over DPDK both start pc-http the same way
 * (http_pc.c).
 */
#ifndef PC_BENCH_HTTP_SUITE_H
#define PC_BENCH_HTTP_SUITE_H

#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

struct lgen_place;

/* pc-http's path: $PERCORE_HTTP, else ../apps/pc-http beside the bench.
 * Main thread only. */
const char *http_pc_path(void);

/* Start pc-http on the kernel backend, 127.0.0.1:@port, @pl's workers on
 * its server CPUs in @mode (overprovisioned where @pl shares its CPUs with
 * the client). Returns the pid, or -errno. Main thread. */
pid_t http_pc_spawn(const struct lgen_place *pl, enum pc_mode mode, uint16_t port);

/* The memif case: pc-http on percore's TCP over DPDK's net_memif against
 * percore-tcpload --http on the other end, beside pc-http's kernel backend
 * and the peers over loopback driven by the same client. Returns 0 (a
 * case that cannot run here is reported skipped) or an error of
 * bench_compare(). Main thread. */
int http_memif_case(const struct bench_opts *o);

#endif
