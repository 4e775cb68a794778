/* The shared segments of the sm transport: creating this process's segment
 * (/dev/shm/bm-<jobid>-sm-<rank>, mode 0600, through util/shmseg.h, laid
 * out as sm_proto.h says),
 * mapping the segments of local peers, and removing the file as early as
 * possible. Peers map a segment on first use, possibly late in the job, so
 * they do not map it by its name: the owner keeps a descriptor of it open
 * and removes the name at once, and peers open /proc/<owner pid>/fd/<fd>
 * (the same permission as any file of the owner's /proc/<pid>/fd, which
 * process_vm_readv needs too). A rank killed at any point after start-up
 * therefore leaves nothing in /dev/shm whatever launched it (srun, Open
 * MPI's mpirun, MPICH's mpiexec: none of them knows the names). Where that
 * is not possible (the owner is not dumpable, or BM_BTL_SM_FBOX_AFTER=0,
 * which maps everything at start-up) peers map by name, the last of them
 * removes it, and before that point bm_rte_at_exit removes it on normal
 * exit and on abort and bmrun removes bm-<jobid>-* after a rank was
 * killed. */
#define BM_LOG_SUBSYS "btl/sm"
#include "btl/sm/sm.h"
#include "runtime/rte.h"
#include "util/log.h"
#include "util/shmseg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit and abort handler: remove the names of segments this process created
 * that no peer has removed yet (util/shmseg.c keeps that table, touching
 * no heap, so the handler never follows a pointer into a freed module). */
static void sm_segment_unlink_at_exit(void *arg)
{
    (void)arg;
    bm_util_shmseg_cleanup();
}

static size_t sm_round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Where everything goes in a segment (sm_proto.h): the control block, the
 * fast-box hint bitmap, one fast-box ring per process of the node, then the
 * fragments of each size class. */
struct sm_layout {
    size_t hint_offset, nhint;
    size_t fbox_offset, fbox_stride;
    uint32_t funits, local_size;
    size_t start[BM_BTL_SM_NCLASS], stride[BM_BTL_SM_NCLASS];
    uint32_t count[BM_BTL_SM_NCLASS];
    size_t used; /* bytes up to the last fragment */
    size_t size; /* used, rounded up to whole pages */
};

static bm_status_t sm_segment_layout(const struct bm_btl_sm_module *sm, struct sm_layout *l)
{
    const size_t line = BM_BTL_SM_CACHELINE;
    size_t payload[BM_BTL_SM_NCLASS] = {sm->config.eager_limit, sm->config.max_send_size};
    l->count[BM_BTL_SM_CLASS_EAGER] = (uint32_t)sm->config.eager_frags;
    l->count[BM_BTL_SM_CLASS_MAX] = (uint32_t)sm->config.max_frags;
    size_t off = sizeof(struct bm_btl_sm_seg_ctl);
    l->local_size = (uint32_t)sm->self->local_size;
    l->funits = (uint32_t)(sm->config.fbox_bytes / BM_BTL_SM_FBOX_UNIT);
    l->hint_offset = off;
    l->nhint = (l->local_size + 63) / 64;
    off += sm_round_up(l->nhint * sizeof(uint64_t), line);
    l->fbox_offset = off;
    l->fbox_stride = l->funits ? bm_btl_sm_fbox_ring_bytes(l->funits) : 0;
    off += l->fbox_stride * l->local_size;
    for (int c = 0; c < BM_BTL_SM_NCLASS; c++) {
        l->stride[c] = sizeof(struct bm_btl_sm_frag_hdr) + sm_round_up(payload[c], line);
        l->start[c] = off;
        off += l->stride[c] * l->count[c];
    }
    l->used = off;
    l->size = sm_round_up(off, (size_t)sysconf(_SC_PAGESIZE));
    if (off >= BM_BTL_SM_RPTR_MASK) {
        bm_log_error("the shared-memory segment would be %zu bytes, more than the %llu a "
                     "fragment address can name; lower BM_BTL_SM_EAGER_FRAGS, "
                     "BM_BTL_SM_MAX_FRAGS or BM_BTL_SM_MAX_SEND_SIZE",
                     off, (unsigned long long)BM_BTL_SM_RPTR_MASK);
        return BM_ERR_BAD_PARAM;
    }
    return BM_OK;
}

/* Create /dev/shm/bm-<jobid>-sm-<rank> (sm->name) and map it
 * (util/shmseg.h); the name is removed at exit or abort if no peer removed
 * it before. Everything is reserved now (a full /dev/shm is an error here,
 * not a SIGBUS later) except the fast-box rings: each sender reserves its
 * own ring once it uses it (bm_btl_sm_fbox_enable), so rings of pairs that
 * never talk take no memory. */
