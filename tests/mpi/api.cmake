# MPI tests of the non-point-to-point API: start-up, errors (returned and
# fatal), collectives at 1, 2, 3, 4 and 8 ranks, and bmcc.
set(api_dir ${CMAKE_CURRENT_LIST_DIR})

function(bm_api_test name np)
    bm_add_mpi_test(${name}_np${np} TARGET ${name} NP ${np} BTL self,sm TIMEOUT 120
        ENV BM_TEST_EXPECT_NP=${np})
endfunction()

foreach(prog api_init api_errors api_coll api_coll_blocks api_group api_datatype api_attr
        api_info api_topo api_topo_graph api_intercomm api_dtype_derived api_comm_more
        api_interop api_mpi_t api_conform)
    add_executable(${prog} ${api_dir}/${prog}.c)
    target_link_libraries(${prog} PRIVATE bitmover bm_test_harness)
endforeach()
# Reads context ids and object states: linked with the library's internals.
add_executable(api_comm_life ${api_dir}/api_comm_life.c)
target_link_libraries(api_comm_life PRIVATE bitmover_internal bm_test_harness)
target_include_directories(api_comm_life PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_executable(api_fatal ${api_dir}/api_fatal.c)
target_link_libraries(api_fatal PRIVATE bitmover)

foreach(np 1 2 4)
    bm_api_test(api_init ${np})
endforeach()
# Without a launcher: a singleton job of one process.
add_test(NAME api_init_singleton COMMAND api_init --singleton)
bm_scaled_timeout(t 30)
set_tests_properties(api_init_singleton PROPERTIES TIMEOUT ${t} LABELS mpi)

foreach(np 1 3)
    bm_api_test(api_errors ${np})
endforeach()
foreach(np 1 3 4)
    bm_api_test(api_group ${np})
endforeach()
foreach(np 1 4 6)
    bm_api_test(api_topo ${np})
endforeach()
foreach(np 1 2 5)
    bm_api_test(api_topo_graph ${np})
endforeach()
bm_api_test(api_info 1)
foreach(np 1 2 3 5)
    bm_api_test(api_intercomm ${np})
endforeach()
foreach(np 1 2 3)
    bm_api_test(api_comm_life ${np})
endforeach()
foreach(np 1 2 3 5)
    bm_api_test(api_comm_more ${np})
endforeach()
foreach(np 1 3)
    bm_api_test(api_interop ${np})
endforeach()
# The tool interface is per process: one launch of 2 ranks.
bm_api_test(api_mpi_t 2)
# Choices MPICH makes where MPI-3.1 leaves them open (MPI_DATATYPE_NULL with
# count 0, MPI_INTEGER16, dynamic-window accesses across attached regions):
# alone, with a peer over sm, and over tcp.
foreach(np 1 2)
    bm_api_test(api_conform ${np})
endforeach()
bm_add_mpi_test(api_conform_tcp_np2 TARGET api_conform NP 2 BTL self,tcp TIMEOUT 60)
# Single copy of non-contiguous messages (getv over sm): reads the PML's
# counter, so linked with the library's internals.
add_executable(api_dtype_rget ${api_dir}/api_dtype_rget.c)
target_link_libraries(api_dtype_rget PRIVATE bitmover_internal bm_test_harness)
target_include_directories(api_dtype_rget PRIVATE ${PROJECT_SOURCE_DIR}/src)
bm_add_mpi_test(api_dtype_rget_np2 TARGET api_dtype_rget NP 2 BTL self,sm TIMEOUT 60)
bm_add_mpi_test(api_dtype_rget_small_np2 TARGET api_dtype_rget NP 2 BTL self,sm TIMEOUT 60
    ENV BM_PML_RGET_PIECE_MIN=8 ARGS small)
bm_add_mpi_test(api_dtype_rget_frags_np2 TARGET api_dtype_rget NP 2 BTL self,sm TIMEOUT 60
    ENV BM_PML_RDMA_FAIL=get ARGS frags)
# The fragment path of non-contiguous data over tcp: small packed FRAGs
# (BM_PML_PACK_FRAG_SIZE) and the large blocks unpacked with streaming stores
# (so without tcp's receive placement, which would read them into place, and
# without sending the 32 KiB blocks in place, unpacked: BM_PML_IOV_BLOCK_MIN).
# FRAGs of 64 KiB (not the default 128), whose arithmetic the test checks:
# the 256 KiB messages end in a sliver the last FRAG takes.
bm_add_mpi_test(api_dtype_packed_tcp_np2 TARGET api_dtype_rget NP 2 BTL self,tcp TIMEOUT 60
    ENV BM_PML_STREAM_COPY_MIN=64k BM_BTL_TCP_RECV_PLACE=0 BM_PML_IOV_BLOCK_MIN=0
    BM_PML_PACK_FRAG_SIZE=64k ARGS packed)
# tcp keeps the PML's 128 KiB packed FRAGs in its pool of large buffers
# (tcp_frag.c), the component's or, under MPI_THREAD_MULTIPLE, the endpoint's:
# after a window of packed 1 MiB vectors the sender holds some.
add_executable(tcp_pack_pool ${api_dir}/tcp_pack_pool.c)
target_link_libraries(tcp_pack_pool PRIVATE bitmover_internal bm_test_harness)
target_include_directories(tcp_pack_pool PRIVATE ${PROJECT_SOURCE_DIR}/src)
bm_add_mpi_test(tcp_pack_pool_np2 TARGET tcp_pack_pool NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi btl ENV BM_BTL_TCP_IF_INCLUDE=lo)
bm_add_mpi_test(tcp_pack_pool_mt_np2 TARGET tcp_pack_pool NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi btl ENV BM_BTL_TCP_IF_INCLUDE=lo ARGS mt)
# MPI_Alloc_mem's registration with the transports that need it (dgram, ofi)
# and none with those that do not (sm); reads btl_mem.c's counters, so
# linked with the library's internals.
add_executable(api_alloc_mem ${api_dir}/api_alloc_mem.c)
target_link_libraries(api_alloc_mem PRIVATE bitmover_internal bm_test_harness Threads::Threads)
target_include_directories(api_alloc_mem PRIVATE ${PROJECT_SOURCE_DIR}/src)
# Label tsan: its threads allocate and free at once (make tsan runs them).
bm_add_mpi_test(api_alloc_mem_sm_np2 TARGET api_alloc_mem NP 2 BTL self,sm TIMEOUT 60 ARGS noreg
    LABELS mpi tsan)
bm_add_mpi_test(api_alloc_mem_dgram_np2 TARGET api_alloc_mem NP 2 BTL self,dgram TIMEOUT 60
    ARGS reg LABELS mpi tsan)
if(BM_HAVE_OFI)
    bm_add_mpi_test(api_alloc_mem_ofi_np2 TARGET api_alloc_mem NP 2 BTL self,ofi TIMEOUT 60
        ARGS reg ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp LABELS mpi tsan)
endif()
# Derived types built, used and freed by 4 threads at once (MPI_THREAD_MULTIPLE).
add_executable(api_dtype_threads ${api_dir}/api_dtype_threads.c)
target_link_libraries(api_dtype_threads PRIVATE bitmover bm_test_harness Threads::Threads)
bm_add_mpi_test(api_dtype_threads_np2 TARGET api_dtype_threads NP 2 BTL self,sm TIMEOUT 120
    LABELS mpi mt tsan)
# Derived types over the network transports (fragments packed into their
# own buffers: tcp's and dgram's alloc).
foreach(btl tcp dgram)
    bm_add_mpi_test(api_dtype_derived_${btl}_np2 TARGET api_dtype_derived NP 2 BTL self,${btl}
        TIMEOUT 120 ENV BM_TEST_EXPECT_NP=2)
endforeach()
# Derived types again with transports short of resources and tiny
# fragments, so that packing resumes across many fragments and retries.
bm_add_mpi_test(api_dtype_derived_scarce_np2 TARGET api_dtype_derived NP 2 BTL self,sm TIMEOUT 120
    ENV BM_TEST_EXPECT_NP=2 BM_BTL_SM_EAGER_FRAGS=4 BM_BTL_SM_MAX_FRAGS=2 BM_PML_SENDI_LIMIT=0
    BM_PML_FRAG_SIZE=3000)
foreach(np 1 2)
    bm_api_test(api_dtype_derived ${np})
    bm_api_test(api_datatype ${np})
    bm_api_test(api_attr ${np})
endforeach()
foreach(np 1 2 3 4 8)
    bm_api_test(api_coll ${np})
    bm_api_test(api_coll_blocks ${np})
endforeach()

# Fatal errors end the job with a clear message and a non-zero status.
set(expect_fail ${api_dir}/api_expect_fail.sh)
set(fatal_cases
    "root|3|MPI_Bcast on rank 2 \\(host [^)]+\\): MPI_ERR_ROOT: invalid root 8"
    "op|2|MPI_Allreduce on rank [01] \\(host [^)]+\\): MPI_ERR_OP: MPI_SUM is not defined for datatype MPI_2INT"
    "abort|3|MPI_Abort called on rank 1 \\(host [^)]+\\) with error code 7"
    "init-twice|2|MPI_Init on rank 0 \\(host [^)]+\\): MPI_ERR_OTHER: MPI is already initialized")
foreach(case ${fatal_cases})
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 mode)
    list(GET parts 1 np)
    list(GET parts 2 regex)
    bm_scaled_timeout(t 60)
    math(EXPR bmrun_t "${t} - 10")
    add_test(NAME api_fatal_${mode} COMMAND ${expect_fail} "${regex}"
        $<TARGET_FILE:bmrun> -n ${np} --timeout ${bmrun_t} $<TARGET_FILE:api_fatal> ${mode})
    set_tests_properties(api_fatal_${mode} PROPERTIES TIMEOUT ${t} LABELS mpi
        ENVIRONMENT "BM_BTL=self,sm")
