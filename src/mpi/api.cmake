# MPI entry points other than point-to-point: start-up, errors,
# communicators, datatypes, reductions and collectives.
target_sources(bm_objs PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/init.c
    ${CMAKE_CURRENT_LIST_DIR}/alloc_mem.c
    ${CMAKE_CURRENT_LIST_DIR}/errhandler.c
    ${CMAKE_CURRENT_LIST_DIR}/comm.c
    ${CMAKE_CURRENT_LIST_DIR}/comm_cid.c
    ${CMAKE_CURRENT_LIST_DIR}/comm_idup.c
    ${CMAKE_CURRENT_LIST_DIR}/intercomm.c
    ${CMAKE_CURRENT_LIST_DIR}/attr.c
    ${CMAKE_CURRENT_LIST_DIR}/group.c
    ${CMAKE_CURRENT_LIST_DIR}/info.c
    ${CMAKE_CURRENT_LIST_DIR}/handles.c
    ${CMAKE_CURRENT_LIST_DIR}/mpi_t.c
    ${CMAKE_CURRENT_LIST_DIR}/topo.c
    ${CMAKE_CURRENT_LIST_DIR}/topo_graph.c
    ${CMAKE_CURRENT_LIST_DIR}/datatype.c
    ${CMAKE_CURRENT_LIST_DIR}/datatype_attr.c
    ${CMAKE_CURRENT_LIST_DIR}/datatype_pack.c
    ${CMAKE_CURRENT_LIST_DIR}/op.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_api.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_sched.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_select.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_bcast.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_reduce.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_gather.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_neighbor.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_request.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_side.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_inter.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_sm.c
    ${CMAKE_CURRENT_LIST_DIR}/coll_hier.c)
