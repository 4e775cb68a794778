/* Threaded stress test of the sm transport's lock-free FIFO (sm_fifo.h),
 * mirroring how sm uses it across processes: several producer threads own
 * a pool of fragments each, write a payload and append fragments to one
 * consumer's FIFO; the consumer checks every payload, per-producer order and
 * exactly-once delivery, then hands each fragment back through its
 * producer's own FIFO, from which the producer reuses it. Run it under TSan
 * (-DBM_SANITIZE=thread) to check the memory ordering: TSan cannot see
 * across processes, threads share the same code paths. */
#include "bm_test.h"
#include "btl/sm/sm_fifo.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PRODUCERS 3
#define POOL      64
#define MESSAGES  50000
#define STRIDE    128 /* header line + payload line */

struct region {
    unsigned char *mem;          /* POOL fragments of STRIDE bytes */
    struct bm_btl_sm_fifo *fifo; /* this thread's receive FIFO */
    struct bm_btl_sm_fifo_reader reader;
};

/* Region 0 is the consumer's; 1..PRODUCERS the producers'. */
static struct region regions[PRODUCERS + 1];

static struct bm_btl_sm_frag_hdr *resolve(void *ctx, bm_btl_sm_rptr_t p)
{
    (void)ctx;
    return (struct bm_btl_sm_frag_hdr *)(regions[bm_btl_sm_rptr_rank(p)].mem +
                                         bm_btl_sm_rptr_offset(p));
}

struct payload {
    uint64_t seq;
    uint64_t check;
};

static void *producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct region *me = &regions[id];
    uint32_t free_idx[POOL];
    int nfree = POOL;
    for (int i = 0; i < POOL; i++)
        free_idx[i] = (uint32_t)i;
    uint64_t seq = 0;
    while (seq < MESSAGES || nfree < POOL) {
        /* Take back what the consumer returned. */
        bm_btl_sm_rptr_t p;
        while ((p = bm_btl_sm_fifo_pop(me->fifo, &me->reader, resolve, NULL)) !=
               BM_BTL_SM_RPTR_NONE)
            free_idx[nfree++] = resolve(NULL, p)->index;
        if (seq < MESSAGES && nfree > 0) {
            uint32_t idx = free_idx[--nfree];
            uint64_t off = (uint64_t)idx * STRIDE;
            struct bm_btl_sm_frag_hdr *hdr = (struct bm_btl_sm_frag_hdr *)(me->mem + off);
            struct payload pl = {seq, seq * 0x9e3779b97f4a7c15ull ^ (uint64_t)id};
            memcpy(me->mem + off + sizeof(*hdr), &pl, sizeof(pl));
            hdr->index = idx;
            hdr->src = id;
            hdr->flags = 0;
            bm_btl_sm_fifo_push(regions[0].fifo, hdr, bm_btl_sm_rptr(id, off), resolve, NULL);
            seq++;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

int main(void)
{
    for (int r = 0; r <= PRODUCERS; r++) {
        regions[r].mem = aligned_alloc(BM_BTL_SM_CACHELINE, POOL * STRIDE);
        regions[r].fifo = aligned_alloc(BM_BTL_SM_CACHELINE, sizeof(struct bm_btl_sm_fifo));
        if (!regions[r].mem || !regions[r].fifo)
            return 1;
        memset(regions[r].mem, 0, POOL * STRIDE);
        bm_btl_sm_fifo_init(regions[r].fifo);
        regions[r].reader.stuck = BM_BTL_SM_RPTR_NONE;
    }
    pthread_t t[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++)
        BM_CHECK_EQ_INT(pthread_create(&t[i], NULL, producer, (void *)(intptr_t)(i + 1)), 0);

    uint64_t next[PRODUCERS + 1] = {0};
    long total = 0, bad_order = 0, bad_data = 0;
    while (total < (long)PRODUCERS * MESSAGES) {
        bm_btl_sm_rptr_t p = bm_btl_sm_fifo_pop(regions[0].fifo, &regions[0].reader, resolve, NULL);
        if (p == BM_BTL_SM_RPTR_NONE) {
            sched_yield(); /* 2 cores, 4 threads: let the producers run */
            continue;
        }
        struct bm_btl_sm_frag_hdr *hdr = resolve(NULL, p);
        int src = bm_btl_sm_rptr_rank(p);
        struct payload pl;
        memcpy(&pl, (unsigned char *)hdr + sizeof(*hdr), sizeof(pl));
        if (src < 1 || src > PRODUCERS || hdr->src != src) {
            bad_data++;
            continue;
        }
        if (pl.seq != next[src])
            bad_order++;
        if (pl.check != (pl.seq * 0x9e3779b97f4a7c15ull ^ (uint64_t)src))
            bad_data++;
        next[src] = pl.seq + 1;
        total++;
        hdr->flags = BM_BTL_SM_FRAG_F_RETURN;
        bm_btl_sm_fifo_push(regions[src].fifo, hdr, p, resolve, NULL);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    BM_CHECK_EQ_INT(bad_order, 0);
    BM_CHECK_EQ_INT(bad_data, 0);
    for (int i = 1; i <= PRODUCERS; i++)
        BM_CHECK_EQ_INT(next[i], MESSAGES);
    /* Nothing left anywhere. */
    BM_CHECK(bm_btl_sm_fifo_pop(regions[0].fifo, &regions[0].reader, resolve, NULL) ==
             BM_BTL_SM_RPTR_NONE);
    for (int r = 0; r <= PRODUCERS; r++) {
        free(regions[r].mem);
        free(regions[r].fifo);
    }
    return bm_test_summary("test_sm_fifo");
}
