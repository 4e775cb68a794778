/* PMI-1 and PMI-2 wire protocols, client side (see rte_pmi_wire.h for the
 * message formats). Each operation sends one command and reads its reply
 * synchronously; the server answers commands in order, so no reply can be
 * mistaken for another. Errors say which launcher socket failed and how. */
#define BM_LOG_SUBSYS "runtime/pmi"
#include "runtime/rte_pmi_wire.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Documented limits of hydra and Slurm (both announce these in get_maxes). */
#define PMI_KEYLEN_DEFAULT 64
#define PMI_VALLEN_DEFAULT 1024

bm_status_t bm_rte_pmi_parse(char *text, int version, struct bm_rte_pmi_msg *msg_out)
{
    struct bm_rte_pmi_msg m = {0};
    char sep = version == 2 ? ';' : ' ';
    char *p = text;
    while (*p) {
        while (*p == sep || (version == 1 && *p == '\n'))
            p++;
        if (!*p)
            break;
        char *key = p;
        char *eq = NULL;
        char *w = p; /* PMI-2 values are unescaped in place (";;" -> ';') */
        for (;;) {
            if (*p == '\0' || (*p == '\n' && version == 1))
                break;
            if (*p == sep) {
                if (version == 2 && p[1] == ';' && eq) {
                    *w++ = ';';
                    p += 2;
                    continue;
                }
                break;
            }
            if (*p == '=' && !eq) {
                eq = w;
                *w++ = '\0';
                p++;
                continue;
            }
            *w++ = *p++;
        }
        bool more = *p != '\0';
        if (more)
            p++;
        *w = '\0';
        if (!eq)
            return BM_ERR_PROTOCOL;
        if (m.nfields < BM_RTE_PMI_FIELDS_MAX) {
            m.key[m.nfields] = key;
            m.val[m.nfields] = eq + 1;
            m.nfields++;
        }
        if (!more)
            break;
    }
    if (m.nfields == 0 || strcmp(m.key[0], "cmd") != 0)
        return BM_ERR_PROTOCOL;
    *msg_out = m;
    return BM_OK;
}

const char *bm_rte_pmi_field(const struct bm_rte_pmi_msg *m, const char *key)
{
    for (int i = 0; i < m->nfields; i++)
        if (strcmp(m->key[i], key) == 0)
            return m->val[i];
    return NULL;
}

/* ---- transport ------------------------------------------------------------ */

/* Write head (may be empty) and body with one writev: Slurm's pmi2 server
 * parses whatever one read returns, so a length sent apart from its
 * command is taken for a whole (broken) request. */
static bm_status_t pmi_write(struct bm_rte_pmi_conn *c, const char *head, size_t hlen,
                             const char *body, size_t blen)
{
    struct iovec iov[2] = {{(void *)head, hlen}, {(void *)body, blen}};
    int cnt = 2;
    struct iovec *v = iov;
    if (hlen == 0) {
        v++;
        cnt--;
    }
    while (cnt > 0) {
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)cnt};
        ssize_t n =
            sendmsg(c->fd, &mh, MSG_NOSIGNAL); /* a closed launcher is an error, not SIGPIPE */
        if (n < 0 && errno == ENOTSOCK)
            n = writev(c->fd, v, cnt); /* an inherited pipe pair works too */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            bm_log_error("cannot write to the launcher's PMI socket (%s): %s", c->where,
                         n < 0 ? strerror(errno) : "closed");
            return BM_ERR_CONN_RESET;
        }
        size_t done = (size_t)n;
        while (cnt > 0 && done >= v->iov_len) {
            done -= v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + done;
            v->iov_len -= done;
        }
    }
    return BM_OK;
}

