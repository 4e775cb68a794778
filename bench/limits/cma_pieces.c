/* What a single copy of small-block non-contiguous data can gain over
 * packing: the data of a vector of 512-byte blocks with 512-byte gaps (issue
 * 15's vec64, 64 doubles every 128) moved from a forked child's memory into
 * the same layout here, five ways, best of TRIALS repeats each:
 *   getv   process_vm_readv with one iovec per block on each side (the
 *          PML's getv RGET of a non-contiguous layout: the kernel pins and
 *          unpins the pages of every remote iovec);
 *   sink   process_vm_readv of the remote blocks and gaps as one span, the
 *          local iovecs alternating between a destination block and a small
 *          scratch buffer that takes every gap (one pin per span; twice the
 *          bytes read);
 *   contig process_vm_readv of the data bytes alone as one contiguous run
 *          (the ceiling of a single copy here);
 *   pack, unpack
 *          memcpy of the blocks into a contiguous buffer and back, in this
 *          process (each side's copy of the pipelined pack/unpack, which
 *          the two ranks do at once on two cores).
 * Reports MB/s of data per way and size ("limit cma_pieces_<way>_<size>").
 * Not one of bench/limits/run's probes (no goal depends on it): run it by
 * hand, e.g. build/release/bench/bm_limit_cma_pieces. Usage: cma_pieces
 * [TRIALS]. */
#include "limits_util.h"

#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define BLK  512
#define IOVS 1024 /* IOV_MAX */

enum way { W_GETV, W_SINK, W_CONTIG, W_PACK, W_UNPACK, W_COUNT };
static const char *const way_names[] = {"getv", "sink", "contig", "pack", "unpack"};

static struct iovec lv[IOVS], rv[IOVS];
static char sink[BLK];

/* One move of nb blocks of the child's src into dst (or through pk, the
 * packed buffer); false when a read came short. */
static int move(enum way w, pid_t pid, char *src, char *dst, char *pk, size_t nb)
{
    switch (w) {
    case W_GETV:
        for (size_t i = 0; i < nb;) {
            size_t k = nb - i < IOVS ? nb - i : IOVS;
            for (size_t j = 0; j < k; j++) {
                lv[j] = (struct iovec){dst + 2 * BLK * (i + j), BLK};
                rv[j] = (struct iovec){src + 2 * BLK * (i + j), BLK};
            }
            if (process_vm_readv(pid, lv, k, rv, k, 0) != (ssize_t)(k * BLK))
                return 0;
            i += k;
        }
        return 1;
    case W_SINK:
        for (size_t i = 0; i < nb;) {
            size_t k = nb - i < IOVS / 2 ? nb - i : IOVS / 2, n = 0;
            for (size_t j = 0; j < k; j++) {
                lv[n++] = (struct iovec){dst + 2 * BLK * (i + j), BLK};
                if (j + 1 < k)
                    lv[n++] = (struct iovec){sink, BLK};
            }
            rv[0] = (struct iovec){src + 2 * BLK * i, (2 * k - 1) * BLK};
            if (process_vm_readv(pid, lv, n, rv, 1, 0) != (ssize_t)rv[0].iov_len)
                return 0;
            i += k;
        }
        return 1;
    case W_CONTIG:
        lv[0] = (struct iovec){pk, nb * BLK};
        rv[0] = (struct iovec){src, nb * BLK};
        return process_vm_readv(pid, lv, 1, rv, 1, 0) == (ssize_t)(nb * BLK);
    case W_PACK:
        for (size_t j = 0; j < nb; j++)
            memcpy(pk + BLK * j, src + 2 * BLK * j, BLK);
        return 1;
    case W_UNPACK:
        for (size_t j = 0; j < nb; j++)
            memcpy(dst + 2 * BLK * j, pk + BLK * j, BLK);
        return 1;
    case W_COUNT:
        break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 200;
    static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
    const size_t max = sizes[3];
    char *src = malloc(2 * max), *dst = malloc(2 * max), *pk = malloc(max);
    if (!src || !dst || !pk || trials < 1) {
        fprintf(stderr, "cma_pieces: cannot set up (memory or trials)\n");
        return 1;
    }
    memset(src, 0x11, 2 * max); /* pack and unpack move this process's own */
    pid_t pid = bm_limits_fork_owner("cma_pieces", (unsigned char *)src, 2 * max, 0x5a);
    if (pid < 0)
        return 1;
    bm_limits_pin(0);
    memset(dst, 0, 2 * max);
    memset(pk, 0, max);
    printf("# vector of %d-byte blocks, %d-byte gaps: MB/s of data, best of %d\n", BLK, BLK,
           trials);
    int rc = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; s++) {
        double best[W_COUNT];
        for (int w = 0; w < W_COUNT; w++)
            best[w] = 1e30;
        for (int t = 0; t < trials && rc == 0; t++)
            for (int w = 0; w < W_COUNT; w++) {
                double t0 = bm_limits_now();
                if (!move((enum way)w, pid, src, dst, pk, sizes[s] / BLK)) {
                    fprintf(stderr, "cma_pieces: process_vm_readv refused or short\n");
                    rc = 1;
                    break;
                }
                double el = bm_limits_now() - t0;
                if (el < best[w])
                    best[w] = el;
            }
        for (int w = 0; w < W_COUNT && rc == 0; w++) {
            char name[64];
            snprintf(name, sizeof(name), "cma_pieces_%s_%zuk", way_names[w], sizes[s] >> 10);
            bm_limits_report(name, (double)sizes[s] / best[w] / 1e6, "MB/s");
        }
    }
    /* the child's bytes arrive in a block (pack and unpack moved this
     * process's own), and no gap is written */
    if (rc == 0)
        rc = !move(W_SINK, pid, src, dst, pk, 4);
    if (rc == 0 && (dst[0] != 0x5a || dst[BLK] != 0 || dst[2 * BLK] != 0x5a)) {
        fprintf(stderr, "cma_pieces: the data read with process_vm_readv is wrong\n");
        rc = 1;
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return rc;
}
