/* Interface locality with hwloc: an interface whose device hangs below the
 * NUMA node (or package) the process is bound to gets the better latency
 * class, so the PML prefers it for small messages. The topology is loaded
 * once per process and kept (never destroyed): destroying it unloads hwloc's
 * I/O plugins, which leak on the way (measured with LeakSanitizer, hwloc
 * 2.9), while a kept topology is simply reachable memory. Built only with
 * hwloc (dgram_topo_none.c otherwise). */
#include "btl/dgram/dgram.h"

#include <hwloc.h>
#include <string.h>

void bm_btl_dgram_topo_near(const char *const *ifnames, int n, int *near_out)
{
    static hwloc_topology_t topo;
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    for (int i = 0; i < n; i++)
        near_out[i] = -1;
    if (state == 0) {
        state = -1;
        if (hwloc_topology_init(&topo) != 0)
            return;
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        if (hwloc_topology_load(topo) != 0) {
            hwloc_topology_destroy(topo);
            return;
        }
        state = 1;
    }
    if (state != 1)
        return;
    hwloc_cpuset_t mine = hwloc_bitmap_alloc();
    if (!mine || hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) != 0) {
        hwloc_bitmap_free(mine);
        return;
    }
    hwloc_obj_t os = NULL;
    while ((os = hwloc_get_next_osdev(topo, os)) != NULL) {
        if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !os->name)
            continue;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
        if (!anc || !anc->cpuset)
            continue;
        for (int i = 0; i < n; i++)
            if (strcmp(os->name, ifnames[i]) == 0)
                near_out[i] = hwloc_bitmap_isincluded(mine, anc->cpuset) ? 1 : 0;
    }
    hwloc_bitmap_free(mine);
}
