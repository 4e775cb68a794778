/* Wire format of one-sided communication: the active messages that an
 * origin sends to the target-side agent (win_agent.c) and the answers that
 * come back, carried by the PML's active messages (pml.h: in order and
 * exactly once per pair of processes). Every message is one header,
 * followed by data bytes for some types. Fields are in the sender's byte
 * order (every transport connects processes of one architecture); the
 * receiver copies the header out and checks the window, the range and the
 * lengths against what it knows before touching memory.
 *
 * Protocols (origin on the left, target on the right):
 *   put             PUT + data                                   ->
 *   get             GET                                          ->
 *                                        <- ANSWER + data (one or more, by offset)
 *   accumulate      ACC + data                                   ->
 *   get_accumulate  GACC + data (none for MPI_NO_OP)             ->
 *   fetch_and_op    GACC with one element                        <- ANSWER + old data
 *   compare_and_swap CAS + compare + value                       ->
 *                                        <- ANSWER + old value
 *   lock            LOCK (shared or exclusive)                   ->
 *                                        <- ANSWER once granted (queued until then)
 *   unlock          UNLOCK                                       ->
 *                                        <- ANSWER: everything before it was done
 *   flush           FLUSH                                        ->
 *                                        <- ANSWER: everything before it was done
 *   PSCW            <- POST (target opened its exposure epoch to this origin)
 *                   COMPLETE (origin closed its access epoch)   ->
 *   failure at the target (a range outside the window, an unknown window)
 *                                        <- ERROR (reported at the origin's next
 *                                                  synchronisation of that window)
 *   large put (AM path, at least BM_MPI_OSC_RNDV_LIMIT bytes)
 *                   PUT_RNDV, then the data as a PML message    ->
 *                   (the window's context, tag BM_OSC_TAG_PUT; the agent
 *                    receives it straight into the window)
 *                                        <- ANSWER once the data is in
 *   large get       GET_RNDV (the origin posted its receive first) ->
 *                                        <- the data as a PML message (tag
 *                                           BM_OSC_TAG_GET; an empty one when
 *                                           the range is refused)
 *   batch           BATCH + items (bm_osc_batch_item + one message each) ->
 *                   small PUTs and ACCs wait at the origin and travel
 *                   together with the next message to that target (the
 *                   FLUSH, UNLOCK, GET... that needs them done), as Open
 *                   MPI's osc/pt2pt packs its fragments: one transport
 *                   message and one wake-up of the target instead of two.
 * The data of large puts and gets is a PML message (pipelined rendezvous,
 * no copy into control messages); PML messages of one (context, source,
 * tag) match in the order sent, the active messages run in the order sent,
 * and every PUT_RNDV or GET_RNDV goes with exactly one data message, so
 * the n-th announcement takes the n-th data message.
 * Because the PML runs one pair's messages in order, an ANSWER to UNLOCK,
 * FLUSH or the arrival of COMPLETE proves that every operation the origin
 * sent before it was carried out: no per-operation acknowledgement exists.
 * Fence counts instead: operations sent in a fence epoch carry
 * BM_OSC_F_COUNTED, the processes add up how many each target must expect
 * (one reduce-scatter) and each target waits until it ran that many. */
#ifndef BM_MPI_OSC_PROTO_H
#define BM_MPI_OSC_PROTO_H

#include <stdint.h>

enum bm_osc_msg_type {
    BM_OSC_PUT = 1,       /* write len data bytes at addr */
    BM_OSC_GET = 2,       /* read len bytes at addr; answered with the data */
    BM_OSC_ACC = 3,       /* combine len data bytes into addr with op on dtype elements */
    BM_OSC_GACC = 4,      /* the same, answered with the previous contents */
    BM_OSC_CAS = 5,       /* compare (len bytes) then value (len bytes) follow; answered */
    BM_OSC_ANSWER = 6,    /* target -> origin: len data bytes at offset addr of opid's result */
    BM_OSC_LOCK = 7,      /* op = BM_OSC_LOCK_SHARED or _EXCLUSIVE; answered once granted */
    BM_OSC_UNLOCK = 8,    /* release the lock this origin holds; answered */
    BM_OSC_FLUSH = 9,     /* answered once everything before it was carried out */
    BM_OSC_POST = 10,     /* target -> origin: exposure epoch open for this origin */
    BM_OSC_COMPLETE = 11, /* origin -> target: access epoch closed */
    BM_OSC_ERROR = 12,    /* target -> origin: status failed an operation at addr, len */
    BM_OSC_PUT_RNDV = 13, /* len bytes for addr follow as a PML message; answered when in */
    BM_OSC_GET_RNDV = 14, /* send len bytes at addr as a PML message (unanswered) */
    BM_OSC_BATCH = 15,    /* len bytes of items follow (struct bm_osc_batch_item) */
    BM_OSC_MSG_MAX = 16,
};

/* PML tags of the data messages of large puts and gets on the window's
 * context (its private communicator's point-to-point context, which no
 * one else uses). */
#define BM_OSC_TAG_PUT 1
#define BM_OSC_TAG_GET 2

/* flags */
#define BM_OSC_F_COUNTED 0x01u /* sent in a fence epoch: the target counts it */
#define BM_OSC_F_STRIDED                                                                           \
    0x02u /* ACC/GACC: elements lie reserved (int32) bytes apart at the                            \
           * target, not back to back (the data is back to back) */

/* op of LOCK */
#define BM_OSC_LOCK_SHARED    1
#define BM_OSC_LOCK_EXCLUSIVE 2

struct bm_osc_hdr {
    uint8_t type;      /* enum bm_osc_msg_type */
    uint8_t flags;     /* BM_OSC_F_* */
    uint8_t op;        /* ACC/GACC: enum bm_mpi_op_id of a predefined op; LOCK: lock type */
    uint8_t dtype;     /* ACC/GACC/CAS: enum bm_mpi_type_id of the predefined element type */
    int32_t status;    /* ANSWER, ERROR: bm_status_t (BM_OK in a good answer) */
    uint32_t win;      /* the window: its communicator's context id, the same on every member */
    uint32_t reserved; /* zero, except the stride of BM_OSC_F_STRIDED */
    uint64_t opid;     /* the origin's operation an ANSWER names; 0 when none is wanted */
    uint64_t addr;     /* target: byte offset from the window's base (dynamic windows: the
                        * address); ANSWER: byte offset in the operation's result */
    uint64_t len;      /* bytes of target memory (ANSWER: data bytes that follow) */
};
_Static_assert(sizeof(struct bm_osc_hdr) == 40, "one-sided header is 40 bytes");

/* One message inside a BATCH: this, then the message (header and data,
 * bytes in all), then zero padding to a multiple of 8. Only PUT and ACC
 * (no answer, no opid) are batched; the last item may be any message
 * except BATCH. */
struct bm_osc_batch_item {
    uint32_t bytes; /* the message's bytes (header included), padding excluded */
    uint32_t zero;  /* 0 */
};
_Static_assert(sizeof(struct bm_osc_batch_item) == 8, "batch item header is 8 bytes");

#endif
