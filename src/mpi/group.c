/* Process groups (MPI_Comm_group, MPI_Group_incl/excl/range_incl/range_excl,
 * set operations, rank translation, comparison), MPI_Comm_create (collective
 * over the parent) and MPI_Comm_create_group (collective over the group
 * only), which turn a group into a communicator. A group is an ordered list of world
 * ranks; it is local (no communication) and reference counted so that a
 * communicator made from it never depends on the group's lifetime. */
#include "mpi/mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct bm_mpi_group bm_mpi_group_empty_obj = {
    .magic = BM_MPI_MAGIC_GROUP, .size = 0, .world_ranks = NULL, .predefined = true};

static int check_group(MPI_Group g, const char *fn)
{
    if (g == MPI_GROUP_NULL || g->magic != BM_MPI_MAGIC_GROUP)
        return bm_mpi_error(NULL, MPI_ERR_GROUP, fn, "invalid group handle %p%s", (void *)g,
                            g == MPI_GROUP_NULL ? " (MPI_GROUP_NULL)" : "");
    return MPI_SUCCESS;
}

static int check_out(const void *out, const char *fn)
{
    return out ? MPI_SUCCESS : bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
}

int bm_mpi_group_new(const int *world_ranks, int n, MPI_Group *group_out, const char *fn)
{
    struct bm_mpi_group *g;

    if (n == 0) {
        *group_out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    g = calloc(1, sizeof(*g));
    if (g)
        g->world_ranks = malloc(sizeof(int) * (size_t)n);
    if (g == NULL || g->world_ranks == NULL) {
        free(g);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory for a group of %d", n);
    }
    g->magic = BM_MPI_MAGIC_GROUP;
    g->size = n;
    memcpy(g->world_ranks, world_ranks, sizeof(int) * (size_t)n);
    *group_out = g;
    return MPI_SUCCESS;
}

/* Rank of world rank w in g, or MPI_UNDEFINED. */
static int group_find(MPI_Group g, int w)
{
    for (int i = 0; i < g->size; i++)
        if (g->world_ranks[i] == w)
            return i;
    return MPI_UNDEFINED;
}

int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    static const char fn[] = "MPI_Comm_group";
    int *w, rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_out(group, fn)))
        return rc;
    w = malloc(sizeof(int) * (size_t)comm->size);
    if (w == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < comm->size; i++)
        w[i] = bm_mpi_comm_world_rank(comm, i);
    rc = bm_mpi_group_new(w, comm->size, group, fn);
    free(w);
    return rc;
}
BM_MPI_ALIAS(Comm_group);

int PMPI_Group_size(MPI_Group group, int *size)
{
    static const char fn[] = "MPI_Group_size";
    int rc;

    if ((rc = check_group(group, fn)) || (rc = check_out(size, fn)))
        return rc;
    *size = group->size;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Group_size);

int PMPI_Group_rank(MPI_Group group, int *rank)
{
    static const char fn[] = "MPI_Group_rank";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = check_group(group, fn)) ||
        (rc = check_out(rank, fn)))
        return rc;
    *rank = group_find(group, MPI_COMM_WORLD->rank);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Group_rank);

int PMPI_Group_free(MPI_Group *group)
{
    static const char fn[] = "MPI_Group_free";
    int rc;

    if ((rc = check_out(group, fn)) || (rc = check_group(*group, fn)))
        return rc;
    if (!(*group)->predefined) {
        (*group)->magic = 0;
        free((*group)->world_ranks);
        free(*group);
    }
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Group_free);

int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                               int ranks2[])
{
    static const char fn[] = "MPI_Group_translate_ranks";
    int rc;

    if ((rc = check_group(group1, fn)) || (rc = check_group(group2, fn)))
        return rc;
    if (n < 0 || (n > 0 && (ranks1 == NULL || ranks2 == NULL)))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "invalid rank arrays (n = %d)", n);
    for (int i = 0; i < n; i++) {
        if (ranks1[i] == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
            continue;
        }
        if (ranks1[i] < 0 || ranks1[i] >= group1->size)
            return bm_mpi_error(NULL, MPI_ERR_RANK, fn, "invalid rank %d (group has %d ranks)",
                                ranks1[i], group1->size);
        ranks2[i] = group_find(group2, group1->world_ranks[ranks1[i]]);
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Group_translate_ranks);