endforeach()
add_test(NAME api_fatal_before_init COMMAND ${expect_fail}
    "MPI_Comm_rank: MPI_ERR_OTHER: called before MPI_Init" $<TARGET_FILE:api_fatal> before-init)
add_test(NAME api_fatal_after_finalize COMMAND ${expect_fail}
    "MPI_Barrier: MPI_ERR_OTHER: called after MPI_Finalize" $<TARGET_FILE:api_fatal>
    after-finalize)
# Alone (no launcher to check the environment first), MPI_Init refuses a bad
# BM_* value and names it.
add_test(NAME api_fatal_bad_param COMMAND ${expect_fail}
    "MPI_Init on rank 0 \\(host [^)]+\\): MPI_ERR_ARG: invalid BM_"
    $<TARGET_FILE:api_fatal> abort)
bm_scaled_timeout(t 30)
set_tests_properties(api_fatal_before_init api_fatal_after_finalize api_fatal_bad_param
    PROPERTIES TIMEOUT ${t} LABELS mpi)
set_tests_properties(api_fatal_bad_param PROPERTIES ENVIRONMENT "BM_PML_SENDI_LIMIT=abc")
# The same for a parameter of a transport the job does not use, and for a
# string parameter with a syntax (BM_VERBOSE): wherever it is, a bad value
# stops start-up.
foreach(bad "BM_BTL_DGRAM_WINDOW=abc" "BM_VERBOSE=zzz")
    string(REGEX REPLACE "=.*" "" var ${bad})
    add_test(NAME api_fatal_bad_param_${var} COMMAND ${expect_fail}
        "${bad} is not valid"
        $<TARGET_FILE:api_fatal> abort)
    set_tests_properties(api_fatal_bad_param_${var} PROPERTIES TIMEOUT ${t} LABELS mpi
        ENVIRONMENT "BM_BTL=self,sm;${bad}")
