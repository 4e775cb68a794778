/* Hierarchical collectives for communicators that span several hosts with
 * several ranks on some of them: a node communicator per host (its ranks
 * in communicator order; its first rank is the host's leader) and a leaders
 * communicator (one rank per host, in the order of their ranks), made at
 * the first eligible blocking call. A barrier, bcast, reduce, allreduce,
 * gather or allgather then runs in three phases: inside each host (on the node communicator,
 * which takes the shared-memory path when its ranks share memory), among
 * the leaders (the point-to-point algorithms over the network), and inside
 * each host again, so each byte crosses the network once per host instead
 * of once per rank.
 *   - barrier: node barrier, leaders barrier, node barrier;
 *   - bcast: a bcast in the root's host (from the root), among the leaders
 *     (from the root's host), in the other hosts (from their leader);
 *   - reduce: a reduce to each leader, among the leaders to the root's
 *     leader, which hands the result to the root if it is another rank;
 *   - allreduce: a reduce to each leader, an allreduce among the leaders,
 *     a bcast in each host; large commutative ones, where every host holds
 *     two ranks or more, in halves: each of the first two ranks of a host
 *     takes one half through the three phases (allreduce_halves);
 *   - allgather where every host holds a contiguous range of ranks: an
 *     allgather in each host, an allgatherv among the leaders, a bcast of
 *     the other hosts' blocks in each host, all in the receive buffer;
 *   - gather, allgather: every rank's block, packed, gathered on its
 *     leader in node order, so a leader holds its host's blocks at their
 *     place in host order (hosts in the leaders' order, each host's ranks
 *     in rank order); a gatherv to the root's leader or an allgatherv among
 *     the leaders completes that host-order buffer; it is unpacked into
 *     rank order (hosts may hold ranks that are not contiguous: 0 2 4 on
 *     one, 1 3 5 on the other) by the root, or by every leader, which then
 *     broadcasts the result in its host.
 * Reductions combine a host's ranks first, so they keep rank order only
 * when every host holds a contiguous range of ranks; a non-commutative
 * operation on any other placement runs the flat algorithm. Nonblocking and
 * persistent forms use the flat schedules. */
#include "mpi/coll.h"
#include "runtime/rte.h"

#include <stdlib.h>
#include <string.h>

enum { HIER_UNKNOWN = 0, HIER_ON, HIER_OFF };

struct bm_coll_hier {
    MPI_Comm node;    /* this host's ranks */
    MPI_Comm leaders; /* one rank per host (MPI_COMM_NULL on the others) */
    int *host_of;     /* per rank of the communicator: index of its host (leaders order) */
    int *node_rank;   /* per rank: its rank in its node communicator */
    int nhosts;
    int *host_count; /* per host: its ranks */
    int *host_start; /* per host: ranks of the hosts before it (host order) */
    bool contiguous; /* every host holds a contiguous range of ranks */
    /* the second rank of each host (MPI_COMM_NULL on the others), made at
     * the first allreduce that splits in halves: 0 not tried, 1 on, 2 off */
    MPI_Comm seconds;
    int seconds_state;
};

/* Hosts in the order of their first rank; per rank its host index and its
 * rank there. Returns the number of hosts, 0 when out of memory. */
static int map_hosts(MPI_Comm comm, struct bm_coll_hier *h, int **first_out)
{
    int n = comm->size, nhosts = 0, *first = malloc(sizeof(int) * (size_t)n);
    int *count = calloc((size_t)n, sizeof(int));

    h->host_of = malloc(sizeof(int) * (size_t)n);
    h->node_rank = malloc(sizeof(int) * (size_t)n);
    h->host_start = malloc(sizeof(int) * (size_t)n);
    if (!first || !count || !h->host_of || !h->node_rank || !h->host_start) {
        free(first);
        free(count);
        return 0;
    }
    h->contiguous = true;
    for (int r = 0; r < n; r++) {
        int node = bm_rte_node_of(bm_mpi_comm_world_rank(comm, r)), k;
        for (k = 0; k < nhosts; k++)
            if (bm_rte_node_of(bm_mpi_comm_world_rank(comm, first[k])) == node)
                break;
        if (k == nhosts)
            first[nhosts++] = r;
        else if (h->host_of[r - 1] != k)
            h->contiguous = false;
        h->host_of[r] = k;
        h->node_rank[r] = count[k]++;
    }
    for (int k = 0, at = 0; k < nhosts; at += count[k++])
        h->host_start[k] = at;
    h->host_count = count;
    h->nhosts = nhosts;
    *first_out = first;
    return nhosts;
}

