/* Shared-memory collectives for communicators whose ranks all run on one
 * host and reach each other through shared memory: a segment per
 * communicator (util/shmseg) where each rank has, per parity of the
 * operation number, a slot whose first cache line holds a sequence flag and
 * the first bytes of data, and a "done" line. A blocking barrier, or a
 * broadcast, reduce, allreduce, gather, scatter, allgather or alltoall that
 * fits a slot, is then a few cache-line transfers and one copy in and one
 * out, instead of messages through the point-to-point layer (matching,
 * requests, the transport's queue):
 *   - operation k publishes a rank's data in its slot k % 2, then its flag
 *     (a release store of k); readers wait for the flag (acquire) and read;
 *   - each rank stores k in its done line when it has read what it needed;
 *     before writing slot k % 2 again (operation k + 2), a rank waits until
 *     every done line says k: with two parities that wait almost never
 *     blocks (finishing operation k + 1 required everyone to have come back
 *     from operation k);
 *   - reductions combine the slots in rank order (s0 op (s1 op (... s[n-1])))
 *     on every rank, so results are identical everywhere and
 *     non-commutative operations see rank order;
 *   - gather and allgather: each rank's block in its slot; alltoall: a rank's
 *     blocks for every rank in its slot (block_in_slot); scatter: the
 *     root's slot holds the blocks for every rank, or when they do not fit
 *     the root writes each rank's block into that rank's slot (the one
 *     writer of slot k % 2 in operation k) and publishes its own flag;
 *   - data is packed into the slots (MPI_CHAR here, a vector type there:
 *     only the packed sizes must match), copied as it is when the type is
 *     contiguous.
 * The segment is set up at the first eligible call, collectively: every
 * rank judges (all peers on shared memory), the ranks agree with an
 * allreduce, rank 0 creates the segment, the others attach, and everyone
 * agrees again that all attached; any failure leaves the communicator on
 * the point-to-point algorithms. While waiting, ranks poll the PML now and
 * then, so point-to-point traffic that a peer waits on keeps moving, and
 * give their core away when the host has more ranks than cores. Data of
 * BM_MPI_COLL_SM_COPY_MIN bytes per slot and more (beyond the slot too)
 * stays in its writer's buffer and the readers read it by single copy
 * through the transport's get (see "single copy" below), where every rank
 * can; larger data otherwise uses the point-to-point schedules. */
#define BM_LOG_SUBSYS "coll"
#include "util/log.h"

#include "btl/btl.h"
#include "mpi/coll.h"
#include "pml/pml.h"
#include "runtime/rte.h"
#include "util/clock.h"
#include "util/mem.h"
#include "util/shmseg.h"
#include "util/xproc.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LINE               128 /* a cache line pair: no false sharing with the prefetched neighbour */
#define POLLS_PER_PROGRESS 16
/* Where this rank has its own core (and does not sleep): a poll that finds
 * the flag's line unchanged costs a nanosecond or two, a PML progress call
 * tens, so the flag's change was often seen only after one. Every 256 polls
 * the PML still runs about every microsecond of a wait. 2 ranks, bm_coll, 8
 * interleaved rounds (load 14, others' builds), medians, 16 -> 256: bcast
 * 256 B 0.229 -> 0.204 us, 2 KiB 0.499 -> 0.465, 4 KiB 0.609 -> 0.588;
 * scatter 256 B 0.244 -> 0.221, 2 KiB 0.702 -> 0.624; barrier 0.197 ->
 * 0.178; allreduce, gather, allgather 8 B-2 KiB within noise. A power of
 * two (a mask, not a division, in the loop). */
#define POLLS_PER_PROGRESS_OWN 256
/* The flag, padded so that a slot's data is aligned for every type a reduction
 * reads in place (long double and complex long double need 16). */
#define DATA_OFF 16
/* Bytes of each of the two staging buffers of single-copy operations (the
 * chunk a reduction combines at a time, or a non-contiguous block is
 * unpacked from): smaller chunks lose (2 ranks, reduce 256 KiB: 16 KiB
 * chunks 22.5 us, 64 KiB 14.6, 256 KiB 13.3). */
#define COPY_TMP (256 * 1024)

struct bm_coll_sm {
    struct bm_util_shmseg seg;
    int n, me;
    uint64_t op; /* operations this rank has started on the segment */
    size_t slot; /* bytes of a slot (flag line included) */
    char *slots; /* [parity][rank] */
    char *done;  /* [rank] lines */
    /* the segment's last line: how many ranks sleep on a flag (block) */
    _Atomic uint32_t *sleepers;
    /* This rank's waits sleep (BM_PML_WAIT_MODE=block: its own choice), and
     * stores ring: some rank of the communicator sleeps (agreed at set-up,
     * so that a rank that does not sleep still wakes those that do). */
    bool sleeps, rings;
    /* The PML's wait settings, fixed at MPI_Init, as the waits here use
     * them (sm_setup): ranks share cores (sharing_cores), a wait gives its
     * core away (sharing, not BM_PML_WAIT_MODE=spin), and the polls
     * between two PML progress calls (a power of two). Looked up once
     * instead of in every wait and call: two calls into the PML each. */
    bool sharing, yields;
    unsigned every;
    int *world; /* the ranks' MPI_COMM_WORLD ranks (wake-ups, liveness checks) */
    /* A rank found gone during a wait (peers_gone): its rank here and the
     * status (BM_OK: none). Every wait then ends at once and every
     * operation on the segment fails. */
    int gone;
    bm_status_t gone_why;
    uint64_t live_next; /* when a long wait next looks at the peers (ns) */
    /* Single copy: per rank, the transport path whose get reads that
     * rank's memory (all ranks agreed that every one has one), and two
     * private staging buffers of COPY_TMP bytes (made at the first use). */
    bool copy_ok;
    struct bm_pml_rma_path *paths;
    char *tmp;
    /* The large area (see "large data on shared cores" below): a second
     * segment of [parity][rank] slots of large_slot bytes each (0: none
     * yet), which the operation in progress uses instead of the slots'
     * data when in_large says so (the flags stay in the slots). Only the
     * first large_ready bytes of each slot have their pages (taken as the
     * calls grow; the same on every rank). */
    struct bm_util_shmseg large_seg;
    char *large;
    size_t large_slot;
    size_t large_ready;
    size_t large_refused; /* the smallest slot whose area could not be made (0: none) */
    bool in_large;
    /* lines of this rank's slot that its next operation of a parity
     * writes (claim_next), to take for writing during a wait */
    const char *claim;
    unsigned claim_lines;
    /* per rank, the highest value seen in its done line: a rank that is
     * known to be done with operation k - 2 needs no look (a cache line
     * transfer) before operation k writes */
    uint64_t seen[];
};

enum { SM_UNKNOWN = 0, SM_ON, SM_OFF };

static _Atomic uint64_t *flag_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    return (_Atomic uint64_t *)(void *)(sm->slots +
                                        ((k & 1) * (size_t)sm->n + (size_t)r) * sm->slot);
}

/* Where rank r's data of operation k starts (after its padded flag, or in
 * the large area). */
static char *data_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    if (sm->in_large)
        return sm->large + ((k & 1) * (size_t)sm->n + (size_t)r) * sm->large_slot;
    return (char *)flag_of(sm, k, r) + DATA_OFF;
}

/* Bytes of data a slot of the operation in progress holds. */
static size_t room_of(const struct bm_coll_sm *sm)
{
    return sm->in_large ? sm->large_ready : sm->slot - DATA_OFF;
}

static _Atomic uint64_t *done_of(const struct bm_coll_sm *sm, int r)
{
    return (_Atomic uint64_t *)(void *)(sm->done + (size_t)r * LINE);
}

/* Rank r's failure words for operations of k's parity, after its done
 * word in the same line: the operation (k) when r's part of a single-copy
 * operation failed, and the failure (bm_status_t). See "single copy". */
static _Atomic uint64_t *fail_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    return done_of(sm, r) + 1 + (k & 1);
}

static _Atomic uint64_t *fail_why_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    return done_of(sm, r) + 3 + (k & 1);
}

size_t bm_coll_sm_capacity(const struct bm_mpi_coll_comm *cc)
{
    return cc->sm_state == SM_ON ? cc->sm->slot - DATA_OFF : 0;
}

/* Whether ranks share cores (the job oversubscribes this host, or a rank
 * of it was told to yield when idle: namespaces standing for hosts share
 * the cores) is asked of bm_pml_host_shares_cores, as every rank of the
 * host sees it, never of this rank's own setting: where the data goes
 * (area_step) and how a barrier's ranks wait must be the same on every
 * rank. */

bool bm_coll_sm_can_copy(const struct bm_mpi_coll_comm *cc)
{
    return cc->sm_state == SM_ON && cc->sm->copy_ok;
}

/* BM_PML_WAIT_MODE=block: a wait that polled SLEEP_POLLS times sleeps in
 * the kernel until the flag's writer stores it, at most SLEEP_MAX_NS (a
 * wake-up that did not come). Whether a rank sleeps is its own choice
 * (its wait mode, MPI_THREAD_MULTIPLE under auto): the set-up agrees
 * whether any rank of the communicator does, and then every rank's
 * stores ring, also those of ranks that never sleep (mixed thread levels:
 * a sleeper otherwise waited out its 1 ms for each of their flags). It
 * sleeps in the PML's sleep (bm_pml_sleep: epoll on the transports'
 * descriptors), not on a futex of its own: a rank asleep in a barrier must
 * still serve what its transports bring, the passive-target one-sided
 * requests above all, which only its progress carries out. On a futex that
 * only the flag's writer woke, every lock, put or get sent to a rank
 * waiting in MPI_Barrier waited for the end of its 1 ms sleep (MPICH's
 * rma_contig -iter=100, 2 ranks: 11.8 s against 1.8 s with the
 * point-to-point barrier, whose waits sleep in the PML). The sleeper notes
 * in its sleep word (the second line of its done pair) which flag it
 * sleeps on; the writer, after its store and a full fence, sends an
 * active message to each rank asleep on that flag (the PML rings a
 * sleeping peer's doorbell for it; the handler does nothing). The
 * segment's sleeper count spares writers the look at every word while
 * nobody sleeps. Each side stores, fences, then loads the other's word, so
 * either the sleeper sees the flag or the writer sees the sleep word. */
#define SLEEP_POLLS  (4 * POLLS_PER_PROGRESS)
#define SLEEP_MAX_NS 1000000L

static _Atomic uint64_t *sleep_of(const struct bm_coll_sm *sm, int r)
{
    return (_Atomic uint64_t *)(void *)(sm->done + (size_t)r * LINE + 64);
}

/* 1 + f's offset in the segment: what a sleep word holds while its rank
 * sleeps on f. */
static uint64_t sleep_mark(const struct bm_coll_sm *sm, const _Atomic uint64_t *f)
{
    return (uint64_t)((const char *)f - (const char *)sm->seg.addr) + 1;
}

static void flag_sleep(struct bm_coll_sm *sm, _Atomic uint64_t *f, uint64_t k)
{
    _Atomic uint64_t *w = sleep_of(sm, sm->me);
    atomic_store_explicit(w, sleep_mark(sm, f), memory_order_seq_cst);
    atomic_fetch_add_explicit(sm->sleepers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(f, memory_order_seq_cst) < k) {
        bm_mpi_coll_count_alg(-1, BM_ALG_SM_SLEEP);
        if (bm_pml_sleep(SLEEP_MAX_NS) && atomic_load_explicit(f, memory_order_acquire) < k)
            bm_mpi_coll_count_alg(-1, BM_ALG_SM_SLEEP_WOKEN);
    }
    atomic_fetch_sub_explicit(sm->sleepers, 1, memory_order_relaxed);
    atomic_store_explicit(w, 0, memory_order_relaxed);
}

static void flag_ring(const struct bm_coll_sm *sm, _Atomic uint64_t *f)
{
    if (!sm->rings)
        return;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(sm->sleepers, memory_order_relaxed) == 0)
        return;
    uint64_t mark = sleep_mark(sm, f);
    for (int r = 0; r < sm->n; r++)
        if (r != sm->me && atomic_load_explicit(sleep_of(sm, r), memory_order_relaxed) == mark)
            bm_pml_am_sendv(sm->world[r], BM_PML_AM_COLL, NULL, 0);
}

/* BM_PML_AM_COLL: the wake-up itself is all (the sleeper looks at its
 * flag when its sleep ends). */
static void wake_am(int peer_world, const void *msg, size_t len, void *arg)
{
    (void)peer_world;
    (void)msg;
    (void)len;
    (void)arg;
}

/* Take lines for writing (the next store to them then finds them in this
 * core's cache, not shared with a reader's). */
