/* Graph process topologies: MPI_Graph_create (the whole graph given on
 * every process), MPI_Dist_graph_create_adjacent (each process gives its
 * own in- and out-neighbours, optionally weighted), MPI_Dist_graph_create
 * (any process may give any edge; an alltoall tells each process its
 * neighbours, in the order of the ranks that gave them), their queries, and
 * the neighbour lists of graph and Cartesian communicators that the
 * neighbourhood collectives (coll_neighbor.c) use. Ranks are never
 * reordered. */
#include "mpi/mpi_internal.h"
#include "pml/pml.h"

#include <stdlib.h>
#include <string.h>

struct bm_mpi_graph {
    int kind;   /* MPI_GRAPH or MPI_DIST_GRAPH */
    int nnodes; /* MPI_GRAPH: the whole graph (index/edges as given) */
    int *index;
    int *edges;
    int indegree; /* this process's neighbours */
    int outdegree;
    int *sources;
    int *destinations;
    int *sourceweights; /* NULL when unweighted */
    int *destweights;
};

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are distinct addresses, never data. */
int bm_mpi_unweighted_obj;
int bm_mpi_weights_empty_obj;

int bm_mpi_graph_kind(const struct bm_mpi_graph *g)
{
    return g->kind;
}

void bm_mpi_graph_free(struct bm_mpi_graph *g)
{
    if (g) {
        free(g->index);
        free(g->edges);
        free(g->sources);
        free(g->destinations);
        free(g->sourceweights);
        free(g->destweights);
        free(g);
    }
}

static int *int_dup(const int *src, int n, bool *fail)
{
    int *p;

    if (src == NULL || n == 0)
        return NULL;
    p = malloc(sizeof(int) * (size_t)n);
    if (p == NULL)
        *fail = true;
    else
        memcpy(p, src, sizeof(int) * (size_t)n);
    return p;
}

struct bm_mpi_graph *bm_mpi_graph_dup(const struct bm_mpi_graph *g)
{
    struct bm_mpi_graph *c;
    bool fail = false;

    if (g == NULL || (c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    *c = *g;
    c->index = int_dup(g->index, g->nnodes, &fail);
    c->edges = int_dup(g->edges, g->nnodes ? g->index[g->nnodes - 1] : 0, &fail);
    c->sources = int_dup(g->sources, g->indegree, &fail);
    c->destinations = int_dup(g->destinations, g->outdegree, &fail);
    c->sourceweights = int_dup(g->sourceweights, g->indegree, &fail);
    c->destweights = int_dup(g->destweights, g->outdegree, &fail);
    if (fail) {
        bm_mpi_graph_free(c);
        return NULL;
    }
    return c;
}

/* Makes the communicator of the first nprocs processes and attaches g. */
static int graph_attach(MPI_Comm comm_old, struct bm_mpi_graph *g, int nprocs, MPI_Comm *newcomm,
                        const char *fn)
{
    int rc = bm_mpi_comm_create_prefix(comm_old, nprocs, newcomm, fn);

    if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
        (*newcomm)->graph = g;
        g = NULL;
    }
    bm_mpi_graph_free(g);
    return rc;
}

static int check_ranks(MPI_Comm comm, const int *ranks, int n, int limit, const char *what,
                       const char *fn)
{
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= limit)
            return bm_mpi_error(comm, MPI_ERR_RANK, fn, "%s[%d] = %d is not a rank below %d", what,
                                i, ranks[i], limit);
    return MPI_SUCCESS;
}

