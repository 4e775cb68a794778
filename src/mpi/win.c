/* Windows of one-sided communication: MPI_Win_create, MPI_Win_allocate,
 * MPI_Win_allocate_shared (with MPI_Win_shared_query), MPI_Win_create_dynamic
 * (with attach and detach), MPI_Win_free, the group, info hints, names and
 * error handlers of a window (win.h says how operations reach a target).
 *
 * Creation is collective: the window gets a private communicator (its
 * context id names the window in active messages, the same on every
 * member), memory (the user's, the library's, or a shared segment), a
 * registration with every transport that needs one, and then every member
 * learns every other's base, size, displacement unit and registration
 * handles in one allgather. Memory the library allocates for the processes
 * of one node that reach each other through shared memory goes into one
 * segment (src/util/shmseg) that all of them map, so that their operations
 * on each other are plain loads, stores and CPU atomics; the first process
 * of the node creates it, the others attach after a barrier, and the name
 * is removed once all have it (bmrun and an exit handler remove it when a
 * process dies before that). */
#define BM_LOG_SUBSYS "mpi/osc"
#include "util/log.h"

#include "mpi/win.h"
#include "pml/pml.h"
#include "runtime/rte.h"
#include "util/bitmap.h"
#include "util/params.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- parameters ---------------------------------------------------------- */

struct osc_params {
    int shm;         /* 0 auto, 1 off */
    bool btl_rdma;   /* use transports' put/get */
    bool btl_atomic; /* use transports' atomics */
    int fail_rdma;   /* testing: transport operations from the n-th on fail (0: never) */
    size_t rndv_limit;
    size_t batch;
    size_t stream_min;
};

static const struct bm_param osc_params[] = {
    {"BM_MPI_OSC_SHM", BM_PARAM_ENUM, "auto", 0, 0, "auto|off",
     "auto: memory that MPI_Win_allocate allocates for the processes of one node that reach "
     "each other through shared memory (sm) is one segment they all map, so that one-sided "
     "operations among them are loads, stores and CPU atomics; off: each process allocates "
     "its own and operations go through the transports (MPI_Win_allocate_shared always "
     "shares).",
     offsetof(struct osc_params, shm), 0},
    {"BM_MPI_OSC_BTL_RDMA", BM_PARAM_BOOL, "on", 0, 0, NULL,
     "Move contiguous puts and gets with the transport's own put and get where it has them "
     "(sm single copy, self, dgram, ofi); off sends them as active messages to the target's "
     "agent, as over tcp.",
     offsetof(struct osc_params, btl_rdma), 0},
    {"BM_MPI_OSC_BTL_ATOMICS", BM_PARAM_BOOL, "on", 0, 0, NULL,
     "Carry out single-element fetch-and-op, compare-and-swap and accumulates on 4- and 8-byte "
     "integers with the transport's atomic operations where it has them (sm, self), and over "
     "ofi every accumulate-family operation on such integers when the window's rule allows it "
     "(src/mpi/README.md); off sends them to the target's agent.",
     offsetof(struct osc_params, btl_atomic), 0},
    {"BM_MPI_OSC_RNDV_LIMIT", BM_PARAM_SIZE, "128k", 1, 1LL << 40, NULL,
     "Puts and gets of at least this many contiguous bytes to a target reached by active "
     "messages (tcp) travel as a PML message between the origin's buffer and the window (the "
     "rendezvous protocol, pipelined, received in place) instead of active messages that copy "
     "the data on both sides.",
     offsetof(struct osc_params, rndv_limit), 0},
    {"BM_MPI_OSC_BATCH", BM_PARAM_SIZE, "4k", 0, 1 << 20, NULL,
     "Bytes of small puts and accumulates to a target reached by active messages (tcp) that "
     "wait at the origin to travel in one message with the next one to that target (the "
     "flush, unlock or get that needs them done): one message and one wake-up of the target "
     "instead of one each. 0 sends every operation at once.",
     offsetof(struct osc_params, batch), 0},
    {"BM_MPI_OSC_STREAM_COPY_MIN", BM_PARAM_SIZE, "1m", 0, 1LL << 40, NULL,
     "Puts and gets of at least this many bytes between memories mapped in one process (a "
     "window in a shared segment) copy with streaming stores, which bypass the cache and skip "
     "the read of each destination line (as BM_PML_STREAM_COPY_MIN for messages). 0: never.",
     offsetof(struct osc_params, stream_min), 0},
    {"BM_MPI_OSC_FAIL_RDMA", BM_PARAM_INT, "0", 0, 1 << 30, NULL,
     "Testing only: the n-th transport put, get or atomic of this process and every later one "
     "fail as a broken link would (0: never), to show that the failure reaches the window's "
     "error handler and nothing hangs.",
     offsetof(struct osc_params, fail_rdma), BM_PARAM_F_DEBUG},
};
static const struct bm_param_table osc_table = {"mpi/osc", osc_params, BM_PARAM_COUNT(osc_params)};
BM_PARAM_TABLE_REGISTER(osc_table);

_Thread_local bool bm_osc_lock_held __attribute__((tls_model("initial-exec")));

static struct {
    bool loaded;
    struct osc_params p;
    struct bm_mpi_win *list; /* every window of this process */
    bool cleanup_registered;
    int rdma_ops; /* transport operations issued (BM_MPI_OSC_FAIL_RDMA) */
} win_g;

static const struct osc_params *params(void)
{
    if (!win_g.loaded) {
        if (bm_util_params_load(&osc_table, &win_g.p) != BM_OK) {
            win_g.p.shm = 1;
            win_g.p.btl_rdma = false;
            win_g.p.btl_atomic = false;
            win_g.p.rndv_limit = SIZE_MAX;
            win_g.p.batch = 0;
            win_g.p.stream_min = 0;
        }
        win_g.loaded = true;
    }
    return &win_g.p;
}

struct bm_mpi_win *bm_osc_win_lookup_first(void)
{
    return win_g.list;
}

int bm_osc_rank_of_world(MPI_Win win, int world)
{
    return world >= 0 && world < MPI_COMM_WORLD->size ? win->rank_of[world] : -1;
}

bool bm_osc_fail_inject(void)
{
    int n = params()->fail_rdma;
    return n > 0 && ++win_g.rdma_ops >= n;
}

