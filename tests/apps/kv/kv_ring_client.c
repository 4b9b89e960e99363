/* SPDX-License-Identifier: MIT */
/*
 * A memcached client of several pc-kv nodes through libmemcached's C API,
 * for test_pc_kv_scale.py: consistent (ketama) distribution, and a server
 * that fails once is removed from the ring (its keys go to the others)
 * and not retried during the test. Commands come one per line on stdin,
 * each answered with one line on stdout:
 *
 *   set PREFIX N     store PREFIX0..PREFIX<N-1>, values "v:<key>";
 *                    answers one character per key: s stored, e error
 *   get PREFIX N     h hit with the value set, b another value, m miss,
 *                    e error
 *   owners PREFIX N  the port of the server each key maps to now
 *
 * usage: kv_ring_client HOST:PORT[,HOST:PORT...]
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_keys(memcached_st *m, const char *prefix, unsigned n)
{
        char key[128], val[160];

        for (unsigned i = 0; i < n; i++) {
                int kl = snprintf(key, sizeof(key), "%s%u", prefix, i);
                int vl = snprintf(val, sizeof(val), "v:%s", key);
                memcached_return_t rc = memcached_set(m, key, (size_t)kl, val, (size_t)vl, 0, 0);

                putchar(rc == MEMCACHED_SUCCESS ? 's' : 'e');
        }
}

static void get_keys(memcached_st *m, const char *prefix, unsigned n)
{
        char key[128], want[160];

        for (unsigned i = 0; i < n; i++) {
                int kl = snprintf(key, sizeof(key), "%s%u", prefix, i);
                int wl = snprintf(want, sizeof(want), "v:%s", key);
                size_t vl = 0;
                uint32_t flags = 0;
                memcached_return_t rc;
                char *v = memcached_get(m, key, (size_t)kl, &vl, &flags, &rc);

                if (v != NULL)
                        putchar(vl == (size_t)wl && memcmp(v, want, vl) == 0 ? 'h' : 'b');
                else
                        putchar(rc == MEMCACHED_NOTFOUND ? 'm' : 'e');
                free(v);
        }
}

static void owners(memcached_st *m, const char *prefix, unsigned n)
{
        char key[128];

        for (unsigned i = 0; i < n; i++) {
                int kl = snprintf(key, sizeof(key), "%s%u", prefix, i);
                memcached_return_t rc;
                const memcached_instance_st *s = memcached_server_by_key(m, key, (size_t)kl, &rc);

                printf("%s%u", i ? " " : "", s ? (unsigned)memcached_server_port(s) : 0u);
        }
}

int main(int argc, char **argv)
{
        memcached_server_st *list;
        memcached_return_t rc;
        memcached_st *m;
        char line[256], cmd[16], prefix[64];
        unsigned n;

        if (argc != 2) {
                fprintf(stderr, "usage: kv_ring_client HOST:PORT[,HOST:PORT...]\n");
                return 2;
        }
        m = memcached_create(NULL);
        list = memcached_servers_parse(argv[1]);
        if (m == NULL || list == NULL || memcached_server_push(m, list) != MEMCACHED_SUCCESS) {
                fprintf(stderr, "kv_ring_client: bad server list '%s'\n", argv[1]);
                return 2;
        }
        memcached_server_list_free(list);
        /* Consistent hashing; a server that fails once leaves the ring
         * (REMOVE_FAILED_SERVERS, failure limit 1) for longer than a test. */
        rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                    MEMCACHED_DISTRIBUTION_CONSISTENT);
        if (rc == MEMCACHED_SUCCESS)
                rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_REMOVE_FAILED_SERVERS, 1);
        if (rc == MEMCACHED_SUCCESS)
                rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_SERVER_FAILURE_LIMIT, 1);
        if (rc == MEMCACHED_SUCCESS)
                rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, 600);
        if (rc == MEMCACHED_SUCCESS)
                rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 1000);
        if (rc != MEMCACHED_SUCCESS) {
                fprintf(stderr, "kv_ring_client: %s\n", memcached_strerror(m, rc));
                return 1;
        }
        while (fgets(line, sizeof(line), stdin)) {
                if (sscanf(line, "%15s %63s %u", cmd, prefix, &n) != 3) {
                        printf("?\n");
                } else if (strcmp(cmd, "set") == 0) {
                        set_keys(m, prefix, n);
                        putchar('\n');
                } else if (strcmp(cmd, "get") == 0) {
                        get_keys(m, prefix, n);
                        putchar('\n');
                } else if (strcmp(cmd, "owners") == 0) {
                        owners(m, prefix, n);
                        putchar('\n');
                } else {
                        printf("?\n");
                }
                fflush(stdout);
        }
        memcached_free(m);
        return 0;
}
