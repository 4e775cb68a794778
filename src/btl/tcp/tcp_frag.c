/* Fragments of the tcp transport: send descriptors (alloc, prepare_src,
 * send, free), the scatter-gather write of queued frames, their completion
 * when acknowledged, and the ACK and FIN frames (the receive side, the
 * stream parser, is in tcp_conn.c). Data larger than
 * the eager limit is never copied on the send side: prepare_src
 * points the descriptor's second segment at the caller's memory and sendmsg
 * gathers header, caller header and data in one call. A send completes only
 * when the peer acknowledges its frame (the ack field of any frame coming
 * back, or a standalone ACK sent at the end of the peer's progress), so the
 * contract "never report success for data that may not have arrived" holds
 * even when a connection breaks with data still in the kernel's buffers. */
#define BM_LOG_SUBSYS "btl/tcp"
#include "btl/tcp/tcp.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Most pieces one sendmsg gathers (frames, headers, prepare_src_iov pieces). */
#define TCP_IOV_MAX 256

/* ---- allocation -------------------------------------------------------------- */

static struct bm_btl_tcp_component *tcp_comp(struct bm_btl_module *m)
{
    return ((struct bm_btl_tcp_module *)m)->comp;
}

/* Pooled buffers hold an eager frame and a little more: the PML sends a
 * message just over the eager limit whole in its RNDV (pml/send.c, at most
 * 1/16 of the limit more), which would otherwise take a fresh allocation
 * per message (measured: 16 x 64 KiB vectors per window, each RNDV's
 * buffer malloc'd and freed, 100k page faults a run as glibc gave the
 * memory back, windowed bandwidth 3000 -> 1900 MB/s). */
static size_t tcp_pool_cap(const struct bm_btl_tcp_component *c)
{
    return c->cfg.eager_limit + c->cfg.eager_limit / 16;
}

/* Frames larger than a pooled buffer, up to twice its size: the PML's
 * packed FRAGs of non-contiguous messages (BM_PML_PACK_FRAG_SIZE, 128 KiB
 * with the header, the last one of a message up to 1/16 more). Each took
 * a fresh malloc, which glibc served from mmap or from a heap it trimmed
 * again at the free: bm_dtype -k vec64 -m 1m:1m -i 2000, 128 KiB FRAGs,
 * 100340 page faults on the sender (17361 with 64 KiB pooled ones). Kept
 * in a second list of at most TCP_POOL_BIG_MAX (17 MiB): a window of 16
 * non-blocking sends has up to 8 FRAGs each in flight
 * (BM_PML_PIPELINE_DEPTH); with 16 kept the sender still took 57995
 * faults, with 128 17531. Under MPI_THREAD_MULTIPLE each endpoint keeps
 * TCP_EP_POOL_BIG_MAX of them (as many bytes as its eager ones). */
#define TCP_POOL_BIG_MAX 128
static size_t tcp_pool_big_cap(const struct bm_btl_tcp_component *c)
{
    return 2 * tcp_pool_cap(c);
}

/* Under MPI_THREAD_MULTIPLE each endpoint keeps its own free fragments,
 * under its send lock (threads sending to different peers share no pool),
 * at most this many (the component's pool holds up to 1024). */
#define TCP_EP_POOL_MAX     64
#define TCP_EP_POOL_BIG_MAX 32

/* Under MPI_THREAD_MULTIPLE: a fragment from the endpoint's own pool (or
 * a new one), remembering the endpoint for tcp_frag_put. */
static __attribute__((noinline)) struct bm_btl_tcp_frag *
tcp_frag_get_mt(struct bm_btl_tcp_component *c, struct bm_btl_tcp_endpoint *ep, size_t cap)
{
    struct bm_btl_tcp_frag *f = NULL;
    bool pooled = cap <= tcp_pool_cap(c);
    bool big = !pooled && cap <= tcp_pool_big_cap(c);
    if ((pooled || big) && ep) {
        bm_util_lock_take(&ep->lock);
        struct bm_btl_tcp_frag **pool = pooled ? &ep->pool : &ep->pool_big;
        f = *pool;
        if (f) {
            *pool = f->pool_next;
            --*(pooled ? &ep->pool_count : &ep->pool_big_count);
        }
        bm_util_lock_give(&ep->lock);
    }
    if (pooled || big)
        cap = pooled ? tcp_pool_cap(c) : tcp_pool_big_cap(c);
    if (!f)
        f = malloc(sizeof(*f) + cap);
    if (!f)
        return NULL;
    memset(f, 0, sizeof(*f));
    f->cap = cap;
    f->flags = pooled ? BM_BTL_TCP_FRAG_F_POOLED : big ? BM_BTL_TCP_FRAG_F_BIG : 0;
    f->ep = ep;
    return f;
}