static bm_status_t sm_segment_map_new(struct bm_btl_sm_module *sm, const struct sm_layout *l)
{
    size_t size = l->size;
    const struct bm_rte_proc *self = sm->self;
    /* The launcher's naming convention (rte.h): bmrun removes bm-<jobid>-* after a crash. */
    char what[32], job_name[sizeof(sm->name) - 1];
    snprintf(what, sizeof(what), "sm-%d", self->rank);
    if (bm_rte_job_name(what, job_name, sizeof(job_name)) != BM_OK) {
        bm_log_error("job id '%s' too long for a shared-memory file name", self->jobid);
        return BM_ERR_BAD_PARAM;
    }
    snprintf(sm->name, sizeof(sm->name), "/%s", job_name);
    sm->lazy_rings = bm_btl_sm_fbox_lazy_supported();
    /* With lazy rings the fragments are backed in steps too (sm_frags_grow):
     * everything from the rings on is a hole at first. */
    bm_status_t rc = bm_util_shmseg_create_holed(&sm->shm, sm->name, size, l->fbox_offset,
                                                 sm->lazy_rings ? size - l->fbox_offset : 0);
    if (rc != BM_OK) {
        /* shmseg said what failed; this is what sm can change about it. */
        bm_log_error("sm on %s cannot create its %zu-byte segment: lower BM_BTL_SM_EAGER_FRAGS, "
                     "BM_BTL_SM_MAX_FRAGS or BM_BTL_SM_FBOX_BYTES, or leave sm out with "
                     "BM_BTL=^sm",
                     self->hostname, size);
        return rc;
    }
    bm_util_shm_private(sm->shm.addr, sm->shm.size, true);
    /* The runtime drops its handlers once they ran (at finalize), so
     * register with every segment; running the handler twice is harmless. */
    bm_rte_at_exit(sm_segment_unlink_at_exit, NULL);
    /* Peers reach the file through our descriptor, so its name can go now.
     * A process that is not dumpable (set-id, file capabilities,
     * PR_SET_DUMPABLE 0) has a /proc/<pid>/fd only root may open: keep
     * the name then, as when everything is mapped at start-up. */
    if (sm->config.fbox_after != 0 && prctl(PR_GET_DUMPABLE) == 1) {
        sm->seg_fd = shm_open(sm->name, O_RDWR, 0);
        if (sm->seg_fd >= 0)
            bm_util_shmseg_unlink(&sm->shm);
        else
            bm_log_debug("cannot reopen /dev/shm%s (%s): peers map it by name", sm->name,
                         strerror(errno));
    }
    return BM_OK;
}

/* Write the control block, clear the hints and the FIFO: all before the
 * card is published, so peers never see them half made. The rings need no
 * writing: the file reads as zeros there, the state of an empty ring. */
static void sm_segment_init_ctl(struct bm_btl_sm_module *sm, const struct sm_layout *l)
{
    struct bm_btl_sm_seg_ctl *ctl = sm->ctl;
    ctl->magic = BM_BTL_SM_MAGIC;
    ctl->version = BM_BTL_SM_VERSION;
    ctl->rank = sm->self->rank;
    ctl->pid = (int32_t)getpid();
    ctl->nclass = BM_BTL_SM_NCLASS;
    ctl->size = l->size;
    for (int c = 0; c < BM_BTL_SM_NCLASS; c++) {
        ctl->frags_offset[c] = l->start[c];
        ctl->frag_stride[c] = l->stride[c];
        ctl->frag_count[c] = l->count[c];
    }
    ctl->fbox_offset = l->fbox_offset;
    ctl->fbox_stride = l->fbox_stride;
    ctl->hint_offset = l->hint_offset;
    ctl->fbox_units = l->funits;
    ctl->local_size = l->local_size;
    sm->use_hints = (int)l->local_size >= sm->config.fbox_hint_min;
    ctl->fbox_hints = sm->use_hints;
    sm->hints = (_Atomic uint64_t *)(sm->seg + l->hint_offset);
    sm->nhint_words = (int)l->nhint;
    for (size_t i = 0; i < l->nhint; i++)
        atomic_store_explicit(&sm->hints[i], 0, memory_order_relaxed);
    atomic_store_explicit(&ctl->mapped, 0, memory_order_relaxed);
    bm_btl_sm_fifo_init(&ctl->fifo);
}

bm_status_t bm_btl_sm_segment_create(struct bm_btl_sm_module *sm)
{
    sm->seg_fd = -1;
    struct sm_layout l;
    bm_status_t rc = sm_segment_layout(sm, &l);
    if (rc != BM_OK)
        return rc;
    rc = sm_segment_map_new(sm, &l);
    if (rc != BM_OK)
        return rc;
    sm->seg = sm->shm.addr;
    sm->seg_size = sm->shm.size;
    sm->ctl = (struct bm_btl_sm_seg_ctl *)sm->seg;
    sm_segment_init_ctl(sm, &l);
    bm_log_debug("created /dev/shm%s: %zu bytes, %u + %u fragments", sm->name, l.size, l.count[0],
                 l.count[1]);
    return BM_OK;
}

static bm_status_t sm_segment_map_fd(struct bm_btl_sm_module *sm, int rank,
                                     const struct bm_btl_sm_card *card,
                                     struct bm_btl_sm_endpoint *ep, int fd, const char *path);

