/* Single-thread memcpy bandwidth at 64 KiB, 1 MiB, 4 MiB and 64 MiB: the
 * ceiling for any copy-in/copy-out transport, which moves every byte with at
 * least one memcpy. Each size copies between two separate, pre-touched
 * buffers repeatedly for a fixed time; the best of several trials is
 * reported in MB/s (1e6 bytes per second, as the MPI benchmarks use).
 * Usage: memcpy_bw [SECONDS_PER_TRIAL]. */
#include "limits_util.h"

#include <string.h>

#define TRIALS 5

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 0.1;
    static const size_t sizes[] = {64 << 10, 1 << 20, 4 << 20, 64 << 20};
    static const char *names[] = {"memcpy_64k", "memcpy_1m", "memcpy_4m", "memcpy_64m"};
    bm_limits_pin(0);
    printf("# single-thread memcpy between two buffers, best of %d trials of %.2g s\n", TRIALS,
           seconds);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        unsigned char *src = malloc(n), *dst = malloc(n);
        if (!src || !dst) {
            fprintf(stderr, "memcpy_bw: cannot allocate 2 x %zu bytes\n", n);
            return 1;
        }
        memset(src, 0x5a, n);
        memset(dst, 0, n);
        double best = 0;
        unsigned sink = 0;
        for (int t = 0; t < TRIALS; t++) {
            long reps = 0;
            double t0 = bm_limits_now(), el;
            do {
                memcpy(dst, src, n);
                /* Reading the copy keeps the compiler from dropping it. */
                sink += dst[reps % n];
                src[0] = (unsigned char)reps;
                reps++;
            } while ((el = bm_limits_now() - t0) < seconds);
            double mbs = (double)n * (double)reps / el / 1e6;
            if (mbs > best)
                best = mbs;
        }
        if (sink == 0xdeadbeef)
            printf("#\n");
        bm_limits_report(names[k], best, "MB/s");
        free(src);
        free(dst);
    }
    return 0;
}
