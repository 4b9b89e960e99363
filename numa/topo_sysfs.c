/* SPDX-License-Identifier: MIT */
/*
 * The Linux sysfs loader: devices/system/cpu and devices/system/node under
 * a root that is /sys on a real machine and a fixture in tests.
 *
 * Every file is read whole and parsed strictly. The first file that is
 * missing (when required) or malformed stops the detailed load; the loader
 * then logs one warning naming that file and returns the flat topology,
 * because a runtime that starts on a plain topology is more useful than
 * one that refuses to start, and a guessed topology is worse than both.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo_pvt.h"

/* Long enough for a list of every CPU below PC_TOPO_MAX_CPUS one by one, and
 * for a node's meminfo. */
#define FILE_MAX 8192
/* The kernel numbers caches index0..index<n>; hwloc looks at ten too. */
#define CACHE_INDEX_MAX 10

struct sysfs {
        const char *root;
        char path[PATH_MAX]; /* the file being read, then the bad one */
        const char *why;     /* what was wrong with it */
        char buf[FILE_MAX];
        uint64_t online[PC_CPUSET_WORDS];
        uint64_t tmp[PC_CPUSET_WORDS];
        /* Each online CPU's core and L3 sets as its files say (online
         * members only), kept to check that the files agree. */
        uint64_t (*coreset)[PC_CPUSET_WORDS];
        uint64_t (*l3set)[PC_CPUSET_WORDS];
};

/* Read root/<fmt...> into s->buf as a string. Returns its length, -ENOENT
 * when the file does not exist, another -errno when it cannot be read,
 * -EFBIG when it does not fit. s->path keeps the name for a warning. */
static int readf(struct sysfs *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int readf(struct sysfs *s, const char *fmt, ...)
{
        size_t off = 0;
        va_list ap;
        int fd, n;

        n = snprintf(s->path, sizeof(s->path), "%s/", s->root);
        if (n < 0 || (size_t)n >= sizeof(s->path))
                return -ENAMETOOLONG;
        va_start(ap, fmt);
        n = vsnprintf(s->path + n, sizeof(s->path) - (size_t)n, fmt, ap);
        va_end(ap);
        if (n < 0 || strlen(s->path) + 1 >= sizeof(s->path))
                return -ENAMETOOLONG;
        fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t r = read(fd, s->buf + off, sizeof(s->buf) - 1 - off);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        close(fd);
                        return (int)r;
                }
                if (r == 0)
                        break;
                off += (size_t)r;
                if (off == sizeof(s->buf) - 1) {
                        close(fd);
                        return -EFBIG;
                }
        }
        close(fd);
        s->buf[off] = '\0';
        return (int)off;
}

/* Remember why s->path is unusable; the loader's caller prints it once. */
static int bad(struct sysfs *s, const char *why, int rc)
{
        s->why = why;
        return rc;
}

static int read_required(struct sysfs *s, int rc)
{
        if (rc == -ENOENT)
                return bad(s, "missing", rc);
        if (rc < 0)
                return bad(s, "unreadable", rc);
        return 0;
}

/* A CPU or node list; unlike pc_cpulist_parse() an empty file is an empty
 * set, because a memory-only node really has no CPUs. */
static int parse_list(struct sysfs *s, uint64_t *set, unsigned nbits)
{
        const char *p = s->buf;
        int rc;

        while (*p == ' ' || *p == '\n' || *p == '\t')
                p++;
        if (*p == '\0') {
                memset(set, 0, ((nbits + 63) / 64) * sizeof(uint64_t));
                return 0;
        }
        rc = pc_cpulist_parse(s->buf, set, nbits);
        if (rc < 0)
                return bad(
                    s, rc == -ERANGE ? "has a number past the limit" : "is not a list",
                    -EINVAL);
        return rc;
}

/* One integer in [lo, hi] and an optional newline, nothing else. */
static int parse_int(struct sysfs *s, long lo, long hi, long *out)
{
        const char *p = s->buf;
        char *end;
        long v;

        if (!(isdigit((unsigned char)p[0]) ||
              (p[0] == '-' && isdigit((unsigned char)p[1]))))
                return bad(s, "is not a number", -EINVAL);
        errno = 0;
        v = strtol(p, &end, 10);
        if (errno != 0 || v < lo || v > hi)
                return bad(s, "is out of range", -EINVAL);
        if (*end == '\n')
                end++;
        if (*end != '\0')
                return bad(s, "is not a number", -EINVAL);
        *out = v;
        return 0;
}

/* Read a set of CPUs that must contain @cpu into @set (online members
 * only); returns its lowest CPU, the group's representative. */
