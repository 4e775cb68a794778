/* Message connections of the bmrun poll loop: non-blocking sockets that
 * assemble incoming rte_proto messages and queue outgoing ones, so that one
 * slow or stalled peer never blocks the controller serving everyone else.
 * Fence replies are the same bytes for every rank; they are queued as a
 * shared, reference-counted buffer instead of one copy per connection.
 * A connection may be closed from inside its own message callback; it is
 * then only marked dead and freed when the callback returns. */
#include "bmrun.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct bm_run_shared {
    int refs;
    size_t len;
    uint8_t data[]; /* header + payload */
};

struct conn_seg {
    struct conn_seg *next;
    struct bm_run_shared *buf;
    size_t off;
};

struct bm_run_conn {
    int fd;
    bm_run_msg_fn on_msg;
    bm_run_close_fn on_close;
    void *arg;
    uint8_t *rx;
    size_t rxlen, rxcap;
    struct conn_seg *txhead, *txtail;
    size_t txbytes; /* queued, not yet written */
    bool close_after_flush;
    uint32_t max_msg; /* longer payloads are a protocol error */
    bool got_data;    /* any byte was ever received */
    int busy;         /* inside a message callback */
    bool dead;        /* closed while busy: free when the callback returns */
};

static void conn_ready(int fd, short revents, void *arg);

struct bm_run_shared *bm_run_shared_new(const void *data, size_t len, uint16_t type, uint32_t arg)
{
    struct bm_run_shared *s = malloc(sizeof(*s) + 16 + len);
    if (!s)
        return NULL;
    s->refs = 1;
    s->len = 16 + len;
    bm_rte_proto_hdr_encode(s->data, type, (uint32_t)len, arg);
    if (len)
        memcpy(s->data + 16, data, len);
    return s;
}

void bm_run_shared_release(struct bm_run_shared *s)
{
    if (s && --s->refs == 0)
        free(s);
}

struct bm_run_conn *bm_run_conn_new(int fd, bm_run_msg_fn on_msg, bm_run_close_fn on_close,
                                    void *arg)
{
    struct bm_run_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->on_msg = on_msg;
    c->on_close = on_close;
    c->arg = arg;
    c->max_msg = BM_RTE_MSG_MAX;
    if (bm_run_loop_add(fd, POLLIN, conn_ready, c) != BM_OK) {
        free(c);
        return NULL;
    }
    return c;
}

void *bm_run_conn_arg(const struct bm_run_conn *c)
{
    return c->arg;
}

void bm_run_conn_set_arg(struct bm_run_conn *c, void *arg)
{
    c->arg = arg;
}

void bm_run_conn_set_handlers(struct bm_run_conn *c, bm_run_msg_fn on_msg, bm_run_close_fn on_close)
{
    c->on_msg = on_msg;
    c->on_close = on_close;
}

size_t bm_run_conn_queued(const struct bm_run_conn *c)
{
    return c->txbytes;
}

bool bm_run_conn_got_data(const struct bm_run_conn *c)
{
    return c->got_data;
}

void bm_run_conn_set_max(struct bm_run_conn *c, uint32_t max_msg)
{
    c->max_msg = max_msg;
}

int bm_run_conn_fd(const struct bm_run_conn *c)
{
    return c->fd;
}

static void conn_free(struct bm_run_conn *c)
{
    if (c->fd >= 0) {
        bm_run_loop_del(c->fd);
        close(c->fd);
        c->fd = -1;
    }
    if (c->busy) {
        c->dead = true;
        return;
    }
    while (c->txhead) {
        struct conn_seg *n = c->txhead->next;
        bm_run_shared_release(c->txhead->buf);
        free(c->txhead);
        c->txhead = n;
    }
    free(c->rx);
    free(c);
}

void bm_run_conn_close(struct bm_run_conn *c)
{
    if (c && c->fd >= 0)
        conn_free(c);
}

/* The peer went away or broke the protocol: tell the owner, then free. */
static void conn_lost(struct bm_run_conn *c)
{
    if (c->fd < 0)
        return;
    bm_run_close_fn fn = c->on_close;
    c->on_close = NULL;
    if (fn) {
        c->busy++;
        fn(c);
        c->busy--;
    }
    conn_free(c);
}