int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    static const char fn[] = "MPI_Group_compare";
    bool same_order = true;
    int rc;

    if ((rc = check_group(group1, fn)) || (rc = check_group(group2, fn)) ||
        (rc = check_out(result, fn)))
        return rc;
    *result = MPI_UNEQUAL;
    if (group1->size != group2->size)
        return MPI_SUCCESS;
    for (int i = 0; i < group1->size && same_order; i++)
        same_order = group1->world_ranks[i] == group2->world_ranks[i];
    if (same_order) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    for (int i = 0; i < group1->size; i++)
        if (group_find(group2, group1->world_ranks[i]) == MPI_UNDEFINED)
            return MPI_SUCCESS;
    *result = MPI_SIMILAR;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Group_compare);

/* The ranks of a subset of group, in the order listed; each rank valid and
 * listed once (MPI_ERR_RANK otherwise). */
static int check_rank_list(MPI_Group group, int n, const int ranks[], const char *fn)
{
    bool *seen;

    if (n < 0 || n > group->size || (n > 0 && ranks == NULL))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "invalid rank list of %d entries for a group of %d", n, group->size);
    seen = calloc((size_t)group->size + 1, sizeof(bool));
    if (seen == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= group->size || seen[ranks[i]]) {
            int r = ranks[i];
            free(seen);
            return bm_mpi_error(NULL, MPI_ERR_RANK, fn,
                                "rank %d is %s (group has %d ranks; each may be listed once)", r,
                                r < 0 || r >= group->size ? "out of range" : "listed twice",
                                group->size);
        }
        seen[ranks[i]] = true;
    }
    free(seen);
    return MPI_SUCCESS;
}

int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    static const char fn[] = "MPI_Group_incl";
    int *w, rc;

    if ((rc = check_group(group, fn)) || (rc = check_out(newgroup, fn)) ||
        (rc = check_rank_list(group, n, ranks, fn)))
        return rc;
    w = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (w == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < n; i++)
        w[i] = group->world_ranks[ranks[i]];
    rc = bm_mpi_group_new(w, n, newgroup, fn);
    free(w);
    return rc;
}
BM_MPI_ALIAS(Group_incl);

int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    static const char fn[] = "MPI_Group_excl";
    int *w, m = 0, rc;
    bool *drop;

    if ((rc = check_group(group, fn)) || (rc = check_out(newgroup, fn)) ||
        (rc = check_rank_list(group, n, ranks, fn)))
        return rc;
    w = malloc(sizeof(int) * (size_t)(group->size ? group->size : 1));
    drop = calloc((size_t)group->size + 1, sizeof(bool));
    if (w == NULL || drop == NULL) {
        free(w);
        free(drop);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int i = 0; i < n; i++)
        drop[ranks[i]] = true;
    for (int i = 0; i < group->size; i++)
        if (!drop[i])
            w[m++] = group->world_ranks[i];
    rc = bm_mpi_group_new(w, m, newgroup, fn);
    free(w);
    free(drop);
    return rc;
}
BM_MPI_ALIAS(Group_excl);

/* Expand (first, last, stride) triplets into a rank list. */
static int expand_ranges(MPI_Group group, int n, int ranges[][3], int **list_out, int *count_out,
                         const char *fn)
{
    int total = 0, *list;

    if (n < 0 || (n > 0 && ranges == NULL))
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "invalid range list (n = %d)", n);
    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || (stride > 0 && first > last) || (stride < 0 && first < last))
            return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                                "invalid range (%d, %d, %d): stride 0 or pointing away from the "
                                "last rank",
                                first, last, stride);
        total += (last - first) / stride + 1;
        if (total > group->size)
            return bm_mpi_error(NULL, MPI_ERR_RANK, fn,
                                "the ranges name more ranks than the group's %d", group->size);
    }
    list = malloc(sizeof(int) * (size_t)(total ? total : 1));
    if (list == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    total = 0;
    for (int i = 0; i < n; i++)
        for (int r = ranges[i][0]; ranges[i][2] > 0 ? r <= ranges[i][1] : r >= ranges[i][1];
             r += ranges[i][2])
            list[total++] = r;
    *list_out = list;
    *count_out = total;
    return MPI_SUCCESS;
}

