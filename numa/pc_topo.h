/* SPDX-License-Identifier: MIT */
/*
 * percore numa/: the machine's topology, where workers go, whom an idle
 * worker steals from, and memory on a given node.
 *
 * Read it top to bottom: the topology a loader fills in, the two loaders
 * (Linux sysfs and hwloc), CPU placement, steal tiers, printing, then
 * node-local memory.
 *
 * A struct pc_topo is immutable once loaded, so any number of threads may
 * read it at once; it belongs to whoever loaded it, who frees it.
 * Functions that can fail return 0 or a negative errno (strerror(-rc) says
 * what it means).
 *
 * numa/ sits below the runtime and knows nothing of it: this header stands
 * alone, and the library builds and links without core/. The runtime uses
 * it (percore.h includes it) and sends its messages to pc_log().
 */
#ifndef PC_TOPO_H
#define PC_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Highest CPU number + 1 that CPU lists and topologies accept. */
#define PC_TOPO_MAX_CPUS 1024
/** Words in a CPU bitmap of PC_TOPO_MAX_CPUS bits (bit i = CPU i). */
#define PC_CPUSET_WORDS (PC_TOPO_MAX_CPUS / 64)
/** Most workers a placement or a steal order covers (DPDK's RTE_MAX_LCORE,
 *  which the runtime's PC_MAX_WORKERS follows). */
#define PC_TOPO_MAX_WORKERS 128
/** Node ids a topology accepts are below this. */
#define PC_TOPO_MAX_NODES 256
/** Most tiers in a steal order; farther remote distances share the last. */
#define PC_TOPO_MAX_TIERS 16

/* ------------------------------------------------------------------------ */
/* CPU lists and messages                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Parse a CPU list such as "0-3,8,10-11" into @set, an array of @nbits
 * bits (bit i = CPU i). Whitespace around the list and a trailing newline
 * are accepted; anything else that is not a number, ',' or a rising 'a-b'
 * range is an error, never a guess.
 * Returns the number of CPUs in the list, -EINVAL for malformed text or an
 * empty list, -ERANGE for a CPU >= @nbits. Any thread.
 */
int pc_cpulist_parse(const char *text, uint64_t *set, unsigned nbits);

/**
 * Write @set (@nbits bits) as a CPU list ("0-3,8") into @buf. Returns the
 * length snprintf() would have written; "" for an empty set. Any thread.
 */
int pc_cpulist_format(const uint64_t *set, unsigned nbits, char *buf, size_t len);

/** How severe a message of numa/ is, most severe first (the values of
 *  percore.h's enum pc_log_level). */
enum pc_topo_log_level {
        PC_TOPO_LOG_ERROR,
        PC_TOPO_LOG_WARN,
        PC_TOPO_LOG_INFO,
        PC_TOPO_LOG_DEBUG,
};

/** Receives one message of numa/: a line of text without its newline. */
typedef void (*pc_topo_log_fn)(enum pc_topo_log_level level, const char *msg);

/**
 * Send numa/'s messages (a loader's error or flat-fallback warning, a node
 * that memory cannot be bound to) to @fn. NULL restores the default, which
 * writes errors, warnings and info to stderr as one "percore: LEVEL: text"
 * line each and drops debug. pc_runtime_create() points it at pc_log(),
 * which filters by the log level of the last runtime created. Cannot fail.
 * Any thread; a message being written at that moment may still reach the
 * previous hook.
 */
void pc_topo_set_log(pc_topo_log_fn fn);

/* ------------------------------------------------------------------------ */
/* The topology                                                             */
/* ------------------------------------------------------------------------ */

/** One logical CPU (a hardware thread). */
struct pc_topo_cpu {
        int cpu;      /**< its number, the index into pc_topo.cpu[] */
        bool online;  /**< present and online; all fields below are -1 if not */
        bool usable;  /**< online and in the allowed set the loader was given */
        int package;  /**< physical package (socket) id */
        int die;      /**< die id; the package id where the kernel has no dies */
        int core;     /**< dense machine-wide core index, 0..ncores-1 */
        int core_id;  /**< the kernel's core_id, unique within a package only */
        int smt_rank; /**< 0 for the lowest-numbered online thread of its core */
        int l3;       /**< dense L3 index, 0..nl3-1, or -1 if there is none */
        int node;     /**< NUMA node id */
};

