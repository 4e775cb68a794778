/* bm_dtype: ping-pong latency and streaming bandwidth of non-contiguous data
 * between ranks 0 and 1, described by MPI derived datatypes (the same type
 * on both sides). Kinds (-k):
 *   vec1    MPI_Type_vector of doubles, block 1, stride 2 (every other double)
 *   vec64   MPI_Type_vector of doubles, block 64, stride 128
 *   indexed MPI_Type_indexed of doubles, blocks of 1, 2, 4, 8 doubles in turn,
 *           one double of gap after each
 *   struct  count elements of MPI_Type_create_struct {int; double; int}
 *           (C struct layout: 16 bytes of data in 24, two runs per element)
 *   contig  MPI_Type_contiguous of doubles: no gaps, the yardstick of what
 *           the same method measures when nothing needs packing (not one of
 *           bench/compare's kinds; run by hand next to a non-contiguous one)
 * The size is the data moved (packed bytes); the memory a message spans is
 * larger (twice for vec1 and vec64). -P sends the same data the way a
 * program without derived types would: MPI_Pack into a contiguous buffer,
 * send MPI_PACKED, receive and MPI_Unpack (the baseline the datatype path
 * must not be slower than).
 *
 * Per size the output line is "size latency(us) bandwidth(MB/s)": latency
 * is half the mean round trip of blocking MPI_Send/MPI_Recv, bandwidth is
 * rank 0 -> 1 with a window of non-blocking sends and a 4-byte
 * acknowledgement per window (bm_bw's method), 1e6 B/s of data, over at
 * least BW_WINDOWS_MIN timed windows with -t. With -P each message of a window is
 * packed into a staging buffer of its own and sent with MPI_Isend as soon
 * as it is packed; the receiver posts every MPI_Irecv first and unpacks each
 * message as it completes, in order: the same window of sends in flight as
 * the derived-datatype row, so that the two differ only in who packs. Every
 * message's data bytes carry a pattern checked after the timed loops, and
 * the gaps of the receive buffers must stay untouched. Only the MPI standard
 * is used: the same file builds with bmcc, mpicc.openmpi and mpicc.mpich. */
#include "bench_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_VEC1, K_VEC64, K_INDEXED, K_STRUCT, K_CONTIG, K_COUNT };
static const char *const kind_names[] = {"vec1", "vec64", "indexed", "struct", "contig"};

struct rec { /* the struct kind's element */
    int a;
    double b;
    int c;
};

/* One message of `size` data bytes: its type, count, memory span and the
 * data runs (offset, length) within that span, for filling and checking. */
struct msg {
    MPI_Datatype type;
    int count;
    size_t data, span;
    size_t nruns;
    size_t *off, *len;
};

static void runs_add(struct msg *m, size_t off, size_t len)
{
    if (m->nruns > 0 && m->off[m->nruns - 1] + m->len[m->nruns - 1] == off) {
        m->len[m->nruns - 1] += len;
        return;
    }
    m->off[m->nruns] = off;
    m->len[m->nruns] = len;
    m->nruns++;
}

