# MPI point-to-point tests, each run through bmrun over self+sm at 2, 3, 4
# and 8 processes (labels mpi, p2p). The "scarce" runs shrink the shared
# memory transport to a handful of fragments, turn off inline sends and cut
# rendezvous fragments small, so that transports refuse sends
# (BM_ERR_OUT_OF_RESOURCE) all the time and the PML's retry queue, pipeline
# and fragment reassembly carry the traffic.
set(p2p_dir ${CMAKE_CURRENT_LIST_DIR})
set(p2p_scarce_env BM_BTL_SM_EAGER_FRAGS=4 BM_BTL_SM_MAX_FRAGS=2 BM_PML_SENDI_LIMIT=0
    BM_PML_FRAG_SIZE=3000 BM_BTL_SELF_FREE_FRAGS=0)

function(bm_p2p_test prog)
    cmake_parse_arguments(A "" "TIMEOUT" "NP;SCARCE_NP" ${ARGN})
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT 120)
    endif()
    add_executable(${prog} ${p2p_dir}/${prog}.c)
    target_link_libraries(${prog} PRIVATE bitmover bm_test_harness)
    foreach(np ${A_NP})
        bm_add_mpi_test(${prog}_np${np} TARGET ${prog} NP ${np} BTL self,sm
            TIMEOUT ${A_TIMEOUT} LABELS mpi p2p)
    endforeach()
    foreach(np ${A_SCARCE_NP})
        bm_add_mpi_test(${prog}_scarce_np${np} TARGET ${prog} NP ${np} BTL self,sm
            TIMEOUT ${A_TIMEOUT} LABELS mpi p2p ENV ${p2p_scarce_env})
    endforeach()
endfunction()

bm_p2p_test(p2p_order NP 2 3 4 8 SCARCE_NP 3)
bm_p2p_test(p2p_sizes NP 2 3 4 8 SCARCE_NP 2 TIMEOUT 180)
bm_p2p_test(p2p_modes NP 2 3 SCARCE_NP 2)
bm_p2p_test(p2p_persist NP 2 3 4 8)
bm_p2p_test(p2p_probe NP 2 3 4 8)
bm_p2p_test(p2p_errors NP 2 3)
bm_p2p_test(p2p_waits NP 2 3 4 8 SCARCE_NP 4)
bm_p2p_test(p2p_grequest NP 2 3)
bm_p2p_test(p2p_mprobe NP 2 3 SCARCE_NP 3)
bm_p2p_test(p2p_cancel NP 2 3)
bm_p2p_test(p2p_fault NP 2)
# Blocking receives taken from sm's fast boxes (BM_PML_RECV_TAKE), and the
# same program with the take off: its counter must then stay 0; a 200-byte
# and a 2048-byte receive take with the default limit (4096) and not with
# BM_PML_RECV_TAKE_MAX=32.
# (It reads the PML's counter: linked with the library's internals.)
add_executable(p2p_take ${p2p_dir}/p2p_take.c)
target_link_libraries(p2p_take PRIVATE bitmover_internal bm_test_harness)
target_include_directories(p2p_take PRIVATE ${PROJECT_SOURCE_DIR}/src)
bm_add_mpi_test(p2p_take_np2 TARGET p2p_take NP 2 BTL self,sm TIMEOUT 60 LABELS mpi p2p)
bm_add_mpi_test(p2p_take_off_np2 TARGET p2p_take NP 2 BTL self,sm TIMEOUT 60 LABELS mpi p2p
    ENV BM_PML_RECV_TAKE=0)
bm_add_mpi_test(p2p_take_max_np2 TARGET p2p_take NP 2 BTL self,sm TIMEOUT 60 LABELS mpi p2p
    ENV BM_PML_RECV_TAKE_MAX=32)