/* Would the hierarchy help here: more than one host, and one with two or
 * more ranks? Decided from the runtime's node map (the same everywhere). */
static bool worth_it(MPI_Comm comm)
{
    int node0 = bm_rte_node_of(bm_mpi_comm_world_rank(comm, 0));
    bool several_hosts = false, shared_host = false;

    if (comm->inter || comm->size < 3)
        return false;
    for (int r = 1; r < comm->size; r++) {
        int node = bm_rte_node_of(bm_mpi_comm_world_rank(comm, r));
        several_hosts |= node != node0;
        for (int q = 0; q < r && !shared_host; q++)
            shared_host = node == bm_rte_node_of(bm_mpi_comm_world_rank(comm, q));
    }
    return several_hosts && shared_host;
}

static void hier_free(struct bm_coll_hier *h)
{
    if (h == NULL)
        return;
    if (h->node != MPI_COMM_NULL)
        bm_mpi_comm_free_handle(h->node);
    if (h->leaders != MPI_COMM_NULL)
        bm_mpi_comm_free_handle(h->leaders);
    if (h->seconds != MPI_COMM_NULL)
        bm_mpi_comm_free_handle(h->seconds);
    free(h->host_of);
    free(h->node_rank);
    free(h->host_count);
    free(h->host_start);
    free(h);
}

/* Collective over comm: make the node and leaders communicators. */
static void hier_setup(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn)
{
    struct bm_coll_hier *h = calloc(1, sizeof(*h));
    int *first = NULL, *members = NULL, *leaders = NULL, nhosts, me = comm->rank, nm = 0;
    bool ok = false;

    cc->hier_state = HIER_OFF; /* the set-up's own collectives run flat */
    if (h == NULL)
        return;
    h->node = h->leaders = h->seconds = MPI_COMM_NULL;
    nhosts = map_hosts(comm, h, &first);
    members = malloc(sizeof(int) * (size_t)comm->size);
    leaders = malloc(sizeof(int) * (size_t)(nhosts ? nhosts : 1));
    if (nhosts == 0 || members == NULL || leaders == NULL)
        goto out;
    for (int r = 0; r < comm->size; r++)
        if (h->host_of[r] == h->host_of[me])
            members[nm++] = bm_mpi_comm_world_rank(comm, r);
    for (int k = 0; k < nhosts; k++)
        leaders[k] = bm_mpi_comm_world_rank(comm, first[k]);
    /* every rank takes part in both creations (collective over comm) */
    if (bm_mpi_comm_create_from(comm, members, nm, h->node_rank[me], &h->node, fn) ||
        bm_mpi_comm_create_from(comm, leaders, nhosts,
                                h->node_rank[me] == 0 ? h->host_of[me] : MPI_UNDEFINED, &h->leaders,
                                fn))
        goto out;
    ok = true;
out:
    free(first);
    free(members);
    free(leaders);
    if (!ok) {
        hier_free(h);
        return;
    }
    cc->hier = h;
    cc->hier_state = HIER_ON;
}

bool bm_coll_hier_ready(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const char *fn)
{
    if (cc->hier_state == HIER_UNKNOWN) {
        if (!worth_it(comm))
            cc->hier_state = HIER_OFF;
        else
            hier_setup(comm, cc, fn);
    }
    return cc->hier_state == HIER_ON;
}

bool bm_coll_hier_keeps_order(const struct bm_mpi_coll_comm *cc)
{
    return cc->hier && cc->hier->contiguous;
}

void bm_coll_hier_release(struct bm_mpi_coll_comm *cc)
{
    hier_free(cc->hier);
    cc->hier = NULL;
    cc->hier_state = HIER_UNKNOWN;
}

