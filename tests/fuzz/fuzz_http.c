/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for what PERCORE_METRICS parses: the request router, fed
 * the input as it might arrive, one prefix longer at a time, and the
 * ADDR:PORT parser on its first line. The router answers 0 (more to come)
 * or one of its statuses, and once a prefix holds the whole head the
 * answer no longer changes; an address parses to IPv4 or IPv6, or is
 * refused with -EINVAL. Nothing else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pc_core_pvt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool known(int status)
{
        return status == 0 || status == 200 || status == 400 || status == 404 ||
               status == 405 || status == 431 || status == 505;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *buf = (const char *)data;
        struct sockaddr_storage ss;
        char addr[80];
        unsigned len;
        int first = 0, rc;
        size_t n;

        for (size_t k = 0; k <= size; k++) {
                int status = pc__http_route(buf, k);

                if (!known(status))
                        abort();
                if (first && status != first)
                        abort();
                first = status;
        }
        /* The first line: the input is not NUL-terminated. */
        n = 0;
        while (n < size && buf[n] != '\n')
                n++;
        if (n >= sizeof(addr))
                n = sizeof(addr) - 1;
        memcpy(addr, buf, n);
        addr[n] = '\0';
        rc = pc__metrics_addr(addr, &ss, &len);
        if (rc != 0 && rc != -EINVAL)
                abort();
        if (rc == 0 && ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
                abort();
        return 0;
}