int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                      int reorder, MPI_Comm *comm_graph)
{
    static const char fn[] = "MPI_Graph_create";
    struct bm_mpi_graph *g;
    bool fail = false;
    int rc, me, first;

    (void)reorder;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_intra(comm_old, fn)))
        return rc;
    if (nnodes < 0 || nnodes > comm_old->size || comm_graph == NULL ||
        (nnodes > 0 && (index == NULL || edges == NULL)))
        return bm_mpi_error(comm_old, MPI_ERR_ARG, fn,
                            "invalid arguments (nnodes %d, communicator of %d)", nnodes,
                            comm_old->size);
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i ? index[i - 1] : 0))
            return bm_mpi_error(comm_old, MPI_ERR_ARG, fn, "index[%d] = %d decreases", i, index[i]);
    if ((rc = check_ranks(comm_old, edges, nnodes ? index[nnodes - 1] : 0, nnodes, "edges", fn)))
        return rc;
    g = calloc(1, sizeof(*g));
    if (g == NULL)
        return bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
    g->kind = MPI_GRAPH;
    g->nnodes = nnodes;
    g->index = int_dup(index, nnodes, &fail);
    g->edges = int_dup(edges, nnodes ? index[nnodes - 1] : 0, &fail);
    me = comm_old->rank;
    if (me < nnodes) {
        first = me ? index[me - 1] : 0;
        g->indegree = g->outdegree = index[me] - first;
        g->sources = int_dup(edges + first, g->indegree, &fail);
        g->destinations = int_dup(edges + first, g->outdegree, &fail);
    }
    if (fail) {
        bm_mpi_graph_free(g);
        return bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    return graph_attach(comm_old, g, nnodes, comm_graph, fn);
}
BM_MPI_ALIAS(Graph_create);

int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                    const int sourceweights[], int outdegree,
                                    const int destinations[], const int destweights[],
                                    MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create_adjacent";
    struct bm_mpi_graph *g;
    bool fail = false, weighted = sourceweights != MPI_UNWEIGHTED;
    int rc;

    (void)info;
    (void)reorder;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_intra(comm_old, fn)))
        return rc;
    if (indegree < 0 || outdegree < 0 || comm_dist_graph == NULL ||
        (indegree > 0 && sources == NULL) || (outdegree > 0 && destinations == NULL) ||
        (sourceweights == MPI_UNWEIGHTED) != (destweights == MPI_UNWEIGHTED))
        return bm_mpi_error(comm_old, MPI_ERR_ARG, fn,
                            "invalid arguments (indegree %d, outdegree %d; both or neither "
                            "weight arrays must be MPI_UNWEIGHTED)",
                            indegree, outdegree);
    if ((rc = check_ranks(comm_old, sources, indegree, comm_old->size, "sources", fn)) ||
        (rc = check_ranks(comm_old, destinations, outdegree, comm_old->size, "destinations", fn)))
        return rc;
    g = calloc(1, sizeof(*g));
    if (g == NULL)
        return bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
    g->kind = MPI_DIST_GRAPH;
    g->indegree = indegree;
    g->outdegree = outdegree;
    g->sources = int_dup(sources, indegree, &fail);
    g->destinations = int_dup(destinations, outdegree, &fail);
    if (weighted) {
        /* Weights are kept for the queries; they do not change placement. */
        g->sourceweights = calloc((size_t)indegree + 1, sizeof(int));
        g->destweights = calloc((size_t)outdegree + 1, sizeof(int));
        fail = fail || !g->sourceweights || !g->destweights;
        if (!fail && sourceweights != MPI_WEIGHTS_EMPTY && indegree > 0)
            memcpy(g->sourceweights, sourceweights, sizeof(int) * (size_t)indegree);
        if (!fail && destweights != MPI_WEIGHTS_EMPTY && outdegree > 0)
            memcpy(g->destweights, destweights, sizeof(int) * (size_t)outdegree);
    }
    if (fail) {
        bm_mpi_graph_free(g);
        return bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    return graph_attach(comm_old, g, comm_old->size, comm_dist_graph, fn);
}
BM_MPI_ALIAS(Dist_graph_create_adjacent);

/* One end of an edge of MPI_Dist_graph_create, sent to the process it
 * concerns: "you have neighbour peer in direction dir, with weight w". */
