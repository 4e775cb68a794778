# One-sided communication tests (labels mpi, osc): every program on every
# window flavour over the transports' paths (src/mpi/README.md, one-sided):
#   self    one process alone (BM_BTL=self): every operation on its own window
#   sm      self,sm: allocated windows in one shared segment (loads/stores),
#           created ones through sm's single copy and atomics
#   rdma    self,sm with BM_MPI_OSC_SHM=off: every window through sm's
#           single-copy put/get and target-run atomics
#   tcp     self,tcp: everything through the target's agent
#   dgram   self,dgram: dgram's emulated put/get, the rest through the agent
#   tcpthread, rdmathread: tcp and rdma with the progress thread on
#           (BM_PML_PROGRESS_THREAD=1): the agent runs in another thread
set(osc_dir ${CMAKE_CURRENT_LIST_DIR})

function(bm_osc_test prog)
    cmake_parse_arguments(A "" "TIMEOUT" "RUNS" ${ARGN})
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT 90)
    endif()
    add_executable(${prog} ${osc_dir}/${prog}.c)
    target_link_libraries(${prog} PRIVATE bitmover bm_test_harness)
    # RUNS: path:np:flavour triples
    foreach(run ${A_RUNS})
        string(REPLACE ":" ";" f ${run})
        list(GET f 0 path)
        list(GET f 1 np)
        list(GET f 2 flavour)
        set(env "")
        if(path STREQUAL "self")
            set(btl self)
        elseif(path STREQUAL "sm")
            set(btl self,sm)
        elseif(path STREQUAL "rdma")
            set(btl self,sm)
            set(env BM_MPI_OSC_SHM=off)
        elseif(path STREQUAL "tcp")
            set(btl self,tcp)
        elseif(path STREQUAL "dgram")
            set(btl self,dgram)
        elseif(path STREQUAL "tcpthread")
            set(btl self,tcp)
            set(env BM_PML_PROGRESS_THREAD=1)
        elseif(path STREQUAL "rdmathread")
            set(btl self,sm)
            set(env BM_MPI_OSC_SHM=off BM_PML_PROGRESS_THREAD=1)
        endif()
        set(labels mpi osc)
        if(path MATCHES "thread")
            list(APPEND labels tsan) # two threads in the library: make tsan runs them
        endif()
        bm_add_mpi_test(${prog}_${path}_${flavour}_np${np} TARGET ${prog} NP ${np} BTL ${btl}
            TIMEOUT ${A_TIMEOUT} LABELS ${labels} ARGS ${flavour} ENV ${env})
    endforeach()
endfunction()

bm_osc_test(osc_fence RUNS self:1:create sm:4:allocate sm:3:create sm:2:shared
    rdma:3:allocate tcp:3:create tcp:2:dynamic dgram:2:allocate)
bm_osc_test(osc_lock RUNS self:1:dynamic sm:4:allocate sm:3:create rdma:3:create tcp:3:allocate
    tcp:2:dynamic dgram:2:create rdmathread:2:create)
bm_osc_test(osc_atomic RUNS self:1:allocate sm:8:allocate sm:4:create rdma:4:allocate tcp:4:create
    tcp:3:dynamic dgram:3:allocate tcpthread:3:create rdmathread:3:allocate)
bm_osc_test(osc_pscw RUNS self:1:shared sm:4:allocate sm:3:create rdma:3:create tcp:3:allocate
    tcp:2:dynamic dgram:3:create tcpthread:2:allocate)
bm_osc_test(osc_windows RUNS sm:4:any tcp:3:any)
# compare-and-swap on every accepted type class (MPI_CHAR: osu_cas_latency)
bm_osc_test(osc_cas_types RUNS sm:2:allocate rdma:2:create tcp:3:allocate dgram:2:dynamic)
bm_osc_test(osc_errors RUNS sm:3:classes tcp:2:classes)
# Transport operations that fail (a debug knob: BM_MPI_OSC_FAIL_RDMA=1) over
# sm's single copy and dgram's emulated RDMA.
bm_add_mpi_test(osc_errors_inject_sm_np2 TARGET osc_errors NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi osc ARGS inject_amo ENV BM_MPI_OSC_FAIL_RDMA=1 BM_MPI_OSC_SHM=off)
bm_add_mpi_test(osc_errors_inject_dgram_np2 TARGET osc_errors NP 2 BTL self,dgram TIMEOUT 60
    LABELS mpi osc ARGS inject ENV BM_MPI_OSC_FAIL_RDMA=1)
# Passive-target progress while the target computes: the shared-segment
# path never waits; the agent path (tcp, or sm without the segment) waits for
# the target's next MPI call without the progress thread and not with it.
add_executable(osc_passive ${osc_dir}/osc_passive.c)
target_link_libraries(osc_passive PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(osc_passive_shm_np2 TARGET osc_passive NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi osc ARGS fast shared-segment)
bm_add_mpi_test(osc_passive_agent_np2 TARGET osc_passive NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi osc ARGS wait agent)
bm_add_mpi_test(osc_passive_agent_thread_np2 TARGET osc_passive NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi osc tsan ARGS fast agent ENV BM_PML_PROGRESS_THREAD=1)
bm_add_mpi_test(osc_passive_sm_thread_np2 TARGET osc_passive NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi osc tsan ARGS fast "sm single copy + agent" ENV BM_PML_PROGRESS_THREAD=1
    BM_MPI_OSC_SHM=off)
bm_osc_test(osc_dtype RUNS sm:3:allocate sm:2:create rdma:2:allocate tcp:3:create tcp:2:dynamic
    dgram:2:allocate)
# The stripe locks of wide-element accumulates in shared segments: the same
# lock for an element in every mapping, no lost additions between processes.
bm_add_unit_test(test_osc_stripes SOURCES ${osc_dir}/test_osc_stripes.c LABELS unit osc
    TIMEOUT 30)
# Messages of fence, PSCW and lock epochs counted (needs the library's
# internals: bm_pml_am_sent).
add_executable(osc_msgs ${osc_dir}/osc_msgs.c)
target_link_libraries(osc_msgs PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(osc_msgs_tcp_np3 TARGET osc_msgs NP 3 BTL self,tcp TIMEOUT 60
    LABELS mpi osc ARGS agent ENV BM_MPI_OSC_BATCH=0)
bm_add_mpi_test(osc_msgs_batch_np3 TARGET osc_msgs NP 3 BTL self,tcp TIMEOUT 60
    LABELS mpi osc ARGS batch)
bm_add_mpi_test(osc_msgs_shm_np3 TARGET osc_msgs NP 3 BTL self,sm TIMEOUT 60
    LABELS mpi osc ARGS shm)
bm_add_mpi_test(osc_msgs_rdma_np3 TARGET osc_msgs NP 3 BTL self,sm TIMEOUT 60
    LABELS mpi osc ARGS rdma ENV BM_MPI_OSC_SHM=off)
