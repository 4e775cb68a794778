/* A profiling tool in the shape the MPI standard's profiling interface
 * (MPI-3.1 chapter 14) is made for, loaded with LD_PRELOAD by the api_pmpi
 * test: it defines MPI_X for a handful of functions, counts the calls and
 * forwards each to PMPI_X. The program reads the counts back through
 * pmpi_tool_count (found with dlsym), so that the test fails when the
 * tool's definitions are not the ones called. */
#include <mpi.h>
#include <string.h>

#define TOOL_FUNCS(X)                                                                              \
    X(Send)                                                                                        \
    X(Recv) X(Isend) X(Irecv) X(Wait) X(Barrier) X(Bcast) X(Allreduce) X(Comm_dup) X(Sendrecv)     \
        X(Pcontrol) X(Comm_free)

enum {
#define X(name) TOOL_##name,
    TOOL_FUNCS(X)
#undef X
        TOOL_N
};

static const char *tool_names[] = {
#define X(name) #name,
    TOOL_FUNCS(X)
#undef X
};
static int tool_counts[TOOL_N];

__attribute__((visibility("default"))) int pmpi_tool_count(const char *name);
int pmpi_tool_count(const char *name)
{
    for (int i = 0; i < TOOL_N; i++)
        if (strcmp(tool_names[i], name) == 0)
            return tool_counts[i];
    return -1;
}

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    tool_counts[TOOL_Send]++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    tool_counts[TOOL_Recv]++;
    return PMPI_Recv(buf, count, dt, source, tag, comm, status);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    tool_counts[TOOL_Isend]++;
    return PMPI_Isend(buf, count, dt, dest, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    tool_counts[TOOL_Irecv]++;
    return PMPI_Irecv(buf, count, dt, source, tag, comm, request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    tool_counts[TOOL_Wait]++;
    return PMPI_Wait(request, status);
}

int MPI_Barrier(MPI_Comm comm)
{
    tool_counts[TOOL_Barrier]++;
    return PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    tool_counts[TOOL_Bcast]++;
    return PMPI_Bcast(buf, count, dt, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm)
{
    tool_counts[TOOL_Allreduce]++;
    return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    tool_counts[TOOL_Comm_dup]++;
    return PMPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_free(MPI_Comm *comm)
{
    tool_counts[TOOL_Comm_free]++;
    return PMPI_Comm_free(comm);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    tool_counts[TOOL_Sendrecv]++;
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                         status);
}

int MPI_Pcontrol(const int level, ...)
{
    tool_counts[TOOL_Pcontrol]++;
    return PMPI_Pcontrol(level);
}