struct bm_mpi_win *bm_osc_win_lookup(uint32_t id)
{
    for (struct bm_mpi_win *w = win_g.list; w; w = w->next)
        if (w->id == id)
            return w;
    return NULL;
}

/* ---- errors --------------------------------------------------------------- */

int bm_osc_win_error(MPI_Win win, int errclass, const char *fn, const char *fmt, ...)
{
    char detail[512], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (win == MPI_WIN_NULL || win->magic != BM_MPI_MAGIC_WIN)
        return bm_mpi_error(NULL, errclass, fn, "%s", detail);
    bm_mpi_error_format(msg, sizeof(msg), fn, errclass, detail);
    MPI_Errhandler eh = win->errhandler;
    switch (eh->kind) {
    case BM_MPI_ERRH_RETURN:
        bm_log_debug("%s (returned to the caller: MPI_ERRORS_RETURN)", msg);
        return errclass;
    case BM_MPI_ERRH_USER: {
        MPI_Win w = win;
        int code = errclass;
        bm_log_debug("%s (passed to the window's error handler)", msg);
        eh->win_fn(&w, &code);
        return errclass;
    }
    case BM_MPI_ERRH_FATAL:
        break;
    }
    bm_mpi_error_abort(msg);
}

int bm_osc_check_win(MPI_Win win, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (win == MPI_WIN_NULL)
        return bm_mpi_error(NULL, MPI_ERR_WIN, fn, "the window is MPI_WIN_NULL");
    if (win->magic != BM_MPI_MAGIC_WIN)
        return bm_mpi_error(NULL, MPI_ERR_WIN, fn,
                            "the window handle %p is not a window (freed, or another kind of "
                            "handle)",
                            (void *)win);
    return MPI_SUCCESS;
}

/* ---- info hints ------------------------------------------------------------ */

static bool info_bool(MPI_Info info, const char *key, bool def)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, key, MPI_MAX_INFO_VAL, v, &flag) || !flag)
        return def;
    return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
}

/* Read the hints of info into win (creation and MPI_Win_set_info). Hints
 * that are not understood are ignored, as the standard allows. */
static void info_apply(MPI_Win win, MPI_Info info, bool creation)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (creation) {
        win->no_locks = info_bool(info, "no_locks", false);
        win->same_size = info_bool(info, "same_size", false);
        win->same_disp_unit = info_bool(info, "same_disp_unit", false);
        win->alloc_shared_noncontig = info_bool(info, "alloc_shared_noncontig", false);
        snprintf(win->acc_ordering, sizeof(win->acc_ordering), "rar,raw,war,waw");
        snprintf(win->acc_ops, sizeof(win->acc_ops), "same_op_no_op");
    } else if (info != MPI_INFO_NULL) {
        win->no_locks = info_bool(info, "no_locks", win->no_locks);
    }
    if (info != MPI_INFO_NULL &&
        PMPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL, v, &flag) == MPI_SUCCESS &&
        flag)
        snprintf(win->acc_ordering, sizeof(win->acc_ordering), "%.63s", v);
    if (info != MPI_INFO_NULL &&
        PMPI_Info_get(info, "accumulate_ops", MPI_MAX_INFO_VAL, v, &flag) == MPI_SUCCESS && flag &&
        (strcmp(v, "same_op") == 0 || strcmp(v, "same_op_no_op") == 0))
        snprintf(win->acc_ops, sizeof(win->acc_ops), "%.31s", v);
    win->acc_ordered = strcmp(win->acc_ordering, "none") != 0;
}

/* ---- creation ---------------------------------------------------------------- */

/* What each process tells the others at creation, in two allgathers. */
struct win_card1 {
    uint64_t size;
    int32_t disp_unit;
    int32_t node;   /* bm_rte_node_of */
    int32_t shm_ok; /* this process may share a segment with its node's processes */
    int32_t pad;
};

#define WIN_MAX_REG        4
#define WIN_MAX_HANDLE     32
#define WIN_TRANSPORT_NAME 16

struct win_card2 {
    uint64_t base;
    uint64_t size;
    int32_t disp_unit;
    int32_t nreg;
    struct {
        char transport[WIN_TRANSPORT_NAME]; /* ops->name */
        int32_t ordinal;
        uint32_t len;
        uint8_t handle[WIN_MAX_HANDLE];
    } reg[WIN_MAX_REG];
};

static void win_cleanup_at_exit(void *arg)
{
    (void)arg;
    bm_util_shmseg_cleanup();
}

/* The comm ranks sharing this process's segment (those with its key), in
 * comm rank order: their count, and this process's index among them. */