/* Read more bytes into rbuf. */
static bm_status_t pmi_fill(struct bm_rte_pmi_conn *c)
{
    if (c->rlen >= sizeof(c->rbuf) - 1) {
        bm_log_error("the launcher sent a PMI message longer than %zu bytes on %s",
                     sizeof(c->rbuf) - 1, c->where);
        return BM_ERR_PROTOCOL;
    }
    for (;;) {
        ssize_t n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - 1 - c->rlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            bm_log_error("the launcher closed its PMI socket (%s)%s%s: it ended or stopped the "
                         "job",
                         c->where, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
            return BM_ERR_CONN_RESET;
        }
        c->rlen += (size_t)n;
        return BM_OK;
    }
}

/* Take n bytes from the front of rbuf into out (NUL-terminated). */
static void pmi_take(struct bm_rte_pmi_conn *c, size_t n, size_t skip, char *out)
{
    memcpy(out, c->rbuf, n);
    out[n] = '\0';
    memmove(c->rbuf, c->rbuf + n + skip, c->rlen - n - skip);
    c->rlen -= n + skip;
}

/* One PMI-1 line (without its newline) into out[BM_RTE_PMI_MSG_MAX]. */
static bm_status_t pmi_read_line(struct bm_rte_pmi_conn *c, char *out)
{
    for (;;) {
        char *nl = memchr(c->rbuf, '\n', c->rlen);
        if (nl) {
            pmi_take(c, (size_t)(nl - c->rbuf), 1, out);
            return BM_OK;
        }
        bm_status_t rc = pmi_fill(c);
        if (rc != BM_OK)
            return rc;
    }
}

/* One PMI-2 message body into out[BM_RTE_PMI_MSG_MAX]. */
static bm_status_t pmi_read_v2(struct bm_rte_pmi_conn *c, char *out)
{
    bm_status_t rc;
    while (c->rlen < 6)
        if ((rc = pmi_fill(c)) != BM_OK)
            return rc;
    char lenbuf[7];
    memcpy(lenbuf, c->rbuf, 6);
    lenbuf[6] = '\0';
    char *end;
    long n = strtol(lenbuf, &end, 10);
    while (*end == ' ')
        end++;
    if (*end || n <= 0 || n >= BM_RTE_PMI_MSG_MAX) {
        bm_log_error("bad PMI-2 message length '%s' from the launcher on %s", lenbuf, c->where);
        return BM_ERR_PROTOCOL;
    }
    memmove(c->rbuf, c->rbuf + 6, c->rlen - 6);
    c->rlen -= 6;
    while (c->rlen < (size_t)n)
        if ((rc = pmi_fill(c)) != BM_OK)
            return rc;
    pmi_take(c, (size_t)n, 0, out);
    return BM_OK;
}

/* Send a command (text without framing: a PMI-1 line without its newline
 * or a PMI-2 body), read the reply into buf and parse it; the reply's cmd
 * must be `expect`. */
static bm_status_t pmi_call(struct bm_rte_pmi_conn *c, int version, const char *cmd,
                            const char *expect, struct bm_rte_pmi_msg *reply)
{
    size_t len = strlen(cmd);
    char frame[24];
    bm_status_t rc;
    if (version == 2) {
        snprintf(frame, sizeof(frame), "%-6zu", len);
        rc = pmi_write(c, frame, 6, cmd, len);
    } else {
        rc = pmi_write(c, cmd, len, "\n", 1);
    }
    if (rc != BM_OK)
        return rc;
    if (!expect)
        return BM_OK;
    char *buf = c->mbuf;
    rc = version == 2 ? pmi_read_v2(c, buf) : pmi_read_line(c, buf);
    if (rc != BM_OK)
        return rc;
    char shown[201]; /* the parser cuts buf into pieces */
    snprintf(shown, sizeof(shown), "%.200s", buf);
    if (bm_rte_pmi_parse(buf, version, reply) != BM_OK ||
        strcmp(bm_rte_pmi_field(reply, "cmd"), expect) != 0) {
        bm_log_error("unexpected PMI-%d reply from the launcher on %s (wanted %s): %s", version,
                     c->where, expect, shown);
        return BM_ERR_PROTOCOL;
    }
    return BM_OK;
}

