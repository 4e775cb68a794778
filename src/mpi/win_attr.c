/* Attributes of windows: the predefined ones (MPI_WIN_BASE, MPI_WIN_SIZE,
 * MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL) and user keys
 * made with MPI_Win_create_keyval, whose delete callbacks run when an
 * attribute is replaced or deleted and when the window is freed. The work
 * is the attribute engine's (attr.c: keys reference counted, an attribute
 * unlinked before its delete callback runs, keys of another kind refused);
 * this file gives it the window's list and handle, and reports errors
 * through the window's error handler. Windows are never duplicated, so
 * copy callbacks are kept only because the standard's signature has them. */
#include "mpi/win.h"

#include <string.h>

int bm_mpi_win_dup_fn(MPI_Win oldwin, int win_keyval, void *extra_state, void *attribute_val_in,
                      void *attribute_val_out, int *flag)
{
    (void)oldwin;
    (void)win_keyval;
    (void)extra_state;
    memcpy(attribute_val_out, &attribute_val_in, sizeof(void *));
    *flag = 1;
    return MPI_SUCCESS;
}

static int win_attr_error(void *win, int errclass, const char *fn, const char *msg)
{
    return bm_osc_win_error(win, errclass, fn, "%s", msg);
}

static struct bm_mpi_attr_owner win_owner(MPI_Win win)
{
    return (struct bm_mpi_attr_owner){
        .kind = BM_MPI_ATTR_WIN, .obj = win, .list = &win->attrs, .error = win_attr_error};
}

static bool keyval_predefined(int keyval)
{
    return keyval >= MPI_WIN_BASE && keyval <= MPI_WIN_MODEL;
}

static int check_not_predefined(MPI_Win win, int keyval, const char *fn)
{
    if (keyval_predefined(keyval))
        return bm_osc_win_error(win, MPI_ERR_KEYVAL, fn,
                                "attribute key %d is predefined and read-only", keyval);
    return MPI_SUCCESS;
}

int bm_mpi_win_attr_delete_all(MPI_Win win, const char *fn)
{
    struct bm_mpi_attr_owner o = win_owner(win);
    return bm_mpi_attr_delete_list(&o, fn);
}

int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                           MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                           void *extra_state)
{
    return bm_mpi_keyval_create(BM_MPI_ATTR_WIN, (void (*)(void))win_copy_attr_fn,
                                (void (*)(void))win_delete_attr_fn, extra_state, win_keyval,
                                "MPI_Win_create_keyval");
}
BM_MPI_ALIAS(Win_create_keyval);

int PMPI_Win_free_keyval(int *win_keyval)
{
    static const char fn[] = "MPI_Win_free_keyval";
    int rc;
    if (win_keyval && (rc = check_not_predefined(MPI_WIN_NULL, *win_keyval, fn)))
        return rc;
    return bm_mpi_keyval_free(BM_MPI_ATTR_WIN, win_keyval, fn);
}
BM_MPI_ALIAS(Win_free_keyval);

int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Win_set_attr";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_not_predefined(win, win_keyval, fn)))
        return rc;
    struct bm_mpi_attr_owner o = win_owner(win);
    return bm_mpi_attr_set(&o, win_keyval, attribute_val, fn);
}
BM_MPI_ALIAS(Win_set_attr);

int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    static const char fn[] = "MPI_Win_get_attr";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)))
        return rc;
    if (!attribute_val || !flag)
        return bm_osc_win_error(win, MPI_ERR_ARG, fn, "NULL output argument");
    void *value;
    switch (win_keyval) {
    case MPI_WIN_BASE:
        value = win->base; /* the address itself, not a pointer to it */
        break;
    case MPI_WIN_SIZE:
        value = &win->size;
        break;
    case MPI_WIN_DISP_UNIT:
        value = &win->disp_unit;
        break;
    case MPI_WIN_CREATE_FLAVOR:
        value = &win->flavor;
        break;
    case MPI_WIN_MODEL:
        value = &win->model;
        break;
    default: {
        struct bm_mpi_attr_owner o = win_owner(win);
        return bm_mpi_attr_get(&o, win_keyval, attribute_val, flag, fn);
    }
    }
    memcpy(attribute_val, &value, sizeof(value));
    *flag = 1;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Win_get_attr);

int PMPI_Win_delete_attr(MPI_Win win, int win_keyval)
{
    static const char fn[] = "MPI_Win_delete_attr";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_not_predefined(win, win_keyval, fn)))
        return rc;
    struct bm_mpi_attr_owner o = win_owner(win);
    return bm_mpi_attr_delete(&o, win_keyval, fn);
}
BM_MPI_ALIAS(Win_delete_attr);
