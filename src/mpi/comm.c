/* Communicators: MPI_COMM_WORLD and MPI_COMM_SELF, the queries on any
 * communicator (rank, size, attributes, names, comparison), and new
 * communicators made by MPI_Comm_dup and MPI_Comm_split. Each communicator
 * owns a pair of matching contexts (point-to-point, collectives). New context
 * ids are agreed by the members with an MPI_MAX allreduce of every member's
 * next free id over the parent, so no two communicators a process belongs to
 * ever share one; processes in different colors of a split may receive the
 * same id, which is safe because they never exchange messages in it. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"
#include "runtime/rte.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI_COMM_SELF's one member, as a world rank (set at init). */
static int self_world_rank;
static uint32_t next_context_id = BM_MPI_CONTEXT_FIRST_FREE;

struct bm_mpi_comm bm_mpi_comm_world_obj = {
    .magic = BM_MPI_MAGIC_COMM,
    .context_id = BM_MPI_CONTEXT_WORLD,
    .rank = 0,
    .size = 0,
    .world_ranks = NULL,
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
    .errhandler = &bm_mpi_errors_are_fatal_obj,
    .name = "MPI_COMM_SELF",
    .predefined = true,
};

int bm_mpi_comm_init(void)
{
    const struct bm_rte_proc *self = bm_rte_self();

    bm_mpi_comm_world_obj.rank = self->rank;
    bm_mpi_comm_world_obj.size = self->size;
    self_world_rank = self->rank;
    next_context_id = BM_MPI_CONTEXT_FIRST_FREE;
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
    *flag = 0; /* only intra-communicators exist */
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Comm_test_inter);

int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    static const char fn[] = "MPI_Comm_compare";
    bool same_order = true;
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
    *result = MPI_UNEQUAL;
    if (comm1->size != comm2->size)
        return MPI_SUCCESS;
    for (int i = 0; i < comm1->size; i++) {
        if (bm_mpi_comm_world_rank(comm1, i) != bm_mpi_comm_world_rank(comm2, i)) {
            same_order = false;
            break;
        }
    }
    if (same_order) {
        *result = MPI_CONGRUENT;
        return MPI_SUCCESS;
    }
    /* Same members in another order? Communicators are small enough here
     * that the quadratic scan costs less than sorting copies. */
    for (int i = 0; i < comm1->size; i++) {
        int w = bm_mpi_comm_world_rank(comm1, i);
        bool found = false;
        for (int j = 0; j < comm2->size && !found; j++)
            found = bm_mpi_comm_world_rank(comm2, j) == w;
        if (!found)
            return MPI_SUCCESS;
    }
    *result = MPI_SIMILAR;
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

/* Agree on a fresh context id with the other members of parent. */
static int agree_context_id(MPI_Comm parent, uint32_t *cid_out, const char *fn)
{
    unsigned mine = next_context_id, agreed;
    int rc;

    if (next_context_id > UINT32_MAX - 2) {
        /* A user error handler may return; the caller must still fail. */
        bm_mpi_error(parent, MPI_ERR_INTERN, fn,
                     "out of communicator context ids: more than 2^31 communicators "
                     "were created in this job, and ids are never reused");
        return MPI_ERR_INTERN;
    }
    rc = bm_mpi_coll_allreduce(&mine, &agreed, 1, MPI_UNSIGNED, MPI_MAX, parent, fn);
    if (rc)
        return rc;
    next_context_id = agreed + 2;
    *cid_out = agreed;
    return MPI_SUCCESS;
}

static int comm_new(MPI_Comm parent, uint32_t cid, int rank, int size, int *world_ranks,
                    MPI_Comm *newcomm, const char *fn)
{
    struct bm_mpi_comm *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        free(world_ranks);
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    c->magic = BM_MPI_MAGIC_COMM;
    c->context_id = cid;
    c->rank = rank;
    c->size = size;
    c->world_ranks = world_ranks;
    c->errhandler = parent->errhandler;
    bm_mpi_errhandler_retain(c->errhandler);
    *newcomm = c;
    return MPI_SUCCESS;
}

