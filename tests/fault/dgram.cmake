# Fault tests of the dgram transport (label "fault").
#  - dgram_fault_*: the transport layer under injected faults (debug
#    parameters BM_BTL_DGRAM_DROP/DUP/REORDER/CORRUPT), stray datagrams and
#    a peer that stops making progress, on this host, no privileges needed.
#  - btl_conformance_dgram_*_inject: the conformance suite with injected loss.
#  - dgram_netns_*: real faults between two network namespaces (iptables
#    loss, TEE duplication, htb+CLASSIFY reordering, a black hole, a rail
#    or an address pair that fails the connectivity check and is re-paired
#    around); skipped (77) without root.
add_executable(dgram_fault ${CMAKE_CURRENT_LIST_DIR}/dgram_fault.c)
target_link_libraries(dgram_fault PRIVATE bitmover_internal bm_test_harness)
target_include_directories(dgram_fault PRIVATE ${CMAKE_SOURCE_DIR}/src)
add_executable(dgram_finalize ${CMAKE_CURRENT_LIST_DIR}/dgram_finalize.c)
target_link_libraries(dgram_finalize PRIVATE bitmover_internal bm_test_harness)
target_include_directories(dgram_finalize PRIVATE ${CMAKE_SOURCE_DIR}/src)
add_executable(dgram_direct ${CMAKE_CURRENT_LIST_DIR}/dgram_direct.c)
target_link_libraries(dgram_direct PRIVATE bitmover_internal bm_test_harness)
target_include_directories(dgram_direct PRIVATE ${CMAKE_SOURCE_DIR}/src)

if(NOT TARGET bmrun)
    return()
endif()

bm_add_mpi_test(dgram_fault_stray TARGET dgram_fault NP 2 BTL self,dgram LABELS fault
    TIMEOUT 120 ARGS stray)
# A peer that computes 2.5 s without a progress call (beyond the old bounds:
# 12 retransmit timeouts, ~0.65 s from the floor, 1.5 s from the first
# contact's 5 ms, and the 2 s connectivity check at first contact): its
# liveness responder (dgram_live.c) must keep the path; any failure report
# or warning fails the test, and the counters must show the timeouts, the
# pings answered and the failure checks held back. FAIL_MS 1000: the rule
# also fires by time when rank 0, starved of CPU on a loaded host, sees
# fewer timeouts than FAIL_TIMEOUTS in the 2.5 s.
bm_add_mpi_test(dgram_fault_busy TARGET dgram_fault NP 2 BTL self,dgram LABELS fault
    TIMEOUT 60 ARGS busy 2500 ENV BM_BTL_DGRAM_FAIL_MS=1000)
set_tests_properties(dgram_fault_busy PROPERTIES FAIL_REGULAR_EXPRESSION "warning:|FAIL")
if(BM_HAVE_OFI)
    # The same on the libfabric wire: its responder answers from the live
    # socket itself, and the asking side has the live port in its address
    # vectors (dgram_live.c).
    bm_add_mpi_test(dgram_fault_busy_ofi TARGET dgram_fault NP 2 BTL self,dgram LABELS fault
        TIMEOUT 60 ARGS busy 2500 ENV BM_BTL_DGRAM_FAIL_MS=1000 BM_BTL_DGRAM_WIRE=ofi)
    set_tests_properties(dgram_fault_busy_ofi PROPERTIES FAIL_REGULAR_EXPRESSION "warning:|FAIL")
endif()
# Large messages whose chunks the kernel receives straight into the receive
# buffer, with 3% of the datagrams corrupted: every byte must be right, and
# some chunks received in place must have failed their MAC (their bytes are
# overwritten by the resend; the message completes only when all verified).
bm_add_mpi_test(dgram_direct TARGET dgram_direct NP 2 BTL self,dgram LABELS fault
    TIMEOUT 60 ENV BM_BTL_DGRAM_RECV_IN_PLACE=1 BM_BTL_DGRAM_CORRUPT=0.03 BM_BTL_DGRAM_SEED=21)
# The last datagrams of a job lost (a barrier message, then ACKs): MPI_Finalize
# must drain them and fence with progress (bm_pml_quiesce), not hang or
# leave a peer to fail its path. Without the drain it hung until the timeout.
bm_add_mpi_test(dgram_finalize_lossy TARGET dgram_finalize NP 2 BTL self,dgram LABELS fault
    TIMEOUT 30)