static void msg_make(struct msg *m, enum kind k, size_t size)
{
    size_t n = size / sizeof(double);
    if (n == 0)
        n = 1;
    memset(m, 0, sizeof(*m));
    m->off = bm_bench_alloc((2 * n + 4) * sizeof(size_t));
    m->len = bm_bench_alloc((2 * n + 4) * sizeof(size_t));
    m->count = 1;
    switch (k) {
    case K_VEC1:
        MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &m->type);
        for (size_t i = 0; i < n; i++)
            runs_add(m, 16 * i, 8);
        m->span = 16 * n - 8;
        break;
    case K_VEC64: {
        size_t blk = n < 64 ? n : 64, nb = n / blk;
        MPI_Type_vector((int)nb, (int)blk, (int)(2 * blk), MPI_DOUBLE, &m->type);
        for (size_t i = 0; i < nb; i++)
            runs_add(m, 16 * blk * i, 8 * blk);
        m->span = 16 * blk * (nb - 1) + 8 * blk;
        break;
    }
    case K_INDEXED: {
        int *bl = bm_bench_alloc(n * sizeof(int)), *disp = bm_bench_alloc(n * sizeof(int));
        int nb = 0;
        size_t at = 0, left = n;
        for (int i = 0; left > 0; i++) {
            size_t b = (size_t)1 << (i % 4);
            if (b > left)
                b = left;
            bl[nb] = (int)b;
            disp[nb++] = (int)at;
            runs_add(m, 8 * at, 8 * b);
            at += b + 1;
            left -= b;
        }
        MPI_Type_indexed(nb, bl, disp, MPI_DOUBLE, &m->type);
        m->span = 8 * (at - 1);
        free(bl);
        free(disp);
        break;
    }
    case K_STRUCT: {
        size_t cnt = size / 16 ? size / 16 : 1;
        MPI_Datatype t;
        MPI_Type_create_struct(
            3, (int[]){1, 1, 1},
            (MPI_Aint[]){offsetof(struct rec, a), offsetof(struct rec, b), offsetof(struct rec, c)},
            (MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_INT}, &t);
        MPI_Type_create_resized(t, 0, sizeof(struct rec), &m->type);
        MPI_Type_free(&t);
        m->count = (int)cnt;
        for (size_t i = 0; i < cnt; i++) {
            size_t base = i * sizeof(struct rec);
            runs_add(m, base + offsetof(struct rec, a), sizeof(int));
            runs_add(m, base + offsetof(struct rec, b), sizeof(double));
            runs_add(m, base + offsetof(struct rec, c), sizeof(int));
        }
        m->span = cnt * sizeof(struct rec);
        break;
    }
    case K_CONTIG:
        MPI_Type_contiguous((int)n, MPI_DOUBLE, &m->type);
        runs_add(m, 0, 8 * n);
        m->span = 8 * n;
        break;
    case K_COUNT:
        break;
    }
    MPI_Type_commit(&m->type);
    for (size_t i = 0; i < m->nruns; i++)
        m->data += m->len[i];
}

static void msg_free(struct msg *m)
{
    MPI_Type_free(&m->type);
    free(m->off);
    free(m->len);
}

/* The pattern for byte j of the data of slot s from sender. */
static unsigned char pat(size_t j, int s, int sender, size_t size)
{
    return (unsigned char)((j * 131 + (size_t)s * 7919 + (size_t)sender * 104729 + size) >> 2 ^ j);
}

static void msg_fill(const struct msg *m, unsigned char *buf, int s, int sender, size_t size)
{
    memset(buf, 0xA5, m->span);
    for (size_t r = 0, j = 0; r < m->nruns; r++)
        for (size_t i = 0; i < m->len[r]; i++, j++)
            buf[m->off[r] + i] = pat(j, s, sender, size);
}

