/* SPDX-License-Identifier: MIT */
/*
 * Configuration: defaults, the PERCORE_* environment, validation, and the
 * one-line form logged at start. A bad value is an error naming the
 * variable and what it accepts, never a silent default.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pc_core_pvt.h"

void pc_config_init(struct pc_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->mode = PC_MODE_TPC;
        cfg->workers = 0;
        cfg->cpus = NULL;
        cfg->placement = PC_PLACE_COMPACT;
        cfg->pin = true;
        cfg->steal_batch = 32;
        cfg->steal_tiers = PC_TIERS_NUMA;
        cfg->remote_steal_min = 4;
        cfg->idle = PC_IDLE_ADAPTIVE;
        cfg->idle_spin_us = 50;
        cfg->overprovisioned = false;
        cfg->fiber_stack_kb = 64;
        cfg->stall_ms = 100;
        cfg->monitor_ms = 0;
        cfg->seed = 1;
        cfg->sysfs_root = "/sys";
        cfg->topology = PC_TOPO_SYSFS;
        cfg->eal_args = NULL;
        cfg->log_level = PC_LOG_INFO;
        cfg->stats = false;
        cfg->runq_size = PC_RUNQ_DEFAULT;
}

static const char *const mode_names[] = {"tpc", "elastic", "deterministic"};
static const char *const idle_names[] = {"poll", "park", "adaptive"};
static const char *const place_names[] = {"compact", "spread"};
static const char *const tier_names[] = {"numa", "flat"};
static const char *const topo_names[] = {"sysfs", "hwloc"};
static const char *const log_names[] = {"error", "warn", "info", "debug"};
static const char *const bool_names[] = {"0", "1"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *pc_mode_name(enum pc_mode mode)
{
        return (unsigned)mode < NELEM(mode_names) ? mode_names[mode] : "?";
}

static void seterr(char *err, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t len, const char *fmt, ...)
{
        va_list ap;

        if (err == NULL || len == 0)
                return;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
}

static void join_names(const char *const *names, size_t n, char *buf, size_t len)
{
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && off < len; i++)
                off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
}

/* Match @val against @names exactly; on failure explain what is accepted. */
static int parse_enum(const char *var, const char *val, const char *const *names, size_t n,
                      int *out, char *err, size_t errlen)
{
        char accepted[128];

        for (size_t i = 0; i < n; i++) {
                if (strcmp(val, names[i]) == 0) {
                        *out = (int)i;
                        return 0;
                }
        }
        join_names(names, n, accepted, sizeof(accepted));
        seterr(err, errlen, "%s='%s' is not valid: accepted values are %s", var, val, accepted);
        return -EINVAL;
}

/* A decimal integer in [lo, hi], nothing else: no sign games, no suffix. */
static int parse_u64(const char *var, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                     char *err, size_t errlen)
{
        char *end;
        unsigned long long v;

        if (!isdigit((unsigned char)val[0]))
                goto bad;
        errno = 0;
        v = strtoull(val, &end, 10);
        if (errno != 0 || *end != '\0' || v < lo || v > hi)
                goto bad;
        *out = v;
        return 0;
bad:
        seterr(err, errlen, "%s='%s' is not valid: expected an integer from %" PRIu64 " to %" PRIu64,
               var, val, lo, hi);
        return -EINVAL;
}

static int parse_uint(const char *var, const char *val, unsigned lo, unsigned hi, unsigned *out,
                      char *err, size_t errlen)
{
        uint64_t v;
        int rc = parse_u64(var, val, lo, hi, &v, err, errlen);

        if (rc == 0)
                *out = (unsigned)v;
        return rc;
}

/* Limits shared by the environment parser and pc_config_validate(). */
#define STEAL_BATCH_MAX 1024
#define REMOTE_MIN_MAX 1000000
#define SPIN_US_MAX 1000000
#define FIBER_KB_MIN 16
#define FIBER_KB_MAX 65536
#define MONITOR_MS_MAX 3600000
#define STALL_MS_MAX 3600000

/* Variables no longer read, with what took their place: set, each is an
 * error rather than a setting silently ignored. */
static const struct {
        const char *name, *instead;
} removed_vars[] = {
        {"PERCORE_SHARED", "workers stay pinned, or roam on CPUs shared with other busy "
                           "threads under PERCORE_OVERPROVISIONED=1"},
        {"PERCORE_PACK", "roaming workers pack under PERCORE_OVERPROVISIONED=1"},
        {"PERCORE_SCHED", "workers run SCHED_OTHER; PERCORE_OVERPROVISIONED=1 makes a "
                          "roaming worker SCHED_BATCH"},
};

static bool metrics_valid(const char *s)
{
        struct sockaddr_storage ss;
        unsigned len;

        return pc__metrics_addr(s, &ss, &len) == 0;
}

