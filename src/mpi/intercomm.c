/* Inter-communicators (MPI-3.1 section 6.6): MPI_Intercomm_create and
 * MPI_Intercomm_merge, the remote-group queries, and MPI_Comm_dup,
 * MPI_Comm_split and MPI_Comm_create applied to an inter-communicator. The
 * representation is in mpi_internal.h (struct bm_mpi_comm): a local group,
 * a remote group that point-to-point ranks name, one context slot agreed
 * over both groups, and local_comm, an intra-communicator over the local
 * group on the slot's other two contexts. Everything here runs as three
 * steps: collectives inside each group (on local_comm, or on the local
 * communicator MPI_Intercomm_create is given), an exchange between the two
 * groups' leaders (over the peer communicator, or over the
 * inter-communicator itself), and a broadcast of what the leader learnt.
 * The context slot is agreed the same way (comm_cid.c), each reduction
 * being such a three-step bridge. */
#include "mpi/mpi_internal.h"

#include <stdlib.h>
#include <string.h>

/* The two groups and how their leaders reach each other. */
struct bridge {
    MPI_Comm local; /* intra-communicator of this process's group */
    int leader;     /* the leader's rank in local */
    MPI_Comm link;  /* the communicator the leaders talk over */
    int peer;       /* the other leader's rank in link (remote rank if link is inter) */
    int tag;        /* in link's collective context */
};

static bool is_leader(const struct bridge *b)
{
    return b->local->rank == b->leader;
}

/* The leaders swap n bytes (the same count on both sides) and broadcast
 * what came back. */
static int bridge_swap(const struct bridge *b, const void *mine, void *theirs, size_t n,
                       const char *fn)
{
    int rc = MPI_SUCCESS;
    if (is_leader(b))
        rc = bm_mpi_coll_sendrecv(b->link, mine, n, b->peer, theirs, n, b->peer, b->tag, fn);
    if (rc)
        return rc;
    return bm_mpi_coll_bcast(theirs, n, b->leader, b->local, fn);
}

/* The leaders swap int arrays of any length (each side's count first);
 * everyone gets the other side's array (malloc'ed, freed by the caller). */
static int bridge_swap_ints(const struct bridge *b, const int *mine, int n, int **theirs_out,
                            int *m_out, const char *fn)
{
    int m = 0, rc;
    if ((rc = bridge_swap(b, &n, &m, sizeof(int), fn)))
        return rc;
    int *theirs = malloc(sizeof(int) * (size_t)(m ? m : 1));
    if (!theirs)
        return bm_mpi_error(b->local, MPI_ERR_NO_MEM, fn, "out of memory");
    if (is_leader(b)) {
        struct bm_pml_request *req;
        rc = bm_mpi_coll_isend(b->link, mine, sizeof(int) * (size_t)n, b->peer, b->tag, &req, fn);
        if (!rc) {
            int rc2 =
                bm_mpi_coll_recv(b->link, theirs, sizeof(int) * (size_t)m, b->peer, b->tag, fn);
            rc = bm_mpi_coll_wait(b->link, req, b->peer, fn);
            rc = rc2 ? rc2 : rc;
        }
    }
    if (!rc)
        rc = bm_mpi_coll_bcast(theirs, sizeof(int) * (size_t)m, b->leader, b->local, fn);
    if (rc) {
        free(theirs);
        return rc;
    }
    *theirs_out = theirs;
    *m_out = m;
    return MPI_SUCCESS;
}

/* Context-slot agreement over both groups (bm_mpi_cid_reduce_fn). */
static int bridge_reduce(void *ctx, uint32_t v[2], const char *fn)
{
    const struct bridge *b = ctx;
    uint32_t theirs[2];
    int rc = bm_mpi_cid_reduce_intra(b->local, v, fn);
    if (!rc)
        rc = bridge_swap(b, v, theirs, sizeof(theirs), fn);
    if (rc)
        return rc;
    for (int i = 0; i < 2; i++)
        v[i] = theirs[i] > v[i] ? theirs[i] : v[i];
    return MPI_SUCCESS;
}

/* The bridge of an existing inter-communicator: local_comm, leaders rank 0. */
static struct bridge inter_bridge(MPI_Comm inter)
{
    return (struct bridge){.local = inter->local_comm,
                           .leader = 0,
                           .link = inter,
                           .peer = 0,
                           .tag = BM_MPI_COLL_TAG_INTERCOMM_BASE};
}