/* A fragment of cap bytes from a single-threaded pool, or a new one. */
static inline __attribute__((always_inline)) struct bm_btl_tcp_frag *
tcp_pool_take(struct bm_btl_tcp_frag **pool, int *count, size_t cap, uint32_t flags)
{
    struct bm_btl_tcp_frag *f = *pool;
    if (f) {
        *pool = f->pool_next;
        (*count)--;
    } else {
        f = malloc(sizeof(*f) + cap);
        if (!f)
            return NULL;
    }
    memset(f, 0, sizeof(*f));
    f->cap = cap;
    f->flags = flags;
    return f;
}

/* mt is a constant at every call: the single-threaded operations
 * (bm_btl_tcp_ops) check no flag, the MPI_THREAD_MULTIPLE ones
 * (bm_btl_tcp_ops_mt, btl.h "mt_ops") take the endpoint's pool. */
static inline __attribute__((always_inline)) struct bm_btl_tcp_frag *
tcp_frag_get(struct bm_btl_tcp_component *c, struct bm_btl_tcp_endpoint *ep, size_t cap, bool mt)
{
    if (mt)
        return tcp_frag_get_mt(c, ep, cap);
    if (cap <= tcp_pool_cap(c))
        return tcp_pool_take(&c->pool, &c->pool_count, tcp_pool_cap(c), BM_BTL_TCP_FRAG_F_POOLED);
    if (cap <= tcp_pool_big_cap(c))
        return tcp_pool_take(&c->pool_big, &c->pool_big_count, tcp_pool_big_cap(c),
                             BM_BTL_TCP_FRAG_F_BIG);
    struct bm_btl_tcp_frag *f = malloc(sizeof(*f) + cap);
    if (!f)
        return NULL;
    memset(f, 0, sizeof(*f));
    f->cap = cap;
    return f;
}

static inline __attribute__((always_inline)) void tcp_frag_put(struct bm_btl_tcp_component *c,
                                                               struct bm_btl_tcp_frag *f, bool mt)
{
    f->xv = NULL;
    f->nxv = 0;
    f->xlen = 0;
    if (mt) {
        struct bm_btl_tcp_endpoint *ep = f->ep;
        if (ep && (f->flags & (BM_BTL_TCP_FRAG_F_POOLED | BM_BTL_TCP_FRAG_F_BIG))) {
            bool big = (f->flags & BM_BTL_TCP_FRAG_F_BIG) != 0;
            bm_util_lock_take(&ep->lock);
            int *count = big ? &ep->pool_big_count : &ep->pool_count;
            bool keep = *count < (big ? TCP_EP_POOL_BIG_MAX : TCP_EP_POOL_MAX);
            if (keep) {
                struct bm_btl_tcp_frag **pool = big ? &ep->pool_big : &ep->pool;
                f->pool_next = *pool;
                *pool = f;
                ++*count;
            }
            bm_util_lock_give(&ep->lock);
            if (keep)
                return;
        }
        free(f);
        return;
    }
    if ((f->flags & BM_BTL_TCP_FRAG_F_POOLED) && c->pool_count < 1024) {
        f->pool_next = c->pool;
        c->pool = f;
        c->pool_count++;
        return;
    }
    if ((f->flags & BM_BTL_TCP_FRAG_F_BIG) && c->pool_big_count < TCP_POOL_BIG_MAX) {
        f->pool_next = c->pool_big;
        c->pool_big = f;
        c->pool_big_count++;
        return;
    }
    free(f);
}

static void tcp_pool_free(struct bm_btl_tcp_frag **pool, int *count)
{
    while (*pool) {
        struct bm_btl_tcp_frag *f = *pool;
        *pool = f->pool_next;
        free(f);
    }
    *count = 0;
}

