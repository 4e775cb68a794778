/* Buffers that are not what their counts say, over sm's single copy
 * (2 ranks, MPI_ERRORS_RETURN): both sides of the transfer fail with
 * MPI_ERR_BUFFER, instead of the sender dying of SIGSEGV in a fall-back
 * copy (what Open MPI's ob1+vader does) or a receive overwriting the
 * transport's shared memory and hanging the job ("shared memory
 * corrupted?"). With the argument "fatal" (MPI_ERRORS_ARE_FATAL) only the
 * first case runs: p2p.cmake checks that the job ends with a text naming
 * the operation, the rank, the peer and the buffer's range.
 * - a send whose count runs past the end of its mapping: read by the
 *   receiver alone (8 KiB), and with the sender's share of the copy
 *   (256 KiB, the PUT), nonblocking and blocking;
 * - a receive whose buffer runs into the sm segment (the guard page below
 *   it): refused before anything is written;
 * - the guard page itself: the page below this rank's sm segment is mapped
 *   inaccessible;
 * - traffic afterwards is intact (nothing of the job's shared memory was
 *   overwritten). */
#include "bm_test.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int rank;
static long page;

static int cls(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

/* mapped bytes of a fresh mapping with nothing mapped after them: a send
 * of more than mapped bytes from the returned address runs off the end. */
static unsigned char *short_buffer(size_t mapped)
{
    size_t len = (mapped + (size_t)page - 1) / (size_t)page * (size_t)page;
    unsigned char *b = mmap(NULL, len + 4 * (size_t)page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    BM_CHECK(b != MAP_FAILED);
    munmap(b + len, 4 * (size_t)page);
    memset(b, 0x5a, len);
    return b + len - mapped;
}

/* Rank 0 sends count bytes from a buffer of mapped bytes; rank 1 receives
 * into a buffer of count bytes. */
static void send_past_end(size_t mapped, size_t count, bool blocking)
{
    if (rank == 0) {
        unsigned char *s = short_buffer(mapped);
        int rc;
        if (blocking) {
            rc = MPI_Send(s, (int)count, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            BM_CHECK_EQ_INT(MPI_Isend(s, (int)count, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &r),
                            MPI_SUCCESS);
            rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        BM_CHECK_MSG(cls(rc) == MPI_ERR_BUFFER, "send of %zu bytes (%zu mapped): class %d", count,
                     mapped, cls(rc));
        munmap(s + mapped - (mapped + (size_t)page - 1) / (size_t)page * (size_t)page,
               (mapped + (size_t)page - 1) / (size_t)page * (size_t)page);
    } else {
        unsigned char *r = malloc(count);
        int rc;
        if (blocking) {
            rc = MPI_Recv(r, (int)count, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Request q;
            BM_CHECK_EQ_INT(MPI_Irecv(r, (int)count, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &q),
                            MPI_SUCCESS);
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        BM_CHECK_MSG(cls(rc) == MPI_ERR_BUFFER, "receive of %zu bytes: class %d", count, cls(rc));
        free(r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* This rank's sm segment [lo, hi) and whether the page below it is mapped
 * without access (the guard). */
static bool own_segment(uintptr_t *lo_out, bool *guarded)
{
    char want[32], line[512];
    snprintf(want, sizeof(want), "-sm-%d", rank);
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    uintptr_t prev_lo = 0, prev_hi = 0;
    char prev_perm[8] = "";
    bool found = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3)
            continue;
        if (strstr(line, "/dev/shm/bm-") && strstr(line, want)) {
            *lo_out = lo;
            *guarded = prev_hi == lo && prev_hi - prev_lo >= (uintptr_t)page &&
                       strncmp(prev_perm, "---", 3) == 0;
            found = true;
            break;
        }
        prev_lo = lo;
        prev_hi = hi;
        snprintf(prev_perm, sizeof(prev_perm), "%s", perm);
    }
    fclose(f);
    return found;
}

/* Rank 1 receives 64 KiB into an address one page below its segment (the
 * guard page): the receive must fail without writing. */
static void recv_into_segment(void)
{
    const int count = 65536;
    if (rank == 0) {
        unsigned char *s = malloc(count);
        memset(s, 1, count);
        int rc = MPI_Send(s, count, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
        BM_CHECK_EQ_INT(cls(rc), MPI_ERR_BUFFER);
        free(s);
    } else {
        uintptr_t lo = 0;
        bool guarded = false;
        BM_CHECK_MSG(own_segment(&lo, &guarded), "no /dev/shm/bm-*-sm-%d in /proc/self/maps", rank);
        BM_CHECK_MSG(guarded, "the page below the sm segment at %#lx is not a guard",
                     (unsigned long)lo);
        void *at = (void *)(lo - (uintptr_t)page);
        int rc = MPI_Recv(at, count, MPI_BYTE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        BM_CHECK_EQ_INT(cls(rc), MPI_ERR_BUFFER);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Both directions, eager and single-copy sizes, data checked. */
static void traffic_intact(void)
{
    static const size_t sizes[] = {8, 3000, 9000, 300000};
    int peer = 1 - rank;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        unsigned char *s = malloc(n), *r = malloc(n);
        bm_test_fill(s, n, rank * 100 + (int)i);
        MPI_Request q[2];
        MPI_Irecv(r, (int)n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(s, (int)n, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &q[1]);
        BM_CHECK_EQ_INT(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        BM_CHECK_MSG(bm_test_bad_bytes(r, n, peer * 100 + (int)i) == 0,
                     "%zu bytes from rank %d arrived wrong", n, peer);
        free(s);
        free(r);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    page = sysconf(_SC_PAGESIZE);
    BM_CHECK_EQ_INT(size, 2);
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        send_past_end(4096, 8192, false); /* ends the job */
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bm_test_current = "send past the end, read by the receiver";
    send_past_end(4096, 8192, false);
#ifndef __SANITIZE_ADDRESS__
    /* Under AddressSanitizer the sender's PUT share is where the mistake is
     * caught first: its process_vm_writev interceptor checks the local
     * range (the unmapped tail of the send buffer) and ends the process
     * with its own report, as it should for this program. */
    bm_test_current = "send past the end, with the sender's share";
    send_past_end(65536, 262144, false);
    bm_test_current = "blocking send past the end";
    send_past_end(65536, 262144, true);
#endif
    bm_test_current = "receive into the sm segment";
    recv_into_segment();
    bm_test_current = "traffic afterwards";
    traffic_intact();
    int rc = bm_test_summary("p2p_fault");
    MPI_Finalize();
    return rc;
}
