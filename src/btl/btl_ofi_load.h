/* What the transports built on libfabric (ofi, and dgram's libfabric wire)
 * share besides the fi_* API itself, which btl_ofi_load.c provides by
 * loading libfabric on first use: the reading of provider lists in their
 * include/exclude parameters. Only built with libfabric. */
#ifndef BM_BTL_OFI_LOAD_H
#define BM_BTL_OFI_LOAD_H

#include <stdbool.h>
#include <stddef.h>

/* True when the comma list names name[0..len) as one of its entries. */
bool bm_btl_ofi_list_has(const char *list, const char *name, size_t len);

/* True when a provider (a chain such as "tcp;ofi_rxm", or "udp") matches an
 * entry of a comma list: the whole chain, or one of its links ("tcp",
 * "ofi_rxm"). An empty or NULL list matches nothing. */
bool bm_btl_ofi_provider_match(const char *list, const char *name);

#endif
