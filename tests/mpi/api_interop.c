/* Handles as integers (MPI-3.1 section 17.2.4): MPI_X_c2f and MPI_X_f2c
 * round-trip every kind of handle (windows too; predefined, made by the program, the
 * null handle as 0), different handles get different integers and the same
 * handle the same one, an unknown integer gives the null handle, and a
 * communicator converted back still works; MPI_Status_c2f/f2c keep every
 * field. Also MPI_Cart_map and MPI_Graph_map (no reordering: a process
 * keeps its rank when the topology has room for it), and the
 * MPI_Type_create_f90_* types. */
#include "bm_test.h"

#include <mpi.h>

static int rank, size;

static void test_handles(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Fint fw = MPI_Comm_c2f(MPI_COMM_WORLD), fd = MPI_Comm_c2f(dup);
    BM_CHECK(fw != 0 && fd != 0 && fw != fd);
    BM_CHECK_EQ_INT(MPI_Comm_c2f(dup), fd);
    BM_CHECK(MPI_Comm_f2c(fw) == MPI_COMM_WORLD);
    BM_CHECK(MPI_Comm_f2c(fd) == dup);
    BM_CHECK_EQ_INT(MPI_Comm_c2f(MPI_COMM_NULL), 0);
    BM_CHECK(MPI_Comm_f2c(0) == MPI_COMM_NULL);
    BM_CHECK(MPI_Comm_f2c(123456) == MPI_COMM_NULL);
    int n = -1;
    MPI_Comm_size(MPI_Comm_f2c(fd), &n);
    BM_CHECK_EQ_INT(n, size);

    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    BM_CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);
    BM_CHECK(MPI_Type_f2c(MPI_Type_c2f(vec)) == vec);
    BM_CHECK(MPI_Type_c2f(vec) != MPI_Type_c2f(MPI_DOUBLE));
    MPI_Group g;
    MPI_Comm_group(dup, &g);
    BM_CHECK(MPI_Group_f2c(MPI_Group_c2f(g)) == g);
    BM_CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY);
    BM_CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM);
    BM_CHECK(MPI_Op_c2f(MPI_SUM) != MPI_Op_c2f(MPI_MAX));
    MPI_Info info;
    MPI_Info_create(&info);
    BM_CHECK(MPI_Info_f2c(MPI_Info_c2f(info)) == info);
    BM_CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL);
    BM_CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN);
    int v = 0;
    MPI_Request r;
    MPI_Irecv(&v, 1, MPI_INT, rank, 3, dup, &r);
    MPI_Fint fr = MPI_Request_c2f(r);
    BM_CHECK(MPI_Request_f2c(fr) == r);
    MPI_Send(&rank, 1, MPI_INT, rank, 3, dup);
    MPI_Request back = MPI_Request_f2c(fr);
    BM_CHECK_EQ_INT(MPI_Wait(&back, MPI_STATUS_IGNORE), MPI_SUCCESS);
    BM_CHECK_EQ_INT(v, rank);
    BM_CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC);
    BM_CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL);
    MPI_Win win;
    int mem = 0;
    MPI_Win_create(&mem, sizeof(mem), 1, MPI_INFO_NULL, dup, &win);
    MPI_Fint fwin = MPI_Win_c2f(win);
    BM_CHECK(fwin != 0 && MPI_Win_f2c(fwin) == win);
    int wsize = -1;
    MPI_Group wg;
    MPI_Win_get_group(MPI_Win_f2c(fwin), &wg); /* the converted handle works */
    MPI_Group_size(wg, &wsize);
    BM_CHECK_EQ_INT(wsize, size);
    MPI_Group_free(&wg);
    MPI_Win_free(&win);
    BM_CHECK_EQ_INT(MPI_Win_c2f(MPI_WIN_NULL), 0);
    BM_CHECK(MPI_Win_f2c(0) == MPI_WIN_NULL);

    MPI_Status st, back_st;
    MPI_Fint f[MPI_STATUS_SIZE];
    st.MPI_SOURCE = 3;
    st.MPI_TAG = 77;
    st.MPI_ERROR = MPI_ERR_TRUNCATE;
    MPI_Status_set_elements(&st, MPI_INT, 5);
    MPI_Status_set_cancelled(&st, 1);
    BM_CHECK_EQ_INT(MPI_Status_c2f(&st, f), MPI_SUCCESS);
    BM_CHECK_EQ_INT(f[0], 3); /* MPI_SOURCE, MPI_TAG, MPI_ERROR first */
    BM_CHECK_EQ_INT(f[1], 77);
    BM_CHECK_EQ_INT(f[2], MPI_ERR_TRUNCATE);
    BM_CHECK_EQ_INT(MPI_Status_f2c(f, &back_st), MPI_SUCCESS);
    int cnt = -1, flag = 0;
    MPI_Get_count(&back_st, MPI_INT, &cnt);
    MPI_Test_cancelled(&back_st, &flag);
    BM_CHECK(back_st.MPI_SOURCE == 3 && back_st.MPI_TAG == 77 && cnt == 5 && flag == 1);

    MPI_Info_free(&info);
    MPI_Group_free(&g);
    MPI_Type_free(&vec);
    MPI_Comm_free(&dup);
}

