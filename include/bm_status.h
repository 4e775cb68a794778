/* The one status type of bitmover. Every internal function that can fail
 * returns a bm_status_t: BM_OK (0) on success, a negative code otherwise.
 * Codes are grouped by how much is broken, so that callers can decide what to
 * do without knowing every code: generic (-1..-99), link (this transport to
 * this peer is gone: fail over, -100..-199), peer (the process is gone,
 * -200..-299) and fatal (-300..). The names and strings come from the one
 * table below, BM_STATUS_MAP. */
#ifndef BM_STATUS_H
#define BM_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define BM_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(ERROR, -1, "unspecified error")                                                              \
    X(ERR_OUT_OF_RESOURCE, -2, "out of resources (temporary); retry later")                        \
    X(ERR_NOT_AVAILABLE, -3, "not available (a limit was reached or the feature is absent)")       \
    X(ERR_BAD_PARAM, -4, "bad parameter")                                                          \
    X(ERR_NOT_FOUND, -5, "not found")                                                              \
    X(ERR_NOT_SUPPORTED, -6, "operation not supported")                                            \
    X(ERR_TIMEOUT, -7, "timed out")                                                                \
    X(ERR_TRUNCATE, -8, "message truncated: receive buffer too small")                             \
    X(ERR_NO_MEMORY, -9, "out of memory")                                                          \
    X(ERR_SYSTEM, -10, "system call failed")                                                       \
    X(ERR_PROTOCOL, -11, "protocol error (malformed or unexpected message)")                       \
    X(ERR_EXISTS, -12, "already exists")                                                           \
    X(ERR_BUSY, -13, "resource busy")                                                              \
    X(ERR_CANCELED, -14, "operation canceled")                                                     \
    X(ERR_ACCESS, -15, "permission denied")                                                        \
    X(ERR_TYPE_MISMATCH, -16,                                                                      \
      "type mismatch: the message ends partway through a basic element of the receive datatype")   \
    X(ERR_FAULT, -17,                                                                              \
      "buffer not accessible: part of it is not mapped in this process (does the count run past "  \
      "the end of the buffer?)")                                                                   \
    X(ERR_PEER_FAULT, -18,                                                                         \
      "the peer's buffer is not accessible: part of it is not mapped in the peer's process (does " \
      "the peer's count run past the end of its buffer?)")                                         \
    X(ERR_UNREACHABLE, -100, "peer not reachable over this transport")                             \
    X(ERR_LINK_DOWN, -101, "transport link to the peer failed")                                    \
    X(ERR_CONN_REFUSED, -102, "connection refused by the peer")                                    \
    X(ERR_CONN_RESET, -103, "connection reset by the peer")                                        \
    X(ERR_PEER_GONE, -200, "peer process is gone")                                                 \
    X(ERR_FATAL, -300, "fatal error")                                                              \
    X(ERR_ABORTED, -301, "job aborted")

#define BM_STATUS_ENUM_ENTRY(name, value, str) BM_##name = (value),
typedef enum bm_status { BM_STATUS_MAP(BM_STATUS_ENUM_ENTRY) } bm_status_t;
#undef BM_STATUS_ENUM_ENTRY

/* Human-readable text of a status; never NULL. */
const char *bm_status_str(int status);
/* Symbolic name ("BM_ERR_TIMEOUT"); never NULL. */
const char *bm_status_name(int status);

/* True when the error means "this path to this peer is broken" (fail over). */
static inline int bm_status_is_link(int s)
{
    return s <= -100 && s > -200;
}
/* True when the peer process itself is gone. */
static inline int bm_status_is_peer(int s)
{
    return s <= -200 && s > -300;
}
/* True when nothing can continue. */
static inline int bm_status_is_fatal(int s)
{
    return s <= -300;
}

#ifdef __cplusplus
}
#endif
#endif