/* ---- the phases ------------------------------------------------------------------- */

static int sub(MPI_Comm c, struct bm_mpi_coll_args a, const char *fn)
{
    return bm_mpi_coll_blocking(c, &a, fn);
}

static int barrier(const struct bm_coll_hier *h, const char *fn)
{
    struct bm_mpi_coll_args b = {.kind = BM_COLL_BARRIER};
    int rc;

    if ((rc = sub(h->node, b, fn)))
        return rc;
    if (h->leaders != MPI_COMM_NULL && (rc = sub(h->leaders, b, fn)))
        return rc;
    return sub(h->node, b, fn);
}

static int bcast(MPI_Comm comm, const struct bm_coll_hier *h, const struct bm_mpi_coll_args *a,
                 const char *fn)
{
    int root_host = h->host_of[a->root], mine = h->host_of[comm->rank], rc;
    struct bm_mpi_coll_args b = *a;

    if (mine == root_host) {
        b.root = h->node_rank[a->root];
        if ((rc = sub(h->node, b, fn)))
            return rc;
    }
    if (h->leaders != MPI_COMM_NULL) {
        b.root = root_host;
        if ((rc = sub(h->leaders, b, fn)))
            return rc;
    }
    if (mine != root_host) {
        b.root = 0;
        return sub(h->node, b, fn);
    }
    return MPI_SUCCESS;
}

/* Collective over comm (every rank asks at the same call): the
 * communicator of each host's second rank, when every host has one. */
static bool seconds_ready(MPI_Comm comm, struct bm_coll_hier *h, const char *fn)
{
    int *seconds;

    if (h->seconds_state != 0)
        return h->seconds_state == 1;
    h->seconds_state = 2;
    for (int k = 0; k < h->nhosts; k++)
        if (h->host_count[k] < 2)
            return false;
    if ((seconds = malloc(sizeof(int) * (size_t)h->nhosts)) == NULL)
        return false;
    for (int r = 0; r < comm->size; r++)
        if (h->node_rank[r] == 1)
            seconds[h->host_of[r]] = bm_mpi_comm_world_rank(comm, r);
    int me = comm->rank;
    if (bm_mpi_comm_create_from(comm, seconds, h->nhosts,
                                h->node_rank[me] == 1 ? h->host_of[me] : MPI_UNDEFINED, &h->seconds,
                                fn) == MPI_SUCCESS)
        h->seconds_state = 1;
    free(seconds);
    return h->seconds_state == 1;
}

/* A large commutative allreduce in halves: node ranks 0 and 1 of each
 * host each take one half through the three phases (a reduce to them in
 * their host, an allreduce with their counterparts on the other hosts: the
 * leaders and the seconds communicators, a bcast from them in their host).
 * The traffic between hosts runs on two ranks per host at once, in
 * messages half the size, and the combining in each host is shared. It
 * matters where hosts share cores (namespaces on one machine): with one
 * leader per host the kernel may put both leaders on one CPU (unbound
 * ranks), and the whole exchange between hosts then runs on that CPU
 * (2 hosts x 2 ranks on 2 cores, 1 MiB: 2.0-2.2 ms against 1.1-1.2 with
 * the leaders on different CPUs). */
static int allreduce_halves(MPI_Comm comm, const struct bm_coll_hier *h,
                            const struct bm_mpi_coll_args *a, const char *fn)
{
    const char *in = a->sbuf == MPI_IN_PLACE ? a->rbuf : a->sbuf;
    char *out = a->rbuf;
    int nr = h->node_rank[comm->rank], count[2], rc;
    MPI_Aint off[2];

    count[0] = a->rcount / 2;
    count[1] = a->rcount - count[0];
    off[0] = 0;
    off[1] = (MPI_Aint)count[0] * a->rtype->extent;
    bm_mpi_coll_count_alg(a->kind, BM_ALG_HIER_HALVES);
    for (int j = 0; j < 2; j++) {
        struct bm_mpi_coll_args r = *a;
        r.kind = BM_COLL_REDUCE;
        r.root = j;
        r.rcount = count[j];
        r.sbuf = nr == j && in == out ? MPI_IN_PLACE : in + off[j];
        r.rbuf = nr == j ? out + off[j] : NULL;
        if ((rc = sub(h->node, r, fn)))
            return rc;
    }
    if (nr < 2) {
        struct bm_mpi_coll_args l = *a;
        l.sbuf = MPI_IN_PLACE;
        l.rbuf = out + off[nr];
        l.rcount = count[nr];
        if ((rc = sub(nr == 0 ? h->leaders : h->seconds, l, fn)))
            return rc;
    }
    for (int j = 0; j < 2; j++) {
        struct bm_mpi_coll_args b = {.kind = BM_COLL_BCAST,
                                     .rbuf = out + off[j],
                                     .rcount = count[j],
                                     .rtype = a->rtype,
                                     .root = j};
        if ((rc = sub(h->node, b, fn)))
            return rc;
    }
    return MPI_SUCCESS;
}

