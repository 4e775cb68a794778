// Compiled as C++ by the api_header test: mpi.h must be a clean C++ header
// (extern "C", no C-only constructs), and the program runs as a singleton.
#include <mpi.h>

#include <cstdio>

int main(int argc, char **argv)
{
    int rank = -1, size = 0, provided = -1;
    double in = 2.5, out = 0;

    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Wait(&req, &st);
    MPI_Finalize();
    bool ok = rank == 0 && size == 1 && out == 2.5 && provided == MPI_THREAD_FUNNELED;
    std::printf("%s\n", ok ? "c++ ok" : "c++ WRONG");
    return ok ? 0 : 1;
}