static void claim_lines(const char *p, unsigned lines)
{
    for (unsigned i = 0; i < lines; i++)
        bm_util_prefetchw(p + 64 * i);
}

/* Polls of a wait before it claims the lines claim_next noted: by then the
 * stores of the operation just published have left this core. */
#define CLAIM_AFTER_POLLS 32

/* A reader of small data after a flag loads the data's lines beyond the
 * flag's, at most this many, while it polls the flag (wait_flag_data). */
#define TOUCH_LINES 3

/* Liveness. A rank that dies before it stores a flag (killed, aborted,
 * exited inside a collective) would leave every rank waiting on that flag
 * forever: no transport watches it, as nothing is outstanding to it. A
 * wait that has polled LIVE_POLLS times therefore asks the PML, at most
 * every LIVE_NS, whether each other rank is still there
 * (bm_pml_peer_check: sm looks whether its process exists). A rank found
 * gone is a failed path: where it was the peer's last one the PML ends
 * the job at once, naming both ranks and hosts, as it does for
 * point-to-point traffic; otherwise (a standby transport still reaches
 * it) the wait ends, every later wait ends at once, and the operation and
 * every later one on the segment return the failure through the
 * communicator's error handler (bm_coll_sm_run). A wait shorter than
 * LIVE_POLLS polls pays nothing; a longer one a clock read per PML
 * progress call. */
#define LIVE_POLLS 4096
#define LIVE_NS    100000000ull

static __attribute__((noinline, cold)) bool peers_gone(struct bm_coll_sm *sm)
{
    uint64_t now = bm_util_clock_now_ns();

    if (now < sm->live_next)
        return false;
    sm->live_next = now + LIVE_NS;
    for (int r = 0; r < sm->n; r++) {
        bm_status_t why;
        if (r != sm->me && (why = bm_pml_peer_check(sm->world[r])) != BM_OK) {
            sm->gone = r;
            sm->gone_why = why;
            return true;
        }
    }
    return false;
}

/* Whether a wait that has polled polls times ends for a gone rank. */
static inline bool wait_ends(struct bm_coll_sm *sm, unsigned polls)
{
    return __builtin_expect(sm->gone_why != BM_OK, 0) || (polls >= LIVE_POLLS && peers_gone(sm));
}

/* Wait until *f >= k, polling the PML now and then. While it polls, the
 * lines [touch, touch + lines * 64) are loaded too (lines <= TOUCH_LINES;
 * 0: none): the reader's data beyond the flag's line, which then comes with
 * the flag instead of one line transfer after it. */
static inline __attribute__((always_inline)) void wait_for_lines(struct bm_coll_sm *sm,
                                                                 _Atomic uint64_t *f, uint64_t k,
                                                                 const char *touch, unsigned lines)
{
    unsigned polls = 0;
    /* BM_PML_WAIT_MODE=spin means spin, also here. */
    bool over = sm->yields;
    unsigned every = sm->every;

    while (atomic_load_explicit(f, memory_order_acquire) < k) {
        for (unsigned i = 0; i < lines; i++)
            (void)*(const volatile char *)(touch + 64 * i);
        if (polls == CLAIM_AFTER_POLLS && sm->claim_lines > 0) {
            claim_lines(sm->claim, sm->claim_lines);
            sm->claim_lines = 0;
        }
        if ((++polls & (every - 1)) == 0) {
            bm_pml_progress();
            if (wait_ends(sm, polls))
                break;
            /* Block: sleep until the flag is set. Otherwise, more ranks
             * than cores on this host: the rank that sets the flag may be
             * waiting for this core. Give it away at once, as Open MPI's
             * yield_when_idle does at every idle progress call (the PML's
             * own idle yield comes only after 64 idle calls, 1024 polls
             * here: 2.2x Open MPI's 4-rank barrier). */
            if (sm->sleeps && polls >= SLEEP_POLLS)
                flag_sleep(sm, f, k);
            else if (over)
                sched_yield();
        }
    }
}

/* (The loop without lines to load compiles as it did before them: polling
 * with the empty loop in it made allgather and allreduce of 8-512 B 5-27%
 * slower, 2 ranks, 5 interleaved rounds.) */
static void wait_for(struct bm_coll_sm *sm, _Atomic uint64_t *f, uint64_t k)
{
    wait_for_lines(sm, f, k, NULL, 0);
}

static void wait_for_touching(struct bm_coll_sm *sm, _Atomic uint64_t *f, uint64_t k,
                              const char *touch, unsigned lines)
{
    wait_for_lines(sm, f, k, touch, lines);
}

/* Operation k may write slot k % 2: everyone is done with operation k - 2. */
static void may_write(struct bm_coll_sm *sm, uint64_t k)
{
    if (k < 2)
        return;
    for (int r = 0; r < sm->n; r++)
        if (r != sm->me && sm->seen[r] < k - 2) {
            wait_for(sm, done_of(sm, r), k - 2);
            sm->seen[r] = atomic_load_explicit(done_of(sm, r), memory_order_acquire);
            bm_util_xproc_acquire();
        }
}

/* Rank r published operation k, so it is done with k - 1 (see below). */
static inline void flag_seen(struct bm_coll_sm *sm, uint64_t k, int r)
{
    bm_util_xproc_acquire(); /* ThreadSanitizer: a flag of another process seen */
    if (sm->seen[r] < k - 1)
        sm->seen[r] = k - 1;
}

/* Wait for rank r's flag of operation k, as a reader of len bytes at p
 * that r publishes with it (len 0: none). A rank publishes operation k only
 * after it is done with k - 1 (its reads of k - 1 come before that release
 * store): remember it, so that may_write and await_done need not fetch its
 * done line (a cache-line transfer on the critical path of a small rooted
 * collective that follows a barrier).
 * Data that ends within TOUCH_LINES lines after the flag's line (up to 240
 * bytes from the slot's data) is loaded while the flag is polled:
 * the writer's stores then reach this rank with the flag, in parallel,
 * instead of a line at a time after it. 2 ranks, one per core, bm_coll
 * (the mean over the ranks), 5 interleaved rounds, medians: scatter 64 B
 * 0.205 -> 0.183 us, 128 B 0.241 -> 0.175; bcast 64 B 0.196 -> 0.165, 128 B
 * 0.211 -> 0.156 (MPICH quiet: scatter 64 B 0.21, bcast 64-128 B
 * 0.27-0.30); gather 64 B 0.204 -> 0.174, reduce 64-128 B -12-14%,
 * alltoall 64 B 0.316-0.359 -> 0.237-0.247. Loading more lines (8-32) lost
 * from 512 B up (the reader pulls lines the writer is still writing): 1 KiB
 * 0.34 -> 0.44-0.50 us, 2 KiB 0.47-0.51 -> 0.57-0.81. Allgather (64-128 B
 * 0.34-0.35 -> 0.41-0.44) and allreduce (no change) keep wait_flag: why
 * allgather loses while alltoall, the same exchange at 2 ranks, gains was
 * not found. Even so allgather of 16-512 B measured 5-15% slower with this
 * change than without in most of 4 A/B runs (its code is unchanged; the
 * library's layout is not): not explained. Not where ranks share cores
 * (the writer does not run while this rank polls). */
static void wait_flag_data(struct bm_coll_sm *sm, uint64_t k, int r, const void *p, size_t len)
{
    _Atomic uint64_t *f = flag_of(sm, k, r);
    uintptr_t first = (uintptr_t)f / 64 + 1, last = 0;
    unsigned lines = 0;

    if (len > 0 && !sm->sharing) {
        last = ((uintptr_t)p + len - 1) / 64;
        if ((uintptr_t)p / 64 > first)
            first = (uintptr_t)p / 64;
        if (last >= first && last - first < TOUCH_LINES)
            lines = (unsigned)(last - first + 1);
    }
    if (lines > 0)
        wait_for_touching(sm, f, k, (const char *)(first * 64), lines);
    else
        wait_for(sm, f, k);
    flag_seen(sm, k, r);
}

static void wait_flag(struct bm_coll_sm *sm, uint64_t k, int r)
{
    wait_for(sm, flag_of(sm, k, r), k);
    flag_seen(sm, k, r);
}

static void publish(const struct bm_coll_sm *sm, uint64_t k)
{
    bm_util_xproc_release();
    atomic_store_explicit(flag_of(sm, k, sm->me), k, memory_order_release);
    flag_ring(sm, flag_of(sm, k, sm->me));
}

static void finish(struct bm_coll_sm *sm, uint64_t k)
{
    bm_util_xproc_release();
    atomic_store_explicit(done_of(sm, sm->me), k, memory_order_release);
    flag_ring(sm, done_of(sm, sm->me));
}

/* ---- set-up ------------------------------------------------------------------------ */

static void sm_cleanup_at_exit(void *arg)
{
    (void)arg;
    bm_util_shmseg_cleanup();
}

static bool all_agree(MPI_Comm comm, int mine, const char *fn)
{
    int all = mine;
    if (bm_mpi_coll_allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm, fn) != MPI_SUCCESS)
        return false;
    return all != 0;
}

/* The set-up's first agreement: whether every rank can (mine), and
 * whether any rank's waits sleep (*any_sleeps: then every rank's stores
 * ring, see flag_ring), in one allreduce. */
static bool agree_setup(MPI_Comm comm, bool mine, bool *any_sleeps, const char *fn)
{
    int v[2] = {mine, !bm_pml_wait_blocks()};

    if (bm_mpi_coll_allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, comm, fn) != MPI_SUCCESS)
        return false;
    *any_sleeps = v[1] == 0;
    return v[0] != 0;
}

/* Whether this rank can read and write every other rank's memory with a
 * transport's get and put that need no registration (sm's
 * process_vm_readv/writev), and a slot holds
 * an address per rank beside a rank's staging room; sm->paths then says
 * through what. */
static bool copy_paths(MPI_Comm comm, struct bm_coll_sm *sm)
{
    if ((size_t)comm->size * sizeof(uint64_t) > (sm->slot - DATA_OFF) / 2)
        return false;
    sm->paths = calloc((size_t)comm->size, sizeof(*sm->paths));
    if (sm->paths == NULL)
        return false;
    for (int r = 0; r < comm->size; r++) {
        struct bm_pml_rma_path paths[8];
        int np;
        bool found = false;
        if (r == comm->rank)
            continue;
        np = bm_pml_rma_paths(bm_mpi_comm_world_rank(comm, r), paths, 8);
        for (int i = 0; i < np && !found; i++) {
            const struct bm_btl_module *m = paths[i].module;
            if ((m->caps & BM_BTL_CAP_GET) && (m->caps & BM_BTL_CAP_PUT) &&
                m->reg_handle_size == 0 && m->get_limit > 0 && m->get_alignment <= 1 &&
                m->put_limit > 0 && m->put_alignment <= 1) {
                sm->paths[r] = paths[i];
                found = true;
            }
        }
        if (!found)
            return false;
    }
    return true;
}

/* Write the first word of every page of a new segment (zero, as it is).
 * A page of the segment that a rank touched first in the middle of its
 * collectives stalled that rank: 2 ranks, bm_coll's loop (bcast, barrier)
 * after one extra bcast, so that the barrier's flags move to the other
 * parity, where rank 1's flag line had never been written: the root's
 * barrier then took 5 us to 3.8 ms instead of 0.3 (6 runs, one page
 * fault, no context switch: the stall is the fault's, this machine being
 * a virtual one whose host backs a page when it is first touched). That
 * happens in every bm_coll run, at its first size (the warm-up's end
 * broadcasts the iteration count): the reader's mean of 1000 calls of an 8
 * B bcast read 0.77 us instead of 0.19 in one of the quiet runs, 0.53-2.1
 * us in 2 of 6 here. Every rank writes every page once at set-up: each
 * rank's page tables then hold them all, and the host has backed them. */
static bool prefault(char *base, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);

    /* The same in one call (Linux 5.14 and later): the kernel fills this
     * rank's page tables without a fault per page. The large area (16 MiB:
     * 4096 pages per rank) made coll_check at 9 ranks take 30k more page
     * faults than its 2.3 MiB area before; a fault is a trap to the host
     * here. Where the pages were not reserved (the large area's), a full
     * /dev/shm fails it (ENOMEM, or EFAULT: a touch would have had
     * SIGBUS), nothing written: false. Older kernels, or another failure
     * (the pages stay as they are), get the page-by-page touches: an add
     * of 0, which keeps what a page holds (a page of the large area being
     * added may begin with data a rank is reading). */
    if (madvise(base, bytes, MADV_POPULATE_WRITE) == 0)
        return true;
    if (errno == ENOMEM || errno == EFAULT)
        return false;
    if (page < (long)sizeof(uint64_t))
        page = 4096;
    for (size_t off = 0; off < bytes; off += (size_t)page)
        atomic_fetch_add_explicit((_Atomic uint64_t *)(void *)(base + off), 0,
                                  memory_order_relaxed);
    return true;
}