static int shm_group(MPI_Win win, const int *key, int *idx_out)
{
    int n = 0, me = win->rank;
    win->shm_ranks = malloc(sizeof(int) * (size_t)win->nranks);
    if (!win->shm_ranks)
        return -1;
    for (int r = 0; r < win->nranks; r++)
        if (key[r] == key[me]) {
            if (r == me)
                *idx_out = n;
            win->shm_ranks[n++] = r;
        }
    return n;
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Place the memory of the processes with the same key in one segment
 * (collective over the window: every process takes part in the two
 * agreements, also one that is alone with its key and shares nothing). */
static int shm_setup(MPI_Win win, const struct win_card1 *c1, const int *key, const char *fn)
{
    int idx = 0;
    int n = shm_group(win, key, &idx);
    if (n < 0)
        return bm_mpi_error(win->comm, MPI_ERR_NO_MEM, fn, "out of memory");
    bool contig = win->flavor == MPI_WIN_FLAVOR_SHARED && !win->alloc_shared_noncontig;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t ctl =
        round_up(sizeof(struct bm_osc_shm_ctl) * (size_t)n +
                     sizeof(_Atomic uint32_t) * BM_OSC_SHM_STRIPES + sizeof(struct bm_osc_shm_bar),
                 page);
    size_t off = ctl, my_off = 0;
    uint64_t *offs = malloc(sizeof(uint64_t) * (size_t)n);
    if (!offs)
        return bm_mpi_error(win->comm, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < n; i++) {
        size_t sz = c1[win->shm_ranks[i]].size;
        if (!contig)
            off = round_up(off, sz >= page ? page : 64);
        offs[i] = off;
        if (i == idx)
            my_off = off;
        off += sz;
    }
    size_t total = off > ctl ? off : ctl + 1;
    int leader = win->shm_ranks[0];
    char what[64], name[BM_UTIL_SHMSEG_NAME_MAX];
    snprintf(what, sizeof(what), "osc-%u-%d", win->id, bm_mpi_comm_world_rank(win->comm, leader));
    name[0] = '/';
    if (bm_rte_job_name(what, name + 1, sizeof(name) - 1) != BM_OK) {
        free(offs);
        return bm_mpi_error(win->comm, MPI_ERR_INTERN, fn, "shared-memory name too long");
    }
    int rc = MPI_SUCCESS, st = BM_OK;
    if (!win_g.cleanup_registered) {
        bm_rte_at_exit(win_cleanup_at_exit, NULL);
        win_g.cleanup_registered = true;
    }
    bool alone = n == 1 && win->flavor != MPI_WIN_FLAVOR_SHARED;
    if (win->rank == leader && !alone)
        st = bm_util_shmseg_create(&win->seg, name, total);
    /* every process learns whether the leaders succeeded */
    int ok = st == BM_OK, all_ok = 0;
    BM_OSC_UNLOCKED(rc, bm_mpi_coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, win->comm, fn));
    if (rc)
        goto out;
    if (!all_ok) {
        if (win->rank == leader && st == BM_OK && !alone)
            bm_util_shmseg_detach(&win->seg);
        rc = bm_mpi_error(win->comm, MPI_ERR_NO_MEM, fn,
                          "could not create the %zu-byte shared-memory segment of the window "
                          "on some node (see the message above: /dev/shm full?)",
                          total);
        goto out;
    }
    if (win->rank != leader && !alone)
        st = bm_util_shmseg_attach(&win->seg, name, total);
    ok = st == BM_OK;
    BM_OSC_UNLOCKED(rc, bm_mpi_coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, win->comm, fn));
    if (rc)
        goto out;
    if (win->rank == leader && !alone)
        bm_util_shmseg_unlink(&win->seg);
    if (!all_ok) {
        if (st == BM_OK && !alone)
            bm_util_shmseg_detach(&win->seg);
        rc = bm_mpi_error(win->comm, MPI_ERR_NO_MEM, fn,
                          "could not map the shared-memory segment %s of the window", name);
        goto out;
    }
    if (alone) {
        /* nobody to share with: plain memory */
        size_t bytes = win->size ? (size_t)win->size : 1;
        if (posix_memalign(&win->base, 64, bytes) != 0) {
            rc = bm_mpi_error(win->comm, MPI_ERR_NO_MEM, fn,
                              "cannot allocate the %zu bytes of the window", bytes);
            goto out;
        }
        memset(win->base, 0, bytes);
        win->own_memory = true;
        goto out;
    }
    win->has_seg = true;
    win->shm_count = n;
    win->shm_ctl = win->seg.addr;
    win->stripes = (_Atomic uint32_t *)(void *)(win->shm_ctl + n);
    win->bar = (struct bm_osc_shm_bar *)(void *)(win->stripes + BM_OSC_SHM_STRIPES);
    struct bm_osc_shm_ctl *mine = &win->shm_ctl[idx];
    if (win->rank == leader)
        for (int i = 0; i < n; i++) {
            win->shm_ctl[i].offset = offs[i];
            win->shm_ctl[i].size = c1[win->shm_ranks[i]].size;
            win->shm_ctl[i].disp_unit = c1[win->shm_ranks[i]].disp_unit;
        }
    win->lock_word = &mine->lock;
    win->base = (char *)win->seg.addr + my_off;
out:
    free(offs);
    return rc;
}

/* Distinct transports with BM_BTL_CAP_REG_MEM on the paths to the window's
 * ranks, each with its ordinal among this process's modules of that kind. */
static int regmods_collect(MPI_Win win)
{
    struct bm_pml_rma_path paths[8];
    struct bm_btl_module *seen[16];
    int nseen = 0;
    win->regmods = calloc(WIN_MAX_REG, sizeof(*win->regmods));
    if (!win->regmods)
        return -1;
    for (int r = 0; r < win->nranks; r++) {
        int np = bm_pml_rma_paths(bm_mpi_comm_world_rank(win->comm, r), paths, 8);
        for (int i = 0; i < np; i++) {
            struct bm_btl_module *m = paths[i].module;
            bool dup = false;
            for (int k = 0; k < nseen; k++)
                dup |= seen[k] == m;
            if (dup || nseen == 16)
                continue;
            seen[nseen++] = m;
        }
    }
    for (int k = 0; k < nseen && win->nregmods < WIN_MAX_REG; k++) {
        struct bm_btl_module *m = seen[k];
        if (!(m->caps & BM_BTL_CAP_REG_MEM) || !(m->caps & (BM_BTL_CAP_PUT | BM_BTL_CAP_GET)))
            continue;
        int ordinal = 0;
        for (int j = 0; j < k; j++)
            ordinal += seen[j]->ops == m->ops;
        win->regmods[win->nregmods].m = m;
        win->regmods[win->nregmods].ordinal = ordinal;
        win->nregmods++;
    }
    return 0;
}

static void reg_free(MPI_Win win, struct bm_btl_reg_handle **h)
{
    if (!h)
        return;
    for (int i = 0; i < win->nregmods; i++)
        if (h[i])
            bm_btl_deregister_mem(win->regmods[i].m, h[i]);
    free(h);
}

/* Register [base, base + size) with every registering transport. */
static struct bm_btl_reg_handle **reg_make(MPI_Win win, void *base, size_t size)
{
    struct bm_btl_reg_handle **h = calloc((size_t)(win->nregmods ? win->nregmods : 1), sizeof(*h));
    if (!h)
        return NULL;
    for (int i = 0; i < win->nregmods; i++) {
        struct bm_btl_module *m = win->regmods[i].m;
        h[i] = bm_btl_register_mem(m, NULL, base, size ? size : 1,
                                   BM_BTL_REG_F_LOCAL_WRITE | BM_BTL_REG_F_REMOTE_READ |
                                       BM_BTL_REG_F_REMOTE_WRITE | BM_BTL_REG_F_ATOMIC);
        if (!h[i])
            bm_log_warn("transport %s could not register %zu bytes of window memory; operations "
                        "through it go to the target's agent instead",
                        m->name, size);
    }
    return h;
}