void bm_btl_tcp_frag_pool_release_ep(struct bm_btl_tcp_endpoint *ep)
{
    tcp_pool_free(&ep->pool, &ep->pool_count);
    tcp_pool_free(&ep->pool_big, &ep->pool_big_count);
}

void bm_btl_tcp_frag_pool_release(struct bm_btl_tcp_component *c)
{
    tcp_pool_free(&c->pool, &c->pool_count);
    tcp_pool_free(&c->pool_big, &c->pool_big_count);
}

struct bm_btl_tcp_frag *bm_btl_tcp_frag_new_ctl(void)
{
    struct bm_btl_tcp_frag *f = calloc(1, sizeof(*f));
    if (f) {
        f->flags = BM_BTL_TCP_FRAG_F_INTERNAL;
        f->total = sizeof(struct bm_btl_tcp_hdr);
    }
    return f;
}

static inline __attribute__((always_inline)) struct bm_btl_descriptor *
tcp_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep, uint8_t order, size_t size,
          uint32_t flags, bool mt)
{
    if (size > m->max_send_size)
        return NULL;
    struct bm_btl_tcp_frag *f =
        tcp_frag_get(tcp_comp(m), (struct bm_btl_tcp_endpoint *)ep, size, mt);
    if (!f)
        return NULL;
    f->des.seg[0].addr = f->data;
    f->des.seg[0].len = size;
    f->des.seg_count = 1;
    f->des.flags = flags;
    f->des.order = order;
    f->des.module = m;
    return &f->des;
}

struct bm_btl_descriptor *bm_btl_tcp_alloc(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                           uint8_t order, size_t size, uint32_t flags)
{
    return tcp_alloc(m, ep, order, size, flags, false);
}

struct bm_btl_descriptor *bm_btl_tcp_alloc_mt(struct bm_btl_module *m, struct bm_btl_endpoint *ep,
                                              uint8_t order, size_t size, uint32_t flags)
{
    return tcp_alloc(m, ep, order, size, flags, true);
}

void bm_btl_tcp_free(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    tcp_frag_put(tcp_comp(m), (struct bm_btl_tcp_frag *)des, false);
}

void bm_btl_tcp_free_mt(struct bm_btl_module *m, struct bm_btl_descriptor *des)
{
    tcp_frag_put(tcp_comp(m), (struct bm_btl_tcp_frag *)des, true);
}

static inline __attribute__((always_inline)) struct bm_btl_descriptor *
tcp_prepare_src(struct bm_btl_module *m, struct bm_btl_endpoint *ep, const void *data,
                size_t reserve, size_t *size, uint8_t order, uint32_t flags, bool mt)
{
    size_t room = m->max_send_size > reserve ? m->max_send_size - reserve : 0;
    size_t n = *size < room ? *size : room;
    /* Anything that fits an eager frame is copied: the PML may then complete
     * an eager send at once (MPI's local completion) while the transport
     * keeps the copy until the peer acknowledges it. Larger data (rendezvous
     * fragments, which wait for the receiver anyway) is sent in place. */
    bool inplace = reserve + n > m->eager_limit;
    struct bm_btl_tcp_frag *f = tcp_frag_get(tcp_comp(m), (struct bm_btl_tcp_endpoint *)ep,
                                             inplace ? reserve : reserve + n, mt);
    if (!f)
        return NULL;
    f->des.seg[0].addr = f->data;
    if (inplace) {
        f->des.seg[0].len = reserve;
        f->des.seg[1].addr = (void *)(uintptr_t)data;
        f->des.seg[1].len = n;
        f->des.seg_count = 2;
    } else {
        if (n)
            memcpy(f->data + reserve, data, n);
        f->des.seg[0].len = reserve + n;
        f->des.seg_count = 1;
    }
    f->des.flags = flags;
    f->des.order = order;
    f->des.module = m;
    *size = n;
    return &f->des;
}

struct bm_btl_descriptor *bm_btl_tcp_prepare_src(struct bm_btl_module *m,
                                                 struct bm_btl_endpoint *ep, const void *data,
                                                 size_t reserve, size_t *size, uint8_t order,
                                                 uint32_t flags)
{
    return tcp_prepare_src(m, ep, data, reserve, size, order, flags, false);
}