static int read_group(struct sysfs *s, unsigned cpu, uint64_t *set)
{
        int rc = parse_list(s, s->tmp, PC_TOPO_MAX_CPUS);

        if (rc < 0)
                return rc;
        if (!pc__bit(s->tmp, cpu))
                return bad(s, "does not contain its own CPU", -EINVAL);
        for (unsigned w = 0; w < PC_CPUSET_WORDS; w++)
                set[w] = s->tmp[w] & s->online[w];
        for (unsigned c = 0; c < PC_TOPO_MAX_CPUS; c++)
                if (pc__bit(set, c))
                        return (int)c;
        return (int)cpu;
}

static int load_cpu(struct sysfs *s, struct pc_topo *t, unsigned c)
{
        struct pc_topo_cpu *p = &t->cpu[c];
        long v;
        int rc;

        /* Some arm64 firmware reports -1 for an unknown package: one package. */
        rc = read_required(
            s, readf(s, "devices/system/cpu/cpu%u/topology/physical_package_id", c));
        if (rc || (rc = parse_int(s, -1, INT_MAX, &v)))
                return rc;
        p->package = v < 0 ? 0 : (int)v;
        rc = read_required(s, readf(s, "devices/system/cpu/cpu%u/topology/core_id", c));
        if (rc || (rc = parse_int(s, -1, INT_MAX, &v)))
                return rc;
        p->core_id = (int)v;
        rc = readf(s, "devices/system/cpu/cpu%u/topology/die_id", c);
        if (rc != -ENOENT) {
                if ((rc = read_required(s, rc)) || (rc = parse_int(s, -1, INT_MAX, &v)))
                        return rc;
                p->die = v < 0 ? p->package : (int)v;
        }

        rc = readf(s, "devices/system/cpu/cpu%u/topology/core_cpus_list", c);
        if (rc == -ENOENT)
                rc =
                    readf(s, "devices/system/cpu/cpu%u/topology/thread_siblings_list", c);
        if (rc == -ENOENT) {
                /* Resolved after every CPU is read: see group_by_core_id(). */
                p->core = -2;
        } else {
                if ((rc = read_required(s, rc)) ||
                    (rc = read_group(s, c, s->coreset[c])) < 0)
                        return rc;
                p->core = rc;
        }

        for (unsigned k = 0; k < CACHE_INDEX_MAX; k++) {
                rc = readf(s, "devices/system/cpu/cpu%u/cache/index%u/level", c, k);
                if (rc == -ENOENT)
                        continue;
                if ((rc = read_required(s, rc)) || (rc = parse_int(s, 0, 16, &v)))
                        return rc;
                if (v != 3)
                        continue;
                rc = read_required(
                    s, readf(s, "devices/system/cpu/cpu%u/cache/index%u/type", c, k));
                if (rc)
                        return rc;
                if (strcmp(s->buf, "Instruction\n") == 0)
                        continue;
                if (strcmp(s->buf, "Unified\n") != 0 && strcmp(s->buf, "Data\n") != 0)
                        return bad(s, "is not a cache type", -EINVAL);
                rc = read_required(
                    s, readf(s, "devices/system/cpu/cpu%u/cache/index%u/shared_cpu_list",
                             c, k));
                if (rc || (rc = read_group(s, c, s->l3set[c])) < 0)
                        return rc;
                p->l3 = rc;
                break;
        }
        return 0;
}

/* Without sibling lists the kernel's own rule applies: threads with the
 * same package, die and core_id are one core. */
static void group_by_core_id(struct pc_topo *t)
{
        for (unsigned c = 0; c < t->ncpus; c++) {
                struct pc_topo_cpu *p = &t->cpu[c];
                if (!p->online || p->core != -2)
                        continue;
                p->core = (int)c;
                for (unsigned o = 0; o < c; o++) {
                        const struct pc_topo_cpu *q = &t->cpu[o];
                        if (q->online && q->package == p->package && q->die == p->die &&
                            q->core_id == p->core_id) {
                                p->core = q->core;
                                break;
                        }
                }
        }
}

/* Sets must agree: a list that says CPUs 0 and 8 share a core while CPU
 * 8's list says otherwise is malformed, not a topology. An empty set is a
 * CPU whose file was absent. */
static bool groups_consistent(const struct sysfs *s, unsigned ncpus,
                              const uint64_t (*sets)[PC_CPUSET_WORDS])
{
        for (unsigned c = 0; c < ncpus; c++) {
                if (!pc__bit(s->online, c) || pc__set_last(sets[c], PC_TOPO_MAX_CPUS) < 0)
                        continue;
                for (unsigned m = 0; m < ncpus; m++)
                        if (pc__bit(sets[c], m) &&
                            memcmp(sets[m], sets[c], sizeof(sets[c])) != 0)
                                return false;
        }
        return true;
}