endforeach()

set(sanitize_flag "")
if(BM_SANITIZE)
    set(sanitize_flag -fsanitize=${BM_SANITIZE})
endif()

# The profiling interface: a counting tool preloaded with LD_PRELOAD sees
# exactly the program's calls (not the library's internal ones).
add_library(api_pmpi_tool SHARED ${api_dir}/api_pmpi_tool.c)
target_link_libraries(api_pmpi_tool PRIVATE bitmover)
add_executable(api_pmpi ${api_dir}/api_pmpi.c)
target_link_libraries(api_pmpi PRIVATE bitmover bm_test_harness ${CMAKE_DL_LIBS})
set(pmpi_env LD_PRELOAD=$<TARGET_FILE:api_pmpi_tool>)
if(BM_SANITIZE MATCHES "address")
    # A sanitized program checks that its runtime is loaded first; the tool
    # is preloaded ahead of it on purpose (the asan preset's options kept).
    list(APPEND pmpi_env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0)
endif()
foreach(np 1 3)
    bm_add_mpi_test(api_pmpi_np${np} TARGET api_pmpi NP ${np} BTL self,sm TIMEOUT 60
        ENV ${pmpi_env})
endforeach()

# bmcc compiles an MPI program from outside the build system; bmrun runs it.
bm_scaled_timeout(t 120)
add_test(NAME api_bmcc COMMAND ${CMAKE_COMMAND}
    -DBMCC=${CMAKE_BINARY_DIR}/tools/bmcc/bmcc -DBMRUN=$<TARGET_FILE:bmrun>
    -DSRC=${api_dir}/api_bmcc_ring.c -DSRC_CXX=${api_dir}/api_header_cxx.cc
    -DOUT=${CMAKE_CURRENT_BINARY_DIR}/api_bmcc_ring
    -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSANITIZE=${sanitize_flag}
    -P ${api_dir}/api_bmcc.cmake)
