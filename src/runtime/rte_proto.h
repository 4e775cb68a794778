/* Wire protocol of the bmrun key-value service and of the bmrun controller
 * <-> daemon link. Both run over TCP to the controller's one listening socket.
 * Every message is a 16-byte header followed by `len` payload bytes. All
 * integers are big-endian (network order) and are written byte by byte with
 * the helpers below, so the structs only document the layout; their sizes are
 * fixed by _Static_assert. The first message on every connection must be
 * HELLO (a rank) or DAEMON_HELLO (a bmrun daemon) carrying the job secret;
 * the service closes any connection whose first message is anything else or
 * whose secret is wrong, before reading or writing any job data.
 *
 * Rank conversation:   HELLO -> HELLO_ACK, then any number of
 *                      FENCE(epoch, own entries) -> FENCE_DONE(epoch, all entries),
 *                      ABORT -> ABORT_ACK, BYE (clean finalize, no reply).
 * Daemon conversation: DAEMON_HELLO -> LAUNCH; daemon sends SPAWNED, OUTPUT,
 *                      EXITED; controller sends KILL and SHUTDOWN, and STDIN
 *                      (answered by STDIN_ACK) when rank 0 is on the daemon's
 *                      host; the daemon closes the connection once it has
 *                      cleaned up. */
#ifndef BM_RUNTIME_RTE_PROTO_H
#define BM_RUNTIME_RTE_PROTO_H

#include "bm_status.h"

#include <stddef.h>
#include <stdint.h>

#define BM_RTE_PROTO_MAGIC   0x424d5254u /* "BMRT" */
#define BM_RTE_PROTO_VERSION 1
#define BM_RTE_SECRET_LEN    32           /* raw bytes; BMRUN_SECRET holds them as 64 hex digits */
#define BM_RTE_KEY_MAX       255          /* longest modex key in bytes */
#define BM_RTE_MSG_MAX       (256u << 20) /* larger payloads are a protocol error */

enum bm_rte_msg_type {
    /* rank -> service */
    BM_RTE_MSG_HELLO = 1, /* payload bm_rte_msg_hello; arg 0 */
    BM_RTE_MSG_FENCE = 3, /* arg = epoch (1, 2, ...); payload = this rank's kv entries */
    BM_RTE_MSG_ABORT = 5, /* arg = exit code; payload = message text (no NUL) */
    BM_RTE_MSG_BYE = 7,   /* clean finalize; arg 0, no payload, no reply */
    /* service -> rank */
    BM_RTE_MSG_HELLO_ACK = 2,  /* arg = job size; payload = u32 node index of every rank */
    BM_RTE_MSG_FENCE_DONE = 4, /* arg = epoch; payload = kv entries of every rank */
    BM_RTE_MSG_ABORT_ACK = 6,  /* arg 0; the launcher has printed the message */
    /* daemon -> controller */
    BM_RTE_MSG_DAEMON_HELLO = 16, /* payload bm_rte_msg_daemon_hello */
    BM_RTE_MSG_SPAWNED = 18,      /* arg = rank; payload u32 pid */
    BM_RTE_MSG_OUTPUT = 19,       /* arg = rank; payload u8 stream (1/2), 3 pad, line bytes */
    BM_RTE_MSG_EXITED = 20,       /* arg = rank; payload bm_rte_msg_exited */
    BM_RTE_MSG_STDIN_ACK = 24, /* arg = rank; payload u32: 0 written, 1 the rank's input is gone */
    /* controller -> daemon */
    BM_RTE_MSG_LAUNCH = 17,   /* arg = node; payload bm_rte_msg_launch + arrays */
    BM_RTE_MSG_KILL = 21,     /* arg = signal number to send to every local rank */
    BM_RTE_MSG_SHUTDOWN = 22, /* arg 0: reap, clean up job files, close, exit */
    BM_RTE_MSG_STDIN = 23,    /* arg = rank; payload: bytes for its stdin (none: close it) */
};

/* Every message starts with this header. */
struct bm_rte_msg_hdr {
    uint32_t magic;   /* BM_RTE_PROTO_MAGIC */
    uint16_t version; /* BM_RTE_PROTO_VERSION */
    uint16_t type;    /* enum bm_rte_msg_type */
    uint32_t len;     /* payload bytes after the header, <= BM_RTE_MSG_MAX */
    uint32_t arg;     /* small type-specific value (rank, epoch, code, signal) */
};
_Static_assert(sizeof(struct bm_rte_msg_hdr) == 16, "rte header is 16 bytes on the wire");

/* HELLO payload. */
struct bm_rte_msg_hello {
    uint8_t secret[BM_RTE_SECRET_LEN]; /* the job secret, raw bytes */
    uint32_t rank;                     /* BMRUN_RANK of the sender */
    uint32_t pid;                      /* sender's pid, for messages */
};
_Static_assert(sizeof(struct bm_rte_msg_hello) == 40, "hello is 40 bytes");

/* DAEMON_HELLO payload. */
struct bm_rte_msg_daemon_hello {
    uint8_t secret[BM_RTE_SECRET_LEN]; /* the job secret, raw bytes */
    uint32_t node;                     /* node index the daemon was started for */
    uint32_t pid;                      /* daemon's pid */
};
_Static_assert(sizeof(struct bm_rte_msg_daemon_hello) == 40, "daemon hello is 40 bytes");

