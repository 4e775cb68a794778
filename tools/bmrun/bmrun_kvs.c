/* bmrun's key-value service: a TCP listener that ranks (and remote bmrun
 * daemons) connect to. Nothing is read from or written to a connection for
 * job data until it has presented the job secret in its first message; a
 * wrong secret or any other first message closes the connection and is
 * reported. A fence completes when every rank has entered it; the reply
 * holds every rank's entries of that epoch and is queued once, shared by all
 * connections. */
#include "bmrun.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct kvs_pending {
    struct bm_run_conn *conn;
    double since;
    char peer[64];
};

static int kvs_listen_fd = -1;
static struct kvs_pending *kvs_pend;
static size_t kvs_npend, kvs_pend_cap;

static void kvs_pending_remove(struct bm_run_conn *c)
{
    for (size_t i = 0; i < kvs_npend; i++) {
        if (kvs_pend[i].conn == c) {
            kvs_pend[i] = kvs_pend[--kvs_npend];
            return;
        }
    }
}

static const char *kvs_pending_peer(struct bm_run_conn *c)
{
    for (size_t i = 0; i < kvs_npend; i++)
        if (kvs_pend[i].conn == c)
            return kvs_pend[i].peer;
    return "?";
}

static void kvs_reject(struct bm_run_conn *c, const char *why)
{
    bm_run_say("rejected a connection to the job's key-value service from %s: %s",
               kvs_pending_peer(c), why);
    kvs_pending_remove(c);
    bm_run_conn_close(c);
}

static void kvs_fence_complete(void)
{
    struct bm_run_job *job = &bm_run_job;
    size_t total = 0;
    for (int r = 0; r < job->size; r++)
        total += job->ranks[r].entries_len;
    uint8_t *buf = malloc(total ? total : 1);
    if (!buf) {
        bm_run_say("out of memory building the reply of fence %u (%zu bytes)", job->epoch + 1,
                   total);
        bm_run_ctl_abort_request(-1, BM_RUN_EXIT_FAILURE, "out of memory in bmrun", 21);
        return;
    }
    size_t off = 0;
    for (int r = 0; r < job->size; r++) {
        struct bm_run_rank *rk = &job->ranks[r];
        if (rk->entries_len)
            memcpy(buf + off, rk->entries, rk->entries_len);
        off += rk->entries_len;
        free(rk->entries);
        rk->entries = NULL;
        rk->entries_len = 0;
    }
    job->epoch++;
    job->nfenced = 0;
    struct bm_run_shared *s = bm_run_shared_new(buf, total, BM_RTE_MSG_FENCE_DONE, job->epoch);
    free(buf);
    if (!s) {
        bm_run_ctl_abort_request(-1, BM_RUN_EXIT_FAILURE, "out of memory in bmrun", 21);
        return;
    }
    for (int r = 0; r < job->size; r++)
        if (job->ranks[r].conn)
            bm_run_conn_send_shared(job->ranks[r].conn, s);
    bm_run_shared_release(s);
}

bool bm_run_kvs_fence_waits_for(int rank)
{
    return bm_run_job.nfenced > 0 && bm_run_job.ranks[rank].fenced <= bm_run_job.epoch;
}