set_tests_properties(api_bmcc PROPERTIES TIMEOUT ${t} LABELS mpi ENVIRONMENT "BM_BTL=self,sm")

# mpi.h as C99, C11 and C++ with g++ and clang++ (the C++ half needs a C++
# compiler; clang++ when installed).
find_program(BM_TEST_CXX NAMES c++ g++ clang++)
if(NOT BM_TEST_CXX)
    set(BM_TEST_CXX "")
endif()
find_program(BM_TEST_CLANGXX NAMES clang++)
if(NOT BM_TEST_CLANGXX)
    set(BM_TEST_CLANGXX "")
endif()
add_test(NAME api_header COMMAND ${CMAKE_COMMAND}
    -DCC=${CMAKE_C_COMPILER} -DCXX=${BM_TEST_CXX} -DCLANGXX=${BM_TEST_CLANGXX}
    -DINCDIR=${CMAKE_SOURCE_DIR}/include
    -DLIBDIR=$<TARGET_FILE_DIR:bitmover> -DSRC_C=${api_dir}/api_header_c.c
    -DSRC_CXX=${api_dir}/api_header_cxx.cc -DOUT=${CMAKE_CURRENT_BINARY_DIR}/api_header
    -DSANITIZE=${sanitize_flag} -P ${api_dir}/api_header.cmake)
bm_scaled_timeout(t 120)
set_tests_properties(api_header PROPERTIES TIMEOUT ${t} LABELS mpi)

# Every function mpi.h declares exists in the library, and nothing more.
find_program(BM_TEST_NM NAMES nm)
if(BM_TEST_NM)
    # Open MPI 4.1's library as the MPI-3.1 list (openmpi-bin), when installed.
    find_file(BM_TEST_MPI31_REF NAMES libmpi.so.40 PATHS /usr/lib/x86_64-linux-gnu /usr/lib64
        /usr/lib NO_DEFAULT_PATH)
    set(ref "")
    if(BM_TEST_MPI31_REF)
        set(ref -DREF=${BM_TEST_MPI31_REF})
    endif()
    add_test(NAME api_exports COMMAND ${CMAKE_COMMAND} -DHEADER=${CMAKE_SOURCE_DIR}/include/mpi.h
        -DLIB=$<TARGET_FILE:bitmover> -DNM=${BM_TEST_NM} ${ref} -P ${api_dir}/api_exports.cmake)
    set_tests_properties(api_exports PROPERTIES TIMEOUT 60 LABELS mpi)
endif()

# Every collective in every form against a locally computed reference (see
# coll_check.c): the automatic algorithm choice at 1 to 9 ranks, and every
# algorithm forced by its parameter at three sizes (a power of two and two
# that need the fold; the sets together cover 2 to 9 ranks), each launch checking that the algorithms it
# forces really ran.
add_executable(coll_check ${api_dir}/coll_check.c)
target_link_libraries(coll_check PRIVATE bitmover bm_test_harness)
foreach(np 1 2 3 4 5 6 7 8 9)
    set(args "")
    if(np GREATER 4)
        set(args --quick)
    endif()
    if(np GREATER 5)
        # what a type/operation variant changes does not depend on the form
        list(APPEND args --thin)
    endif()
    bm_add_mpi_test(coll_check_np${np} TARGET coll_check NP ${np} BTL self,sm TIMEOUT 180
        LABELS mpi coll ARGS ${args})
endforeach()
set(coll_force_a
    BM_MPI_COLL_SM_SLOT=0 BM_MPI_COLL_BCAST_ALG=binomial BM_MPI_COLL_REDUCE_ALG=binomial
    BM_MPI_COLL_ALLREDUCE_ALG=recursive_doubling BM_MPI_COLL_GATHER_ALG=linear
    BM_MPI_COLL_SCATTER_ALG=linear BM_MPI_COLL_ALLGATHER_ALG=ring
    BM_MPI_COLL_ALLTOALL_ALG=pairwise BM_MPI_COLL_REDUCE_SCATTER_ALG=reduce_scatterv
    BM_MPI_COLL_SCAN_ALG=recursive_doubling
    "BM_TEST_COLL_EXPECT=barrier.dissemination,bcast.binomial,reduce.binomial,allreduce.recursive_doubling,gather.linear,scatter.linear,allgather.ring,alltoall.pairwise,reduce_scatter.reduce_scatterv,scan.recursive_doubling")
