# Tests of the ofi transport (libfabric RDM endpoints), label "btl" or
# "fault"; only in builds with libfabric:
#  - btl_conformance_ofi_np{2,4} (tests/btl loop): the conformance suite on
#    tcp;ofi_rxm, the provider every Debian machine has.
#  - btl_conformance_ofi_np2_mrlocal: the same with every local buffer
#    registered (FI_MR_LOCAL forced) and the memory monitor running.
#  - btl_conformance_ofi_np2_mrbasic: the same with provider keys and
#    virtual addresses (BM_BTL_OFI_MR_MODE=basic) and FI_MR_LOCAL forced.
#  - ofi_mr_modes: FI_MR_ENDPOINT, FI_MR_PROV_KEY, FI_MR_ALLOCATED and
#    FI_MR_LOCAL against a stand-in provider that enforces them.
#  - ofi_kill_shm: a rank of a job on the shm provider SIGKILLed; nothing
#    of it may stay in /dev/shm.
#  - btl_conformance_ofi_np2_shm: the shm provider (FI_MR_VIRT_ADDR, string
#    addresses), with two contexts aliasing its one endpoint.
#  - btl_conformance_ofi_np2_sockets: the sockets provider (its own progress
#    thread): callers waiting for RDMA/atomics must have yielded to it.
#  - ofi_fail_defer: a path failed inside an operation completes its
#    operations in flight at the next progress, never inside the call.
#  - ofi_ack_refused: an acknowledgement a refused message was to carry
#    stays owed.
#  - ofi_watch_pong: a busy path whose PINGs are answered (also before the
#    PING's post returns) is never failed; an unanswered one is.
#  - ofi_mr_test: the registration cache and the userfaultfd monitor (hits,
#    unions, handles, invalidation by munmap/madvise/mremap/free, eviction).
#  - ofi_threads_np2: 4 threads per rank put, get, fetch-and-add and send at
#    once (MPI_THREAD_MULTIPLE), every byte verified; each thread runs
#    progress too; one rank pauses 2 s and its path must survive.
#  - p2p_*_ofi: MPI point-to-point programs over BM_BTL=self,ofi (no sm).
#  - test_ofi_rget*: large messages by RGET (the provider's RMA read of the
#    sender's registered buffer), FI_MR_LOCAL forced, MPI_Alloc_mem memory,
#    and the fallback to fragments.
#  - mt_progress_ofi, mt_block_ofi_np2: sleeping on ofi's completion queues.
#  - ofi_bibw_frags_np2: 1 MiB both ways as fragments through few
#    multi-receive buffers, nothing dropped as malformed.
#  - mt_stress_ofi_sockets_np2, mt_stress_ofi_np2: MPI_THREAD_MULTIPLE
#    programs over ofi, which locks for itself (contexts used concurrently).
#  - ofi_kill: a peer SIGKILLed mid-stream is reported through the error
#    callback with the provider's reason, nothing hangs.
#  - ofi_acks_same_host_{auto,on}: no delivery acknowledgements between
#    ranks of one host under auto, some when asked for.
#  - ofi_netns_*: two network-namespace hosts (root): MPI point-to-point
#    and one-sided (osc: libfabric RMA checked by the counters) across them
#    over ofi, and a black-holed rail reported by ofi's timeout
#    while the PML fails over to tcp.
# The other providers of this machine (sockets: slow, its progress thread
# dominates; shm at 4 ranks; every provider with several contexts) run with
# -DBM_TEST_OFI_PROVIDERS=ON under the label "ofi_providers" (about 2
# minutes), to keep CI within its budget.
if(NOT BM_HAVE_OFI)
    return()
endif()
option(BM_TEST_OFI_PROVIDERS "Run the ofi tests on every libfabric provider of this machine" OFF)

bm_add_unit_test(ofi_mr_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofi_mr_test.c LABELS unit btl
    TIMEOUT 60)
set_tests_properties(ofi_mr_test PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT
    "BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=tcp;BM_BTL_OFI_MR_MONITOR=on;BM_BTL_OFI_MR_LOCAL=on;BM_BTL_OFI_MR_CACHE_MAX=8")

# The registration modes no provider here asks for (FI_MR_ENDPOINT,
# FI_MR_PROV_KEY, FI_MR_ALLOCATED, FI_MR_LOCAL), against a stand-in provider
# that enforces them (no libfabric calls: the stand-in is the domain).
bm_add_unit_test(ofi_mr_modes SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofi_mr_modes.c LABELS unit btl
    TIMEOUT 30)

