# A rank SIGKILLed during heavy traffic is what bmrun reports (rank, host,
# pid, signal; exit 137) even when the survivors abort first (label
# "fault"): kill_traffic.sh at 4 and 8 ranks, 4 runs each, every one of
# which must pass (repetitions of the scenario, not retries: the first
# failing run fails the test). The issue's count by hand:
#   bash tests/fault/kill_traffic.sh <bmrun> <kill_traffic> 8 20
add_executable(kill_traffic ${CMAKE_CURRENT_LIST_DIR}/kill_traffic.c)
target_link_libraries(kill_traffic PRIVATE bitmover)
if(NOT TARGET bmrun)
    return()
endif()
foreach(np 4 8)
    add_test(NAME bmrun_kill_traffic_np${np}
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/kill_traffic.sh $<TARGET_FILE:bmrun>
            $<TARGET_FILE:kill_traffic> ${np} 4)
    bm_scaled_timeout(t 90)
    set_tests_properties(bmrun_kill_traffic_np${np} PROPERTIES TIMEOUT ${t} LABELS fault)
endforeach()
