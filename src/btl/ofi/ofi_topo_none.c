/* Builds without hwloc cannot tell which NIC is close to the process: the
 * domains keep libfabric's order and share one latency class. */
#include "btl/ofi/ofi.h"

void bm_btl_ofi_topo_near(struct fi_info *const *infos, int n, int *near_out)
{
    (void)infos;
    for (int i = 0; i < n; i++)
        near_out[i] = -1;
}
