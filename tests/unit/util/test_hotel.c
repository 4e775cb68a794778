/* Tests of the hotel (src/util/hotel.h) with a fake clock: evictions come in
 * deadline order and never early or late, checked-out guests never fire, a
 * full hotel refuses check-in until a room frees up, re-check-in from inside
 * the eviction callback works (and cannot loop), guests several wheel
 * revolutions ahead wait their turn, the fast path is armed only when
 * something is due, and a long random run against a simple model. */
#include "util/hotel.h"

#include "bm_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define TICK 1000u /* rounded up to 1024 ns by the hotel */

struct log {
    int n;
    uintptr_t guest[4096];
    uint64_t when[4096];
    uint64_t now;  /* time of the running progress call */
    int recheckin; /* test_recheckin: how many more re-check-ins to do */
};

static void record(struct bm_util_hotel *h, int room, void *guest, void *arg)
{
    struct log *l = arg;
    BM_CHECK(bm_util_hotel_guest(h, room) == NULL); /* room freed before the callback */
    if (l->n < 4096) {
        l->guest[l->n] = (uintptr_t)guest;
        l->when[l->n] = l->now;
    }
    l->n++;
}

static void hotel_setup(struct bm_util_hotel *h, uint32_t rooms, uint32_t slots,
                        bm_util_hotel_evict_fn fn, struct log *l)
{
    struct bm_util_hotel_attr attr = {
        .nrooms = rooms, .tick_ns = TICK, .nslots = slots, .evict = fn, .arg = l};
    BM_CHECK_EQ_INT(bm_util_hotel_init(h, &attr), BM_OK);
}

static int run(struct bm_util_hotel *h, struct log *l, uint64_t now)
{
    l->now = now;
    return bm_util_hotel_progress(h, now);
}

static void test_in_order(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 512, 64, record, &l);
    /* 500 guests, deadlines a permutation of 10..509 ticks: spans ~8 revolutions. */
    int room;
    for (uintptr_t i = 0; i < 500; i++) {
        uintptr_t d = 10 + (i * 37) % 500;
        BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(&h, (void *)d, d * 1024 + 100, &room), BM_OK);
    }
    BM_CHECK_EQ_INT(run(&h, &l, 10 * 1024 + 99), 0); /* one ns early: nothing */
    for (uint64_t now = 10 * 1024; now < 520 * 1024; now += 300)
        run(&h, &l, now);
    BM_CHECK_EQ_INT(l.n, 500);
    int bad_order = 0, late = 0;
    for (int i = 0; i < l.n; i++) {
        bad_order += l.guest[i] != (uintptr_t)(10 + i);
        uint64_t deadline = l.guest[i] * 1024 + 100;
        late += l.when[i] < deadline || l.when[i] >= deadline + 300;
    }
    BM_CHECK_EQ_INT(bad_order, 0);
    BM_CHECK_EQ_INT(late, 0);
    BM_CHECK_EQ_INT(bm_util_hotel_occupied(&h), 0);
    BM_CHECK(h.next_due == UINT64_MAX);
    bm_util_hotel_fini(&h);
}

/* Different timeouts whose deadlines share a tick, checked in against
 * deadline order: one progress call evicts them in deadline order. */
static void test_in_order_within_tick(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 16, 64, record, &l);
    int room;
    for (uintptr_t i = 10; i > 0; i--) /* deadlines 5000+10*i, latest first */
        bm_util_hotel_checkin_at(&h, (void *)i, 5 * 1024 + 10 * i, &room);
    bm_util_hotel_checkin_at(&h, (void *)11, 5 * 1024 + 10, &room); /* ties with guest 1 */
    BM_CHECK_EQ_INT(run(&h, &l, 6 * 1024), 11);
    static const uintptr_t want[11] = {1, 11, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    int bad = 0;
    for (int i = 0; i < 11; i++)
        bad += l.guest[i] != want[i];
    BM_CHECK_EQ_INT(bad, 0);
    bm_util_hotel_fini(&h);
}