/* The world ranks of comm's (local) group as an array (never NULL). */
static int *group_ranks(MPI_Comm comm)
{
    int *w = malloc(sizeof(int) * (size_t)(comm->size ? comm->size : 1));
    if (w)
        for (int i = 0; i < comm->size; i++)
            w[i] = bm_mpi_comm_world_rank(comm, i);
    return w;
}

/* An inter-communicator on slot with the given groups (arrays owned from
 * now on), and its local_comm. */
static int inter_new(MPI_Comm parent, uint32_t slot, int rank, int *local, int nlocal, int *remote,
                     int nremote, MPI_Comm *newcomm, const char *fn)
{
    MPI_Comm inter, lc;
    bool ok;
    int *lcopy = bm_mpi_comm_ranks_dup(local, nlocal, &ok);
    if (!ok) {
        free(local);
        free(remote);
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    int rc = bm_mpi_comm_new(parent, slot, rank, nlocal, local, true, nremote, remote, &inter, fn);
    if (rc) {
        free(lcopy);
        return rc;
    }
    if ((rc = bm_mpi_comm_new(parent, 0, rank, nlocal, lcopy, false, 0, NULL, &lc, fn))) {
        bm_mpi_comm_free_handle(inter);
        return rc;
    }
    lc->context_id = inter->context_id + 2;
    lc->slot_owner = inter;
    bm_mpi_comm_retain(inter);
    inter->local_comm = lc;
    *newcomm = inter;
    return MPI_SUCCESS;
}

/* True when no world rank is in both lists. */
static bool disjoint(const int *a, int na, const int *b, int nb)
{
    int world = MPI_COMM_WORLD->size;
    char *seen = calloc((size_t)world, 1);
    bool ok = true;
    if (!seen)
        return true; /* cannot check: trust the program */
    for (int i = 0; i < na; i++)
        seen[a[i]] = 1;
    for (int i = 0; i < nb && ok; i++)
        ok = !seen[b[i]];
    free(seen);
    return ok;
}

int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                          int remote_leader, int tag, MPI_Comm *newintercomm)
{
    static const char fn[] = "MPI_Intercomm_create";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_intra(local_comm, fn)))
        return rc;
    if (!newintercomm)
        return bm_mpi_error(local_comm, MPI_ERR_ARG, fn, "NULL newintercomm pointer");
    if (local_leader < 0 || local_leader >= local_comm->size)
        return bm_mpi_error(local_comm, MPI_ERR_RANK, fn,
                            "invalid local leader %d (the local communicator has %d ranks)",
                            local_leader, local_comm->size);
    if ((rc = bm_mpi_check_tag(local_comm, tag, false, fn)))
        return rc;
    /* Only the leaders use peer_comm (the standard: significant only there). */
    if (local_comm->rank == local_leader) {
        if ((rc = bm_mpi_check_comm(peer_comm, fn)))
            return rc;
        if (remote_leader < 0 || remote_leader >= peer_comm->peer_size)
            return bm_mpi_error(local_comm, MPI_ERR_RANK, fn,
                                "invalid remote leader %d (the peer communicator has %d ranks)",
                                remote_leader, peer_comm->peer_size);
    }
    struct bridge b = {.local = local_comm,
                       .leader = local_leader,
                       .link = peer_comm,
                       .peer = remote_leader,
                       .tag = BM_MPI_COLL_TAG_INTERCOMM_BASE |
                              (tag & BM_MPI_COLL_TAG_INTERCOMM_MASK)};
    int *local = group_ranks(local_comm), *remote = NULL, nremote = 0;
    if (!local)
        return bm_mpi_error(local_comm, MPI_ERR_NO_MEM, fn, "out of memory");
    if ((rc = bridge_swap_ints(&b, local, local_comm->size, &remote, &nremote, fn))) {
        free(local);
        return rc;
    }
    if (!disjoint(local, local_comm->size, remote, nremote)) {
        free(local);
        free(remote);
        return bm_mpi_error(local_comm, MPI_ERR_COMM, fn,
                            "the two groups share processes; the groups of an "
                            "inter-communicator must be disjoint");
    }
    uint32_t slot;
    if ((rc = bm_mpi_cid_agree(bridge_reduce, &b, local_comm, &slot, fn))) {
        free(local);
        free(remote);
        return rc;
    }
    return inter_new(local_comm, slot, local_comm->rank, local, local_comm->size, remote, nremote,
                     newintercomm, fn);
}
BM_MPI_ALIAS(Intercomm_create);

