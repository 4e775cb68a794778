/* Ring ping-pong between two processes through shared memory: the floor of
 * a transport built like sm's fast boxes, where each direction has its own
 * ring of 64-byte units in the receiver's memory and every message takes
 * the next unit (a fresh cache line), instead of one line shared by both
 * directions as in shm_pingpong. Each side publishes a message with one
 * release store of a word naming the message's position in its ring and
 * polls the next unit of the other ring with acquire loads: no software
 * beyond that. The gap between this and shm_cacheline_oneway is what the
 * ring layout itself costs; the gap between this and sm's 8-byte latency is
 * software (the MPI, PML and transport layers). Pinned to CPUs 0 and 1 when
 * there are two; best and median of several trials, half round trip, us.
 * Usage: shm_ring_pingpong [ROUNDS [MAX_SECONDS_PER_TRIAL [UNITS]]]. */
#include "limits_util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define TRIALS 15
#define UNIT   64

struct ring {
    unsigned char *units;
    uint32_t n;
};

static _Atomic uint64_t *word_at(struct ring *r, uint64_t pos)
{
    return (_Atomic uint64_t *)(r->units + (size_t)(pos % r->n) * UNIT);
}

/* Message pos (from 0) carries pos + 1, so that a zeroed ring holds none. */
static void put(struct ring *r, uint64_t pos)
{
    atomic_store_explicit(word_at(r, pos), pos + 1, memory_order_release);
}

static int wait_for(struct ring *r, uint64_t pos, const _Atomic int *stop)
{
    _Atomic uint64_t *w = word_at(r, pos);
    while (atomic_load_explicit(w, memory_order_acquire) != pos + 1)
        if (stop && atomic_load_explicit(stop, memory_order_relaxed))
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    double max_seconds = argc > 2 ? strtod(argv[2], NULL) : 0.2;
    uint32_t units = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 1024; /* 64 KiB, as sm */
    if (units == 0)
        units = 1;
    size_t ring_bytes = (size_t)units * UNIT;
    /* Two rings and a stop flag on a line of its own. */
    unsigned char *mem = mmap(NULL, 2 * ring_bytes + 4096, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("shm_ring_pingpong: mmap");
        return 1;
    }
    struct ring ping = {mem, units}, pong = {mem + ring_bytes, units};
    _Atomic int *stop = (_Atomic int *)(mem + 2 * ring_bytes);
    double samples[TRIALS];
    int pinned = 0;
    for (int t = 0; t < TRIALS; t++) {
        memset(mem, 0, 2 * ring_bytes);
        atomic_store(stop, 0);
        pid_t pid = bm_limits_fork_pinned("shm_ring_pingpong");
        if (pid == 0) {
            for (uint64_t pos = 0;; pos++) {
                if (wait_for(&ping, pos, stop) != 0)
                    _exit(0);
                put(&pong, pos);
            }
        }
        pinned = bm_limits_pin(0) == 0;
        double t0 = bm_limits_now();
        uint64_t done = 0;
        /* On a loaded machine a descheduled peer stretches each round trip
         * to a scheduler tick, so a trial also ends after max_seconds. */
        for (uint64_t pos = 0; done < rounds; pos++) {
            put(&ping, pos);
            wait_for(&pong, pos, NULL);
            done++;
            if ((done & 1023) == 0 && bm_limits_now() - t0 > max_seconds)
                break;
        }
        double elapsed = bm_limits_now() - t0;
        atomic_store(stop, 1);
        waitpid(pid, NULL, 0);
        samples[t] = elapsed * 1e6 / (2.0 * (double)done);
    }
    printf("# ring ping-pong between two processes (a ring of %u 64-byte units per direction, "
           "a fresh line per message), %s, %llu round trips x %d trials\n",
           units, pinned ? "pinned to CPUs 0 and 1" : "not pinned", (unsigned long long)rounds,
           TRIALS);
    double median = bm_limits_median(samples, TRIALS);
    printf("# median of the trials: %.4g us\n", median);
    /* bm_limits_median sorted the samples: the first is the best trial. */
    bm_limits_report("shm_ring_oneway", samples[0], "us");
    return 0;
}
