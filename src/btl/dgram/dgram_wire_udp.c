/* The native UDP wire of the dgram transport: two non-blocking UDP sockets
 * per module (priority and data channel) bound to the interface's address,
 * batches of datagrams sent with one sendmmsg(2) and received with one
 * recvmmsg(2). Each datagram goes out as two iovecs (the header copied into
 * the batch slot, the payload referenced where it lives), so sending never
 * copies user data (a lone datagram of at most 1 KiB is the exception: one
 * buffer, sendto); runs of same-size datagrams to one peer go as one UDP
 * GSO message (below). A poll that follows an empty one reads a single
 * datagram with recvmsg (udp_poll). */
#define BM_LOG_SUBSYS "btl/dgram"
#include "btl/dgram/dgram.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* UDP GSO (UDP_SEGMENT): consecutive datagrams of one batch to one peer,
 * all of one size but the last, leave as one message that the kernel cuts
 * into datagrams (one trip through the socket layer instead of one per
 * datagram). At most UDP_GSO_SEGS per message (the kernel allows 64): a
 * message can be lost whole (a veth carries it unsegmented, and the test
 * bed's iptables drops it as one packet), and a burst that fills the 32-bit
 * selective-ACK bitmap leaves no later segment to reveal the hole, so it
 * waits for the timeout. Measured across veth, bm_bw 1 MiB, 5 interleaved
 * rounds, medians in MB/s (no GSO / 64 / 16): lossless 451 / 548 / 464,
 * 1% loss 65 / 94 / 117, 5% loss 55 / 39 / 89. */
#define UDP_GSO_SEGS 16

/* Most chunks received in place by one recvmmsg (udp_direct_batch). */
#define UDP_DIRECT_BATCH 16

struct udp_gso_cmsg {
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } u;
};

struct udp_chan_state {
    struct mmsghdr *tx_msgs;      /* one per batch slot */
    struct iovec *tx_iov;         /* two per batch slot: header, payload */
    struct udp_gso_cmsg *tx_cmsg; /* one per batch slot (used by GSO messages) */
    bool gso;                     /* the kernel takes UDP_SEGMENT on this socket */
    struct mmsghdr *rx_msgs;
    struct iovec *rx_iov;
    struct sockaddr_in *rx_from;
    unsigned rx_dirty; /* headers the last recvmmsg wrote to (to be set up again) */
    /* chunks received in place (udp_direct_batch): UDP_DIRECT_BATCH of each */
    struct mmsghdr *dx_msgs;
    struct iovec *dx_iov; /* three per datagram */
    uint8_t **dx_at;      /* where each datagram's payload is, in place (NULL: its ring slot) */
    unsigned dx_k;        /* the next batch's size: 1 after a datagram that was not the chunk
                           * expected (interleaved streams), doubled after a batch without one */
    bool rx_busy;         /* the last poll received something */
};