/* Fill target r's BTL path from the transports the PML uses for it. */
static void target_paths(MPI_Win win, int r, const struct win_card2 *c)
{
    struct bm_osc_target *t = &win->t[r];
    const struct osc_params *p = params();
    struct bm_pml_rma_path paths[8];
    int np = bm_pml_rma_paths(t->world, paths, 8);
    t->path = BM_OSC_PATH_AM;
    for (int i = 0; i < np; i++) {
        struct bm_btl_module *m = paths[i].module;
        bool rdma = (m->caps & BM_BTL_CAP_PUT) && (m->caps & BM_BTL_CAP_GET);
        bool amo =
            p->btl_atomic && (m->caps & BM_BTL_CAP_ATOMIC_FOPS) && !(m->caps & BM_BTL_CAP_REG_MEM);
        struct bm_btl_reg_handle *rh = NULL;
        bool needs_reg = (m->caps & BM_BTL_CAP_REG_MEM) || m->reg_handle_size > 0;
        /* dynamic windows: every access goes to the agent, which checks it
         * against the regions attached at that moment (a transport put
         * could not tell a detached region, freed or reused since, from an
         * attached one) */
        if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            break;
        if (needs_reg) {
            int ordinal = 0, found = -1, same = 0;
            for (int j = 0; j < np && j < i; j++)
                ordinal += paths[j].module->ops == m->ops;
            for (int k = 0; k < c->nreg && k < WIN_MAX_REG; k++)
                if (strncmp(c->reg[k].transport, m->ops->name, WIN_TRANSPORT_NAME) == 0) {
                    same++;
                    if (found < 0 || c->reg[k].ordinal == ordinal)
                        found = k;
                }
            if (found < 0 || c->reg[found].len == 0 || c->reg[found].len > WIN_MAX_HANDLE ||
                (same > 1 && c->reg[found].ordinal != ordinal))
                continue;
            rh = calloc(1, WIN_MAX_HANDLE);
            if (!rh)
                continue;
            memcpy(rh, c->reg[found].handle, c->reg[found].len);
        }
        if (rdma && p->btl_rdma && t->m == NULL) {
            t->m = m;
            t->ep = paths[i].endpoint;
            t->rhandle = rh;
            t->path = BM_OSC_PATH_BTL;
            rh = NULL;
        }
        if (amo && t->amo_m == NULL) {
            t->amo_m = m;
            t->amo_ep = paths[i].endpoint;
        }
        free(rh);
    }
}

/* The window's rule for accumulate-family operations (MPI_Accumulate,
 * MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap) on integer
 * elements of 8 and 4 bytes, decided here once for the whole window, as
 * Open MPI's osc/rdma does with its BTL's atomics: a transport whose
 * atomics need registration (ofi) is not BM_BTL_ATOMIC_F_GLOBAL (software
 * providers apply them with plain CPU operations), so its atomics and the
 * agent's (or a load/store path's) CPU atomics on one element could
 * interleave. They are used only when every operation of that family on
 * such an element goes through them: every other rank is reached by the
 * same module with fetching atomics for the size, the window is
 * registered with it, this process reaches its own memory through a
 * loopback endpoint of it, and every process of the window can say the
 * same (the caller agrees on it). Returns the sizes (bit 4, bit 8) this
 * process can do so for, and sets the own target's endpoint and handle. */
static unsigned acc_btl_local(MPI_Win win)
{
    const struct osc_params *p = params();
    struct bm_btl_module *m0 = NULL;
    if (!p->btl_atomic || !p->btl_rdma || win->flavor == MPI_WIN_FLAVOR_DYNAMIC || win->nranks < 2)
        return 0;
    for (int r = 0; r < win->nranks; r++) {
        const struct bm_osc_target *t = &win->t[r];
        if (r == win->rank)
            continue;
        if (t->path != BM_OSC_PATH_BTL || t->amo_m || !t->m || !t->rhandle ||
            !(t->m->caps & BM_BTL_CAP_ATOMIC_FOPS) || !(t->m->caps & BM_BTL_CAP_REG_MEM) ||
            (m0 && t->m != m0))
            return 0;
        m0 = t->m;
    }
    unsigned sizes = 0;
    enum bm_btl_atomic_op op;
    uint32_t flags;
    bool fetch_only;
    if (bm_osc_acc_btl_op(MPI_SUM, MPI_INT64_T, m0, &op, &flags, &fetch_only))
        sizes |= 8;
    if (bm_osc_acc_btl_op(MPI_SUM, MPI_INT32_T, m0, &op, &flags, &fetch_only))
        sizes |= 4;
    /* one module of that transport only: atomics of two rails on one
     * element are not atomic with respect to each other */
    int k = -1, same = 0;
    for (int i = 0; i < win->nregmods; i++) {
        same += win->regmods[i].m->ops == m0->ops;
        if (win->regmods[i].m == m0)
            k = i;
    }
    if (!sizes || k < 0 || same != 1 || !win->reg || !win->reg[k] ||
        m0->reg_handle_size > WIN_MAX_HANDLE)
        return 0;
    struct bm_osc_target *self = &win->t[win->rank];
    struct bm_btl_endpoint *ep = NULL;
    struct bm_util_bitmap reach = {0};
    int me = self->world;
    if (bm_util_bitmap_init(&reach, 1) != BM_OK)
        return 0;
    bm_status_t rc = m0->ops->add_procs(m0, 1, &me, &ep, &reach);
    bool ok = rc == BM_OK && ep && bm_util_bitmap_test(&reach, 0);
    bm_util_bitmap_fini(&reach);
    if (!ok || !(self->rhandle = calloc(1, WIN_MAX_HANDLE)))
        return 0;
    memcpy(self->rhandle, win->reg[k], m0->reg_handle_size);
    self->acc_ep = ep;
    for (int r = 0; r < win->nranks; r++)
        if (r != win->rank)
            win->t[r].acc_ep = win->t[r].ep;
    win->acc_m = m0;
    return sizes;
}

