/* Handle conversion between C and Fortran integers (MPI-3.1 section
 * 17.2.4): MPI_Comm_c2f/f2c and the same for datatypes, groups, requests,
 * operations, info objects, error handlers, messages and windows, and
 * MPI_Status_c2f/f2c. bitmover has no Fortran bindings, but C libraries use
 * these to keep handles as integers (and to talk to Fortran code built
 * against them). C handles are pointers, so each kind keeps a table: a
 * handle gets the next integer the first time it is converted (0 is the
 * null handle), and f2c looks it up; integers are never reused, so a stale
 * integer names its freed object (as the stale C handle would), never
 * another one. Per kind, one hash from pointer to integer and one array
 * back; under MPI_THREAD_MULTIPLE the object lock guards them. */
#include "mpi/mpi_internal.h"
#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(MPI_Status) == MPI_STATUS_SIZE * sizeof(MPI_Fint),
               "MPI_STATUS_SIZE must count the MPI_Fint in an MPI_Status");

enum handle_kind {
    H_COMM,
    H_TYPE,
    H_GROUP,
    H_REQUEST,
    H_OP,
    H_INFO,
    H_ERRHANDLER,
    H_MESSAGE,
    H_WIN,
    H_KINDS,
};

struct handle_table {
    struct bm_util_hash index; /* pointer -> integer */
    void **ptr;                /* integer -> pointer; ptr[0] unused (null) */
    MPI_Fint n, cap;           /* integers given: 1 .. n - 1 */
};

static struct handle_table tables[H_KINDS];

static MPI_Fint to_fint(enum handle_kind k, void *h)
{
    if (!h)
        return 0;
    struct handle_table *t = &tables[k];
    MPI_Fint f = 0;
    bm_mpi_obj_lock();
    if (!t->ptr) {
        void **p = malloc(sizeof(*p) * 64);
        if (!p || bm_util_hash_init(&t->index, 16) != BM_OK) {
            free(p);
            goto out;
        }
        t->ptr = p;
        t->cap = 64;
        t->n = 1;
    }
    void *known = bm_util_hash_lookup(&t->index, (uint64_t)(uintptr_t)h);
    if (known) {
        f = (MPI_Fint)(intptr_t)known;
        goto out;
    }
    if (t->n == t->cap) {
        MPI_Fint cap = t->cap ? 2 * t->cap : 64;
        void **p = realloc(t->ptr, sizeof(*p) * (size_t)cap);
        if (!p)
            goto out;
        t->ptr = p;
        t->cap = cap;
    }
    if (bm_util_hash_insert(&t->index, (uint64_t)(uintptr_t)h, (void *)(intptr_t)t->n) != BM_OK)
        goto out;
    t->ptr[t->n] = h;
    f = t->n++;
out:
    bm_mpi_obj_unlock();
    /* Out of memory: 0, which converts back to the null handle. */
    return f;
}

static void *from_fint(enum handle_kind k, MPI_Fint f)
{
    struct handle_table *t = &tables[k];
    void *h = NULL;
    bm_mpi_obj_lock();
    if (f > 0 && f < t->n)
        h = t->ptr[f];
    bm_mpi_obj_unlock();
    return h;
}

void bm_mpi_handles_fini(void)
{
    for (int k = 0; k < H_KINDS; k++) {
        if (tables[k].ptr)
            bm_util_hash_fini(&tables[k].index);
        free(tables[k].ptr);
        memset(&tables[k], 0, sizeof(tables[k]));
    }
}

#define BM_MPI_HANDLE_CONV(Name, Type, kind)                                                       \
    MPI_Fint PMPI_##Name##_c2f(Type h)                                                             \
    {                                                                                              \
        return to_fint(kind, (void *)h);                                                           \
    }                                                                                              \
    BM_MPI_ALIAS(Name##_c2f);                                                                      \
    Type PMPI_##Name##_f2c(MPI_Fint f)                                                             \
    {                                                                                              \
        return (Type)from_fint(kind, f);                                                           \
    }                                                                                              \
    BM_MPI_ALIAS(Name##_f2c)

BM_MPI_HANDLE_CONV(Comm, MPI_Comm, H_COMM);
BM_MPI_HANDLE_CONV(Type, MPI_Datatype, H_TYPE);
BM_MPI_HANDLE_CONV(Group, MPI_Group, H_GROUP);
BM_MPI_HANDLE_CONV(Request, MPI_Request, H_REQUEST);
BM_MPI_HANDLE_CONV(Op, MPI_Op, H_OP);
BM_MPI_HANDLE_CONV(Info, MPI_Info, H_INFO);
BM_MPI_HANDLE_CONV(Errhandler, MPI_Errhandler, H_ERRHANDLER);
BM_MPI_HANDLE_CONV(Message, MPI_Message, H_MESSAGE);
BM_MPI_HANDLE_CONV(Win, MPI_Win, H_WIN);

/* A Fortran status is the C status's bytes as MPI_STATUS_SIZE integers,
 * MPI_SOURCE, MPI_TAG and MPI_ERROR first (the standard's indices 1-3). */
int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
    static const char fn[] = "MPI_Status_c2f";
    if (!c_status || !f_status)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "NULL %s (MPI_STATUS_IGNORE cannot be converted)",
                            c_status ? "Fortran status" : "C status");
    memcpy(f_status, c_status, sizeof(*c_status));
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Status_c2f);

int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
    static const char fn[] = "MPI_Status_f2c";
    if (!c_status || !f_status)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "NULL %s (MPI_F_STATUS_IGNORE cannot be "
                            "converted)",
                            c_status ? "Fortran status" : "C status");
    memcpy(c_status, f_status, sizeof(*c_status));
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Status_f2c);