/* One node 0 holding every CPU: what a kernel without CONFIG_NUMA means. */
static int load_no_numa(struct pc_topo **tp)
{
        struct pc_topo *t = *tp, *n = pc__topo_alloc(t->ncpus, 1);

        if (n == NULL)
                return -ENOMEM;
        memcpy(n->cpu, t->cpu, t->ncpus * sizeof(*t->cpu));
        n->node[0].id = 0;
        n->distance[0] = 10;
        for (unsigned c = 0; c < n->ncpus; c++)
                if (n->cpu[c].online)
                        n->cpu[c].node = 0;
        pc_topo_free(t);
        *tp = n;
        return 0;
}

/* Parse a row of @n SLIT distances, each 1..255, separated by spaces. */
static int parse_distances(struct sysfs *s, uint8_t *row, unsigned n)
{
        const char *p = s->buf;

        for (unsigned i = 0; i < n; i++) {
                unsigned v = 0;
                int digits = 0;

                while (*p == ' ')
                        p++;
                for (; isdigit((unsigned char)*p) && digits < 4; p++, digits++)
                        v = v * 10 + (unsigned)(*p - '0');
                if (digits == 0 || v == 0 || v > 255 || (*p != ' ' && *p != '\n' && *p))
                        return bad(s, "is not a row of distances", -EINVAL);
                row[i] = (uint8_t)v;
        }
        while (*p == ' ' || *p == '\n')
                p++;
        if (*p != '\0')
                return bad(s, "has more distances than nodes", -EINVAL);
        return 0;
}

/* MemTotal from a node's meminfo: "Node 1 MemTotal:       0 kB". */
static int parse_memtotal(struct sysfs *s, bool *has_memory)
{
        const char *p = strstr(s->buf, "MemTotal:");
        unsigned long long kb;
        char *end;

        if (p == NULL)
                return bad(s, "has no MemTotal", -EINVAL);
        p += strlen("MemTotal:");
        while (*p == ' ')
                p++;
        if (!isdigit((unsigned char)*p))
                return bad(s, "has a malformed MemTotal", -EINVAL);
        errno = 0;
        kb = strtoull(p, &end, 10);
        if (errno != 0 || strncmp(end, " kB", 3) != 0)
                return bad(s, "has a malformed MemTotal", -EINVAL);
        *has_memory = kb > 0;
        return 0;
}

static int load_nodes(struct sysfs *s, struct pc_topo **tp)
{
        uint64_t nodes[PC_TOPO_MAX_NODES / 64], mem[PC_TOPO_MAX_NODES / 64];
        struct pc_topo *t = *tp, *n;
        bool have_mem_mask = false;
        unsigned nn = 0, i = 0;
        struct stat st;
        int rc;

        snprintf(s->path, sizeof(s->path), "%s/devices/system/node", s->root);
        if (stat(s->path, &st) != 0)
                return load_no_numa(tp);

        rc = read_required(s, readf(s, "devices/system/node/online"));
        if (rc || (rc = parse_list(s, nodes, PC_TOPO_MAX_NODES)) < 0)
                return rc;
        if (rc == 0)
                return bad(s, "lists no node", -EINVAL);
        nn = (unsigned)rc;
        rc = readf(s, "devices/system/node/has_memory");
        if (rc != -ENOENT) {
                if ((rc = read_required(s, rc)) ||
                    (rc = parse_list(s, mem, PC_TOPO_MAX_NODES)) < 0)
                        return rc;
                have_mem_mask = true;
        }

        n = pc__topo_alloc(t->ncpus, nn);
        if (n == NULL)
                return -ENOMEM;
        memcpy(n->cpu, t->cpu, t->ncpus * sizeof(*t->cpu));
        pc_topo_free(t);
        *tp = n;

        for (unsigned id = 0; id < PC_TOPO_MAX_NODES; id++) {
                struct pc_topo_node *nd;

                if (!pc__bit(nodes, id))
                        continue;
                nd = &n->node[i];
                nd->id = (int)id;
                rc = read_required(s, readf(s, "devices/system/node/node%u/cpulist", id));
                if (rc || (rc = parse_list(s, s->tmp, PC_TOPO_MAX_CPUS)) < 0)
                        return rc;
                for (unsigned c = 0; c < n->ncpus; c++) {
                        if (!pc__bit(s->tmp, c) || !n->cpu[c].online)
                                continue;
                        if (n->cpu[c].node >= 0)
                                return bad(s, "claims a CPU another node has", -EINVAL);
                        n->cpu[c].node = (int)id;
                }
                rc =
                    read_required(s, readf(s, "devices/system/node/node%u/distance", id));
                if (rc || (rc = parse_distances(s, &n->distance[i * nn], nn)))
                        return rc;
                if (have_mem_mask) {
                        nd->has_memory = pc__bit(mem, id);
                } else {
                        rc = readf(s, "devices/system/node/node%u/meminfo", id);
                        if (rc != -ENOENT && ((rc = read_required(s, rc)) ||
                                              (rc = parse_memtotal(s, &nd->has_memory))))
                                return rc;
                }
                i++;
        }
        for (unsigned c = 0; c < n->ncpus; c++) {
                if (n->cpu[c].online && n->cpu[c].node < 0) {
                        snprintf(s->path, sizeof(s->path),
                                 "%s/devices/system/node/node*/cpulist", s->root);
                        return bad(s, "leaves an online CPU without a node", -EINVAL);
                }
        }
        return 0;
}