/* Reduce or allreduce. A leader keeps its host's part in its receive
 * buffer when the result ends there (allreduce, or it is the root), else in
 * scratch in the type's layout. */
static int reduction(MPI_Comm comm, struct bm_coll_hier *h, const struct bm_mpi_coll_args *a,
                     const char *fn)
{
    bool leader = h->leaders != MPI_COMM_NULL, all = a->kind == BM_COLL_ALLREDUCE;
    int me = comm->rank, host = h->host_of[me], root_host = all ? -1 : h->host_of[a->root];
    bool at_root = !all && me == a->root;
    const void *in = a->sbuf == MPI_IN_PLACE ? a->rbuf : a->sbuf;
    size_t span = 0;
    MPI_Aint lo = 0;
    char *tmp = NULL;
    void *part = a->rbuf;
    int rc;
    size_t halves_min = bm_mpi_coll_cfg()->hier_halves_min;

    /* the same decision on every rank (the same call), and so the
     * collective set-up of the seconds communicator */
    if (all && a->op->commutative && halves_min > 0 && a->rcount >= 2 &&
        (size_t)a->rcount * a->rtype->size >= halves_min && seconds_ready(comm, h, fn))
        return allreduce_halves(comm, h, a, fn);
    if (leader && !all && !at_root) {
        bm_mpi_type_span(a->rtype, (size_t)a->rcount, &lo, &span);
        tmp = bm_mpi_scratch_get(span ? span : 1);
        if (tmp == NULL)
            return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes", span);
        part = tmp - lo;
    }
    /* 1: each host's ranks to its leader (rank 0 of the node communicator) */
    struct bm_mpi_coll_args r = *a;
    r.kind = BM_COLL_REDUCE;
    r.root = 0;
    r.sbuf = leader && in == part ? MPI_IN_PLACE : in;
    r.rbuf = leader ? part : NULL;
    if ((rc = sub(h->node, r, fn)))
        goto out;
    /* 2: among the leaders */
    if (leader) {
        struct bm_mpi_coll_args l = *a;
        l.sbuf = MPI_IN_PLACE;
        l.rbuf = part;
        if (!all) {
            l.kind = BM_COLL_REDUCE;
            l.root = root_host;
            if (host != root_host) {
                l.sbuf = part;
                l.rbuf = NULL;
            }
        }
        if ((rc = sub(h->leaders, l, fn)))
            goto out;
    }
    /* 3: allreduce: the result to every rank of the host; reduce: from the
     * root's leader to the root when they differ (point-to-point on the
     * node communicator, which nothing else uses for point-to-point) */
    if (all) {
        struct bm_mpi_coll_args b = {.kind = BM_COLL_BCAST,
                                     .rbuf = a->rbuf,
                                     .rcount = a->rcount,
                                     .rtype = a->rtype,
                                     .root = 0};
        rc = sub(h->node, b, fn);
    } else if (host == root_host && h->node_rank[a->root] != 0) {
        if (leader)
            rc = PMPI_Send(part, a->rcount, a->rtype, h->node_rank[a->root], 0, h->node);
        else if (at_root)
            rc = PMPI_Recv(a->rbuf, a->rcount, a->rtype, 0, 0, h->node, MPI_STATUS_IGNORE);
    }
out:
    if (tmp)
        bm_mpi_scratch_put(tmp, span ? span : 1);
    return rc;
}

