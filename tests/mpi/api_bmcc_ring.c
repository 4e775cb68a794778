/* A textbook MPI program, compiled by the api_bmcc test with bmcc from
 * outside the build system: a token goes around the ring, then an allreduce
 * and a broadcast check that every rank took part. Plain MPI only. Every
 * rank checks what it saw (the token it received, the broadcast, the sum)
 * and the program exits 1 when anything is wrong, so a run in which the
 * ring did not go round fails by itself, whatever the caller looks for in
 * the output. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, token = 0, got = -1, sum = -1, len = 0, wrong = 0, any_wrong = 0;
    char name[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    if (len <= 0) {
        fprintf(stderr, "ring: rank %d: MPI_Get_processor_name gave an empty name\n", rank);
        wrong = 1;
    }
    if (size > 1) {
        /* Rank r receives r from its left neighbour (rank 0 gets size back
         * after the round) and passes r + 1 on. */
        if (rank == 0) {
            token = 1;
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&got, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token = got;
        } else {
            MPI_Recv(&got, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token = got + 1;
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
        int want = rank == 0 ? size : rank;
        if (got != want) {
            fprintf(stderr, "ring: rank %d received token %d, expected %d\n", rank, got, want);
            wrong = 1;
        }
    } else {
        token = 1;
    }
    int bcast = rank == 0 ? token : -1;
    MPI_Bcast(&bcast, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (bcast != size || sum != size * (size - 1) / 2) {
        fprintf(stderr,
                "ring: rank %d: broadcast token %d (expected %d), rank sum %d (expected %d)\n",
                rank, bcast, size, sum, size * (size - 1) / 2);
        wrong = 1;
    }
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ring: %d ranks, token %d %s\n", size, bcast, any_wrong ? "WRONG" : "ok");
    MPI_Finalize();
    return wrong ? 1 : 0;
}
