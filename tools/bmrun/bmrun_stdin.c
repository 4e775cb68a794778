/* bmrun's stdin, forwarded to one rank (rank 0 unless --stdin none), as
 * Open MPI's mpirun does. bmrun reads its input only while the previous
 * chunk is still on its way: the rank's pipe (local rank) or the daemon's
 * acknowledgement (remote rank) is the flow control, so a rank that does not
 * read its input makes bmrun stop reading, never buffer without bound. At
 * end of input the rank's stdin is closed; once the rank's input is gone
 * (it closed it or exited), bmrun stops reading. The descriptor is never
 * made non-blocking: it may be a terminal shared with the user's shell, and
 * a read after poll() reported it readable does not block. */
#include "bmrun.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#define STDIN_CHUNK 65536

static struct {
    bool active;     /* forwarding: input not at its end, the rank's input open */
    bool registered; /* fd 0 watched by the loop (not while a chunk is in flight) */
    int rank;
    struct bm_run_conn *conn; /* NULL: the rank is on this host */
    char buf[STDIN_CHUNK];
} fwd;

static void stdin_ready(int fd, short revents, void *arg);

/* Not watched while a chunk is in flight: poll reports a hung-up pipe or a
 * closed terminal whatever events are asked for. */
static void stdin_watch(bool on)
{
    if (on && !fwd.registered && fwd.active)
        fwd.registered = bm_run_loop_add(0, POLLIN, stdin_ready, NULL) == BM_OK;
    else if (!on && fwd.registered) {
        bm_run_loop_del(0);
        fwd.registered = false;
    }
}

static void stdin_stop(void)
{
    stdin_watch(false);
    fwd.active = false;
}

static void stdin_resume(void *arg)
{
    (void)arg;
    stdin_watch(true);
}

static void stdin_ready(int fd, short revents, void *arg)
{
    (void)revents;
    (void)arg;
    ssize_t n = read(fd, fwd.buf, sizeof(fwd.buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    size_t len = n > 0 ? (size_t)n : 0; /* 0: end of input (or an error): close */
    stdin_watch(false);                 /* one chunk in flight */
    bm_status_t rc;
    if (fwd.conn)
        rc = bm_run_conn_send(fwd.conn, BM_RTE_MSG_STDIN, (uint32_t)fwd.rank, fwd.buf, len);
    else
        rc = bm_run_local_stdin(fwd.buf, len, stdin_resume, NULL);
    if (rc != BM_OK || len == 0)
        stdin_stop();
}

void bm_run_stdin_start(int rank, struct bm_run_conn *conn)
{
    if (fwd.active)
        return;
    fwd.rank = rank;
    fwd.conn = conn;
    fwd.active = true;
    stdin_watch(true);
}

void bm_run_stdin_acked(bool closed)
{
    if (closed)
        stdin_stop();
    else
        stdin_resume(NULL);
}
