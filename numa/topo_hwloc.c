/* SPDX-License-Identifier: MIT */
/*
 * The hwloc loader: the same struct pc_topo, read through hwloc. It is the
 * cross-check of the sysfs loader (tests compare the two), reads hwloc XML
 * exports of machines we do not have, and builds synthetic machines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo_pvt.h"

#ifdef PC_HAVE_HWLOC
#include <hwloc.h>

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The OS index of the nearest ancestor of @type, its logical index when
 * the OS gave none (synthetic), or -1 when there is no such ancestor. */
static int ancestor_index(hwloc_topology_t topo, hwloc_obj_t pu, hwloc_obj_type_t type)
{
        hwloc_obj_t o = hwloc_get_ancestor_obj_by_type(topo, type, pu);

        if (o == NULL)
                return -1;
        return o->os_index != HWLOC_UNKNOWN_INDEX ? (int)o->os_index
                                                  : (int)o->logical_index;
}

/* The group representative the common code wants: the first PU of the
 * ancestor of @type, or -1 without one. */
static int ancestor_first(hwloc_topology_t topo, hwloc_obj_t pu, hwloc_obj_type_t type)
{
        hwloc_obj_t o = hwloc_get_ancestor_obj_by_type(topo, type, pu);

        return o ? hwloc_bitmap_first(o->cpuset) : -1;
}

static int node_cmp(const void *a, const void *b)
{
        const struct pc_topo_node *x = a, *y = b;

        return (x->id > y->id) - (x->id < y->id);
}

/* Copy hwloc's NUMA distance matrix (SLIT on Linux) into t->distance.
 * Without one (synthetic, XML without it) use 10 local, 20 remote, the
 * kernel's own default when firmware has no SLIT. */
static void load_distances(hwloc_topology_t topo, struct pc_topo *t)
{
        struct hwloc_distances_s *d = NULL;
        unsigned nr = 1, nn = t->nnodes;

        for (unsigned i = 0; i < nn; i++)
                for (unsigned j = 0; j < nn; j++)
                        t->distance[i * nn + j] = i == j ? 10 : 20;
        if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d, 0, 0) != 0 ||
            nr == 0)
                return;
        for (unsigned i = 0; i < d->nbobjs; i++) {
                for (unsigned j = 0; j < d->nbobjs; j++) {
                        int a = pc_topo_node_index(t, (int)d->objs[i]->os_index);
                        int b = pc_topo_node_index(t, (int)d->objs[j]->os_index);
                        uint64_t v = d->values[i * d->nbobjs + j];

                        if (a >= 0 && b >= 0)
                                t->distance[(unsigned)a * nn + (unsigned)b] =
                                    (uint8_t)(v > 255 ? 255 : v);
                }
        }
        hwloc_distances_release(topo, d);
}

static int convert(hwloc_topology_t topo, const uint64_t *allowed, struct pc_topo **out)
{
        hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(topo);
        int last = hwloc_bitmap_last(all), nn, i = 0, rc;
        hwloc_obj_t o = NULL;
        struct pc_topo *t;

        nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        if (last < 0 || nn <= 0)
                return -EINVAL;
        if (last >= PC_TOPO_MAX_CPUS || nn > PC_TOPO_MAX_NODES)
                return -ERANGE;
        t = pc__topo_alloc((unsigned)last + 1, (unsigned)nn);
        if (t == NULL)
                return -ENOMEM;

        while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) != NULL) {
                if (o->os_index >= PC_TOPO_MAX_NODES) {
                        pc_topo_free(t);
                        return -ERANGE;
                }
                t->node[i].id = (int)o->os_index;
                t->node[i].has_memory = o->attr->numanode.local_memory > 0;
                /* Scratch: the node's CPUs, until finish() rebuilds them. */
                for (int c = hwloc_bitmap_first(o->cpuset); c >= 0 && c <= last;
                     c = hwloc_bitmap_next(o->cpuset, c))
                        pc__bit_set(t->node[i].cpus, (unsigned)c);
                i++;
        }
        qsort(t->node, t->nnodes, sizeof(t->node[0]), node_cmp);

        while ((o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, o)) != NULL) {
                struct pc_topo_cpu *p;
                int c = (int)o->os_index;

                if (o->os_index == HWLOC_UNKNOWN_INDEX || c > last)
                        continue;
                p = &t->cpu[c];
                p->online = true;
                p->package = ancestor_index(topo, o, HWLOC_OBJ_PACKAGE);
                if (p->package < 0)
                        p->package = 0;
                p->die = ancestor_index(topo, o, HWLOC_OBJ_DIE);
                p->core = ancestor_first(topo, o, HWLOC_OBJ_CORE);
                p->core_id = ancestor_index(topo, o, HWLOC_OBJ_CORE);
                if (p->core < 0)
                        p->core = c;
                p->l3 = ancestor_first(topo, o, HWLOC_OBJ_L3CACHE);
                /* A PU under several nodes (memory tiers sharing CPUs) takes
                 * the lowest id, the node the kernel itself reports. */
                for (unsigned n = 0; n < t->nnodes && p->node < 0; n++)
                        if (pc__bit(t->node[n].cpus, (unsigned)c))
                                p->node = t->node[n].id;
        }
        load_distances(topo, t);
        rc = pc__topo_finish(t, allowed);
        if (rc) {
                pc_topo_free(t);
                return rc;
        }
        *out = t;
        return 0;
}

int pc_topo_load_hwloc(const char *source, const uint64_t *allowed, struct pc_topo **out)
{
        const char *fsroot = getenv("HWLOC_FSROOT");
        hwloc_topology_t topo;
        char src[sizeof(((struct pc_topo *)0)->source)];
        int rc = 0;

        if (out == NULL)
                return -EINVAL;
        if (hwloc_topology_init(&topo) != 0)
                return -ENOMEM;
        /* Disallowed CPUs are still part of the machine; @allowed decides
         * which are usable, exactly as for the sysfs loader. */
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
        if (source == NULL) {
                if (fsroot && strcmp(fsroot, "/") != 0) {
                        /* The x86 backend reads this CPU's CPUID and would mix
                         * the host into a fake tree. */
                        hwloc_topology_set_components(
                            topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
                        snprintf(src, sizeof(src), "hwloc:fsroot:%s", fsroot);
                } else {
                        snprintf(src, sizeof(src), "hwloc:this machine");
                }
        } else if (ends_with(source, ".xml")) {
                rc = hwloc_topology_set_xml(topo, source);
                snprintf(src, sizeof(src), "hwloc:xml:%s", source);
        } else {
                rc = hwloc_topology_set_synthetic(topo, source);
                snprintf(src, sizeof(src), "hwloc:synthetic:%s", source);
        }
        if (rc != 0 || hwloc_topology_load(topo) != 0) {
                rc = errno == ENOMEM ? -ENOMEM : -EINVAL;
                pc__topo_log(PC_TOPO_LOG_ERROR, "topology: hwloc cannot load %s", src);
                hwloc_topology_destroy(topo);
                return rc;
        }
        rc = convert(topo, allowed, out);
        hwloc_topology_destroy(topo);
        if (rc == 0)
                snprintf((*out)->source, sizeof((*out)->source), "%s", src);
        return rc;
}

#else /* !PC_HAVE_HWLOC */

int pc_topo_load_hwloc(const char *source, const uint64_t *allowed, struct pc_topo **out)
{
        (void)source;
        (void)allowed;
        (void)out;
        return -ENOTSUP;
}

#endif
