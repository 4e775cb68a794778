/* Attributes of windows: the predefined ones (MPI_WIN_BASE, MPI_WIN_SIZE,
 * MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL) and user keys
 * made with MPI_Win_create_keyval, whose delete callbacks run when an
 * attribute is replaced or deleted and when the window is freed. Window keys
 * are numbered apart from communicator keys (from 1000), so that a key of
 * the wrong kind is reported as such. Keys are reference counted: a freed
 * key stays valid for the attributes that still use it. Windows are never
 * duplicated, so copy callbacks are kept only because the standard's
 * signature has them. */
#include "mpi/win.h"

#include <stdlib.h>
#include <string.h>

#define WIN_KEYVAL_FIRST 1000

struct win_keyval {
    MPI_Win_copy_attr_function *copy_fn;
    MPI_Win_delete_attr_function *delete_fn;
    void *extra_state;
    int refcount; /* the key handle (until MPI_Win_free_keyval) + attributes using it */
};

struct bm_mpi_win_attr {
    struct bm_mpi_win_attr *next;
    int keyval;
    void *value;
};

static struct win_keyval **keyvals;
static int nkeyvals;

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

static struct win_keyval *keyval_get(int keyval)
{
    int i = keyval - WIN_KEYVAL_FIRST;
    return i >= 0 && i < nkeyvals ? keyvals[i] : NULL;
}

static void keyval_release(int keyval)
{
    struct win_keyval *k = keyval_get(keyval);
    if (k && --k->refcount == 0) {
        free(k);
        keyvals[keyval - WIN_KEYVAL_FIRST] = NULL;
    }
}

static bool keyval_predefined(int keyval)
{
    return keyval >= MPI_WIN_BASE && keyval <= MPI_WIN_MODEL;
}

static int check_user_keyval(MPI_Win win, int keyval, const char *fn)
{
    if (keyval_predefined(keyval))
        return bm_osc_win_error(win, MPI_ERR_KEYVAL, fn,
                                "attribute key %d is predefined and read-only", keyval);
    if (!keyval_get(keyval))
        return bm_osc_win_error(win, MPI_ERR_KEYVAL, fn,
                                "invalid window attribute key %d (not created by "
                                "MPI_Win_create_keyval, or freed)",
                                keyval);
    return MPI_SUCCESS;
}

static struct bm_mpi_win_attr **attr_find(MPI_Win win, int keyval)
{
    struct bm_mpi_win_attr **pa = &win->attrs;
    while (*pa && (*pa)->keyval != keyval)
        pa = &(*pa)->next;
    return pa;
}

static int attr_remove(MPI_Win win, struct bm_mpi_win_attr **pa, const char *fn)
{
    struct bm_mpi_win_attr *a = *pa;
    struct win_keyval *k = keyval_get(a->keyval);
    if (k->delete_fn) {
        int rc = k->delete_fn(win, a->keyval, a->value, k->extra_state);
        if (rc != MPI_SUCCESS)
            return bm_osc_win_error(win, rc > 0 && rc <= MPI_ERR_LASTCODE ? rc : MPI_ERR_OTHER, fn,
                                    "the delete callback of attribute key %d returned %d",
                                    a->keyval, rc);
    }
    *pa = a->next;
    keyval_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

int bm_mpi_win_attr_delete_all(MPI_Win win, const char *fn)
{
    int rc;
    while (win->attrs)
        if ((rc = attr_remove(win, &win->attrs, fn)))
            return rc;
    return MPI_SUCCESS;
}

int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                           MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                           void *extra_state)
{
    static const char fn[] = "MPI_Win_create_keyval";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!win_keyval)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL win_keyval pointer");
    struct win_keyval *k = calloc(1, sizeof(*k));
    struct win_keyval **grown = realloc(keyvals, sizeof(*keyvals) * (size_t)(nkeyvals + 1));
    if (grown)
        keyvals = grown;
    if (!k || !grown) {
        free(k);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    k->copy_fn = win_copy_attr_fn;
    k->delete_fn = win_delete_attr_fn;
    k->extra_state = extra_state;
    k->refcount = 1;
    keyvals[nkeyvals] = k;
    *win_keyval = WIN_KEYVAL_FIRST + nkeyvals++;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Win_create_keyval);

int PMPI_Win_free_keyval(int *win_keyval)
{
    static const char fn[] = "MPI_Win_free_keyval";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (!win_keyval)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL win_keyval pointer");
    if ((rc = check_user_keyval(MPI_WIN_NULL, *win_keyval, fn)))
        return rc;
    keyval_release(*win_keyval);
    *win_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Win_free_keyval);

int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Win_set_attr";
    int rc;
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_user_keyval(win, win_keyval, fn)))
        return rc;
    struct bm_mpi_win_attr **pa = attr_find(win, win_keyval);
    if (*pa && (rc = attr_remove(win, pa, fn)))
        return rc;
    struct bm_mpi_win_attr *a = malloc(sizeof(*a));
    if (!a)
        return bm_osc_win_error(win, MPI_ERR_NO_MEM, fn, "out of memory");
    a->keyval = win_keyval;
    a->value = attribute_val;
    a->next = win->attrs;
    win->attrs = a;
    keyval_get(win_keyval)->refcount++;
    return MPI_SUCCESS;
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
        if ((rc = check_user_keyval(win, win_keyval, fn)))
            return rc;
        struct bm_mpi_win_attr *a = *attr_find(win, win_keyval);
        *flag = a != NULL;
        if (a)
            memcpy(attribute_val, &a->value, sizeof(a->value));
        return MPI_SUCCESS;
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
    if ((rc = bm_osc_check_win(win, fn)) || (rc = check_user_keyval(win, win_keyval, fn)))
        return rc;
    struct bm_mpi_win_attr **pa = attr_find(win, win_keyval);
    if (!*pa)
        return bm_osc_win_error(win, MPI_ERR_KEYVAL, fn,
                                "no attribute with key %d is set on the window", win_keyval);
    return attr_remove(win, pa, fn);
}
BM_MPI_ALIAS(Win_delete_attr);
