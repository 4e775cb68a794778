/* The hotel's wheel (see hotel.h for the design and its reasons). Layout of
 * nodes[]: rooms 0..nrooms-1, then one list head per bucket, then the head
 * of the sweep list that holds the guests being evicted by the running
 * progress call. All lists are circular and linked by index, so check-out
 * unlinks a room without knowing which list holds it. */
#include "util/hotel.h"

#include <stdlib.h>
#include <string.h>

#define BM_HOTEL_DEFAULT_TICK_NS 65536u
#define BM_HOTEL_DEFAULT_SLOTS   1024u
#define BM_HOTEL_MAX_SLOTS       (1u << 24)

static uint64_t hotel_pow2_at_least(uint64_t x, uint64_t min)
{
    uint64_t p = min;
    while (p < x)
        p *= 2;
    return p;
}

static inline uint32_t hotel_bucket_head(const struct bm_util_hotel *h, uint64_t tick)
{
    return h->nrooms + (uint32_t)(tick & (h->nslots - 1));
}

static inline uint32_t hotel_sweep_head(const struct bm_util_hotel *h)
{
    return h->nrooms + h->nslots;
}

static void hotel_list_init(struct bm_util_hotel *h, uint32_t head)
{
    h->nodes[head].prev = h->nodes[head].next = head;
}

static inline void hotel_link_tail(struct bm_util_hotel *h, uint32_t head, uint32_t r)
{
    struct bm_util_hotel_node *n = h->nodes;
    uint32_t last = n[head].prev;
    n[r].prev = last;
    n[r].next = head;
    n[last].next = r;
    n[head].prev = r;
}

/* Unlink r; clears the bucket's bit when it leaves a bucket empty. */
static inline void hotel_unlink(struct bm_util_hotel *h, uint32_t r)
{
    struct bm_util_hotel_node *n = h->nodes;
    uint32_t p = n[r].prev, q = n[r].next;
    n[p].next = q;
    n[q].prev = p;
    if (p == q && p >= h->nrooms && p < hotel_sweep_head(h)) {
        uint32_t b = p - h->nrooms;
        h->nonempty[b / 64] &= ~((uint64_t)1 << (b % 64));
    }
}

static void hotel_free_room(struct bm_util_hotel *h, uint32_t r)
{
    h->nodes[r].prev = BM_UTIL_HOTEL_NIL;
    h->nodes[r].guest = NULL;
    h->nodes[r].next = h->free_head;
    h->free_head = r;
    h->occupied--;
}

static bm_status_t hotel_alloc(struct bm_util_hotel *h)
{
    size_t nnodes = (size_t)h->nrooms + h->nslots + 1;
    h->nodes = calloc(nnodes, sizeof(*h->nodes));
    h->nonempty = calloc(h->nslots / 64, sizeof(uint64_t));
    if (!h->nodes || !h->nonempty) {
        bm_util_hotel_fini(h);
        return BM_ERR_NO_MEMORY;
    }
    for (uint32_t i = h->nrooms; i < nnodes; i++)
        hotel_list_init(h, i);
    /* Free list in room order, so the first check-in gets room 0. */
    for (uint32_t r = 0; r < h->nrooms; r++) {
        h->nodes[r].prev = BM_UTIL_HOTEL_NIL;
        h->nodes[r].next = r + 1 < h->nrooms ? r + 1 : BM_UTIL_HOTEL_NIL;
    }
    h->free_head = 0;
    return BM_OK;
}

bm_status_t bm_util_hotel_init(struct bm_util_hotel *h, const struct bm_util_hotel_attr *attr)
{
    memset(h, 0, sizeof(*h));
    uint64_t tick = attr->tick_ns ? attr->tick_ns : BM_HOTEL_DEFAULT_TICK_NS;
    uint64_t slots = attr->nslots ? attr->nslots : BM_HOTEL_DEFAULT_SLOTS;
    if (attr->nrooms == 0 || attr->nrooms >= BM_UTIL_HOTEL_NIL - BM_HOTEL_MAX_SLOTS ||
        slots > BM_HOTEL_MAX_SLOTS || tick > (1ULL << 40) || !attr->evict)
        return BM_ERR_BAD_PARAM;
    h->nrooms = attr->nrooms;
    h->nslots = (uint32_t)hotel_pow2_at_least(slots, 64);
    h->tick_shift = (unsigned)__builtin_ctzll(hotel_pow2_at_least(tick, 1));
    h->evict = attr->evict;
    h->arg = attr->arg;
    h->next_due = UINT64_MAX;
    return hotel_alloc(h);
}

void bm_util_hotel_fini(struct bm_util_hotel *h)
{
    free(h->nodes);
    free(h->nonempty);
    h->nodes = NULL;
    h->nonempty = NULL;
    h->occupied = 0;
}

bm_status_t bm_util_hotel_checkin_at(struct bm_util_hotel *h, void *guest, uint64_t deadline_ns,
                                     int *room_out)
{
    uint32_t r = h->free_head;
    if (__builtin_expect(r == BM_UTIL_HOTEL_NIL, 0))
        return BM_ERR_OUT_OF_RESOURCE;
    h->free_head = h->nodes[r].next;
    h->nodes[r].guest = guest;
    h->nodes[r].deadline = deadline_ns;
    /* A deadline already swept past goes to the current bucket: next sweep. */
    uint64_t tick = deadline_ns >> h->tick_shift;
    if (tick < h->cur_tick)
        tick = h->cur_tick;
    uint32_t b = (uint32_t)(tick & (h->nslots - 1));
    hotel_link_tail(h, h->nrooms + b, r);
    h->nonempty[b / 64] |= (uint64_t)1 << (b % 64);
    if (deadline_ns < h->next_due)
        h->next_due = deadline_ns;
    h->occupied++;
    *room_out = (int)r;
    return BM_OK;
}