static bm_status_t udp_open_channel(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        bm_log_error("interface %s: socket(AF_INET, SOCK_DGRAM) failed: %s", m->addr.ifname,
                     strerror(errno));
        return BM_ERR_SYSTEM;
    }
    int sz = (int)m->cfg.sockbuf;
    if (sz > 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    /* We size datagrams ourselves; never let the kernel fragment silently
     * when the path MTU shrinks (the connectivity check finds MTU trouble). */
    int pmtu = IP_PMTUDISC_DONT;
    (void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = m->addr.ipv4;
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
        bm_log_error("interface %s: bind to %s failed: %s; check the address or exclude the "
                     "interface with BM_BTL_DGRAM_IF_EXCLUDE",
                     m->addr.ifname, ip, strerror(errno));
        close(fd);
        return BM_ERR_SYSTEM;
    }
    socklen_t sl = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    if (c == BM_DGRAM_CH_DATA) {
        /* what the kernel granted (twice the request, capped by
         * net.core.rmem_max): peers keep at most half of it in flight */
        int rb = 0;
        socklen_t rl = sizeof(rb);
        if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, &rl) == 0 && rb > 0)
            m->addr.rcvbuf_64k =
                (uint16_t)((size_t)rb >> 16 > UINT16_MAX ? UINT16_MAX : (size_t)rb >> 16);
    }
    ch->fd = fd;
    ch->port = sa.sin_port;

    struct udp_chan_state *st = calloc(1, sizeof(*st));
    if (!st)
        return BM_ERR_NO_MEMORY;
    ch->wire_state = st;
    st->tx_msgs = calloc((size_t)ch->tx_max * 2 + 1, sizeof(*st->tx_msgs));
    st->tx_iov = calloc((size_t)ch->tx_max * 4 + 2, sizeof(*st->tx_iov));
    st->tx_cmsg = calloc((size_t)ch->tx_max * 2 + 1, sizeof(*st->tx_cmsg));
    /* GSO only pays for datagrams smaller than the 64 KiB it can carry (so
     * not on the loopback's 65000-byte ones) and only on the data channel;
     * a kernel without it refuses the option (then: one datagram each). */
    int zero = 0;
    st->gso =
        c == BM_DGRAM_CH_DATA && setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
    st->rx_msgs = calloc(ch->rx_max, sizeof(*st->rx_msgs));
    st->rx_iov = calloc(ch->rx_max, sizeof(*st->rx_iov));
    st->rx_from = calloc(ch->rx_max, sizeof(*st->rx_from));
    if (c == BM_DGRAM_CH_DATA) {
        st->dx_msgs = calloc(UDP_DIRECT_BATCH, sizeof(*st->dx_msgs));
        st->dx_iov = calloc(3 * UDP_DIRECT_BATCH, sizeof(*st->dx_iov));
        st->dx_at = calloc(UDP_DIRECT_BATCH, sizeof(*st->dx_at));
        st->dx_k = UDP_DIRECT_BATCH;
        if (!st->dx_msgs || !st->dx_iov || !st->dx_at)
            return BM_ERR_NO_MEMORY;
    }
    if (!st->tx_msgs || !st->tx_iov || !st->tx_cmsg || !st->rx_msgs || !st->rx_iov || !st->rx_from)
        return BM_ERR_NO_MEMORY;
    for (unsigned i = 0; i < ch->rx_max; i++) {
        st->rx_iov[i].iov_base = ch->rx_buf + (size_t)i * ch->mtu;
        st->rx_iov[i].iov_len = ch->mtu;
    }
    st->rx_dirty = ch->rx_max;
    return BM_OK;
}

static void udp_close(struct bm_btl_dgram_module *m)
{
    bm_btl_dgram_live_close(m); /* its thread answers from the priority socket */
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        struct bm_btl_dgram_channel *ch = &m->ch[c];
        if (ch->fd >= 0)
            close(ch->fd);
        ch->fd = -1;
        struct udp_chan_state *st = ch->wire_state;
        if (st) {
            free(st->tx_msgs);
            free(st->tx_iov);
            free(st->tx_cmsg);
            free(st->rx_msgs);
            free(st->rx_iov);
            free(st->rx_from);
            free(st->dx_msgs);
            free(st->dx_iov);
            free(st->dx_at);
            free(st);
        }
        ch->wire_state = NULL;
    }
}

static bm_status_t udp_open(struct bm_btl_dgram_module *m)
{
    for (int c = 0; c < BM_DGRAM_NCH; c++) {
        bm_status_t rc = udp_open_channel(m, c);
        if (rc != BM_OK) {
            udp_close(m);
            return rc;
        }
    }
    m->addr.port_prio = m->ch[BM_DGRAM_CH_PRIO].port;
    m->addr.port_data = m->ch[BM_DGRAM_CH_DATA].port;
    return bm_btl_dgram_live_open(m);
}

