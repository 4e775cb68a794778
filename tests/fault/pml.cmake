# Fault tests of the point-to-point layer's failover (label "fault"), in two
# network namespaces joined by a veth rail (pml_netns.sh), with the
# p2p_failover stream (tests/mpi) verifying every message:
#  - pml_netns_kinds: tcp black-holed while UDP passes: the stream moves to
#    the standby dgram and back to tcp when tcp is let through.
#  - pml_netns_outage: the rail black-holed until both ranks reported the
#    outage and 4 s more, with a 60 s grace: the traffic is held and the job
#    finishes intact.
#  - pml_netns_abort: the rail black-holed for good with a 3 s grace: the
#    job is aborted after the grace, naming the ranks, hosts and interfaces.
#  - pml_netns_lossy: tcp alone with 20% of its segments dropped: no path
#    declared failed (detection by progress), every byte verified.
#  - pml_netns_linkdown: the local link set down: tcp and dgram fail their
#    paths at once (the local error, within 1.2 s: before their timeouts);
#    the link comes back, the job finishes intact.
# Skipped (77) without root.
if(NOT TARGET bmrun OR NOT TARGET p2p_failover)
    return()
endif()
foreach(scenario kinds:90 outage:120 abort:90 lossy:90 linkdown:90)
    string(REPLACE ":" ";" parts ${scenario})
    list(GET parts 0 name)
    list(GET parts 1 secs)
    add_test(NAME pml_netns_${name}
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pml_netns.sh $<TARGET_FILE:bmrun>
            $<TARGET_FILE:p2p_failover> ${name})
    bm_scaled_timeout(t ${secs})
    set_tests_properties(pml_netns_${name} PROPERTIES TIMEOUT ${t} LABELS fault
        SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()

# Adaptive striping (src/pml/stripe.c): two unshaped dgram rails, one losing 5% of
# its datagrams; run static and adaptive, the clean rail must carry >= 75%
# of the bytes and the total rate must not fall below 0.9x the static split's
# (stripe_netns.sh says why not 1x).
if(TARGET bmrun)
    add_executable(stripe_stream ${CMAKE_CURRENT_LIST_DIR}/stripe_stream.c)
    target_link_libraries(stripe_stream PRIVATE bitmover bm_test_harness)
    add_test(NAME pml_netns_stripe
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/stripe_netns.sh $<TARGET_FILE:bmrun>
            $<TARGET_FILE:stripe_stream>)
    bm_scaled_timeout(t 60)
    set_tests_properties(pml_netns_stripe PROPERTIES TIMEOUT ${t} LABELS fault
        SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
