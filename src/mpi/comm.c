/* Communicators: MPI_COMM_WORLD and MPI_COMM_SELF, the queries on any
 * communicator (rank, size, attributes, names, comparison), new
 * communicators made by MPI_Comm_dup and MPI_Comm_split, and their life
 * cycle: the reference counting that keeps a freed communicator alive
 * while operations on it are pending, and its destruction, which hands
 * its context slot back (comm_cid.c says how slots are agreed). What is
 * particular to inter-communicators is in intercomm.c. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"
#include "runtime/rte.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI_COMM_SELF's one member, as a world rank (set at init). */
static int self_world_rank;

struct bm_mpi_comm bm_mpi_comm_world_obj = {
    .magic = BM_MPI_MAGIC_COMM,
    .context_id = BM_MPI_CONTEXT_WORLD,
    .rank = 0,
    .size = 0,
    .world_ranks = NULL,
    .peer_size = 0,
    .peer_world_ranks = NULL,
    .refcount = 1,
    .errhandler = &bm_mpi_errors_are_fatal_obj,
    .name = "MPI_COMM_WORLD",
    .predefined = true,
};

struct bm_mpi_comm bm_mpi_comm_self_obj = {
    .magic = BM_MPI_MAGIC_COMM,
    .context_id = BM_MPI_CONTEXT_SELF,
    .rank = 0,
    .size = 1,
    .world_ranks = &self_world_rank,
    .peer_size = 1,
    .peer_world_ranks = &self_world_rank,
    .refcount = 1,
    .errhandler = &bm_mpi_errors_are_fatal_obj,
    .name = "MPI_COMM_SELF",
    .predefined = true,
};

int bm_mpi_comm_init(void)
{
    const struct bm_rte_proc *self = bm_rte_self();

    bm_mpi_comm_world_obj.rank = self->rank;
    bm_mpi_comm_world_obj.size = self->size;
    bm_mpi_comm_world_obj.peer_size = self->size;
    self_world_rank = self->rank;
    bm_mpi_cid_reset();
    return MPI_SUCCESS;
}

void bm_mpi_comm_finalize(void)
{
    /* Handlers set by the program on the predefined communicators go back
     * to the default, so that errors after MPI_Finalize are reported. */
    bm_mpi_errhandler_release(bm_mpi_comm_world_obj.errhandler);
    bm_mpi_comm_world_obj.errhandler = &bm_mpi_errors_are_fatal_obj;
    bm_mpi_errhandler_release(bm_mpi_comm_self_obj.errhandler);
    bm_mpi_comm_self_obj.errhandler = &bm_mpi_errors_are_fatal_obj;
    bm_mpi_cid_reset();
}

const char *bm_mpi_comm_label(MPI_Comm comm)
{
    return comm->name[0] ? comm->name : "(unnamed)";
}

static int check_query(MPI_Comm comm, const void *out, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (out == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL output argument");
    return MPI_SUCCESS;
}

int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    int rc = check_query(comm, rank, "MPI_Comm_rank");

    if (rc)
        return rc;
    *rank = comm->rank;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_rank);

int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    int rc = check_query(comm, size, "MPI_Comm_size");

    if (rc)
        return rc;
    *size = comm->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_size);

int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    int rc = check_query(comm, flag, "MPI_Comm_test_inter");

    if (rc)
        return rc;
    *flag = comm->inter;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_test_inter);

/* MPI_IDENT is left to the caller; MPI_CONGRUENT when both lists hold the
 * same processes in the same order, MPI_SIMILAR in another order,
 * MPI_UNEQUAL otherwise. Lists are NULL for the identity. */
static int ranks_compare(const int *a, int na, const int *b, int nb)
{
    if (na != nb)
        return MPI_UNEQUAL;
    bool same_order = true;
    for (int i = 0; i < na && same_order; i++)
        same_order = (a ? a[i] : i) == (b ? b[i] : i);
    if (same_order)
        return MPI_CONGRUENT;
    /* Same members in another order? Communicators are small enough here
     * that the quadratic scan costs less than sorting copies. */
    for (int i = 0; i < na; i++) {
        int w = a ? a[i] : i;
        bool found = false;
        for (int j = 0; j < nb && !found; j++)
            found = (b ? b[j] : j) == w;
        if (!found)
            return MPI_UNEQUAL;
    }
    return MPI_SIMILAR;
}