static int check_inter(MPI_Comm comm, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (!comm->inter)
        return bm_mpi_error(comm, MPI_ERR_COMM, fn,
                            "communicator %s is an intra-communicator; %s needs an "
                            "inter-communicator",
                            bm_mpi_comm_label(comm), fn);
    return MPI_SUCCESS;
}

int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    static const char fn[] = "MPI_Intercomm_merge";
    int rc;
    if ((rc = check_inter(intercomm, fn)))
        return rc;
    if (!newintracomm)
        return bm_mpi_error(intercomm, MPI_ERR_ARG, fn, "NULL newintracomm pointer");
    struct bridge b = inter_bridge(intercomm);
    /* Which group goes first: the one that passed high = false. When both
     * passed the same value the standard leaves the order open: bitmover
     * puts the group whose leader has the lower world rank first (the
     * same order on both sides, whatever the timing). */
    int mine[2] = {high != 0, bm_mpi_comm_world_rank(intercomm, 0)}, theirs[2];
    if ((rc = bridge_swap(&b, mine, theirs, sizeof(mine), fn)))
        return rc;
    bool first = mine[0] != theirs[0] ? !mine[0] : mine[1] < theirs[1];
    int n = intercomm->size + intercomm->peer_size;
    int *w = malloc(sizeof(int) * (size_t)n);
    if (!w)
        return bm_mpi_error(intercomm, MPI_ERR_NO_MEM, fn, "out of memory");
    int loff = first ? 0 : intercomm->peer_size, roff = first ? intercomm->size : 0;
    for (int i = 0; i < intercomm->size; i++)
        w[loff + i] = bm_mpi_comm_world_rank(intercomm, i);
    for (int i = 0; i < intercomm->peer_size; i++)
        w[roff + i] = bm_mpi_comm_peer_world(intercomm, i);
    uint32_t slot;
    if ((rc = bm_mpi_cid_agree(bridge_reduce, &b, intercomm, &slot, fn))) {
        free(w);
        return rc;
    }
    return bm_mpi_comm_new(intercomm, slot, loff + intercomm->rank, n, w, false, 0, NULL,
                           newintracomm, fn);
}
BM_MPI_ALIAS(Intercomm_merge);

int PMPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    static const char fn[] = "MPI_Comm_remote_size";
    int rc;
    if ((rc = check_inter(comm, fn)))
        return rc;
    if (!size)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL size pointer");
    *size = comm->peer_size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_remote_size);

int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    static const char fn[] = "MPI_Comm_remote_group";
    int rc;
    if ((rc = check_inter(comm, fn)))
        return rc;
    if (!group)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL group pointer");
    int *w = malloc(sizeof(int) * (size_t)comm->peer_size);
    if (!w)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < comm->peer_size; i++)
        w[i] = bm_mpi_comm_peer_world(comm, i);
    rc = bm_mpi_group_new(w, comm->peer_size, group, fn);
    free(w);
    return rc;
}
BM_MPI_ALIAS(Comm_remote_group);

int bm_mpi_intercomm_reduce(void *ctx, uint32_t v[2], const char *fn)
{
    struct bridge b = inter_bridge(ctx);
    return bridge_reduce(&b, v, fn);
}

int bm_mpi_intercomm_dup_on_slot(MPI_Comm comm, uint32_t slot, MPI_Comm *newcomm, const char *fn)
{
    int *local = group_ranks(comm), *remote = malloc(sizeof(int) * (size_t)comm->peer_size);
    if (!local || !remote) {
        free(local);
        free(remote);
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int i = 0; i < comm->peer_size; i++)
        remote[i] = bm_mpi_comm_peer_world(comm, i);
    return inter_new(comm, slot, comm->rank, local, comm->size, remote, comm->peer_size, newcomm,
                     fn);
}