set(coll_force_b
    BM_MPI_COLL_BCAST_ALG=scatter_allgather BM_MPI_COLL_REDUCE_ALG=rabenseifner
    BM_MPI_COLL_ALLREDUCE_ALG=rabenseifner BM_MPI_COLL_GATHER_ALG=binomial
    BM_MPI_COLL_SCATTER_ALG=binomial BM_MPI_COLL_ALLGATHER_ALG=recursive_doubling
    BM_MPI_COLL_ALLTOALL_ALG=linear BM_MPI_COLL_REDUCE_SCATTER_ALG=halving
    BM_MPI_COLL_SCAN_ALG=linear
    "BM_TEST_COLL_EXPECT=bcast.scatter_allgather,reduce.rabenseifner,allreduce.rabenseifner,gather.binomial,scatter.binomial,alltoall.linear,reduce_scatter.halving,scan.linear")
set(coll_force_c
    BM_MPI_COLL_SEGMENT=1024 BM_MPI_COLL_BCAST_ALG=pipeline BM_MPI_COLL_REDUCE_ALG=pipeline
    BM_MPI_COLL_ALLREDUCE_ALG=ring BM_MPI_COLL_ALLGATHER_ALG=bruck
    BM_MPI_COLL_ALLTOALL_ALG=bruck BM_MPI_COLL_REDUCE_SCATTER_ALG=ring
    "BM_TEST_COLL_EXPECT=bcast.pipeline,reduce.pipeline,allreduce.ring,allgather.bruck,alltoall.bruck,reduce_scatter.ring")
set(coll_force_d
    BM_MPI_COLL_BARRIER_ALG=sm BM_MPI_COLL_BCAST_ALG=sm BM_MPI_COLL_REDUCE_ALG=sm
    BM_MPI_COLL_ALLREDUCE_ALG=sm BM_MPI_COLL_GATHER_ALG=sm BM_MPI_COLL_SCATTER_ALG=sm
    BM_MPI_COLL_ALLGATHER_ALG=sm BM_MPI_COLL_ALLTOALL_ALG=sm
    "BM_TEST_COLL_EXPECT=barrier.sm,bcast.sm,reduce.sm,allreduce.sm,gather.sm,scatter.sm,allgather.sm,alltoall.sm")
# The shared-memory algorithms with all their data by single copy (the
# readers' get from the writers' buffers: sm.copy; an allgather's owners
# put their blocks into contiguous receive buffers: sm.push; a gather's
# other ranks theirs into a contiguous root buffer: gather.push), whatever its
# size, and at 2 ranks commutative reduces and broadcasts split between
# both ranks (sm.copy_split, bcast.split). These launches also run the
# blocks of different layouts (coll_check's test_mixed_types: a receiver
# that reads beside one that is written to).
set(coll_force_e
    BM_MPI_COLL_SM_COPY_MIN=1 BM_MPI_COLL_SM_REDUCE_SPLIT_MIN=1 BM_MPI_COLL_SM_BCAST_SPLIT_MIN=1
    BM_MPI_COLL_BCAST_ALG=sm
    BM_MPI_COLL_REDUCE_ALG=sm
    BM_MPI_COLL_ALLREDUCE_ALG=sm BM_MPI_COLL_GATHER_ALG=sm BM_MPI_COLL_SCATTER_ALG=sm
    BM_MPI_COLL_ALLGATHER_ALG=sm BM_MPI_COLL_ALLTOALL_ALG=sm
    "BM_TEST_COLL_EXPECT=sm.copy,sm.push,gather.push,bcast.sm,reduce.sm,allreduce.sm,gather.sm,scatter.sm,allgather.sm,alltoall.sm")
# Ranks that share cores (BM_PML_IDLE_YIELD) move data larger than a slot
# through the segment's large area (sm.large): slots of 256 bytes make most
# calls large (allreduces combine in shares: sm.shares; bcasts are copied in
# and out in chunks of a slot's data: sm.pipe), the area is made at its
# full 96 KiB at the first call that needs it (16 KiB slots at 3 ranks), and
# the largest calls take the point-to-point algorithms.
set(coll_force_f
    BM_PML_IDLE_YIELD=64 BM_MPI_COLL_SM_SLOT=256 BM_MPI_COLL_SM_LARGE_MAX=96k
    "BM_TEST_COLL_EXPECT=sm.large,sm.shares,sm.copy,sm.pipe,bcast.sm,reduce.sm,allreduce.sm,gather.sm,scatter.sm,allgather.sm,alltoall.sm")
