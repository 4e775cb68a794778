/* Single copy over sm through the PML's RGET + FIN protocol (src/pml/rdma.c),
 * run with BM_PML_RGET_LIMIT low enough that large messages use it: every
 * byte of messages around and far above the limit arrives, in order with
 * eager traffic; a receive buffer smaller than the message gets exactly what
 * fits and MPI_ERR_TRUNCATE, with nothing written past it; synchronous and
 * unexpected (receive posted late) messages work. With the argument
 * "fallback" rank 1 turns single copy off for itself, so rank 0 still offers
 * RGET but rank 1 cannot read: it must fall back to RNDV/ACK/FRAG and the
 * data must still arrive intact. With "log=R:TEXT" rank R logs the PML at
 * debug level into a file and checks at the end that TEXT was logged: the
 * variants in CMakeLists.txt use it to prove which way the data went (the
 * sender's PUT, fragments asked for by choice, the fallback after a failed
 * get or put), since every way delivers the same bytes. Every run also
 * checks the PML's RGET counters: rank 0 sent each of its 8 large messages
 * as an RGET; without arguments rank 1 read bytes by single copy, and with
 * "fallback" it read none and answered all 8 with an ACK; so neither run
 * can pass with the data moved some other way. With "oversub" both ranks
 * bind themselves to one CPU before MPI_Init, so the host has more ranks
 * than cores: the PML must see that, and rank 1 must read every byte
 * itself (no PUT share: the sender has no idle core to write on).
 *
 * The same program runs over ofi (tests/fault/ofi.cmake: the RGET reads
 * the sender's registered buffer with the provider's RMA read); there
 * "fallback" turns off rank 1's reading (BM_BTL_OFI_RNDV_GET=0), and with
 * "allocmem" the buffers come from MPI_Alloc_mem, whose registration rank
 * 0's RGETs must offer (btl_mem.c's lookup counter grows) instead of
 * registering them again. */
#include "bm_test.h"
#include "btl/btl.h"
#include "pml/pml_internal.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pat(int msg, size_t i)
{
    return (unsigned char)(msg * 131 + i * 7 + (i >> 9));
}

static void fill(unsigned char *b, int msg, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(msg, i);
}

static long check(const unsigned char *b, int msg, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != pat(msg, i);
    return bad;
}

/* Rank `rank` logs into a temporary file from now on when want names it. */
struct log_capture {
    const char *text; /* what must appear, or NULL */
    FILE *file;
    int saved_fd;
};

static void log_capture_start(struct log_capture *lc, const char *arg, int rank)
{
    lc->text = NULL;
    lc->file = NULL;
    lc->saved_fd = -1;
    if (!arg || strncmp(arg, "log=", 4) != 0 || atoi(arg + 4) != rank || !strchr(arg, ':'))
        return;
    lc->text = strchr(arg, ':') + 1;
    lc->file = tmpfile();
    BM_CHECK(lc->file != NULL);
    fflush(stderr);
    lc->saved_fd = dup(2);
    dup2(fileno(lc->file), 2);
    setenv("BM_VERBOSE", "pml:4", 1);
}

static void log_capture_check(struct log_capture *lc, int rank)
{
    if (!lc->text)
        return;
    fflush(stderr);
    dup2(lc->saved_fd, 2);
    close(lc->saved_fd);
    rewind(lc->file);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), lc->file))
        found = strstr(line, lc->text) != NULL;
    fclose(lc->file);
    if (!found)
        fprintf(stderr, "test_sm_rget rank %d: the PML never logged \"%s\"\n", rank, lc->text);
    BM_CHECK(found);
}

static const size_t sizes[] = {65536, 65537, 200000, 1 << 20, 4 << 20};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))
/* Messages rank 0 sends at or above BM_PML_RGET_LIMIT (64k): the sizes, the
 * truncated one, the synchronous one and the unexpected one. */
#define NRGET (NSIZES + 3)

/* The counters of src/pml/rdma.c say which way the data went. */
static void check_counters(int rank, const char *mode)
{
    uint64_t sent = __atomic_load_n(&bm_pml_g.rget_sent, __ATOMIC_RELAXED);
    uint64_t read = __atomic_load_n(&bm_pml_g.rget_read_bytes, __ATOMIC_RELAXED);
    uint64_t acked = __atomic_load_n(&bm_pml_g.rget_acked, __ATOMIC_RELAXED);
    if (rank == 0) {
        BM_CHECK_MSG(sent == NRGET,
                     "rank 0 sent %llu RGETs, not %d: the large messages did "
                     "not take the single-copy protocol",
                     (unsigned long long)sent, NRGET);
    } else if (strcmp(mode, "plain") == 0) {
        BM_CHECK_MSG(read > 0,
                     "rank 1 read no byte by single copy (%llu RGETs answered with "
                     "an ACK)",
                     (unsigned long long)acked);
    } else if (strcmp(mode, "oversub") == 0) {
        /* the 5 sizes, the truncated 300000 bytes, the 1 MiB Ssend, the
         * unexpected 500000 */
        uint64_t all = 300000 + (1 << 20) + 500000;
        for (int k = 0; k < NSIZES; k++)
            all += sizes[k];
        BM_CHECK_MSG(read == all,
                     "rank 1 on an oversubscribed host read %llu bytes by single copy, not "
                     "all %llu: the sender was asked to write a share",
                     (unsigned long long)read, (unsigned long long)all);
    } else if (strcmp(mode, "fallback") == 0) {
        BM_CHECK_MSG(read == 0 && acked == NRGET,
                     "rank 1 without single copy read %llu bytes by single copy and answered "
                     "%llu of %d RGETs with an ACK: the fallback did not run",
                     (unsigned long long)read, (unsigned long long)acked, NRGET);
    }
}

