/* SPDX-License-Identifier: MIT */
/*
 * pc-http as the http suite starts it (http_suite.h), for its loopback
 * cases (suite_http.c) and its memif case's kernel side (http_memif.c).
 */
#include <stdio.h>

#include "child.h"
#include "http_suite.h"
#include "lgen.h"

const char *http_pc_path(void)
{
        return child_app_path("pc-http", "PERCORE_HTTP");
}

pid_t http_pc_spawn(const struct lgen_place *pl, enum pc_mode mode, uint16_t port)
{
        char ports[16], threads[16], modev[64], cpusv[300];
        const char *env[] = {modev, cpusv,
                             pl->overprovisioned ? "PERCORE_OVERPROVISIONED=1"
                                                 : "PERCORE_OVERPROVISIONED=0",
                             NULL};
        char *argv[] = {(char *)http_pc_path(), "-l", "127.0.0.1", "-p", ports, "-t", threads,
                        NULL};

        snprintf(ports, sizeof(ports), "%u", port);
        snprintf(threads, sizeof(threads), "%u", pl->workers);
        snprintf(modev, sizeof(modev), "PERCORE_MODE=%s", pc_mode_name(mode));
        snprintf(cpusv, sizeof(cpusv), "PERCORE_CPUS=%s", pl->server_cpus);
        return child_spawn(argv, env, NULL);
}