/* rc=0 (or no rc field) is success. */
static bool pmi_rc_ok(const struct bm_rte_pmi_msg *m)
{
    const char *rc = bm_rte_pmi_field(m, "rc");
    return !rc || strcmp(rc, "0") == 0;
}

static bool pmi_parse_int(const char *s, int min, int max, int *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* ---- connecting ------------------------------------------------------------- */

static bm_status_t pmi_connect_port(struct bm_rte_pmi_conn *c, const char *port_env)
{
    char host[256];
    snprintf(host, sizeof(host), "%s", port_env);
    char *colon = strrchr(host, ':');
    if (!colon || colon == host || !colon[1]) {
        bm_log_error("PMI_PORT='%s' is not host:port (set by the launcher; was it changed?)",
                     port_env);
        return BM_ERR_BAD_PARAM;
    }
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        bm_log_error("cannot resolve the PMI server %s from PMI_PORT: %s", port_env,
                     gai_strerror(gai));
        return BM_ERR_NOT_AVAILABLE;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        bm_log_error("cannot connect to the PMI server at %s (PMI_PORT): %s; is the launcher "
                     "still running?",
                     port_env, strerror(err));
        return BM_ERR_NOT_AVAILABLE;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    return BM_OK;
}

/* PMI_PORT handshake: initack, then size, rank and debug as "set" lines. */
static bm_status_t pmi_initack(struct bm_rte_pmi_conn *c, const char *id)
{
    char cmd[128];
    struct bm_rte_pmi_msg m;
    snprintf(cmd, sizeof(cmd), "cmd=initack pmiid=%s", id);
    bm_status_t rc = pmi_call(c, 1, cmd, "initack", &m);
    for (int i = 0; rc == BM_OK && i < 3; i++) {
        if ((rc = pmi_read_line(c, c->mbuf)) != BM_OK)
            break;
        if (bm_rte_pmi_parse(c->mbuf, 1, &m) != BM_OK || strcmp(m.val[0], "set") != 0) {
            bm_log_error("unexpected reply to PMI initack on %s (wanted cmd=set ...)", c->where);
            return BM_ERR_PROTOCOL;
        }
        const char *v;
        if ((v = bm_rte_pmi_field(&m, "size")) && !pmi_parse_int(v, 1, INT_MAX, &c->size))
            rc = BM_ERR_PROTOCOL;
        if ((v = bm_rte_pmi_field(&m, "rank")) && !pmi_parse_int(v, 0, INT_MAX, &c->rank))
            rc = BM_ERR_PROTOCOL;
    }
    return rc;
}

static bm_status_t pmi_env_int(const char *name, int min, int max, int *out)
{
    const char *s = getenv(name);
    if (!s)
        return BM_ERR_NOT_FOUND;
    if (!pmi_parse_int(s, min, max, out)) {
        bm_log_error("%s='%s' is not a number from %d to %d (set by the launcher)", name, s, min,
                     max);
        return BM_ERR_BAD_PARAM;
    }
    return BM_OK;
}

static bm_status_t pmi_handshake_v1(struct bm_rte_pmi_conn *c)
{
    struct bm_rte_pmi_msg m;
    const char *v;
    bm_status_t rc = pmi_call(c, 1, "cmd=get_maxes", "maxes", &m);
    if (rc != BM_OK)
        return rc;
    if ((v = bm_rte_pmi_field(&m, "keylen_max")))
        pmi_parse_int(v, 8, BM_RTE_PMI_MSG_MAX, &c->keylen_max);
    if ((v = bm_rte_pmi_field(&m, "vallen_max")))
        pmi_parse_int(v, 16, BM_RTE_PMI_MSG_MAX / 2, &c->vallen_max);
    if ((rc = pmi_call(c, 1, "cmd=get_appnum", "appnum", &m)) != BM_OK)
        return rc;
    if ((v = bm_rte_pmi_field(&m, "appnum")))
        pmi_parse_int(v, -1, INT_MAX, &c->appnum);
    if ((rc = pmi_call(c, 1, "cmd=get_my_kvsname", "my_kvsname", &m)) != BM_OK)
        return rc;
    v = bm_rte_pmi_field(&m, "kvsname");
    if (!v || !*v || strlen(v) >= sizeof(c->kvsname)) {
        bm_log_error("the launcher gave no usable PMI kvs name on %s", c->where);
        return BM_ERR_PROTOCOL;
    }
    snprintf(c->kvsname, sizeof(c->kvsname), "%s", v);
    return BM_OK;
}

static bm_status_t pmi_handshake_v2(struct bm_rte_pmi_conn *c)
{
    char cmd[512];
    struct bm_rte_pmi_msg m;
    const char *jobid = getenv("PMI_JOBID");
    /* Slurm wants the job id it set in PMI_JOBID back; hydra sets none. */
    if (jobid && *jobid && !strpbrk(jobid, ";\n"))
        snprintf(cmd, sizeof(cmd), "cmd=fullinit;pmirank=%d;pmijobid=%s;threaded=FALSE;", c->rank,
                 jobid);
    else
        snprintf(cmd, sizeof(cmd), "cmd=fullinit;pmirank=%d;threaded=FALSE;", c->rank);
    bm_status_t rc = pmi_call(c, 2, cmd, "fullinit-response", &m);
    if (rc != BM_OK)
        return rc;
    /* Slurm 22.05 answers rc=3 while giving a complete answer; what counts
     * is that rank and size came back. */
    if (!pmi_parse_int(bm_rte_pmi_field(&m, "rank"), 0, INT_MAX, &c->rank) ||
        !pmi_parse_int(bm_rte_pmi_field(&m, "size"), 1, INT_MAX, &c->size)) {
        bm_log_error("PMI-2 fullinit on %s gave no rank and size (rc=%s)", c->where,
                     bm_rte_pmi_field(&m, "rc") ? bm_rte_pmi_field(&m, "rc") : "none");
        return BM_ERR_PROTOCOL;
    }
    const char *app = bm_rte_pmi_field(&m, "appnum");
    if (app)
        pmi_parse_int(app, -1, INT_MAX, &c->appnum);
    if ((rc = pmi_call(c, 2, "cmd=job-getid;", "job-getid-response", &m)) != BM_OK)
        return rc;
    const char *v = bm_rte_pmi_field(&m, "jobid");
    if (!pmi_rc_ok(&m) || !v || !*v || strlen(v) >= sizeof(c->kvsname)) {
        bm_log_error("the launcher gave no usable PMI-2 job id on %s", c->where);
        return BM_ERR_PROTOCOL;
    }
    snprintf(c->kvsname, sizeof(c->kvsname), "%s", v);
    return BM_OK;
}

bm_status_t bm_rte_pmi_open(struct bm_rte_pmi_conn *c, int version)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->rank = c->size = -1;
    c->version = version;
    c->keylen_max = PMI_KEYLEN_DEFAULT;
    c->vallen_max = PMI_VALLEN_DEFAULT;
    bm_status_t rc;
    const char *fd_env = getenv("PMI_FD"), *port_env = getenv("PMI_PORT");
    if (fd_env) {
        snprintf(c->where, sizeof(c->where), "PMI_FD=%.32s", fd_env);
        if ((rc = pmi_env_int("PMI_FD", 0, INT_MAX, &c->fd)) != BM_OK)
            return rc;
        if (fcntl(c->fd, F_GETFD) < 0) {
            bm_log_error("PMI_FD=%d is not an open file descriptor: the launcher's socket was "
                         "closed (by a shell or wrapper script between the launcher and this "
                         "program?)",
                         c->fd);
            return BM_ERR_NOT_AVAILABLE;
        }
        /* Not inherited by programs this process may start. */
        fcntl(c->fd, F_SETFD, FD_CLOEXEC);
        if ((rc = pmi_env_int("PMI_RANK", 0, INT_MAX, &c->rank)) == BM_ERR_BAD_PARAM ||
            (rc = pmi_env_int("PMI_SIZE", 1, INT_MAX, &c->size)) == BM_ERR_BAD_PARAM)
            return rc;
    } else if (port_env) {
        snprintf(c->where, sizeof(c->where), "PMI_PORT=%.200s", port_env);
        const char *id = getenv("PMI_ID");
        if (!id || !*id || strpbrk(id, " \n")) {
            bm_log_error("PMI_PORT is set but PMI_ID is %s: this process cannot tell the "
                         "launcher who it is",
                         id ? "malformed" : "not set");
            return BM_ERR_BAD_PARAM;
        }
        if ((rc = pmi_connect_port(c, port_env)) != BM_OK)
            return rc;
        if ((rc = pmi_initack(c, id)) != BM_OK)
            goto err_close;
    } else {
        bm_log_error("neither PMI_FD nor PMI_PORT is set: not started by a PMI launcher");
        return BM_ERR_NOT_AVAILABLE;
    }
    char cmd[96];
    struct bm_rte_pmi_msg m;
    snprintf(cmd, sizeof(cmd), "cmd=init pmi_version=%d pmi_subversion=%d", version,
             version == 1 ? 1 : 0);
    if ((rc = pmi_call(c, 1, cmd, "response_to_init", &m)) != BM_OK)
        goto err_close;
    const char *sv = bm_rte_pmi_field(&m, "pmi_version");
    if (!pmi_rc_ok(&m) || !sv || atoi(sv) != version) {
        bm_log_error("the launcher on %s does not speak PMI-%d (it answered pmi_version=%s "
                     "rc=%s); set BM_RTE_PMI_VERSION=%d",
                     c->where, version, sv ? sv : "none",
                     bm_rte_pmi_field(&m, "rc") ? bm_rte_pmi_field(&m, "rc") : "none",
                     version == 1 ? 2 : 1);
        rc = BM_ERR_NOT_AVAILABLE;
        goto err_close;
    }
    if (version == 1 && (c->rank < 0 || c->size < 1)) {
        bm_log_error("the PMI-1 launcher on %s gave no rank or size (PMI_RANK, PMI_SIZE)",
                     c->where);
        rc = BM_ERR_PROTOCOL;
        goto err_close;
    }
    if (version == 2 && c->rank < 0)
        c->rank = 0; /* fullinit sends it back; Slurm and hydra both set PMI_RANK */
    rc = version == 1 ? pmi_handshake_v1(c) : pmi_handshake_v2(c);
    if (rc != BM_OK)
        goto err_close;
    return BM_OK;
err_close:
    close(c->fd);
    c->fd = -1;
    return rc;
}