# A path that fails inside an operation completes its operations in flight
# at the next progress, not inside that call (a module built by hand, no
# provider).
bm_add_unit_test(ofi_fail_defer SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofi_fail_defer.c
    LABELS unit btl TIMEOUT 30)

# An acknowledgement owed to a peer stays owed when the message that was to
# carry it is refused by the provider (a stand-in endpoint).
bm_add_unit_test(ofi_ack_refused SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofi_ack_refused.c
    LABELS unit btl TIMEOUT 30)

# The liveness watcher and the PONG, with chosen clock values (a stand-in
# endpoint): busy paths that answer are never failed, silent ones are.
bm_add_unit_test(ofi_watch_pong SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofi_watch_pong.c
    LABELS unit btl TIMEOUT 30)

add_executable(ofi_threads ${CMAKE_CURRENT_LIST_DIR}/ofi_threads.c)
target_link_libraries(ofi_threads PRIVATE bitmover_internal bm_test_harness)

if(NOT TARGET bmrun)
    return()
endif()

if(TARGET btl_conformance)
    bm_add_mpi_test(btl_conformance_ofi_np2_mrlocal TARGET btl_conformance NP 2 BTL self,ofi
        LABELS btl TIMEOUT 120 ARGS ofi
        ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_BTL_OFI_MR_LOCAL=on BM_BTL_OFI_MR_MONITOR=on)
    # Provider keys, virtual addresses and allocated memory (FI_MR_BASIC,
    # which tcp;ofi_rxm honours when asked) with every local buffer
    # registered: the mode combination of verbs and EFA on a provider of
    # this machine. The stats line must show the mode (0x70) in effect.
    # The conformance suite at 2 ranks, passing only when its output also
    # matches regex (ofi_expect.sh); env: the test's environment.
    function(ofi_conformance_expect name regex env)
        bm_scaled_timeout(t 120)
        math(EXPR bmrun_t "${t} - 5")
        add_test(NAME ${name}
            COMMAND sh ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/ofi_expect.sh "${regex}"
                $<TARGET_FILE:bmrun> -n 2 --timeout ${bmrun_t} $<TARGET_FILE:btl_conformance> ofi)
        set_tests_properties(${name} PROPERTIES TIMEOUT ${t} LABELS btl ENVIRONMENT "${env}")
    endfunction()
    ofi_conformance_expect(btl_conformance_ofi_np2_mrbasic
        "^\\[ofi stats\\] rank 1 ofi:tcp;ofi_rxm:[^ ]*: mr_mode=0x70 \\(local\\)"
        "BM_PML_IDLE_YIELD=64;BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=tcp;BM_BTL_OFI_MR_MODE=basic;BM_BTL_OFI_MR_LOCAL=on;BM_BTL_OFI_STATS=1")
    bm_add_mpi_test(btl_conformance_ofi_np2_shm TARGET btl_conformance NP 2 BTL self,ofi
        LABELS btl TIMEOUT 120 ARGS ofi
        ENV BM_BTL_OFI_PROVIDER_INCLUDE=shm BM_BTL_OFI_CONTEXTS=2)
    # The sockets provider, whose own progress thread carries RDMA and
    # atomics: a caller polling for their completions gives that thread its
    # core (ofi_component.c), counted per module; each rank waits for
    # hundreds of them, so its stats line must show such yields.
    ofi_conformance_expect(btl_conformance_ofi_np2_sockets
        "^\\[ofi stats\\] rank 0 ofi:sockets:[^ ]*: .* rma=[1-9][0-9]* .* rdma_yields=[1-9]"
        "BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=sockets;BM_BTL_OFI_STATS=1")
endif()

# 60 rounds; halfway rank 1 stops for 2 s (no progress at all) while rank
# 0's threads go on: with BM_BTL_OFI_TIMEOUT=3 s rank 0 must PING the
# silent peer (half the timeout) and take the PONG after the pause as proof
# of life (path_failures=0 on both ranks, checked by the program; a PONG
# read on one thread while another ran the watcher used to leave the PING
# counted out, and a PONG never restarted the quiet period, so a busy path
# whose every watcher pass found something owed was failed one timeout
# after it first fell quiet).
bm_add_mpi_test(ofi_threads_np2 TARGET ofi_threads NP 2 BTL self,ofi LABELS btl tsan TIMEOUT 120
    ARGS 60 2000
    ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_BTL_OFI_CONTEXTS=4 BM_BTL_OFI_TIMEOUT=3000)

