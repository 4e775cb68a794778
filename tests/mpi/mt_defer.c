/* Deferred send starts under MPI_THREAD_MULTIPLE (src/pml/README.md
 * "Threads"): a thread whose send needs the progress lock (a rendezvous,
 * above the sendi limit) and finds it taken does not wait for it; it
 * leaves the start to the thread that holds the lock, which starts it as
 * it lets go (a rendezvous that needs nothing of the lock is started by
 * its own thread instead: mt_rndv.c, mt_frags.c). This one is the second
 * of two sm RGETs under BM_PML_RGET_PUT_MIN (set to 1 MiB for the test) to
 * one peer: the first starts without the lock (pml/rdma.c rget_alone's
 * per-peer record, an atomic word, says the peer's last one is done) and
 * stays in flight (its FIN waits for the held lock), so the second is part
 * of a stream, takes fragments, and is left to the holder. Rank 0's main
 * thread holds the progress lock inside a progress hook until its second
 * thread's two MPI_Isend calls of 256 KiB have returned (so neither can
 * have waited for the lock), then lets go; exactly one send must have been
 * deferred and one started by its thread (the PML's counters), and both
 * must arrive whole at rank 1, every byte checked. Repeated 20 times, each
 * of which must pass; the last round sends one message, to rank 0 itself:
 * a rendezvous to itself is started by its own thread too (self locks for
 * itself; until 2026-11-29, seventh session, it was always the holder's),
 * so none may be deferred and one must have started without the lock. */
#include "bm_test.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BIG    (256 << 10)
#define ROUNDS 20

static atomic_int armed, in_hook, sent, saw_sent;
static char *sbuf, *sbuf2;
static int dest;

/* Runs under the progress lock: hold it until the sender has returned. */
static int hold_hook(void *arg)
{
    (void)arg;
    if (!atomic_load(&armed))
        return 0;
    atomic_store(&in_hook, 1);
    double t0 = bm_test_now();
    while (!atomic_load(&sent) && bm_test_now() - t0 < 2)
        ;
    atomic_store(&saw_sent, atomic_load(&sent));
    atomic_store(&armed, 0);
    return 1;
}

static void *sender(void *arg)
{
    MPI_Request *r = arg;
    while (!atomic_load(&in_hook))
        ;
    MPI_Isend(sbuf, BIG, MPI_CHAR, dest, 9, MPI_COMM_WORLD, &r[0]);
    if (dest != 0)
        MPI_Isend(sbuf2, BIG, MPI_CHAR, dest, 10, MPI_COMM_WORLD, &r[1]);
    atomic_store(&sent, 1);
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
    sbuf = malloc(BIG);
    sbuf2 = malloc(BIG);
    char *rbuf = malloc(BIG);
    BM_CHECK(sbuf && sbuf2 && rbuf);
    if (!sbuf || !sbuf2 || !rbuf || size != 2) {
        MPI_Finalize();
        return bm_test_summary("mt_defer");
    }
    if (rank == 0)
        BM_CHECK_EQ_INT(bm_pml_progress_register(hold_hook, NULL), BM_OK);
    bm_test_current = "deferred start";
    for (int round = 0; round < ROUNDS; round++) {
        /* the last round sends to itself */
        int self = round == ROUNDS - 1;
        dest = self ? 0 : 1;
        if (rank == 0) {
            MPI_Request rr = MPI_REQUEST_NULL, sr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            bm_test_fill(sbuf, BIG, round);
            bm_test_fill(sbuf2, BIG, round + 1000);
            memset(rbuf, 0, BIG);
            if (self)
                MPI_Irecv(rbuf, BIG, MPI_CHAR, 0, 9, MPI_COMM_WORLD, &rr);
            uint64_t before = __atomic_load_n(&bm_pml_g.sends_deferred, __ATOMIC_RELAXED);
            uint64_t free_before = __atomic_load_n(&bm_pml_g.sends_rndv_free, __ATOMIC_RELAXED);
            atomic_store(&in_hook, 0);
            atomic_store(&sent, 0);
            atomic_store(&saw_sent, 0);
            atomic_store(&armed, 1);
            pthread_t th;
            pthread_create(&th, NULL, sender, sr);
            /* This thread drains (the sender waits for in_hook first). */
            while (atomic_load(&armed))
                bm_pml_progress();
            pthread_join(th, NULL);
            BM_CHECK_MSG(atomic_load(&saw_sent),
                         "round %d: the sender's MPI_Isend did not return within 2 s "
                         "while another thread held the progress lock",
                         round);
            uint64_t after = __atomic_load_n(&bm_pml_g.sends_deferred, __ATOMIC_RELAXED);
            BM_CHECK_MSG(after == before + (self ? 0 : 1),
                         "round %d: %llu sends deferred, expected %d", round,
                         (unsigned long long)(after - before), self ? 0 : 1);
            uint64_t free_after = __atomic_load_n(&bm_pml_g.sends_rndv_free, __ATOMIC_RELAXED);
            BM_CHECK_MSG(free_after == free_before + 1,
                         "round %d: %llu sends started without the progress lock, expected 1 "
                         "(%s)",
                         round, (unsigned long long)(free_after - free_before),
                         self ? "the rendezvous to itself" : "the first RGET to the peer");
            MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
            if (self) {
                MPI_Wait(&rr, MPI_STATUS_IGNORE);
                BM_CHECK_EQ_INT(bm_test_bad_bytes(rbuf, BIG, round), 0);
            }
        } else if (!self) {
            memset(rbuf, 0, BIG);
            MPI_Recv(rbuf, BIG, MPI_CHAR, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(bm_test_bad_bytes(rbuf, BIG, round), 0);
            memset(rbuf, 0, BIG);
            MPI_Recv(rbuf, BIG, MPI_CHAR, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(bm_test_bad_bytes(rbuf, BIG, round + 1000), 0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        BM_CHECK_EQ_INT(bm_pml_progress_unregister(hold_hook, NULL), BM_OK);
    free(sbuf);
    free(sbuf2);
    free(rbuf);
    MPI_Finalize();
    return bm_test_summary("mt_defer");
}