/* Collective over comm: rank 0 creates a shared-memory segment of bytes
 * (what names it in /dev/shm), the others attach to it; true, with *seg
 * mapped on every rank, when all did. Its name is removed once all have
 * mapped it (the exit hook removes it should the job die before). Every
 * page is touched by every rank before any uses it (prefault), except in a
 * holed segment: its pages are neither reserved nor touched here, and take
 * memory only when a rank gives them to itself (large_take). */
static bool make_segment(MPI_Comm comm, const char *what, size_t bytes, bool holed,
                         struct bm_util_shmseg *seg, const char *fn)
{
    /* Threads of a MPI_THREAD_MULTIPLE program create communicators at once:
     * each segment takes its own number, and the exit hook is registered once. */
    static atomic_bool cleanup_registered;
    static atomic_uint serial;
    char name[BM_UTIL_SHMSEG_NAME_MAX] = "";
    bool ok = false;

    if (comm->rank == 0) {
        char id[64];
        /* unique in the job: disjoint communicators may share a context id */
        snprintf(id, sizeof(id), "%s-%d-%u", what, bm_mpi_comm_world_rank(comm, 0),
                 atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed));
        name[0] = '/';
        ok = bm_rte_job_name(id, name + 1, sizeof(name) - 1) == BM_OK &&
             (holed ? bm_util_shmseg_create_holed(seg, name, bytes, 0, bytes)
                    : bm_util_shmseg_create(seg, name, bytes)) == BM_OK;
        if (!ok)
            name[0] = '\0';
        else if (!atomic_exchange(&cleanup_registered, true))
            bm_rte_at_exit(sm_cleanup_at_exit, NULL);
    }
    if (bm_mpi_coll_bcast(name, sizeof(name), 0, comm, fn) != MPI_SUCCESS)
        name[0] = '\0';
    if (comm->rank != 0)
        ok = name[0] && bm_util_shmseg_attach(seg, name, bytes) == BM_OK;
    if (!all_agree(comm, ok, fn)) {
        if (ok)
            bm_util_shmseg_detach(seg);
        return false;
    }
    if (comm->rank == 0)
        bm_util_shmseg_unlink(seg);
    if (holed)
        return true;
    prefault(seg->addr, bytes);
    if (!all_agree(comm, true, fn)) {
        bm_util_shmseg_detach(seg);
        return false;
    }
    return true;
}

/* Collective over comm: make the segment, or decide the communicator stays
 * on the point-to-point algorithms. */
static void sm_setup(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    struct bm_coll_sm *sm;
    bool ok = comm->size >= 2 && !comm->inter && c->sm_slot > 0, rings = false;
    size_t slot = (c->sm_slot + DATA_OFF + LINE - 1) / LINE * LINE, bytes;

    cc->sm_state = SM_OFF;
    for (int r = 0; r < comm->size && ok; r++)
        ok = bm_pml_peer_on_shm(bm_mpi_comm_world_rank(comm, r));
    sm = ok ? calloc(1, sizeof(*sm) + (size_t)comm->size * sizeof(uint64_t)) : NULL;
    if (sm && !(sm->world = malloc((size_t)comm->size * sizeof(*sm->world)))) {
        free(sm);
        sm = NULL;
    }
    if (!agree_setup(comm, sm != NULL, &rings, fn)) {
        if (sm)
            free(sm->world);
        free(sm);
        return;
    }
    bytes = 2 * (size_t)comm->size * slot + ((size_t)comm->size + 1) * LINE;
    if (!make_segment(comm, "coll", bytes, false, &sm->seg, fn)) {
        free(sm->world);
        free(sm);
        return;
    }
    sm->n = comm->size;
    sm->me = comm->rank;
    sm->slot = slot;
    sm->slots = sm->seg.addr;
    sm->done = (char *)sm->seg.addr + 2 * (size_t)comm->size * slot;
    sm->sleepers = (_Atomic uint32_t *)(void *)(sm->done + (size_t)comm->size * LINE);
    sm->sleeps = bm_pml_wait_blocks();
    sm->rings = rings;
    sm->gone = -1;
    sm->gone_why = BM_OK;
    for (int r = 0; r < comm->size; r++)
        sm->world[r] = bm_mpi_comm_world_rank(comm, r);
    if (sm->rings)
        bm_pml_am_register(BM_PML_AM_COLL, wake_am, NULL);
    sm->sharing = bm_pml_host_shares_cores();
    sm->yields = sm->sharing && !bm_pml_wait_spins();
    sm->every = sm->sharing || sm->sleeps ? POLLS_PER_PROGRESS : POLLS_PER_PROGRESS_OWN;
    sm->copy_ok = all_agree(comm, copy_paths(comm, sm), fn);
    cc->sm = sm;
    cc->sm_state = SM_ON;
    bm_log_debug("communicator %s: %d ranks share a %zu-byte collective segment",
                 bm_mpi_comm_label(comm), comm->size, bytes);
}

bool bm_coll_sm_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn)
{
    if (cc->sm_state == SM_UNKNOWN)
        sm_setup(comm, cc, fn);
    return cc->sm_state == SM_ON;
}

void bm_coll_sm_free(struct bm_mpi_coll_comm *cc)
{
    if (cc->sm) {
        if (cc->sm->large)
            bm_util_shmseg_detach(&cc->sm->large_seg);
        bm_util_shmseg_detach(&cc->sm->seg);
        free(cc->sm->paths);
        free(cc->sm->tmp);
        free(cc->sm->world);
        free(cc->sm);
        cc->sm = NULL;
    }
    cc->sm_state = SM_UNKNOWN;
}

/* ---- large data on shared cores ------------------------------------------------------ */

/* Where ranks share cores (an oversubscribed host, or BM_PML_IDLE_YIELD),
 * data too large for a slot would go through point-to-point messages whose
 * every rendezvous step waits for the peer's next time slice, and single
 * copy would keep each writer until its readers have had theirs. The large
 * area holds such data as the slots do: a writer copies its data in,
 * publishes its flag and leaves, as an eager send lets a sender leave, and
 * each reader copies out whenever it runs (4 ranks on 2 loaded cores,
 * nice -20, bcast 256 KiB: 11 us against 498 through the point-to-point
 * binomial tree and Open MPI's 45). It is a second segment of
 * [parity][rank] slots, made collectively at the first call that needs
 * it, at its full size: BM_MPI_COLL_SM_LARGE_MAX bytes in all (8 ranks:
 * slots of 1 MiB); larger data takes the point-to-point algorithms. The
 * operations and their flags are those of the slots: only where data_of
 * points changes.
 *
 * Made once, at its full size, never anew: a program whose sizes grow
 * (bm_coll's sweep) made the area anew at 256 KiB, 512 KiB and 1 MiB when
 * it was made at the size of the call, and with two CPU-bound processes on
 * the cores the calls after a remake took seconds (4 ranks on 2 cores, two
 * busy loops, bm_coll -m 256k:1m -t 0.15, 3 interleaved runs each, us per
 * call: bcast 512 KiB 40393-673777 and 1 MiB 920044-1372879, against
 * 24-12214 and 210-10076 made at full size; allgather 1 MiB
 * 1132708-1184577 against 3614-19029; Open MPI's yield-when-idle
 * 22683-78801 in the same minutes). The ranks were off their cores for up
 * to 2.5 s at a time (perf sched timehist: all of it runnable time lost to
 * sched_yield, 88-95% of their context switches). Why a remake leaves the
 * ranks starved this long under EEVDF was not found.
 *
 * But its pages come as the calls need them: the segment is a hole (no
 * /dev/shm reserved), and each slot's first large_ready bytes have their
 * pages, 4 x BM_MPI_COLL_SM_SLOT at first, doubled as calls need more. A
 * call that needs more gives every rank's mapping the pages of each slot up
 * to the new size (large_take: MADV_POPULATE_WRITE, which takes the pages
 * from /dev/shm and fills the rank's page tables, as prefault does for a
 * new segment) and the ranks agree that all got them; one that did not (a
 * full /dev/shm) leaves that size and larger to the point-to-point
 * algorithms, as before. Made whole, the area took its 16 MiB of /dev/shm
 * per communicator and 4096 page-table entries per rank at the first call
 * larger than a slot, whatever the sizes the program used. */

/* Give this rank's mapping the pages of bytes [from, to) of every slot of
 * the large area; false when the kernel had no memory for them. */
static bool large_take(struct bm_coll_sm *sm, size_t from, size_t to)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE),
              end = (uintptr_t)sm->large_seg.addr + sm->large_seg.size;
    bool ok = true;

    if (page == 0 || (page & (page - 1)) != 0)
        page = 4096;
    for (size_t i = 0; i < 2 * (size_t)sm->n && ok; i++) {
        uintptr_t lo = (uintptr_t)sm->large + i * sm->large_slot + from,
                  hi = (uintptr_t)sm->large + i * sm->large_slot + to;
        lo &= ~(page - 1);
        hi = (hi + page - 1) & ~(page - 1);
        if (hi > end)
            hi = end;
        if (hi > lo)
            ok = prefault((char *)lo, hi - lo);
    }
    return ok;
}

bool bm_coll_sm_large_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, size_t bytes,
                            const char *fn)
{
    const struct bm_mpi_coll_config *c = bm_mpi_coll_cfg();
    struct bm_coll_sm *sm = cc->sm;
    size_t max = c->sm_large_max / (2 * (size_t)sm->n) / LINE * LINE, want = 4 * c->sm_slot;
    struct bm_util_shmseg seg;

    if (bytes <= sm->large_ready)
        return true;
    if (bytes > max)
        return false;
    while (want < bytes)
        want *= 2;
    want = (want + LINE - 1) / LINE * LINE; /* data aligned as in the slots */
    if (want > max)
        want = max;
    if (sm->large_refused && want >= sm->large_refused)
        return false; /* tried (agreed) and failed: do not ask again */
    /* Every rank asks at the same calls (the sizes are the call's, agreed),
     * so all make the area together and all grow it together. */
    if (sm->large == NULL) {
        if (!make_segment(comm, "coll-large", 2 * (size_t)sm->n * max, true, &seg, fn)) {
            sm->large_refused = LINE; /* no size, ever */
            return false;
        }
        sm->large_seg = seg;
        sm->large = seg.addr;
        sm->large_slot = max;
    }
    /* Until all agreed, no rank uses the new part (no rank writes there
     * before it leaves all_agree, and every rank took its pages before it
     * entered); what the old part holds stays as it is. */
    if (!all_agree(comm, large_take(sm, sm->large_ready, want), fn)) {
        sm->large_refused = want;
        return false;
    }
    sm->large_ready = want;
    bm_log_debug("communicator %s: large collective area with %zu of %zu bytes per slot",
                 bm_mpi_comm_label(comm), want, max);
    return true;
}

/* ---- the operations ------------------------------------------------------------------- */

/* Blocks of a side: block i of count elements of dt at base (where
 * bm_coll_side_base says its data starts) packed into p, or unpacked from p. */
/* Data of at most LINE_COPY_MAX bytes goes into a slot a cache line at a
 * time. A slot's data starts 16 bytes into its flag's line, so memcpy's
 * overlapping 32-byte stores of 49-64 bytes include one that spans the flag's
 * line and the next, both of which the reader polls (wait_flag_data) and keeps
 * taking away. 2 ranks, bcast of 64 B, the reader's per-call median (10000
 * calls after a barrier each, load 31-36): 0.47-0.50 us in 4 runs of 15
 * (bcast, scatter) and 0.23-0.27 in the others before, 0.23-0.32 in all 15
 * with the lines apart (the writer: 0.053 -> 0.057 us). Larger
 * data (128-256 B) showed no such slow runs, and its extra calls cost the
 * writer 7-10 ns: left to memcpy. */
#define LINE_COPY_MAX 64

static void copy_by_line(char *dst, const char *src, size_t bytes)
{
    while (bytes > 0) {
        size_t n = 64 - (uintptr_t)dst % 64;
        if (n > bytes)
            n = bytes;
        memcpy(dst, src, n);
        dst += n;
        src += n;
        bytes -= n;
    }
}

static void block_put(char *p, const void *base, int i, int count, MPI_Datatype dt)
{
    const char *src = (const char *)base + (ptrdiff_t)i * count * dt->extent;
    size_t bytes = (size_t)count * dt->size;

    if (dt->contiguous && bytes <= LINE_COPY_MAX)
        copy_by_line(p, src, bytes);
    else if (dt->contiguous)
        memcpy(p, src, bytes);
    else
        bm_mpi_type_pack(dt, src, (size_t)count, 0, p, bytes);
}

