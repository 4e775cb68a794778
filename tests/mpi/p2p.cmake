# MPI point-to-point tests, each run through bmrun over self+sm at 2, 3, 4
# and 8 processes (label mpi).
set(p2p_dir ${CMAKE_CURRENT_LIST_DIR})

function(bm_p2p_test prog)
    cmake_parse_arguments(A "" "TIMEOUT" "NP" ${ARGN})
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT 120)
    endif()
    add_executable(${prog} ${p2p_dir}/${prog}.c)
    target_link_libraries(${prog} PRIVATE bitmover bm_test_harness)
    foreach(np ${A_NP})
        bm_add_mpi_test(${prog}_np${np} TARGET ${prog} NP ${np} BTL self,sm
            TIMEOUT ${A_TIMEOUT} LABELS mpi p2p)
    endforeach()
endfunction()

bm_p2p_test(p2p_order NP 2 3 4 8)
bm_p2p_test(p2p_sizes NP 2 3 4 8 TIMEOUT 180)
bm_p2p_test(p2p_modes NP 2 3)
bm_p2p_test(p2p_persist NP 2 3 4 8)
bm_p2p_test(p2p_probe NP 2 3 4 8)
bm_p2p_test(p2p_errors NP 2 3)
bm_p2p_test(p2p_waits NP 2 3 4 8)
