# MPI_THREAD_MULTIPLE: mt_stress (tests/mpi/mt_stress.c) with 4 and 8 threads per
# rank over self+sm (with concurrent MPI_Comm_dup), and 4 over tcp; under the ThreadSanitizer preset
# (make tsan) the same programs run with the label tsan.
set(mt_dir ${CMAKE_CURRENT_LIST_DIR})
add_executable(mt_stress ${mt_dir}/mt_stress.c)
target_link_libraries(mt_stress PRIVATE bitmover bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_stress_np2 TARGET mt_stress NP 2 BTL self,sm TIMEOUT 120
    LABELS mpi mt tsan ARGS -d)
bm_add_mpi_test(mt_stress_np3_tcp TARGET mt_stress NP 3 BTL self,tcp TIMEOUT 120
    LABELS mpi mt tsan ARGS -t 4 -i 20)
# The issue's upper end: 8 threads per rank, each duplicating its communicator.
bm_add_mpi_test(mt_stress_np2_t8 TARGET mt_stress NP 2 BTL self,sm TIMEOUT 120
    LABELS mpi mt tsan ARGS -t 8 -i 20 -d)

# The progress thread: asynchronous progress outside MPI calls and its idle
# CPU cost over sm, tcp and dgram (ofi's is in tests/fault/ofi.cmake), each
# sleeping on its own wait object; sleeping waits (BM_PML_WAIT_MODE=block).
add_executable(mt_progress ${mt_dir}/mt_progress.c)
target_link_libraries(mt_progress PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_progress_sm TARGET mt_progress NP 2 BTL self,sm TIMEOUT 120
    LABELS mpi mt ENV BM_PML_PROGRESS_THREAD=1)
bm_add_mpi_test(mt_progress_tcp TARGET mt_progress NP 2 BTL self,tcp TIMEOUT 120
    LABELS mpi mt ENV BM_PML_PROGRESS_THREAD=1)
bm_add_mpi_test(mt_progress_dgram TARGET mt_progress NP 2 BTL self,dgram TIMEOUT 120
    LABELS mpi mt ENV BM_PML_PROGRESS_THREAD=1)
bm_add_mpi_test(mt_block_np4 TARGET mt_progress NP 4 BTL self,sm TIMEOUT 120
    LABELS mpi mt ARGS -b ENV BM_PML_WAIT_MODE=block BM_MPI_COLL_BARRIER_ALG=sm)

# The automatic wait under MPI_THREAD_MULTIPLE: spin-then-block on a host with a
# CPU per rank (50 us, then a sleep), at once with BM_PML_WAIT_MODE=block.
add_executable(mt_spin_block ${mt_dir}/mt_spin_block.c)
target_link_libraries(mt_spin_block PRIVATE bitmover_internal bm_test_harness)
bm_add_mpi_test(mt_spin_block_np2 TARGET mt_spin_block NP 2 BTL self,sm TIMEOUT 60 LABELS mpi mt)
bm_add_mpi_test(mt_spin_block_block_np2 TARGET mt_spin_block NP 2 BTL self,sm TIMEOUT 60
    LABELS mpi mt ARGS -z ENV BM_PML_WAIT_MODE=block)

# Deferred send starts: a rendezvous MPI_Isend of a thread that finds the
# progress lock taken returns at once and is started by the lock's holder.
add_executable(mt_defer ${mt_dir}/mt_defer.c)
target_link_libraries(mt_defer PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_defer_np2 TARGET mt_defer NP 2 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan
    ENV BM_PML_RGET_PUT_MIN=1m)

# Per-context and per-peer locking: two threads' small sends to different
# peers (or on different communicators) take no common lock, counted with
# the lock trace of BM_PML_STATS (not timed).
add_executable(mt_locks ${mt_dir}/mt_locks.c)
target_link_libraries(mt_locks PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_locks_np3 TARGET mt_locks NP 3 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan
    ENV BM_PML_STATS=1 BM_BTL_SM_FBOX_AFTER=0)
# The same over tcp (no sendi: the PML's direct sends and tcp's endpoint locks).
bm_add_mpi_test(mt_locks_tcp_np3 TARGET mt_locks NP 3 BTL self,tcp TIMEOUT 60 LABELS mpi mt tsan
    ARGS tcp ENV BM_PML_STATS=1)

# Rendezvous starts without the progress lock: two threads of rank 0 inside
# a rendezvous start at once (counted; the PML's test hook holds the first),
# to different peers over tcp (RNDV), sm (RGET; getv: RGETs of a non-contiguous
# layout) and ofi (tests/fault/ofi.cmake: RGETs that register).
add_executable(mt_rndv ${mt_dir}/mt_rndv.c)
target_link_libraries(mt_rndv PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_rndv_tcp_np3 TARGET mt_rndv NP 3 BTL self,tcp TIMEOUT 60 LABELS mpi mt tsan)
bm_add_mpi_test(mt_rndv_np3 TARGET mt_rndv NP 3 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan ARGS rget)
bm_add_mpi_test(mt_rndv_getv_np3 TARGET mt_rndv NP 3 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan ARGS getv)
# sm RGETs under BM_PML_RGET_PUT_MIN (rdma.c rget_alone's per-peer record, an
# atomic word): they were deferred to the progress lock's holder.
bm_add_mpi_test(mt_rndv_small_np3 TARGET mt_rndv NP 3 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan
    ARGS rget ENV BM_PML_RGET_PUT_MIN=1m)
add_executable(mt_frags ${mt_dir}/mt_frags.c)
target_link_libraries(mt_frags PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_frags_tcp_np3 TARGET mt_frags NP 3 BTL self,tcp TIMEOUT 60 LABELS mpi mt tsan)
bm_add_mpi_test(mt_frags_np3 TARGET mt_frags NP 3 BTL self,sm TIMEOUT 60 LABELS mpi mt tsan ARGS vector)
# A per-peer send's completion and free need no progress lock: MPI_Wait of a
# completed one returns while another thread holds that lock.
add_executable(mt_txfree ${mt_dir}/mt_txfree.c)
target_link_libraries(mt_txfree PRIVATE bitmover_internal bm_test_harness Threads::Threads)
bm_add_mpi_test(mt_txfree_tcp_np2 TARGET mt_txfree NP 2 BTL self,tcp TIMEOUT 60 LABELS mpi mt tsan)
