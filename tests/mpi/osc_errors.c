/* Errors of one-sided communication, each checked for its class on the
 * window's error handler (MPI_ERRORS_RETURN, then a user handler made by
 * MPI_Win_create_errhandler): operations outside any epoch
 * (MPI_ERR_RMA_SYNC), outside the target's window (MPI_ERR_RMA_RANGE), bad
 * ranks, lock types and assertions, a user operation in an accumulate
 * (MPI_ERR_OP), mismatched types (MPI_ERR_TYPE), flavour-specific calls on
 * the wrong flavour (MPI_ERR_RMA_FLAVOR; MPI_Win_shared_query answers for any), unlocking what is
 * not locked, MPI_Win_call_errhandler, a communicator's handler refused by a window, and large
 * operations outside a dynamic window's attached memory. With the argument "inject" (run with
 * BM_MPI_OSC_FAIL_RDMA=1 over a transport path) every transport operation fails as a broken link
 * would: puts, gets, fetch-and-ops and request-based operations must report an error on the window
 * (MPI_ERRORS_RETURN, and a user handler called once) and nothing may hang. */
#include "osc_common.h"

#include <stdbool.h>
#include <stdint.h>

static int rank, nranks, handler_calls, handler_code;
static MPI_Win handler_win;

static void win_handler(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_win = *win;
}

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)dt;
}