# MPI_THREAD_MULTIPLE through the whole stack: ofi locks for itself
# (BM_BTL_CAP_THREADS), so the base no longer serialises it. mt_stress
# (tests/mpi/mt_stress.c: 4 threads per rank, every byte checked) over
# sockets' scalable endpoint with 4 contexts must show contexts used by two
# threads at the same moment (ctx_overlaps, counted with BM_BTL_OFI_STATS;
# always 0 while the base held one lock around every ofi call), and over
# tcp;ofi_rxm (no scalable endpoints: one context, its lock) stays correct.
# The sockets run also guards against losing injected messages at close
# (it hung in MPI_Finalize in 6 of 12 runs while sockets injected).
if(TARGET mt_stress)
    bm_scaled_timeout(t 120)
    math(EXPR bmrun_t "${t} - 5")
    add_test(NAME mt_stress_ofi_sockets_np2
        COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/ofi_expect.sh
            "^\\[ofi stats\\] rank 0 ofi:sockets:.* ctx_overlaps=[1-9]"
            $<TARGET_FILE:bmrun> -n 2 --timeout ${bmrun_t} $<TARGET_FILE:mt_stress> -t 4 -i 20)
    set_tests_properties(mt_stress_ofi_sockets_np2 PROPERTIES TIMEOUT ${t}
        LABELS "mpi;mt;tsan;btl" ENVIRONMENT
        "BM_PML_IDLE_YIELD=64;BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=sockets;BM_BTL_OFI_CONTEXTS=4;BM_BTL_OFI_STATS=1")
    bm_add_mpi_test(mt_stress_ofi_np2 TARGET mt_stress NP 2 BTL self,ofi LABELS mpi mt tsan btl
        TIMEOUT 120 ARGS -t 4 -i 10 ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp)
endif()

# Rendezvous starts without the progress lock over ofi (tests/mpi/mt_rndv.c):
# two threads' RGETs to different peers, each registering its own buffer,
# must be inside their starts at once (counted, not timed).
if(TARGET mt_rndv)
    bm_add_mpi_test(mt_rndv_ofi_np3 TARGET mt_rndv NP 3 BTL self,ofi LABELS mpi mt btl tsan
        TIMEOUT 120 ARGS rget ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp)
endif()
# ... and their FRAGs (tests/mpi/mt_frags.c; a non-contiguous type of small
# blocks, packed FRAGs under the per-peer send state): two threads inside the
# FRAG path at once for two peers, FRAGs sent without the progress lock.
if(TARGET mt_frags)
    bm_add_mpi_test(mt_frags_ofi_np3 TARGET mt_frags NP 3 BTL self,ofi LABELS mpi mt btl tsan
        TIMEOUT 120 ARGS vector ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp)
endif()

# 1 MiB messages both ways at once as 512 KiB fragments through few
# multi-receive buffers (tests/fault/ofi_bibw.c, every byte verified): no
# message may be dropped as malformed on either rank (before the fix, a
# buffer posted while fragments waited unexpected in rxm was filled again
# from its start while their reads still landed in it).
add_executable(ofi_bibw ${CMAKE_CURRENT_LIST_DIR}/ofi_bibw.c)
target_link_libraries(ofi_bibw PRIVATE bitmover bm_test_harness)
bm_scaled_timeout(t 120)
math(EXPR bmrun_t "${t} - 5")
add_test(NAME ofi_bibw_frags_np2
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/ofi_expect.sh -c 2
        "^\\[ofi stats\\] rank [01] ofi:tcp;ofi_rxm:.* malformed=0$"
        $<TARGET_FILE:bmrun> -n 2 --timeout ${bmrun_t} $<TARGET_FILE:ofi_bibw>)
set_tests_properties(ofi_bibw_frags_np2 PROPERTIES TIMEOUT ${t} LABELS "mpi;btl" ENVIRONMENT
    "BM_PML_IDLE_YIELD=64;BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=tcp;BM_BTL_OFI_RNDV_GET=0;BM_BTL_OFI_RECV_BUFS=2;BM_BTL_OFI_STATS=1")

