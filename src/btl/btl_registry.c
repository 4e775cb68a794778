/* The registry of transports: the one list of every transport built into
 * this library, in the order bm_info shows them, and the list of those left
 * out with the reason. This is the only file of the transport layer with
 * build guards: a transport folder that is built defines BM_BTL_BUILD_<NAME>
 * on bm_objs (see src/btl/sources.cmake), and its ops table appears here.
 * Adding a transport is one guarded extern line and one guarded table line. */
#include "btl/btl.h"
#include "bm_config.h"

#if defined(BM_BTL_BUILD_SELF)
extern const struct bm_btl_ops bm_btl_self_ops;
#endif
#if defined(BM_BTL_BUILD_SM)
extern const struct bm_btl_ops bm_btl_sm_ops;
#endif
#if defined(BM_BTL_BUILD_TCP)
extern const struct bm_btl_ops bm_btl_tcp_ops;
#endif
#if defined(BM_BTL_BUILD_DGRAM)
extern const struct bm_btl_ops bm_btl_dgram_ops;
#endif
#if defined(BM_BTL_BUILD_OFI)
extern const struct bm_btl_ops bm_btl_ofi_ops;
#endif

const struct bm_btl_ops *const bm_btl_registry[] = {
#if defined(BM_BTL_BUILD_SELF)
    &bm_btl_self_ops,
#endif
#if defined(BM_BTL_BUILD_SM)
    &bm_btl_sm_ops,
#endif
#if defined(BM_BTL_BUILD_OFI)
    &bm_btl_ofi_ops,
#endif
#if defined(BM_BTL_BUILD_DGRAM)
    &bm_btl_dgram_ops,
#endif
#if defined(BM_BTL_BUILD_TCP)
    &bm_btl_tcp_ops,
#endif
    NULL, /* keeps the array non-empty; not counted */
};

const int bm_btl_registry_count = (int)(sizeof(bm_btl_registry) / sizeof(bm_btl_registry[0])) - 1;

/* Why a transport is missing: ofi says what the configure step found of
 * libfabric (BM_OFI_WHY from bm_config.h), which it needs; the others can only
 * be missing because their folder was not part of this build. */
#if BM_HAVE_OFI
#define BTL_REGISTRY_OFI_WHY "its sources were not part of this build"
#else
#define BTL_REGISTRY_OFI_WHY "libfabric not found at build time (" BM_OFI_WHY ")"
#endif

const struct bm_btl_absent bm_btl_registry_absent[] = {
#if !defined(BM_BTL_BUILD_SELF)
    {"self", "its sources were not part of this build"},
#endif
#if !defined(BM_BTL_BUILD_SM)
    {"sm", "its sources were not part of this build"},
#endif
#if !defined(BM_BTL_BUILD_OFI)
    {"ofi", BTL_REGISTRY_OFI_WHY},
#endif
#if !defined(BM_BTL_BUILD_DGRAM)
    {"dgram", "its sources were not part of this build"},
#endif
#if !defined(BM_BTL_BUILD_TCP)
    {"tcp", "its sources were not part of this build"},
#endif
    {NULL, NULL},
};
