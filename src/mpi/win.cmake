# One-sided communication (MPI-3.1 chapter 11): windows, communication
# calls, synchronisation, the target-side agent.
target_sources(bm_objs PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/win.c
    ${CMAKE_CURRENT_LIST_DIR}/win_attr.c
    ${CMAKE_CURRENT_LIST_DIR}/win_ops.c
    ${CMAKE_CURRENT_LIST_DIR}/win_sync.c
    ${CMAKE_CURRENT_LIST_DIR}/win_agent.c
    ${CMAKE_CURRENT_LIST_DIR}/win_acc.c)
