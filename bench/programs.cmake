# Benchmark programs built against bitmover inside our CMake build (the same
# sources are built with mpicc.openmpi and mpicc.mpich by bench/compare), plus
# the physical-limit probes of bench/limits, which need no MPI. The MPI
# programs and their smoke tests exist only once the MPI layer (include/mpi.h)
# does, so this file never breaks the build before it lands.
set(BM_BENCH_LIMITS shm_pingpong shm_ring_pingpong memcpy_bw cma_bw cma_pieces net_pingpong)
foreach(prog ${BM_BENCH_LIMITS})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/limits/${prog}.c)
        add_executable(bm_limit_${prog} limits/${prog}.c)
        target_link_libraries(bm_limit_${prog} PRIVATE m)
    endif()
endforeach()

if(EXISTS ${CMAKE_SOURCE_DIR}/include/mpi.h)
    foreach(prog latency bw bibw mr)
        add_executable(bm_${prog} ${prog}.c bench_common.c)
        target_link_libraries(bm_${prog} PRIVATE bitmover)
    endforeach()
    add_executable(bm_dtype dtype.c bench_common.c)
    target_link_libraries(bm_dtype PRIVATE bitmover)
    foreach(prog coll overlap)
        add_executable(bm_${prog} ${prog}.c bench_common.c)
        target_link_libraries(bm_${prog} PRIVATE bitmover)
    endforeach()
    add_executable(bm_osc osc.c bench_common.c)
    target_link_libraries(bm_osc PRIVATE bitmover)
    add_executable(bm_hello hello.c)
    target_link_libraries(bm_hello PRIVATE bitmover)
    # MPI_THREAD_MULTIPLE (thread pairs) and waiting (a barrier loop)
    foreach(prog mt_latency mt_mr)
        add_executable(bm_${prog} ${prog}.c bench_common.c)
        target_link_libraries(bm_${prog} PRIVATE bitmover Threads::Threads)
    endforeach()
    # asynchronous progress (what a progress thread buys)
    add_executable(bm_mt_async mt_async.c bench_common.c)
    target_link_libraries(bm_mt_async PRIVATE bitmover)
    add_executable(bm_barrier barrier.c bench_common.c)
    target_link_libraries(bm_barrier PRIVATE bitmover)

    # Smoke tests: short sizes and few iterations, so they check that the
    # programs run and that their data checks pass, not speed.
    if(BUILD_TESTING AND TARGET bmrun)
        bm_add_mpi_test(bench_latency_smoke TARGET bm_latency NP 2 LABELS bench TIMEOUT 60
            ARGS -m 0:64k -i 50 -w 5)
        bm_add_mpi_test(bench_bw_smoke TARGET bm_bw NP 2 LABELS bench TIMEOUT 60
            ARGS -m 0:1m -i 10 -w 1 -W 16)
        foreach(kind vec1 indexed struct)
            bm_add_mpi_test(bench_dtype_${kind}_smoke TARGET bm_dtype NP 2 LABELS bench
                TIMEOUT 60 ARGS -k ${kind} -m 8:256k -i 20 -w 2)
        endforeach()
        # every collective of bm_coll at 3 ranks, and the overlap benchmark
        bm_add_mpi_test(bench_coll_smoke TARGET bm_coll NP 3 LABELS bench TIMEOUT 60
            ARGS -c allreduce -m 4:64k -i 20 -w 2)
        bm_add_mpi_test(bench_overlap_smoke TARGET bm_overlap NP 2 LABELS bench TIMEOUT 60
            ARGS -c iallreduce -p 4 -M -m 4:256k -i 10 -w 1)
        # bm_osc: each operation and synchronisation once (sizes kept small:
        # the data checks, not speed)
        foreach(run put:flush:0:64k put:lock:0:4k:-b get:fence:0:1k fop:lock:8:8 cas:flush:8:8)
            string(REPLACE ":" ";" a ${run})
            list(GET a 0 k)
            list(GET a 1 sy)
            list(GET a 2 lo)
            list(GET a 3 hi)
            list(LENGTH a na)
            set(extra "")
            if(na GREATER 4)
                list(GET a 4 extra)
            endif()
            bm_add_mpi_test(bench_osc_${k}_${sy}${extra}_smoke TARGET bm_osc NP 2 LABELS bench osc
                TIMEOUT 60 ARGS -k ${k} -s ${sy} ${extra} -m ${lo}:${hi} -i 20 -w 2)
        endforeach()
        bm_add_mpi_test(bench_dtype_packed_smoke TARGET bm_dtype NP 2 LABELS bench TIMEOUT 60
            ARGS -k vec64 -P -m 8:256k -i 20 -w 2)
        bm_add_mpi_test(bench_mt_latency_smoke TARGET bm_mt_latency NP 2 LABELS bench TIMEOUT 60
            ARGS -p 2 -m 0:64k -i 50 -w 5 -t 0.2)
        bm_add_mpi_test(bench_mt_mr_smoke TARGET bm_mt_mr NP 2 LABELS bench TIMEOUT 60
            ARGS -p 2 -m 1:8k -i 5 -w 1 -t 0.2)
        # -P -v: rank 0's two threads each stream 256 KiB vectors to a rank of their own
        # (exit 0: every byte checked); with BM_PML_STATS the lock counters
        # (acquired/contended per class, the progress lock among them) must
        # be printed at finalize, and rank 0 must have sent FRAGs without the
        # progress lock (the per-peer send path ran; tests/fault/ofi_expect.sh:
        # exit status and a matching line, one check inside the other)
        bm_scaled_timeout(t 60)
        math(EXPR bmrun_t "${t} - 5")
        add_test(NAME bench_mt_mr_peers_smoke
            COMMAND sh ${PROJECT_SOURCE_DIR}/tests/fault/ofi_expect.sh
                "^\\[pml stats\\] rank 0 locks acquired/contended: .*progress [0-9]+/[0-9]+"
                sh ${PROJECT_SOURCE_DIR}/tests/fault/ofi_expect.sh
                "^\\[pml stats\\] rank 0 waiting: .*FRAGs sent without the progress lock [1-9]"
                $<TARGET_FILE:bmrun> -n 3 --timeout ${bmrun_t} $<TARGET_FILE:bm_mt_mr>
                -p 2 -P -v -m 256k -W 4 -i 5 -w 1 -t 0.2)
        set_tests_properties(bench_mt_mr_peers_smoke PROPERTIES TIMEOUT ${t} LABELS bench
            ENVIRONMENT "BM_PML_IDLE_YIELD=64;BM_PML_STATS=1")
        foreach(k rndv put)
            bm_add_mpi_test(bench_mt_async_${k}_smoke TARGET bm_mt_async NP 2 LABELS bench
                TIMEOUT 60 ARGS -k ${k} -c 100 -m 1k:256k -i 3 -w 1)
        endforeach()
        bm_add_mpi_test(bench_barrier_block_smoke TARGET bm_barrier NP 4 LABELS bench TIMEOUT 60
            ARGS -i 200 ENV BM_PML_WAIT_MODE=block)
    endif()
endif()
