/* Context ids for new communicators. Each process keeps a bitmap of the
 * context slots (mpi_internal.h: four matching contexts each) that its own
 * communicators use. The members of a new communicator agree on a slot
 * free at all of them by repeating one small reduction: each proposes its
 * lowest free slot at or above a floor, and the element-wise MAX of
 * (proposal, ~proposal) gives the highest and the lowest proposal. When they
 * are equal every member proposed the same slot, free at each: done. When
 * not, the highest becomes the floor and they propose again. The highest
 * proposal never decreases and rises at every round that does not finish,
 * so this ends; when members create communicators in the same order (the
 * usual case) the first round agrees. A round costs one allreduce of 8
 * bytes over the members (log2(p) steps of 8 bytes), whatever the number
 * of communicators; finding the lowest free slot is a scan of the local
 * bitmap, 16 words at 1,000 live communicators. Open MPI agrees the same
 * way with a larger loop; MPICH allreduces a 2048-bit mask (256 bytes) per
 * creation and runs out after 2048 live communicators.
 *
 * Members of disjoint communicators may use the same slot: they never
 * exchange messages in it. A slot is reused only after its communicator is
 * destroyed (the last reference gone, mpi_internal.h) and the PML has
 * released its matching state; while the PML still holds messages for a
 * context (a receive the program freed while it was posted, an unmatched
 * message) the slot stays taken and is retried at later agreements, so that
 * sequence numbers never restart on one side only. A slot proposed in a
 * round is reserved until the round ends, so that concurrent agreements (a
 * nonblocking MPI_Comm_idup in flight) never pick the same one. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *used;      /* bit s: slot s is taken here (slot 0: the predefined ones) */
static uint32_t used_words; /* length of used */
static uint32_t *zombies;   /* freed slots the PML has not released yet */
static uint32_t nzombies, zombies_cap;

#define SLOT_MAX (UINT32_MAX / BM_MPI_CONTEXTS_PER_SLOT - 1)

static bool slot_set(uint32_t s, bool taken)
{
    if (s / 64 >= used_words) {
        if (!taken)
            return true;
        uint32_t n = used_words ? used_words : 4;
        while (n <= s / 64)
            n *= 2;
        uint64_t *u = realloc(used, n * sizeof(*u));
        if (!u)
            return false;
        memset(u + used_words, 0, (n - used_words) * sizeof(*u));
        used = u;
        used_words = n;
    }
    if (taken)
        used[s / 64] |= (uint64_t)1 << (s % 64);
    else
        used[s / 64] &= ~((uint64_t)1 << (s % 64));
    return true;
}

/* The lowest slot >= from that is not taken here. */
static uint32_t slot_lowest_free(uint32_t from)
{
    uint32_t w = from / 64;
    if (w < used_words) {
        uint64_t bits = ~used[w] & (~(uint64_t)0 << (from % 64));
        while (!bits && ++w < used_words)
            bits = ~used[w];
        if (bits)
            return w * 64 + (uint32_t)__builtin_ctzll(bits);
    }
    return from > used_words * 64 ? from : used_words * 64;
}

static bool pml_release_slot(uint32_t slot)
{
    uint32_t cid = bm_mpi_cid_of_slot(slot);
    bool ok = true;
    for (uint32_t i = 0; i < BM_MPI_CONTEXTS_PER_SLOT; i++)
        ok &= bm_pml_context_release(cid + i);
    return ok;
}

/* Keep a freed slot whose contexts the PML still holds; the caller holds
 * the object lock. */
static void zombie_add(uint32_t slot)
{
    if (nzombies == zombies_cap) {
        uint32_t n = zombies_cap ? 2 * zombies_cap : 16;
        uint32_t *z = realloc(zombies, n * sizeof(*z));
        if (!z)
            return; /* the slot stays taken for good: safe, only not reused */
        zombies = z;
        zombies_cap = n;
    }
    zombies[nzombies++] = slot;
}

/* Free the slots whose contexts the PML has let go of since.
 * Under MPI_THREAD_MULTIPLE the bitmap and the zombie list are guarded by
 * the object lock (mt.c), which is never held while the PML is called: the
 * PML's progress lock may be held by a thread that destroys a communicator
 * (a request completing in a progress hook) and then frees its slot here. */