struct bm_btl_descriptor *bm_btl_tcp_prepare_src_mt(struct bm_btl_module *m,
                                                    struct bm_btl_endpoint *ep, const void *data,
                                                    size_t reserve, size_t *size, uint8_t order,
                                                    uint32_t flags)
{
    return tcp_prepare_src(m, ep, data, reserve, size, order, flags, true);
}

static inline __attribute__((always_inline)) struct bm_btl_descriptor *
tcp_prepare_src_iov(struct bm_btl_module *m, struct bm_btl_endpoint *ep, size_t reserve,
                    const struct bm_btl_iov *pieces, uint32_t n, uint32_t flags, bool mt)
{
    size_t total = reserve;
    for (uint32_t i = 0; i < n; i++)
        total += pieces[i].len;
    if (n == 0 || n > BM_BTL_IOV_MAX || total > m->max_send_size)
        return NULL;
    /* The piece list lives in the buffer after the header: a pooled one
     * (the default 64 KiB eager limit) holds 4000 pieces; a longer list
     * gets a buffer of its own. */
    size_t at = (reserve + 15) & ~(size_t)15;
    struct bm_btl_tcp_frag *f = tcp_frag_get(tcp_comp(m), (struct bm_btl_tcp_endpoint *)ep,
                                             at + n * sizeof(struct iovec), mt);
    if (!f)
        return NULL;
    f->xv = (struct iovec *)(void *)(f->data + at);
    for (uint32_t i = 0; i < n; i++)
        f->xv[i] = (struct iovec){(void *)(uintptr_t)pieces[i].addr, pieces[i].len};
    f->nxv = n;
    f->xlen = total - reserve;
    f->des.seg[0].addr = f->data;
    f->des.seg[0].len = reserve;
    f->des.seg_count = 1;
    f->des.flags = flags;
    f->des.order = 0;
    f->des.module = m;
    return &f->des;
}

struct bm_btl_descriptor *bm_btl_tcp_prepare_src_iov(struct bm_btl_module *m,
                                                     struct bm_btl_endpoint *ep, size_t reserve,
                                                     const struct bm_btl_iov *pieces, uint32_t n,
                                                     uint32_t flags)
{
    return tcp_prepare_src_iov(m, ep, reserve, pieces, n, flags, false);
}

struct bm_btl_descriptor *bm_btl_tcp_prepare_src_iov_mt(struct bm_btl_module *m,
                                                        struct bm_btl_endpoint *ep, size_t reserve,
                                                        const struct bm_btl_iov *pieces, uint32_t n,
                                                        uint32_t flags)
{
    return tcp_prepare_src_iov(m, ep, reserve, pieces, n, flags, true);
}

/* ---- completion ----------------------------------------------------------------- */

static void tcp_frag_complete(struct bm_btl_tcp_frag *f, int status)
{
    f->flags &= ~BM_BTL_TCP_FRAG_F_QUEUED;
    if (f->flags & BM_BTL_TCP_FRAG_F_INTERNAL) {
        if (f->flags & BM_BTL_TCP_FRAG_F_FREE)
            free(f);
        return;
    }
    struct bm_btl_descriptor *des = &f->des;
    bool owned = (des->flags & BM_BTL_DES_F_BTL_OWNED) != 0;
    struct bm_btl_tcp_component *comp = tcp_comp(des->module);
    comp->completions++;
    if (des->cbfunc)
        des->cbfunc(des->module, (struct bm_btl_endpoint *)f->ep, des, status);
    if (owned) {
        if (__builtin_expect(comp->mt, 0))
            tcp_frag_put(comp, f, true);
        else
            tcp_frag_put(comp, f, false);
    }
}

/* Complete every fragment of q with status (no lock held: the callbacks
 * may send). */
static void tcp_frag_complete_queue(struct bm_util_queue *q, int status)
{
    struct bm_util_queue_node *n;
    while ((n = bm_util_queue_pop(q)) != NULL)
        tcp_frag_complete(bm_util_container_of(n, struct bm_btl_tcp_frag, qnode), status);
}