/** One NUMA node. */
struct pc_topo_node {
        int id;                         /**< the kernel's node id */
        bool has_memory;                /**< false for a CPU-only node */
        unsigned ncpus;                 /**< online CPUs on it */
        uint64_t cpus[PC_CPUSET_WORDS]; /**< those CPUs, as a bitmap */
};

/**
 * A machine. Numbering rules, so that two loaders compare: cpu[] is indexed
 * by CPU number, node[] by dense node index (ids ascending), packages and
 * dies keep the kernel's ids, cores and L3s are numbered densely in order of
 * their lowest CPU.
 */
struct pc_topo {
        unsigned ncpus; /**< entries in cpu[]: highest CPU + 1 */
        struct pc_topo_cpu *cpu;
        unsigned nonline;   /**< online CPUs */
        unsigned nusable;   /**< usable CPUs */
        unsigned ncores;    /**< physical cores with an online CPU */
        unsigned npackages; /**< packages with an online CPU */
        unsigned nl3;       /**< L3 caches; 0 when none is known */
        unsigned nnodes;    /**< entries in node[] */
        struct pc_topo_node *node;
        /** nnodes x nnodes SLIT: distance[i * nnodes + j], 10 = local. */
        uint8_t *distance;
        /** True when the loader gave up on detail: one node, one package,
         *  one core per CPU, no L3. A warning said why. */
        bool flat_fallback;
        char source[256]; /**< where it came from, for humans */
};

/**
 * Load the topology from a Linux sysfs tree: @root is the directory that
 * holds devices/system/{cpu,node} ("/sys", or a fixture's "sys"; NULL means
 * "/sys"). @allowed is a PC_TOPO_MAX_CPUS-bit set of the CPUs the process may
 * use (see pc_topo_affinity()); NULL makes every online CPU usable.
 *
 * What is read, and what happens when it is missing:
 *  - cpu/online: required; missing is -ENOENT, malformed is -EINVAL.
 *  - per online CPU, topology/{physical_package_id,core_id}: required.
 *    topology/die_id (kernel 5.0+) is optional: the package stands in.
 *    topology/core_cpus_list (5.4+) or else thread_siblings_list groups
 *    SMT threads; with neither, threads group by package, die and core_id.
 *  - cpu/cpuN/cache/index<K>/{level,type,shared_cpu_list}: the first
 *    unified or data cache of level 3 gives the L3; none means l3 = -1.
 *  - node/: a kernel without NUMA has none, which means one node 0 with
 *    every CPU (no warning). Otherwise node/online, nodeN/cpulist and
 *    nodeN/distance are required.
 *  - memory: node/has_memory (the kernel's own mask) when present, else
 *    nodeN/meminfo's MemTotal (> 0 kB means memory), else assume memory,
 *    because wrongly calling a node memory-less sends its allocations
 *    elsewhere, which is worse than trying and falling back.
 * A required file that is missing, or any file read that is malformed
 * (garbage is never guessed at), makes the loader log ONE warning naming
 * the file and return a flat topology (flat_fallback): one node, one
 * package, each online CPU its own core, no L3.
 *
 * Returns 0 and sets *@out, or for cpu/online -ENOENT (missing), -EINVAL
 * (malformed), -ERANGE (a CPU >= PC_TOPO_MAX_CPUS), another -errno (unreadable);
 * -ENAMETOOLONG for a @root near PATH_MAX, -EINVAL for @out NULL, -ENOMEM.
 * Any thread; it only reads files.
 */
int pc_topo_load(const char *root, const uint64_t *allowed, struct pc_topo **out);