/* The hot path's system calls without glibc's wrappers. Once the process
 * has a second thread (the liveness responder, dgram_live.c), glibc makes
 * each of them a cancellation point and brackets the call with
 * __pthread_enable/disable_asynccancel: 57 instructions a recvmsg instead
 * of about 15 (callgrind, 8-byte ping-pong; an idle pass polls both
 * channels, so about 80 of its ~650). bitmover never cancels a thread, and
 * no MPI call is a cancellation point. The sanitizer builds keep the libc
 * calls, whose interceptors check the buffers and model the sockets. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define udp_recvmsg      recvmsg
#define udp_recvfrom     recvfrom
#define udp_recvmmsg     recvmmsg
#define udp_sendto       sendto
#define udp_sendmmsg_raw sendmmsg
#else
static inline ssize_t udp_recvmsg(int fd, struct msghdr *mh, int flags)
{
    return syscall(SYS_recvmsg, fd, mh, flags);
}
static inline ssize_t udp_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                                   socklen_t *fromlen)
{
    return syscall(SYS_recvfrom, fd, buf, len, flags, from, fromlen);
}
static inline int udp_recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, void *timeout)
{
    return (int)syscall(SYS_recvmmsg, fd, v, n, flags, timeout);
}
static inline ssize_t udp_sendto(int fd, const void *buf, size_t len, int flags,
                                 const struct sockaddr *to, socklen_t tolen)
{
    return syscall(SYS_sendto, fd, buf, len, flags, to, tolen);
}
static inline int udp_sendmmsg_raw(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    return (int)syscall(SYS_sendmmsg, fd, v, n, flags);
}
#endif

/* Send n prepared messages; a full socket buffer (EAGAIN) or an unreachable
 * network loses the rest like a congested link would: the reliability
 * engine resends them. */