/* Frees a communicator whose attributes are gone. */
static void comm_destroy(MPI_Comm comm)
{
    /* Only a failed MPI_Comm_dup leaves attributes here: their copies never
     * became visible, so their delete callbacks do not run. */
    bm_mpi_attr_drop_all(comm);
    /* Context ids are never reused, so the PML may drop their matching
     * state; it keeps it while receives or unexpected messages remain. */
    bm_pml_context_release(comm->context_id);
    bm_pml_context_release(comm->context_id + 1);
    bm_mpi_cart_free(comm->cart);
    bm_mpi_graph_free(comm->graph);
    bm_mpi_errhandler_release(comm->errhandler);
    free(comm->world_ranks);
    comm->magic = 0;
    free(comm);
}

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_dup";
    int *world_ranks = NULL;
    uint32_t cid;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (newcomm == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL newcomm pointer");
    if ((rc = agree_context_id(comm, &cid, fn)))
        return rc;
    if (comm->world_ranks) {
        world_ranks = malloc(sizeof(int) * (size_t)comm->size);
        if (world_ranks == NULL)
            return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        memcpy(world_ranks, comm->world_ranks, sizeof(int) * (size_t)comm->size);
    }
    if ((rc = comm_new(comm, cid, comm->rank, comm->size, world_ranks, newcomm, fn)))
        return rc;
    /* A duplicate keeps the topology. */
    if ((comm->cart && ((*newcomm)->cart = bm_mpi_cart_dup(comm->cart)) == NULL) ||
        (comm->graph && ((*newcomm)->graph = bm_mpi_graph_dup(comm->graph)) == NULL))
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    if (rc || (rc = bm_mpi_attr_copy_all(comm, *newcomm, fn))) {
        comm_destroy(*newcomm);
        *newcomm = MPI_COMM_NULL;
    }
    return rc;
}
BM_MPI_ALIAS(Comm_dup);

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
    int *copy;
    uint32_t cid;
    int rc = agree_context_id(parent, &cid, fn);

    if (rc)
        return rc;
    if (myrank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    copy = malloc(sizeof(int) * (size_t)n);
    if (copy == NULL)
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    memcpy(copy, world_ranks, sizeof(int) * (size_t)n);
    return comm_new(parent, cid, myrank, n, copy, newcomm, fn);
}

/* Rank in comm of world rank w, or -1. */
static int comm_rank_of_world(MPI_Comm comm, int w)
{
    for (int i = 0; i < comm->size; i++)
        if (bm_mpi_comm_world_rank(comm, i) == w)
            return i;
    return -1;
}

int bm_mpi_comm_create_group_from(MPI_Comm parent, const int *world_ranks, int n, int myrank,
                                  int tag, MPI_Comm *newcomm, const char *fn)
{
    /* Only the members take part: the first member gathers every member's
     * next free id and sends back the largest, in the parent's collective
     * context with the parent's rank numbers (the PML orders messages per
     * parent rank). The tag keeps concurrent calls on overlapping groups
     * apart. */
    int ctag = BM_MPI_COLL_TAG_GROUP_BASE | (tag & (BM_MPI_COLL_TAG_GROUP_BASE - 1));
    int leader = comm_rank_of_world(parent, world_ranks[0]), *copy, rc = MPI_SUCCESS;
    unsigned agreed = next_context_id;

    if (next_context_id > UINT32_MAX - 2)
        return bm_mpi_error(parent, MPI_ERR_INTERN, fn,
                            "out of communicator context ids: more than 2^31 communicators "
                            "were created in this job, and ids are never reused");
    if (myrank == 0) {
        for (int r = 1; r < n && rc == MPI_SUCCESS; r++) {
            unsigned theirs;
            rc = bm_mpi_coll_recv(parent, &theirs, sizeof(theirs),
                                  comm_rank_of_world(parent, world_ranks[r]), ctag, fn);
            agreed = theirs > agreed ? theirs : agreed;
        }
        for (int r = 1; r < n && rc == MPI_SUCCESS; r++) {
            int peer = comm_rank_of_world(parent, world_ranks[r]);
            struct bm_pml_request *req;
            if ((rc = bm_mpi_coll_isend(parent, &agreed, sizeof(agreed), peer, ctag, &req, fn)) ==
                0)
                rc = bm_mpi_coll_wait(parent, req, peer, fn);
        }
    } else {
        rc = bm_mpi_coll_sendrecv(parent, &agreed, sizeof(agreed), leader, &agreed, sizeof(agreed),
                                  leader, ctag, fn);
    }
    if (rc)
        return rc;
    next_context_id = agreed + 2;
    copy = malloc(sizeof(int) * (size_t)n);
    if (copy == NULL)
        return bm_mpi_error(parent, MPI_ERR_NO_MEM, fn, "out of memory");
    memcpy(copy, world_ranks, sizeof(int) * (size_t)n);
    return comm_new(parent, agreed, myrank, n, copy, newcomm, fn);
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
    comm_destroy(*comm);
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
