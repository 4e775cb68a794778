# Small helpers so that per-folder CMakeLists.txt stay short and every test
# gets a label and a timeout (scaled by BM_TEST_TIMEOUT_MULTIPLIER at
# configure time, for slow sanitizer builds).
if(DEFINED ENV{BM_TEST_TIMEOUT_MULTIPLIER})
    set(BM_TEST_TIMEOUT_MULTIPLIER $ENV{BM_TEST_TIMEOUT_MULTIPLIER})
elseif(BM_SANITIZE)
    set(BM_TEST_TIMEOUT_MULTIPLIER 3)
else()
    set(BM_TEST_TIMEOUT_MULTIPLIER 1)
endif()

function(bm_scaled_timeout out seconds)
    math(EXPR t "${seconds} * ${BM_TEST_TIMEOUT_MULTIPLIER}")
    set(${out} ${t} PARENT_SCOPE)
endfunction()

# bm_add_btl(<name> SOURCES ...): adds a transport's sources to the library.
function(bm_add_btl name)
    cmake_parse_arguments(A "" "" "SOURCES" ${ARGN})
    target_sources(bm_objs PRIVATE ${A_SOURCES})
endfunction()

# bm_add_unit_test(<name> SOURCES ... [LABELS ...] [TIMEOUT s] [LIBS ...])
# One executable per test, linked against the internal static library.
function(bm_add_unit_test name)
    cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT 60)
    endif()
    if(NOT A_LABELS)
        set(A_LABELS unit)
    endif()
    add_executable(${name} ${A_SOURCES})
    target_link_libraries(${name} PRIVATE bitmover_internal bm_test_harness ${A_LIBS})
    add_test(NAME ${name} COMMAND ${name})
    bm_scaled_timeout(t ${A_TIMEOUT})
    set_tests_properties(${name} PROPERTIES TIMEOUT ${t} LABELS "${A_LABELS}")
endfunction()

# bm_add_mpi_test(<name> SOURCES ... NP n [BTL list] [TIMEOUT s] [LABELS ...] [ARGS ...])
# An MPI program run through bmrun. BTL (comma list) is exported as BM_BTL.
function(bm_add_mpi_test name)
    cmake_parse_arguments(A "" "NP;BTL;TIMEOUT;TARGET" "SOURCES;LABELS;ARGS;ENV" ${ARGN})
    if(NOT A_TIMEOUT)
        set(A_TIMEOUT 120)
    endif()
    if(NOT A_LABELS)
        set(A_LABELS mpi)
    endif()
    if(A_TARGET)
        set(exe ${A_TARGET})
    else()
        set(exe ${name})
        add_executable(${exe} ${A_SOURCES})
        target_link_libraries(${exe} PRIVATE bitmover)
    endif()
    # ctest -j2 runs two jobs on two cores: the suite oversubscribes the
    # machine in a way the PML's job-level check (BM_PML_IDLE_YIELD=-1) cannot
    # see, and ranks that never yield then wait a scheduler time slice per
    # message (measured: 2.5-4x longer runs). Tests that set it keep theirs.
    set(env "BM_PML_IDLE_YIELD=64")
    if(A_BTL)
        list(APPEND env "BM_BTL=${A_BTL}")
    endif()
    list(APPEND env ${A_ENV})
    bm_scaled_timeout(t ${A_TIMEOUT})
    math(EXPR bmrun_t "${t} - 5")
    add_test(NAME ${name} COMMAND $<TARGET_FILE:bmrun> -n ${A_NP} --timeout ${bmrun_t}
        $<TARGET_FILE:${exe}> ${A_ARGS})
    set_tests_properties(${name} PROPERTIES TIMEOUT ${t} LABELS "${A_LABELS}"
        ENVIRONMENT "${env}")
endfunction()

# Test scheduling on few cores. Most tests compute (their ranks spin, copy,
# verify): ctest must not run more of them at once than there are cores, or
# every one of them slows down. A few mostly wait (a launcher being started
# and torn down, a timer to expire, a sleep): those carry the label "waits"
# and run beside the others. Each test without that label takes one slot of
# the resource "cpus", of which the build's resource spec file (written
# here; ctest reads it from the build tree through CTEST_RESOURCE_SPEC_FILE)
# has BM_TEST_CPUS (default: the number of cores); ctest's -j is then the
# total, waiters included (the Makefile's CTEST_JOBS). Without the spec file
# (ctest --resource-spec-file "" or an older setup) the groups are ignored
# and -j alone decides, as before.
cmake_host_system_information(RESULT bm_ncores QUERY NUMBER_OF_LOGICAL_CORES)
set(BM_TEST_CPUS ${bm_ncores} CACHE STRING "Tests that compute run at most this many at once (ctest resource \"cpus\")")
file(WRITE ${CMAKE_BINARY_DIR}/ctest-resources.json
    "{\"version\": {\"major\": 1, \"minor\": 0},\n \"local\": [{\"cpus\": [{\"id\": \"0\", \"slots\": ${BM_TEST_CPUS}}]}]}\n")
set(CTEST_RESOURCE_SPEC_FILE ${CMAKE_BINARY_DIR}/ctest-resources.json)

# bm_tests_defaults(): run at the end of each test directory
#   cmake_language(DEFER CALL bm_tests_defaults)
# Every test of the directory that is not labelled "waits" and has no
# resource groups of its own takes one "cpus" slot (above).
# Every test gets FI_OFI_RXM_MSG_RX_SIZE=256. libfabric's rxm posts that many
# bounce buffers of 16 KiB (FI_OFI_RXM_BUFFER_SIZE) on its shared receive
# context at fi_enable,
# 4096 by default with it (libfabric 1.17), and zeroes them: 68 MB and
# 17,000 page faults per process before the first message, ~1 s of each
# ofi job on this 2-core VM (perf: memset under fi_enable; /usr/bin/time
# of a 2-rank p2p_modes job over self,ofi: 46,300 minor faults, 2,060
# over self,sm). The tests post 256 (the size libfabric uses without a
# shared context is 128): the same code paths, flow control over the
# shared context included. A test that sets FI_OFI_RXM_MSG_RX_SIZE in its
# own ENVIRONMENT keeps its value.
function(bm_tests_defaults)
    get_property(tests DIRECTORY PROPERTY TESTS)
    foreach(t IN LISTS tests)
        get_test_property(${t} LABELS labels)
        get_test_property(${t} RESOURCE_GROUPS groups)
        if(NOT groups AND NOT "waits" IN_LIST labels)
            set_tests_properties(${t} PROPERTIES RESOURCE_GROUPS "cpus:1")
        endif()
        get_test_property(${t} ENVIRONMENT env)
        if(NOT env MATCHES "FI_OFI_RXM_MSG_RX_SIZE=")
            set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT FI_OFI_RXM_MSG_RX_SIZE=256)
        endif()
    endforeach()
endfunction()