static void win_fill_targets(MPI_Win win, const struct win_card2 *c2)
{
    for (int r = 0; r < win->nranks; r++) {
        struct bm_osc_target *t = &win->t[r];
        t->win = win;
        t->world = bm_mpi_comm_world_rank(win->comm, r);
        win->rank_of[t->world] = r;
        t->base = c2[r].base;
        t->size = win->flavor == MPI_WIN_FLAVOR_DYNAMIC ? UINT64_MAX : c2[r].size;
        t->disp_unit = c2[r].disp_unit;
        t->path = BM_OSC_PATH_AM;
    }
    /* the node group's segment */
    for (int i = 0; win->has_seg && i < win->shm_count; i++) {
        struct bm_osc_target *t = &win->t[win->shm_ranks[i]];
        t->path = BM_OSC_PATH_SHM;
        t->shm = (char *)win->seg.addr + win->shm_ctl[i].offset;
        t->shm_lock = &win->shm_ctl[i].lock;
    }
    /* this process's own memory (dynamic windows: addresses are absolute) */
    struct bm_osc_target *self = &win->t[win->rank];
    self->path = BM_OSC_PATH_SHM;
    self->shm = win->flavor == MPI_WIN_FLAVOR_DYNAMIC ? NULL : win->base;
    self->shm_lock = win->lock_word;
    for (int r = 0; r < win->nranks; r++)
        if (win->t[r].path != BM_OSC_PATH_SHM)
            target_paths(win, r, &c2[r]);
}

static void win_destroy(MPI_Win win)
{
    for (struct bm_mpi_win **pw = &win_g.list; *pw; pw = &(*pw)->next)
        if (*pw == win) {
            *pw = win->next;
            break;
        }
    if (win->t)
        for (int r = 0; r < win->nranks; r++) {
            free(win->t[r].rhandle);
            free(win->t[r].batch);
        }
    free(win->t);
    free(win->rank_of);
    reg_free(win, win->reg);
    for (int i = 0; i < win->nregions; i++)
        reg_free(win, win->regions[i].handles);
    free(win->regions);
    free(win->regmods);
    if (win->has_seg)
        bm_util_shmseg_detach(&win->seg);
    else if (win->own_memory)
        free(win->base);
    free(win->shm_ranks);
    free(win->post_group);
    free(win->start_group);
    while (win->lock_waiters) {
        struct bm_osc_lock_wait *lw = win->lock_waiters;
        win->lock_waiters = lw->next;
        free(lw);
    }
    if (win->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&win->comm);
    if (win->errhandler)
        bm_mpi_errhandler_release(win->errhandler);
    win->magic = 0;
    free(win);
}

/* The collective part shared by the four flavours. base is the user's
 * memory (create), or where the allocated base goes (allocate, shared). */