struct edge_end {
    int dir; /* 0: in-neighbour (source), 1: out-neighbour (destination) */
    int peer;
    int weight;
};
/* Edge ends travel as 3 MPI_INTs. */
_Static_assert(sizeof(struct edge_end) == 3 * sizeof(int), "edge_end must be 3 packed ints");

/* The graph of this process from the edge ends it received, neighbours in
 * the order their edges arrived (by sending rank); NULL when out of memory. */
static struct bm_mpi_graph *graph_from_edge_ends(const struct edge_end *ends, int nends,
                                                 bool weighted)
{
    int nin = 0, nout = 0;
    for (int k = 0; k < nends; k++) {
        if (ends[k].dir)
            nout++;
        else
            nin++;
    }
    struct bm_mpi_graph *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->kind = MPI_DIST_GRAPH;
    g->sources = malloc(sizeof(int) * (size_t)(nin + 1));
    g->destinations = malloc(sizeof(int) * (size_t)(nout + 1));
    bool fail = !g->sources || !g->destinations;
    if (weighted && !fail) {
        g->sourceweights = malloc(sizeof(int) * (size_t)(nin + 1));
        g->destweights = malloc(sizeof(int) * (size_t)(nout + 1));
        fail = !g->sourceweights || !g->destweights;
    }
    if (fail) {
        bm_mpi_graph_free(g);
        return NULL;
    }
    for (int k = 0; k < nends; k++) {
        int *list = ends[k].dir ? g->destinations : g->sources;
        int *wl = ends[k].dir ? g->destweights : g->sourceweights;
        int *cnt = ends[k].dir ? &g->outdegree : &g->indegree;
        if (wl)
            wl[*cnt] = ends[k].weight;
        list[(*cnt)++] = ends[k].peer;
    }
    return g;
}

int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                           const int destinations[], const int weights[], MPI_Info info,
                           int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create";
    bool weighted = weights != MPI_UNWEIGHTED;
    int size, nedges = 0, rc, *scount = NULL, *rcount = NULL, *sdispl = NULL, *rdispl = NULL;
    int total_in = 0, *fill = NULL;
    struct edge_end *sbuf = NULL, *rbuf = NULL;
    struct bm_mpi_graph *g = NULL;

    (void)info;
    (void)reorder;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_intra(comm_old, fn)))
        return rc;
    size = comm_old->size;
    if (n < 0 || comm_dist_graph == NULL || (n > 0 && (sources == NULL || degrees == NULL)))
        return bm_mpi_error(comm_old, MPI_ERR_ARG, fn, "invalid arguments: %s",
                            n < 0                     ? "n is negative"
                            : comm_dist_graph == NULL ? "NULL comm_dist_graph"
                                                      : "NULL sources or degrees with n > 0");
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return bm_mpi_error(comm_old, MPI_ERR_ARG, fn, "degrees[%d] = %d", i, degrees[i]);
        nedges += degrees[i];
    }
    if ((rc = check_ranks(comm_old, sources, n, size, "sources", fn)) ||
        (nedges > 0 && destinations == NULL) ||
        (rc = check_ranks(comm_old, destinations, nedges, size, "destinations", fn)))
        return rc ? rc : bm_mpi_error(comm_old, MPI_ERR_ARG, fn, "NULL destinations");

    /* Every edge end goes to its process: counts first, then the ends. */
    scount = calloc((size_t)size, sizeof(int));
    rcount = calloc((size_t)size, sizeof(int));
    sdispl = calloc((size_t)size, sizeof(int));
    rdispl = calloc((size_t)size, sizeof(int));
    fill = calloc((size_t)size, sizeof(int));
    sbuf = malloc(sizeof(*sbuf) * (size_t)(2 * nedges + 1));
    if (!scount || !rcount || !sdispl || !rdispl || !fill || !sbuf) {
        rc = bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
        goto out;
    }
    for (int i = 0, e = 0; i < n; i++)
        for (int k = 0; k < degrees[i]; k++, e++) {
            scount[sources[i]] += 3;
            scount[destinations[e]] += 3;
        }
    for (int r = 1; r < size; r++)
        sdispl[r] = sdispl[r - 1] + scount[r - 1];
    for (int i = 0, e = 0; i < n; i++)
        for (int k = 0; k < degrees[i]; k++, e++) {
            int w = weighted && weights != MPI_WEIGHTS_EMPTY ? weights[e] : 0;
            int s = sources[i], d = destinations[e];
            sbuf[(sdispl[s] + fill[s]) / 3] = (struct edge_end){1, d, w};
            fill[s] += 3;
            sbuf[(sdispl[d] + fill[d]) / 3] = (struct edge_end){0, s, w};
            fill[d] += 3;
        }
    if ((rc = PMPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, comm_old)))
        goto out;
    for (int r = 0; r < size; r++) {
        rdispl[r] = total_in;
        total_in += rcount[r];
    }
    rbuf = malloc(sizeof(int) * (size_t)(total_in + 3));
    if (rbuf == NULL) {
        rc = bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
        goto out;
    }
    if ((rc = PMPI_Alltoallv(sbuf, scount, sdispl, MPI_INT, rbuf, rcount, rdispl, MPI_INT,
                             comm_old)))
        goto out;

    g = graph_from_edge_ends(rbuf, total_in / 3, weighted);
    if (g == NULL) {
        rc = bm_mpi_error(comm_old, MPI_ERR_NO_MEM, fn, "out of memory");
        goto out;
    }
    rc = graph_attach(comm_old, g, size, comm_dist_graph, fn);
    g = NULL; /* graph_attach owns it */