/* Returns false when the connection is gone. */
static bool conn_write(struct bm_run_conn *c)
{
    while (c->txhead) {
        struct conn_seg *s = c->txhead;
        ssize_t n = send(c->fd, s->buf->data + s->off, s->buf->len - s->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            conn_lost(c);
            return false;
        }
        s->off += (size_t)n;
        c->txbytes -= (size_t)n;
        if (s->off == s->buf->len) {
            c->txhead = s->next;
            if (!c->txhead)
                c->txtail = NULL;
            bm_run_shared_release(s->buf);
            free(s);
        }
    }
    if (!c->txhead && c->close_after_flush) {
        conn_free(c);
        return false;
    }
    bm_run_loop_set_events(c->fd, (short)(POLLIN | (c->txhead ? POLLOUT : 0)));
    return true;
}

bm_status_t bm_run_conn_send_shared(struct bm_run_conn *c, struct bm_run_shared *s)
{
    if (c->fd < 0)
        return BM_ERR_CONN_RESET;
    struct conn_seg *seg = calloc(1, sizeof(*seg));
    if (!seg)
        return BM_ERR_NO_MEMORY;
    s->refs++;
    seg->buf = s;
    c->txbytes += s->len;
    if (c->txtail)
        c->txtail->next = seg;
    else
        c->txhead = seg;
    c->txtail = seg;
    return conn_write(c) || c->dead ? BM_OK : BM_ERR_CONN_RESET;
}

bm_status_t bm_run_conn_send(struct bm_run_conn *c, uint16_t type, uint32_t arg,
                             const void *payload, size_t len)
{
    struct bm_run_shared *s = bm_run_shared_new(payload, len, type, arg);
    if (!s)
        return BM_ERR_NO_MEMORY;
    bm_status_t rc = bm_run_conn_send_shared(c, s);
    bm_run_shared_release(s);
    return rc;
}

void bm_run_conn_close_after_flush(struct bm_run_conn *c)
{
    if (c->fd < 0)
        return;
    c->close_after_flush = true;
    if (!c->txhead)
        conn_free(c);
}

void bm_run_conn_flush(struct bm_run_conn *c, int timeout_ms)
{
    double end = bm_run_now() + timeout_ms / 1000.0;
    while (c->fd >= 0 && c->txhead && bm_run_now() < end) {
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (poll(&p, 1, 50) > 0 && !conn_write(c))
            return;
    }
}

static void conn_dispatch(struct bm_run_conn *c)
{
    size_t off = 0;
    c->busy++;
    while (!c->dead && c->fd >= 0 && c->rxlen - off >= 16) {
        struct bm_rte_msg_hdr h;
        if (bm_rte_proto_hdr_decode(c->rx + off, &h) != BM_OK || h.len > c->max_msg) {
            c->busy--;
            conn_lost(c);
            return;
        }
        if (c->rxlen - off - 16 < h.len)
            break;
        /* The payload stays in rx during the callback: nothing reads into
         * rx until dispatch returns. */
        c->on_msg(c, &h, c->rx + off + 16);
        off += 16 + h.len;
    }
    c->busy--;
    if (c->dead) {
        conn_free(c);
        return;
    }
    memmove(c->rx, c->rx + off, c->rxlen - off);
    c->rxlen -= off;
}

static void conn_ready(int fd, short revents, void *arg)
{
    struct bm_run_conn *c = arg;
    (void)fd;
    if ((revents & POLLOUT) && !conn_write(c))
        return;
    if (!(revents & (POLLIN | POLLHUP | POLLERR)))
        return;
    if (c->rxcap - c->rxlen < 65536) {
        size_t cap = c->rxcap ? c->rxcap * 2 : 65536;
        while (cap - c->rxlen < 65536)
            cap *= 2;
        uint8_t *n = realloc(c->rx, cap);
        if (!n) {
            conn_lost(c);
            return;
        }
        c->rx = n;
        c->rxcap = cap;
    }
    ssize_t n = read(c->fd, c->rx + c->rxlen, c->rxcap - c->rxlen);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        conn_lost(c);
        return;
    }
    if (n > 0) {
        c->got_data = true;
        c->rxlen += (size_t)n;
        conn_dispatch(c);
    }
}