int pc_config_from_env(struct pc_config *cfg, char *err, size_t errlen)
{
        const char *v;
        int e, rc;
        uint64_t u;

        for (size_t i = 0; i < NELEM(removed_vars); i++) {
                if (getenv(removed_vars[i].name) != NULL) {
                        seterr(err, errlen, "%s is no longer supported: %s; unset it",
                               removed_vars[i].name, removed_vars[i].instead);
                        return -EINVAL;
                }
        }

#define ENUM_VAR(name, names, field, type)                                                   \
        if ((v = getenv(name)) != NULL) {                                                    \
                rc = parse_enum(name, v, names, NELEM(names), &e, err, errlen);              \
                if (rc)                                                                      \
                        return rc;                                                           \
                cfg->field = (type)e;                                                        \
        }
#define UINT_VAR(name, lo, hi, field)                                                        \
        if ((v = getenv(name)) != NULL) {                                                    \
                rc = parse_uint(name, v, lo, hi, &cfg->field, err, errlen);                  \
                if (rc)                                                                      \
                        return rc;                                                           \
        }
#define STR_VAR(name, field)                                                                 \
        if ((v = getenv(name)) != NULL) {                                                    \
                if (v[0] == '\0') {                                                          \
                        seterr(err, errlen, "%s is set but empty", name);                    \
                        return -EINVAL;                                                      \
                }                                                                            \
                cfg->field = v;                                                              \
        }

        ENUM_VAR("PERCORE_MODE", mode_names, mode, enum pc_mode);
        UINT_VAR("PERCORE_WORKERS", 1, PC_MAX_WORKERS, workers);
        STR_VAR("PERCORE_CPUS", cpus);
        ENUM_VAR("PERCORE_PLACEMENT", place_names, placement, enum pc_placement);
        ENUM_VAR("PERCORE_PIN", bool_names, pin, bool);
        UINT_VAR("PERCORE_STEAL_BATCH", 1, STEAL_BATCH_MAX, steal_batch);
        ENUM_VAR("PERCORE_STEAL_TIERS", tier_names, steal_tiers, enum pc_steal_tiers);
        UINT_VAR("PERCORE_REMOTE_STEAL_MIN", 1, REMOTE_MIN_MAX, remote_steal_min);
        ENUM_VAR("PERCORE_IDLE", idle_names, idle, enum pc_idle);
        UINT_VAR("PERCORE_IDLE_SPIN_US", 0, SPIN_US_MAX, idle_spin_us);
        ENUM_VAR("PERCORE_OVERPROVISIONED", bool_names, overprovisioned, bool);
        UINT_VAR("PERCORE_FIBER_STACK_KB", FIBER_KB_MIN, FIBER_KB_MAX, fiber_stack_kb);
        UINT_VAR("PERCORE_MONITOR_MS", 0, MONITOR_MS_MAX, monitor_ms);
        UINT_VAR("PERCORE_STALL_MS", 0, STALL_MS_MAX, stall_ms);
        if ((v = getenv("PERCORE_SEED")) != NULL) {
                rc = parse_u64("PERCORE_SEED", v, 0, UINT64_MAX, &u, err, errlen);
                if (rc)
                        return rc;
                cfg->seed = u;
        }
        STR_VAR("PERCORE_SYSFS_ROOT", sysfs_root);
        ENUM_VAR("PERCORE_TOPOLOGY", topo_names, topology, enum pc_topology_src);
        STR_VAR("PERCORE_EAL_ARGS", eal_args);
        STR_VAR("PERCORE_METRICS", metrics);
        ENUM_VAR("PERCORE_LOG", log_names, log_level, enum pc_log_level);
        ENUM_VAR("PERCORE_STATS", bool_names, stats, bool);
#undef ENUM_VAR
#undef UINT_VAR
#undef STR_VAR

        if (cfg->metrics && !metrics_valid(cfg->metrics)) {
                seterr(err, errlen,
                       "PERCORE_METRICS='%s' is not valid: expected ADDR:PORT, an IPv4 or "
                       "[IPv6] address and a port from 0 to 65535, e.g. 127.0.0.1:9100",
                       cfg->metrics);
                return -EINVAL;
        }
        if (cfg->cpus) {
                uint64_t set[PC_MAX_CPUS / 64];
                rc = pc_cpulist_parse(cfg->cpus, set, PC_MAX_CPUS);
                if (rc < 0) {
                        seterr(err, errlen,
                               "PERCORE_CPUS='%s' is not valid: expected a CPU list like "
                               "'0-3,8' with CPUs below %d",
                               cfg->cpus, PC_MAX_CPUS);
                        return -EINVAL;
                }
        }
        return 0;
}