int main(int argc, char **argv)
{
    bool fallback = argc > 1 && strcmp(argv[1], "fallback") == 0;
    bool allocmem = argc > 1 && strcmp(argv[1], "allocmem") == 0;
    bool oversub = argc > 1 && strcmp(argv[1], "oversub") == 0;
    const char *r = getenv("BMRUN_RANK");
    if (oversub) /* both ranks on one CPU (bmrun gave each its own) */
        BM_CHECK(bm_test_bind_lowest_cpu());
    if (fallback && r && atoi(r) == 1) {
        setenv("BM_BTL_SM_SINGLE_COPY", "0", 1);
        setenv("BM_BTL_OFI_RNDV_GET", "0", 1);
    }
    struct log_capture lc;
    log_capture_start(&lc, argc > 1 ? argv[1] : NULL, r ? atoi(r) : -1);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(size, 2);
    size_t max = 4 << 20;
    unsigned char *buf = NULL;
    struct bm_btl_base_mem_stats ms0, ms1;
    bm_btl_base_mem_stats(&ms0);
    if (allocmem)
        BM_CHECK_EQ_INT(MPI_Alloc_mem((MPI_Aint)(max + 64), MPI_INFO_NULL, &buf), MPI_SUCCESS);
    else
        buf = malloc(max + 64);
    BM_CHECK(buf != NULL);

    /* Sizes around and above the limit, with a small eager message between
     * each: order across protocols. */
    for (int k = 0; k < NSIZES; k++) {
        int small = k;
        if (rank == 0) {
            fill(buf, k, sizes[k]);
            MPI_Send(buf, (int)sizes[k], MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Send(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        } else {
            memset(buf, 0, max);
            MPI_Status st;
            MPI_Recv(buf, (int)max, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            BM_CHECK_EQ_INT(count, (long)sizes[k]);
            BM_CHECK_EQ_INT(check(buf, k, sizes[k]), 0);
            int got = -1;
            MPI_Recv(&got, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            BM_CHECK_EQ_INT(got, k);
        }
    }

    /* Truncation: 1 MiB into 300000 bytes; a guard after the buffer. */
    if (rank == 0) {
        fill(buf, 50, 1 << 20);
        MPI_Send(buf, 1 << 20, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        memset(buf, 0xee, max);
        MPI_Status st;
        int rc = MPI_Recv(buf, 300000, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st);
        int cls;
        MPI_Error_class(rc, &cls);
        BM_CHECK_EQ_INT(cls, MPI_ERR_TRUNCATE);
        BM_CHECK_EQ_INT(check(buf, 50, 300000), 0);
        long guard = 0;
        for (size_t i = 300000; i < 300064; i++)
            guard += buf[i] != 0xee;
        BM_CHECK_EQ_INT(guard, 0);
    }

    /* Synchronous send, and a message that arrives before its receive. */
    if (rank == 0) {
        fill(buf, 60, 1 << 20);
        MPI_Ssend(buf, 1 << 20, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        fill(buf, 61, 500000);
        MPI_Send(buf, 500000, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
    } else {
        memset(buf, 0, max);
        MPI_Recv(buf, 1 << 20, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(check(buf, 60, 1 << 20), 0);
        usleep(100000); /* the RGET of tag 4 waits as an unexpected message */
        memset(buf, 0, max);
        MPI_Recv(buf, 500000, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(check(buf, 61, 500000), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    log_capture_check(&lc, rank);
    if (oversub)
        BM_CHECK_MSG(bm_pml_g.oversubscribed,
                     "rank %d: two ranks bound to one CPU, yet the PML does not call the host "
                     "oversubscribed",
                     rank);
    check_counters(rank, fallback                ? "fallback"
                         : oversub               ? "oversub"
                         : argc > 1 && !allocmem ? "log"
                                                 : "plain");
    if (allocmem) {
        /* Every RGET of rank 0 found the block's registration. */
        bm_btl_base_mem_stats(&ms1);
        if (rank == 0)
            BM_CHECK_MSG(ms1.hits - ms0.hits >= NRGET,
                         "rank 0's RGETs found MPI_Alloc_mem's registration %llu times, not "
                         "%d: they registered the buffer again",
                         (unsigned long long)(ms1.hits - ms0.hits), NRGET);
        MPI_Free_mem(buf);
    } else {
        free(buf);
    }
    char name[64];
    snprintf(name, sizeof(name), "test_sm_rget rank %d%s", rank, fallback ? " (fallback)" : "");
    int rc = bm_test_summary(name);
    MPI_Finalize();
    return rc;
}
