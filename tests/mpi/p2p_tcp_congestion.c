/* tcp's congestion control choice (BM_BTL_TCP_CONGESTION, src/btl/tcp
 * README "Congestion control"): two ranks over self,tcp on loopback
 * exchange a rendezvous-sized message each way, then each rank reads
 * TCP_CONGESTION of every connected TCP socket it has whose both ends are
 * loopback addresses (its tcp link to the other rank; the launcher's
 * connection is on loopback too and keeps the kernel's default).
 *
 *   p2p_tcp_congestion auto     at least one such socket runs reno
 *   p2p_tcp_congestion default  none runs reno
 *
 * A second argument names the parameter in the messages (default
 * BM_BTL_TCP_CONGESTION; tests/fault/ofi.cmake runs the program over
 * self,ofi on the loopback domain with BM_BTL_OFI_CONGESTION).
 *
 * Both tell nothing when the kernel's default is reno already: the test
 * then exits 77 (skipped). */
#include <mpi.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define LEN (1 << 20)

static int is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    return 0;
}

/* Counts this process's connected loopback TCP sockets (*total) and those
 * running congestion control cc (returned). */
static int count_cc(const char *cc, int *total)
{
    int n = 0;
    *total = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        int type = 0, proto = 0, listening = 0;
        socklen_t l = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
            continue;
        l = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) != 0 || proto != IPPROTO_TCP)
            continue;
        l = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) != 0 || listening)
            continue;
        struct sockaddr_storage me, peer;
        socklen_t ml = sizeof(me), pl = sizeof(peer);
        if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
            getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || !is_loopback(&me) ||
            !is_loopback(&peer))
            continue;
        char name[32] = {0};
        l = sizeof(name) - 1;
        if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &l) != 0)
            continue;
        (*total)++;
        if (strcmp(name, cc) == 0)
            n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int rank, size, fail = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "auto";
    const char *var = argc > 2 ? argv[2] : "BM_BTL_TCP_CONGESTION";
    char def[32] = {0};
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    if (!f || !fgets(def, sizeof(def), f)) {
        if (rank == 0)
            fprintf(stderr, "p2p_tcp_congestion: cannot read the kernel's default: skipped\n");
        MPI_Finalize();
        return 77;
    }
    fclose(f);
    def[strcspn(def, "\n")] = '\0';
    if (strcmp(def, "reno") == 0) {
        if (rank == 0)
            fprintf(stderr, "p2p_tcp_congestion: the kernel's default is reno: skipped\n");
        MPI_Finalize();
        return 77;
    }
    if (size != 2) {
        fprintf(stderr, "p2p_tcp_congestion: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *a = malloc(LEN), *b = malloc(LEN);
    if (!a || !b)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < LEN; i++)
        a[i] = (unsigned char)(i * 7 + rank);
    MPI_Sendrecv(a, LEN, MPI_BYTE, 1 - rank, 5, b, LEN, MPI_BYTE, 1 - rank, 5, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < LEN; i++)
        if (b[i] != (unsigned char)(i * 7 + 1 - rank)) {
            fprintf(stderr, "rank %d: byte %d wrong\n", rank, i);
            fail = 1;
            break;
        }
    int total = 0, reno = count_cc("reno", &total);
    printf("rank %d: %d connected loopback tcp socket(s), %d with reno (kernel default %s, mode "
           "%s)\n",
           rank, total, reno, def, mode);
    if (reno < 0) {
        fprintf(stderr, "rank %d: cannot list /proc/self/fd\n", rank);
        fail = 1;
    } else if (strcmp(mode, "auto") == 0 && reno < 1) {
        fprintf(stderr, "rank %d: %s=auto left no loopback link on reno\n", rank, var);
        fail = 1;
    } else if (strcmp(mode, "default") == 0 && reno != 0) {
        fprintf(stderr, "rank %d: %s=default, yet %d socket(s) run reno\n", rank, var, reno);
        fail = 1;
    }
    int any = 0;
    MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(a);
    free(b);
    MPI_Finalize();
    return any ? 1 : 0;
}