static void test_checked_out_never_fire(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 1000, 0, record, &l);
    int rooms[1000];
    for (uintptr_t i = 0; i < 1000; i++)
        bm_util_hotel_checkin_at(&h, (void *)i, 5000 + i, &rooms[i]);
    for (int i = 1; i < 1000; i += 2)
        bm_util_hotel_checkout(&h, rooms[i]);
    bm_util_hotel_checkout(&h, rooms[1]); /* twice: harmless */
    bm_util_hotel_checkout(&h, -1);       /* not a room: harmless */
    BM_CHECK_EQ_INT(bm_util_hotel_occupied(&h), 500);
    BM_CHECK_EQ_INT(run(&h, &l, 1000000), 500);
    int odd = 0;
    for (int i = 0; i < l.n; i++)
        odd += l.guest[i] % 2;
    BM_CHECK_EQ_INT(odd, 0);
    /* Everyone out before the deadline: nothing fires, fast path disarmed. */
    for (uintptr_t i = 0; i < 10; i++)
        bm_util_hotel_checkin_at(&h, (void *)i, 2000000, &rooms[i]);
    for (int i = 0; i < 10; i++)
        bm_util_hotel_checkout(&h, rooms[i]);
    BM_CHECK(h.next_due == UINT64_MAX);
    BM_CHECK_EQ_INT(run(&h, &l, 3000000), 0);
    BM_CHECK_EQ_INT(l.n, 500);
    bm_util_hotel_fini(&h);
}

static void test_full(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 8, 0, record, &l);
    int rooms[9], seen = 0;
    for (uintptr_t i = 0; i < 8; i++) {
        BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(&h, (void *)(i + 1), 1000, &rooms[i]), BM_OK);
        BM_CHECK(rooms[i] >= 0 && rooms[i] < 8);
        seen |= 1 << rooms[i];
        BM_CHECK(bm_util_hotel_guest(&h, rooms[i]) == (void *)(i + 1));
    }
    BM_CHECK_EQ_INT(seen, 0xff); /* all distinct */
    BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(&h, (void *)9, 1000, &rooms[8]),
                    BM_ERR_OUT_OF_RESOURCE);
    bm_util_hotel_checkout(&h, rooms[3]);
    BM_CHECK(bm_util_hotel_guest(&h, rooms[3]) == NULL);
    BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(&h, (void *)9, 1000, &rooms[8]), BM_OK);
    BM_CHECK_EQ_INT(rooms[8], rooms[3]);
    BM_CHECK_EQ_INT(run(&h, &l, 1000), 8);
    BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(&h, (void *)10, 1000, &rooms[0]), BM_OK);
    bm_util_hotel_fini(&h);
}

/* Retransmission style: each eviction checks the guest in again 5 us later. */
static void recheckin(struct bm_util_hotel *h, int room, void *guest, void *arg)
{
    struct log *l = arg;
    record(h, room, guest, arg);
    if (l->recheckin-- > 0) {
        int r;
        BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(h, guest, l->now + 5000, &r), BM_OK);
    }
}

/* Re-check-in with a deadline already past: must wait for the next call. */
static void recheckin_past(struct bm_util_hotel *h, int room, void *guest, void *arg)
{
    record(h, room, guest, arg);
    int r;
    BM_CHECK_EQ_INT(bm_util_hotel_checkin_at(h, guest, 0, &r), BM_OK);
}

static void test_recheckin(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 1, 64, recheckin, &l); /* one room: the evicted guest reuses it */
    l.recheckin = 3;
    int room;
    bm_util_hotel_checkin_at(&h, (void *)7, 5000, &room);
    for (uint64_t now = 0; now <= 100000; now += 1000)
        run(&h, &l, now);
    BM_CHECK_EQ_INT(l.n, 4);
    for (int i = 0; i < l.n && i < 4; i++)
        BM_CHECK_EQ_INT(l.when[i], 5000 + 5000 * (uint64_t)i);
    bm_util_hotel_fini(&h);

    static struct log p;
    hotel_setup(&h, 2, 64, recheckin_past, &p);
    bm_util_hotel_checkin_at(&h, (void *)1, 20000, &room);
    BM_CHECK_EQ_INT(run(&h, &p, 20100), 1); /* does not loop */
    BM_CHECK_EQ_INT(run(&h, &p, 20100), 1); /* the re-check-in fires on the next call */
    BM_CHECK_EQ_INT(bm_util_hotel_occupied(&h), 1);
    /* Two guests due in different ticks: each re-check-in of the first must
     * not be evicted again when the sweep reaches the later tick. */
    bm_util_hotel_checkin_at(&h, (void *)2, 30000, &room);
    BM_CHECK_EQ_INT(run(&h, &p, 40000), 2); /* guest 1 again, and guest 2 */
    BM_CHECK_EQ_INT(run(&h, &p, 40000), 2); /* both re-checked in: next call */
    bm_util_hotel_fini(&h);
}