# Allreduces in two rounds whatever the ranks (each rank's block from
# every peer, then to every peer): the nonblocking forms' choice on a
# crowded host, forced here for every form.
set(coll_force_g BM_MPI_COLL_ALLREDUCE_ALG=direct "BM_TEST_COLL_EXPECT=allreduce.direct")
# Each forced set at a power of two and two other sizes, the sets together
# covering 2 to 9 ranks (the automatic runs cover 1 to 9 each).
set(coll_nps_a 3 7 8)
set(coll_nps_b 2 5 8)
set(coll_nps_c 4 6 9)
set(coll_nps_d 2 3 8)
set(coll_nps_e 2 3)
set(coll_nps_f 3 4)
set(coll_nps_g 3 4)
foreach(set a b c d e f g)
    foreach(np ${coll_nps_${set}})
        set(env ${coll_force_${set}})
        if(set STREQUAL "b" AND (np EQUAL 2 OR np EQUAL 8))
            # recursive doubling allgather serves power-of-two sizes only
            string(REPLACE "scan.linear" "scan.linear,allgather.recursive_doubling" env "${env}")
        endif()
        if(set STREQUAL "d" AND np EQUAL 2)
            # ranks on cores of their own (the PML's automatic idle policy
            # instead of the harness's yielding) and no single copy: bcasts
            # and scatters of 512 bytes and more (here 8800) take turns
            # between two areas of the root's slot; small blocking calls
            # take the fast path (coll_select.c)
            string(REPLACE "barrier.sm," "barrier.sm,sm.areas,sm.fast," env "${env}")
            list(APPEND env BM_PML_IDLE_YIELD=-1 BM_MPI_COLL_SM_COPY_MIN=0)
        endif()
        if(set STREQUAL "e" AND np EQUAL 2)
            # a commutative 2-rank reduce shares its work between the ranks,
            # and so does a broadcast (the root writes half: bcast.split)
            string(REPLACE "sm.copy," "sm.copy,sm.copy_split,bcast.split," env "${env}")
        endif()
        bm_add_mpi_test(coll_check_${set}_np${np} TARGET coll_check NP ${np} BTL self,sm
            TIMEOUT 180 LABELS mpi coll ARGS --quick ENV ${env})
    endforeach()
endforeach()

# A program whose first collective is a large alltoall on an oversubscribed
# host (both ranks bound to one CPU) gets the crowded choice (linear).
add_executable(coll_crowded ${api_dir}/coll_crowded.c)
target_link_libraries(coll_crowded PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_crowded NP 3 TARGET coll_crowded BTL self,sm TIMEOUT 60 LABELS mpi coll)

# The ranks choose one algorithm where what the choice reads differs between
# them or has not happened yet: a first collective that is nonblocking, the
# progress thread on some ranks only, one rank that never yields.
add_executable(coll_agree ${api_dir}/coll_agree.c)
target_link_libraries(coll_agree PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_agree_np4 NP 4 TARGET coll_agree BTL self,sm TIMEOUT 60 LABELS mpi coll)
bm_add_mpi_test(coll_agree_np8 NP 8 TARGET coll_agree BTL self,sm TIMEOUT 90 LABELS mpi coll
    ARGS thread)
bm_add_mpi_test(coll_agree_yield_np2 NP 2 TARGET coll_agree BTL self,sm TIMEOUT 60
    LABELS mpi coll ARGS yield)

# Every rank touches every page of the collective segment when it is made.
add_executable(coll_prefault ${api_dir}/coll_prefault.c)
target_link_libraries(coll_prefault PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_prefault NP 2 TARGET coll_prefault BTL self,sm TIMEOUT 60 LABELS mpi coll)

# Where ranks share cores the large area is made once, at its full size, not
# anew as the calls grow.
add_executable(coll_large_once ${api_dir}/coll_large_once.c)
target_link_libraries(coll_large_once PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_large_once NP 3 TARGET coll_large_once BTL self,sm TIMEOUT 60
    LABELS mpi coll ENV BM_PML_IDLE_YIELD=64 BM_MPI_COLL_SM_SLOT=256 BM_MPI_COLL_SM_LARGE_MAX=96k)