out:
    bm_mpi_graph_free(g);
    free(scount);
    free(rcount);
    free(sdispl);
    free(rdispl);
    free(fill);
    free(sbuf);
    free(rbuf);
    return rc;
}
BM_MPI_ALIAS(Dist_graph_create);

static int check_graph(MPI_Comm comm, int kind, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (comm->graph == NULL || (kind && comm->graph->kind != kind))
        return bm_mpi_error(comm, MPI_ERR_TOPOLOGY, fn, "communicator %s has no %s topology",
                            bm_mpi_comm_label(comm),
                            kind == MPI_GRAPH ? "graph (MPI_Graph_create)" : "distributed graph");
    return MPI_SUCCESS;
}

int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    static const char fn[] = "MPI_Graphdims_get";
    int rc = check_graph(comm, MPI_GRAPH, fn);

    if (rc)
        return rc;
    if (nnodes == NULL || nedges == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL output argument");
    *nnodes = comm->graph->nnodes;
    *nedges = comm->graph->nnodes ? comm->graph->index[comm->graph->nnodes - 1] : 0;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Graphdims_get);

int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
    static const char fn[] = "MPI_Graph_get";
    const struct bm_mpi_graph *g;
    int rc = check_graph(comm, MPI_GRAPH, fn), nedges;

    if (rc)
        return rc;
    g = comm->graph;
    nedges = g->nnodes ? g->index[g->nnodes - 1] : 0;
    if (maxindex < 0 || maxedges < 0 || (maxindex > 0 && index == NULL) ||
        (maxedges > 0 && edges == NULL))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "invalid output arrays");
    for (int i = 0; i < g->nnodes && i < maxindex; i++)
        index[i] = g->index[i];
    for (int i = 0; i < nedges && i < maxedges; i++)
        edges[i] = g->edges[i];
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Graph_get);

int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    static const char fn[] = "MPI_Graph_neighbors_count";
    int rc = check_graph(comm, MPI_GRAPH, fn);

    if (rc || (rc = bm_mpi_check_rank(comm, rank, 0, fn)))
        return rc;
    if (nneighbors == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL nneighbors pointer");
    *nneighbors = comm->graph->index[rank] - (rank ? comm->graph->index[rank - 1] : 0);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Graph_neighbors_count);