/* Allgather where every host holds a contiguous range of ranks: host
 * order is rank order, so the blocks go straight to their place in each
 * rank's receive buffer, in its type: an allgather in each host (every rank
 * has its host's blocks), an allgatherv among the leaders (each leader has
 * them all), a bcast of the other hosts' blocks (the ranks before and
 * after this host's) in each host. No packing, staging or unpacking, and
 * the last phase moves only what the host lacks: 2 hosts x 2 ranks, 1 MiB
 * blocks, that is 2 MiB copied per rank instead of 4 MiB gathered, 4
 * unpacked and 4 broadcast. */
static int allgather_placed(MPI_Comm comm, const struct bm_coll_hier *h,
                            const struct bm_mpi_coll_args *a, const char *fn)
{
    int host = h->host_of[comm->rank], first = h->host_start[host], nh = h->nhosts, rc;
    int after = first + h->host_count[host], n = comm->size;
    MPI_Aint bext = (MPI_Aint)a->rcount * a->rtype->extent;
    char *rbuf = a->rbuf;
    struct bm_mpi_coll_args g = *a;

    g.rbuf = rbuf + (MPI_Aint)first * bext;
    if ((rc = sub(h->node, g, fn)))
        return rc;
    if (h->leaders != MPI_COMM_NULL) {
        int *counts = malloc(sizeof(int) * 2 * (size_t)nh);
        if (counts == NULL)
            return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes",
                                sizeof(int) * 2 * (size_t)nh);
        for (int k = 0; k < nh; k++) {
            counts[k] = h->host_count[k] * a->rcount;
            counts[nh + k] = h->host_start[k] * a->rcount;
        }
        struct bm_mpi_coll_args l = {.kind = BM_COLL_ALLGATHERV,
                                     .sbuf = MPI_IN_PLACE,
                                     .rbuf = rbuf,
                                     .rcounts = counts,
                                     .rdispls = counts + nh,
                                     .rtype = a->rtype};
        rc = sub(h->leaders, l, fn);
        free(counts);
        if (rc)
            return rc;
    }
    struct bm_mpi_coll_args b = {.kind = BM_COLL_BCAST, .rtype = a->rtype, .root = 0};
    if (first > 0) {
        b.rbuf = rbuf;
        b.rcount = first * a->rcount;
        if ((rc = sub(h->node, b, fn)))
            return rc;
    }
    if (after < n) {
        b.rbuf = rbuf + (MPI_Aint)after * bext;
        b.rcount = (n - after) * a->rcount;
        rc = sub(h->node, b, fn);
    }
    return rc;
}