static void udp_sendmmsg(struct bm_btl_dgram_module *m, int c, struct mmsghdr *msgs, unsigned n)
{
    unsigned done = 0;
    while (done < n) {
        int r = udp_sendmmsg_raw(m->ch[c].fd, msgs + done, n - done, 0);
        if (r > 0) {
            done += (unsigned)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        m->stats.send_errors++;
        struct udp_chan_state *st = m->ch[c].wire_state;
        if (r < 0 && msgs[done].msg_hdr.msg_controllen && st->gso &&
            (errno == EIO || errno == EINVAL || errno == EMSGSIZE || errno == ENOPROTOOPT)) {
            /* the route cannot segment (no checksum offload, a tunnel): the
             * datagrams of this message are lost like any other and resent,
             * from now on one per datagram */
            st->gso = false;
            bm_log_info("interface %s: UDP GSO refused (%s); sending one datagram per call",
                        m->addr.ifname, strerror(errno));
        }
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            bm_log_ratelimited(BM_LOG_DEBUG, "interface %s: sendmmsg: %s (datagrams dropped)",
                               m->addr.ifname, strerror(errno));
        /* The kernel knows the peer is out of reach (local link down, no
         * route): no need to wait for the retransmission timeouts. */
        if (r < 0 && (errno == ENETUNREACH || errno == ENETDOWN || errno == EHOSTUNREACH))
            bm_btl_dgram_local_error(m, c, msgs[done].msg_hdr.msg_name, errno);
        /* skip the failed datagram (an error is about the first one) */
        done++;
    }
}

static void udp_fill_msg(struct mmsghdr *msg, struct iovec *iov, const struct sockaddr_in *to,
                         const void *hdr, size_t hdr_len, const void *payload, size_t payload_len)
{
    iov[0].iov_base = (void *)hdr;
    iov[0].iov_len = hdr_len;
    iov[1].iov_base = (void *)payload;
    iov[1].iov_len = payload_len;
    memset(msg, 0, sizeof(*msg));
    msg->msg_hdr.msg_name = (void *)to;
    msg->msg_hdr.msg_namelen = sizeof(*to);
    msg->msg_hdr.msg_iov = iov;
    msg->msg_hdr.msg_iovlen = payload_len ? 2 : 1;
}

/* The GSO run starting at slot i: how many slots (at least 1) can leave as
 * one message: same peer, same size (the last may be shorter), at most
 * UDP_GSO_SEGS and BM_DGRAM_MAX_DATAGRAM bytes in all. Never to a peer
 * that takes 65000-byte datagrams (the loopback's): there GSO saves
 * nothing, and small resends of equal size that met in one batch were
 * the only runs (test_sizes asserts none). */
static unsigned udp_gso_run(const struct bm_btl_dgram_channel *ch, unsigned i, unsigned n)
{
    const struct bm_btl_dgram_txslot *s = &ch->tx[i];
    if (!s->gso_ok)
        return 1;
    size_t seg = s->hdr_len + s->payload_len, total = seg;
    unsigned j = i + 1;
    while (j < n && j - i < UDP_GSO_SEGS) {
        const struct bm_btl_dgram_txslot *t = &ch->tx[j];
        size_t len = t->hdr_len + t->payload_len;
        if (t->to != s->to || len > seg || total + len > BM_DGRAM_MAX_DATAGRAM)
            break;
        total += len;
        j++;
        if (len < seg)
            break; /* a shorter datagram ends a run */
    }
    return j - i;
}

/* A lone small datagram (a ping-pong's message, an ACK) as one contiguous
 * buffer with sendto: the kernel then takes no message header and no
 * iovecs from us. Measured on the loopback, 48-byte datagrams, medians of
 * 20000: 790 ns with sendmmsg (one message, two iovecs), 720 ns with
 * sendto. False when the kernel refused it: the caller then sends it the
 * usual way, which handles the error. */
#define UDP_SENDTO_MAX 1024

static bool udp_send_small(struct bm_btl_dgram_module *m, int c,
                           const struct bm_btl_dgram_txslot *s)
{
    uint8_t buf[UDP_SENDTO_MAX];
    if (s->hdr_len + s->payload_len > sizeof(buf))
        return false;
    memcpy(buf, s->whole ? s->whole : s->hdr, s->hdr_len);
    if (s->payload_len)
        memcpy(buf + s->hdr_len, s->payload, s->payload_len);
    return udp_sendto(m->ch[c].fd, buf, s->hdr_len + s->payload_len, 0,
                      (const struct sockaddr *)s->to, sizeof(*s->to)) >= 0;
}

static int udp_flush(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    struct udp_chan_state *st = ch->wire_state;
    unsigned n = ch->tx_count, nmsg = 0;
    bool sent = n == 1 && udp_send_small(m, c, &ch->tx[0]);
    for (unsigned i = 0; i < n && !sent;) {
        unsigned k = st->gso ? udp_gso_run(ch, i, n) : 1;
        struct mmsghdr *msg = &st->tx_msgs[nmsg];
        const struct bm_btl_dgram_txslot *s0 = &ch->tx[i];
        udp_fill_msg(msg, &st->tx_iov[2 * i], s0->to, s0->whole ? s0->whole : s0->hdr, s0->hdr_len,
                     s0->payload, s0->payload_len);
        if (k > 1) {
            /* the k slots' iovecs back to back (2 * k places are theirs) */
            struct iovec *iov = &st->tx_iov[2 * i];
            size_t niov = 0;
            for (unsigned j = 0; j < k; j++) {
                const struct bm_btl_dgram_txslot *s = &ch->tx[i + j];
                iov[niov].iov_base = (void *)(s->whole ? s->whole : s->hdr);
                iov[niov++].iov_len = s->hdr_len;
                if (s->payload_len) {
                    iov[niov].iov_base = (void *)s->payload;
                    iov[niov++].iov_len = s->payload_len;
                }
            }
            msg->msg_hdr.msg_iov = iov;
            msg->msg_hdr.msg_iovlen = niov;
            struct udp_gso_cmsg *cm = &st->tx_cmsg[nmsg];
            memset(cm, 0, sizeof(*cm));
            msg->msg_hdr.msg_control = cm->u.buf;
            msg->msg_hdr.msg_controllen = sizeof(cm->u.buf);
            struct cmsghdr *h = CMSG_FIRSTHDR(&msg->msg_hdr);
            h->cmsg_level = IPPROTO_UDP; /* SOL_UDP */
            h->cmsg_type = UDP_SEGMENT;
            h->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t seg = (uint16_t)(ch->tx[i].hdr_len + ch->tx[i].payload_len);
            memcpy(CMSG_DATA(h), &seg, sizeof(seg));
            m->stats.gso_sends++;
        }
        nmsg++;
        i += k;
    }
    if (nmsg)
        udp_sendmmsg(m, c, st->tx_msgs, nmsg);
    if (c == BM_DGRAM_CH_DATA)
        m->stats.sends_data += n;
    else
        m->stats.sends_prio += n;
    ch->tx_count = 0;
    return (int)n;
}

/* The chunks that a fragment received in place expects next
 * (bm_btl_dgram_direct_predict), k of them, in one recvmmsg: datagram i
 * gets three iovecs, the chunk header into ring slot i, the payload
 * straight into the place expected for chunk i, anything longer into the
 * rest of ring slot i. A datagram that is not the chunk expected there (a
 * resend, another fragment's chunk, an ACK) has its bytes copied back into
 * its ring slot before any datagram of the batch is processed, and goes
 * the usual way: the places of the batch lie beyond every verified byte,
 * so what the kernel wrote there is overwritten by the genuine chunks, and
 * a fragment completes only once every byte was verified. */
static int udp_direct_batch(struct bm_btl_dgram_module *m, int c,
                            const struct bm_btl_dgram_direct_slot *sl, unsigned k)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    struct udp_chan_state *st = ch->wire_state;
    const size_t hlen = bm_dgram_hdr_len(BM_DGRAM_T_CHUNK);
    for (unsigned i = 0; i < k; i++) {
        uint8_t *ring = st->rx_iov[i].iov_base;
        struct iovec *iov = &st->dx_iov[3 * i];
        iov[0] = (struct iovec){ring, hlen};
        iov[1] = (struct iovec){sl[i].dst, sl[i].len};
        iov[2] = (struct iovec){ring + hlen + sl[i].len, ch->mtu - hlen - sl[i].len};
        memset(&st->dx_msgs[i], 0, sizeof(st->dx_msgs[i]));
        st->dx_msgs[i].msg_hdr.msg_name = &st->rx_from[i];
        st->dx_msgs[i].msg_hdr.msg_namelen = sizeof(st->rx_from[i]);
        st->dx_msgs[i].msg_hdr.msg_iov = iov;
        st->dx_msgs[i].msg_hdr.msg_iovlen = 3;
    }
    int r = udp_recvmmsg(ch->fd, st->dx_msgs, k, MSG_DONTWAIT, NULL);
    if (r <= 0)
        return 0;
    bool missed = false;
    /* first every datagram that is not where it belongs back to its slot:
     * processing writes verified chunks to their places, which may be the
     * place another datagram of this batch was received at */
    for (int i = 0; i < r; i++) {
        const struct msghdr *mh = &st->dx_msgs[i].msg_hdr;
        size_t got = st->dx_msgs[i].msg_len, hl = 0;
        uint8_t *ring = st->rx_iov[i].iov_base;
        st->dx_at[i] = NULL;
        if ((mh->msg_flags & MSG_TRUNC) || mh->msg_namelen != sizeof(st->rx_from[i]))
            continue;
        if (got > hlen && got - hlen <= sl[i].len &&
            bm_btl_dgram_direct_target(m, c, ring, hlen, got, &st->rx_from[i], &hl) == sl[i].dst &&
            hl == hlen) {
            st->dx_at[i] = sl[i].dst;
            continue;
        }
        if (got > hlen)
            memcpy(ring + hlen, sl[i].dst, got - hlen < sl[i].len ? got - hlen : sl[i].len);
        m->stats.recv_direct_missed++;
        missed = true;
    }
    st->dx_k = missed ? 1 : st->dx_k * 2 > UDP_DIRECT_BATCH ? UDP_DIRECT_BATCH : st->dx_k * 2;
    for (int i = 0; i < r; i++) {
        const struct msghdr *mh = &st->dx_msgs[i].msg_hdr;
        size_t got = st->dx_msgs[i].msg_len, hl = 0;
        uint8_t *ring = st->rx_iov[i].iov_base;
        if ((mh->msg_flags & MSG_TRUNC) || mh->msg_namelen != sizeof(st->rx_from[i])) {
            m->stats.bad_short++;
            continue;
        }
        if (!st->dx_at[i]) {
            bm_btl_dgram_recv_packet(m, c, ring, got, &st->rx_from[i]);
            continue;
        }
        /* an earlier datagram of the batch verified bytes there: these are
         * not this datagram's any more (a duplicate or a forgery) */
        if (bm_btl_dgram_direct_target(m, c, ring, hlen, got, &st->rx_from[i], &hl) !=
            st->dx_at[i]) {
            m->stats.recv_direct_lost++;
            continue;
        }
        m->stats.recv_direct++;
        uint64_t bad = m->stats.bad_mac + m->stats.bad_checksum + m->stats.bad_job;
        bm_btl_dgram_recv_packet_at(m, c, ring, got, st->dx_at[i], &st->rx_from[i]);
        if (m->stats.bad_mac + m->stats.bad_checksum + m->stats.bad_job != bad)
            m->stats.recv_direct_rejected++;
    }
    return r;
}