/**
 * Load the topology through hwloc. @source NULL means this machine (hwloc
 * honours HWLOC_FSROOT, so a fixture directory works too: set it to the
 * directory holding "sys/"); a string ending in ".xml" is an XML export;
 * anything else is a synthetic description such as
 * "pack:2 numa:2 l3:1 core:8 pu:2". Synthetic machines have no SLIT, so
 * their distances are 10 local and 20 remote. @allowed as for
 * pc_topo_load(). Offline CPUs are known to hwloc only through the
 * machine's complete set, so they appear with online false.
 *
 * Returns 0 and sets *@out, -ENOTSUP when built without hwloc, -EINVAL
 * when hwloc rejects @source or finds no CPU, -ERANGE for a CPU or node
 * number past the limits above, -ENOMEM. Any thread.
 */
int pc_topo_load_hwloc(const char *source, const uint64_t *allowed, struct pc_topo **out);

/** Free @t; NULL is ignored. Any thread, once nobody reads it any more. */
void pc_topo_free(struct pc_topo *t);

/**
 * The calling thread's allowed CPUs (sched_getaffinity, which already
 * reflects cgroup cpusets and taskset), into @set of PC_CPUSET_WORDS
 * words. Returns the number of CPUs or -errno. Any thread.
 */
int pc_topo_affinity(uint64_t *set);

/** Node id of @cpu, or -EINVAL if it is not an online CPU of @t. Any thread. */
int pc_topo_node_of_cpu(const struct pc_topo *t, int cpu);

/** Dense index in node[] of node @id, or -ENOENT. Any thread. */
int pc_topo_node_index(const struct pc_topo *t, int id);

/** SLIT distance between nodes @a and @b (ids), or -EINVAL. Any thread. */
int pc_topo_distance(const struct pc_topo *t, int a, int b);

/* ------------------------------------------------------------------------ */
/* Placement                                                                */
/* ------------------------------------------------------------------------ */

/** How workers pick CPUs among the usable ones. */
enum pc_placement {
        PC_PLACE_COMPACT, /**< fill a node, then the next (default) */
        PC_PLACE_SPREAD,  /**< round-robin across nodes */
};

/**
 * Choose a CPU for each of @nworkers workers among the usable CPUs of @t,
 * into @cpus_out[0..nworkers-1]. Within a node, one worker per physical
 * core comes first, SMT siblings after ("first thread" meaning the first
 * usable one, so a core whose thread 0 is not allowed still counts once).
 *  - PC_PLACE_COMPACT fills node after node (ascending id); within a
 *    node, cores of one L3 before the next L3's.
 *  - PC_PLACE_SPREAD deals workers round-robin across nodes, the nodes
 *    taken so that consecutive ones sit on different packages, and within
 *    a node round-robin across its L3s; all first threads of the machine
 *    are used before any sibling.
 * The order is deterministic, so a restart places the same way.
 *
 * With more workers than usable CPUs: -EINVAL if @pin, else the order
 * wraps around (oversubscribed tests). Errors: -EINVAL (NULL, 0 or more
 * than PC_TOPO_MAX_WORKERS workers, unknown placement), -ENODEV (no usable
 * CPU). Any thread.
 */
int pc_topo_place(const struct pc_topo *t, unsigned nworkers, enum pc_placement placement,
                  bool pin, int *cpus_out);

/* ------------------------------------------------------------------------ */
/* Steal tiers                                                              */
/* ------------------------------------------------------------------------ */

/** What a steal tier's victims share with the thief. */
enum pc_tier_kind {
        PC_TIER_CACHE,   /**< the same core (SMT sibling) or the same L3 */
        PC_TIER_NODE,    /**< the same NUMA node, another L3 */
        PC_TIER_PACKAGE, /**< the same package, another node: one tier per distance */
        PC_TIER_REMOTE,  /**< another package: one tier per SLIT distance */
};

/**
 * One worker's victims, nearest first: victims[tier_start[i] ..
 * tier_start[i+1]-1] form tier i, of kind tier_kind[i]. Inside a tier
 * victims are in worker order; a thief picks a random start there.
 */