bm_status_t bm_rte_pmi_put(struct bm_rte_pmi_conn *c, const char *key, const char *value)
{
    struct bm_rte_pmi_msg m;
    char *cmd = c->sbuf;
    int n = c->version == 2
                ? snprintf(cmd, sizeof(c->sbuf), "cmd=kvs-put;key=%s;value=%s;", key, value)
                : snprintf(cmd, sizeof(c->sbuf), "cmd=put kvsname=%s key=%s value=%s", c->kvsname,
                           key, value);
    if (n < 0 || (size_t)n >= sizeof(c->sbuf))
        return BM_ERR_TRUNCATE;
    bm_status_t rc =
        pmi_call(c, c->version, cmd, c->version == 2 ? "kvs-put-response" : "put_result", &m);
    if (rc == BM_OK && !pmi_rc_ok(&m)) {
        const char *msg = bm_rte_pmi_field(&m, "msg");
        bm_log_error("the launcher refused to store PMI key %s (%zu-byte value) on %s: %s", key,
                     strlen(value), c->where, msg ? msg : "no reason given");
        rc = BM_ERR_NOT_AVAILABLE;
    }
    return rc;
}

/* A key no process ever puts (bitmover's own keys start "bm<rank>." or
 * "bmhost"): a PMI-2 get of it is the fence's wait, below. */
