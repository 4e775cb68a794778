/* The hotel: a fixed number of rooms holding guests until they check out or
 * their deadline passes, as in the usnic design, where every sent segment
 * checks in to start its retransmission timer, checks out when its ACK
 * arrives, and is evicted (to be resent) when the timer expires.
 *
 * Why a hashed timing wheel with a min-deadline cache: a sender checks in
 * and out millions of times per second and almost every guest checks out
 * before its deadline, so both must be O(1) with no allocation; a heap would
 * cost O(log n) on both. Rooms are preallocated and doubly linked (by index)
 * into the wheel bucket of their deadline's tick, so check-in and check-out
 * are a few stores. The progress call comes from every progress loop
 * iteration, and the cache makes it one compare when nothing is due: next_due
 * is a lower bound on every guest's deadline (check-in lowers it; check-out
 * leaves it, which is safe), recomputed only after a sweep. A bitmap of
 * non-empty buckets makes that recomputation a short word scan.
 *
 * Order: the guests evicted by one progress call go in deadline order
 * (check-in order for equal deadlines), and nobody is evicted before its
 * deadline. tick_ns (default 65.5 us) and nslots only set how much work a
 * sweep does, not the precision: a sweep visits the buckets of the ticks
 * since the earliest deadline, at most nslots of them, and sorts what it
 * collects with an insertion that costs one compare when the guests come
 * in order (equal timeouts); after a pause longer than a revolution
 * (tick_ns * nslots, default 67 ms) that sort does more work.
 *
 * The eviction callback runs inside bm_util_hotel_progress after the room
 * was freed; it may check guests in (the same one again, into any room) and
 * out. Guests it checks in whose deadline has already passed are evicted by
 * the next progress call, never by the running one, so a callback that
 * always re-checks in cannot loop. It must not call progress itself.
 * Not thread-safe: callers lock. */
#ifndef BM_UTIL_HOTEL_H
#define BM_UTIL_HOTEL_H

#include "bm_status.h"
#include "util/clock.h"

#include <stdbool.h>
#include <stdint.h>

struct bm_util_hotel;

/* A guest's deadline passed. The room is already free again: the next
 * check-in may get the same number, so the caller must forget it now. */
typedef void (*bm_util_hotel_evict_fn)(struct bm_util_hotel *h, int room, void *guest, void *arg);

struct bm_util_hotel_attr {
    uint32_t nrooms;  /* > 0 */
    uint64_t tick_ns; /* timer resolution; rounded up to a power of two; 0 = 65536 */
    uint32_t nslots;  /* wheel buckets; rounded up to a power of two >= 64; 0 = 1024 */
    bm_util_hotel_evict_fn evict;
    void *arg; /* passed to evict */
};

/* A room, or a list head (buckets and the sweep list come after the rooms). */
struct bm_util_hotel_node {
    void *guest;
    uint64_t deadline;
    uint32_t prev, next; /* indices; prev == BM_UTIL_HOTEL_NIL when the room is free */
};

#define BM_UTIL_HOTEL_NIL UINT32_MAX

struct bm_util_hotel {
    uint64_t next_due; /* no guest's deadline is earlier; UINT64_MAX when empty */
    struct bm_util_hotel_node *nodes;
    uint64_t *nonempty; /* one bit per bucket */
    uint32_t nrooms, nslots, occupied;
    uint32_t free_head; /* free rooms, linked through next */
    unsigned tick_shift;
    uint64_t cur_tick; /* buckets of earlier ticks have been swept */
    bm_util_hotel_evict_fn evict;
    void *arg;
};

/* BM_ERR_BAD_PARAM for zero rooms, no callback or absurd sizes;
 * BM_ERR_NO_MEMORY when allocation fails. */
bm_status_t bm_util_hotel_init(struct bm_util_hotel *h, const struct bm_util_hotel_attr *attr);
/* Frees everything; guests still checked in are dropped without eviction. */
void bm_util_hotel_fini(struct bm_util_hotel *h);

/* Check guest in until deadline_ns (bm_util_clock_now_ns() time base, or
 * any other monotonic base used consistently with progress). The room
 * number goes to *room_out. BM_ERR_OUT_OF_RESOURCE when every room is taken.
 * O(1), no allocation. */
bm_status_t bm_util_hotel_checkin_at(struct bm_util_hotel *h, void *guest, uint64_t deadline_ns,
                                     int *room_out);

/* The same with a deadline of bm_util_clock_now_ns() + timeout_ns. */
static inline bm_status_t bm_util_hotel_checkin(struct bm_util_hotel *h, void *guest,
                                                uint64_t timeout_ns, int *room_out)
{
    return bm_util_hotel_checkin_at(h, guest, bm_util_clock_now_ns() + timeout_ns, room_out);
}

/* Check the guest of room out (its timer stops). Checking out a free room
 * does nothing. O(1). */
void bm_util_hotel_checkout(struct bm_util_hotel *h, int room);

/* The guest in room, or NULL when the room is free (or holds a NULL guest). */
static inline void *bm_util_hotel_guest(const struct bm_util_hotel *h, int room)
{
    return h->nodes[room].prev == BM_UTIL_HOTEL_NIL ? NULL : h->nodes[room].guest;
}

static inline uint32_t bm_util_hotel_occupied(const struct bm_util_hotel *h)
{
    return h->occupied;
}

int bm_util_hotel_progress_sweep_(struct bm_util_hotel *h, uint64_t now_ns);

/* Evict every guest whose deadline is <= now_ns, calling the eviction
 * callback for each. Returns the number evicted. One compare when nothing
 * is due. */
static inline int bm_util_hotel_progress(struct bm_util_hotel *h, uint64_t now_ns)
{
    if (__builtin_expect(now_ns < h->next_due, 1))
        return 0;
    return bm_util_hotel_progress_sweep_(h, now_ns);
}

#endif