static void block_get(void *base, int i, int count, MPI_Datatype dt, const char *p)
{
    char *dst = (char *)base + (ptrdiff_t)i * count * dt->extent;
    size_t bytes = (size_t)count * dt->size;

    if (dt->contiguous)
        memcpy(dst, p, bytes);
    else
        bm_mpi_type_unpack(dt, dst, (size_t)count, 0, p, bytes);
}

/* This rank's own block from one side to the other (the types may differ,
 * their packed sizes match): directly when either is contiguous, else
 * through tmp (this rank's own slot, which nobody reads in this operation
 * at the place given). */
static void block_copy(void *dbase, int di, int dcount, MPI_Datatype dtype, const void *sbase,
                       int si, int scount, MPI_Datatype stype, char *tmp)
{
    if (stype->contiguous) {
        block_get(dbase, di, dcount, dtype,
                  (const char *)sbase + (ptrdiff_t)si * scount * stype->extent);
    } else if (dtype->contiguous) {
        block_put((char *)dbase + (ptrdiff_t)di * dcount * dtype->extent, sbase, si, scount, stype);
    } else {
        block_put(tmp, sbase, si, scount, stype);
        block_get(dbase, di, dcount, dtype, tmp);
    }
}

/* Whether block_copy between these types needs its go-between (neither
 * side contiguous): the callers work out where it is only then (a root's
 * scatter of 64 B: 865 -> 777 instructions per call, callgrind). */
static bool copy_needs_tmp(MPI_Datatype dtype, MPI_Datatype stype)
{
    return !dtype->contiguous && !stype->contiguous;
}

/* Every rank publishes its arrival and waits for everyone's. When ranks
 * share cores, rank 0 alone waits for everyone and the others wait only
 * until rank 0 has seen everyone (its done line): rank 0 leaves first, so a
 * rooted collective that follows from rank 0 (bcast, scatter) has its data
 * out before the others come to look for it, instead of every rank waiting
 * for rank 0's next time slice; Open MPI's oversubscribed bcast after a
 * barrier behaves the same way. Rank 0's done line says that every rank
 * has published operation k, so is done with k - 1 (seen). The others no
 * longer also look at every flag before that line (one line to poll
 * instead of p): 4 ranks on 2 cores, each placement bound (taskset), 3
 * interleaved rounds, boosted autogroup at load 22, medians, every flag
 * -> rank 0's line (Open MPI): 0011 2.28 -> 1.98 us (2.70), 0101 2.18 ->
 * 2.15 (2.50), 0110 2.27 -> 2.11 (2.76), 0001 3.30 -> 3.43 (3.84), 0000
 * 4.97 -> 4.65 (5.73); a bcast or scatter of 8 B after it 0.13-0.17 us
 * either way (Open MPI 0.33-0.91). */
static void barrier(struct bm_coll_sm *sm)
{
    uint64_t k = ++sm->op;

    may_write(sm, k);
    publish(sm, k);
    if (sm->me != 0 && sm->sharing) {
        wait_for(sm, done_of(sm, 0), k);
        bm_util_xproc_acquire();
        for (int r = 0; r < sm->n; r++)
            if (sm->seen[r] < k - 1)
                sm->seen[r] = k - 1;
        sm->seen[0] = k;
    } else {
        for (int r = 0; r < sm->n; r++)
            if (r != sm->me)
                wait_flag(sm, k, r);
    }
    finish(sm, k);
}

/* ---- two write areas ------------------------------------------------------------------ */

/* A slot's data of AREA_MIN bytes and more that fits twice after the flag's
 * line goes to one of two line-aligned areas: operation k writes area
 * (k / 2) % 2 of slot k % 2, so two operations in a row on one slot use
 * different areas. After publishing, the writer notes the area its next
 * operation on that slot will write (claim_next), and its next wait on a
 * flag takes those lines for writing while it polls (claim_lines): no one
 * reads them then (their readers were done with operation k - 2 before
 * operation k could be written), and the readers' copies of them go then
 * instead of at the writer's next stores. Those stores had to take each
 * line back from the reader that read it last (a cache-line transfer per
 * line, more than the store buffer hides), and the flag behind them waited
 * for all of them: the reader of a 2 KiB bcast waited ~450 ns for the flag
 * and copied ~250 ns. 2 ranks, per-call medians of 20000 calls after a
 * barrier each (load 20, boosted, 2-3 interleaved rounds), reader before
 * -> after (the root 0.06-0.08 us either way): bcast 512 B 0.28-0.35 ->
 * 0.23-0.27 us, 1 KiB 0.49-0.52 -> 0.33, 2 KiB 0.77-0.93 -> 0.44, 4 KiB
 * 0.99 -> 0.62 (MPICH 2 KiB: root 0.26-0.30, reader 0.53-0.69). The
 * writers of allgather and alltoall slots do the same (every rank writes
 * its slot, and the others read it): bm_coll, 7 interleaved rounds, load
 * 26-27, boosted, medians, without -> with: allgather 512 B 0.346 ->
 * 0.269 us, 1 KiB 0.602 -> 0.404, 2 KiB 0.883 -> 0.615, 4 KiB 1.257 ->
 * 0.802 (MPICH 1.261: the quiet runs' 0.95x point); alltoall 512 B 0.320
 * -> 0.270, 1 KiB 0.519 -> 0.364, 2 KiB 0.763 -> 0.604 (MPICH 0.80-1.10).
 * Not where ranks share cores (the wait yields the core at once; those
 * paths were tuned without it). */
#define AREA_MIN 512

/* The bytes between the two areas' starts, or 0: one place (data_of). */
static size_t area_step(const struct bm_coll_sm *sm, size_t bytes)
{
    size_t step = (bytes + 63) / 64 * 64;

    if (sm->in_large || bytes < AREA_MIN || sm->sharing || (64 - DATA_OFF) + 2 * step > room_of(sm))
        return 0;
    return step;
}

/* Small data whose first block (the one a reader finds first) would lie
 * across the flag's line and the next (a block of 49-64 bytes after the
 * 16-byte flag) starts at the next line instead: that block is then one
 * whole line, written by one store, beside the flag's line, instead of
 * parts of two lines that the writer's stores and the reader's polls
 * (wait_flag_data loads both) take from each other in turn. The reader
 * still needs two lines; blocks of 65 bytes and more gained nothing
 * measurable this way (128-256 B: within noise) and keep their place. 2
 * ranks, bm_coll, 7-9 interleaved rounds, boosted, load 11-16, medians of
 * 64 B before -> after (three runs for scatter): scatter 0.192 -> 0.183,
 * 0.206 -> 0.190, 0.215 -> 0.191 us (MPICH 0.208-0.234); alltoall 0.305 ->
 * 0.250, 0.298 -> 0.238; gather 0.199 -> 0.165, 0.185 -> 0.178; reduce
 * 0.190 -> 0.184; allreduce 0.255 -> 0.245; bcast and allgather unchanged
 * (0.184/0.186, 0.254/0.250); 32 and 128 B, whose code is the same, within
 * noise. The root of a 64 B scatter: 853 -> 865 instructions per call
 * (callgrind). */
static size_t line_skip(const struct bm_coll_sm *sm, size_t bytes, size_t first)
{
    return !sm->in_large && first > 64 - DATA_OFF && first <= 64 && bytes < AREA_MIN &&
                   (64 - DATA_OFF) + bytes <= room_of(sm)
               ? 64 - DATA_OFF
               : 0;
}

/* Where operation k's data of bytes bytes, its first block first bytes,
 * starts in rank w's slot. */
static char *area_of(const struct bm_coll_sm *sm, uint64_t k, int w, size_t bytes, size_t first)
{
    size_t step = area_step(sm, bytes);
    char *data = data_of(sm, k, w);

    return step > 0 ? data + (64 - DATA_OFF) + (k / 2 % 2) * step
                    : data + line_skip(sm, bytes, first);
}

/* Where operation k's small data of bytes bytes (one block) starts in rank
 * w's slot, for collectives without two areas. */
static char *small_of(const struct bm_coll_sm *sm, uint64_t k, int w, size_t bytes)
{
    return data_of(sm, k, w) + line_skip(sm, bytes, bytes);
}

/* This rank writes operation k's bytes in its slot: note the area that its
 * next operation on that slot writes, for the next wait to claim. The
 * count below is a locked add, which waits until every store before it
 * has left the store buffer, the flag's too, whose line a reader is
 * polling (a cache-line round trip to take it back). A bcast's or
 * scatter's root, which returns after its flag, therefore calls this
 * before its writes: after the flag it waited there for that round trip.
 * 2 ranks, bm_coll, 5-9 interleaved rounds (load 28), medians, root's
 * per-call mean before -> after: bcast 1 KiB 0.100-0.111 -> 0.070-0.072
 * us, 4 KiB 0.278-0.298 -> 0.112-0.115, 8 KiB 0.421-0.427 -> 0.191-0.205;
 * mean over both ranks: bcast 512 B 0.165 -> 0.151, 1 KiB 0.172-0.201 ->
 * 0.157-0.177, 4 KiB 0.358-0.380 -> 0.283-0.287, 8 KiB 0.544-0.574 ->
 * 0.451-0.464, but 2 KiB 0.199-0.218 -> 0.216-0.240 (the reader slower:
 * not explained); scatter 4 KiB 0.575 -> 0.410, 256 B-2 KiB equal or
 * better. Allgather and alltoall, which go on to their own copy and waits
 * after the flag, keep the count after it: before it, alltoall of 1-4 KiB
 * measured 13-16% slower (7 rounds). */
static void claim_next(struct bm_coll_sm *sm, uint64_t k, size_t bytes)
{
    size_t step = area_step(sm, bytes);

    if (step > 0) {
        sm->claim = area_of(sm, k + 2, sm->me, bytes, bytes);
        sm->claim_lines = (unsigned)(step / 64);
        bm_mpi_coll_count_alg(-1, BM_ALG_SM_AREAS);
    }
}

/* ---- pipelined large data ------------------------------------------------------------ */

/* A broadcast through the large area is copied in by the root and out by
 * every reader: the root copies it in PIPE_CHUNK bytes at a time and
 * states after each chunk how far it got (the progress word in its flag
 * line, beside the flag: operation k's low 32 bits over the bytes copied),
 * so a reader running on another core copies each chunk out while the
 * root copies the next, instead of waiting for the whole. A reader that
 * has seen the root's progress move spins (PIPE_SPIN polls) for the next
 * chunk rather than giving its core away at once: the root is running,
 * and the chunk is a fraction of a microsecond away. */
#define PIPE_CHUNK (16 * 1024)
#define PIPE_SPIN  1024

/* The chunk: PIPE_CHUNK, or a slot's data where slots are smaller (tests
 * make them so to run the pipeline on small data). */
static size_t pipe_chunk(const struct bm_coll_sm *sm)
{
    return sm->slot - DATA_OFF < PIPE_CHUNK ? sm->slot - DATA_OFF : PIPE_CHUNK;
}

static _Atomic uint64_t *progress_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    return (_Atomic uint64_t *)(void *)((char *)flag_of(sm, k, r) + sizeof(uint64_t));
}

static uint64_t progress_word(uint64_t k, size_t bytes)
{
    return (uint64_t)(uint32_t)k << 32 | (uint64_t)bytes;
}

/* Bytes of rank r's data of operation k (of bytes in all) that are there
 * to read, more than got: waits until there are. */
static size_t wait_more(struct bm_coll_sm *sm, uint64_t k, int r, size_t got, size_t bytes)
{
    _Atomic uint64_t *f = flag_of(sm, k, r), *pr = progress_of(sm, k, r);
    bool over = sm->yields, moving = false;
    unsigned polls = 0, all = 0;

    for (;;) {
        if (atomic_load_explicit(f, memory_order_acquire) >= k) {
            flag_seen(sm, k, r);
            return bytes;
        }
        uint64_t v = atomic_load_explicit(pr, memory_order_acquire);
        if (v >> 32 == (uint32_t)k) {
            size_t done = (size_t)(uint32_t)v;
            if (done > got)
                return done;
            moving = true;
        }
        if (++polls % POLLS_PER_PROGRESS == 0) {
            bm_pml_progress();
            if (wait_ends(sm, all += POLLS_PER_PROGRESS)) /* polls restarts at a yield */
                return bytes; /* the data is not read: the operation fails */
            if (sm->sleeps && polls >= SLEEP_POLLS)
                flag_sleep(sm, f, k);
            else if (over && (!moving || polls >= PIPE_SPIN)) {
                sched_yield();
                polls = 0;
                moving = false;
            }
        }
    }
}

