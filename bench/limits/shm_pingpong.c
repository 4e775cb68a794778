/* Cache-line ping-pong between two processes through shared memory: the
 * lowest one-way latency any shared-memory transport can reach on this
 * machine, because every small message needs at least one cache line to move
 * from the writer's core to the reader's. The parent and a forked child share
 * one cache-line-aligned counter in a MAP_SHARED mapping; each waits for the
 * other's value and answers with the next one. Pinned to CPUs 0 and 1 when
 * there are two. Prints half the round trip of the best of several trials
 * (a limit is what the hardware allows when nothing else runs), and the
 * median, in microseconds. Usage: shm_pingpong [ROUNDS [MAX_SECONDS_PER_TRIAL]]. */
#include "limits_util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define TRIALS 15

struct line {
    _Alignas(64) _Atomic uint64_t value;
    char pad[56];
};

#define STOP (UINT64_MAX - 1)

/* The child's side: the parent writes even values, the child answers each
 * with the next odd one, until the parent writes STOP. */
static void pong(struct line *l)
{
    for (uint64_t v = 0;; v += 2) {
        uint64_t seen;
        while ((seen = atomic_load_explicit(&l->value, memory_order_acquire)) != v)
            if (seen == STOP)
                return;
        atomic_store_explicit(&l->value, v + 1, memory_order_release);
    }
}

int main(int argc, char **argv)
{
    uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    double max_seconds = argc > 2 ? strtod(argv[2], NULL) : 0.2;
    struct line *l = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (l == MAP_FAILED) {
        perror("shm_pingpong: mmap");
        return 1;
    }
    double samples[TRIALS];
    int pinned = 0;
    for (int t = 0; t < TRIALS; t++) {
        atomic_store(&l->value, UINT64_MAX);
        pid_t pid = bm_limits_fork_pinned("shm_pingpong");
        if (pid == 0) {
            while (atomic_load_explicit(&l->value, memory_order_acquire) == UINT64_MAX)
                ;
            pong(l);
            _exit(0);
        }
        pinned = bm_limits_pin(0) == 0;
        double t0 = bm_limits_now();
        atomic_store_explicit(&l->value, 0, memory_order_release);
        /* The parent starts the game by writing 0; it then waits for odd
         * values and writes the following even one. */
        /* On a loaded machine a descheduled peer stretches each round trip to
         * a scheduler tick, so a trial also ends after max_seconds. */
        uint64_t done = 0;
        double elapsed = 0;
        for (uint64_t v = 1; done < rounds; v += 2) {
            while (atomic_load_explicit(&l->value, memory_order_acquire) != v)
                ;
            done++;
            if ((done & 1023) == 0 && (elapsed = bm_limits_now() - t0) > max_seconds)
                break;
            if (done < rounds)
                atomic_store_explicit(&l->value, v + 1, memory_order_release);
        }
        elapsed = bm_limits_now() - t0;
        atomic_store_explicit(&l->value, STOP, memory_order_release);
        waitpid(pid, NULL, 0);
        samples[t] = elapsed * 1e6 / (2.0 * (double)done);
    }
    printf("# cache-line ping-pong between two processes, %s, %llu round trips x %d trials\n",
           pinned ? "pinned to CPUs 0 and 1" : "not pinned", (unsigned long long)rounds, TRIALS);
    double median = bm_limits_median(samples, TRIALS);
    printf("# median of the trials: %.4g us\n", median);
    /* bm_limits_median sorted the samples: the first is the best trial. */
    bm_limits_report("shm_cacheline_oneway", samples[0], "us");
    return 0;
}