static void kvs_fence(int r, uint32_t epoch, const uint8_t *payload, size_t len)
{
    struct bm_run_job *job = &bm_run_job;
    struct bm_run_rank *rk = &job->ranks[r];
    if (epoch != job->epoch + 1 || rk->fenced == epoch) {
        char msg[160];
        int n = snprintf(msg, sizeof(msg),
                         "rank %d entered fence %u while the job is at fence %u: ranks must call "
                         "fence the same number of times",
                         r, epoch, job->epoch + 1);
        bm_run_ctl_abort_request(-1, BM_RUN_EXIT_FAILURE, msg, (size_t)n);
        return;
    }
    size_t off = 0;
    struct bm_rte_kv_view kv;
    bm_status_t rc;
    while ((rc = bm_rte_proto_kv_next(payload, len, &off, &kv)) == BM_OK)
        if ((int)kv.rank != r)
            break;
    if (rc != BM_ERR_NOT_FOUND) {
        char msg[128];
        int n = snprintf(msg, sizeof(msg), "rank %d sent malformed fence data", r);
        bm_run_ctl_abort_request(-1, BM_RUN_EXIT_FAILURE, msg, (size_t)n);
        return;
    }
    rk->entries = malloc(len ? len : 1);
    if (!rk->entries) {
        bm_run_ctl_abort_request(-1, BM_RUN_EXIT_FAILURE, "out of memory in bmrun", 21);
        return;
    }
    if (len)
        memcpy(rk->entries, payload, len);
    rk->entries_len = len;
    rk->fenced = epoch;
    job->nfenced++;
    if (job->nfenced == 1) {
        /* Ranks that are already gone can never join this fence. */
        for (int q = 0; q < job->size; q++)
            if (job->ranks[q].state == BM_RUN_RANK_EXITED) {
                bm_run_ctl_fence_broken(q);
                return;
            }
    }
    if (job->nfenced == job->size)
        kvs_fence_complete();
}

static void kvs_rank_msg(struct bm_run_conn *c, const struct bm_rte_msg_hdr *h,
                         const uint8_t *payload)
{
    struct bm_run_rank *rk = bm_run_conn_arg(c);
    int r = (int)(rk - bm_run_job.ranks);
    switch (h->type) {
    case BM_RTE_MSG_FENCE:
        kvs_fence(r, h->arg, payload, h->len);
        break;
    case BM_RTE_MSG_ABORT:
        bm_run_ctl_abort_request(r, (int)h->arg, (const char *)payload, h->len);
        bm_run_conn_send(c, BM_RTE_MSG_ABORT_ACK, 0, NULL, 0);
        break;
    case BM_RTE_MSG_BYE:
        rk->bye = true;
        break;
    default:
        bm_run_say("rank %d sent an unexpected message (type %u) to the key-value service; "
                   "closing its connection",
                   r, h->type);
        rk->conn = NULL;
        bm_run_conn_close(c);
        break;
    }
}

static void kvs_rank_close(struct bm_run_conn *c)
{
    struct bm_run_rank *rk = bm_run_conn_arg(c);
    rk->conn = NULL;
}

static void kvs_first_msg(struct bm_run_conn *c, const struct bm_rte_msg_hdr *h,
                          const uint8_t *payload)
{
    struct bm_run_job *job = &bm_run_job;
    if ((h->type != BM_RTE_MSG_HELLO && h->type != BM_RTE_MSG_DAEMON_HELLO) ||
        h->len != sizeof(struct bm_rte_msg_hello)) {
        kvs_reject(c, "the first message was not a hello");
        return;
    }
    if (!bm_rte_proto_secret_equal(payload, job->secret)) {
        kvs_reject(c, "wrong job secret");
        return;
    }
    uint32_t who = bm_rte_proto_get_u32(payload + BM_RTE_SECRET_LEN);
    if (h->type == BM_RTE_MSG_DAEMON_HELLO) {
        if (who >= (uint32_t)job->nhosts || job->hosts[who].local || job->hosts[who].hello) {
            kvs_reject(c, "daemon hello for an unknown or already connected host");
            return;
        }
        kvs_pending_remove(c);
        bm_run_conn_set_max(c, BM_RTE_MSG_MAX);
        bm_run_ctl_daemon_hello(c, (int)who);
        return;
    }
    if (who >= (uint32_t)job->size || job->ranks[who].conn) {
        kvs_reject(c, "hello for an unknown or already connected rank");
        return;
    }
    kvs_pending_remove(c);
    struct bm_run_rank *rk = &job->ranks[who];
    rk->conn = c;
    bm_run_conn_set_arg(c, rk);
    bm_run_conn_set_handlers(c, kvs_rank_msg, kvs_rank_close);
    bm_run_conn_set_max(c, BM_RTE_MSG_MAX);
    uint8_t *nodes = malloc(4 * (size_t)job->size);
    if (!nodes) {
        bm_run_conn_close(c);
        rk->conn = NULL;
        return;
    }
    for (int r = 0; r < job->size; r++)
        bm_rte_proto_put_u32(nodes + 4 * r, (uint32_t)job->hosts[job->ranks[r].host].node);
    bm_run_conn_send(c, BM_RTE_MSG_HELLO_ACK, (uint32_t)job->size, nodes, 4 * (size_t)job->size);
    free(nodes);
}