/* 0, or -1 after printing the first wrong byte (data or gap). */
static int msg_check(const struct msg *m, const unsigned char *buf, int s, int sender, size_t size,
                     int rank)
{
    size_t next = 0, j = 0;
    for (size_t r = 0; r <= m->nruns; r++) {
        size_t end = r < m->nruns ? m->off[r] : m->span;
        for (size_t g = next; g < end; g++)
            if (buf[g] != 0xA5) {
                fprintf(stderr, "bm_dtype: DATA ERROR rank %d size %zu: gap byte %zu written\n",
                        rank, size, g);
                return -1;
            }
        if (r == m->nruns)
            break;
        for (size_t i = 0; i < m->len[r]; i++, j++)
            if (buf[m->off[r] + i] != pat(j, s, sender, size)) {
                fprintf(stderr, "bm_dtype: DATA ERROR rank %d size %zu: data byte %zu (at %zu)\n",
                        rank, size, j, m->off[r] + i);
                return -1;
            }
        next = m->off[r] + m->len[r];
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A comment line with the spread of the bandwidth windows (ends[i]: the
 * end of timed window i, t0 the start of the first): tells one stalled
 * window from a uniformly slow run. */
static void windows_print(double *ends, long n, double t0, double bytes)
{
    for (long i = n - 1; i > 0; i--)
        ends[i] = bytes / (ends[i] - ends[i - 1]) / 1e6;
    ends[0] = bytes / (ends[0] - t0) / 1e6;
    qsort(ends, (size_t)n, sizeof(*ends), cmp_double);
    printf("# bandwidth of the %ld windows (MB/s): slowest %.0f, median %.0f, fastest %.0f\n", n,
           ends[0], ends[n / 2], ends[n - 1]);
}

/* Send or receive one message, natively or through MPI_Pack. */
static void xsend(const struct msg *m, unsigned char *buf, unsigned char *pk, int peer, int packed)
{
    if (!packed) {
        MPI_Send(buf, m->count, m->type, peer, 1, MPI_COMM_WORLD);
        return;
    }
    int pos = 0;
    MPI_Pack(buf, m->count, m->type, pk, (int)m->data, &pos, MPI_COMM_WORLD);
    MPI_Send(pk, pos, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
}

static void xrecv(const struct msg *m, unsigned char *buf, unsigned char *pk, int peer, int packed)
{
    if (!packed) {
        MPI_Recv(buf, m->count, m->type, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    int pos = 0;
    MPI_Recv(pk, (int)m->data, MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Unpack(pk, (int)m->data, &pos, buf, m->count, m->type, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    enum kind kind = K_VEC1;
    int packed = 0;
    /* Our own options first; the rest are bench_common's. */
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
            int found = 0;
            for (int k = 0; k < K_COUNT; k++)
                if (strcmp(argv[i + 1], kind_names[k]) == 0) {
                    kind = (enum kind)k;
                    found = 1;
                }
            if (!found) {
                fprintf(stderr,
                        "bm_dtype: unknown kind %s (vec1, vec64, indexed, struct, contig)\n",
                        argv[i + 1]);
                return 2;
            }
            i++;
        } else if (strcmp(argv[i], "-P") == 0) {
            packed = 1;
        } else {
            argv[n++] = argv[i];
        }
    }
    argc = n;
    argv[argc] = NULL;
    struct bm_bench_opts opts;
    int rank, nprocs, exit_code;
    if (bm_bench_start(&argc, &argv, "bm_dtype", 0, &opts, &rank, &nprocs, &exit_code) != 0)
        return exit_code;
    if (opts.min_size == 0)
        opts.min_size = 8;
    char what[160];
    snprintf(what, sizeof(what),
             "%s of doubles%s: ping-pong latency and windowed bandwidth rank 0 -> 1",
             kind_names[kind], packed ? ", sent as MPI_Pack + MPI_PACKED + MPI_Unpack" : "");
    bm_bench_header(&opts, rank, what, "size(B, data)  latency(us)  bandwidth(MB/s, 1e6 B/s)");

    /* BW_WINDOWS_MIN, with a time budget (-t, as bench/compare runs it):
     * the budget leaves a 4 MiB message about 40 ping-pong round trips,
     * which made two timed windows of bandwidth: one slow window (a
     * scheduler slice, a TCP loss probe on loopback) then halved the
     * figure, and the median of three repeats was decided by such luck
     * (tcp, 2-4 MiB: 2-3x between repeats). Without -t the iteration
     * count asked for rules (at least 2 windows). */
    enum { WINDOW = 16, BW_WINDOWS_MIN = 8 };
    const long windows_min = opts.budget > 0 ? BW_WINDOWS_MIN : 2;
    int active = rank < 2, peer = rank == 0 ? 1 : 0, failed = 0;
    double prev_iter = 0;
    size_t prev_size = 0;
    MPI_Request reqs[WINDOW];
    MPI_Status stats[WINDOW]; /* some headers' MPI_STATUSES_IGNORE draws warnings */
    for (size_t size = opts.min_size; size <= opts.max_size; size = bm_bench_size_next(size)) {
        struct bm_bench_plan plan;
        if (bm_bench_plan_size(&opts, size, prev_size, prev_iter, &plan))
            break;
        struct msg m;
        msg_make(&m, kind, size);
        /* distinct buffers per window slot, within the slot budget */
        int slots = WINDOW;
        while (slots > 1 && m.span * (size_t)slots > BM_BENCH_SLOT_BYTES_MAX)
            slots /= 2;
        unsigned char *sbuf = NULL, *rbuf = NULL, *pk = NULL;
        if (active) {
            sbuf = bm_bench_alloc(m.span * (size_t)slots);
            rbuf = bm_bench_alloc(m.span * (size_t)slots);
            /* staging buffers of -P: one per message of a window */
            pk = bm_bench_alloc((packed ? m.data * WINDOW : m.data) + 1);
            for (int s = 0; s < slots; s++) {
                msg_fill(&m, sbuf + m.span * (size_t)s, s, rank, size);
                memset(rbuf + m.span * (size_t)s, 0xA5, m.span);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* ping-pong */
        double t0 = MPI_Wtime();
        for (long i = 0; active && i < plan.warmup + plan.iters; i++) {
            if (i == plan.warmup)
                t0 = bm_bench_plan_timed(&opts, rank == 0 ? MPI_Wtime() - t0 : 0, &plan);
            if (rank == 0) {
                xsend(&m, sbuf, pk, peer, packed);
                xrecv(&m, rbuf, pk, peer, packed);
            } else {
                xrecv(&m, rbuf, pk, peer, packed);
                xsend(&m, sbuf, pk, peer, packed);
            }
        }
        if (!active)
            bm_bench_plan_timed(&opts, 0, &plan);
        double lat = (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)plan.iters);
        if (active && msg_check(&m, rbuf, 0, peer, size, rank) != 0)
            failed = 1;
        bm_bench_check_all(failed);
        /* streaming: windows of WINDOW messages, slot k % slots */
        long windows = plan.iters / WINDOW > windows_min ? plan.iters / WINDOW : windows_min;
        if (active)
            for (int s = 0; s < slots; s++)
                memset(rbuf + m.span * (size_t)s, 0xA5, m.span);
        /* each timed window's end, for the spread printed after the size */
        double *ends = bm_bench_alloc((size_t)windows * sizeof(double));
        MPI_Barrier(MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        for (long it = 0; active && it < windows + 1; it++) {
            if (it == 1)
                t1 = MPI_Wtime(); /* the first window warms up */
            if (it > 1)
                ends[it - 2] = MPI_Wtime();
            int ack = 0;
            for (int k = 0; k < WINDOW; k++) {
                unsigned char *b = (rank == 0 ? sbuf : rbuf) + m.span * (size_t)(k % slots);
                unsigned char *stage = pk + m.data * (size_t)k;
                if (packed && rank == 0) {
                    /* packing is part of the cost: each message is sent once packed */
                    int pos = 0;
                    MPI_Pack(b, m.count, m.type, stage, (int)m.data, &pos, MPI_COMM_WORLD);
                    MPI_Isend(stage, pos, MPI_PACKED, peer, 2, MPI_COMM_WORLD, &reqs[k]);
                } else if (packed) {
                    MPI_Irecv(stage, (int)m.data, MPI_PACKED, peer, 2, MPI_COMM_WORLD, &reqs[k]);
                } else if (rank == 0) {
                    MPI_Isend(b, m.count, m.type, peer, 2, MPI_COMM_WORLD, &reqs[k]);
                } else {
                    MPI_Irecv(b, m.count, m.type, peer, 2, MPI_COMM_WORLD, &reqs[k]);
                }
            }
            if (packed && rank == 1) {
                /* unpack each message as soon as it is in */
                for (int k = 0; k < WINDOW; k++) {
                    int pos = 0;
                    MPI_Wait(&reqs[k], &stats[k]);
                    MPI_Unpack(pk + m.data * (size_t)k, (int)m.data, &pos,
                               rbuf + m.span * (size_t)(k % slots), m.count, m.type,
                               MPI_COMM_WORLD);
                }
            }
            MPI_Waitall(WINDOW, reqs, stats);
            if (rank == 0)
                MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        }
        double t2 = MPI_Wtime();
        if (active)
            ends[windows - 1] = t2;
        double bw = (double)m.data * WINDOW * (double)windows / (t2 - t1) / 1e6;
        if (rank == 1)
            for (int s = 0; s < slots && !failed; s++)
                if (msg_check(&m, rbuf + m.span * (size_t)s, s, 0, size, rank) != 0)
                    failed = 1;
        bm_bench_check_all(failed);
        if (rank == 0) {
            prev_iter = lat * 2e-6;
            printf("%-10zu %12.3f %12.2f\n", size, lat, bw);
            windows_print(ends, windows, t1, (double)m.data * WINDOW);
            fflush(stdout);
        }
        free(ends);
        free(sbuf);
        free(rbuf);
        free(pk);
        msg_free(&m);
        prev_size = size;
        if (size == opts.max_size)
            break;
    }
    MPI_Finalize();
    return 0;
}