# The provider's connections on loopback run reno (BM_BTL_OFI_CONGESTION,
# src/btl/ofi/ofi_sock.c; the kernel's default bbr paces and costs about
# twice the CPU per byte there): tests/mpi/p2p_tcp_congestion.c over
# self,ofi on the loopback domain (tcp;ofi_rxm connects 127.0.0.1), each
# rank reads TCP_CONGESTION of its own loopback sockets: auto, at least one
# runs reno; default, none does (the launcher's connection keeps the
# kernel's default in both). 77: skipped where the default is reno.
if(TARGET p2p_tcp_congestion)
    foreach(mode auto default)
        bm_add_mpi_test(ofi_congestion_${mode} TARGET p2p_tcp_congestion NP 2 BTL self,ofi
            TIMEOUT 60 LABELS mpi btl ARGS ${mode} BM_BTL_OFI_CONGESTION
            ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_BTL_OFI_DOMAIN_INCLUDE=lo
                BM_BTL_OFI_CONGESTION=${mode})
        set_tests_properties(ofi_congestion_${mode} PROPERTIES SKIP_RETURN_CODE 77)
    endforeach()
endif()

# Delivery acknowledgements (src/btl/ofi/ofi_ack.c) between two ranks of one
# host, whose provider connection goes through lo (tests/mpi/p2p_sizes.c
# over self,ofi on tcp;ofi_rxm, every size both ways): auto numbers none of
# the messages, so no rank sends or carries an acknowledgement; on numbers
# every descriptor send, and each rank sends or carries some. Either fails
# if the other rule ran (before 2026-11-29 #5 auto numbered these too).
if(TARGET p2p_sizes)
    bm_scaled_timeout(t 120)
    math(EXPR bmrun_t "${t} - 5")
    set(ofi_acks_auto "^\\[ofi stats\\] rank [01] ofi:tcp;ofi_rxm:.* sends=[1-9][0-9]* .* acks_sent=0 acks_piggybacked=0 ")
    set(ofi_acks_on "^\\[ofi stats\\] rank [01] ofi:tcp;ofi_rxm:.* acks_(sent|piggybacked)=[1-9]")
    foreach(mode auto on)
        add_test(NAME ofi_acks_same_host_${mode}
            COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/ofi_expect.sh -c 2 "${ofi_acks_${mode}}"
                $<TARGET_FILE:bmrun> -n 2 --timeout ${bmrun_t} $<TARGET_FILE:p2p_sizes>)
        set_tests_properties(ofi_acks_same_host_${mode} PROPERTIES TIMEOUT ${t} LABELS "mpi;btl"
            ENVIRONMENT "BM_BTL=self,ofi;BM_BTL_OFI_PROVIDER_INCLUDE=tcp;BM_BTL_OFI_ACKS=${mode};BM_BTL_OFI_STATS=1")
    endforeach()
endif()

# Sleeping over ofi (btl.h "Sleeping"): the progress thread sleeps on the
# completion queues' FI_WAIT_FD descriptors, so its idle cost stays under
# 1% of a core (napping instead cost 1.4% on tcp;ofi_rxm); ping-pong waits
# that sleep (BM_PML_WAIT_MODE=block) deliver every byte.
if(TARGET mt_progress)
    bm_add_mpi_test(mt_progress_ofi TARGET mt_progress NP 2 BTL self,ofi LABELS mpi mt btl
        TIMEOUT 120 ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_PML_PROGRESS_THREAD=1)
    bm_add_mpi_test(mt_block_ofi_np2 TARGET mt_progress NP 2 BTL self,ofi LABELS mpi mt btl
        TIMEOUT 120 ARGS -b ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_PML_WAIT_MODE=block)
endif()

# Large point-to-point messages read by the receiver from the sender's
# registered buffer (the PML's RGET over the provider's RMA read; the
# counters prove it), with FI_MR_LOCAL forced (the receive buffer
# registered too), from MPI_Alloc_mem memory (its registration offered,
# not a new one), and the fallback to fragments when the receiver cannot
# read.
if(TARGET test_sm_rget)
    foreach(v "plain::" "mrlocal::BM_BTL_OFI_MR_LOCAL=on" "allocmem:allocmem:"
              "fallback:fallback:")
        string(REPLACE ":" ";" parts "${v}")
        list(GET parts 0 name)
        list(GET parts 1 arg)
        list(GET parts 2 extra)
        set(tname test_ofi_rget_${name})
        if(name STREQUAL "plain")
            set(tname test_ofi_rget)
        endif()
        bm_add_mpi_test(${tname} TARGET test_sm_rget NP 2 BTL self,ofi LABELS btl mpi
            TIMEOUT 120 ARGS ${arg} ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_PML_RGET_LIMIT=64k
            ${extra})
    endforeach()
