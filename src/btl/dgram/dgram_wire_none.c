/* Builds without libfabric have no FI_EP_DGRAM wire: the dgram transport
 * then runs on native UDP only, and BM_BTL_DGRAM_WIRE=ofi is refused with a
 * message (dgram_module.c). */
#include "btl/dgram/dgram.h"

const struct bm_btl_dgram_wire_ops *const bm_btl_dgram_wire_ofi = NULL;
