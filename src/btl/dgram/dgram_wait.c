/* Sleeping with the dgram transport (btl.h "Sleeping"): what a module
 * still has to do now, and when its nearest timer needs a progress call
 * (the hotel's next retransmission, a delayed ACK, a probe of a failed
 * path, a connectivity check, the periodic statistics line). The native
 * UDP wire's sockets go into the component's epoll set (dgram_component.c),
 * which is the transport's wait descriptor; the libfabric wire has no
 * descriptor to wait on, so a sleeper naps at most 1 ms with it. */
#include "btl/dgram/dgram.h"

/* Earliest of *t and the deadline at (absolute, the cheap clock); UINT64_MAX: none. */
static void earliest(uint64_t *t, uint64_t at)
{
    if (at < *t)
        *t = at;
}

int bm_btl_dgram_wait_arm_module(struct bm_btl_dgram_module *m, uint64_t *due_out)
{
    bm_btl_dgram_lock(m);
    int work = !bm_util_queue_empty(&m->done) || !bm_util_list_empty(&m->getdone) ||
               !bm_util_list_empty(&m->resend) || !bm_util_list_empty(&m->ready) ||
               m->reports_pending > 0 || m->held_len > 0;
    for (int c = 0; c < BM_DGRAM_NCH && !work; c++)
        work = m->ch[c].tx_count > 0;
    uint64_t due = UINT64_MAX;
    if (!work) {
        earliest(&due, m->hotel.next_due);
        struct bm_util_list_node *it;
        bm_util_list_foreach(it, &m->acks)
        {
            struct bm_btl_dgram_endpoint *ep =
                bm_util_container_of(it, struct bm_btl_dgram_endpoint, ack_link);
            if (ep->ack_needed)
                earliest(&due, ep->ack_deadline);
        }
        if (m->nfailed)
            earliest(&due, m->probe_next_ns);
        for (int i = 0; i < m->neps && m->nchecking; i++)
            if (m->eps[i] && m->eps[i]->check == BM_DGRAM_CHECK_RUNNING)
                earliest(&due, m->eps[i]->check_next_ns);
        if (m->stats_next_ns)
            earliest(&due, m->stats_next_ns);
        /* No descriptor to wait on: nap. */
        if (m->wire != &bm_btl_dgram_wire_udp)
            earliest(&due, bm_btl_dgram_now() + 1000000);
    }
    bm_btl_dgram_unlock(m);
    *due_out = due;
    return work;
}

int bm_btl_dgram_wait_fds(const struct bm_btl_dgram_module *m, int fds[BM_DGRAM_NCH])
{
    if (m->wire != &bm_btl_dgram_wire_udp)
        return 0;
    int n = 0;
    for (int c = 0; c < BM_DGRAM_NCH; c++)
        if (m->ch[c].fd >= 0)
            fds[n++] = m->ch[c].fd;
    return n;
}