static void test_maps(void)
{
    int dims[2] = {1, size > 1 ? size - 1 : 1}, periods[2] = {0, 1}, nr = -2;
    BM_CHECK_EQ_INT(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nr, rank < dims[1] ? rank : MPI_UNDEFINED);
    int index[1] = {0}, edges[1] = {0};
    BM_CHECK_EQ_INT(MPI_Graph_map(MPI_COMM_WORLD, 1, index, edges, &nr), MPI_SUCCESS);
    BM_CHECK_EQ_INT(nr, rank == 0 ? 0 : MPI_UNDEFINED);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    dims[0] = size + 1;
    dims[1] = 1;
    BM_CHECK_EQ_INT(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr), MPI_ERR_DIMS);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* MPI_Type_create_f90_*: the matching Fortran kind, the same handle for
 * the same arguments, the F90 combiner and its contents, not freeable,
 * usable in a reduction as the kind it stands for. */
static void test_f90_types(void)
{
    MPI_Datatype i4, i4b, r8, c8, t;
    int ni, na, nt, comb, ints[2] = {-1, -1};
    BM_CHECK_EQ_INT(MPI_Type_create_f90_integer(4, &i4), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Type_create_f90_integer(4, &i4b), MPI_SUCCESS);
    BM_CHECK(i4 == i4b);
    int sz = -1;
    MPI_Type_size(i4, &sz);
    BM_CHECK_EQ_INT(sz, 2); /* selected_int_kind(4): INTEGER*2 */
    BM_CHECK_EQ_INT(MPI_Type_get_envelope(i4, &ni, &na, &nt, &comb), MPI_SUCCESS);
    BM_CHECK(comb == MPI_COMBINER_F90_INTEGER && ni == 1 && na == 0 && nt == 0);
    MPI_Type_get_contents(i4, 1, 0, 0, ints, NULL, NULL);
    BM_CHECK_EQ_INT(ints[0], 4);
    BM_CHECK_EQ_INT(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &r8), MPI_SUCCESS);
    MPI_Type_size(r8, &sz);
    BM_CHECK_EQ_INT(sz, 8);
    MPI_Type_get_envelope(r8, &ni, &na, &nt, &comb);
    BM_CHECK(comb == MPI_COMBINER_F90_REAL && ni == 2);
    MPI_Type_get_contents(r8, 2, 0, 0, ints, NULL, NULL);
    BM_CHECK(ints[0] == 10 && ints[1] == MPI_UNDEFINED);
    BM_CHECK_EQ_INT(MPI_Type_create_f90_complex(5, 30, &c8), MPI_SUCCESS);
    MPI_Type_size(c8, &sz);
    BM_CHECK_EQ_INT(sz, 8); /* COMPLEX*8 */
    MPI_Type_get_envelope(c8, &ni, &na, &nt, &comb);
    BM_CHECK_EQ_INT(comb, MPI_COMBINER_F90_COMPLEX);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    BM_CHECK_EQ_INT(MPI_Type_create_f90_real(30, 0, &t), MPI_ERR_ARG);
#ifdef MPI_INTEGER16
    /* 19-38 digits: INTEGER*16 where the compiler has a 16-byte integer */
    BM_CHECK_EQ_INT(MPI_Type_create_f90_integer(19, &t), MPI_SUCCESS);
    MPI_Type_size(t, &sz);
    BM_CHECK_EQ_INT(sz, 16);
    BM_CHECK_EQ_INT(MPI_Type_create_f90_integer(39, &t), MPI_ERR_ARG);
#else
    BM_CHECK_EQ_INT(MPI_Type_create_f90_integer(19, &t), MPI_ERR_ARG);
#endif
    t = r8;
    BM_CHECK_EQ_INT(MPI_Type_free(&t), MPI_ERR_TYPE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    double in[2] = {1.5, rank}, out[2] = {0, 0};
    BM_CHECK_EQ_INT(MPI_Allreduce(in, out, 2, r8, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    BM_CHECK(out[0] == 1.5 * size && out[1] == size * (size - 1) / 2.0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_RUN(test_handles);
    BM_RUN(test_maps);
    BM_RUN(test_f90_types);
    int rc = bm_test_summary("api_interop");
    MPI_Finalize();
    return rc;
}