int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    static const char fn[] = "MPI_Comm_compare";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm1, fn)) ||
        (rc = bm_mpi_check_comm(comm2, fn)))
        return rc;
    if (result == NULL)
        return bm_mpi_error(comm1, MPI_ERR_ARG, fn, "NULL result pointer");
    if (comm1 == comm2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (comm1->inter != comm2->inter) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    *result = ranks_compare(comm1->world_ranks, comm1->size, comm2->world_ranks, comm2->size);
    if (comm1->inter && *result != MPI_UNEQUAL) {
        /* Inter-communicators: both groups, and the weaker result of the two. */
        int remote = ranks_compare(comm1->peer_world_ranks, comm1->peer_size,
                                   comm2->peer_world_ranks, comm2->peer_size);
        if (remote == MPI_UNEQUAL || remote == MPI_SIMILAR)
            *result = remote;
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_compare);

int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    int rc = check_query(comm, comm_name && resultlen ? comm_name : NULL, "MPI_Comm_get_name");

    if (rc)
        return rc;
    *resultlen = snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", comm->name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_get_name);

int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    int rc = check_query(comm, comm_name, "MPI_Comm_set_name");

    if (rc)
        return rc;
    /* Longer names are truncated, as the standard allows. */
    snprintf(comm->name, sizeof(comm->name), "%s", comm_name);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_set_name);

int *bm_mpi_comm_ranks_dup(const int *world_ranks, int n, bool *ok)
{
    *ok = true;
    if (!world_ranks)
        return NULL;
    int *copy = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!copy) {
        *ok = false;
        return NULL;
    }
    memcpy(copy, world_ranks, sizeof(int) * (size_t)n);
    return copy;
}

int bm_mpi_comm_new(MPI_Comm parent, uint32_t slot, int rank, int size, int *world_ranks,
                    bool inter, int peer_size, int *peer_world_ranks, MPI_Comm *newcomm,
                    const char *fn)
{
    struct bm_mpi_comm *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        free(world_ranks);
        if (inter)
            free(peer_world_ranks);
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    c->magic = BM_MPI_MAGIC_COMM;
    c->context_id = bm_mpi_cid_of_slot(slot);
    c->slot = slot;
    c->rank = rank;
    c->size = size;
    c->world_ranks = world_ranks;
    c->inter = inter;
    c->peer_size = inter ? peer_size : size;
    c->peer_world_ranks = inter ? peer_world_ranks : world_ranks;
    c->refcount = 1;
    c->errhandler = parent->errhandler;
    bm_mpi_errhandler_retain(c->errhandler);
    *newcomm = c;
    return MPI_SUCCESS;
}

void bm_mpi_comm_free_handle(MPI_Comm comm)
{
    comm->magic = BM_MPI_MAGIC_COMM_FREED;
    /* An inter-communicator's local_comm goes with its handle; it holds a
     * reference on comm, so comm outlives this. */
    MPI_Comm local = comm->local_comm;
    comm->local_comm = NULL;
    if (local)
        bm_mpi_comm_free_handle(local);
    bm_mpi_comm_release(comm);
}

void bm_mpi_comm_destroy(MPI_Comm comm)
{
    /* Only a failed MPI_Comm_dup leaves attributes here: their copies never
     * became visible, so their delete callbacks do not run. */
    bm_mpi_attr_drop_all(comm);
    bm_mpi_coll_comm_free(comm);
    bm_mpi_cart_free(comm->cart);
    bm_mpi_graph_free(comm->graph);
    bm_mpi_errhandler_release(comm->errhandler);
    if (comm->info != MPI_INFO_NULL)
        PMPI_Info_free(&comm->info);
    bm_mpi_cid_slot_free(comm->slot);
    if (comm->inter)
        free(comm->peer_world_ranks);
    free(comm->world_ranks);
    MPI_Comm owner = comm->slot_owner;
    comm->magic = 0;
    free(comm);
    if (owner)
        bm_mpi_comm_release(owner);
}

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_dup";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (newcomm == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL newcomm pointer");
    return bm_mpi_comm_dup_as(comm, newcomm, fn);
}
BM_MPI_ALIAS(Comm_dup);