int pc_config_validate(const struct pc_config *cfg, char *err, size_t errlen)
{
        if ((unsigned)cfg->mode >= NELEM(mode_names)) {
                seterr(err, errlen, "mode %d is not valid", (int)cfg->mode);
                return -EINVAL;
        }
        if (cfg->workers > PC_MAX_WORKERS) {
                seterr(err, errlen, "workers=%u is not valid: at most %d", cfg->workers,
                       PC_MAX_WORKERS);
                return -EINVAL;
        }
        if (cfg->mode == PC_MODE_DETERMINISTIC && cfg->workers > 1) {
                seterr(err, errlen,
                       "PERCORE_MODE=deterministic runs one worker, but workers=%u was asked "
                       "for",
                       cfg->workers);
                return -EINVAL;
        }
        if ((unsigned)cfg->placement >= NELEM(place_names) ||
            (unsigned)cfg->idle >= NELEM(idle_names) ||
            (unsigned)cfg->steal_tiers >= NELEM(tier_names) ||
            (unsigned)cfg->topology >= NELEM(topo_names) ||
            (unsigned)cfg->log_level >= NELEM(log_names)) {
                seterr(err, errlen, "an enumerated setting is out of range");
                return -EINVAL;
        }
        if (cfg->steal_batch < 1 || cfg->steal_batch > STEAL_BATCH_MAX) {
                seterr(err, errlen, "steal_batch=%u is not valid: 1 to %d", cfg->steal_batch,
                       STEAL_BATCH_MAX);
                return -EINVAL;
        }
        if (cfg->remote_steal_min < 1 || cfg->remote_steal_min > REMOTE_MIN_MAX) {
                seterr(err, errlen, "remote_steal_min=%u is not valid: 1 to %d",
                       cfg->remote_steal_min, REMOTE_MIN_MAX);
                return -EINVAL;
        }
        if (cfg->fiber_stack_kb < FIBER_KB_MIN || cfg->fiber_stack_kb > FIBER_KB_MAX) {
                seterr(err, errlen, "fiber_stack_kb=%u is not valid: %d to %d",
                       cfg->fiber_stack_kb, FIBER_KB_MIN, FIBER_KB_MAX);
                return -EINVAL;
        }
        if (cfg->stall_ms > STALL_MS_MAX) {
                seterr(err, errlen, "stall_ms=%u is not valid: 0 to %d", cfg->stall_ms,
                       STALL_MS_MAX);
                return -EINVAL;
        }
        if (cfg->idle_spin_us > SPIN_US_MAX || cfg->monitor_ms > MONITOR_MS_MAX) {
                seterr(err, errlen, "idle_spin_us or monitor_ms out of range");
                return -EINVAL;
        }
        if (cfg->runq_size < 2 || cfg->runq_size > (1u << 24) ||
            (cfg->runq_size & (cfg->runq_size - 1)) != 0) {
                seterr(err, errlen, "runq_size=%u is not valid: a power of two from 2 to 2^24",
                       cfg->runq_size);
                return -EINVAL;
        }
        if (cfg->metrics && !metrics_valid(cfg->metrics)) {
                seterr(err, errlen, "PERCORE_METRICS='%s' is not valid: expected ADDR:PORT",
                       cfg->metrics);
                return -EINVAL;
        }
        if (cfg->sysfs_root == NULL || cfg->sysfs_root[0] == '\0') {
                seterr(err, errlen, "sysfs_root must name a directory");
                return -EINVAL;
        }
        if (cfg->cpus) {
                uint64_t set[PC_MAX_CPUS / 64];
                if (pc_cpulist_parse(cfg->cpus, set, PC_MAX_CPUS) < 0) {
                        seterr(err, errlen, "cpus='%s' is not a valid CPU list", cfg->cpus);
                        return -EINVAL;
                }
        }
        return 0;
}

int pc_config_format(const struct pc_config *cfg, char *buf, size_t len)
{
        char w[16];

        if (cfg->workers)
                snprintf(w, sizeof(w), "%u", cfg->workers);
        else
                snprintf(w, sizeof(w), "auto");
        return snprintf(buf, len,
                        "mode=%s workers=%s cpus=%s placement=%s pin=%d steal_batch=%u "
                        "steal_tiers=%s remote_steal_min=%u idle=%s idle_spin_us=%u "
                        "shared=%s sched=%s monitor_ms=%u seed=%" PRIu64 " sysfs_root=%s "
                        "topology=%s eal_args=%s log=%s stats=%d runq_size=%u "
                        "fiber_stack_kb=%u stall_ms=%u metrics=%s",
                        pc_mode_name(cfg->mode), w, cfg->cpus ? cfg->cpus : "affinity",
                        place_names[cfg->placement], cfg->pin, cfg->steal_batch,
                        tier_names[cfg->steal_tiers], cfg->remote_steal_min,
                        idle_names[cfg->idle], cfg->idle_spin_us,
                        /* PERCORE_OVERPROVISIONED, as what it does to a worker. */
                        cfg->overprovisioned ? "overprovisioned" : "off",
                        cfg->overprovisioned ? "batch-when-roaming" : "normal",
                        cfg->monitor_ms, cfg->seed,
                        cfg->sysfs_root, topo_names[cfg->topology],
                        cfg->eal_args ? cfg->eal_args : "none", log_names[cfg->log_level],
                        cfg->stats, cfg->runq_size, cfg->fiber_stack_kb,
                        cfg->stall_ms, cfg->metrics ? cfg->metrics : "off");
}