/* Gather or allgather (uniform blocks, any types: blocks travel packed). */
static int gathering(MPI_Comm comm, const struct bm_coll_hier *h, const struct bm_mpi_coll_args *a,
                     const char *fn)
{
    bool all = a->kind == BM_COLL_ALLGATHER, leader = h->leaders != MPI_COMM_NULL;
    int me = comm->rank, n = comm->size, host = h->host_of[me], rc = MPI_SUCCESS;
    int root_host = all ? -1 : h->host_of[a->root], nh = h->nhosts;
    bool at_root = !all && me == a->root, unpacks = all ? leader : at_root;
    /* packed bytes of one block, the same everywhere (MPI requires it) */
    size_t blk = a->stype ? bm_mpi_type_packed_bytes(a->stype, (size_t)a->scount)
                          : bm_mpi_type_packed_bytes(a->rtype, (size_t)a->rcount);
    size_t tbytes = (size_t)n * blk + blk, tsize = tbytes ? tbytes : 1;
    int *counts = NULL, *displs = NULL;
    char *tmp;

    if (blk == 0)
        return MPI_SUCCESS; /* nothing moves: every rank returns alike */
    if (all && h->contiguous)
        return allgather_placed(comm, h, a, fn);
    /* [n blocks in host order][this rank's packed block] */
    tmp = bm_mpi_scratch_get(tsize);
    counts = malloc(sizeof(int) * 2 * (size_t)nh);
    if (tmp == NULL || counts == NULL) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %zu bytes", tbytes);
        goto out;
    }
    displs = counts + nh;
    char *full = tmp, *mine = tmp + (size_t)n * blk;
    MPI_Aint bext = (MPI_Aint)a->rcount * (a->rtype ? a->rtype->extent : 0);
    if (a->sbuf == MPI_IN_PLACE)
        bm_mpi_type_pack(a->rtype, (const char *)a->rbuf + (MPI_Aint)me * bext, (size_t)a->rcount,
                         0, mine, blk);
    else
        bm_mpi_type_pack(a->stype, a->sbuf, (size_t)a->scount, 0, mine, blk);
    /* 1: the host's blocks on its leader, at their place in host order */
    struct bm_mpi_coll_args g = {
        .kind = BM_COLL_GATHER, .sbuf = mine, .scount = (int)blk, .stype = MPI_BYTE, .root = 0};
    if (leader) {
        g.rbuf = full + (size_t)h->host_start[host] * blk;
        g.rcount = (int)blk;
        g.rtype = MPI_BYTE;
    }
    if ((rc = sub(h->node, g, fn)))
        goto out;
    /* 2: among the leaders, in host order */
    if (leader) {
        for (int k = 0; k < nh; k++) {
            counts[k] = h->host_count[k] * (int)blk;
            displs[k] = h->host_start[k] * (int)blk;
        }
        struct bm_mpi_coll_args l = {.kind = all ? BM_COLL_ALLGATHERV : BM_COLL_GATHERV,
                                     .sbuf = MPI_IN_PLACE,
                                     .rbuf = full,
                                     .rcounts = counts,
                                     .rdispls = displs,
                                     .rtype = MPI_BYTE,
                                     .root = root_host};
        if (!all && host != root_host) {
            l = (struct bm_mpi_coll_args){.kind = BM_COLL_GATHERV,
                                          .sbuf = full + (size_t)h->host_start[host] * blk,
                                          .scount = counts[host],
                                          .stype = MPI_BYTE,
                                          .root = root_host};
        }
        if ((rc = sub(h->leaders, l, fn)))
            goto out;
    }
    /* gather: the root's leader hands the blocks to the root when they
     * differ (point-to-point on the node communicator, as reduce does) */
    if (!all && host == root_host && h->node_rank[a->root] != 0) {
        if (leader)
            rc = PMPI_Send(full, n * (int)blk, MPI_BYTE, h->node_rank[a->root], 0, h->node);
        else if (at_root)
            rc = PMPI_Recv(full, n * (int)blk, MPI_BYTE, 0, 0, h->node, MPI_STATUS_IGNORE);
        if (rc)
            goto out;
    }
    /* 3: host order to rank order */
    if (unpacks)
        for (int r = 0; r < n; r++)
            bm_mpi_type_unpack(
                a->rtype, (char *)a->rbuf + (MPI_Aint)r * bext, (size_t)a->rcount, 0,
                full + (size_t)(h->host_start[h->host_of[r]] + h->node_rank[r]) * blk, blk);
    if (all) {
        struct bm_mpi_coll_args b = {.kind = BM_COLL_BCAST,
                                     .rbuf = a->rbuf,
                                     .rcount = n * a->rcount,
                                     .rtype = a->rtype,
                                     .root = 0};
        rc = sub(h->node, b, fn);
    }
out:
    free(counts);
    if (tmp)
        bm_mpi_scratch_put(tmp, tsize);
    return rc;
}

int bm_coll_hier_run(MPI_Comm comm, struct bm_mpi_coll_comm *cc, const struct bm_mpi_coll_args *a,
                     int alg, const char *fn)
{
    bm_mpi_coll_count_alg(a->kind, alg);
    switch (a->kind) {
    case BM_COLL_BARRIER:
        return barrier(cc->hier, fn);
    case BM_COLL_BCAST:
        return bcast(comm, cc->hier, a, fn);
    case BM_COLL_GATHER:
    case BM_COLL_ALLGATHER:
        return gathering(comm, cc->hier, a, fn);
    default:
        return reduction(comm, cc->hier, a, fn);
    }
}