struct pc_steal_order {
        unsigned ntiers;
        unsigned nvictims; /**< == tier_start[ntiers], nworkers - 1 */
        unsigned tier_start[PC_TOPO_MAX_TIERS + 1];
        uint8_t tier_kind[PC_TOPO_MAX_TIERS];     /**< enum pc_tier_kind */
        uint8_t tier_distance[PC_TOPO_MAX_TIERS]; /**< SLIT distance of the tier */
        uint16_t victims[PC_TOPO_MAX_WORKERS];
};

/**
 * Compute worker @w's steal order, given every worker's CPU (as from
 * pc_topo_place()). Tiers, empty ones omitted: PC_TIER_CACHE, PC_TIER_NODE,
 * then PC_TIER_PACKAGE and PC_TIER_REMOTE, each split into one tier per
 * distinct SLIT distance, ascending (an EPYC in NPS4 mode has every node in
 * one package, and its nearer quadrant still comes first). Tiers past
 * PC_TOPO_MAX_TIERS share the last. The thief never appears; every other
 * worker appears exactly once. Two workers on one CPU (unpinned,
 * oversubscribed) share a core: PC_TIER_CACHE.
 *
 * Errors: -EINVAL (NULL, @nworkers 0 or > PC_TOPO_MAX_WORKERS, @w >= @nworkers,
 * a worker CPU that is not online in @t). Any thread.
 */
int pc_topo_steal_tiers(const struct pc_topo *t, const int *worker_cpus,
                        unsigned nworkers, unsigned w, struct pc_steal_order *out);

/** Name of a tier kind ("cache", "node", "package", "remote"). */
const char *pc_topo_tier_name(enum pc_tier_kind kind);

/* ------------------------------------------------------------------------ */
/* Printing                                                                 */
/* ------------------------------------------------------------------------ */

/**
 * Print the machine to @f: CPUs, nodes and their distances, L3 groups; a
 * table, or one JSON object when @json. Returns 0 or -EIO if writing
 * failed. Any thread.
 */
int pc_topo_format(const struct pc_topo *t, FILE *f, bool json);

/**
 * Print the worker -> lcore -> CPU -> node map and every worker's steal
 * tiers for @nworkers workers on @worker_cpus; a table, or a JSON array of
 * one object per worker when @json. Nothing is printed when an argument
 * is bad. Returns 0, -EINVAL (as pc_topo_steal_tiers()) or -EIO. Any
 * thread.
 */
int pc_topo_format_workers(const struct pc_topo *t, const int *worker_cpus,
                           unsigned nworkers, FILE *f, bool json);

/* ------------------------------------------------------------------------ */
/* Node-local memory                                                        */
/* ------------------------------------------------------------------------ */

/**
 * Allocate @size bytes of zeroed, page-aligned memory on NUMA node @node.
 * With libnuma and a NUMA kernel the mapping gets the MPOL_PREFERRED policy
 * for @node: pages come from @node while it has free memory, from another
 * node after that. Without libnuma, on a non-NUMA kernel, for @node < 0 or
 * a node the kernel refuses (no memory), the pages go where the first
 * thread to touch them runs. Returns NULL with errno ENOMEM, or EINVAL for
 * size 0. Any thread; free with pc_numa_free() and the same @size.
 */
void *pc_numa_alloc(size_t size, int node);

/**
 * Give the pages of a mapping of the caller's (@p, @size, page-aligned)
 * the MPOL_PREFERRED policy for @node, as pc_numa_alloc() does, before
 * they are touched. Returns 0, -ENOTSUP (no libnuma, no NUMA kernel, or
 * @node < 0), or mbind(2)'s -errno (the pages then go where first
 * touched). Any thread.
 */
int pc_numa_prefer(void *p, size_t size, int node);

/** Free what pc_numa_alloc() returned; NULL is ignored. Any thread. */
void pc_numa_free(void *p, size_t size);

/** True when allocations can be bound to nodes (libnuma, NUMA kernel). */
bool pc_numa_available(void);

#ifdef __cplusplus
}
#endif

#endif /* PC_TOPO_H */
