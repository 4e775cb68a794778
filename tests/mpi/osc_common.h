/* Helpers shared by the one-sided tests (osc_*.c): a window of any flavour
 * over the same user-visible buffer shape, chosen by the first program
 * argument ("create", "allocate", "shared", "dynamic"), so that every test
 * runs on every flavour; and checks that report the rank. For dynamic
 * windows the displacement of a byte is its address at the target, which
 * the ranks exchange (MPI_Get_address + MPI_Allgather). */
#ifndef BM_TEST_OSC_COMMON_H
#define BM_TEST_OSC_COMMON_H

#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct osc_win {
    MPI_Win win;
    int flavor;      /* MPI_WIN_FLAVOR_* */
    char *base;      /* this rank's window memory */
    MPI_Aint size;   /* bytes */
    MPI_Aint *disp0; /* per rank: the displacement of its byte 0 (dynamic: its address) */
    int disp_unit;
};

static inline int osc_flavor_of(const char *name)
{
    if (!name || strcmp(name, "create") == 0)
        return MPI_WIN_FLAVOR_CREATE;
    if (strcmp(name, "allocate") == 0)
        return MPI_WIN_FLAVOR_ALLOCATE;
    if (strcmp(name, "shared") == 0)
        return MPI_WIN_FLAVOR_SHARED;
    if (strcmp(name, "dynamic") == 0)
        return MPI_WIN_FLAVOR_DYNAMIC;
    fprintf(stderr, "unknown window flavour %s\n", name);
    exit(2);
}

/* A window of size bytes per rank with displacement unit 1 (or unit). */
static inline void osc_win_make(struct osc_win *w, int flavor, MPI_Aint size, int unit,
                                MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    memset(w, 0, sizeof(*w));
    w->flavor = flavor;
    w->size = size;
    w->disp_unit = unit;
    w->disp0 = calloc((size_t)n, sizeof(MPI_Aint));
    switch (flavor) {
    case MPI_WIN_FLAVOR_CREATE:
        w->base = malloc((size_t)size + 1);
        MPI_Win_create(w->base, size, unit, MPI_INFO_NULL, comm, &w->win);
        break;
    case MPI_WIN_FLAVOR_ALLOCATE:
        MPI_Win_allocate(size, unit, MPI_INFO_NULL, comm, &w->base, &w->win);
        break;
    case MPI_WIN_FLAVOR_SHARED:
        MPI_Win_allocate_shared(size, unit, MPI_INFO_NULL, comm, &w->base, &w->win);
        break;
    default: {
        MPI_Aint a;
        w->base = malloc((size_t)size + 1);
        MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->win);
        MPI_Win_attach(w->win, w->base, size);
        MPI_Get_address(w->base, &a);
        MPI_Allgather(&a, 1, MPI_AINT, w->disp0, 1, MPI_AINT, comm);
        /* displacements count in bytes on dynamic windows */
        w->disp_unit = 1;
        break;
    }
    }
    memset(w->base, 0, (size_t)size);
}

/* The displacement of byte off of rank r's window (a multiple of the
 * displacement unit). */
static inline MPI_Aint osc_disp(const struct osc_win *w, int r, MPI_Aint off)
{
    return w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? w->disp0[r] + off : off / w->disp_unit;
}

/* Run a test function taking the window, naming it in failure messages. */
#define BM_RUN_W(fn)                                                                               \
    do {                                                                                           \
        bm_test_current = #fn;                                                                     \
        fn(&w);                                                                                    \
    } while (0)

static inline void osc_win_free(struct osc_win *w)
{
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* nobody may still be accessing the region */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(w->win, w->base);
    }
    MPI_Win_free(&w->win);
    if (w->flavor == MPI_WIN_FLAVOR_CREATE || w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        free(w->base);
    free(w->disp0);
}

/* The start of every test program: MPI_Init, rank, size, and a window of
 * size bytes per rank of the flavour named by the first argument. */
static inline void osc_test_begin(int *argc, char ***argv, int *rank, int *nranks,
                                  struct osc_win *w, MPI_Aint size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    osc_win_make(w, osc_flavor_of(*argc > 1 ? (*argv)[1] : NULL), size, 1, MPI_COMM_WORLD);
}

/* The end: free the window, finalize, summary line and exit code. */
static inline int osc_test_end(struct osc_win *w, const char *name)
{
    osc_win_free(w);
    MPI_Finalize();
    return bm_test_summary(name);
}

#endif