static int win_setup(MPI_Comm comm, int flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                     void *user_base, void *baseptr, MPI_Win *win_out, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (win_out == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL window pointer");
    if (size < 0)
        return bm_mpi_error(comm, MPI_ERR_SIZE, fn, "negative window size %ld", (long)size);
    if (disp_unit <= 0)
        return bm_mpi_error(comm, MPI_ERR_DISP, fn, "displacement unit %d (it must be positive)",
                            disp_unit);
    if (flavor == MPI_WIN_FLAVOR_CREATE && user_base == NULL && size > 0)
        return bm_mpi_error(comm, MPI_ERR_BASE, fn, "NULL base for a %ld-byte window", (long)size);
    if ((flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED) && !baseptr)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL baseptr");
    bm_osc_agent_init();
    struct bm_mpi_win *win = calloc(1, sizeof(*win));
    if (!win)
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    win->magic = BM_MPI_MAGIC_WIN;
    win->flavor = flavor;
    win->model = MPI_WIN_UNIFIED;
    win->size = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : size;
    win->disp_unit = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 1 : disp_unit;
    win->errhandler = MPI_ERRORS_ARE_FATAL;
    win->lock_word = &win->lock_private;
    info_apply(win, info, true);
    win->nranks = comm->size;
    win->rank = comm->rank;
    win->comm = MPI_COMM_NULL;

    /* a private communicator: its context id names the window */
    int *wr = malloc(sizeof(int) * (size_t)comm->size);
    if (!wr) {
        free(win);
        return bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int r = 0; r < comm->size; r++)
        wr[r] = bm_mpi_comm_world_rank(comm, r);
    BM_OSC_UNLOCKED(rc, bm_mpi_comm_create_from(comm, wr, comm->size, comm->rank, &win->comm, fn));
    free(wr);
    if (rc) {
        free(win);
        return rc;
    }
    win->id = win->comm->context_id;
    win->rndv_limit = params()->rndv_limit;
    win->batch_max = params()->batch;
    win->stream_min = params()->stream_min ? params()->stream_min : SIZE_MAX;
    win->t = calloc((size_t)win->nranks, sizeof(*win->t));
    win->rank_of = malloc(sizeof(int) * (size_t)MPI_COMM_WORLD->size);
    if (win->rank_of)
        for (int w = 0; w < MPI_COMM_WORLD->size; w++)
            win->rank_of[w] = -1;
    struct win_card1 *c1 = calloc((size_t)win->nranks, sizeof(*c1));
    struct win_card2 *c2 = calloc((size_t)win->nranks, sizeof(*c2));
    if (!win->t || !win->rank_of || !c1 || !c2) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        goto err;
    }

    /* where the memory goes */
    struct win_card1 mine1 = {
        .size = (uint64_t)win->size,
        .disp_unit = win->disp_unit,
        .node = bm_rte_node_of(bm_mpi_comm_world_rank(comm, comm->rank)),
        .shm_ok = 0,
    };
    if (flavor == MPI_WIN_FLAVOR_SHARED) {
        mine1.shm_ok = 1;
    } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE && params()->shm == 0) {
        mine1.shm_ok = 1;
        for (int r = 0; r < comm->size; r++) {
            int w = bm_mpi_comm_world_rank(comm, r);
            if (bm_rte_node_of(w) == mine1.node && !bm_pml_peer_on_shm(w))
                mine1.shm_ok = 0;
        }
    }
    BM_OSC_UNLOCKED(rc, bm_mpi_coll_allgather_bytes(&mine1, c1, sizeof(mine1), win->comm, fn));
    if (rc)
        goto err;
    /* which processes share a segment: those of one node that all may
     * (every process computes the same from the same cards) */
    int *key = malloc(sizeof(int) * (size_t)win->nranks);
    if (!key) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        goto err;
    }
    bool any = false;
    for (int r = 0; r < win->nranks; r++) {
        bool ok = c1[r].shm_ok != 0;
        int peers = 0;
        for (int q = 0; q < win->nranks; q++)
            if (c1[q].node == c1[r].node) {
                ok &= c1[q].shm_ok != 0;
                peers++;
            }
        if (flavor == MPI_WIN_FLAVOR_SHARED && c1[r].node != c1[0].node) {
            free(key);
            rc = bm_mpi_error(comm, MPI_ERR_RMA_SHARED, fn,
                              "ranks 0 and %d of the communicator run on different nodes: "
                              "MPI_Win_allocate_shared needs processes that can share memory "
                              "(split the communicator with MPI_Comm_split_type("
                              "MPI_COMM_TYPE_SHARED) first)",
                              r);
            goto err;
        }
        ok &= peers > 1 || flavor == MPI_WIN_FLAVOR_SHARED;
        key[r] = ok ? c1[r].node : -2 - r;
        any |= ok;
    }
    if (any) {
        rc = shm_setup(win, c1, key, fn);
    } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
        size_t bytes = win->size ? (size_t)win->size : 1;
        if (posix_memalign(&win->base, 64, bytes) != 0)
            rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn,
                              "cannot allocate the %zu bytes of the window", bytes);
        else
            memset(win->base, 0, bytes);
        win->own_memory = true;
    } else if (flavor == MPI_WIN_FLAVOR_CREATE) {
        win->base = user_base;
    }
    free(key);
    if (rc)
        goto err;

    /* registration with the transports that need it */
    if (regmods_collect(win) != 0) {
        rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
        goto err;
    }
    struct win_card2 *m2 = &c2[win->rank];
    m2->base = (uint64_t)(uintptr_t)win->base;
    m2->size = (uint64_t)win->size;
    m2->disp_unit = win->disp_unit;
    if (flavor != MPI_WIN_FLAVOR_DYNAMIC && win->nregmods > 0) {
        win->reg = reg_make(win, win->base, (size_t)win->size);
        if (!win->reg) {
            rc = bm_mpi_error(comm, MPI_ERR_NO_MEM, fn, "out of memory");
            goto err;
        }
        for (int i = 0; i < win->nregmods; i++) {
            struct bm_btl_module *m = win->regmods[i].m;
            if (!win->reg[i] || m->reg_handle_size > WIN_MAX_HANDLE)
                continue;
            int k = m2->nreg++;
            snprintf(m2->reg[k].transport, WIN_TRANSPORT_NAME, "%s", m->ops->name);
            m2->reg[k].ordinal = win->regmods[i].ordinal;
            m2->reg[k].len = (uint32_t)m->reg_handle_size;
            memcpy(m2->reg[k].handle, win->reg[i], m->reg_handle_size);
        }
    }
    /* active messages may arrive as soon as another process has the cards */
    win->next = win_g.list;
    win_g.list = win;
    struct win_card2 mine2 = *m2;
    BM_OSC_UNLOCKED(rc, bm_mpi_coll_allgather_bytes(&mine2, c2, sizeof(mine2), win->comm, fn));
    if (rc)
        goto err;
    win_fill_targets(win, c2);
    int all = 1, agreed = 0;
    for (int r = 0; r < win->nranks; r++)
        all &= win->t[r].path == BM_OSC_PATH_SHM;
    BM_OSC_UNLOCKED(rc, bm_mpi_coll_allreduce(&all, &agreed, 1, MPI_INT, MPI_LAND, win->comm, fn));
    if (rc)
        goto err;
    win->all_shm = agreed != 0;
    int sizes = (int)acc_btl_local(win), agreed_sizes = 0;
    BM_OSC_UNLOCKED(
        rc, bm_mpi_coll_allreduce(&sizes, &agreed_sizes, 1, MPI_INT, MPI_BAND, win->comm, fn));
    if (rc)
        goto err;
    win->acc_btl = (unsigned)agreed_sizes;
    if (win->acc_btl)
        bm_log_debug("window %u: accumulate-family operations on %s%s-byte integers through %s's "
                     "atomics",
                     win->id, win->acc_btl & 8 ? "8" : "",
                     win->acc_btl == 12 ? " and 4" : (win->acc_btl == 4 ? "4" : ""),
                     win->acc_m->name);
    for (int r = 0; r < win->nranks; r++) {
        const struct bm_osc_target *t = &win->t[r];
        bm_log_debug("window %u: rank %d via %s%s%s", win->id, r,
                     t->path == BM_OSC_PATH_SHM   ? "loads and stores"
                     : t->path == BM_OSC_PATH_BTL ? t->m->name
                                                  : "the agent",
                     t->amo_m ? ", atomics on " : "", t->amo_m ? t->amo_m->name : "");
    }
    free(c1);
    free(c2);
    if (baseptr)
        memcpy(baseptr, &win->base, sizeof(void *));
    *win_out = win;
    return MPI_SUCCESS;

err:
    free(c1);
    free(c2);
    win_destroy(win);
    return rc;
}

static int win_create_body(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                           MPI_Win *win)
{
    return win_setup(comm, MPI_WIN_FLAVOR_CREATE, size, disp_unit, info, base, NULL, win,
                     "MPI_Win_create");
}

int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                    MPI_Win *win)
{
    BM_OSC_LOCKED(win_create_body(base, size, disp_unit, info, comm, win));
}
BM_MPI_ALIAS(Win_create);

static int win_allocate_body(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                             void *baseptr, MPI_Win *win)
{
    return win_setup(comm, MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit, info, NULL, baseptr, win,
                     "MPI_Win_allocate");
}

int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                      MPI_Win *win)
{
    BM_OSC_LOCKED(win_allocate_body(size, disp_unit, info, comm, baseptr, win));
}
BM_MPI_ALIAS(Win_allocate);

static int win_allocate_shared_body(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                    void *baseptr, MPI_Win *win)
{
    return win_setup(comm, MPI_WIN_FLAVOR_SHARED, size, disp_unit, info, NULL, baseptr, win,
                     "MPI_Win_allocate_shared");
}

int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                             void *baseptr, MPI_Win *win)
{
    BM_OSC_LOCKED(win_allocate_shared_body(size, disp_unit, info, comm, baseptr, win));
}
BM_MPI_ALIAS(Win_allocate_shared);

static int win_create_dynamic_body(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    return win_setup(comm, MPI_WIN_FLAVOR_DYNAMIC, 0, 1, info, NULL, NULL, win,
                     "MPI_Win_create_dynamic");
}