# Large gathers and broadcasts on 2 ranks with cores of their own (the PML's
# automatic idle policy, not the harness's yielding) go by single copy, the
# gather's other rank writing into the root's buffer (gather.push), the
# broadcast's root writing half into the reader's (bcast.split), at 64 KiB
# + 1 to 1 MiB.
add_executable(coll_copy_large ${api_dir}/coll_copy_large.c)
target_link_libraries(coll_copy_large PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_copy_large NP 2 TARGET coll_copy_large BTL self,sm TIMEOUT 60
    LABELS mpi coll ENV BM_PML_IDLE_YIELD=-1)

# A single-copy collective whose data a rank writes into another's buffer
# (bcast.split, gather.push, allgather's sm.push, the split reduce) fails on
# the rank written into when that write failed (BM_MPI_COLL_SM_TEST_PUT_FAIL=1:
# rank 0's puts fail), and the segment stays usable.
add_executable(coll_put_fail ${api_dir}/coll_put_fail.c)
target_link_libraries(coll_put_fail PRIVATE bitmover bm_test_harness)
bm_add_mpi_test(coll_put_fail NP 2 TARGET coll_put_fail BTL self,sm TIMEOUT 60
    LABELS mpi coll ENV BM_MPI_COLL_SM_TEST_PUT_FAIL=1 BM_MPI_COLL_BCAST_ALG=sm
    BM_MPI_COLL_GATHER_ALG=sm BM_MPI_COLL_ALLGATHER_ALG=sm BM_MPI_COLL_REDUCE_ALG=sm)

# A rank that ends inside a collective on the segment while the others wait
# on its flag (nothing outstanding to it: no transport watches it): the
# waits ask the PML whether it is still there, sm finds its process gone,
# and the job ends 1-1.5 s later (sm's grace), aborted by the PML, which names both
# ranks and hosts (a rank whose last path failed; the waiting ranks would
# wait for ever without the look). coll_peer_gone.c says more.
add_executable(coll_peer_gone ${api_dir}/coll_peer_gone.c)
target_link_libraries(coll_peer_gone PRIVATE bitmover)
bm_scaled_timeout(t 40)
math(EXPR bmrun_t "${t} - 10")
add_test(NAME coll_peer_gone COMMAND ${expect_fail}
    "rank [02] \\([^)]+\\) lost its last transport to rank 1 \\([^)]+\\): sm \\(peer process is gone: sm: local peer rank 1 \\(pid [0-9]+\\) on [^:]+: its process is gone"
    $<TARGET_FILE:bmrun> -n 3 --timeout ${bmrun_t} $<TARGET_FILE:coll_peer_gone>)
set_tests_properties(coll_peer_gone PROPERTIES TIMEOUT ${t} LABELS "mpi;coll"
    ENVIRONMENT "BM_BTL=self,sm;BM_PML_IDLE_YIELD=64;BM_MPI_COLL_BCAST_ALG=sm")

# Point-to-point waits on a local rank that ended with nothing outstanding
# to it (no transport watches it): the waits' idle step asks sm whether the
# local peers still exist, and the PML ends the job naming both ranks and
# hosts 1-1.5 s after the death (sm's grace; without the look: bmrun's
# timeout). One wait of
# each kind of progress path: a blocking MPI_Recv in the default wait mode,
# a wildcard receive (3 ranks) in the block mode (the look before each
# sleep), a probe under the progress thread (the MPI_THREAD_MULTIPLE wait).
# p2p_peer_gone.c says more.
add_executable(p2p_peer_gone ${api_dir}/p2p_peer_gone.c)
target_link_libraries(p2p_peer_gone PRIVATE bitmover)
bm_scaled_timeout(t 40)
math(EXPR bmrun_t "${t} - 10")
foreach(v "recv;2;BM_PML_IDLE_YIELD=-1" "any;3;BM_PML_WAIT_MODE=block"
        "probe;2;BM_PML_PROGRESS_THREAD=1")
    list(GET v 0 op)
    list(GET v 1 np)
    list(GET v 2 env)
    add_test(NAME p2p_peer_gone_${op} COMMAND ${expect_fail}
        "rank [02] \\([^)]+\\) lost its last transport to rank 1 \\([^)]+\\): sm \\(peer process is gone: sm: local peer rank 1 \\(pid [0-9]+\\) on [^:]+: its process is gone[^)]*\\)\\. The job cannot continue: rank 1 ended before MPI_Finalize"
        $<TARGET_FILE:bmrun> -n ${np} --timeout ${bmrun_t} $<TARGET_FILE:p2p_peer_gone> ${op})
    set_tests_properties(p2p_peer_gone_${op} PROPERTIES TIMEOUT ${t} LABELS "mpi;p2p"
        ENVIRONMENT "BM_BTL=self,sm;${env}")
