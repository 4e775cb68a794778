/* Datatypes: the size and extent of every predefined type against the C
 * types they stand for, the value-index pairs (size without padding, extent
 * with it, true extent), MPI_Get_count/MPI_Get_elements on real receives
 * (whole elements, partial elements, pairs), MPI_Type_contiguous in
 * point-to-point and collectives (including reductions, which run on the
 * basic elements), the commit rule, MPI_Type_dup/free/names,
 * MPI_Reduce_local, the MPI-1 names MPI_Address and MPI_Type_hindexed, and
 * the MPI_Count extents (MPI_Type_get_extent_x, _get_true_extent_x). */
#include "bm_test.h"

#include <complex.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

static int rank, size;

#define CHECK_TYPE(dt, ctype)                                                                      \
    do {                                                                                           \
        int s_;                                                                                    \
        MPI_Aint lb_, ext_;                                                                        \
        BM_CHECK_EQ_INT(MPI_Type_size(dt, &s_), MPI_SUCCESS);                                      \
        BM_CHECK_MSG(s_ == (int)sizeof(ctype), "%s: size %d, want %zu", #dt, s_, sizeof(ctype));   \
        BM_CHECK_EQ_INT(MPI_Type_get_extent(dt, &lb_, &ext_), MPI_SUCCESS);                        \
        BM_CHECK_MSG(lb_ == 0 && ext_ == (MPI_Aint)sizeof(ctype), "%s: lb %ld extent %ld", #dt,    \
                     (long)lb_, (long)ext_);                                                       \
    } while (0)

static void test_predefined(void)
{
    int s;
    MPI_Aint lb, ext;
    MPI_Count sx;
    char name[MPI_MAX_OBJECT_NAME];

    CHECK_TYPE(MPI_CHAR, char);
    CHECK_TYPE(MPI_SIGNED_CHAR, signed char);
    CHECK_TYPE(MPI_UNSIGNED_CHAR, unsigned char);
    CHECK_TYPE(MPI_BYTE, unsigned char);
    CHECK_TYPE(MPI_WCHAR, wchar_t);
    CHECK_TYPE(MPI_SHORT, short);
    CHECK_TYPE(MPI_UNSIGNED_SHORT, unsigned short);
    CHECK_TYPE(MPI_INT, int);
    CHECK_TYPE(MPI_UNSIGNED, unsigned);
    CHECK_TYPE(MPI_LONG, long);
    CHECK_TYPE(MPI_UNSIGNED_LONG, unsigned long);
    CHECK_TYPE(MPI_LONG_LONG_INT, long long);
    CHECK_TYPE(MPI_LONG_LONG, long long);
    CHECK_TYPE(MPI_UNSIGNED_LONG_LONG, unsigned long long);
    CHECK_TYPE(MPI_FLOAT, float);
    CHECK_TYPE(MPI_DOUBLE, double);
    CHECK_TYPE(MPI_LONG_DOUBLE, long double);
    CHECK_TYPE(MPI_C_BOOL, _Bool);
    CHECK_TYPE(MPI_INT8_T, int8_t);
    CHECK_TYPE(MPI_INT16_T, int16_t);
    CHECK_TYPE(MPI_INT32_T, int32_t);
    CHECK_TYPE(MPI_INT64_T, int64_t);
    CHECK_TYPE(MPI_UINT8_T, uint8_t);
    CHECK_TYPE(MPI_UINT16_T, uint16_t);
    CHECK_TYPE(MPI_UINT32_T, uint32_t);
    CHECK_TYPE(MPI_UINT64_T, uint64_t);
    CHECK_TYPE(MPI_AINT, MPI_Aint);
    CHECK_TYPE(MPI_OFFSET, MPI_Offset);
    CHECK_TYPE(MPI_COUNT, MPI_Count);
    CHECK_TYPE(MPI_C_FLOAT_COMPLEX, float _Complex);
    CHECK_TYPE(MPI_C_DOUBLE_COMPLEX, double _Complex);
    CHECK_TYPE(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex);
    CHECK_TYPE(MPI_2INT, int[2]);

    /* Pairs: MPI counts the data without padding. */
    BM_CHECK_EQ_INT(MPI_Type_size(MPI_DOUBLE_INT, &s), MPI_SUCCESS);
    BM_CHECK_EQ_INT(s, sizeof(double) + sizeof(int));
    BM_CHECK_EQ_INT(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext), MPI_SUCCESS);
    BM_CHECK_EQ_INT(ext, sizeof(struct {
                        double d;
                        int i;
                    }));
    BM_CHECK_EQ_INT(MPI_Type_get_true_extent(MPI_DOUBLE_INT, &lb, &ext), MPI_SUCCESS);
    BM_CHECK_EQ_INT(ext, sizeof(double) + sizeof(int));
    BM_CHECK_EQ_INT(MPI_Type_size(MPI_SHORT_INT, &s), MPI_SUCCESS);
    BM_CHECK_EQ_INT(s, sizeof(short) + sizeof(int));
    BM_CHECK_EQ_INT(MPI_Type_get_extent(MPI_SHORT_INT, &lb, &ext), MPI_SUCCESS);
    BM_CHECK_EQ_INT(ext, sizeof(struct {
                        short s;
                        int i;
                    }));
    BM_CHECK_EQ_INT(MPI_Type_size_x(MPI_LONG_DOUBLE_INT, &sx), MPI_SUCCESS);
    BM_CHECK_EQ_INT(sx, sizeof(long double) + sizeof(int));

    BM_CHECK_EQ_INT(MPI_Type_get_name(MPI_UNSIGNED_LONG, name, &s), MPI_SUCCESS);
    BM_CHECK_STR(name, "MPI_UNSIGNED_LONG");
    BM_CHECK_EQ_INT(s, (int)strlen("MPI_UNSIGNED_LONG"));
    /* one handle, two names in the standard: MPICH's name */
    BM_CHECK_EQ_INT(MPI_Type_get_name(MPI_C_FLOAT_COMPLEX, name, &s), MPI_SUCCESS);
    BM_CHECK_STR(name, "MPI_C_COMPLEX");
    BM_CHECK_EQ_INT(MPI_Type_free(&(MPI_Datatype){MPI_INT}), MPI_ERR_TYPE);
    /* predefined types may be renamed (Open MPI and MPICH allow it) */
    BM_CHECK_EQ_INT(MPI_Type_set_name(MPI_SHORT, "x"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_get_name(MPI_SHORT, name, &s), MPI_SUCCESS);
    BM_CHECK_STR(name, "x");
    MPI_Type_set_name(MPI_SHORT, "MPI_SHORT");
}

static void test_counts(void)
{
    struct {
        double v;
        int i;
    } pairs[3] = {{1.5, 1}, {2.5, 2}, {3.5, 3}}, rpairs[4];
    int ints[5] = {1, 2, 3, 4, 5}, rints[6], n;
    MPI_Datatype two;
    MPI_Status st;

    if (size < 2)
        return;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    if (rank == 0) {
        MPI_Send(pairs, 3, MPI_DOUBLE_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Send(ints, 5, MPI_INT, 1, 2, MPI_COMM_WORLD);
        MPI_Send(ints, 4, MPI_INT, 1, 3, MPI_COMM_WORLD);
    } else if (rank == 1) {
        BM_CHECK_EQ_INT(MPI_Recv(rpairs, 4, MPI_DOUBLE_INT, 0, 1, MPI_COMM_WORLD, &st),
                        MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Get_count(&st, MPI_DOUBLE_INT, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, 3);
        BM_CHECK_EQ_INT(MPI_Get_elements(&st, MPI_DOUBLE_INT, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, 6);
        BM_CHECK(rpairs[2].v == 3.5 && rpairs[2].i == 3);

        /* 5 ints received as pairs of ints: 2 whole elements and a half. */
        BM_CHECK_EQ_INT(MPI_Recv(rints, 3, two, 0, 2, MPI_COMM_WORLD, &st), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Get_count(&st, two, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, MPI_UNDEFINED);
        BM_CHECK_EQ_INT(MPI_Get_elements(&st, two, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, 5);
        BM_CHECK_EQ_INT(rints[4], 5);

        BM_CHECK_EQ_INT(MPI_Recv(rints, 3, two, 0, 3, MPI_COMM_WORLD, &st), MPI_SUCCESS);
        BM_CHECK_EQ_INT(MPI_Get_count(&st, two, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, 2);
        BM_CHECK_EQ_INT(MPI_Get_elements(&st, two, &n), MPI_SUCCESS);
        BM_CHECK_EQ_INT(n, 4);
    }
    MPI_Type_free(&two);
}

static void test_contiguous(void)
{
    MPI_Datatype vec3, dup, raw;
    double v[6], out[6];
    int s;
    MPI_Aint lb, ext;
    char name[MPI_MAX_OBJECT_NAME];

    BM_CHECK_EQ_INT(MPI_Type_contiguous(3, MPI_DOUBLE, &vec3), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_size(vec3, &s), MPI_SUCCESS);
    BM_CHECK_EQ_INT(s, 3 * sizeof(double));
    BM_CHECK_EQ_INT(MPI_Type_get_extent(vec3, &lb, &ext), MPI_SUCCESS);
    BM_CHECK_EQ_INT(ext, 3 * sizeof(double));
    /* Not committed yet: unusable for communication. */
    BM_CHECK_EQ_INT(MPI_Bcast(v, 2, vec3, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(MPI_Type_commit(&vec3), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_set_name(vec3, "vec3"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_get_name(vec3, name, &s), MPI_SUCCESS);
    BM_CHECK_STR(name, "vec3");

    for (int i = 0; i < 6; i++)
        v[i] = rank == 0 ? i * 1.25 : -1;
    BM_CHECK_EQ_INT(MPI_Bcast(v, 2, vec3, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < 6; i++)
        BM_CHECK(v[i] == i * 1.25);

    /* Reductions on a derived type run on its doubles. */
    for (int i = 0; i < 6; i++)
        v[i] = rank + i;
    BM_CHECK_EQ_INT(MPI_Allreduce(v, out, 2, vec3, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < 6; i++)
        BM_CHECK(out[i] == (double)size * i + size * (size - 1) / 2.0);
    BM_CHECK_EQ_INT(MPI_Allreduce(v, out, 2, vec3, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);

    BM_CHECK_EQ_INT(MPI_Type_dup(vec3, &dup), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_get_name(dup, name, &s), MPI_SUCCESS);
    BM_CHECK_STR(name, "vec3");
    /* The original may go first; the copy still works. */
    BM_CHECK_EQ_INT(MPI_Type_free(&vec3), MPI_SUCCESS);
    BM_CHECK(vec3 == MPI_DATATYPE_NULL);
    BM_CHECK_EQ_INT(MPI_Allreduce(MPI_IN_PLACE, v, 2, dup, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK(v[5] == size - 1 + 5);
    BM_CHECK_EQ_INT(MPI_Type_free(&dup), MPI_SUCCESS);

    /* Zero elements, and a type built on a derived type. */
    BM_CHECK_EQ_INT(MPI_Type_contiguous(0, MPI_INT, &raw), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_size(raw, &s), MPI_SUCCESS);
    BM_CHECK_EQ_INT(s, 0);
    BM_CHECK_EQ_INT(MPI_Type_free(&raw), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_contiguous(-1, MPI_INT, &raw), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &raw), MPI_ERR_TYPE);
}

static void test_reduce_local(void)
{
    int a[3] = {1, 5, 3}, b[3] = {4, 2, 6};
    struct {
        float v;
        int i;
    } p = {2.0f, 7}, q = {2.0f, 3};

    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_MAX), MPI_SUCCESS);
    BM_CHECK(b[0] == 4 && b[1] == 5 && b[2] == 6);
    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_PROD), MPI_SUCCESS);
    BM_CHECK(b[0] == 4 && b[1] == 25 && b[2] == 18);
    BM_CHECK_EQ_INT(MPI_Reduce_local(&p, &q, 1, MPI_FLOAT_INT, MPI_MINLOC), MPI_SUCCESS);
    BM_CHECK(q.v == 2.0f && q.i == 3);
    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_MAXLOC), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Reduce_local(a, b, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT);
}

/* MPI-1 names and MPI_Count extents: two ints 12 bytes apart by address. */
static void test_mpi1_and_x(void)
{
    int v[4] = {0};
    MPI_Aint a0 = 0, a3 = 0, lb = -1, ext = -1;
    MPI_Count lbx = -1, extx = -1;
    BM_CHECK_EQ_INT(MPI_Address(&v[0], &a0), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Address(&v[3], &a3), MPI_SUCCESS);
    BM_CHECK_EQ_INT(a3 - a0, 3 * (MPI_Aint)sizeof(int));
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, a3 - a0};
    MPI_Datatype t;
    BM_CHECK_EQ_INT(MPI_Type_hindexed(2, bl, disp, MPI_INT, &t), MPI_SUCCESS);
    MPI_Type_commit(&t);
    BM_CHECK_EQ_INT(MPI_Type_get_extent(t, &lb, &ext), MPI_SUCCESS);
    BM_CHECK(lb == 0 && ext == 4 * (MPI_Aint)sizeof(int));
    BM_CHECK_EQ_INT(MPI_Type_get_extent_x(t, &lbx, &extx), MPI_SUCCESS);
    BM_CHECK(lbx == 0 && extx == 4 * (MPI_Count)sizeof(int));
    MPI_Datatype r;
    BM_CHECK_EQ_INT(MPI_Type_create_resized(t, -8, 64, &r), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_get_extent_x(r, &lbx, &extx), MPI_SUCCESS);
    BM_CHECK(lbx == -8 && extx == 64);
    BM_CHECK_EQ_INT(MPI_Type_get_true_extent_x(r, &lbx, &extx), MPI_SUCCESS);
    BM_CHECK(lbx == 0 && extx == 4 * (MPI_Count)sizeof(int));
    /* The type moves exactly its two ints. */
    int src[4] = {11, 12, 13, 14}, dst[4] = {0, 0, 0, 0};
    MPI_Sendrecv(src, 1, t, 0, 9, dst, 1, t, 0, 9, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    BM_CHECK(dst[0] == 11 && dst[1] == 0 && dst[2] == 0 && dst[3] == 14);
    MPI_Type_free(&r);
    MPI_Type_free(&t);
    BM_CHECK_EQ_INT(MPI_Type_hindexed(-1, bl, disp, MPI_INT, &t), MPI_ERR_COUNT);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_RUN(test_predefined);
    BM_RUN(test_counts);
    BM_RUN(test_contiguous);
    BM_RUN(test_reduce_local);
    BM_RUN(test_mpi1_and_x);
    MPI_Finalize();
    return bm_test_summary("api_datatype");
}
