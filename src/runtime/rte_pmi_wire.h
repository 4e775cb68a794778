/* The PMI wire protocols, client side, written from the protocol (no PMI
 * library needed): the text protocol that MPICH's hydra (mpiexec.hydra) and
 * Slurm's mpi/pmi2 plugin serve on a socket handed to the process.
 *
 * Connection: PMI_FD names an inherited socket (hydra, srun --mpi=pmi2), or
 * PMI_PORT ("host:port") plus PMI_ID name a server to connect to (hydra
 * -pmi-port); the latter first trades "cmd=initack pmiid=ID" for
 * "cmd=initack", "cmd=set size=N", "cmd=set rank=R", "cmd=set debug=D".
 *
 * Both versions start with the PMI-1 line "cmd=init pmi_version=V
 * pmi_subversion=S\n", answered by "cmd=response_to_init ... rc=0".
 *  - PMI-1 (version 1): one command per line, "cmd=NAME key=value ...\n",
 *    fields separated by spaces; values cannot hold spaces or newlines.
 *    get_maxes, get_my_kvsname, put/get (kvsname, key, value), barrier_in
 *    -> barrier_out, abort exitcode=N (no reply), finalize -> finalize_ack.
 *  - PMI-2 (version 2): each message is a 6-character decimal length
 *    ("%-6d", space padded) followed by "cmd=NAME;key=value;...;" of that
 *    many bytes; ";;" stands for ';' inside a value (Slurm does not decode
 *    it, so callers never send ';'). fullinit (pmirank, pmijobid),
 *    job-getid, info-getjobattr, kvs-put, kvs-fence, kvs-get (jobid,
 *    srcid=-1, key), abort (isworldabort, msg; no reply), finalize.
 * Replies are matched on their field names, never on field order: hydra and
 * Slurm order the fields differently, and Slurm's PMI-1 not-found reply is
 * "cmd=get_result rc=1" with no message.
 *
 * A connection is used by one thread at a time (the backend locks). */
#ifndef BM_RUNTIME_RTE_PMI_WIRE_H
#define BM_RUNTIME_RTE_PMI_WIRE_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>

#define BM_RTE_PMI_MSG_MAX    (64 * 1024) /* longest message either side sends */
#define BM_RTE_PMI_FIELDS_MAX 32          /* fields kept from one reply */
#define BM_RTE_PMI_NAME_MAX   256         /* kvs names and job ids */

/* One parsed message: pointers into the caller's text, which the parser
 * cuts into NUL-terminated pieces. */
struct bm_rte_pmi_msg {
    int nfields;
    const char *key[BM_RTE_PMI_FIELDS_MAX];
    const char *val[BM_RTE_PMI_FIELDS_MAX];
};

/* Parse a PMI-1 line ("cmd=x a=b c=d", without the newline) or a PMI-2
 * body ("cmd=x;a=b;c=d;", without the length). Modifies text. Fields
 * beyond BM_RTE_PMI_FIELDS_MAX are dropped; a piece without '=' is a
 * protocol error. */
bm_status_t bm_rte_pmi_parse(char *text, int version, struct bm_rte_pmi_msg *msg_out);
/* Value of a field, or NULL. */
const char *bm_rte_pmi_field(const struct bm_rte_pmi_msg *m, const char *key);

struct bm_rte_pmi_conn {
    int fd;
    int version;                       /* 1 or 2 */
    int rank, size;                    /* from the server (PMI_PORT, fullinit) or environment */
    int appnum;                        /* program of an MPMD job (Slurm says -1: one program) */
    int keylen_max, vallen_max;        /* limits the server announced (PMI-1) or documented */
    char kvsname[BM_RTE_PMI_NAME_MAX]; /* PMI-1 kvs name / PMI-2 job id */
    char where[BM_RTE_PMI_NAME_MAX];   /* "PMI_FD=6" or "PMI_PORT=host:port", for messages */
    char rbuf[BM_RTE_PMI_MSG_MAX];     /* received bytes not yet consumed */
    char mbuf[BM_RTE_PMI_MSG_MAX];     /* the last reply, cut into fields by the parser */
    char sbuf[BM_RTE_PMI_MSG_MAX];     /* the command being sent */
    size_t rlen;
};

/* Connect (PMI_FD or PMI_PORT/PMI_ID from the environment), do the init
 * handshake of the given version and learn rank, size and the kvs name /
 * job id. Reports what failed. */
bm_status_t bm_rte_pmi_open(struct bm_rte_pmi_conn *c, int version);
/* Publish key=value in the job's key-value space (value: no ' ', ';', '='
 * or newline; at most vallen_max bytes). */
bm_status_t bm_rte_pmi_put(struct bm_rte_pmi_conn *c, const char *key, const char *value);
/* Collective over the job: returns once every process has entered; what
 * was put before is then visible to every get. Under PMI-2 a kvs-fence
 * followed by a kvs-get of a key nobody puts (hydra's kvs-fence does not
 * wait; its gets do). */
bm_status_t bm_rte_pmi_fence(struct bm_rte_pmi_conn *c);
/* Look a key up; BM_ERR_NOT_FOUND when nobody put it. value_out has len bytes. */
bm_status_t bm_rte_pmi_get(struct bm_rte_pmi_conn *c, const char *key, char *value_out, size_t len);
/* A job attribute the launcher publishes (PMI_process_mapping):
 * info-getjobattr on PMI-2, a get in the job's own kvs on PMI-1. */
bm_status_t bm_rte_pmi_job_attr(struct bm_rte_pmi_conn *c, const char *key, char *value_out,
                                size_t len);
/* Ask the launcher to end the whole job (no reply is awaited). */
void bm_rte_pmi_abort(struct bm_rte_pmi_conn *c, int exit_code, const char *message);
/* Say goodbye and close. */
void bm_rte_pmi_close(struct bm_rte_pmi_conn *c);

/* PMI_process_mapping, "(vector,(start,nodes,ranks_per_node),...)": fill
 * node_out[size] with every rank's node index. Blocks are repeated, in
 * order, until every rank has a node (hydra writes one (0,1,1) block for
 * two ranks on one host). BM_ERR_PROTOCOL when the text is not a mapping. */
bm_status_t bm_rte_pmi_parse_mapping(const char *text, int size, int *node_out);

/* Binary values travel as text made of [A-Za-z0-9_-] only (base64url
 * without padding), which neither protocol treats specially. Encoded
 * length of n bytes: */
static inline size_t bm_rte_pmi_encoded_len(size_t n)
{
    return (n / 3) * 4 + (n % 3 ? n % 3 + 1 : 0);
}
/* Write the encoding of data[0..len) and a NUL into out (encoded_len + 1 bytes). */
void bm_rte_pmi_encode(const void *data, size_t len, char *out);
/* Decode text[0..tlen) into out (at least tlen * 3 / 4 bytes); the decoded
 * length in *len_out. BM_ERR_PROTOCOL on a character outside the alphabet
 * or an impossible length. */
bm_status_t bm_rte_pmi_decode(const char *text, size_t tlen, void *out, size_t *len_out);

#endif