int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    static const char fn[] = "MPI_Graph_neighbors";
    int rc = check_graph(comm, MPI_GRAPH, fn), first;

    if (rc || (rc = bm_mpi_check_rank(comm, rank, 0, fn)))
        return rc;
    if (maxneighbors < 0 || (maxneighbors > 0 && neighbors == NULL))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "invalid neighbors array");
    first = rank ? comm->graph->index[rank - 1] : 0;
    for (int i = 0; i < comm->graph->index[rank] - first && i < maxneighbors; i++)
        neighbors[i] = comm->graph->edges[first + i];
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Graph_neighbors);

int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    static const char fn[] = "MPI_Dist_graph_neighbors_count";
    int rc = check_graph(comm, 0, fn);

    if (rc)
        return rc;
    if (indegree == NULL || outdegree == NULL || weighted == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL output argument");
    *indegree = comm->graph->indegree;
    *outdegree = comm->graph->outdegree;
    *weighted = comm->graph->sourceweights != NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Dist_graph_neighbors_count);

int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                              int maxoutdegree, int destinations[], int destweights[])
{
    static const char fn[] = "MPI_Dist_graph_neighbors";
    const struct bm_mpi_graph *g;
    int rc = check_graph(comm, 0, fn);

    if (rc)
        return rc;
    g = comm->graph;
    if (maxindegree < g->indegree || maxoutdegree < g->outdegree ||
        (g->indegree && sources == NULL) || (g->outdegree && destinations == NULL))
        return bm_mpi_error(comm, MPI_ERR_ARG, fn,
                            "arrays smaller than the %d in- and %d out-neighbours", g->indegree,
                            g->outdegree);
    for (int i = 0; i < g->indegree; i++) {
        sources[i] = g->sources[i];
        if (g->sourceweights && sourceweights != MPI_UNWEIGHTED && sourceweights)
            sourceweights[i] = g->sourceweights[i];
    }
    for (int i = 0; i < g->outdegree; i++) {
        destinations[i] = g->destinations[i];
        if (g->destweights && destweights != MPI_UNWEIGHTED && destweights)
            destweights[i] = g->destweights[i];
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Dist_graph_neighbors);

/* In- and out-neighbour lists of a topology communicator. Cartesian: for
 * each dimension the -1 then the +1 neighbour (MPI_PROC_NULL at open
 * edges), the same list both ways. The caller frees *in_out (one block). */
int bm_mpi_topo_neighbors(MPI_Comm comm, int **in_out, int *nin, int **out_out, int *nout,
                          bool *cart_out, const char *fn)
{
    int ndims, *list;

    if (comm->graph) {
        const struct bm_mpi_graph *g = comm->graph;
        list = malloc(sizeof(int) * (size_t)(g->indegree + g->outdegree + 1));
        if (list == NULL)
            return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        if (g->indegree)
            memcpy(list, g->sources, sizeof(int) * (size_t)g->indegree);
        if (g->outdegree)
            memcpy(list + g->indegree, g->destinations, sizeof(int) * (size_t)g->outdegree);
        *in_out = list;
        *out_out = list + g->indegree;
        *nin = g->indegree;
        *nout = g->outdegree;
        *cart_out = false;
        return MPI_SUCCESS;
    }
    if (comm->cart == NULL)
        return bm_mpi_error(comm, MPI_ERR_TOPOLOGY, fn,
                            "communicator %s has no topology (neighbourhood collectives need "
                            "a Cartesian or graph communicator)",
                            bm_mpi_comm_label(comm));
    PMPI_Cartdim_get(comm, &ndims);
    list = malloc(sizeof(int) * (size_t)(2 * ndims + 1));
    if (list == NULL)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int d = 0; d < ndims; d++)
        PMPI_Cart_shift(comm, d, 1, &list[2 * d], &list[2 * d + 1]);
    *in_out = *out_out = list;
    *nin = *nout = 2 * ndims;
    *cart_out = true;
    return MPI_SUCCESS;
}