# The same mistake under MPI_ERRORS_ARE_FATAL: the job ends with a text that
# names the call, the rank, the peer and the buffer's range (either side may
# report first).
bm_scaled_timeout(t 60)
math(EXPR bmrun_t "${t} - 10")
add_test(NAME p2p_fault_fatal COMMAND ${CMAKE_CURRENT_LIST_DIR}/api_expect_fail.sh
    "MPI_Wait on rank [01] \\(host [^)]+\\): MPI_ERR_BUFFER: (send of 8192 bytes to rank 1 \\(tag 7\\) failed: its buffer \\[0x[0-9a-f]+, 0x[0-9a-f]+\\) is not accessible|receive of 8192 bytes from rank 0 \\(tag 7\\) at 0x[0-9a-f]+ failed: rank 0's send buffer is not accessible)"
    $<TARGET_FILE:bmrun> -n 2 --timeout ${bmrun_t} $<TARGET_FILE:p2p_fault> fatal)
set_tests_properties(p2p_fault_fatal PROPERTIES TIMEOUT ${t} LABELS "mpi;p2p"
    ENVIRONMENT "BM_BTL=self,sm")
target_link_libraries(p2p_grequest PRIVATE Threads::Threads)

# Failover: two network namespaces joined by two rails, one black-holed
# mid-stream; the stream must finish intact on the other (tcp), and with
# dgram the rail comes back and is used again (labels fault, p2p; skipped
# without root).
add_executable(p2p_failover ${p2p_dir}/p2p_failover.c)
# internal: it reads the transport layer's error counts to prove a failover ran
target_link_libraries(p2p_failover PRIVATE bitmover_internal bm_test_harness)
if(TARGET bmrun)
    foreach(variant tcp dgram dgram:recover)
        string(REPLACE ":" ";" args ${variant})
        string(REPLACE ":" "_" name ${variant})
        add_test(NAME p2p_failover_${name}
            COMMAND bash ${p2p_dir}/p2p_failover.sh $<TARGET_FILE:bmrun>
                $<TARGET_FILE:p2p_failover> ${args})
        bm_scaled_timeout(t 150)
        set_tests_properties(p2p_failover_${name} PROPERTIES TIMEOUT ${t} LABELS "fault;p2p"
            SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
    endforeach()
endif()

# End-to-end restart (pml/restart.c): tcp on the loopback loses one frame
# of a PML tag without an error (BM_BTL_TCP_TEST_DROP_TAG: 5 is FRAG, 3 is
# RNDV, 4 is ACK: of a 1 MiB message, or of a 100-byte MPI_Ssend); the
# messages must arrive intact through the restart, and the
# program checks that the restart ran (labels mpi, p2p, fault). These run
# without tcp's receive placement (the lost FRAG goes through the copy);
# p2p_restart_placed loses a FRAG of 1 MiB that tcp was reading straight
# into the receive buffer (larger than tcp's 256 KiB connection buffer, so
# always placed).
add_executable(p2p_restart ${p2p_dir}/p2p_restart.c)
# internal: it reads the PML's restart counters
target_link_libraries(p2p_restart PRIVATE bitmover_internal bm_test_harness)
foreach(variant frag:5:2 rndv:3:1 ack:4:1 ssend:4:1)
    string(REPLACE ":" ";" parts ${variant})
    list(GET parts 0 what)
    list(GET parts 1 tag)
    list(GET parts 2 nth)
    bm_add_mpi_test(p2p_restart_${what} TARGET p2p_restart NP 2 BTL self,tcp TIMEOUT 60
        LABELS mpi p2p fault ARGS ${what}
        ENV BM_BTL_TCP_IF_INCLUDE=lo BM_PML_RESTART_MS=200 BM_PML_FRAG_SIZE=64k
            BM_BTL_TCP_TEST_DROP_TAG=${tag} BM_BTL_TCP_TEST_DROP_NTH=${nth}
            BM_BTL_TCP_RECV_PLACE=0)
endforeach()
bm_add_mpi_test(p2p_restart_placed TARGET p2p_restart NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi p2p fault ARGS placed
    ENV BM_BTL_TCP_IF_INCLUDE=lo BM_PML_RESTART_MS=200 BM_PML_FRAG_SIZE=1m
        BM_BTL_TCP_TEST_DROP_TAG=5 BM_BTL_TCP_TEST_DROP_NTH=2)
# A path that fails on one side only (restart.c "a path failed"): the
# receiver's tcp drops a FRAG or a RNDV and reports the path failed on its
# side (BM_BTL_TCP_TEST_DROP_FAIL), the sender's tcp sees nothing; dgram
# stands by for the receiver's traffic. The restart must run at once, not
# after BM_PML_RESTART_MS (5 s here: the program fails if a timer fired).
foreach(variant lostfrag:5:2 lostrndv:3:1)
    string(REPLACE ":" ";" parts ${variant})
    list(GET parts 0 what)
    list(GET parts 1 tag)
    list(GET parts 2 nth)
    bm_add_mpi_test(p2p_restart_${what} TARGET p2p_restart NP 2 BTL self,tcp,dgram TIMEOUT 60
        LABELS mpi p2p fault ARGS ${what}
        ENV BM_BTL_TCP_IF_INCLUDE=lo BM_BTL_DGRAM_IF_INCLUDE=lo BM_PML_RESTART_MS=5000
            BM_PML_FRAG_SIZE=64k BM_BTL_TCP_TEST_DROP_TAG=${tag} BM_BTL_TCP_TEST_DROP_NTH=${nth}
            BM_BTL_TCP_TEST_DROP_FAIL=1 BM_BTL_TCP_RECV_PLACE=0)
endforeach()

# Receive placement over tcp (btl.h): FRAGs read straight into contiguous and
# non-contiguous receive buffers, truncation, every byte and gap checked, and
# the PML's count of placed FRAGs (internal: bm_pml_g).
add_executable(p2p_placed ${p2p_dir}/p2p_placed.c)
target_link_libraries(p2p_placed PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(p2p_placed_tcp_np2 TARGET p2p_placed NP 2 BTL self,tcp TIMEOUT 60
    LABELS mpi p2p ENV BM_BTL_TCP_IF_INCLUDE=lo BM_PML_PACK_FRAG_SIZE=1m BM_PML_IOV_BLOCK_MIN=1k)

# A program that exits without MPI_Finalize (as OSU 7.4's osu_latency_mt
# does): the exit hook (mpi/init.c, BM_PML_EXIT_DRAIN_MS) must deliver what
# the last receiver owes, or its peer, still in MPI_Send of a rendezvous,
# declares the path failed (dgram: after 12 retransmit timeouts, then holds
# for BM_PML_PATH_GRACE 60 s and aborts). Both ranks must print the hook's
# warning (the mechanism ran); a failed-path report fails the test.
add_executable(p2p_no_finalize ${p2p_dir}/p2p_no_finalize.c)
target_link_libraries(p2p_no_finalize PRIVATE bitmover)
foreach(btl dgram tcp)
    bm_add_mpi_test(p2p_no_finalize_${btl} TARGET p2p_no_finalize NP 2 BTL self,${btl}
        TIMEOUT 30 LABELS mpi p2p ENV BM_PML_PATH_GRACE=5)
    set_tests_properties(p2p_no_finalize_${btl} PROPERTIES
        PASS_REGULAR_EXPRESSION
        "rank [01] [^\n]*without calling MPI_Finalize[^\n]*delivered first.*rank [01] [^\n]*without calling MPI_Finalize[^\n]*delivered first"
        FAIL_REGULAR_EXPRESSION
        "failed|no working transport|undelivered|abort|timed out|exited with status [1-9]|killed")
endforeach()

# tcp's congestion control (src/btl/tcp/README.md "Congestion control"): with
# the default (auto) a loopback link runs reno, with "default" the kernel's
# default; each rank reads TCP_CONGESTION of its own loopback sockets. 77:
# skipped where the kernel's default is reno (nothing to tell apart).
add_executable(p2p_tcp_congestion ${p2p_dir}/p2p_tcp_congestion.c)
target_link_libraries(p2p_tcp_congestion PRIVATE bitmover)
foreach(mode auto default)
    bm_add_mpi_test(p2p_tcp_congestion_${mode} TARGET p2p_tcp_congestion NP 2 BTL self,tcp
        TIMEOUT 30 LABELS mpi p2p ARGS ${mode}
        ENV BM_BTL_TCP_IF_INCLUDE=lo BM_BTL_TCP_CONGESTION=${mode})
    set_tests_properties(p2p_tcp_congestion_${mode} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