int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    static const char fn[] = "MPI_Group_range_incl";
    int *list, count, rc;

    if ((rc = check_group(group, fn)) || (rc = check_out(newgroup, fn)) ||
        (rc = expand_ranges(group, n, ranges, &list, &count, fn)))
        return rc;
    rc = PMPI_Group_incl(group, count, list, newgroup);
    free(list);
    return rc;
}
BM_MPI_ALIAS(Group_range_incl);

int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    static const char fn[] = "MPI_Group_range_excl";
    int *list, count, rc;

    if ((rc = check_group(group, fn)) || (rc = check_out(newgroup, fn)) ||
        (rc = expand_ranges(group, n, ranges, &list, &count, fn)))
        return rc;
    rc = PMPI_Group_excl(group, count, list, newgroup);
    free(list);
    return rc;
}
BM_MPI_ALIAS(Group_range_excl);

enum set_op { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

/* The standard's order: members of group1 first (in group1's order), then
 * (union only) those of group2 not in group1. */
static int group_set_op(MPI_Group g1, MPI_Group g2, enum set_op op, MPI_Group *newgroup,
                        const char *fn)
{
    int *w, n = 0, rc;

    if ((rc = check_group(g1, fn)) || (rc = check_group(g2, fn)) || (rc = check_out(newgroup, fn)))
        return rc;
    w = malloc(sizeof(int) * (size_t)(g1->size + g2->size + 1));
    if (w == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < g1->size; i++) {
        bool in2 = group_find(g2, g1->world_ranks[i]) != MPI_UNDEFINED;
        if (op == SET_UNION || (op == SET_INTERSECTION) == in2)
            w[n++] = g1->world_ranks[i];
    }
    if (op == SET_UNION)
        for (int i = 0; i < g2->size; i++)
            if (group_find(g1, g2->world_ranks[i]) == MPI_UNDEFINED)
                w[n++] = g2->world_ranks[i];
    rc = bm_mpi_group_new(w, n, newgroup, fn);
    free(w);
    return rc;
}

int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_set_op(group1, group2, SET_UNION, newgroup, "MPI_Group_union");
}
BM_MPI_ALIAS(Group_union);

int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_set_op(group1, group2, SET_INTERSECTION, newgroup, "MPI_Group_intersection");
}
BM_MPI_ALIAS(Group_intersection);

int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return group_set_op(group1, group2, SET_DIFFERENCE, newgroup, "MPI_Group_difference");
}
BM_MPI_ALIAS(Group_difference);

/* The group must lie inside comm (MPI_ERR_GROUP otherwise). */
static int check_subgroup(MPI_Comm comm, MPI_Group group, const char *fn)
{
    for (int i = 0; i < group->size; i++) {
        bool member = false;
        for (int j = 0; j < comm->size && !member; j++)
            member = bm_mpi_comm_world_rank(comm, j) == group->world_ranks[i];
        if (!member)
            return bm_mpi_error(comm, MPI_ERR_GROUP, fn,
                                "the group holds world rank %d, which is not in communicator %s",
                                group->world_ranks[i], bm_mpi_comm_label(comm));
    }
    return MPI_SUCCESS;
}

int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = check_group(group, fn)) || (rc = check_out(newcomm, fn)) ||
        (rc = check_subgroup(comm, group, fn)))
        return rc;
    if (comm->inter)
        return bm_mpi_intercomm_create_sub(comm, group, newcomm, fn);
    return bm_mpi_comm_create_from(comm, group->world_ranks, group->size,
                                   group_find(group, MPI_COMM_WORLD->rank), newcomm, fn);
}
BM_MPI_ALIAS(Comm_create);

int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_group";
    int rc, me;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_intra(comm, fn)) ||
        (rc = check_group(group, fn)) || (rc = check_out(newcomm, fn)) ||
        (rc = bm_mpi_check_tag(comm, tag, false, fn)) || (rc = check_subgroup(comm, group, fn)))
        return rc;
    if (group->size == 0) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    me = group_find(group, MPI_COMM_WORLD->rank);
    if (me == MPI_UNDEFINED)
        return bm_mpi_error(comm, MPI_ERR_GROUP, fn,
                            "only members of the group call MPI_Comm_create_group, and world "
                            "rank %d is not in it",
                            MPI_COMM_WORLD->rank);
    return bm_mpi_comm_create_group_from(comm, group->world_ranks, group->size, me, tag, newcomm,
                                         fn);
}
BM_MPI_ALIAS(Comm_create_group);