void bm_btl_tcp_frag_fail_all(struct bm_btl_tcp_conn *c, int status)
{
    if (__builtin_expect(c->comp->mt, 0) && c->ep) {
        /* Off the queues under the endpoint's lock, completed after it. */
        struct bm_util_queue q;
        bm_util_queue_init(&q);
        bm_btl_tcp_ep_lock(c->ep);
        struct bm_util_queue_node *n;
        while ((n = bm_util_queue_pop(&c->sendq)) != NULL)
            bm_util_queue_push(&q, n);
        while ((n = bm_util_queue_pop(&c->ackq)) != NULL)
            bm_util_queue_push(&q, n);
        c->queued_bytes = 0;
        bm_btl_tcp_ep_unlock(c->ep);
        tcp_frag_complete_queue(&q, status);
        return;
    }
    tcp_frag_complete_queue(&c->sendq, status);
    tcp_frag_complete_queue(&c->ackq, status);
    c->queued_bytes = 0;
}

/* The oldest fragment of ackq when the peer acknowledged it (taken off). */
static inline struct bm_btl_tcp_frag *tcp_ackq_pop_acked(struct bm_btl_tcp_conn *c, uint32_t ack)
{
    struct bm_util_queue_node *n = bm_util_queue_peek(&c->ackq);
    if (!n)
        return NULL;
    struct bm_btl_tcp_frag *f = bm_util_container_of(n, struct bm_btl_tcp_frag, qnode);
    if ((int32_t)(ack - f->seq) <= 0)
        return NULL;
    bm_util_queue_pop(&c->ackq);
    return f;
}

/* Under MPI_THREAD_MULTIPLE: senders push onto ackq under the endpoint's
 * lock; the acknowledged fragments leave it under that lock and complete
 * after it is given back (their callbacks may send to this peer). */
static __attribute__((noinline)) void tcp_frag_acked_mt(struct bm_btl_tcp_conn *c, uint32_t ack)
{
    struct bm_util_queue q;
    bm_util_queue_init(&q);
    bm_util_lock_take(&c->ep->lock);
    struct bm_btl_tcp_frag *f;
    while ((f = tcp_ackq_pop_acked(c, ack)) != NULL)
        bm_util_queue_push(&q, &f->qnode);
    bm_util_lock_give(&c->ep->lock);
    tcp_frag_complete_queue(&q, BM_OK);
}

/* The peer has received every DATA frame numbered below ack. */
void bm_btl_tcp_frag_acked(struct bm_btl_tcp_conn *c, uint32_t ack)
{
    if (__builtin_expect(c->comp->mt, 0)) {
        tcp_frag_acked_mt(c, ack);
        return;
    }
    struct bm_btl_tcp_frag *f;
    while ((f = tcp_ackq_pop_acked(c, ack)) != NULL)
        tcp_frag_complete(f, BM_OK);
}

/* ---- sending ----------------------------------------------------------------------- */

static void tcp_conn_mark_dead(struct bm_btl_tcp_conn *c, int err)
{
    struct bm_btl_tcp_component *comp = c->comp;
    if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
        return;
    /* The caller holds the endpoint's lock (MT): no sender writes on it
     * again until progress has replaced the connection. */
    if (c->ep)
        c->ep->fast = false;
    __atomic_store_n(&c->dead, true, __ATOMIC_RELAXED);
    c->err = err;
    struct bm_btl_tcp_conn *head = atomic_load_explicit(&comp->dead_list, memory_order_relaxed);
    do
        c->dead_next = head;
    while (!atomic_compare_exchange_weak_explicit(&comp->dead_list, &head, c, memory_order_release,
                                                  memory_order_relaxed));
    /* Nothing more goes out on it; progress reports it. */
    bm_btl_tcp_conn_want_write(c, false);
}

/* Relaxed atomic accesses where a sending thread meets progress's
 * receiving side (sender), plain ones otherwise: the fields are the same. */
#define TCP_LOAD(sender, x) ((sender) ? __atomic_load_n(&(x), __ATOMIC_RELAXED) : (x))
#define TCP_STORE(sender, x, v)                                                                    \
    do {                                                                                           \
        if (sender)                                                                                \
            __atomic_store_n(&(x), (v), __ATOMIC_RELAXED);                                         \
        else                                                                                       \
            (x) = (v);                                                                             \
    } while (0)

/* sender: a thread other than progress's under MPI_THREAD_MULTIPLE (with
 * the endpoint's lock), which reads what the receiving side writes
 * without that lock (rx_count, ack_urgent, dead) as relaxed atomics.
 * Progress, and every caller of a single-threaded process, is the writer
 * of those or holds the endpoint's lock that orders it after the senders'
 * writes: plain accesses (bm_btl_tcp_frag_flush, no thread check). */