/* The root's side of a pipelined broadcast through the area data of
 * operation k: copy (or pack) buf a chunk at a time, announcing each chunk
 * in the root's progress word so readers start before the whole is in. */
static void pipe_fill(struct bm_coll_sm *sm, uint64_t k, int root, char *data, const void *buf,
                      int count, MPI_Datatype dt)
{
    size_t bytes = (size_t)count * dt->size, chunk = pipe_chunk(sm);
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        if (dt->contiguous)
            memcpy(data + off, (const char *)buf + off, n);
        else
            bm_mpi_type_pack(dt, buf, (size_t)count, off, data + off, n);
        if (off + n < bytes)
            atomic_store_explicit(progress_of(sm, k, root), progress_word(k, off + n),
                                  memory_order_release);
    }
}

/* A reader's side of pipe_fill: copy (or unpack) each chunk as it comes. */
static void pipe_drain(struct bm_coll_sm *sm, uint64_t k, int root, const char *data, void *buf,
                       int count, MPI_Datatype dt)
{
    size_t bytes = (size_t)count * dt->size;
    for (size_t got = 0, avail; got < bytes; got = avail) {
        avail = wait_more(sm, k, root, got, bytes);
        if (dt->contiguous)
            memcpy((char *)buf + got, data + got, avail - got);
        else
            bm_mpi_type_unpack(dt, buf, (size_t)count, got, data + got, avail - got);
    }
}

static void bcast(struct bm_coll_sm *sm, void *buf, int count, MPI_Datatype dt, int root)
{
    uint64_t k = ++sm->op;
    size_t bytes = (size_t)count * dt->size, chunk = pipe_chunk(sm);
    char *data = area_of(sm, k, root, bytes, bytes);

    if (!sm->in_large || bytes <= chunk) {
        if (sm->me == root) {
            may_write(sm, k);
            claim_next(sm, k, bytes);
            block_put(data, buf, 0, count, dt);
            publish(sm, k);
        } else {
            wait_flag_data(sm, k, root, data, bytes);
            block_get(buf, 0, count, dt, data);
        }
    } else if (sm->me == root) {
        may_write(sm, k);
        pipe_fill(sm, k, root, data, buf, count, dt);
        bm_mpi_coll_count_alg(BM_COLL_BCAST, BM_ALG_SM_PIPE);
        publish(sm, k);
    } else {
        pipe_drain(sm, k, root, data, buf, count, dt);
    }
    finish(sm, k);
}

/* The second half of an allreduce through the large area whose inputs
 * operation k published: each rank combines its share of the elements
 * (bm_coll_block_start) from every slot, in rank order as reduce does, into
 * its slot of operation k + 1, and every rank copies the shares out. Each
 * rank reads about 2 x the data instead of p x (8 ranks on 2 cores, 1 MiB:
 * the whole job reads 16 MiB instead of 64, and combines 1 MiB instead of
 * 7). */
static void allreduce_shares(struct bm_coll_sm *sm, uint64_t k, void *out, int count,
                             MPI_Datatype dt, MPI_Op op)
{
    uint64_t k2 = ++sm->op;
    size_t es = dt->size;
    int n = sm->n, me = sm->me;
    size_t lo = bm_coll_block_start(me, (size_t)count, n),
           hi = bm_coll_block_start(me + 1, (size_t)count, n);
    char *share = data_of(sm, k2, me);

    bm_mpi_coll_count_alg(BM_COLL_ALLREDUCE, BM_ALG_SM_SHARES);
    for (int r = 0; r < n; r++)
        if (r != me)
            wait_flag(sm, k, r);
    may_write(sm, k2); /* everyone published k: done with k - 1 */
    if (hi > lo) {
        memcpy(share, data_of(sm, k, n - 1) + lo * es, (hi - lo) * es);
        for (int r = n - 2; r >= 0; r--)
            bm_mpi_op_apply(op, data_of(sm, k, r) + lo * es, share, (int)(hi - lo), dt);
    }
    finish(sm, k);
    publish(sm, k2);
    for (int i = 0; i < n; i++) {
        int r = (me + i) % n;
        size_t rlo = bm_coll_block_start(r, (size_t)count, n),
               rhi = bm_coll_block_start(r + 1, (size_t)count, n);
        if (r != me)
            wait_flag(sm, k2, r);
        memcpy((char *)out + rlo * es, data_of(sm, k2, r), (rhi - rlo) * es);
    }
    finish(sm, k2);
}

/* Reduce (root >= 0) or allreduce (root < 0) of count elements of dt. A
 * reduce's root reads its own input where it is (no other rank reads the
 * root's slot) unless that is its output (in place): it does not copy it
 * into its slot first. Through the large area (4 ranks on 2 cores, 1 MiB
 * and more) that copy was a quarter of the root's memory traffic. */
static void reduce(struct bm_coll_sm *sm, const void *in, void *out, int count, MPI_Datatype dt,
                   MPI_Op op, int root)
{
    uint64_t k = ++sm->op;
    size_t bytes = (size_t)count * dt->size;
    bool reads_own_in = root == sm->me && in != out;

    may_write(sm, k);
    if (!reads_own_in)
        memcpy(small_of(sm, k, sm->me, bytes), in, bytes);
    publish(sm, k);
    if (root < 0 && sm->in_large && count >= sm->n) {
        allreduce_shares(sm, k, out, count, dt, op);
        return;
    }
    if (root < 0 || sm->me == root) {
        /* out = s0 op (s1 op (... op s[n-1])), the same on every rank */
        int last = sm->n - 1;
        /* Only a reduce's root loads the data while polling: the
         * allreduce's simultaneous exchange gained nothing (64-128 B). */
        size_t touch = root >= 0 ? bytes : 0, skip = line_skip(sm, bytes, bytes); /* small_of's */
        if (last != sm->me)
            wait_flag_data(sm, k, last, data_of(sm, k, last) + skip, touch);
        memcpy(out, reads_own_in && last == sm->me ? in : data_of(sm, k, last) + skip, bytes);
        for (int r = last - 1; r >= 0; r--) {
            const char *src = reads_own_in && r == sm->me ? in : data_of(sm, k, r) + skip;
            if (r != sm->me)
                wait_flag_data(sm, k, r, src, touch);
            bm_mpi_op_apply(op, src, out, count, dt);
        }
    }
    finish(sm, k);
}

static void gather(struct bm_coll_sm *sm, const struct bm_mpi_coll_args *a)
{
    uint64_t k = ++sm->op;
    int root = a->root;

    if (sm->me != root) {
        may_write(sm, k);
        block_put(small_of(sm, k, sm->me, (size_t)a->scount * a->stype->size), a->sbuf, 0,
                  a->scount, a->stype);
        publish(sm, k);
    } else {
        if (a->sbuf != MPI_IN_PLACE) {
            if (!a->stype->contiguous && !a->rtype->contiguous)
                may_write(sm, k); /* the own slot is the go-between */
            block_copy(a->rbuf, root, a->rcount, a->rtype, a->sbuf, 0, a->scount, a->stype,
                       data_of(sm, k, root));
        }
        size_t b = (size_t)a->rcount * a->rtype->size, skip = line_skip(sm, b, b); /* small_of's */
        for (int i = 1; i < sm->n; i++) {
            int r = (root + i) % sm->n;
            const char *src = data_of(sm, k, r) + skip;
            wait_flag_data(sm, k, r, src, b);
            block_get(a->rbuf, r, a->rcount, a->rtype, src);
        }
    }
    finish(sm, k);
}

/* Where rank r's block of b bytes lies in rank w's slot when the slot holds
 * one for every rank: in the order of the ranks after w, w's own last, so
 * that the first reader's block shares the cache line of w's flag (at 2
 * ranks, blocks up to 48 bytes cost one line transfer instead of two). */
static char *block_in_slot(const struct bm_coll_sm *sm, uint64_t k, int w, int r, size_t b)
{
    return area_of(sm, k, w, (size_t)sm->n * b, b) + (size_t)((r - w - 1 + sm->n) % sm->n) * b;
}

/* Where rank r finds its block of a scatter: in the root's slot when all
 * fit there (in the order of block_in_slot, in the operation's area),
 * else at the start of its own slot. */
static char *scatter_block(const struct bm_coll_sm *sm, uint64_t k, int root, int r, size_t b)
{
    size_t all = (size_t)sm->n * b;

    if (all <= room_of(sm))
        return area_of(sm, k, root, all, b) + (size_t)((r - root - 1 + sm->n) % sm->n) * b;
    return data_of(sm, k, r);
}

/* A scatter's root whose blocks in the slot take at least OWN_FIRST_MIN bytes
 * copies its own block before them. After them, the own copy's stores queue
 * behind the slot's, which wait for the reader's cache to give up its copies
 * of those lines (more of them than the store buffer holds), so the root
 * waited for about the reader's transfer; first, the copy comes from warm
 * lines and the root leaves while the slot's stores drain. The publish comes
 * later by the copy's time. 2 ranks, bm_coll, 6 interleaved rounds (load
 * 20-22), medians: scatter 4 KiB 0.833 -> 0.641 us (the root 0.53 -> 0.13,
 * the reader 1.09 -> 1.15: per-call medians); 1-2 KiB unchanged (0.340 /
 * 0.349, 0.478 / 0.468). Not where ranks share cores (the reader does not
 * run beside the root). */
#define OWN_FIRST_MIN 2048

static void scatter(struct bm_coll_sm *sm, const struct bm_mpi_coll_args *a)
{
    uint64_t k = ++sm->op;
    int root = a->root;

    if (sm->me == root) {
        size_t b = (size_t)a->scount * a->stype->size;
        bool own_first =
            a->rbuf != MPI_IN_PLACE && (size_t)(sm->n - 1) * b >= OWN_FIRST_MIN && !sm->sharing;
        may_write(sm, k);
        if ((size_t)sm->n * b <= room_of(sm))
            claim_next(sm, k, (size_t)sm->n * b);
        if (own_first)
            block_copy(a->rbuf, 0, a->rcount, a->rtype, a->sbuf, root, a->scount, a->stype,
                       copy_needs_tmp(a->rtype, a->stype) ? scatter_block(sm, k, root, root, b)
                                                          : NULL);
        for (int i = 1; i < sm->n; i++) {
            int r = (root + i) % sm->n;
            block_put(scatter_block(sm, k, root, r, b), a->sbuf, r, a->scount, a->stype);
        }
        publish(sm, k);
        if (a->rbuf != MPI_IN_PLACE && !own_first)
            block_copy(a->rbuf, 0, a->rcount, a->rtype, a->sbuf, root, a->scount, a->stype,
                       copy_needs_tmp(a->rtype, a->stype) ? scatter_block(sm, k, root, root, b)
                                                          : NULL);
    } else {
        size_t b = (size_t)a->rcount * a->rtype->size;
        const char *blk = scatter_block(sm, k, root, sm->me, b);
        wait_flag_data(sm, k, root, blk, b);
        block_get(a->rbuf, 0, a->rcount, a->rtype, blk);
    }
    finish(sm, k);
}

static void allgather(struct bm_coll_sm *sm, const struct bm_mpi_coll_args *a)
{
    uint64_t k = ++sm->op;
    size_t b = (size_t)a->rcount * a->rtype->size;
    char *mine = area_of(sm, k, sm->me, b, b);

    may_write(sm, k);
    if (a->sbuf == MPI_IN_PLACE)
        block_put(mine, a->rbuf, sm->me, a->rcount, a->rtype);
    else
        block_put(mine, a->sbuf, 0, a->scount, a->stype);
    publish(sm, k);
    claim_next(sm, k, b);
    if (a->sbuf != MPI_IN_PLACE)
        block_get(a->rbuf, sm->me, a->rcount, a->rtype, mine);
    for (int i = 1; i < sm->n; i++) {
        int r = (sm->me + i) % sm->n;
        wait_flag(sm, k, r); /* not wait_flag_data: 64-128 B lost 20-25% */
        block_get(a->rbuf, r, a->rcount, a->rtype, area_of(sm, k, r, b, b));
    }
    finish(sm, k);
}

static void alltoall(struct bm_coll_sm *sm, const struct bm_mpi_coll_args *a)
{
    uint64_t k = ++sm->op;
    bool in_place = a->sbuf == MPI_IN_PLACE;
    const void *sbuf = in_place ? a->rbuf : a->sbuf;
    int scount = in_place ? a->rcount : a->scount, me = sm->me;
    MPI_Datatype stype = in_place ? a->rtype : a->stype;
    size_t b = (size_t)a->rcount * a->rtype->size;

    may_write(sm, k);
    for (int i = 1; i < sm->n; i++) {
        int r = (me + i) % sm->n;
        block_put(block_in_slot(sm, k, me, r, b), sbuf, r, scount, stype);
    }
    publish(sm, k);
    claim_next(sm, k, (size_t)sm->n * b);
    if (!in_place)
        block_copy(a->rbuf, me, a->rcount, a->rtype, sbuf, me, scount, stype,
                   copy_needs_tmp(a->rtype, stype) ? block_in_slot(sm, k, me, me, b) : NULL);
    for (int i = 1; i < sm->n; i++) {
        int r = (me - i + sm->n) % sm->n;
        wait_flag_data(sm, k, r, block_in_slot(sm, k, r, me, b), b);
        block_get(a->rbuf, r, a->rcount, a->rtype, block_in_slot(sm, k, r, me, b));
    }
    finish(sm, k);
}