static void reap_zombies(void)
{
    bm_mpi_obj_lock();
    uint32_t *z = zombies, n = nzombies;
    zombies = NULL;
    nzombies = zombies_cap = 0;
    bm_mpi_obj_unlock();
    for (uint32_t i = 0; i < n; i++) {
        bool released = pml_release_slot(z[i]);
        bm_mpi_obj_lock();
        if (released)
            slot_set(z[i], false);
        else
            zombie_add(z[i]);
        bm_mpi_obj_unlock();
    }
    free(z);
}

void bm_mpi_cid_slot_free(uint32_t slot)
{
    if (slot == 0)
        return;
    bool released = pml_release_slot(slot);
    bm_mpi_obj_lock();
    if (released)
        slot_set(slot, false);
    else
        zombie_add(slot);
    bm_mpi_obj_unlock();
}

void bm_mpi_cid_reset(void)
{
    free(used);
    free(zombies);
    used = NULL;
    zombies = NULL;
    used_words = nzombies = zombies_cap = 0;
    slot_set(0, true);
}

/* Give back a slot reserved for a round that did not agree on it. */
static void slot_unreserve(uint32_t s)
{
    bm_mpi_obj_lock();
    slot_set(s, false);
    bm_mpi_obj_unlock();
}

int bm_mpi_cid_reduce_intra(void *ctx, uint32_t v[2], const char *fn)
{
    return bm_mpi_coll_allreduce(MPI_IN_PLACE, v, 2, MPI_UINT32_T, MPI_MAX, ctx, fn);
}

void bm_mpi_cid_propose(uint32_t floor, struct bm_mpi_cid_round *round, uint32_t v[2])
{
    if (floor <= 1)
        reap_zombies();
    bm_mpi_obj_lock();
    round->mine = slot_lowest_free(floor < 1 ? 1 : floor);
    round->reserved = round->mine <= SLOT_MAX && slot_set(round->mine, true);
    bm_mpi_obj_unlock();
    /* A member without a slot to offer proposes past the end, so that
     * nobody agrees; the round after reports the failure everywhere. */
    v[0] = round->reserved ? round->mine : UINT32_MAX;
    v[1] = round->reserved ? ~round->mine : 0;
}

void bm_mpi_cid_abandon(struct bm_mpi_cid_round *round)
{
    if (round->reserved)
        slot_unreserve(round->mine);
    round->reserved = false;
}

int bm_mpi_cid_decide(struct bm_mpi_cid_round *round, const uint32_t v[2], bool *done,
                      uint32_t *slot_out, uint32_t *floor_out, MPI_Comm err_comm, const char *fn)
{
    uint32_t hi = v[0], lo = ~v[1];
    *done = false;
    if (hi == lo && round->reserved) {
        *done = true;
        *slot_out = round->mine;
        return MPI_SUCCESS;
    }
    bm_mpi_cid_abandon(round);
    if (hi > SLOT_MAX) {
        /* A user error handler may return; the caller must still fail. */
        bm_mpi_error(err_comm, MPI_ERR_INTERN, fn,
                     "out of communicator context ids: a member of the new communicator "
                     "has %u communicators alive, or no memory to track them; free "
                     "communicators that are no longer used",
                     SLOT_MAX);
        return MPI_ERR_INTERN;
    }
    *floor_out = hi;
    return MPI_SUCCESS;
}

int bm_mpi_cid_agree(bm_mpi_cid_reduce_fn *reduce, void *ctx, MPI_Comm err_comm,
                     uint32_t *slot_out, const char *fn)
{
    uint32_t floor = 1;
    for (;;) {
        struct bm_mpi_cid_round round;
        uint32_t v[2];
        bool done;
        bm_mpi_cid_propose(floor, &round, v);
        int rc = reduce(ctx, v, fn);
        if (rc) {
            bm_mpi_cid_abandon(&round);
            return rc;
        }
        if ((rc = bm_mpi_cid_decide(&round, v, &done, slot_out, &floor, err_comm, fn)) || done)
            return rc;
    }
}
