/* Threaded stress test of the sm transport's fast boxes (sm_fbox.h), laid
 * out as sm lays them out across processes: several sender threads, each
 * with its own ring into one receiver's memory, and the receiver's hint
 * bitmap. Every sender writes messages of varying length (sequence number
 * and a checksum of the bytes) and sets its hint bit; the receiver polls
 * only the rings the hints name and checks every byte, per-sender order and
 * that nothing is lost or duplicated. Small rings make the senders wrap and
 * hit "full" constantly. Run it under TSan (-DBM_SANITIZE=thread): the
 * threads take the same code paths as processes, which TSan cannot see. */
#include "bm_test.h"
#include "btl/sm/sm_fbox.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define SENDERS   3
#define SLOTS     8
#define SLOT_SIZE 128
#define MESSAGES  20000

static unsigned char *rings_mem;
static _Atomic uint64_t hints[1];
static _Atomic int senders_done;

static struct bm_btl_sm_fbox_ring *ring_of(int s)
{
    return (struct bm_btl_sm_fbox_ring *)(rings_mem +
                                          (size_t)s * bm_btl_sm_fbox_ring_bytes(SLOTS, SLOT_SIZE));
}

static uint8_t pattern(int s, uint64_t seq, size_t i)
{
    return (uint8_t)(s * 31 + seq * 7 + i);
}

static void *sender(void *arg)
{
    int s = (int)(intptr_t)arg;
    struct bm_btl_sm_fbox_tx tx;
    bm_btl_sm_fbox_tx_init(&tx, ring_of(s), SLOTS, SLOT_SIZE);
    size_t room = SLOT_SIZE - BM_BTL_SM_FBOX_SLOT_HDR;
    for (uint64_t seq = 0; seq < MESSAGES;) {
        unsigned char *p = bm_btl_sm_fbox_reserve(&tx);
        if (!p) {
            sched_yield();
            continue;
        }
        size_t len = sizeof(seq) + (size_t)(seq % (room - sizeof(seq) + 1));
        memcpy(p, &seq, sizeof(seq));
        for (size_t i = sizeof(seq); i < len; i++)
            p[i] = pattern(s, seq, i);
        bm_btl_sm_fbox_commit(&tx, (uint32_t)len, (uint8_t)(s + 1));
        bm_btl_sm_hint_set(hints, s);
        seq++;
    }
    atomic_fetch_add(&senders_done, 1);
    return NULL;
}

int main(void)
{
    size_t bytes = (size_t)SENDERS * bm_btl_sm_fbox_ring_bytes(SLOTS, SLOT_SIZE);
    rings_mem = aligned_alloc(BM_BTL_SM_CACHELINE, bytes);
    BM_CHECK(rings_mem != NULL);
    memset(rings_mem, 0, bytes);
    struct bm_btl_sm_fbox_rx rx[SENDERS];
    for (int s = 0; s < SENDERS; s++) {
        bm_btl_sm_fbox_ring_init(ring_of(s));
        bm_btl_sm_fbox_rx_init(&rx[s], ring_of(s), SLOTS, SLOT_SIZE);
    }
    atomic_store(&hints[0], 0);

    pthread_t th[SENDERS];
    for (int s = 0; s < SENDERS; s++)
        BM_CHECK(pthread_create(&th[s], NULL, sender, (void *)(intptr_t)s) == 0);

    uint64_t expect[SENDERS] = {0};
    long bad = 0, total = 0, idle_with_data = 0;
    for (;;) {
        int finished = atomic_load(&senders_done) == SENDERS;
        uint64_t bits = bm_btl_sm_hint_take(hints, 0);
        while (bits) {
            int s = __builtin_ctzll(bits);
            bits &= bits - 1;
            uint32_t len;
            uint8_t tag;
            const unsigned char *p;
            while ((p = bm_btl_sm_fbox_peek(&rx[s], &len, &tag)) != NULL) {
                uint64_t seq;
                memcpy(&seq, p, sizeof(seq));
                if (seq != expect[s] || tag != s + 1 || len < sizeof(seq))
                    bad++;
                for (size_t i = sizeof(seq); i < len; i++)
                    if (p[i] != pattern(s, seq, i))
                        bad++;
                expect[s] = seq + 1;
                bm_btl_sm_fbox_consume(&rx[s]);
                total++;
            }
            bm_btl_sm_fbox_publish(&rx[s]);
        }
        if (finished) {
            /* Every sender is done and its last bit was taken above: a
             * message still in a ring here was stranded by the hints. */
            for (int s = 0; s < SENDERS; s++) {
                uint32_t len;
                uint8_t tag;
                if (bm_btl_sm_fbox_peek(&rx[s], &len, &tag))
                    idle_with_data++;
            }
            if (atomic_load(&hints[0]) == 0)
                break;
        }
    }
    for (int s = 0; s < SENDERS; s++)
        pthread_join(th[s], NULL);

    BM_CHECK_EQ_INT(bad, 0);
    BM_CHECK_EQ_INT(idle_with_data, 0);
    BM_CHECK_EQ_INT(total, (long)SENDERS * MESSAGES);
    for (int s = 0; s < SENDERS; s++)
        BM_CHECK_EQ_INT((long)expect[s], MESSAGES);
    free(rings_mem);
    return bm_test_summary("test_sm_fastbox");
}