/* ---- single copy -------------------------------------------------------------------- */

/* Data too large for a slot, or large enough that one copy beats two
 * (BM_MPI_COLL_SM_COPY_MIN), stays in its writer's buffer: operation k
 * publishes in the writer's slot the address of its block for each reader
 * (entry r for rank r; entry 0 when every reader reads the same block),
 * the readers read it with the transport's get (sm: process_vm_readv)
 * straight into their own buffers and store k in their done line, and the
 * writer waits for its readers' done lines before it returns (its buffer
 * is theirs to read until then). A writer's side that is not contiguous is
 * packed into scratch memory first; a reader's is read into a staging
 * buffer and unpacked from there. Reductions read each other rank's input
 * a chunk at a time into a staging buffer and combine it into the output
 * in rank order, as the slot algorithm does.
 *
 * Where a rank writes into another's buffer instead (the transport's put:
 * bcast.split's root, gather.push's senders, allgather's owners, the split
 * reduce's other rank), the written rank learns of a failed write from the
 * writer's failure word: a rank whose part of operation k failed stores k
 * in the word of k's parity in its done line (and why, in the next), before
 * its done line says k (copy_finish); a rank whose data another writes
 * reads that word once the writer's done line says k (writer_check: the
 * line it has just read, no extra transfer when nothing failed) and
 * returns the writer's failure through the communicator's error handler.
 * One word per parity: only the writer's failure in operation k + 2 can
 * overwrite it, and k + 2 starts only once this rank's done line says k;
 * where that comes before the check (allgather, bcast.split's reader, the
 * split reduce's root), the writer would also have to finish k + 1 and
 * fail again within the few instructions between.
 * BM_MPI_COLL_SM_TEST_PUT_FAIL makes one rank's puts fail (tests). */

struct copy_op {
    struct bm_coll_sm *sm;
    uint64_t k;
    int err;      /* the first failure (bm_status_t), or BM_OK */
    int err_rank; /* whose memory it concerned */
    bool err_put; /* the failure was a write into err_rank's memory (a push) */
    bool err_by;  /* the failure was err_rank's: its part (a write into this rank's buffer) */
    char *scratch;
    size_t scratch_bytes;
    bool finished; /* this rank's done line says k (finish_once) */
};

static uint64_t *addrs_of(const struct bm_coll_sm *sm, uint64_t k, int w)
{
    return (uint64_t *)(void *)data_of(sm, k, w);
}

static void copy_fail(struct copy_op *c, int err, int r)
{
    if (c->err == BM_OK) {
        c->err = err;
        c->err_rank = r;
    }
}

/* The two staging buffers (COPY_TMP bytes each), or NULL (failure noted). */
static char *tmp_of(struct copy_op *c)
{
    if (c->sm->tmp == NULL && (c->sm->tmp = malloc(2 * COPY_TMP)) == NULL)
        copy_fail(c, BM_ERR_NO_MEMORY, c->sm->me);
    return c->sm->tmp;
}

/* Read bytes at address src of rank r into dst, or write them (put). */
static void move(struct copy_op *c, int r, void *dst, uint64_t src, size_t bytes, bool put)
{
    const struct bm_pml_rma_path *p = &c->sm->paths[r];
    size_t lim = put ? p->module->put_limit : p->module->get_limit;

    /* A rank is gone: the addresses in the slots may be stale ones. */
    if (c->sm->gone_why != BM_OK)
        copy_fail(c, c->sm->gone_why, c->sm->gone);
    while (bytes > 0 && c->err == BM_OK) {
        size_t n = bytes < lim ? bytes : lim;
        int rc = put ? bm_btl_put(p->module, p->endpoint, dst, src, NULL, NULL, n, 0, 0, NULL, NULL,
                                  NULL)
                     : bm_btl_get(p->module, p->endpoint, dst, src, NULL, NULL, n, 0, 0, NULL, NULL,
                                  NULL);
        if (rc == BM_ERR_OUT_OF_RESOURCE) {
            bm_pml_progress();
            continue;
        }
        if (rc == BM_OK) /* started: complete it */
            rc = bm_pml_rma_flush(p) == BM_OK ? BM_BTL_DONE : BM_ERR_LINK_DOWN;
        if (rc != BM_BTL_DONE) {
            c->err_put = put && c->err == BM_OK;
            copy_fail(c, rc, r);
            return;
        }
        dst = (char *)dst + n;
        src += n;
        bytes -= n;
    }
}

static void pull(struct copy_op *c, int r, void *dst, uint64_t src, size_t bytes)
{
    move(c, r, dst, src, bytes, false);
}

/* Write bytes at local address from to address to of rank r. */
static void push(struct copy_op *c, int r, uint64_t to, void *from, size_t bytes)
{
    if (bm_mpi_coll_cfg()->sm_test_put_fail == c->sm->me + 1 && c->err == BM_OK) {
        c->err_put = true;
        copy_fail(c, BM_ERR_LINK_DOWN, r);
        return;
    }
    move(c, r, from, to, bytes, true);
}

/* Store this rank's done line of the operation, after its failure words
 * when its part failed (see "single copy" above). */
static void copy_finish(struct copy_op *c)
{
    if (c->err != BM_OK) {
        atomic_store_explicit(fail_why_of(c->sm, c->k, c->sm->me), (uint64_t)(int64_t)c->err,
                              memory_order_relaxed);
        atomic_store_explicit(fail_of(c->sm, c->k, c->sm->me), c->k, memory_order_relaxed);
    }
    finish(c->sm, c->k);
}

/* Rank r, whose done line of this operation this rank has seen, wrote
 * into this rank's buffer: its failure is this rank's (the data is not all
 * there). */
static void writer_check(struct copy_op *c, int r)
{
    if (atomic_load_explicit(fail_of(c->sm, c->k, r), memory_order_relaxed) != c->k ||
        c->err != BM_OK)
        return;
    c->err_by = true;
    copy_fail(c,
              (int)(int64_t)atomic_load_explicit(fail_why_of(c->sm, c->k, r), memory_order_relaxed),
              r);
}

/* Read block i of a side (count elements of dt at base) from address src of
 * rank r. */
static void pull_block(struct copy_op *c, int r, uint64_t src, void *base, int i, int count,
                       MPI_Datatype dt)
{
    char *dst = (char *)base + (ptrdiff_t)i * count * dt->extent, *tmp;
    size_t bytes = (size_t)count * dt->size;

    if (dt->contiguous) {
        pull(c, r, dst, src, bytes);
        return;
    }
    if ((tmp = tmp_of(c)) == NULL)
        return;
    for (size_t off = 0; off < bytes && c->err == BM_OK; off += COPY_TMP) {
        size_t n = bytes - off < COPY_TMP ? bytes - off : COPY_TMP;
        pull(c, r, tmp, src + off, n);
        if (c->err == BM_OK)
            bm_mpi_type_unpack(dt, dst, (size_t)count, off, tmp, n);
    }
}

/* Publish where readers find blocks first .. first + nb - 1 of a side
 * (count elements of dt at base) as entries 0 .. nb - 1 of this rank's
 * address list, packed into scratch memory first when dt is not contiguous
 * (out of memory: address 0, which the readers' get refuses). */
static void post_blocks(struct copy_op *c, const void *base, int first, int nb, int count,
                        MPI_Datatype dt)
{
    uint64_t *addrs = addrs_of(c->sm, c->k, c->sm->me);
    size_t b = (size_t)count * dt->size;

    if (!dt->contiguous && b > 0) {
        c->scratch_bytes = b * (size_t)nb;
        if ((c->scratch = bm_mpi_scratch_get(c->scratch_bytes)) == NULL)
            copy_fail(c, BM_ERR_NO_MEMORY, c->sm->me);
    }
    for (int e = 0; e < nb; e++) {
        if (dt->contiguous) {
            addrs[e] =
                (uint64_t)(uintptr_t)base + (uint64_t)((ptrdiff_t)(first + e) * count * dt->extent);
        } else if (c->scratch) {
            block_put(c->scratch + (size_t)e * b, base, first + e, count, dt);
            addrs[e] = (uint64_t)(uintptr_t)(c->scratch + (size_t)e * b);
        } else {
            addrs[e] = 0;
        }
    }
}

/* This rank's own block from one side to the other (as block_copy), with
 * scratch memory as the go-between when neither side is contiguous. */
static void own_copy(struct copy_op *c, void *dbase, int di, int dcount, MPI_Datatype dtype,
                     const void *sbase, int si, int scount, MPI_Datatype stype)
{
    size_t b = (size_t)scount * stype->size;
    char *tmp = NULL;

    if (!stype->contiguous && !dtype->contiguous && b > 0 &&
        (tmp = bm_mpi_scratch_get(b)) == NULL) {
        copy_fail(c, BM_ERR_NO_MEMORY, c->sm->me);
        return;
    }
    block_copy(dbase, di, dcount, dtype, sbase, si, scount, stype, tmp);
    if (tmp)
        bm_mpi_scratch_put(tmp, b);
}

/* Wait until rank r is done with operation k. */
static void await_done(struct bm_coll_sm *sm, uint64_t k, int r)
{
    if (sm->seen[r] < k) {
        wait_for(sm, done_of(sm, r), k);
        sm->seen[r] = atomic_load_explicit(done_of(sm, r), memory_order_acquire);
    }
}

static void await_all(struct bm_coll_sm *sm, uint64_t k)
{
    for (int r = 0; r < sm->n; r++)
        if (r != sm->me)
            await_done(sm, k, r);
}

/* Read each other rank's block into block r of the receive side, in the
 * order from + step, from + 2 step, ... (mod n), the address at entry 0 of
 * its list, or at this rank's entry (per_reader). */
static void pull_each(struct copy_op *c, const struct bm_mpi_coll_args *a, int from, int step,
                      bool per_reader)
{
    struct bm_coll_sm *sm = c->sm;

    for (int i = 1; i < sm->n; i++) {
        int r = ((from + step * i) % sm->n + sm->n) % sm->n;
        wait_flag(sm, c->k, r);
        pull_block(c, r, addrs_of(sm, c->k, r)[per_reader ? sm->me : 0], a->rbuf, r, a->rcount,
                   a->rtype);
    }
}

bool bm_coll_sm_bcast_splits(int p, size_t bytes)
{
    size_t min = bm_mpi_coll_cfg()->sm_bcast_split_min;
    return p == 2 && min > 0 && bytes >= min;
}

/* A single-copy broadcast on 2 ranks splits the copy: the reader, where
 * its side is contiguous, publishes its buffer's address with a flag of
 * its own, reads the first half of the root's data, and the root writes
 * the second half into the reader's buffer (the transport's put) at the
 * same time; each then waits for the other's done line (the root: the
 * reader has read its buffer; the reader: its second half has landed).
 * The two cores copy half each instead of the reader's copying the whole
 * while the root waits, as the point-to-point path's shared RGET does
 * (pml/rdma.c): from BM_MPI_COLL_SM_BCAST_SPLIT_MIN (32 KiB; below it the
 * two more line handoffs cost more than half the copy saves). 2 ranks,
 * bm_coll, 7 interleaved rounds (boosted, load ~24), medians, whole ->
 * split: 16 KiB 1.20 -> 1.67 us, 32 KiB 2.12 -> 1.84, 64 KiB 3.11 -> 2.63
 * (Open MPI 1.65, 2.46, 3.64); 9 rounds, load 27, from 32 KiB: 32 KiB
 * 1.88 -> 1.84, 64 KiB 3.00 -> 2.50 (Open MPI 2.39, 3.51; the quiet runs'
 * 0.90x row), 8-16 KiB and 128-256 KiB (other paths) unchanged. Counted as
 * bcast.split. */
