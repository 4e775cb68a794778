/* Compiled by the api_header test with -std=c99/-std=c11 -pedantic
 * -Werror: uses the handle types, the predefined handles and constants in
 * the ways C programs do (static initializers, comparisons, switch cases). */
#include <mpi.h>

int bm_header_check(MPI_Comm comm, MPI_Datatype dt, MPI_Op op, const MPI_Status *st);

int bm_header_check(MPI_Comm comm, MPI_Datatype dt, MPI_Op op, const MPI_Status *st)
{
    static const int classes[] = {MPI_SUCCESS, MPI_ERR_COMM, MPI_ERR_LASTCODE};
    int score = 0;

    if (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF || comm == MPI_COMM_NULL)
        score++;
    if (dt == MPI_DOUBLE_INT || dt == MPI_LONG_LONG || dt == MPI_DATATYPE_NULL)
        score++;
    if (op == MPI_MAXLOC || op == MPI_OP_NULL)
        score++;
    switch (st->MPI_TAG) {
    case MPI_ANY_TAG:
    case MPI_TAG_UB:
        score++;
        break;
    default:
        break;
    }
    return score + classes[st->MPI_ERROR % 3] + (st->MPI_SOURCE == MPI_ANY_SOURCE) +
           (MPI_VERSION == 3 && MPI_SUBVERSION == 1);
}