#define PMI_FENCE_PROBE_KEY "bmfence"

bm_status_t bm_rte_pmi_fence(struct bm_rte_pmi_conn *c)
{
    struct bm_rte_pmi_msg m;
    bm_status_t rc = c->version == 2 ? pmi_call(c, 2, "cmd=kvs-fence;", "kvs-fence-response", &m)
                                     : pmi_call(c, 1, "cmd=barrier_in", "barrier_out", &m);
    if (rc == BM_OK && !pmi_rc_ok(&m)) {
        bm_log_error("the launcher's PMI fence failed on %s (rc=%s)", c->where,
                     bm_rte_pmi_field(&m, "rc"));
        rc = BM_ERR_NOT_AVAILABLE;
    }
    if (rc != BM_OK || c->version != 2)
        return rc;
    /* hydra answers a PMI-2 kvs-fence at once (it only counts epochs) and
     * holds a kvs-get of a key nobody put until every process has fenced
     * as often as this one: that get is the wait. Without it the fence of
     * MPI_Finalize returned at once and a rank closed while a peer still
     * needed it (measured: 0.1 ms against the 300 ms the last rank came
     * later). Slurm's pmi2 plugin blocks in the fence and answers the get
     * "not found" at once (one round trip more). */
    char probe[64];
    rc = bm_rte_pmi_get(c, PMI_FENCE_PROBE_KEY, probe, sizeof(probe));
    return rc == BM_ERR_NOT_FOUND ? BM_OK : rc == BM_OK ? BM_ERR_PROTOCOL : rc;
}