/* One modex entry inside FENCE / FENCE_DONE payloads: this header, then
 * keylen key bytes (no NUL), then vallen value bytes. Entries are packed
 * back to back without padding. */
struct bm_rte_msg_kv {
    uint32_t rank;     /* rank that put the entry */
    uint16_t keylen;   /* 1 .. BM_RTE_KEY_MAX */
    uint16_t reserved; /* 0 */
    uint32_t vallen;   /* value bytes (may be 0) */
};
_Static_assert(sizeof(struct bm_rte_msg_kv) == 12, "kv entry header is 12 bytes");

/* LAUNCH payload: this header, then nranks pairs of u32 (global rank, index
 * of its program), in local-rank order, then envc NUL-terminated
 * "NAME=value" strings to add to every rank's environment (BMRUN_* job and
 * host variables), then, when has_wdir is 1, one NUL-terminated working
 * directory for the ranks, then for each of the napps programs (MPMD): u32
 * argc, u32 envc, argc NUL-terminated argument strings (argv[0] is the
 * program) and envc "NAME=value" strings for its ranks only (BMRUN_APPNUM,
 * its -x variables). */
struct bm_rte_msg_launch {
    uint32_t nranks;     /* ranks to start on this node */
    uint32_t napps;      /* programs of the job */
    uint32_t envc;       /* environment additions common to every rank */
    uint32_t has_wdir;   /* 1: the controller's working directory follows */
    uint32_t stdin_rank; /* global rank fed through STDIN messages, UINT32_MAX: none */
};
_Static_assert(sizeof(struct bm_rte_msg_launch) == 20, "launch header is 20 bytes");

/* EXITED payload. */
struct bm_rte_msg_exited {
    uint32_t pid;       /* pid of the rank on its host (0 when fork failed) */
    int32_t wstatus;    /* raw waitpid status (WIFEXITED / WIFSIGNALED) */
    int32_t exec_errno; /* non-zero: exec of the program failed with this errno */
    uint32_t reserved;  /* 0 */
};
_Static_assert(sizeof(struct bm_rte_msg_exited) == 16, "exited is 16 bytes");

#define BM_RTE_STREAM_STDOUT 1
#define BM_RTE_STREAM_STDERR 2

static inline void bm_rte_proto_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void bm_rte_proto_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint16_t bm_rte_proto_get_u16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t bm_rte_proto_get_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Encode a header into 16 bytes. */
void bm_rte_proto_hdr_encode(uint8_t out[16], uint16_t type, uint32_t len, uint32_t arg);
/* Decode and validate (magic, version, len <= BM_RTE_MSG_MAX). */
bm_status_t bm_rte_proto_hdr_decode(const uint8_t in[16], struct bm_rte_msg_hdr *hdr_out);

/* Bytes one kv entry takes on the wire. */
static inline size_t bm_rte_proto_kv_size(size_t keylen, size_t vallen)
{
    return sizeof(struct bm_rte_msg_kv) + keylen + vallen;
}
/* Write one entry at out (which must hold bm_rte_proto_kv_size bytes); returns bytes written. */
size_t bm_rte_proto_kv_encode(uint8_t *out, uint32_t rank, const char *key, size_t keylen,
                              const void *val, size_t vallen);

/* A decoded entry pointing into the payload. */
struct bm_rte_kv_view {
    uint32_t rank;
    const char *key; /* not NUL-terminated */
    size_t keylen;
    const uint8_t *val;
    size_t vallen;
};
/* Decode the entry at *off in buf[0..len) and advance *off. Returns BM_OK,
 * BM_ERR_NOT_FOUND at the end of the buffer, or BM_ERR_PROTOCOL when the
 * entry is malformed (truncated, empty or too long key). */
bm_status_t bm_rte_proto_kv_next(const uint8_t *buf, size_t len, size_t *off,
                                 struct bm_rte_kv_view *kv_out);

/* Secret as 64 lowercase hex digits plus NUL, and back. */
void bm_rte_proto_secret_to_hex(const uint8_t secret[BM_RTE_SECRET_LEN],
                                char hex[2 * BM_RTE_SECRET_LEN + 1]);
bm_status_t bm_rte_proto_secret_from_hex(const char *hex, uint8_t secret_out[BM_RTE_SECRET_LEN]);
/* Compare secrets in time independent of where they differ. True when equal. */
int bm_rte_proto_secret_equal(const uint8_t *a, const uint8_t *b);

/* Blocking helpers for clients (ranks, daemons). They retry on EINTR and
 * short transfers. recv allocates *payload_out (NUL-terminated for
 * convenience, caller frees) and returns BM_ERR_CONN_RESET on EOF. */
bm_status_t bm_rte_proto_write_full(int fd, const void *buf, size_t len);
bm_status_t bm_rte_proto_read_full(int fd, void *buf, size_t len);
bm_status_t bm_rte_proto_send(int fd, uint16_t type, uint32_t arg, const void *payload, size_t len);
bm_status_t bm_rte_proto_recv(int fd, struct bm_rte_msg_hdr *hdr_out, uint8_t **payload_out);

/* Connect to the first reachable "a.b.c.d:port" of a comma-separated list,
 * trying each with timeout_ms. On success *fd_out is a blocking socket with
 * TCP_NODELAY and CLOEXEC. */
bm_status_t bm_rte_net_connect_list(const char *addrs, int timeout_ms, int *fd_out);

#endif