int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    BM_OSC_LOCKED(win_create_dynamic_body(info, comm, win));
}
BM_MPI_ALIAS(Win_create_dynamic);

static int win_shared_query_body(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                 void *baseptr)
{
    static const char fn[] = "MPI_Win_shared_query";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!size || !disp_unit || !baseptr)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL output argument");
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= win->nranks))
        return bm_osc_win_error(win, MPI_ERR_RANK, fn, "invalid rank %d (the window has %d)", rank,
                                win->nranks);
    /* Windows of the other flavours too, as MPI-4.0 has it and MPICH does
     * (its rma/win_shared_query asks every flavour; MPI-3.1 left such a
     * call erroneous): a rank's memory this process can load and store
     * (this process's own, an allocated window's segment) is told as for
     * a shared window, any other is size 0, disp_unit 0, NULL. */
    bool shared = win->flavor == MPI_WIN_FLAVOR_SHARED;
    if (rank == MPI_PROC_NULL) {
        /* the first rank with memory (here) */
        for (rank = 0;
             rank < win->nranks - 1 && (win->t[rank].size == 0 || (!shared && !win->t[rank].shm));
             rank++)
            ;
    }
    void *p = NULL; /* an empty segment has no address: NULL, as in Open MPI and MPICH
                     * (MPICH's rma/win_shared_noncontig_put checks it) */
    *size = 0;
    *disp_unit = 0;
    if (shared || win->t[rank].shm) {
        *size = (MPI_Aint)win->t[rank].size;
        *disp_unit = win->t[rank].disp_unit;
        p = win->t[rank].size ? win->t[rank].shm : NULL;
    } else if (rank == win->rank && win->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        *size = win->size;
        *disp_unit = win->disp_unit;
        p = win->size ? win->base : NULL;
    }
    memcpy(baseptr, &p, sizeof(void *));
    return MPI_SUCCESS;
}

int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    BM_OSC_LOCKED(win_shared_query_body(win, rank, size, disp_unit, baseptr));
}
BM_MPI_ALIAS(Win_shared_query);

/* ---- dynamic windows ------------------------------------------------------ */

static int win_attach_body(MPI_Win win, void *base, MPI_Aint size)
{
    static const char fn[] = "MPI_Win_attach";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return bm_osc_win_error(win, MPI_ERR_RMA_FLAVOR, fn,
                                "only windows made by MPI_Win_create_dynamic take attached "
                                "memory");
    if (size < 0 || (size > 0 && base == NULL))
        return bm_osc_win_error(win, MPI_ERR_RMA_ATTACH, fn, "invalid region %p of %ld bytes", base,
                                (long)size);
    uint64_t b = (uint64_t)(uintptr_t)base, e = b + (uint64_t)size;
    for (int i = 0; i < win->nregions; i++) {
        struct bm_osc_region *g = &win->regions[i];
        if (b < g->base + g->size && g->base < e)
            return bm_osc_win_error(win, MPI_ERR_RMA_ATTACH, fn,
                                    "the region %p (%ld bytes) overlaps one attached before "
                                    "(%p, %llu bytes)",
                                    base, (long)size, (void *)(uintptr_t)g->base,
                                    (unsigned long long)g->size);
    }
    if (win->nregions == win->cap_regions) {
        int cap = win->cap_regions ? 2 * win->cap_regions : 8;
        struct bm_osc_region *n = realloc(win->regions, sizeof(*n) * (size_t)cap);
        if (!n)
            return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
        win->regions = n;
        win->cap_regions = cap;
    }
    struct bm_osc_region *g = &win->regions[win->nregions];
    g->base = b;
    g->size = (uint64_t)size;
    g->handles = win->nregmods ? reg_make(win, base, (size_t)size) : NULL;
    win->nregions++;
    return MPI_SUCCESS;
}

int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    BM_OSC_LOCKED(win_attach_body(win, base, size));
}
BM_MPI_ALIAS(Win_attach);

static int win_detach_body(MPI_Win win, const void *base)
{
    static const char fn[] = "MPI_Win_detach";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return bm_osc_win_error(win, MPI_ERR_RMA_FLAVOR, fn,
                                "only windows made by MPI_Win_create_dynamic have attached "
                                "memory");
    for (int i = 0; i < win->nregions; i++)
        if (win->regions[i].base == (uint64_t)(uintptr_t)base) {
            reg_free(win, win->regions[i].handles);
            win->regions[i] = win->regions[--win->nregions];
            return MPI_SUCCESS;
        }
    return bm_osc_win_error(win, MPI_ERR_RMA_ATTACH, fn,
                            "no region attached at %p (MPI_Win_detach takes the base address "
                            "given to MPI_Win_attach)",
                            base);
}

int PMPI_Win_detach(MPI_Win win, const void *base)
{
    BM_OSC_LOCKED(win_detach_body(win, base));
}
BM_MPI_ALIAS(Win_detach);

bool bm_osc_region_ok(MPI_Win win, uint64_t addr, uint64_t len)
{
    /* One access may span regions attached end to end (MPICH accepts it:
     * its rma/win_dynamic_rma_flush_get reads across two): each step moves
     * addr to the end of the region that holds it. Regions never overlap,
     * so addr only grows. */
    for (;;) {
        const struct bm_osc_region *in = NULL;
        for (int i = 0; i < win->nregions && !in; i++) {
            const struct bm_osc_region *g = &win->regions[i];
            if (addr >= g->base && addr - g->base < g->size)
                in = g;
        }
        if (!in)
            return false;
        uint64_t room = in->base + in->size - addr;
        if (len <= room)
            return true;
        addr += room;
        len -= room;
    }
}

/* ---- free ----------------------------------------------------------------- */