static void bcast_copy(struct copy_op *c, void *buf, int count, MPI_Datatype dt, int root)
{
    struct bm_coll_sm *sm = c->sm;
    size_t bytes = (size_t)count * dt->size,
           half = bm_coll_sm_bcast_splits(sm->n, bytes) ? bytes / 2 : 0;

    if (sm->me == root) {
        may_write(sm, c->k);
        post_blocks(c, buf, 0, 1, count, dt);
        publish(sm, c->k);
        if (half > 0) {
            int r = 1 - root;
            uint64_t to, from = addrs_of(sm, c->k, root)[0];
            wait_flag(sm, c->k, r);
            if ((to = addrs_of(sm, c->k, r)[0]) != 0 && from != 0) {
                push(c, r, to + half, (void *)(uintptr_t)(from + half), bytes - half);
                bm_mpi_coll_count_alg(BM_COLL_BCAST, BM_ALG_BCAST_SPLIT);
            }
        }
        copy_finish(c);
        await_all(sm, c->k);
    } else if (half > 0) {
        uint64_t *mine = addrs_of(sm, c->k, sm->me);
        may_write(sm, c->k);
        mine[0] = dt->contiguous ? (uint64_t)(uintptr_t)buf : 0;
        publish(sm, c->k);
        wait_flag(sm, c->k, root);
        uint64_t from = addrs_of(sm, c->k, root)[0];
        if (mine[0] != 0 && from != 0) {
            pull(c, root, buf, from, half);
            copy_finish(c);
            await_done(sm, c->k, root); /* the root wrote the second half */
            writer_check(c, root);
        } else {
            pull_block(c, root, from, buf, 0, count, dt);
            copy_finish(c);
        }
    } else {
        wait_flag(sm, c->k, root);
        pull_block(c, root, addrs_of(sm, c->k, root)[0], buf, 0, count, dt);
        copy_finish(c);
    }
}

/* ---- broadcasts where ranks share cores: near readers copy, far ones read --- */

/* A broadcast of BM_MPI_COLL_SM_CROWDED_BCAST_COPY bytes or more on few
 * ranks that share cores (coll_select.c's crowded_bcast_copy; the large
 * area holds it). By single copy alone every reader reads the root's
 * buffer with the transport's get, and the root waits for all of them;
 * a reader that shares the root's CPU runs only while the root waits,
 * and its get (page pinning, ~2.8 us per 64 KiB here) overlaps the other
 * readers' gets of the same buffer, which slows both (two readers on two
 * CPUs: 3.0 -> 3.6-6.6 us each). Where the root shares its CPU with two
 * readers the root took 14-16 us and those readers 8.4 each (4 ranks on 2
 * CPUs bound 0001/0010/0100, 64 KiB: 7.3-9.3 us mean over the ranks, Open
 * MPI's linear bcast with the same gets 6.4-9.1; the quiet compare runs'
 * 1.48-1.54x, min 2.8 / max 14.5 us, had that shape). Copied through the
 * large area alone it loses where ranks are on both CPUs (0011/0101: the
 * root's stores must take each line back from the other CPU's readers,
 * 64 KiB copied in 5.3-6.4 us instead of 1.2). So the root does both: it
 * offers its buffer (address and CPU in its flag line, then the progress
 * word), copies its data into the large area as the pipelined bcast does,
 * publishes, and waits for the readers that took its buffer. A reader on
 * the root's CPU (the root is then waiting, its copy done) copies out of
 * the area, lines this CPU's cache holds (sm.near); one on another CPU
 * takes the root's buffer and reads it by single copy (sm.copy), unless
 * the root had published and closed it first (a reader not yet started
 * then: sm.late) or the root's side is not contiguous, and copies from the
 * area then. Not waiting for readers that have not started: all 4 ranks on
 * one CPU 64 KiB 3.3 -> 1.4 us, 128 KiB 5.8 -> 2.6; root alone on a CPU 64
 * KiB 5.6 -> 4.7; other placements within 0.2 us. The root's offer words
 * follow the flag in its flag line (the slot's data is unused while the
 * large area holds it). */
static uint64_t *offer_of(const struct bm_coll_sm *sm, uint64_t k, int r)
{
    return (uint64_t *)(void *)((char *)flag_of(sm, k, r) + 2 * sizeof(uint64_t));
}

/* Wait until root r has started operation k (its progress word names k)
 * or published it. */
static void wait_offer(struct bm_coll_sm *sm, uint64_t k, int r)
{
    _Atomic uint64_t *f = flag_of(sm, k, r), *pr = progress_of(sm, k, r);
    bool over = sm->yields;
    unsigned polls = 0;

    while (atomic_load_explicit(f, memory_order_acquire) < k &&
           atomic_load_explicit(pr, memory_order_acquire) >> 32 != (uint32_t)k) {
        if (++polls % POLLS_PER_PROGRESS == 0) {
            bm_pml_progress();
            if (wait_ends(sm, polls))
                break;
            if (sm->sleeps && polls >= SLEEP_POLLS)
                flag_sleep(sm, f, k);
            else if (over)
                sched_yield();
        }
    }
    bm_util_xproc_acquire();
}

/* Whether reader r reads root's buffer in operation k: in the root's flag
 * line after the offer, a word per rank (at most BM_COLL_SM_NEAR_RANKS), 2k + 1 when
 * the reader took the buffer, 2k when the root, published, closed it (the
 * reader then copies from the area), less for neither yet. The root waits
 * only for readers that took its buffer; one that has not yet started
 * when the root publishes does not keep it. */
static _Atomic uint64_t *take_of(const struct bm_coll_sm *sm, uint64_t k, int root, int r)
{
    return (_Atomic uint64_t *)(void *)((char *)flag_of(sm, k, root) +
                                        (4 + (size_t)r) * sizeof(uint64_t));
}

static void bcast_near(struct copy_op *c, void *buf, int count, MPI_Datatype dt, int root)
{
    struct bm_coll_sm *sm = c->sm;
    uint64_t k = c->k, *offer = offer_of(sm, k, root);
    char *data = data_of(sm, k, root);

    if (sm->me == root) {
        may_write(sm, k);
        for (int r = 0; r < sm->n && r < BM_COLL_SM_NEAR_RANKS; r++)
            atomic_store_explicit(take_of(sm, k, root, r), 0, memory_order_relaxed);
        offer[0] = dt->contiguous && sm->n <= BM_COLL_SM_NEAR_RANKS ? (uint64_t)(uintptr_t)buf : 0;
        offer[1] = (uint64_t)sched_getcpu();
        bm_util_xproc_release();
        atomic_store_explicit(progress_of(sm, k, root), progress_word(k, 0), memory_order_release);
        pipe_fill(sm, k, root, data, buf, count, dt);
        publish(sm, k);
        finish(sm, k);
        for (int r = 0; r < sm->n && r < BM_COLL_SM_NEAR_RANKS; r++) {
            uint64_t v = 0;
            if (r != root && !atomic_compare_exchange_strong(take_of(sm, k, root, r), &v, 2 * k))
                await_done(sm, k, r); /* it took the buffer (v == 2k + 1) */
        }
        return;
    }
    wait_offer(sm, k, root);
    uint64_t addr = offer[0], v = 0;
    bool near = (uint64_t)sched_getcpu() == offer[1];
    if (!near && addr != 0 &&
        atomic_compare_exchange_strong(take_of(sm, k, root, sm->me), &v, 2 * k + 1)) {
        bm_mpi_coll_count_alg(-1, BM_ALG_SM_COPY);
        pull_block(c, root, addr, buf, 0, count, dt);
    } else {
        bm_mpi_coll_count_alg(-1, near ? BM_ALG_SM_NEAR : BM_ALG_SM_LATE);
        pipe_drain(sm, k, root, data, buf, count, dt);
    }
    finish(sm, k);
}

/* Store this rank's done line of the operation, once. */
static void finish_once(struct copy_op *c)
{
    if (!c->finished) {
        copy_finish(c);
        c->finished = true;
    }
}

/* out[lo, hi) = s0 op (s1 op (... op s[n-1])) of the contiguous dt, a chunk
 * at a time, every other rank's input read into a staging buffer (their
 * flags seen: their addresses are in their slots). This rank is done with
 * the others' memory after its last read (the lowest other rank of the
 * last chunk): its done line says so before the combining that follows,
 * which reads only its own memory, so a rank that waits for it to be done
 * (a reduce's sender: it may then reuse its input) leaves that much
 * earlier, as Open MPI's sender does once the root has read its data. 2
 * ranks, reduce of 64 KiB: the sender no longer waits for the root's
 * 16 Ki-element sum. */
static void combine(struct copy_op *c, const void *in, void *out, MPI_Datatype dt, MPI_Op op,
                    size_t lo, size_t hi, char *tmp)
{
    struct bm_coll_sm *sm = c->sm;
    size_t es = dt->size, chunk = COPY_TMP / es * es;
    int last = sm->n - 1, me = sm->me, lowest = me == 0 ? 1 : 0;

    for (size_t off = lo; off < hi && c->err == BM_OK; off += chunk) {
        size_t n = hi - off < chunk ? hi - off : chunk;
        bool final = hi - off <= chunk;
        char *acc = (char *)out + off;
        const char *mine = (const char *)in + off;
        if (mine == acc && me != last) { /* in place: the input is overwritten first */
            memcpy(tmp, mine, n);
            mine = tmp;
        }
        if (me == last) {
            if (mine != acc)
                memcpy(acc, mine, n);
        } else {
            pull(c, last, acc, addrs_of(sm, c->k, last)[0] + off, n);
            if (final && last == lowest && c->err == BM_OK)
                finish_once(c);
        }
        for (int r = last - 1; r >= 0 && c->err == BM_OK; r--) {
            const char *s = mine;
            if (r != me) {
                pull(c, r, tmp + COPY_TMP, addrs_of(sm, c->k, r)[0] + off, n);
                s = tmp + COPY_TMP;
                if (final && r == lowest && c->err == BM_OK)
                    finish_once(c);
            }
            bm_mpi_op_apply(op, s, acc, (int)(n / es), dt);
        }
    }
}

/* Reduce (root >= 0) or allreduce (root < 0, in != out) of count elements of
 * the contiguous dt. A commutative reduce on 2 ranks of at least
 * BM_MPI_COLL_SM_REDUCE_SPLIT_MIN bytes splits the work: the root combines
 * the first half; the other rank reads the root's second half, combines it
 * with its own and writes the result into the root's output (the root
 * waits for it), so both cores copy and combine (below, the extra wait and
 * write cost more than they save). */
static void reduce_copy(struct copy_op *c, const void *in, void *out, int count, MPI_Datatype dt,
                        MPI_Op op, int root)
{
    struct bm_coll_sm *sm = c->sm;
    size_t es = dt->size, bytes = (size_t)count * es, chunk = COPY_TMP / es * es;
    bool split = root >= 0 && sm->n == 2 && op->commutative && count >= 2 &&
                 bytes >= bm_mpi_coll_cfg()->sm_reduce_split_min;
    size_t half = split ? (size_t)(count / 2) * es : bytes;
    int me = sm->me;
    char *tmp;

    if (split)
        bm_mpi_coll_count_alg(BM_COLL_REDUCE, BM_ALG_SM_COPY_SPLIT);
    may_write(sm, c->k);
    addrs_of(sm, c->k, me)[0] = (uint64_t)(uintptr_t)in;
    addrs_of(sm, c->k, me)[1] = (uint64_t)(uintptr_t)out;
    publish(sm, c->k);
    if ((root < 0 || me == root) && (tmp = tmp_of(c)) != NULL) {
        for (int r = 0; r < sm->n; r++)
            if (r != me)
                wait_flag(sm, c->k, r);
        combine(c, in, out, dt, op, 0, half, tmp);
    } else if (split && (tmp = tmp_of(c)) != NULL) {
        wait_flag(sm, c->k, root);
        for (size_t off = half; off < bytes && c->err == BM_OK; off += chunk) {
            size_t n = bytes - off < chunk ? bytes - off : chunk;
            pull(c, root, tmp, addrs_of(sm, c->k, root)[0] + off, n);
            bm_mpi_op_apply(op, (const char *)in + off, tmp, (int)(n / es), dt);
            push(c, root, addrs_of(sm, c->k, root)[1] + off, tmp, n);
        }
    }
    finish_once(c);
    if (root < 0 || split)
        await_all(sm, c->k);
    else if (me != root)
        await_done(sm, c->k, root);
    if (split && me == root)
        writer_check(c, 1 - me); /* it wrote the second half of the output */
}

/* A single-copy gather: every other rank publishes its block's address
 * (packed in scratch if its type is not contiguous) and, where the root's
 * receive side is contiguous (the root publishes where each block goes),
 * writes its block into the root's buffer itself (the transport's put:
 * process_vm_writev) while the root copies its own block, and leaves; the
 * root waits for its done line (counted as gather.push). Where either side
 * cannot, the root reads the block as before. 2 ranks, bm_coll, 7 interleaved rounds (load 29-36,
 * boosted), medians, root reads -> others write: 16 KiB 1.56-1.58 -> 1.16-
 * 1.24 us, 32 KiB 2.44-2.46 -> 1.82-1.85, 64 KiB 4.13-4.32 -> 2.91-2.98
 * (Open MPI 4.6-5.1, MPICH 4.6-4.8: the quiet runs' 0.92x row): the two
 * copies run on two cores at once instead of one after the other on the
 * root's. (A reduce's sender writing into the root's output lost badly:
 * there the root combines what lands, here it only waits.) */