/* While fragments are being placed (receive placement, btl.h): the chunks
 * a fragment expects next in one batch, received in place
 * (udp_direct_batch); when none is expected (the next fragment has not
 * begun), one datagram at a time into the ring, so that a fragment's first
 * chunk never comes in a batch that holds the chunks that follow it. */
static int udp_poll_direct(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    struct udp_chan_state *st = ch->wire_state;
    struct bm_btl_dgram_direct_slot sl[UDP_DIRECT_BATCH];
    int n = 0;
    m->in_poll = true;
    while ((unsigned)n < ch->rx_max && (m->placed_active || m->direct_credit)) {
        unsigned want = ch->rx_max - (unsigned)n;
        unsigned k = bm_btl_dgram_direct_predict(m, c, sl, want < st->dx_k ? want : st->dx_k);
        if (k) {
            int r = udp_direct_batch(m, c, sl, k);
            n += r;
            if (r < (int)k)
                break;
            continue;
        }
        uint8_t *ring = st->rx_iov[0].iov_base;
        socklen_t fl = sizeof(st->rx_from[0]);
        ssize_t got = udp_recvfrom(ch->fd, ring, ch->mtu, MSG_DONTWAIT | MSG_TRUNC,
                                   (struct sockaddr *)&st->rx_from[0], &fl);
        if (got < 0)
            break;
        n++;
        if ((size_t)got > ch->mtu || fl != sizeof(st->rx_from[0])) {
            m->stats.bad_short++;
            continue;
        }
        if (m->direct_credit)
            m->direct_credit--;
        bm_btl_dgram_recv_packet(m, c, ring, (size_t)got, &st->rx_from[0]);
    }
    m->in_poll = false;
    /* the ring's headers were not touched; the rest of a burst (or the
     * next poll) goes through recvmmsg again */
    st->rx_busy = n > 0;
    return n;
}