/* One process's part in MPI_Comm_split: its color, key and world rank. */
struct split_item {
    int color, key, world;
};

static int split_item_cmp(const void *pa, const void *pb)
{
    const struct split_item *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return 0; /* qsort is not stable: ties are broken below by position */
}

/* The world ranks of the items of color, ordered by key then by their
 * position (their rank in their group). Returns the count; *pos_out is
 * the position of world rank me (-1 when absent). */
static int split_select(struct split_item *items, int n, int color, int me, int *out, int *pos_out)
{
    int m = 0;
    *pos_out = -1;
    for (int i = 0; i < n; i++)
        if (items[i].color == color) {
            items[m] = items[i];
            /* Encode the original position so that equal keys keep rank order. */
            items[m].color = i;
            m++;
        }
    for (int i = 1; i < m; i++) { /* insertion sort: stable, groups are small */
        struct split_item x = items[i];
        int j = i - 1;
        while (j >= 0 && (split_item_cmp(&items[j], &x) > 0 ||
                          (items[j].key == x.key && items[j].color > x.color))) {
            items[j + 1] = items[j];
            j--;
        }
        items[j + 1] = x;
    }
    for (int i = 0; i < m; i++) {
        out[i] = items[i].world;
        if (items[i].world == me)
            *pos_out = i;
    }
    return m;
}

/* Builds the inter-communicator of one color from both sides' (color, key)
 * lists; everyone agrees on one slot first (those left out free it). */
static int split_finish(MPI_Comm comm, struct split_item *mine, struct split_item *theirs,
                        int ntheirs, int color, MPI_Comm *newcomm, const char *fn)
{
    struct bridge b = inter_bridge(comm);
    uint32_t slot;
    int rc = bm_mpi_cid_agree(bridge_reduce, &b, comm, &slot, fn);
    if (rc)
        return rc;
    *newcomm = MPI_COMM_NULL;
    int me = bm_mpi_comm_world_rank(comm, comm->rank), pos, rpos;
    int *local = malloc(sizeof(int) * (size_t)comm->size);
    int *remote = malloc(sizeof(int) * (size_t)(ntheirs ? ntheirs : 1));
    if (!local || !remote) {
        free(local);
        free(remote);
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    int nl = color == MPI_UNDEFINED ? 0 : split_select(mine, comm->size, color, me, local, &pos);
    int nr = color == MPI_UNDEFINED ? 0 : split_select(theirs, ntheirs, color, -1, remote, &rpos);
    if (nl == 0 || nr == 0) {
        /* Not in a color, or a color with no process on the other side. */
        free(local);
        free(remote);
        bm_mpi_cid_slot_free(slot);
        return MPI_SUCCESS;
    }
    return inter_new(comm, slot, pos, local, nl, remote, nr, newcomm, fn);
}

int bm_mpi_intercomm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, const char *fn)
{
    struct bridge b = inter_bridge(comm);
    struct split_item me = {color, key, bm_mpi_comm_world_rank(comm, comm->rank)};
    struct split_item *mine = malloc(sizeof(me) * (size_t)comm->size), *theirs = NULL;
    int ntheirs = 0, rc;
    if (!mine)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    rc = bm_mpi_coll_allgather_bytes(&me, mine, sizeof(me), comm->local_comm, fn);
    if (!rc) {
        int *t = NULL, nt = 0;
        rc = bridge_swap_ints(&b, (int *)mine, 3 * comm->size, &t, &nt, fn);
        theirs = (struct split_item *)t;
        ntheirs = nt / 3;
    }
    if (!rc)
        rc = split_finish(comm, mine, theirs, ntheirs, color, newcomm, fn);
    free(mine);
    free(theirs);
    return rc;
}

int bm_mpi_intercomm_create_sub(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm, const char *fn)
{
    /* The same as a split in which members of group have color 0 (key:
     * their rank in group) and the others none. */
    int me = bm_mpi_comm_world_rank(comm, comm->rank), pos = MPI_UNDEFINED;
    for (int i = 0; i < group->size && pos == MPI_UNDEFINED; i++)
        if (group->world_ranks[i] == me)
            pos = i;
    return bm_mpi_intercomm_split(comm, pos == MPI_UNDEFINED ? MPI_UNDEFINED : 0, pos, newcomm, fn);
}