static void test_far_future(void)
{
    struct bm_util_hotel h;
    static struct log l;
    hotel_setup(&h, 4, 64, record, &l); /* one revolution = 64 * 1024 ns */
    int room;
    uint64_t far = 3 * 64 * 1024 + 5 * 1024 + 17; /* same bucket as tick 5 */
    bm_util_hotel_checkin_at(&h, (void *)1, far, &room);
    bm_util_hotel_checkin_at(&h, (void *)2, 5 * 1024 + 17, &room);
    int fired = 0;
    for (uint64_t now = 0; now < far; now += 512)
        fired += run(&h, &l, now);
    BM_CHECK_EQ_INT(fired, 1);
    BM_CHECK_EQ_INT(run(&h, &l, far), 1);
    BM_CHECK(l.n == 2 && l.guest[0] == 2 && l.guest[1] == 1);
    /* A single progress call long after several deadlines fires them all. */
    bm_util_hotel_checkin_at(&h, (void *)3, far + 100, &room);
    bm_util_hotel_checkin_at(&h, (void *)4, far + 10 * 64 * 1024, &room);
    BM_CHECK_EQ_INT(run(&h, &l, far + 100 * 64 * 1024), 2);
    bm_util_hotel_fini(&h);
}

/* Random check-ins, check-outs and progress calls (some jumping more than a
 * revolution) against a model: every guest fires exactly once, at the first
 * progress call at or after its deadline, unless checked out first. */
struct model {
    uint64_t deadline;
    int room; /* -1: not in the hotel */
};
static struct model guests[256];
static int model_fired_bad, model_order_bad;
static uint64_t model_last; /* deadline of the previous eviction of this call */

static void model_evict(struct bm_util_hotel *h, int room, void *guest, void *arg)
{
    (void)h;
    uint64_t now = *(uint64_t *)arg;
    struct model *g = guest;
    model_fired_bad += g->room != room || g->deadline > now;
    model_order_bad += g->deadline < model_last;
    model_last = g->deadline;
    g->room = -1;
}

static void test_random_model(void)
{
    struct bm_util_hotel h;
    uint64_t now = 1000000;
    struct bm_util_hotel_attr attr = {
        .nrooms = 200, .tick_ns = 1024, .nslots = 64, .evict = model_evict, .arg = &now};
    BM_CHECK_EQ_INT(bm_util_hotel_init(&h, &attr), BM_OK);
    for (int i = 0; i < 256; i++)
        guests[i].room = -1;
    unsigned seed = 99;
    int missed = 0;
    for (int op = 0; op < 300000; op++) {
        seed = seed * 1103515245u + 12345u;
        struct model *g = &guests[(seed >> 8) % 256];
        unsigned kind = (seed >> 16) % 16;
        if (kind < 7 && g->room < 0) {
            /* kind 6: far ahead (beyond a revolution); kind 0: maybe already past */
            g->deadline = now + (seed >> 4) % (kind == 6 ? 400000 : 20000);
            if (kind == 0)
                g->deadline -= 10000;
            if (bm_util_hotel_checkin_at(&h, g, g->deadline, &g->room) != BM_OK)
                g->room = -1;
        } else if (kind < 11 && g->room >= 0) {
            bm_util_hotel_checkout(&h, g->room);
            g->room = -1;
        } else if (kind >= 11) {
            uint64_t step = (kind == 15 && (seed & 0x100)) ? 200000 : (seed >> 20) % 3000;
            now += step;
            model_last = 0;
            bm_util_hotel_progress(&h, now);
            for (int i = 0; i < 256; i++)
                missed += guests[i].room >= 0 && guests[i].deadline <= now;
        }
    }
    BM_CHECK_EQ_INT(model_fired_bad, 0);
    BM_CHECK_EQ_INT(model_order_bad, 0);
    BM_CHECK_EQ_INT(missed, 0);
    bm_util_hotel_fini(&h);
}

static void test_bad_attr(void)
{
    struct bm_util_hotel h;
    struct bm_util_hotel_attr no_rooms = {.nrooms = 0, .evict = record};
    struct bm_util_hotel_attr no_cb = {.nrooms = 4};
    BM_CHECK_EQ_INT(bm_util_hotel_init(&h, &no_rooms), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_hotel_init(&h, &no_cb), BM_ERR_BAD_PARAM);
}

int main(void)
{
    BM_RUN(test_in_order);
    BM_RUN(test_in_order_within_tick);
    BM_RUN(test_checked_out_never_fire);
    BM_RUN(test_full);
    BM_RUN(test_recheckin);
    BM_RUN(test_far_future);
    BM_RUN(test_random_model);
    BM_RUN(test_bad_attr);
    return bm_test_summary("test_util_hotel");
}