static int udp_poll(struct bm_btl_dgram_module *m, int c)
{
    struct bm_btl_dgram_channel *ch = &m->ch[c];
    struct udp_chan_state *st = ch->wire_state;
    /* A receive callback that calls progress again must not reuse the batch
     * that is being delivered. */
    if (m->in_poll)
        return 0;
    if ((m->placed_active || m->direct_credit) && c == BM_DGRAM_CH_DATA) {
        int n = udp_poll_direct(m, c);
        if (n == (int)ch->rx_max || m->placed_active || m->direct_credit)
            return n;
    }
    /* Only the headers of datagrams received last time were changed by the
     * kernel (name length, flags): most polls find nothing, and setting up
     * all rx_max headers before each of them was a large part of the
     * receive path's own time (udp_poll's 5.7% of a 1 MiB stream's
     * samples, most of them empty polls). */
    for (unsigned i = 0; i < st->rx_dirty; i++) {
        memset(&st->rx_msgs[i].msg_hdr, 0, sizeof(st->rx_msgs[i].msg_hdr));
        st->rx_msgs[i].msg_hdr.msg_iov = &st->rx_iov[i];
        st->rx_msgs[i].msg_hdr.msg_iovlen = 1;
        st->rx_msgs[i].msg_hdr.msg_name = &st->rx_from[i];
        st->rx_msgs[i].msg_hdr.msg_namelen = sizeof(st->rx_from[i]);
    }
    st->rx_dirty = 0;
    /* After an empty poll, one datagram with recvfrom: when one is waiting
     * (a ping-pong's message) the kernel does not look for a second one, and
     * the next poll takes the rest of a burst with recvmmsg. Loopback,
     * medians of 20000 with one 48-byte datagram waiting: recvmmsg of 32
     * 362 ns, recvmsg 285 ns; empty, both about 145 ns. recvfrom takes no
     * message header and no iovec from user memory (the kernel's
     * import_ubuf): best of 2000 blocks of 200 calls, 157 -> 125 ns empty,
     * 284 -> 230 ns with a 48-byte datagram waiting. MSG_TRUNC makes it
     * return the datagram's real length, so truncation shows as a length
     * beyond the buffer. */
    int r;
    if (st->rx_busy) {
        r = udp_recvmmsg(ch->fd, st->rx_msgs, ch->rx_max, MSG_DONTWAIT, NULL);
    } else {
        socklen_t fl = sizeof(st->rx_from[0]);
        ssize_t got =
            udp_recvfrom(ch->fd, st->rx_iov[0].iov_base, st->rx_iov[0].iov_len,
                         MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&st->rx_from[0], &fl);
        r = got >= 0 ? 1 : -1;
        if (got >= 0) {
            st->rx_msgs[0].msg_len = (unsigned)got;
            st->rx_msgs[0].msg_hdr.msg_flags = (size_t)got > st->rx_iov[0].iov_len ? MSG_TRUNC : 0;
        }
    }
    st->rx_busy = r > 0;
    st->rx_dirty = r > 0 ? (unsigned)r : 1;
    if (r <= 0)
        return 0;
    m->in_poll = true;
    for (int i = 0; i < r; i++) {
        if (st->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            m->stats.bad_short++;
            continue;
        }
        bm_btl_dgram_recv_packet(m, c, st->rx_iov[i].iov_base, st->rx_msgs[i].msg_len,
                                 &st->rx_from[i]);
    }
    m->in_poll = false;
    return r;
}