static int win_free_body(MPI_Win *winp)
{
    static const char fn[] = "MPI_Win_free";
    int rc;
    if (!winp)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL window pointer");
    MPI_Win win = *winp;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (win->access == BM_OSC_ACCESS_LOCK || win->access == BM_OSC_ACCESS_LOCK_ALL ||
        win->access == BM_OSC_ACCESS_PSCW || win->exposure_pscw)
        return bm_osc_win_error(win, MPI_ERR_RMA_SYNC, fn,
                                "an epoch is still open (%s): close it before freeing the window",
                                win->exposure_pscw ? "MPI_Win_post without MPI_Win_wait"
                                : win->access == BM_OSC_ACCESS_PSCW
                                    ? "MPI_Win_start without MPI_Win_complete"
                                    : "a lock is held");
    /* operations still in flight (a fence epoch without a closing fence is
     * erroneous, but nothing must be left pointing at freed memory) */
    rc = bm_osc_complete(win, -1, false);
    if (rc)
        rc = bm_osc_report_async(win, fn);
    int rc2 = bm_mpi_win_attr_delete_all(win, fn);
    /* nobody accesses this window once every process reached the barrier */
    int rc3;
    BM_OSC_UNLOCKED(rc3, bm_mpi_coll_barrier(win->comm, fn));
    win_destroy(win);
    *winp = MPI_WIN_NULL;
    return rc ? rc : rc2 ? rc2 : rc3;
}

int PMPI_Win_free(MPI_Win *winp)
{
    BM_OSC_LOCKED(win_free_body(winp));
}
BM_MPI_ALIAS(Win_free);

/* ---- queries -------------------------------------------------------------- */

static int win_get_group_body(MPI_Win win, MPI_Group *group)
{
    static const char fn[] = "MPI_Win_get_group";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!group)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL group pointer");
    return PMPI_Comm_group(win->comm, group);
}

int PMPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    BM_OSC_LOCKED(win_get_group_body(win, group));
}
BM_MPI_ALIAS(Win_get_group);

static int win_set_info_body(MPI_Win win, MPI_Info info)
{
    static const char fn[] = "MPI_Win_set_info";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    info_apply(win, info, false);
    return MPI_SUCCESS;
}

int PMPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    BM_OSC_LOCKED(win_set_info_body(win, info));
}
BM_MPI_ALIAS(Win_set_info);

static int win_get_info_body(MPI_Win win, MPI_Info *info_used)
{
    static const char fn[] = "MPI_Win_get_info";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!info_used)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL info pointer");
    MPI_Info info;
    if ((rc = PMPI_Info_create(&info)))
        return rc;
    PMPI_Info_set(info, "no_locks", win->no_locks ? "true" : "false");
    PMPI_Info_set(info, "accumulate_ordering", win->acc_ordering);
    PMPI_Info_set(info, "accumulate_ops", win->acc_ops);
    PMPI_Info_set(info, "same_size", win->same_size ? "true" : "false");
    PMPI_Info_set(info, "same_disp_unit", win->same_disp_unit ? "true" : "false");
    if (win->flavor == MPI_WIN_FLAVOR_SHARED)
        PMPI_Info_set(info, "alloc_shared_noncontig",
                      win->alloc_shared_noncontig ? "true" : "false");
    *info_used = info;
    return MPI_SUCCESS;
}

int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    BM_OSC_LOCKED(win_get_info_body(win, info_used));
}
BM_MPI_ALIAS(Win_get_info);

static int win_set_name_body(MPI_Win win, const char *win_name)
{
    static const char fn[] = "MPI_Win_set_name";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!win_name)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL name");
    snprintf(win->name, sizeof(win->name), "%s", win_name);
    return MPI_SUCCESS;
}

int PMPI_Win_set_name(MPI_Win win, const char *win_name)
{
    BM_OSC_LOCKED(win_set_name_body(win, win_name));
}
BM_MPI_ALIAS(Win_set_name);

static int win_get_name_body(MPI_Win win, char *win_name, int *resultlen)
{
    static const char fn[] = "MPI_Win_get_name";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!win_name || !resultlen)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL output argument");
    snprintf(win_name, MPI_MAX_OBJECT_NAME, "%s", win->name);
    *resultlen = (int)strlen(win_name);
    return MPI_SUCCESS;
}

int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    BM_OSC_LOCKED(win_get_name_body(win, win_name, resultlen));
}
BM_MPI_ALIAS(Win_get_name);

/* ---- error handlers --------------------------------------------------------- */

static int win_create_errhandler_body(MPI_Win_errhandler_function *function,
                                      MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_Win_create_errhandler";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!function || !errhandler)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL %s",
                            function ? "errhandler pointer" : "handler function");
    struct bm_mpi_errhandler *eh = calloc(1, sizeof(*eh));
    if (!eh)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    eh->magic = BM_MPI_MAGIC_ERRHANDLER;
    eh->kind = BM_MPI_ERRH_USER;
    eh->win_fn = function;
    eh->refcount = 1;
    *errhandler = eh;
    return MPI_SUCCESS;
}

int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *function, MPI_Errhandler *errhandler)
{
    BM_OSC_LOCKED(win_create_errhandler_body(function, errhandler));
}
BM_MPI_ALIAS(Win_create_errhandler);

static int win_set_errhandler_body(MPI_Win win, MPI_Errhandler errhandler)
{
    static const char fn[] = "MPI_Win_set_errhandler";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (errhandler == MPI_ERRHANDLER_NULL || errhandler->magic != BM_MPI_MAGIC_ERRHANDLER)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "invalid error handler %p",
                                (void *)errhandler);
    if (errhandler->kind == BM_MPI_ERRH_USER && !errhandler->win_fn)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn,
                                "the error handler was made by MPI_Comm_create_errhandler; a "
                                "window needs one from MPI_Win_create_errhandler");
    bm_mpi_errhandler_retain(errhandler);
    bm_mpi_errhandler_release(win->errhandler);
    win->errhandler = errhandler;
    return MPI_SUCCESS;
}

int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    BM_OSC_LOCKED(win_set_errhandler_body(win, errhandler));
}
BM_MPI_ALIAS(Win_set_errhandler);

static int win_get_errhandler_body(MPI_Win win, MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_Win_get_errhandler";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!errhandler)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL errhandler pointer");
    bm_mpi_errhandler_retain(win->errhandler);
    *errhandler = win->errhandler;
    return MPI_SUCCESS;
}

int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    BM_OSC_LOCKED(win_get_errhandler_body(win, errhandler));
}
BM_MPI_ALIAS(Win_get_errhandler);

static int win_call_errhandler_body(MPI_Win win, int errorcode)
{
    static const char fn[] = "MPI_Win_call_errhandler";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    bm_osc_win_error(win, errorcode, fn, "error raised by the application (code %d)", errorcode);
    return MPI_SUCCESS;
}

int PMPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    BM_OSC_LOCKED(win_call_errhandler_body(win, errorcode));
}
BM_MPI_ALIAS(Win_call_errhandler);