static inline __attribute__((always_inline)) bool tcp_flush(struct bm_btl_tcp_conn *c, bool sender)
{
    bool dead = TCP_LOAD(sender, c->dead);
    if (dead || c->fd < 0 || c->state != BM_BTL_TCP_CONN_CONNECTED)
        return !dead;
    /* a sender reads the count once, for every frame this call numbers */
    uint32_t rx = sender ? __atomic_load_n(&c->rx_count, __ATOMIC_RELAXED) : 0;
    while (!bm_util_queue_empty(&c->sendq)) {
        struct iovec iov[TCP_IOV_MAX];
        int niov = 0;
        for (struct bm_util_queue_node *n = bm_util_queue_peek(&c->sendq);
             n && niov + 1 + BM_BTL_DES_MAX_SEGS <= TCP_IOV_MAX; n = n->next) {
            /* A frame whose pieces do not all fit goes in part (the byte
             * count below handles it); nothing after it then. */
            struct bm_btl_tcp_frag *f = bm_util_container_of(n, struct bm_btl_tcp_frag, qnode);
            if (f->sent == 0) { /* the frame carries the count: no standalone ACK owed for it */
                f->hdr.ack = htonl(sender ? rx : c->rx_count);
                c->ack_sent = sender ? rx : c->rx_count;
                TCP_STORE(sender, c->ack_urgent, false);
                c->ack_age = 0;
            }
            size_t skip = f->sent;
            const char *hp = (const char *)&f->hdr;
            if (skip < sizeof(f->hdr)) {
                iov[niov++] = (struct iovec){(void *)(hp + skip), sizeof(f->hdr) - skip};
                skip = 0;
            } else {
                skip -= sizeof(f->hdr);
            }
            if (f->flags & BM_BTL_TCP_FRAG_F_INTERNAL)
                continue;
            for (uint32_t s = 0; s < f->des.seg_count; s++) {
                size_t len = f->des.seg[s].len;
                if (skip >= len) {
                    skip -= len;
                    continue;
                }
                iov[niov++] = (struct iovec){(char *)f->des.seg[s].addr + skip, len - skip};
                skip = 0;
            }
            uint32_t x = 0;
            for (; x < f->nxv && niov < TCP_IOV_MAX; x++) {
                size_t len = f->xv[x].iov_len;
                if (skip >= len) {
                    skip -= len;
                    continue;
                }
                iov[niov++] = (struct iovec){(char *)f->xv[x].iov_base + skip, len - skip};
                skip = 0;
            }
            if (x < f->nxv)
                break;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                bm_btl_tcp_conn_want_write(c, true);
                return true;
            }
            tcp_conn_mark_dead(c, errno);
            return false;
        }
        size_t left = (size_t)w;
        while (left > 0) {
            struct bm_btl_tcp_frag *f =
                bm_util_container_of(bm_util_queue_peek(&c->sendq), struct bm_btl_tcp_frag, qnode);
            size_t need = f->total - f->sent;
            if (left < need) {
                f->sent += left;
                break;
            }
            left -= need;
            f->sent = f->total;
            bm_util_queue_pop(&c->sendq);
            c->queued_bytes -= f->total;
            if (f->flags & BM_BTL_TCP_FRAG_F_INTERNAL)
                tcp_frag_complete(f, BM_OK); /* ACK/FIN frames need no acknowledgement */
            else
                bm_util_queue_push(&c->ackq, &f->qnode);
        }
    }
    bm_btl_tcp_conn_want_write(c, false);
    return true;
}

bool bm_btl_tcp_frag_flush(struct bm_btl_tcp_conn *c)
{
    return tcp_flush(c, false);
}

/* A sending thread's flush under MPI_THREAD_MULTIPLE (tcp_send_mt). */
static __attribute__((noinline)) bool tcp_frag_flush_sender(struct bm_btl_tcp_conn *c)
{
    return tcp_flush(c, true);
}