/* The MTU of the route from our address to the peer's, as the kernel
 * knows it (a connected socket's IP_MTU): the interface's across a
 * network, the loopback's (65536) when the peer is on this host. 0 when
 * there is no route. */
static size_t route_mtu(struct bm_btl_dgram_module *m, const struct sockaddr_in *to)
{
    if (m->route_mtu && m->route_ipv4 == to->sin_addr.s_addr)
        return m->route_mtu;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = m->addr.ipv4;
    int mtu = 0;
    socklen_t len = sizeof(mtu);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        connect(fd, (const struct sockaddr *)to, sizeof(*to)) != 0 ||
        getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) != 0)
        mtu = 0;
    close(fd);
    m->route_ipv4 = to->sin_addr.s_addr;
    m->route_mtu = mtu > 0 ? (size_t)mtu : 0;
    return m->route_mtu;
}

static bm_status_t udp_peer_add(struct bm_btl_dgram_module *m, struct bm_btl_dgram_endpoint *ep)
{
    ep->wire_addr[0] = ep->wire_addr[1] = 0; /* sendmmsg takes the sockaddr itself */
    if (m->cfg.mtu == 0) {                   /* not set by the user: as large as the route allows */
        size_t route = route_mtu(m, &ep->to[BM_DGRAM_CH_DATA]);
        size_t want = route > 28 ? route - 28 : m->if_data_mtu;
        if (want < ep->mtu[BM_DGRAM_CH_DATA])
            ep->mtu[BM_DGRAM_CH_DATA] = want;
        if (ep->mtu[BM_DGRAM_CH_DATA] < ep->mtu[BM_DGRAM_CH_PRIO])
            ep->mtu[BM_DGRAM_CH_PRIO] = ep->mtu[BM_DGRAM_CH_DATA];
        bm_log_debug("datagrams to %s: %zu bytes (route MTU %zu)", ep->peer_desc,
                     ep->mtu[BM_DGRAM_CH_DATA], route);
    }
    return BM_OK;
}

const struct bm_btl_dgram_wire_ops bm_btl_dgram_wire_udp = {
    .name = "udp",
    .open = udp_open,
    .close = udp_close,
    .flush = udp_flush,
    .poll = udp_poll,
    .peer_add = udp_peer_add,
};
