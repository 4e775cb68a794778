/* NIC locality with hwloc for the ofi transport: a domain whose device hangs
 * below the NUMA node (or package) this process is bound to comes first and
 * gets the better latency class, so the PML prefers it for small messages
 * and the closest NIC is used first. Hardware providers describe their NIC
 * by PCI address (fi_info->nic->bus_attr); the socket providers name the
 * network interface as their domain, found among hwloc's OS devices. The
 * topology is loaded once and kept for the life of the process (destroying
 * it unloads hwloc's I/O plugins, which leak on the way: see
 * dgram_topo_hwloc.c). Built only with hwloc (ofi_topo_none.c otherwise). */
#include "btl/ofi/ofi.h"

#include <hwloc.h>
#include <string.h>

static hwloc_topology_t ofi_topo_get(void)
{
    static hwloc_topology_t topo;
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    if (state == 0) {
        state = -1;
        if (hwloc_topology_init(&topo) == 0) {
            hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
            if (hwloc_topology_load(topo) == 0)
                state = 1;
            else
                hwloc_topology_destroy(topo);
        }
    }
    return state == 1 ? topo : NULL;
}

/* The first non-I/O ancestor of the NIC behind info, or NULL. */
static hwloc_obj_t ofi_topo_anchor(hwloc_topology_t topo, const struct fi_info *info)
{
    const struct fid_nic *nic = info->nic;
    if (nic && nic->bus_attr && nic->bus_attr->bus_type == FI_BUS_PCI) {
        const struct fi_pci_attr *pci = &nic->bus_attr->attr.pci;
        hwloc_obj_t dev = hwloc_get_pcidev_by_busid(topo, pci->domain_id, pci->bus_id,
                                                    pci->device_id, pci->function_id);
        if (dev)
            return hwloc_get_non_io_ancestor_obj(topo, dev);
    }
    const char *name = info->domain_attr->name;
    for (hwloc_obj_t os = NULL; (os = hwloc_get_next_osdev(topo, os)) != NULL;)
        if (os->name && name && strcmp(os->name, name) == 0)
            return hwloc_get_non_io_ancestor_obj(topo, os);
    return NULL;
}

void bm_btl_ofi_topo_near(struct fi_info *const *infos, int n, int *near_out)
{
    for (int i = 0; i < n; i++)
        near_out[i] = -1;
    hwloc_topology_t topo = ofi_topo_get();
    if (!topo)
        return;
    hwloc_cpuset_t mine = hwloc_bitmap_alloc();
    if (mine && hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) == 0) {
        for (int i = 0; i < n; i++) {
            hwloc_obj_t anc = ofi_topo_anchor(topo, infos[i]);
            if (anc && anc->cpuset)
                near_out[i] = hwloc_bitmap_isincluded(mine, anc->cpuset) ? 1 : 0;
        }
    }
    hwloc_bitmap_free(mine);
}