static inline __attribute__((always_inline)) struct bm_btl_tcp_conn *
tcp_pick_link(struct bm_btl_tcp_endpoint *ep)
{
    if (ep->nlinks == 1)
        return &ep->links[0];
    struct bm_btl_tcp_conn *best = NULL;
    for (int i = 0; i < ep->nlinks; i++) {
        struct bm_btl_tcp_conn *c = &ep->links[i];
        if (c->state == BM_BTL_TCP_CONN_CONNECTED &&
            (!best || c->queued_bytes < best->queued_bytes))
            best = c;
    }
    if (best && best->queued_bytes == 0)
        return best;
    /* Rotate so that every link gets traffic (and gets connected). */
    struct bm_btl_tcp_conn *c = &ep->links[ep->rr++ % (uint32_t)ep->nlinks];
    if (c->state == BM_BTL_TCP_CONN_CONNECTED || !best)
        return c;
    return best;
}

/* Number f as the next frame of a link of ep and queue it there (under
 * the endpoint's lock with MPI_THREAD_MULTIPLE). *was_empty: the link had
 * nothing queued before. */
static inline __attribute__((always_inline)) struct bm_btl_tcp_conn *
tcp_send_queue(struct bm_btl_tcp_endpoint *ep, struct bm_btl_tcp_frag *f, bm_btl_tag_t tag,
               size_t payload, bool *was_empty)
{
    struct bm_btl_tcp_conn *c = tcp_pick_link(ep);
    f->ep = ep;
    f->seq = c->tx_seq++;
    f->hdr.len = htonl((uint32_t)payload);
    f->hdr.type = BM_BTL_TCP_FRAME_DATA;
    f->hdr.tag = tag;
    f->hdr.flags = htons(f->des.seg_count > 1 || f->nxv ? BM_BTL_TCP_HDR_F_ACK_NOW : 0);
    f->hdr.seq = htonl(f->seq);
    f->total = sizeof(f->hdr) + payload;
    f->sent = 0;
    f->flags |= BM_BTL_TCP_FRAG_F_QUEUED;
    *was_empty = bm_util_queue_empty(&c->sendq);
    bm_util_queue_push(&c->sendq, &f->qnode);
    c->queued_bytes += f->total;
    return c;
}

/* send under MPI_THREAD_MULTIPLE (README "Threads"). While every link of
 * the endpoint is connected (ep->fast) a sender takes the endpoint's lock
 * and nothing else: threads sending to different peers do not meet. The
 * rest (a link to connect, a failed endpoint) runs under the component's
 * lock too, as progress does, and calls nothing back. */
static inline __attribute__((always_inline)) int tcp_send_mt(struct bm_btl_tcp_endpoint *ep,
                                                             struct bm_btl_tcp_frag *f,
                                                             bm_btl_tag_t tag, size_t payload)
{
    bool was_empty;
    bm_util_lock_take(&ep->lock);
    if (__builtin_expect(ep->fast, 1)) {
        struct bm_btl_tcp_conn *c = tcp_send_queue(ep, f, tag, payload, &was_empty);
        if (was_empty)
            tcp_frag_flush_sender(c); /* a failure is reported by the next progress */
        bm_util_lock_give(&ep->lock);
        return BM_OK;
    }
    bm_util_lock_give(&ep->lock);
    struct bm_btl_tcp_component *comp = ep->module->comp;
    bm_util_lock_take(&comp->lock);
    int rc = BM_OK;
    if (ep->failed) {
        rc = ep->fail_status;
    } else {
        bm_util_lock_take(&ep->lock);
        struct bm_btl_tcp_conn *c = tcp_send_queue(ep, f, tag, payload, &was_empty);
        if (c->state == BM_BTL_TCP_CONN_CONNECTED && was_empty)
            tcp_frag_flush_sender(c);
        bm_util_lock_give(&ep->lock);
        /* Connecting may fail the endpoint at once, and failing completes
         * its fragments: with callbacks the PML runs only in its drainer.
         * So progress connects (next pass; wait_arm reports the work). */
        if (c->state == BM_BTL_TCP_CONN_IDLE && !ep->connect_pending) {
            ep->connect_pending = true;
            comp->nconnect++;
        }
    }
    bm_util_lock_give(&comp->lock);
    return rc;
}

/* The payload bytes of f (header not included). */
static inline size_t tcp_send_payload(const struct bm_btl_tcp_frag *f)
{
    size_t payload = f->xlen;
    for (uint32_t s = 0; s < f->des.seg_count; s++)
        payload += f->des.seg[s].len;
    return payload;
}