#define EXPECT(call, cls)                                                                          \
    do {                                                                                           \
        int rc_ = (call), c_ = -1;                                                                 \
        MPI_Error_class(rc_, &c_);                                                                 \
        BM_CHECK_MSG(c_ == (cls), "rank %d: %s gave class %d, expected %s", rank, #call, c_,       \
                     #cls);                                                                        \
    } while (0)

static void test_classes(void)
{
    int64_t buf[8] = {0};
    MPI_Win win, cwin;
    int64_t *base;
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int next = (rank + 1) % nranks;
    /* no epoch */
    EXPECT(MPI_Put(buf, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock(next, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_flush(next, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    MPI_Request req;
    MPI_Win_fence(0, win);
    EXPECT(MPI_Rput(buf, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, win, &req), MPI_ERR_RMA_SYNC);
    /* outside the window: 8 elements of 8 bytes, displacement unit 8 */
    EXPECT(MPI_Put(buf, 2, MPI_INT64_T, next, 7, 2, MPI_INT64_T, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Get(buf, 1, MPI_INT64_T, next, -1, 1, MPI_INT64_T, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(buf, 1, MPI_INT64_T, nranks, 0, 1, MPI_INT64_T, win), MPI_ERR_RANK);
    EXPECT(MPI_Put(buf, 1, MPI_INT64_T, next, 0, 1, MPI_INT32_T, win), MPI_ERR_TYPE);
    EXPECT(MPI_Put(buf, -1, MPI_INT64_T, next, 0, -1, MPI_INT64_T, win), MPI_ERR_COUNT);
    MPI_Op op;
    MPI_Op_create(user_op, 1, &op);
    EXPECT(MPI_Accumulate(buf, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, op, win), MPI_ERR_OP);
    EXPECT(MPI_Accumulate(buf, 1, MPI_DOUBLE, next, 0, 1, MPI_DOUBLE, MPI_BAND, win), MPI_ERR_OP);
    EXPECT(MPI_Accumulate(buf, 2, MPI_INT32_T, next, 0, 1, MPI_INT64_T, MPI_SUM, win),
           MPI_ERR_TYPE);
    EXPECT(MPI_Compare_and_swap(buf, buf + 1, buf + 2, MPI_DOUBLE, next, 0, win), MPI_ERR_TYPE);
    MPI_Op_free(&op);
    EXPECT(MPI_Win_fence(12345, win), MPI_ERR_ASSERT);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win), MPI_SUCCESS);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win), MPI_ERR_RMA_SYNC); /* twice */
    EXPECT(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock(next, win), MPI_SUCCESS);
    EXPECT(MPI_Win_lock(77, next, 0, win), MPI_ERR_LOCKTYPE);
    EXPECT(MPI_Win_lock_all(0, win), MPI_SUCCESS);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock_all(win), MPI_SUCCESS);
    /* flavour-specific calls */
    MPI_Aint sz;
    int du;
    void *p;
    /* MPI_Win_shared_query answers for every flavour (MPI-4.0 and MPICH; an
     * error in MPI-3.1): this process's own memory at least; a bad rank is
     * still an error */
    EXPECT(MPI_Win_shared_query(win, rank, &sz, &du, &p), MPI_SUCCESS);
    BM_CHECK_MSG(sz == 64 && du == 8 && p == (void *)base,
                 "rank %d: shared_query of its own allocated window: %ld bytes, unit %d, %p (base "
                 "%p)",
                 rank, (long)sz, du, p, (void *)base);
    EXPECT(MPI_Win_shared_query(win, nranks, &sz, &du, &p), MPI_ERR_RANK);
    EXPECT(MPI_Win_attach(win, buf, 8), MPI_ERR_RMA_FLAVOR);
    EXPECT(MPI_Win_detach(win, buf), MPI_ERR_RMA_FLAVOR);
    /* a handler for communicators is not one for windows */
    MPI_Errhandler ceh, weh;
    MPI_Comm_create_errhandler(comm_handler, &ceh);
    EXPECT(MPI_Win_set_errhandler(win, ceh), MPI_ERR_ARG);
    MPI_Errhandler_free(&ceh);
    /* a user handler sees the window and the class */
    MPI_Win_create_errhandler(win_handler, &weh);
    MPI_Win_set_errhandler(win, weh);
    MPI_Errhandler_free(&weh);
    handler_calls = 0;
    EXPECT(MPI_Put(buf, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, win), MPI_ERR_RMA_SYNC);
    BM_CHECK(handler_calls == 1 && handler_code == MPI_ERR_RMA_SYNC && handler_win == win);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    BM_CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER);
    MPI_Errhandler got;
    MPI_Win_get_errhandler(win, &got);
    BM_CHECK(got != MPI_ERRORS_RETURN && got != MPI_ERRHANDLER_NULL);
    MPI_Errhandler_free(&got);
    MPI_Win_free(&win);
    /* errors without a window, and creation errors, go to the communicator */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    EXPECT(MPI_Win_free(&win), MPI_ERR_WIN);
    EXPECT(MPI_Win_create(buf, 64, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &cwin), MPI_ERR_DISP);
    EXPECT(MPI_Win_allocate(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &cwin), MPI_ERR_SIZE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A large put and get (their data a PML message: dynamic windows take the
 * agent's path on every transport) to memory the target has not attached:
 * MPI_ERR_RMA_RANGE at the flush, and the refused put's data is still
 * taken, so that a large put to attached memory after it lands in full. */
static void test_dynamic_range(void)
{
    enum { BIG = 256 << 10 };
    unsigned char *mem = malloc(BIG), *buf = malloc(BIG);
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, mem, BIG);
    memset(mem, 0, BIG);
    memset(buf, rank + 1, BIG);
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Aint mine, theirs;
    MPI_Get_address(mem, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &theirs, 1, MPI_AINT, next, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    EXPECT(MPI_Put(buf, BIG, MPI_BYTE, next, theirs + BIG, BIG, MPI_BYTE, win), MPI_SUCCESS);
    EXPECT(MPI_Win_flush(next, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Get(buf, BIG, MPI_BYTE, next, theirs + BIG, BIG, MPI_BYTE, win), MPI_SUCCESS);
    EXPECT(MPI_Win_flush(next, win), MPI_ERR_RMA_RANGE);
    memset(buf, rank + 1, BIG);
    EXPECT(MPI_Put(buf, BIG, MPI_BYTE, next, theirs, BIG, MPI_BYTE, win), MPI_SUCCESS);
    EXPECT(MPI_Win_unlock(next, win), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < BIG; i++)
        bad += mem[i] != (unsigned char)(prev + 1);
    BM_CHECK_MSG(bad == 0, "rank %d: %d bytes of rank %d's large put missing", rank, bad, prev);
    MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(mem);
    free(buf);
}

/* Every transport operation fails (BM_MPI_OSC_FAIL_RDMA=1); amo: the
 * transport has atomics too (sm). */
static void test_injected(bool amo)
{
    int64_t v = 7, res = 0, src[64] = {0}, dst[64];
    MPI_Win win;
    int64_t *base;
    MPI_Win_allocate(64 * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int next = (rank + 1) % nranks;
    MPI_Win_lock_all(0, win);
    EXPECT(MPI_Put(src, 64, MPI_INT64_T, next, 0, 64, MPI_INT64_T, win), MPI_ERR_OTHER);
    EXPECT(MPI_Get(dst, 64, MPI_INT64_T, next, 0, 64, MPI_INT64_T, win), MPI_ERR_OTHER);
    int amo_cls = amo ? MPI_ERR_OTHER : MPI_SUCCESS; /* else the agent does them */
    EXPECT(MPI_Fetch_and_op(&v, &res, MPI_INT64_T, next, 0, MPI_SUM, win), amo_cls);
    EXPECT(MPI_Compare_and_swap(&v, &res, &res, MPI_INT64_T, next, 1, win), amo_cls);
    MPI_Request r = MPI_REQUEST_NULL;
    EXPECT(MPI_Rput(src, 8, MPI_INT64_T, next, 0, 8, MPI_INT64_T, win, &r), MPI_ERR_OTHER);
    BM_CHECK(r == MPI_REQUEST_NULL);
    /* the same failure on a user handler: called once, with the class */
    MPI_Errhandler eh;
    MPI_Win_create_errhandler(win_handler, &eh);
    MPI_Win_set_errhandler(win, eh);
    handler_calls = 0;
    handler_code = MPI_SUCCESS;
    MPI_Put(src, 64, MPI_INT64_T, next, 0, 64, MPI_INT64_T, win);
    int hcls = -1;
    MPI_Error_class(handler_code, &hcls);
    BM_CHECK_MSG(handler_calls == 1 && hcls == MPI_ERR_OTHER && handler_win == win,
                 "rank %d: failed put: handler called %d times with class %d", rank, handler_calls,
                 hcls);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    /* the window still works for what does not need the transport */
    EXPECT(MPI_Accumulate(src, 64, MPI_INT64_T, next, 0, 64, MPI_INT64_T, MPI_SUM, win),
           MPI_SUCCESS);
    EXPECT(MPI_Win_flush_all(win), MPI_SUCCESS);
    EXPECT(MPI_Win_unlock_all(win), MPI_SUCCESS);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc > 1 && strncmp(argv[1], "inject", 6) == 0) {
        bm_test_current = "injected transport failures";
        test_injected(strcmp(argv[1], "inject_amo") == 0);
    } else {
        bm_test_current = "error classes";
        test_classes();
        bm_test_current = "dynamic window, large operations outside it";
        test_dynamic_range();
    }
    MPI_Finalize();
    return bm_test_summary("osc_errors");
}
