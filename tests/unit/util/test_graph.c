/* Tests of the matching solver (src/util/graph.h): against brute force on
 * thousands of random small matrices (with missing edges and many ties, in
 * both orientations), determinism, the "more edges among equal weight"
 * rule, index-order tie breaking, degenerate sizes and bad input. */
#include "util/graph.h"

#include "bm_test.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define NE   BM_UTIL_GRAPH_NO_EDGE
#define MAXD 6

struct best {
    int64_t weight;
    int edges;
};

/* Exhaustive search: each row from r on takes a free column or none. */
static void brute(const int64_t *w, int n, int m, int r, unsigned used, int64_t sum, int edges,
                  struct best *b)
{
    if (r == n) {
        if (sum > b->weight || (sum == b->weight && edges > b->edges)) {
            b->weight = sum;
            b->edges = edges;
        }
        return;
    }
    brute(w, n, m, r + 1, used, sum, edges, b);
    for (int j = 0; j < m; j++)
        if (!(used & (1u << j)) && w[r * m + j] != NE)
            brute(w, n, m, r + 1, used | (1u << j), sum + w[r * m + j], edges + 1, b);
}

/* Valid matching: columns distinct, only real edges; returns weight and edges. */
static bool check_matching(const int64_t *w, int n, int m, const int *match, struct best *got)
{
    unsigned used = 0;
    got->weight = 0;
    got->edges = 0;
    for (int i = 0; i < n; i++) {
        int j = match[i];
        if (j == -1)
            continue;
        if (j < 0 || j >= m || (used & (1u << j)) || w[i * m + j] == NE)
            return false;
        used |= 1u << j;
        got->weight += w[i * m + j];
        got->edges++;
    }
    return true;
}

static unsigned seed = 2024;
static unsigned rnd(unsigned mod)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % mod;
}

static void test_against_brute_force(void)
{
    int64_t w[MAXD * MAXD];
    int match[MAXD], bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        int n = 1 + (int)rnd(MAXD), m = 1 + (int)rnd(MAXD);
        unsigned range = iter % 3 == 0 ? 3 : 1000; /* small ranges: many ties */
        unsigned holes = rnd(4);                   /* 0..3 quarters missing */
        for (int k = 0; k < n * m; k++)
            w[k] = rnd(4) < holes ? NE : (int64_t)rnd(range);
        struct best want = {0, 0}, got = {0, 0};
        brute(w, n, m, 0, 0, 0, 0, &want);
        int64_t total = -1;
        if (bm_util_graph_match((size_t)n, (size_t)m, w, match, &total) != BM_OK ||
            !check_matching(w, n, m, match, &got) || got.weight != want.weight ||
            got.edges != want.edges || total != want.weight) {
            if (!bad)
                bm_test_fail(__FILE__, __LINE__, "iter %d (%dx%d): got %lld/%d want %lld/%d", iter,
                             n, m, (long long)got.weight, got.edges, (long long)want.weight,
                             want.edges);
            bad++;
        }
    }
    BM_CHECK_EQ_INT(bad, 0);
}

static void test_deterministic(void)
{
    int64_t w[MAXD * MAXD];
    int a[MAXD], b[MAXD], diff = 0;
    for (int iter = 0; iter < 200; iter++) {
        for (int k = 0; k < MAXD * MAXD; k++)
            w[k] = rnd(3) == 0 ? NE : (int64_t)rnd(2);
        bm_util_graph_match(MAXD, MAXD - 1, w, a, NULL);
        bm_util_graph_match(MAXD, MAXD - 1, w, b, NULL);
        diff += memcmp(a, b, sizeof(a)) != 0;
    }
    BM_CHECK_EQ_INT(diff, 0);
}

static void test_ties_by_index(void)
{
    int64_t w[9] = {5, 5, 5, 5, 5, 5, 5, 5, 5};
    int match[3];
    BM_CHECK_EQ_INT(bm_util_graph_match(3, 3, w, match, NULL), BM_OK);
    BM_CHECK(match[0] == 0 && match[1] == 1 && match[2] == 2);
    /* One row, two equal columns: the lower index wins. */
    int64_t one[2] = {7, 7};
    BM_CHECK_EQ_INT(bm_util_graph_match(1, 2, one, match, NULL), BM_OK);
    BM_CHECK_EQ_INT(match[0], 0);
    /* Transposed: two rows compete for one column; row 0 gets it. */
    BM_CHECK_EQ_INT(bm_util_graph_match(2, 1, one, match, NULL), BM_OK);
    BM_CHECK(match[0] == 0 && match[1] == -1);
}

static void test_more_edges_and_zero_weight(void)
{
    /* Greedy would take 10 on (0,0) and leave row 1 unmatched: 10 + 0 edges
     * vs. 9 + 1 = 10 with two edges; equal weight, so two edges win. */
    int64_t w[4] = {10, 9, 1, NE};
    int match[2];
    int64_t total;
    BM_CHECK_EQ_INT(bm_util_graph_match(2, 2, w, match, &total), BM_OK);
    BM_CHECK_EQ_INT(total, 10);
    BM_CHECK(match[0] == 1 && match[1] == 0);
    /* Zero-weight edges are still used. */
    int64_t z[4] = {0, NE, NE, 0};
    BM_CHECK_EQ_INT(bm_util_graph_match(2, 2, z, match, &total), BM_OK);
    BM_CHECK(match[0] == 0 && match[1] == 1 && total == 0);
    /* No edges at all. */
    int64_t none[4] = {NE, NE, NE, NE};
    BM_CHECK_EQ_INT(bm_util_graph_match(2, 2, none, match, &total), BM_OK);
    BM_CHECK(match[0] == -1 && match[1] == -1 && total == 0);
}

static void test_sizes_and_errors(void)
{
    int match[2] = {5, 5};
    int64_t total = 5;
    BM_CHECK_EQ_INT(bm_util_graph_match(2, 0, NULL, match, &total), BM_OK);
    BM_CHECK(match[0] == -1 && match[1] == -1 && total == 0);
    BM_CHECK_EQ_INT(bm_util_graph_match(0, 3, NULL, match, &total), BM_OK);
    int64_t neg[1] = {-1}, big[1] = {(int64_t)BM_UTIL_GRAPH_MAX_WEIGHT + 1};
    match[0] = 42;
    BM_CHECK_EQ_INT(bm_util_graph_match(1, 1, neg, match, NULL), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_util_graph_match(1, 1, big, match, NULL), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(match[0], 42); /* untouched on error */
    BM_CHECK_EQ_INT(bm_util_graph_match(BM_UTIL_GRAPH_MAX_DIM + 1, 1, NULL, match, NULL),
                    BM_ERR_BAD_PARAM);
    /* Largest weights do not overflow: 64 x 64 of the maximum. */
    static int64_t maxw[64 * 64];
    int m64[64];
    for (int k = 0; k < 64 * 64; k++)
        maxw[k] = BM_UTIL_GRAPH_MAX_WEIGHT;
    BM_CHECK_EQ_INT(bm_util_graph_match(64, 64, maxw, m64, &total), BM_OK);
    BM_CHECK_EQ_INT(total, 64LL * BM_UTIL_GRAPH_MAX_WEIGHT);
}

int main(void)
{
    BM_RUN(test_against_brute_force);
    BM_RUN(test_deterministic);
    BM_RUN(test_ties_by_index);
    BM_RUN(test_more_edges_and_zero_weight);
    BM_RUN(test_sizes_and_errors);
    return bm_test_summary("test_util_graph");
}