static bm_status_t pmi_copy_value(const char *v, char *out, size_t len)
{
    if (!v)
        return BM_ERR_NOT_FOUND;
    if (strlen(v) >= len)
        return BM_ERR_TRUNCATE;
    memcpy(out, v, strlen(v) + 1);
    return BM_OK;
}

bm_status_t bm_rte_pmi_get(struct bm_rte_pmi_conn *c, const char *key, char *value_out, size_t len)
{
    char cmd[512];
    struct bm_rte_pmi_msg m;
    if (c->version == 2)
        snprintf(cmd, sizeof(cmd), "cmd=kvs-get;jobid=%s;srcid=-1;key=%s;", c->kvsname, key);
    else
        snprintf(cmd, sizeof(cmd), "cmd=get kvsname=%s key=%s", c->kvsname, key);
    bm_status_t rc =
        pmi_call(c, c->version, cmd, c->version == 2 ? "kvs-get-response" : "get_result", &m);
    if (rc != BM_OK)
        return rc;
    const char *found = bm_rte_pmi_field(&m, "found");
    if (!pmi_rc_ok(&m) || (found && strcmp(found, "TRUE") != 0))
        return BM_ERR_NOT_FOUND;
    return pmi_copy_value(bm_rte_pmi_field(&m, "value"), value_out, len);
}

bm_status_t bm_rte_pmi_job_attr(struct bm_rte_pmi_conn *c, const char *key, char *value_out,
                                size_t len)
{
    if (c->version == 1)
        return bm_rte_pmi_get(c, key, value_out, len);
    char cmd[256];
    struct bm_rte_pmi_msg m;
    snprintf(cmd, sizeof(cmd), "cmd=info-getjobattr;key=%s;", key);
    bm_status_t rc = pmi_call(c, 2, cmd, "info-getjobattr-response", &m);
    if (rc != BM_OK)
        return rc;
    const char *found = bm_rte_pmi_field(&m, "found");
    if (!pmi_rc_ok(&m) || !found || strcmp(found, "TRUE") != 0)
        return BM_ERR_NOT_FOUND;
    return pmi_copy_value(bm_rte_pmi_field(&m, "value"), value_out, len);
}

void bm_rte_pmi_abort(struct bm_rte_pmi_conn *c, int exit_code, const char *message)
{
    if (c->fd < 0)
        return;
    char cmd[1024];
    if (c->version == 2) {
        /* The message travels in one field: no ';' or newline inside. */
        char clean[512];
        size_t i = 0;
        for (; message[i] && i < sizeof(clean) - 1; i++)
            clean[i] = message[i] == ';' || message[i] == '\n' ? ',' : message[i];
        clean[i] = '\0';
        snprintf(cmd, sizeof(cmd), "cmd=abort;isworldabort=TRUE;msg=%s;", clean);
    } else {
        snprintf(cmd, sizeof(cmd), "cmd=abort exitcode=%d", exit_code);
    }
    pmi_call(c, c->version, cmd, NULL, NULL);
}

