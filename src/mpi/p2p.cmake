# MPI point-to-point entry points and request completion.
target_sources(bm_objs PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/p2p.c
    ${CMAKE_CURRENT_LIST_DIR}/request.c
    ${CMAKE_CURRENT_LIST_DIR}/grequest.c
    ${CMAKE_CURRENT_LIST_DIR}/mprobe.c
    ${CMAKE_CURRENT_LIST_DIR}/isendrecv.c
    ${CMAKE_CURRENT_LIST_DIR}/mt.c)