endforeach()

# Mixed wait modes on the segment: rank 0 sleeps in its waits
# (MPI_THREAD_MULTIPLE, BM_PML_WAIT_SPIN_US=0), rank 1 does not; the set-up
# agrees that some rank sleeps, so rank 1 rings rank 0 awake instead of
# leaving it to its 1 ms timeout.
add_executable(coll_wait_mixed ${api_dir}/coll_wait_mixed.c)
target_link_libraries(coll_wait_mixed PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(coll_wait_mixed NP 2 TARGET coll_wait_mixed BTL self,sm TIMEOUT 60
    LABELS mpi coll ENV BM_PML_WAIT_SPIN_US=0 BM_MPI_COLL_BARRIER_ALG=sm)

# The PML's idle policy: yield only when the job oversubscribes its host.
bm_scaled_timeout(t 120)
add_test(NAME pml_idle_yield COMMAND ${api_dir}/pml_idle_yield.sh $<TARGET_FILE:bmrun>
    $<TARGET_FILE:api_init>)
set_tests_properties(pml_idle_yield PROPERTIES TIMEOUT ${t} LABELS "mpi;pml")

# Collectives on inter-communicators (groups of unequal sizes, every form).
add_executable(coll_inter ${api_dir}/coll_inter.c)
target_link_libraries(coll_inter PRIVATE bitmover bm_test_harness)
foreach(np 2 3 5 7)
    bm_add_mpi_test(coll_inter_np${np} TARGET coll_inter NP ${np} BTL self,sm TIMEOUT 120
        LABELS mpi coll)
endforeach()

# The yield mode's 1 us limit applies only to jobs over several hosts: none
# here (coll_hier.sh runs the same program over two hosts, where it must).
add_executable(pml_yield_time ${api_dir}/pml_yield_time.c)
target_link_libraries(pml_yield_time PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(pml_yield_time TARGET pml_yield_time NP 2 BTL self,sm TIMEOUT 60 LABELS mpi pml
    ENV BM_PML_IDLE_YIELD=1000000)

# Where ranks share cores a test that finds nothing yields at once (two
# ranks bound to one CPU: the auto setting yields), and never with 0.
add_executable(pml_test_yield ${api_dir}/pml_test_yield.c)
target_link_libraries(pml_test_yield PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(pml_test_yield TARGET pml_test_yield NP 2 BTL self,sm TIMEOUT 60 LABELS mpi pml
    ENV BM_PML_IDLE_YIELD=-1)
bm_add_mpi_test(pml_test_yield_off TARGET pml_test_yield NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi pml ARGS -n ENV BM_PML_IDLE_YIELD=0)

# Hierarchical collectives over 2 and 4 network-namespace hosts with two
# ranks each (coll_hier.sh: fails unless the hierarchy ran; needs root),
# and the yield mode's time limit over two hosts.
bm_scaled_timeout(t 240)
add_test(NAME coll_hier COMMAND bash ${api_dir}/coll_hier.sh $<TARGET_FILE:bmrun>
    $<TARGET_FILE:coll_check> $<TARGET_FILE:pml_yield_time>)
set_tests_properties(coll_hier PROPERTIES TIMEOUT ${t} LABELS "mpi;coll" SKIP_RETURN_CODE 77)

# Spinning waits yield while another program takes a rank's core (auto
# BM_PML_IDLE_YIELD on a host with a CPU per rank), and not with 0.
add_executable(pml_idle_watch ${api_dir}/pml_idle_watch.c)
target_link_libraries(pml_idle_watch PRIVATE bitmover_internal bm_test_harness Threads::Threads)
# (the harness's BM_PML_IDLE_YIELD=64 replaced by the automatic setting)
bm_add_mpi_test(pml_idle_watch TARGET pml_idle_watch NP 2 BTL self,sm TIMEOUT 60 LABELS mpi pml
    ENV BM_PML_IDLE_YIELD=-1)
bm_add_mpi_test(pml_idle_watch_off TARGET pml_idle_watch NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi pml ARGS -n ENV BM_PML_IDLE_YIELD=0)