set_tests_properties(dgram_finalize_lossy PROPERTIES FAIL_REGULAR_EXPRESSION "warning:|FAIL")
# The same with rank 1's path to rank 0 reported failed in its fence: the
# failover's warnings (expected: rank 1's) looked up rank 0's host in the
# modex, which under bmrun waited for the fence's end; rank 1 stopped
# answering and rank 0 failed its own path seconds later. The host names
# now come from the BTL base's table and gets never wait for a fence.
bm_add_mpi_test(dgram_finalize_pathfail TARGET dgram_finalize NP 2 BTL self,dgram LABELS fault
    TIMEOUT 30 ARGS pathfail)
bm_add_mpi_test(dgram_fault_stream_lossy TARGET dgram_fault NP 2 BTL self,dgram LABELS fault
    TIMEOUT 180 ARGS stream 1000
    ENV BM_BTL_DGRAM_DROP=0.1 BM_BTL_DGRAM_DUP=0.05 BM_BTL_DGRAM_REORDER=0.05
        BM_BTL_DGRAM_CORRUPT=0.02 BM_BTL_DGRAM_SEED=7)

if(TARGET btl_conformance)
    bm_add_mpi_test(btl_conformance_dgram_np2_drop10 TARGET btl_conformance NP 2
        BTL self,dgram LABELS btl fault TIMEOUT 180 ARGS dgram
        ENV BM_BTL_DGRAM_DROP=0.1 BM_BTL_DGRAM_SEED=11)
    bm_add_mpi_test(btl_conformance_dgram_np4_faults TARGET btl_conformance NP 4
        BTL self,dgram LABELS btl fault TIMEOUT 240 ARGS dgram
        ENV BM_BTL_DGRAM_DROP=0.05 BM_BTL_DGRAM_DUP=0.05 BM_BTL_DGRAM_REORDER=0.05
            BM_BTL_DGRAM_CORRUPT=0.01 BM_BTL_DGRAM_SEED=12)

    if(BM_HAVE_OFI)
        bm_add_mpi_test(btl_conformance_dgram_ofi_np2 TARGET btl_conformance NP 2
            BTL self,dgram LABELS btl TIMEOUT 180 ARGS dgram ENV BM_BTL_DGRAM_WIRE=ofi)
        bm_add_mpi_test(btl_conformance_dgram_ofi_np4_drop5 TARGET btl_conformance NP 4
            BTL self,dgram LABELS btl fault TIMEOUT 240 ARGS dgram
            ENV BM_BTL_DGRAM_WIRE=ofi BM_BTL_DGRAM_DROP=0.05 BM_BTL_DGRAM_SEED=13)
    endif()

    foreach(scenario loss:0.01 loss:0.05 loss:0.20 dup:0.10 reorder:0.02 blackhole:0 mtu:0 rails:0 stray:0)
        string(REPLACE ":" ";" parts ${scenario})
        list(GET parts 0 kind)
        list(GET parts 1 prob)
        string(REPLACE "." "" tag ${prob})
        if(kind STREQUAL "loss" OR kind STREQUAL "dup")
            set(name dgram_netns_${kind}${tag})
        else()
            set(name dgram_netns_${kind})
        endif()
        add_test(NAME ${name}
            COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dgram_netns.sh $<TARGET_FILE:bmrun>
                $<TARGET_FILE:btl_conformance> $<TARGET_FILE:dgram_fault> ${kind} ${prob})
        bm_scaled_timeout(t 240)
        # not RUN_SERIAL: see tcp.cmake
        set_tests_properties(${name} PROPERTIES TIMEOUT ${t} LABELS fault SKIP_RETURN_CODE 77)
    endforeach()

    # Re-pairing after a failed connectivity check, checked with an MPI job
    # (every size, every byte verified) through the PML.
    # The _ofi run uses the libfabric wire, which names senders by address
    # vector entry (every published address of the peer must be in it).
    if(TARGET p2p_sizes)
        set(repair_kinds repair repair_addr)
        if(BM_HAVE_OFI)
            list(APPEND repair_kinds repair_addr:ofi)
        endif()
        foreach(kw ${repair_kinds})
            string(REPLACE ":" ";" parts ${kw})
            list(GET parts 0 kind)
            set(name dgram_netns_${kind})
            set(env "")
            if(kw MATCHES ":ofi$")
                set(name ${name}_ofi)
                set(env BM_BTL_DGRAM_WIRE=ofi)
            endif()
            add_test(NAME ${name}
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dgram_netns.sh $<TARGET_FILE:bmrun>
                    $<TARGET_FILE:btl_conformance> $<TARGET_FILE:dgram_fault> ${kind} 0
                    $<TARGET_FILE:p2p_sizes>)
            bm_scaled_timeout(t 240)
            set_tests_properties(${name} PROPERTIES TIMEOUT ${t} LABELS fault
                SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
        endforeach()
    endif()
endif()