void bm_util_hotel_checkout(struct bm_util_hotel *h, int room)
{
    uint32_t r = (uint32_t)room;
    if (r >= h->nrooms || h->nodes[r].prev == BM_UTIL_HOTEL_NIL)
        return;
    hotel_unlink(h, r);
    hotel_free_room(h, r);
    if (h->occupied == 0)
        h->next_due = UINT64_MAX;
}

/* Insert r into the sweep list in deadline order (stable). Guests arrive
 * almost sorted (tick order; equal timeouts within a tick), so the walk
 * back from the tail usually stops at the first compare. */
static void hotel_sweep_insert(struct bm_util_hotel *h, uint32_t r)
{
    uint32_t sweep = hotel_sweep_head(h), pos = h->nodes[sweep].prev;
    while (pos != sweep && h->nodes[pos].deadline > h->nodes[r].deadline)
        pos = h->nodes[pos].prev;
    uint32_t nx = h->nodes[pos].next;
    h->nodes[r].prev = pos;
    h->nodes[r].next = nx;
    h->nodes[pos].next = r;
    h->nodes[nx].prev = r;
}

/* Move the due guests of one bucket to the sweep list; returns the earliest
 * deadline of those that stay (UINT64_MAX if none). */
static uint64_t hotel_collect_due(struct bm_util_hotel *h, uint64_t tick, uint64_t now)
{
    uint32_t head = hotel_bucket_head(h, tick);
    uint64_t min_left = UINT64_MAX;
    for (uint32_t r = h->nodes[head].next, nx; r != head; r = nx) {
        nx = h->nodes[r].next;
        if (h->nodes[r].deadline <= now) {
            hotel_unlink(h, r);
            hotel_sweep_insert(h, r);
        } else if (h->nodes[r].deadline < min_left) {
            min_left = h->nodes[r].deadline;
        }
    }
    return min_left;
}

/* Evict everyone on the sweep list, in order. The callback may check rooms
 * of the sweep list out: each iteration re-reads the list head. */
static int hotel_evict_swept(struct bm_util_hotel *h)
{
    uint32_t sweep = hotel_sweep_head(h);
    int n = 0;
    while (h->nodes[sweep].next != sweep) {
        uint32_t r = h->nodes[sweep].next;
        void *guest = h->nodes[r].guest;
        hotel_unlink(h, r);
        hotel_free_room(h, r);
        h->evict(h, (int)r, guest, h->arg);
        n++;
    }
    return n;
}

/* First non-empty bucket in [from, to) of the bitmap, or to. */
static uint32_t hotel_find_nonempty(const struct bm_util_hotel *h, uint32_t from, uint32_t to)
{
    for (uint32_t b = from; b < to;) {
        uint64_t w = h->nonempty[b / 64] >> (b % 64);
        if (w)
            return b + (uint32_t)__builtin_ctzll(w) < to ? b + (uint32_t)__builtin_ctzll(w) : to;
        b = (b / 64 + 1) * 64;
    }
    return to;
}

/* Lower bound on the deadlines in every bucket except the current one: the
 * start of the first non-empty bucket's next tick after cur_tick. */
static uint64_t hotel_next_bucket_start(const struct bm_util_hotel *h)
{
    uint32_t mask = h->nslots - 1, cur = (uint32_t)(h->cur_tick & mask);
    uint32_t b = hotel_find_nonempty(h, cur + 1, h->nslots);
    if (b == h->nslots)
        b = hotel_find_nonempty(h, 0, cur);
    if (b == cur)
        return UINT64_MAX;
    uint64_t dist = (b - cur) & mask;
    return (h->cur_tick + dist) << h->tick_shift;
}

static inline bool hotel_bucket_nonempty(const struct bm_util_hotel *h, uint64_t tick)
{
    uint32_t b = (uint32_t)(tick & (h->nslots - 1));
    return (h->nonempty[b / 64] >> (b % 64)) & 1;
}

int bm_util_hotel_progress_sweep_(struct bm_util_hotel *h, uint64_t now)
{
    uint64_t end = now >> h->tick_shift;
    if (end < h->cur_tick)
        end = h->cur_tick;
    /* No deadline is earlier than next_due: skip the buckets before it. */
    uint64_t start = h->next_due >> h->tick_shift;
    if (start < h->cur_tick)
        start = h->cur_tick;
    if (end - start >= h->nslots)
        start = end - h->nslots + 1;
    h->cur_tick = end;
    h->next_due = UINT64_MAX; /* check-ins by callbacks lower it again */
    /* Collect every due guest first, in tick order, then evict: what the
     * callbacks check in lands in buckets, never on the sweep list, so this
     * call cannot evict it again. */
    uint64_t min_left = UINT64_MAX;
    for (uint64_t t = start; t <= end; t++) {
        if (!hotel_bucket_nonempty(h, t))
            continue;
        uint64_t left = hotel_collect_due(h, t, now);
        if (left < min_left)
            min_left = left;
    }
    int n = hotel_evict_swept(h);
    uint64_t next = hotel_next_bucket_start(h);
    if (min_left < next)
        next = min_left;
    if (next < h->next_due)
        h->next_due = next;
    return n;
}