bm_mpi_cid_reduce_fn *bm_mpi_comm_reducer(MPI_Comm comm)
{
    return comm->inter ? bm_mpi_intercomm_reduce : bm_mpi_cid_reduce_intra;
}

int bm_mpi_comm_dup_as(MPI_Comm comm, MPI_Comm *newcomm, const char *fn)
{
    uint32_t slot;
    int rc = bm_mpi_cid_agree(bm_mpi_comm_reducer(comm), comm, comm, &slot, fn);
    if (rc)
        return rc;
    return bm_mpi_comm_dup_on_slot(comm, slot, MPI_INFO_NULL, newcomm, fn);
}

int bm_mpi_comm_dup_on_slot(MPI_Comm comm, uint32_t slot, MPI_Info info, MPI_Comm *newcomm,
                            const char *fn)
{
    int rc;
    bool ok;

    if (comm->inter)
        rc = bm_mpi_intercomm_dup_on_slot(comm, slot, newcomm, fn);
    else {
        int *world_ranks = bm_mpi_comm_ranks_dup(comm->world_ranks, comm->size, &ok);
        if (!ok) {
            bm_mpi_cid_slot_free(slot);
            return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        }
        rc = bm_mpi_comm_new(comm, slot, comm->rank, comm->size, world_ranks, false, 0, NULL,
                             newcomm, fn);
    }
    if (rc)
        return rc;
    /* A duplicate keeps the topology and the hints (or takes new ones). */
    if ((comm->cart && ((*newcomm)->cart = bm_mpi_cart_dup(comm->cart)) == NULL) ||
        (comm->graph && ((*newcomm)->graph = bm_mpi_graph_dup(comm->graph)) == NULL))
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    MPI_Info hints = info != MPI_INFO_NULL ? info : comm->info;
    if (!rc && hints != MPI_INFO_NULL && (rc = PMPI_Info_dup(hints, &(*newcomm)->info)))
        (*newcomm)->info = MPI_INFO_NULL;
    if (rc || (rc = bm_mpi_attr_copy_all(comm, *newcomm, fn))) {
        bm_mpi_comm_free_handle(*newcomm);
        *newcomm = MPI_COMM_NULL;
    }
    return rc;
}

struct split_entry {
    int color;
    int key;
    int parent_rank;
};

static int split_entry_cmp(const void *pa, const void *pb)
{
    const struct split_entry *a = pa, *b = pb;

    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->parent_rank > b->parent_rank) - (a->parent_rank < b->parent_rank);
}

