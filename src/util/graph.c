/* The Hungarian method (Kuhn-Munkres with potentials, shortest augmenting
 * paths; O(n^2 m)) on a min-cost assignment derived from the weights. Each
 * edge of weight w costs -(w * (k + 1) + 1) with k = min(nrows, ncols), and
 * a missing edge costs 0, so the cheapest assignment maximises the total
 * weight first and the number of edges second (at most k extra units can
 * never outweigh one unit of weight). Rows assigned along a missing edge
 * are left unmatched. With more rows than columns the matrix is solved
 * transposed, so the inner loop always runs over the longer side. */
#include "util/graph.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_INF (INT64_MAX / 4)

struct graph_ctx {
    const int64_t *w;
    size_t nrows, ncols; /* of the caller's matrix */
    bool transposed;     /* solving rows = caller's columns */
    size_t n, m;         /* solved sizes, n <= m */
    int64_t scale;       /* k + 1 */
    int64_t *u, *v, *minv;
    size_t *p, *way; /* p[j]: row (1-based) assigned to column j; 0 = none */
    bool *used;
};

/* Weight of (row i, column j) of the solved matrix, 0-based. */
static int64_t graph_weight(const struct graph_ctx *c, size_t i, size_t j)
{
    return c->transposed ? c->w[j * c->ncols + i] : c->w[i * c->ncols + j];
}

/* Cost of (i, j), 1-based as the algorithm indexes them. */
static int64_t graph_cost(const struct graph_ctx *c, size_t i, size_t j)
{
    int64_t w = graph_weight(c, i - 1, j - 1);
    return w == BM_UTIL_GRAPH_NO_EDGE ? 0 : -(w * c->scale + 1);
}

/* One Dijkstra-like step from the column j0: returns the next column. */
static size_t graph_step(struct graph_ctx *c, size_t j0)
{
    size_t i0 = c->p[j0], j1 = 0;
    int64_t delta = GRAPH_INF;
    c->used[j0] = true;
    for (size_t j = 1; j <= c->m; j++) {
        if (c->used[j])
            continue;
        int64_t cur = graph_cost(c, i0, j) - c->u[i0] - c->v[j];
        if (cur < c->minv[j]) {
            c->minv[j] = cur;
            c->way[j] = j0;
        }
        if (c->minv[j] < delta) {
            delta = c->minv[j];
            j1 = j;
        }
    }
    for (size_t j = 0; j <= c->m; j++) {
        if (c->used[j]) {
            c->u[c->p[j]] += delta;
            c->v[j] -= delta;
        } else {
            c->minv[j] -= delta;
        }
    }
    return j1;
}

/* Add row i to the assignment along a shortest augmenting path. */
static void graph_add_row(struct graph_ctx *c, size_t i)
{
    size_t j0 = 0;
    c->p[0] = i;
    for (size_t j = 0; j <= c->m; j++) {
        c->minv[j] = GRAPH_INF;
        c->used[j] = false;
    }
    do
        j0 = graph_step(c, j0);
    while (c->p[j0] != 0);
    do {
        size_t j1 = c->way[j0];
        c->p[j0] = c->p[j1];
        j0 = j1;
    } while (j0);
}

static bool graph_valid(size_t nrows, size_t ncols, const int64_t *weights)
{
    if (nrows > BM_UTIL_GRAPH_MAX_DIM || ncols > BM_UTIL_GRAPH_MAX_DIM)
        return false;
    for (size_t k = 0; k < nrows * ncols; k++)
        if (weights[k] != BM_UTIL_GRAPH_NO_EDGE &&
            (weights[k] < 0 || weights[k] > BM_UTIL_GRAPH_MAX_WEIGHT))
            return false;
    return true;
}

static bool graph_alloc(struct graph_ctx *c)
{
    size_t m1 = c->m + 1;
    c->u = calloc(c->n + 1, sizeof(int64_t));
    c->v = calloc(m1, sizeof(int64_t));
    c->minv = calloc(m1, sizeof(int64_t));
    c->p = calloc(m1, sizeof(size_t));
    c->way = calloc(m1, sizeof(size_t));
    c->used = calloc(m1, sizeof(bool));
    return c->u && c->v && c->minv && c->p && c->way && c->used;
}

static void graph_free(struct graph_ctx *c)
{
    free(c->u);
    free(c->v);
    free(c->minv);
    free(c->p);
    free(c->way);
    free(c->used);
}

/* Copy the assignment out in the caller's orientation, dropping non-edges. */
static int64_t graph_result(const struct graph_ctx *c, int *match_out)
{
    int64_t total = 0;
    for (size_t r = 0; r < c->nrows; r++)
        match_out[r] = -1;
    for (size_t j = 1; j <= c->m; j++) {
        if (c->p[j] == 0)
            continue;
        size_t i = c->p[j] - 1, col = j - 1;
        int64_t w = graph_weight(c, i, col);
        if (w == BM_UTIL_GRAPH_NO_EDGE)
            continue;
        total += w;
        if (c->transposed)
            match_out[col] = (int)i;
        else
            match_out[i] = (int)col;
    }
    return total;
}

bm_status_t bm_util_graph_match(size_t nrows, size_t ncols, const int64_t *weights, int *match_out,
                                int64_t *total_out)
{
    if (!graph_valid(nrows, ncols, weights))
        return BM_ERR_BAD_PARAM;
    struct graph_ctx c = {.w = weights, .nrows = nrows, .ncols = ncols};
    c.transposed = nrows > ncols;
    c.n = c.transposed ? ncols : nrows;
    c.m = c.transposed ? nrows : ncols;
    c.scale = (int64_t)c.n + 1;
    if (!graph_alloc(&c)) {
        graph_free(&c);
        return BM_ERR_NO_MEMORY;
    }
    for (size_t i = 1; i <= c.n; i++)
        graph_add_row(&c, i);
    int64_t total = graph_result(&c, match_out);
    if (total_out)
        *total_out = total;
    graph_free(&c);
    return BM_OK;
}