bm_status_t bm_btl_sm_segment_attach(struct bm_btl_sm_module *sm, int rank,
                                     const struct bm_btl_sm_card *card,
                                     struct bm_btl_sm_endpoint *ep)
{
    const struct bm_rte_proc *self = sm->self;
    char name[sizeof(card->name) + 1];
    memcpy(name, card->name, sizeof(card->name));
    name[sizeof(card->name)] = '\0';
    if (card->fd >= 0) {
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", card->pid, card->fd);
        int fd = open(proc, O_RDWR | O_CLOEXEC);
        int open_errno = errno;
        if (fd < 0 && bm_btl_sm_process_ended((pid_t)card->pid)) {
            bm_log_debug("rank %d's process %d has ended: its segment is gone with it", rank,
                         (int)card->pid);
            return BM_ERR_PEER_GONE;
        }
        if (fd < 0) {
            bm_log_error("rank %d on %s cannot open rank %d's shared-memory segment through %s "
                         "(pid %d, its /dev/shm%s is removed already): %s. Rank %d may have "
                         "ended, or this process may not open another's /proc/<pid>/fd (another "
                         "user or PID namespace, a security module); BM_BTL_SM_FBOX_AFTER=0 maps "
                         "every segment by name at start-up instead. sm will not be used to reach "
                         "that rank",
                         self->rank, self->hostname, rank, proc, card->pid, name,
                         strerror(open_errno), rank);
            return BM_ERR_UNREACHABLE;
        }
        return sm_segment_map_fd(sm, rank, card, ep, fd, proc);
    }
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        bm_log_error("rank %d on %s cannot open rank %d's shared-memory file /dev/shm%s: %s. It "
                     "may have been removed by a cleanup while the job was starting; sm will not "
                     "be used to reach that rank",
                     self->rank, self->hostname, rank, name, strerror(errno));
        return BM_ERR_UNREACHABLE;
    }
    char path[sizeof(name) + 8];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    return sm_segment_map_fd(sm, rank, card, ep, fd, path);
}

/* Map rank's segment, open on fd (closed here); path names it in messages. */
static bm_status_t sm_segment_map_fd(struct bm_btl_sm_module *sm, int rank,
                                     const struct bm_btl_sm_card *card,
                                     struct bm_btl_sm_endpoint *ep, int fd, const char *path)
{
    const struct bm_rte_proc *self = sm->self;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < card->size) {
        bm_log_error("rank %d's shared-memory file %s is smaller than announced "
                     "(%lld < %llu bytes); not using sm to reach it",
                     rank, path, (long long)st.st_size, (unsigned long long)card->size);
        close(fd);
        return BM_ERR_UNREACHABLE;
    }
    void *seg = bm_util_shm_map_guarded(fd, card->size);
    close(fd);
    if (seg == MAP_FAILED) {
        bm_log_error("cannot map rank %d's shared-memory file %s (%llu bytes): %s", rank, path,
                     (unsigned long long)card->size, strerror(errno));
        return BM_ERR_UNREACHABLE;
    }
    struct bm_btl_sm_seg_ctl *ctl = seg;
    if (ctl->magic != BM_BTL_SM_MAGIC || ctl->version != BM_BTL_SM_VERSION || ctl->rank != rank) {
        bm_log_error("%s does not hold rank %d's sm segment of this job (version %u, "
                     "rank %d); not using sm to reach it",
                     path, rank, ctl->version, ctl->rank);
        bm_util_shm_unmap_guarded(seg, card->size);
        return BM_ERR_UNREACHABLE;
    }
    bm_util_shm_private(seg, card->size, true);
    ep->rank = rank;
    ep->pid = (pid_t)card->pid;
    ep->seg = seg;
    ep->seg_size = card->size;
    ep->ctl = ctl;
    /* sm->bases[rank] is published by the caller once the rings and the
     * doorbell are connected too (sm_ep_map). */
    /* The last local peer to map a segment removes its name (if the owner
     * kept it). */
    int expected = self->local_size - 1;
    uint32_t now = atomic_fetch_add_explicit(&ctl->mapped, 1, memory_order_acq_rel) + 1;
    if ((int)now == expected && card->fd < 0) {
        char name[sizeof(card->name) + 1];
        memcpy(name, card->name, sizeof(card->name));
        name[sizeof(card->name)] = '\0';
        shm_unlink(name);
        bm_log_debug("every local peer mapped /dev/shm%s: removed its name", name);
    }
    return BM_OK;
}

void bm_btl_sm_segment_detach(struct bm_btl_sm_endpoint *ep)
{
    if (ep->seg) {
        bm_util_shm_private(ep->seg, ep->seg_size, false);
        bm_util_shm_unmap_guarded(ep->seg, ep->seg_size);
    }
    ep->seg = NULL;
    ep->ctl = NULL;
}

void bm_btl_sm_segment_destroy(struct bm_btl_sm_module *sm)
{
    /* Unmaps, and removes the name unless the last peer already did (the
     * ENOENT of a name a peer removed is harmless). */
    if (sm->shm.addr) {
        bm_util_shm_private(sm->shm.addr, sm->shm.size, false);
        bm_util_shmseg_detach(&sm->shm);
    }
    if (sm->seg_fd >= 0)
        close(sm->seg_fd);
    sm->seg_fd = -1;
    sm->seg = NULL;
    sm->ctl = NULL;
}