endif()

foreach(prog_np p2p_sizes:3 p2p_modes:2 p2p_waits:4)
    string(REPLACE ":" ";" parts ${prog_np})
    list(GET parts 0 prog)
    list(GET parts 1 np)
    if(TARGET ${prog})
        bm_add_mpi_test(${prog}_ofi_np${np} TARGET ${prog} NP ${np} BTL self,ofi LABELS mpi btl
            TIMEOUT 120 ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp)
    endif()
endforeach()

if(BM_TEST_OFI_PROVIDERS AND TARGET btl_conformance)
    foreach(cfg "sockets:2:" "sockets:2:BM_BTL_OFI_CONTEXTS=4" "sockets:2:BM_BTL_OFI_MR_LOCAL=on"
                "sockets:2:BM_BTL_OFI_MR_MODE=basic" "shm:4:" "shm:2:BM_BTL_OFI_MR_LOCAL=on"
                "shm:2:BM_BTL_OFI_MR_MODE=basic" "tcp:8:")
        string(REPLACE ":" ";" parts "${cfg}")
        list(GET parts 0 prov)
        list(GET parts 1 np)
        list(GET parts 2 extra)
        string(REGEX REPLACE "^BM_BTL_OFI_|=.*$" "" tagname "${extra}")
        string(TOLOWER "${tagname}" tagname)
        set(name btl_conformance_ofi_${prov}_np${np})
        if(tagname)
            set(name ${name}_${tagname})
        endif()
        bm_add_mpi_test(${name} TARGET btl_conformance NP ${np} BTL self,ofi
            LABELS btl ofi_providers TIMEOUT 300 ARGS ofi
            ENV BM_BTL_OFI_PROVIDER_INCLUDE=${prov} ${extra})
    endforeach()
    bm_add_mpi_test(ofi_threads_sockets_np2 TARGET ofi_threads NP 2 BTL self,ofi
        LABELS btl ofi_providers TIMEOUT 300
        ENV BM_BTL_OFI_PROVIDER_INCLUDE=sockets BM_BTL_OFI_CONTEXTS=4)
endif()

add_executable(ofi_fault ${CMAKE_CURRENT_LIST_DIR}/ofi_fault.c)
target_link_libraries(ofi_fault PRIVATE bitmover_internal bm_test_harness)
bm_scaled_timeout(t 120)
add_test(NAME ofi_kill
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ofi_kill.sh $<TARGET_FILE:bmrun> $<TARGET_FILE:ofi_fault>)
set_tests_properties(ofi_kill PROPERTIES TIMEOUT ${t} LABELS fault)
add_test(NAME ofi_kill_shm
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ofi_kill.sh $<TARGET_FILE:bmrun> $<TARGET_FILE:ofi_fault>
        shm)
set_tests_properties(ofi_kill_shm PROPERTIES TIMEOUT ${t} LABELS fault)
# Closing with an RMA read's response cut off half way (tcp;ofi_rxm, one
# host): libfabric's tcp before 1.18 would complete the read twice and rxm
# segfault in fi_close; the module must be left open there (ofi_module.c).
bm_add_mpi_test(ofi_close_midread TARGET ofi_fault NP 2 BTL self,ofi LABELS fault TIMEOUT 60
    ARGS getclose ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp)

# dgram's libfabric wire takes any FI_EP_DGRAM provider that addresses peers
# by IP, chosen by BM_BTL_DGRAM_PROVIDER_INCLUDE/_EXCLUDE: named explicitly
# it runs the conformance suite; excluded, the error names the lists and
# what was found.
if(TARGET btl_conformance)
    bm_add_mpi_test(btl_conformance_dgram_ofi_np2_provider TARGET btl_conformance NP 2
        BTL self,dgram LABELS btl TIMEOUT 120 ARGS dgram
        ENV BM_BTL_DGRAM_WIRE=ofi BM_BTL_DGRAM_PROVIDER_INCLUDE=udp)
    bm_add_mpi_test(dgram_ofi_provider_excluded TARGET btl_conformance NP 2 BTL self,dgram
        LABELS btl TIMEOUT 60 ARGS dgram
        ENV BM_BTL_DGRAM_WIRE=ofi BM_BTL_DGRAM_PROVIDER_EXCLUDE=udp,sockets)
    set_tests_properties(dgram_ofi_provider_excluded PROPERTIES PASS_REGULAR_EXPRESSION
        "no libfabric FI_EP_DGRAM provider passes BM_BTL_DGRAM_PROVIDER_INCLUDE= / _EXCLUDE=udp,sockets \\(found: [a-z, ]*udp")