void bm_rte_pmi_close(struct bm_rte_pmi_conn *c)
{
    if (c->fd < 0)
        return;
    struct bm_rte_pmi_msg m;
    if (c->version == 2)
        pmi_call(c, 2, "cmd=finalize;", "finalize-response", &m);
    else
        pmi_call(c, 1, "cmd=finalize", "finalize_ack", &m);
    close(c->fd);
    c->fd = -1;
}

/* ---- PMI_process_mapping ------------------------------------------------------ */

static bool map_expect(const char **p, char ch)
{
    while (**p == ' ')
        (*p)++;
    if (**p != ch)
        return false;
    (*p)++;
    return true;
}

static bool map_int(const char **p, long *out)
{
    while (**p == ' ')
        (*p)++;
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno || v < 0 || v > INT_MAX)
        return false;
    *p = end;
    *out = v;
    return true;
}

bm_status_t bm_rte_pmi_parse_mapping(const char *text, int size, int *node_out)
{
    enum { MAP_BLOCKS_MAX = 1024 };
    long blk[MAP_BLOCKS_MAX][3];
    int nblk = 0;
    const char *p = text;
    if (!map_expect(&p, '(') || strncmp(p, "vector", 6) != 0)
        return BM_ERR_PROTOCOL;
    p += 6;
    while (map_expect(&p, ',')) {
        if (nblk == MAP_BLOCKS_MAX || !map_expect(&p, '(') || !map_int(&p, &blk[nblk][0]) ||
            !map_expect(&p, ',') || !map_int(&p, &blk[nblk][1]) || !map_expect(&p, ',') ||
            !map_int(&p, &blk[nblk][2]) || !map_expect(&p, ')'))
            return BM_ERR_PROTOCOL;
        if (blk[nblk][1] > 0 && blk[nblk][2] > 0)
            nblk++;
    }
    if (!map_expect(&p, ')') || nblk == 0)
        return BM_ERR_PROTOCOL;
    int r = 0;
    while (r < size) {
        for (int b = 0; b < nblk && r < size; b++)
            for (long n = 0; n < blk[b][1] && r < size; n++)
                for (long k = 0; k < blk[b][2] && r < size; k++)
                    node_out[r++] = (int)(blk[b][0] + n);
    }
    return BM_OK;
}

/* ---- values as text ------------------------------------------------------------ */

static const char pmi_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void bm_rte_pmi_encode(const void *data, size_t len, char *out)
{
    const uint8_t *in = data;
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = pmi_b64[v >> 18];
        out[o++] = pmi_b64[(v >> 12) & 63];
        out[o++] = pmi_b64[(v >> 6) & 63];
        out[o++] = pmi_b64[v & 63];
    }
    if (len - i == 1) {
        out[o++] = pmi_b64[in[i] >> 2];
        out[o++] = pmi_b64[(in[i] & 3) << 4];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
        out[o++] = pmi_b64[v >> 10];
        out[o++] = pmi_b64[(v >> 4) & 63];
        out[o++] = pmi_b64[(v & 15) << 2];
    }
    out[o] = '\0';
}

static int pmi_b64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '-' ? 62 : ch == '_' ? 63 : -1;
}

bm_status_t bm_rte_pmi_decode(const char *text, size_t tlen, void *out, size_t *len_out)
{
    if (tlen % 4 == 1)
        return BM_ERR_PROTOCOL;
    uint8_t *o = out;
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < tlen; i++) {
        int v = pmi_b64_value(text[i]);
        if (v < 0)
            return BM_ERR_PROTOCOL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *len_out = n;
    return BM_OK;
}