static void gather_copy(struct copy_op *c, const struct bm_mpi_coll_args *a)
{
    struct bm_coll_sm *sm = c->sm;
    int root = a->root, me = sm->me, n = sm->n;

    may_write(sm, c->k);
    if (me != root) {
        const uint64_t *mine = addrs_of(sm, c->k, me), *theirs = addrs_of(sm, c->k, root);
        post_blocks(c, a->sbuf, 0, 1, a->scount, a->stype);
        publish(sm, c->k);
        wait_flag(sm, c->k, root);
        if (theirs[me] != 0 && mine[0] != 0) {
            push(c, root, theirs[me], (void *)(uintptr_t)mine[0],
                 (size_t)a->scount * a->stype->size);
            bm_mpi_coll_count_alg(BM_COLL_GATHER, BM_ALG_GATHER_PUSH);
            copy_finish(c);
            return;
        }
        copy_finish(c);
        await_done(sm, c->k, root); /* the root reads this rank's block */
        return;
    }
    /* entry w: where rank w writes its block (0: the root reads it) */
    uint64_t *addrs = addrs_of(sm, c->k, me);
    for (int w = 0; w < n; w++)
        addrs[w] = a->rtype->contiguous && w != me
                       ? (uint64_t)(uintptr_t)a->rbuf +
                             (uint64_t)((ptrdiff_t)w * a->rcount * a->rtype->extent)
                       : 0;
    publish(sm, c->k);
    if (a->sbuf != MPI_IN_PLACE)
        own_copy(c, a->rbuf, root, a->rcount, a->rtype, a->sbuf, 0, a->scount, a->stype);
    for (int i = 1; i < n; i++) {
        int r = (root + i) % n;
        const uint64_t *theirs = addrs_of(sm, c->k, r);
        wait_flag(sm, c->k, r);
        if (addrs[r] != 0 && theirs[0] != 0) {
            await_done(sm, c->k, r); /* it wrote its block here */
            writer_check(c, r);
        } else {
            pull_block(c, r, theirs[0], a->rbuf, r, a->rcount, a->rtype);
        }
    }
    copy_finish(c);
}

static void scatter_copy(struct copy_op *c, const struct bm_mpi_coll_args *a)
{
    struct bm_coll_sm *sm = c->sm;
    int root = a->root;

    if (sm->me == root) {
        may_write(sm, c->k);
        post_blocks(c, a->sbuf, 0, sm->n, a->scount, a->stype);
        publish(sm, c->k);
        if (a->rbuf != MPI_IN_PLACE)
            own_copy(c, a->rbuf, 0, a->rcount, a->rtype, a->sbuf, root, a->scount, a->stype);
        copy_finish(c);
        await_all(sm, c->k);
    } else {
        wait_flag(sm, c->k, root);
        pull_block(c, root, addrs_of(sm, c->k, root)[sm->me], a->rbuf, 0, a->rcount, a->rtype);
        copy_finish(c);
    }
}

/* An allgather's block moves to each other rank by its owner's put into
 * that rank's receive buffer (sm: process_vm_writev), where that buffer is
 * contiguous (the receiver publishes its block addresses, 0 where not: it
 * then reads the block from the owner's side, as the other collectives do).
 * The owner reads its block once from memory for its own copy and then from
 * its cache for every put; the lines it writes in a receiver's buffer are
 * written by no one else, so they stay in the owner's cache from call to
 * call. When the readers read (process_vm_readv), every rank read another
 * rank's block from memory or that rank's cache. 2 ranks, bm_coll, 5
 * interleaved rounds (load 15, others' builds), medians, read -> write
 * (Open MPI): 256 KiB 19.3 -> 18.0 us (20.8), 512 KiB 65.2 -> 43.8 (70.7),
 * 1 MiB 183 -> 158 (195); 8-128 KiB within noise (9 rounds: 8 KiB 1.64 ->
 * 1.68, 16 KiB 2.24 -> 2.04). Alltoall gains nothing
 * that way (its own and its sent blocks differ: 1 MiB 197 / 227, 8-16 KiB
 * 5% slower) and keeps the reads. A put that fails is the receiver's error
 * too: it reads the owner's failure word (writer_check). */
static void allgather_copy(struct copy_op *c, const struct bm_mpi_coll_args *a)
{
    struct bm_coll_sm *sm = c->sm;
    int me = sm->me, n = sm->n;
    bool in_place = a->sbuf == MPI_IN_PLACE, pushed = false;
    uint64_t *addrs = addrs_of(sm, c->k, me);
    size_t b = in_place ? (size_t)a->rcount * a->rtype->size : (size_t)a->scount * a->stype->size;

    may_write(sm, c->k);
    /* entry 0: this rank's block (packed if need be); 1 + w: where rank w
     * writes its block here (0: rank w's block is to be read) */
    if (in_place)
        post_blocks(c, a->rbuf, me, 1, a->rcount, a->rtype);
    else
        post_blocks(c, a->sbuf, 0, 1, a->scount, a->stype);
    for (int w = 0; w < n; w++)
        addrs[1 + w] = a->rtype->contiguous && w != me
                           ? (uint64_t)(uintptr_t)a->rbuf +
                                 (uint64_t)((ptrdiff_t)w * a->rcount * a->rtype->extent)
                           : 0;
    publish(sm, c->k);
    if (!in_place)
        own_copy(c, a->rbuf, me, a->rcount, a->rtype, a->sbuf, 0, a->scount, a->stype);
    for (int i = 1; i < n; i++) {
        int r = (me + i) % n;
        const uint64_t *theirs = addrs_of(sm, c->k, r);
        wait_flag(sm, c->k, r);
        if (theirs[1 + me] != 0 && addrs[0] != 0) {
            push(c, r, theirs[1 + me], (void *)(uintptr_t)addrs[0], b);
            pushed = true;
        }
        /* read it where this side is not contiguous, or fail on the
         * address 0 of an owner that has no block to give */
        if (addrs[1 + r] == 0 || theirs[0] == 0)
            pull_block(c, r, theirs[0], a->rbuf, r, a->rcount, a->rtype);
    }
    if (pushed)
        bm_mpi_coll_count_alg(BM_COLL_ALLGATHER, BM_ALG_SM_PUSH);
    copy_finish(c);
    await_all(sm, c->k);
    /* the others wrote their blocks here, or failed (a failure of theirs
     * this rank does not learn of otherwise: a read of theirs, or a put
     * into a third rank, is reported too, as the operation's) */
    for (int r = 0; r < n; r++)
        if (r != me && addrs[1 + r] != 0)
            writer_check(c, r);
}

/* Not in place (every rank would overwrite blocks the others still read). */
static void alltoall_copy(struct copy_op *c, const struct bm_mpi_coll_args *a)
{
    struct bm_coll_sm *sm = c->sm;
    int me = sm->me;

    may_write(sm, c->k);
    post_blocks(c, a->sbuf, 0, sm->n, a->scount, a->stype);
    publish(sm, c->k);
    own_copy(c, a->rbuf, me, a->rcount, a->rtype, a->sbuf, me, a->scount, a->stype);
    pull_each(c, a, me, -1, true);
    copy_finish(c);
    await_all(sm, c->k);
}

/* A rank of the segment was found gone (peers_gone): this operation and
 * every later one fail. */
static __attribute__((noinline, cold)) int sm_gone(MPI_Comm comm, const struct bm_coll_sm *sm,
                                                   const char *fn)
{
    return bm_mpi_error(comm, MPI_ERR_OTHER, fn,
                        "rank %d of %s (MPI_COMM_WORLD rank %d on %s) is gone (%s): it ended "
                        "while the other ranks waited for it in a collective on shared memory; "
                        "no collective on %s can complete",
                        sm->gone, bm_mpi_comm_label(comm), sm->world[sm->gone],
                        bm_rte_self()->hostname, bm_status_str(sm->gone_why),
                        bm_mpi_comm_label(comm));
}

static int run_copy(MPI_Comm comm, struct bm_coll_sm *sm, const struct bm_mpi_coll_args *a,
                    bool near, const char *fn)
{
    struct copy_op c = {.sm = sm, .k = ++sm->op, .err = BM_OK};
    const void *in = a->sbuf == MPI_IN_PLACE ? a->rbuf : a->sbuf;

    switch (a->kind) {
    case BM_COLL_BCAST:
        if (near)
            bcast_near(&c, a->rbuf, a->rcount, a->rtype, a->root);
        else
            bcast_copy(&c, a->rbuf, a->rcount, a->rtype, a->root);
        break;
    case BM_COLL_REDUCE:
        reduce_copy(&c, in, a->rbuf, a->rcount, a->rtype, a->op, a->root);
        break;
    case BM_COLL_GATHER:
        gather_copy(&c, a);
        break;
    case BM_COLL_SCATTER:
        scatter_copy(&c, a);
        break;
    case BM_COLL_ALLGATHER:
        allgather_copy(&c, a);
        break;
    case BM_COLL_ALLTOALL:
        alltoall_copy(&c, a);
        break;
    default:
        reduce_copy(&c, in, a->rbuf, a->rcount, a->rtype, a->op, -1);
        break;
    }
    if (c.scratch)
        bm_mpi_scratch_put(c.scratch, c.scratch_bytes);
    if (sm->gone_why != BM_OK)
        return sm_gone(comm, sm, fn);
    if (c.err != BM_OK && c.err_by)
        return bm_mpi_error(comm, MPI_ERR_OTHER, fn,
                            "collective data that rank %d of %s writes into this rank by single "
                            "copy is missing: its part failed (%s); set BM_MPI_COLL_SM_COPY_MIN=0 "
                            "to keep such data on the point-to-point path",
                            c.err_rank, bm_mpi_comm_label(comm), bm_status_str(c.err));
    if (c.err != BM_OK)
        return bm_mpi_error(comm, MPI_ERR_OTHER, fn,
                            "%s collective data %s rank %d of %s by single copy failed "
                            "(%s); set BM_MPI_COLL_SM_COPY_MIN=0 to keep such data on the "
                            "point-to-point path",
                            c.err_put ? "writing" : "reading", c.err_put ? "into" : "from",
                            c.err_rank, bm_mpi_comm_label(comm), bm_status_str(c.err));
    return MPI_SUCCESS;
}

int bm_coll_sm_run(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const struct bm_mpi_coll_args *a,
                   int alg, enum bm_coll_sm_how how, const char *fn)
{
    struct bm_coll_sm *sm = cc->sm;
    const void *in = a->sbuf == MPI_IN_PLACE ? a->rbuf : a->sbuf;

    bm_mpi_coll_count_alg(a->kind, alg);
    if (how == BM_COLL_SM_COPY) {
        bm_mpi_coll_count_alg(a->kind, BM_ALG_SM_COPY);
        return run_copy(comm, sm, a, false, fn);
    }
    if (how == BM_COLL_SM_NEAR) {
        bm_mpi_coll_count_alg(a->kind, BM_ALG_SM_LARGE);
        sm->in_large = true;
        int rc = run_copy(comm, sm, a, true, fn);
        sm->in_large = false;
        return rc;
    }
    if (how == BM_COLL_SM_LARGE)
        bm_mpi_coll_count_alg(a->kind, BM_ALG_SM_LARGE);
    sm->in_large = how == BM_COLL_SM_LARGE;
    switch (a->kind) {
    case BM_COLL_BARRIER:
        barrier(sm);
        break;
    case BM_COLL_BCAST:
        bcast(sm, a->rbuf, a->rcount, a->rtype, a->root);
        break;
    case BM_COLL_REDUCE:
        reduce(sm, in, a->rbuf, a->rcount, a->rtype, a->op, a->root);
        break;
    case BM_COLL_GATHER:
        gather(sm, a);
        break;
    case BM_COLL_SCATTER:
        scatter(sm, a);
        break;
    case BM_COLL_ALLGATHER:
        allgather(sm, a);
        break;
    case BM_COLL_ALLTOALL:
        alltoall(sm, a);
        break;
    default:
        reduce(sm, in, a->rbuf, a->rcount, a->rtype, a->op, -1);
        break;
    }
    sm->in_large = false;
    if (__builtin_expect(sm->gone_why != BM_OK, 0))
        return sm_gone(comm, sm, fn);
    return MPI_SUCCESS;
}