endif()

# Across two network-namespace hosts (root): MPI point-to-point over ofi
# alone, failover from a black-holed ofi rail to tcp on another, and the
# ofi rail taken back once the black hole is lifted. Not RUN_SERIAL (as the
# tcp/dgram netns tests): each run has its own namespaces, veths and rules,
# and the bounds (a failure reported within 20 s of a 3 s timeout, tcp
# carrying 1 MB within 20 s, a recovery within 20 s) hold beside another
# test. The stream lasts until the script has checked it (a stop file),
# not a fixed time.
if(TARGET p2p_failover AND TARGET p2p_sizes)
    foreach(scenario p2p failover recover)
        add_test(NAME ofi_netns_${scenario}
            COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ofi_netns.sh $<TARGET_FILE:bmrun>
                $<TARGET_FILE:p2p_failover> $<TARGET_FILE:p2p_sizes> ${scenario})
        bm_scaled_timeout(t 150)
        set_tests_properties(ofi_netns_${scenario} PROPERTIES TIMEOUT ${t} LABELS fault
            SKIP_RETURN_CODE 77)
    endforeach()
endif()
if(TARGET osc_fence)
    add_test(NAME ofi_netns_osc
        COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ofi_netns.sh $<TARGET_FILE:bmrun>
            $<TARGET_FILE:osc_fence> - osc)
    bm_scaled_timeout(t 120)
    set_tests_properties(ofi_netns_osc PROPERTIES TIMEOUT ${t} LABELS "fault;osc"
        SKIP_RETURN_CODE 77)
endif()

# One-sided MPI over ofi alone (BM_BTL=self,ofi): windows registered with
# ofi, put and get by libfabric RMA, accumulates and atomics on 8/4-byte
# integers by ofi's atomics (the window's rule), the rest through the
# target's agent over ofi messages (src/mpi/README.md says which path each
# operation takes), every byte verified by the programs of tests/mpi. Each
# rank prints ofi's counters: a rank whose line says rma=0 did no libfabric
# put or get, and the test fails (osc_atomic: amos=0, no libfabric atomic).
foreach(run osc_fence:3:allocate osc_fence:2:create osc_lock:3:create osc_lock:2:allocate
            osc_atomic:4:allocate osc_pscw:3:create osc_dtype:2:allocate osc_windows:2:any)
    string(REPLACE ":" ";" f ${run})
    list(GET f 0 prog)
    list(GET f 1 np)
    list(GET f 2 flavour)
    if(TARGET ${prog})
        set(name ${prog}_ofi_${flavour}_np${np})
        bm_add_mpi_test(${name} TARGET ${prog} NP ${np} BTL self,ofi
            TIMEOUT 120 LABELS mpi osc btl ARGS ${flavour}
            ENV BM_BTL_OFI_PROVIDER_INCLUDE=tcp BM_BTL_OFI_STATS=1)
        if(prog STREQUAL "osc_fence" OR prog STREQUAL "osc_pscw")
            # arrays of up to thousands of int32 accumulated by the window's
            # rule: several elements per ofi atomic (atomic_op_n; one per
            # element took osc_fence from 0.9 to 5.9 s), on every rank
            set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION " rma=0 | amos_n=0 ")
        elseif(NOT prog STREQUAL "osc_atomic")
            set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION " rma=0 ")
        else()
            # every rank's accumulates go to ofi's atomics (the window's rule)
            set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION " amos=0 ")
        endif()
    endif()
endforeach()
# Not over sockets (which applies atomics from its own thread; the rule's
# osc_atomic passes there, 4/4 by hand): sockets loses a message at finalize
# now and then with or without the rule (1 of 4 runs with
# BM_MPI_OSC_BTL_ATOMICS=off, src/btl/ofi/README.md "Not done").