static void kvs_unauth_close(struct bm_run_conn *c)
{
    /* A rank killed between connect and hello closes without a word; only
     * a peer that sent something unacceptable is worth reporting. */
    if (bm_run_conn_got_data(c))
        bm_run_say("a connection to the job's key-value service from %s closed or sent a "
                   "malformed message before presenting the job secret",
                   kvs_pending_peer(c));
    kvs_pending_remove(c);
}

static void kvs_accept(int fd, short revents, void *arg)
{
    (void)revents;
    (void)arg;
    for (;;) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof(sa);
        int cfd = accept4(fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                bm_run_say("accept on the key-value service failed: %s", strerror(errno));
            return;
        }
        /* A host that dies silently must be noticed (TCP alone would take
         * minutes): probe idle connections and bound unacknowledged sends. */
        int one = 1, idle = 10, intvl = 3, cnt = 3;
        unsigned user_timeout_ms = 30000;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(cfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(cfd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(cfd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(cfd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
        setsockopt(cfd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
        if (kvs_npend == kvs_pend_cap) {
            size_t cap = kvs_pend_cap ? 2 * kvs_pend_cap : 64;
            struct kvs_pending *n = realloc(kvs_pend, cap * sizeof(*n));
            if (!n) {
                close(cfd);
                continue;
            }
            kvs_pend = n;
            kvs_pend_cap = cap;
        }
        struct bm_run_conn *c = bm_run_conn_new(cfd, kvs_first_msg, kvs_unauth_close, NULL);
        if (!c) {
            close(cfd);
            continue;
        }
        /* Before the secret is checked a peer may send only a hello. */
        bm_run_conn_set_max(c, sizeof(struct bm_rte_msg_hello));
        struct kvs_pending *p = &kvs_pend[kvs_npend++];
        p->conn = c;
        p->since = bm_run_now();
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
        snprintf(p->peer, sizeof(p->peer), "%s:%u", ip, ntohs(sa.sin_port));
    }
}

void bm_run_kvs_tick(void)
{
    double now = bm_run_now();
    for (size_t i = 0; i < kvs_npend;) {
        if (now - kvs_pend[i].since > bm_run_cfg.hello_timeout) {
            kvs_reject(kvs_pend[i].conn, "no hello in time");
            continue; /* kvs_reject removed entry i */
        }
        i++;
    }
}

static void kvs_add_addr(char *buf, size_t len, const char *ip, unsigned port)
{
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s:%u", used ? "," : "", ip, port);
}

bm_status_t bm_run_kvs_start(bool remote_hosts)
{
    struct bm_run_job *job = &bm_run_job;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return BM_ERR_SYSTEM;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    /* A job on one host never needs to be reachable from elsewhere. */
    sa.sin_addr.s_addr = htonl(remote_hosts ? INADDR_ANY : INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        bm_run_say("cannot open the key-value service socket: %s", strerror(errno));
        close(fd);
        return BM_ERR_SYSTEM;
    }
    unsigned port = ntohs(sa.sin_port);
    job->kvs_addrs[0] = '\0';
    if (remote_hosts) {
        /* Every non-loopback address first: remote hosts try them in order. */
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) == 0) {
            for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                    (i->ifa_flags & IFF_LOOPBACK))
                    continue;
                char ip[INET_ADDRSTRLEN];
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
                if (strlen(job->kvs_addrs) + strlen(ip) + 8 < sizeof(job->kvs_addrs) - 24)
                    kvs_add_addr(job->kvs_addrs, sizeof(job->kvs_addrs), ip, port);
            }
            freeifaddrs(ifs);
        }
    }
    kvs_add_addr(job->kvs_addrs, sizeof(job->kvs_addrs), "127.0.0.1", port);
    kvs_listen_fd = fd;
    return bm_run_loop_add(fd, POLLIN, kvs_accept, NULL);
}