int bm_mpi_comm_create_from(MPI_Comm parent, const int *world_ranks, int n, int myrank,
                            MPI_Comm *newcomm, const char *fn)
{
    uint32_t slot;
    bool ok;
    int rc = bm_mpi_cid_agree(bm_mpi_cid_reduce_intra, parent, parent, &slot, fn);

    if (rc)
        return rc;
    if (myrank == MPI_UNDEFINED) {
        bm_mpi_cid_slot_free(slot); /* agreed for the others */
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int *copy = bm_mpi_comm_ranks_dup(world_ranks, n, &ok);
    if (!ok) {
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    return bm_mpi_comm_new(parent, slot, myrank, n, copy, false, 0, NULL, newcomm, fn);
}

/* Rank in comm of world rank w, or -1. */
static int comm_rank_of_world(MPI_Comm comm, int w)
{
    for (int i = 0; i < comm->size; i++)
        if (bm_mpi_comm_world_rank(comm, i) == w)
            return i;
    return -1;
}

/* The members of an MPI_Comm_create_group: they reduce among themselves,
 * the first gathering every proposal and sending back the result, in the
 * parent's collective context with the parent's rank numbers (the PML
 * orders messages per parent rank); the tag keeps concurrent calls on
 * overlapping groups apart. */
struct group_reduce {
    MPI_Comm parent;
    const int *world_ranks;
    int n, myrank, tag;
};

static int group_reduce(void *ctx, uint32_t v[2], const char *fn)
{
    struct group_reduce *g = ctx;
    int rc = MPI_SUCCESS;
    if (g->myrank == 0) {
        for (int r = 1; r < g->n && rc == MPI_SUCCESS; r++) {
            uint32_t theirs[2];
            rc = bm_mpi_coll_recv(g->parent, theirs, sizeof(theirs),
                                  comm_rank_of_world(g->parent, g->world_ranks[r]), g->tag, fn);
            for (int i = 0; i < 2; i++)
                v[i] = theirs[i] > v[i] ? theirs[i] : v[i];
        }
        for (int r = 1; r < g->n && rc == MPI_SUCCESS; r++) {
            int peer = comm_rank_of_world(g->parent, g->world_ranks[r]);
            struct bm_pml_request *req;
            if ((rc = bm_mpi_coll_isend(g->parent, v, 2 * sizeof(*v), peer, g->tag, &req, fn)) == 0)
                rc = bm_mpi_coll_wait(g->parent, req, peer, fn);
        }
        return rc;
    }
    int leader = comm_rank_of_world(g->parent, g->world_ranks[0]);
    return bm_mpi_coll_sendrecv(g->parent, v, 2 * sizeof(*v), leader, v, 2 * sizeof(*v), leader,
                                g->tag, fn);
}

int bm_mpi_comm_create_group_from(MPI_Comm parent, const int *world_ranks, int n, int myrank,
                                  int tag, MPI_Comm *newcomm, const char *fn)
{
    struct group_reduce g = {
        .parent = parent,
        .world_ranks = world_ranks,
        .n = n,
        .myrank = myrank,
        .tag = BM_MPI_COLL_TAG_GROUP_BASE | (tag & (BM_MPI_COLL_TAG_GROUP_BASE - 1)),
    };
    uint32_t slot;
    bool ok;
    int rc = bm_mpi_cid_agree(group_reduce, &g, parent, &slot, fn);
    if (rc)
        return rc;
    int *copy = bm_mpi_comm_ranks_dup(world_ranks, n, &ok);
    if (!ok) {
        bm_mpi_cid_slot_free(slot);
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    return bm_mpi_comm_new(parent, slot, myrank, n, copy, false, 0, NULL, newcomm, fn);
}

int bm_mpi_comm_create_prefix(MPI_Comm parent, int n, MPI_Comm *newcomm, const char *fn)
{
    int *world_ranks = malloc(sizeof(int) * (size_t)(n ? n : 1)), rc;

    if (world_ranks == NULL)
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < n; i++)
        world_ranks[i] = bm_mpi_comm_world_rank(parent, i);
    rc = bm_mpi_comm_create_from(parent, world_ranks, n,
                                 parent->rank < n ? parent->rank : MPI_UNDEFINED, newcomm, fn);
    free(world_ranks);
    return rc;
}

int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_split";
    struct split_entry mine, *all;
    int *world_ranks = NULL;
    int n = 0, myrank = MPI_UNDEFINED, rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (newcomm == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL newcomm pointer");
    if (color < 0 && color != MPI_UNDEFINED)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn,
                            "invalid color %d (colors are >= 0 or MPI_UNDEFINED)", color);
    if (comm->inter)
        return bm_mpi_intercomm_split(comm, color, key, newcomm, fn);
    all = malloc(sizeof(*all) * (size_t)comm->size);
    world_ranks = malloc(sizeof(int) * (size_t)comm->size);
    if (all == NULL || world_ranks == NULL) {
        free(all);
        free(world_ranks);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    mine = (struct split_entry){.color = color, .key = key, .parent_rank = comm->rank};
    rc = bm_mpi_coll_allgather_bytes(&mine, all, sizeof(mine), comm, fn);
    if (rc == MPI_SUCCESS && color != MPI_UNDEFINED) {
        for (int i = 0; i < comm->size; i++)
            if (all[i].color == color)
                all[n++] = all[i];
        qsort(all, (size_t)n, sizeof(*all), split_entry_cmp);
        for (int i = 0; i < n; i++) {
            world_ranks[i] = bm_mpi_comm_world_rank(comm, all[i].parent_rank);
            if (all[i].parent_rank == comm->rank)
                myrank = i;
        }
    }
    if (rc == MPI_SUCCESS)
        rc = bm_mpi_comm_create_from(comm, world_ranks, n, myrank, newcomm, fn);
    free(all);
    free(world_ranks);
    return rc;
}
BM_MPI_ALIAS(Comm_split);

int PMPI_Comm_free(MPI_Comm *comm)
{
    static const char fn[] = "MPI_Comm_free";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (comm == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL communicator pointer");
    if ((rc = bm_mpi_check_comm(*comm, fn)))
        return rc;
    if ((*comm)->predefined)
        return bm_mpi_error(*comm, MPI_ERR_COMM, fn, "cannot free the predefined communicator %s",
                            (*comm)->name);
    if ((rc = bm_mpi_attr_delete_all(*comm, fn)))
        return rc;
    /* Operations still pending on it keep it alive (and its context ids
     * taken) until they complete. */
    bm_mpi_comm_free_handle(*comm);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_free);

int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_split_type";
    int rc;

    (void)info; /* no hints are recognized */
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn,
                            "invalid split type %d (use MPI_COMM_TYPE_SHARED or MPI_UNDEFINED)",
                            split_type);
    /* Processes share memory exactly when the runtime puts them on one node. */
    return PMPI_Comm_split(comm,
                           split_type == MPI_UNDEFINED
                               ? MPI_UNDEFINED
                               : bm_rte_node_of(bm_mpi_comm_world_rank(comm, comm->rank)),
                           key, newcomm);
}
BM_MPI_ALIAS(Comm_split_type);

/* ---- hints ------------------------------------------------------------------ */

int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    static const char fn[] = "MPI_Comm_set_info";
    MPI_Info copy;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    /* No hint changes what bitmover does yet; they are kept for
     * MPI_Comm_get_info and passed on by MPI_Comm_dup. */
    if ((rc = PMPI_Info_dup(info, &copy)))
        return rc;
    if (comm->info != MPI_INFO_NULL)
        PMPI_Info_free(&comm->info);
    comm->info = copy;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_set_info);