static int load_detail(struct sysfs *s, const uint64_t *allowed, struct pc_topo **out)
{
        int last = pc__set_last(s->online, PC_TOPO_MAX_CPUS);
        struct pc_topo *t;
        int rc;

        /* Possible CPUs that are not online still get an entry (online
         * false), so cpu[] covers every CPU number the kernel may use. */
        rc = readf(s, "devices/system/cpu/possible");
        if (rc != -ENOENT) {
                uint64_t possible[PC_CPUSET_WORDS];
                if ((rc = read_required(s, rc)) ||
                    (rc = parse_list(s, possible, PC_TOPO_MAX_CPUS)) < 0)
                        return rc;
                if (pc__set_last(possible, PC_TOPO_MAX_CPUS) > last)
                        last = pc__set_last(possible, PC_TOPO_MAX_CPUS);
        }
        t = pc__topo_alloc((unsigned)last + 1, 0);
        s->coreset = calloc(t ? t->ncpus : 1, sizeof(*s->coreset));
        s->l3set = calloc(t ? t->ncpus : 1, sizeof(*s->l3set));
        if (t == NULL || s->coreset == NULL || s->l3set == NULL) {
                rc = -ENOMEM;
                goto fail;
        }
        for (unsigned c = 0; c < t->ncpus; c++) {
                if (!pc__bit(s->online, c))
                        continue;
                t->cpu[c].online = true;
                if ((rc = load_cpu(s, t, c)) != 0)
                        goto fail;
        }
        group_by_core_id(t);
        snprintf(s->path, sizeof(s->path), "%s/devices/system/cpu/cpu*/", s->root);
        if (!groups_consistent(s, t->ncpus,
                               (const uint64_t(*)[PC_CPUSET_WORDS])s->coreset)) {
                strncat(s->path, "topology/core_cpus_list",
                        sizeof(s->path) - strlen(s->path) - 1);
                rc = bad(s, "disagree between CPUs", -EINVAL);
                goto fail;
        }
        if (!groups_consistent(s, t->ncpus,
                               (const uint64_t(*)[PC_CPUSET_WORDS])s->l3set)) {
                strncat(s->path, "cache/index*/shared_cpu_list",
                        sizeof(s->path) - strlen(s->path) - 1);
                rc = bad(s, "disagree between CPUs", -EINVAL);
                goto fail;
        }
        if ((rc = load_nodes(s, &t)) != 0)
                goto fail;
        if ((rc = pc__topo_finish(t, allowed)) != 0) {
                snprintf(s->path, sizeof(s->path), "%s/devices/system", s->root);
                rc = bad(s, "is inconsistent", rc);
                goto fail;
        }
        snprintf(t->source, sizeof(t->source), "sysfs:%s", s->root);
        *out = t;
        t = NULL;
        rc = 0;
fail:
        pc_topo_free(t);
        free(s->coreset);
        free(s->l3set);
        s->coreset = s->l3set = NULL;
        return rc;
}

int pc_topo_load(const char *root, const uint64_t *allowed, struct pc_topo **out)
{
        struct sysfs *s;
        char src[PATH_MAX + 8];
        int rc;

        if (out == NULL)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (s == NULL)
                return -ENOMEM;
        s->root = root && root[0] ? root : "/sys";

        rc = readf(s, "devices/system/cpu/online");
        if (rc >= 0)
                rc = pc_cpulist_parse(s->buf, s->online, PC_TOPO_MAX_CPUS);
        if (rc < 0) {
                pc__topo_log(PC_TOPO_LOG_ERROR, "topology: cannot use %s: %s", s->path,
                             strerror(-rc));
                free(s);
                return rc == -EFBIG ? -EINVAL : rc;
        }

        rc = load_detail(s, allowed, out);
        if (rc != 0 && rc != -ENOMEM) {
                pc__topo_log(PC_TOPO_LOG_WARN,
                             "topology: %s %s (%s); using a flat topology", s->path,
                             s->why ? s->why : "cannot be used", strerror(-rc));
                snprintf(src, sizeof(src), "sysfs:%s", s->root);
                rc = pc__topo_flat(s->online, allowed, src, out);
        }
        free(s);
        return rc;
}