int bm_btl_tcp_send_mt(struct bm_btl_module *m, struct bm_btl_endpoint *bep,
                       struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    (void)m;
    struct bm_btl_tcp_frag *f = (struct bm_btl_tcp_frag *)des;
    size_t payload = tcp_send_payload(f);
    if (payload > BM_BTL_TCP_FRAME_MAX)
        return BM_ERR_NOT_AVAILABLE;
    return tcp_send_mt((struct bm_btl_tcp_endpoint *)bep, f, tag, payload);
}

int bm_btl_tcp_send(struct bm_btl_module *m, struct bm_btl_endpoint *bep,
                    struct bm_btl_descriptor *des, bm_btl_tag_t tag)
{
    (void)m;
    struct bm_btl_tcp_endpoint *ep = (struct bm_btl_tcp_endpoint *)bep;
    struct bm_btl_tcp_frag *f = (struct bm_btl_tcp_frag *)des;
    if (ep->failed)
        return ep->fail_status;
    size_t payload = tcp_send_payload(f);
    if (payload > BM_BTL_TCP_FRAME_MAX)
        return BM_ERR_NOT_AVAILABLE;
    bool was_empty;
    struct bm_btl_tcp_conn *c = tcp_send_queue(ep, f, tag, payload, &was_empty);
    if (c->state == BM_BTL_TCP_CONN_IDLE) {
        for (int i = 0; i < ep->nlinks; i++)
            bm_btl_tcp_endpoint_connect(ep, &ep->links[i]);
    } else if (c->state == BM_BTL_TCP_CONN_CONNECTED && was_empty) {
        bm_btl_tcp_frag_flush(c); /* a failure is reported by the next progress */
    }
    return BM_OK;
}

/* ---- acknowledgements and FIN -------------------------------------------------------- */

static void tcp_ctl_queue(struct bm_btl_tcp_conn *c, struct bm_btl_tcp_frag *f, int type)
{
    f->hdr.len = 0;
    f->hdr.type = (uint8_t)type;
    f->hdr.tag = 0;
    f->hdr.flags = 0;
    f->hdr.seq = 0;
    f->sent = 0;
    f->total = sizeof(f->hdr);
    f->flags |= BM_BTL_TCP_FRAG_F_QUEUED;
    bm_util_queue_push(&c->sendq, &f->qnode);
    c->queued_bytes += f->total;
}

/* Frames received and not acknowledged after which an ACK goes out at once. */
#define TCP_ACK_BATCH 32

void bm_btl_tcp_frag_flush_acks(struct bm_btl_tcp_component *comp)
{
    struct bm_btl_tcp_conn *keep = NULL;
    while (comp->ack_list) {
        struct bm_btl_tcp_conn *c = comp->ack_list;
        comp->ack_list = c->ack_next;
        c->ack_listed = false;
        if (c->state != BM_BTL_TCP_CONN_CONNECTED || c->fd < 0)
            continue;
        /* senders write ack_sent and ack_age as they piggy-back the count */
        bm_btl_tcp_ep_lock(c->ep);
        if (c->ack_sent == c->rx_count) {
            bm_btl_tcp_ep_unlock(c->ep);
            continue;
        }
        if (!__atomic_load_n(&c->ack_urgent, __ATOMIC_RELAXED) && c->ack_age == 0 &&
            c->rx_count - c->ack_sent < TCP_ACK_BATCH) {
            /* Give a reply the chance to carry it; next progress at the latest. */
            c->ack_age = 1;
            bm_btl_tcp_ep_unlock(c->ep);
            c->ack_listed = true;
            c->ack_next = keep;
            keep = c;
            continue;
        }
        if (!(c->ctl->flags & BM_BTL_TCP_FRAG_F_QUEUED))
            tcp_ctl_queue(c, c->ctl, BM_BTL_TCP_FRAME_ACK);
        bm_btl_tcp_frag_flush(c);
        bm_btl_tcp_ep_unlock(c->ep);
    }
    comp->ack_list = keep;
}

void bm_btl_tcp_frag_queue_fin(struct bm_btl_tcp_conn *c)
{
    struct bm_btl_tcp_frag *f = bm_btl_tcp_frag_new_ctl();
    if (!f)
        return;
    f->flags |= BM_BTL_TCP_FRAG_F_FREE;
    f->ep = c->ep;
    tcp_ctl_queue(c, f, BM_BTL_TCP_FRAME_FIN);
}
