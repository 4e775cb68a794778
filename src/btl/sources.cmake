# Framework sources of the transport layer (selection, registry). Transport
# folders add their own sources with bm_add_btl() and announce themselves with
#   target_compile_definitions(bm_objs PRIVATE BM_BTL_BUILD_<NAME>=1)
# which both btl_registry.c and the conformance suite (tests/btl) look for.
target_sources(bm_objs PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/btl_atomic.c
    ${CMAKE_CURRENT_LIST_DIR}/btl_base.c
    ${CMAKE_CURRENT_LIST_DIR}/btl_defer.c
    ${CMAKE_CURRENT_LIST_DIR}/btl_mem.c
    ${CMAKE_CURRENT_LIST_DIR}/btl_registry.c)
if(BM_HAVE_OFI)
    # libfabric is loaded on first use, not linked (see the file's comment).
    target_sources(bm_objs PRIVATE ${CMAKE_CURRENT_LIST_DIR}/btl_ofi_load.c)
endif()
