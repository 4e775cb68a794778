/* A per-peer send (src/pml/README.md "Threads", per-peer send state)
 * completes and is freed without the progress lock (issue 18): its
 * completion is decided under its peer's send lock, it leaves its peer's
 * restart watch list under that lock, and its owner's free takes that lock,
 * not the progress lock. Rank 0 sends rank 1 a 1 MiB message over tcp
 * (a rendezvous with FRAGs, per-peer state) with MPI_Isend and waits for its
 * completion with MPI_Request_get_status (which does not free it); then a
 * second thread takes the progress lock and holds it inside a progress hook
 * until the first thread's MPI_Wait, which frees the request, has returned
 * (bounded by that event; HOLD_MAX_S only ends a hold nothing else would).
 * Before, the free of any send waited for the progress lock: MPI_Wait
 * could not return while the lock was held, and the hold ran out. Checked:
 * MPI_Wait returned during the hold, and the PML counted the free as made
 * without the progress lock (tx_freed_free). Every byte is checked by
 * rank 1; 4 rounds. Run with 2 ranks over self,tcp (restart timers on:
 * the send is on its peer's watch list until the receiver's DONE). */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS     4
#define BYTES      (1 << 20)
#define HOLD_MAX_S 10.0

static atomic_int armed, in_hook, freed, saw_freed;

/* Runs under the progress lock: hold it until the owner's MPI_Wait returned. */
static int hold_hook(void *arg)
{
    (void)arg;
    if (!atomic_load(&armed))
        return 0;
    atomic_store(&in_hook, 1);
    double t0 = bm_test_now();
    while (!atomic_load(&freed) && bm_test_now() - t0 < HOLD_MAX_S)
        sched_yield();
    atomic_store(&saw_freed, atomic_load(&freed));
    atomic_store(&armed, 0);
    return 1;
}

static void *holder(void *arg)
{
    (void)arg;
    while (atomic_load(&armed))
        bm_pml_progress();
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bm_test_current = "set-up";
    BM_CHECK_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    BM_CHECK_EQ_INT(size, 2);
    unsigned char *buf = malloc(BYTES);
    BM_CHECK(buf != NULL);
    if (!buf || size != 2 || provided != MPI_THREAD_MULTIPLE) {
        free(buf);
        MPI_Finalize();
        return bm_test_summary("mt_txfree");
    }
    if (rank == 0)
        BM_CHECK_EQ_INT(bm_pml_progress_register(hold_hook, NULL), BM_OK);
    bm_test_current = "free without the progress lock";
    int held_rounds = 0;
    uint64_t freed_before = __atomic_load_n(&bm_pml_g.tx_freed_free, __ATOMIC_RELAXED);
    for (int round = 0; round < ROUNDS; round++) {
        if (rank == 0) {
            bm_test_fill(buf, BYTES, round);
            MPI_Request r;
            MPI_Isend(buf, BYTES, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r);
            int done = 0;
            while (!done)
                MPI_Request_get_status(r, &done, MPI_STATUS_IGNORE);
            atomic_store(&in_hook, 0);
            atomic_store(&freed, 0);
            atomic_store(&saw_freed, 0);
            atomic_store(&armed, 1);
            pthread_t th;
            pthread_create(&th, NULL, holder, NULL);
            while (!atomic_load(&in_hook) && atomic_load(&armed))
                sched_yield();
            MPI_Wait(&r, MPI_STATUS_IGNORE); /* frees the request */
            atomic_store(&freed, 1);
            pthread_join(th, NULL);
            held_rounds += atomic_load(&saw_freed);
        } else {
            memset(buf, 0, BYTES);
            MPI_Recv(buf, BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_MSG(bm_test_bad_bytes(buf, BYTES, round) == 0, "round %d: bad bytes", round);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        BM_CHECK_EQ_INT(bm_pml_progress_unregister(hold_hook, NULL), BM_OK);
        uint64_t freed_free =
            __atomic_load_n(&bm_pml_g.tx_freed_free, __ATOMIC_RELAXED) - freed_before;
        BM_CHECK_MSG(held_rounds == ROUNDS,
                     "in %d of %d rounds MPI_Wait of a completed per-peer send did not return "
                     "while another thread held the progress lock: its free waited for it",
                     ROUNDS - held_rounds, ROUNDS);
        BM_CHECK_MSG(freed_free >= ROUNDS,
                     "%llu per-peer sends freed without the progress lock, expected >= %d",
                     (unsigned long long)freed_free, ROUNDS);
        printf("rank 0: %d of %d frees returned while the progress lock was held; %llu freed "
               "without it; %llu per-peer sends completed without it\n",
               held_rounds, ROUNDS, (unsigned long long)freed_free,
               (unsigned long long)__atomic_load_n(&bm_pml_g.tx_done_free, __ATOMIC_RELAXED));
    }
    free(buf);
    MPI_Finalize();
    return bm_test_summary("mt_txfree");
}