int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    static const char fn[] = "MPI_Comm_get_info";
    int rc;

    if ((rc = check_query(comm, info_used, fn)))
        return rc;
    /* The hints set (bitmover returns them all, as MPI-4.0 asks). */
    return comm->info != MPI_INFO_NULL ? PMPI_Info_dup(comm->info, info_used)
                                       : PMPI_Info_create(info_used);
}
BM_MPI_ALIAS(Comm_get_info);

int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_dup_with_info";
    uint32_t slot;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (newcomm == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL newcomm pointer");
    /* MPI_INFO_NULL: a duplicate with no hints at all (not the old
     * communicator's, which is MPI_Comm_dup): as Open MPI and MPICH take it.
     * Another info is validated by duplicating it. */
    MPI_Info hints;
    if ((rc = info == MPI_INFO_NULL ? PMPI_Info_create(&hints) : PMPI_Info_dup(info, &hints)))
        return rc;
    if (!(rc = bm_mpi_cid_agree(bm_mpi_comm_reducer(comm), comm, comm, &slot, fn)))
        rc = bm_mpi_comm_dup_on_slot(comm, slot, hints, newcomm, fn);
    PMPI_Info_free(&hints);
    return rc;
}
BM_MPI_ALIAS(Comm_dup_with_info);

/* A barrier over every process of comm (both groups of an
 * inter-communicator), for MPI_Comm_disconnect. */
static int comm_barrier_all(MPI_Comm comm, const char *fn)
{
    if (!comm->inter)
        return bm_mpi_coll_barrier(comm, fn);
    uint32_t v[2] = {0, 0};
    return bm_mpi_intercomm_reduce(comm, v, fn);
}

int PMPI_Comm_disconnect(MPI_Comm *comm)
{
    static const char fn[] = "MPI_Comm_disconnect";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (comm == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL communicator pointer");
    if ((rc = bm_mpi_check_comm(*comm, fn)))
        return rc;
    if ((*comm)->predefined)
        return bm_mpi_error(*comm, MPI_ERR_COMM, fn,
                            "cannot disconnect the predefined communicator %s", (*comm)->name);
    /* Collective: every process has stopped sending on it once all are
     * here. Operations still pending keep the object alive until they
     * complete (reference counting), as with MPI_Comm_free. */
    if ((rc = comm_barrier_all(*comm, fn)))
        return rc;
    return PMPI_Comm_free(comm);
}
BM_MPI_ALIAS(Comm_disconnect);
