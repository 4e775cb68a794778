/* Attribute caching: one engine for the three kinds of object that carry
 * attributes (communicators, datatypes, windows: datatype_attr.c and
 * win_attr.c are its thin front ends) and the communicator calls: the
 * predefined attributes of every communicator (MPI_TAG_UB, MPI_HOST, MPI_IO,
 * MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE) and
 * user keys, whose copy callbacks run when the object is duplicated and
 * whose delete callbacks run when an attribute is replaced or deleted, when
 * its object is freed, and in MPI_Finalize (MPI_COMM_SELF first, which
 * libraries use as a clean-up hook). Keys are reference counted: a freed key
 * stays valid for the attributes that still hold it (their callbacks still
 * run), while the program can no longer use it. An attribute is unlinked
 * before its delete callback runs, so that a callback may set, get or
 * delete attributes of the same object, its own included. */
#include "mpi/mpi_internal.h"
#include "runtime/rte.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* User keys are numbered from here, above the predefined ones of every
 * kind (communicators 1-7, windows 11-15). */
#define BM_MPI_KEYVAL_FIRST 100

/* A key: the kind of object it serves (a key of another kind is refused),
 * the callbacks as given (called back through their own type, by kind). */
struct bm_mpi_keyval {
    enum bm_mpi_attr_kind kind;
    void (*copy_fn)(void);   /* MPI_{Comm,Type,Win}_copy_attr_function, or NULL */
    void (*delete_fn)(void); /* MPI_{Comm,Type,Win}_delete_attr_function, or NULL */
    void *extra_state;
    int refcount;      /* the key handle (until freed) + attributes using it */
    bool handle_freed; /* MPI_*_free_keyval was called: only attributes still hold it */
};

struct bm_mpi_attr {
    struct bm_mpi_attr *next;
    int keyval;
    void *value;
};

static struct bm_mpi_keyval **keyvals;
static int nkeyvals;

static const char *const kind_names[BM_MPI_ATTR_KINDS] = {"communicator", "datatype", "window"};
static const char *const kind_create[BM_MPI_ATTR_KINDS] = {
    "MPI_Comm_create_keyval", "MPI_Type_create_keyval", "MPI_Win_create_keyval"};

int bm_mpi_comm_dup_fn(MPI_Comm oldcomm, int comm_keyval, void *extra_state, void *attribute_val_in,
                       void *attribute_val_out, int *flag)
{
    (void)oldcomm;
    (void)comm_keyval;
    (void)extra_state;
    memcpy(attribute_val_out, &attribute_val_in, sizeof(void *));
    *flag = 1;
    return MPI_SUCCESS;
}

/* The key table grows by realloc and keys are counted: under
 * MPI_THREAD_MULTIPLE both are touched under the object lock (mt.c, a
 * recursive lock). */
static struct bm_mpi_keyval *keyval_get(int keyval)
{
    int i = keyval - BM_MPI_KEYVAL_FIRST;

    bm_mpi_obj_lock();
    struct bm_mpi_keyval *k = i >= 0 && i < nkeyvals ? keyvals[i] : NULL;
    bm_mpi_obj_unlock();
    return k;
}

static void keyval_retain(int keyval)
{
    bm_mpi_obj_lock();
    keyval_get(keyval)->refcount++;
    bm_mpi_obj_unlock();
}

static void keyval_release(int keyval)
{
    bm_mpi_obj_lock();
    struct bm_mpi_keyval *k = keyval_get(keyval);

    if (k && --k->refcount == 0) {
        free(k);
        keyvals[keyval - BM_MPI_KEYVAL_FIRST] = NULL;
    }
    bm_mpi_obj_unlock();
}

static int owner_error(const struct bm_mpi_attr_owner *o, int cls, const char *fn, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static int owner_error(const struct bm_mpi_attr_owner *o, int cls, const char *fn, const char *fmt,
                       ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (o && o->error)
        return o->error(o->obj, cls, fn, msg);
    return bm_mpi_error(o && o->kind == BM_MPI_ATTR_COMM ? o->obj : NULL, cls, fn, "%s", msg);
}

/* A key the program may use on objects of kind (predefined keys are
 * checked by the callers, which answer for them). A freed key that
 * attributes still hold may still set, get and delete attributes (freed_ok):
 * MPI_Comm_free_keyval leaves "any attribute that is using it" to work as
 * before, and programs delete such attributes by the key's old value
 * (MPICH's attr/fkeyval does); MPICH and Open MPI both keep the key usable
 * until its last attribute is gone. Freeing it again meanwhile does
 * nothing, as in MPICH (bm_mpi_keyval_free); once the last attribute is
 * gone the key is, and freeing it is an error. */
static int check_user_keyval(const struct bm_mpi_attr_owner *o, enum bm_mpi_attr_kind kind,
                             int keyval, bool freed_ok, const char *fn)
{
    struct bm_mpi_keyval *k = keyval_get(keyval);
    if (k == NULL || (k->handle_freed && !freed_ok))
        return owner_error(o, MPI_ERR_KEYVAL, fn,
                           "invalid attribute key %d (not created by %s, or freed)", keyval,
                           kind_create[kind]);
    if (k->kind != kind)
        return owner_error(o, MPI_ERR_KEYVAL, fn,
                           "attribute key %d was made for a %s (%s), not for a %s", keyval,
                           kind_names[k->kind], kind_create[k->kind], kind_names[kind]);
    return MPI_SUCCESS;
}

static struct bm_mpi_attr **attr_find(struct bm_mpi_attr **list, int keyval)
{
    struct bm_mpi_attr **pa = list;

    while (*pa && (*pa)->keyval != keyval)
        pa = &(*pa)->next;
    return pa;
}

static int cb_status(const struct bm_mpi_attr_owner *o, int rc, const char *what, int keyval,
                     const char *fn)
{
    if (rc == MPI_SUCCESS)
        return MPI_SUCCESS;
    return owner_error(o, bm_mpi_error_class_of(rc) > 0 ? rc : MPI_ERR_OTHER, fn,
                       "the %s callback of attribute key %d returned %d", what, keyval, rc);
}

/* The delete callback of attribute a, already unlinked from its object. */
static int attr_delete_cb(const struct bm_mpi_attr_owner *o, struct bm_mpi_attr *a, const char *fn)
{
    struct bm_mpi_keyval *k = keyval_get(a->keyval);
    int rc = MPI_SUCCESS;
    if (!k->delete_fn)
        return MPI_SUCCESS;
    switch (o->kind) {
    case BM_MPI_ATTR_COMM:
        rc = ((MPI_Comm_delete_attr_function *)k->delete_fn)(o->obj, a->keyval, a->value,
                                                             k->extra_state);
        break;
    case BM_MPI_ATTR_TYPE:
        rc = ((MPI_Type_delete_attr_function *)k->delete_fn)(o->obj, a->keyval, a->value,
                                                             k->extra_state);
        break;
    case BM_MPI_ATTR_WIN:
        rc = ((MPI_Win_delete_attr_function *)k->delete_fn)(o->obj, a->keyval, a->value,
                                                            k->extra_state);
        break;
    case BM_MPI_ATTR_KINDS:
        break;
    }
    return cb_status(o, rc, "delete", a->keyval, fn);
}

static int attr_copy_cb(const struct bm_mpi_attr_owner *o, int keyval, struct bm_mpi_keyval *k,
                        void *in, void *out, int *flag)
{
    switch (o->kind) {
    case BM_MPI_ATTR_COMM:
        return ((MPI_Comm_copy_attr_function *)k->copy_fn)(o->obj, keyval, k->extra_state, in, out,
                                                           flag);
    case BM_MPI_ATTR_TYPE:
        return ((MPI_Type_copy_attr_function *)k->copy_fn)(o->obj, keyval, k->extra_state, in, out,
                                                           flag);
    case BM_MPI_ATTR_WIN:
        return ((MPI_Win_copy_attr_function *)k->copy_fn)(o->obj, keyval, k->extra_state, in, out,
                                                          flag);
    case BM_MPI_ATTR_KINDS:
        break;
    }
    return MPI_ERR_INTERN;
}

/* Remove the attribute at *pa: unlink it first, so that the delete callback
 * sees a consistent list (it may set, get or delete other attributes of the
 * same object, even free the object's keys); then run the callback. When
 * the callback fails the attribute stays (relinked at the head), as the
 * call that removed it fails. */
static int attr_remove(const struct bm_mpi_attr_owner *o, struct bm_mpi_attr **pa, const char *fn)
{
    struct bm_mpi_attr *a = *pa;
    *pa = a->next;
    int rc = attr_delete_cb(o, a, fn);
    if (rc) {
        a->next = *o->list;
        *o->list = a;
        return rc;
    }
    keyval_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

static int attr_add(const struct bm_mpi_attr_owner *o, int keyval, void *value, const char *fn)
{
    struct bm_mpi_attr *a = malloc(sizeof(*a));

    if (a == NULL)
        return owner_error(o, MPI_ERR_NO_MEM, fn, "out of memory");
    /* Newest first: deleting from the head undoes them in reverse order. */
    a->keyval = keyval;
    a->value = value;
    a->next = *o->list;
    *o->list = a;
    keyval_retain(keyval);
    return MPI_SUCCESS;
}

int bm_mpi_keyval_create(enum bm_mpi_attr_kind kind, void (*copy_fn)(void), void (*delete_fn)(void),
                         void *extra_state, int *keyval, const char *fn)
{
    struct bm_mpi_keyval *k, **grown;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (keyval == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL keyval pointer");
    k = calloc(1, sizeof(*k));
    bm_mpi_obj_lock();
    grown = realloc(keyvals, sizeof(*keyvals) * (size_t)(nkeyvals + 1));
    if (k == NULL || grown == NULL) {
        free(k);
        if (grown)
            keyvals = grown;
        bm_mpi_obj_unlock();
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    keyvals = grown;
    k->kind = kind;
    k->copy_fn = copy_fn;
    k->delete_fn = delete_fn;
    k->extra_state = extra_state;
    k->refcount = 1;
    keyvals[nkeyvals] = k;
    *keyval = BM_MPI_KEYVAL_FIRST + nkeyvals++;
    bm_mpi_obj_unlock();
    return MPI_SUCCESS;
}

int bm_mpi_keyval_free(enum bm_mpi_attr_kind kind, int *keyval, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (keyval == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL keyval pointer");
    if ((rc = check_user_keyval(NULL, kind, *keyval, true, fn)))
        return rc;
    /* A key freed before and still held by attributes: freeing it again
     * does nothing, as MPICH's MPIR_free_keyval (its attr/keyval_double_free
     * frees a key in a delete callback and twice more after; Open MPI
     * refuses the second). The key handle's reference went the first time. */
    struct bm_mpi_keyval *k = keyval_get(*keyval);
    if (!k->handle_freed) {
        k->handle_freed = true;
        keyval_release(*keyval);
    }
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

int bm_mpi_attr_set(const struct bm_mpi_attr_owner *o, int keyval, void *value, const char *fn)
{
    int rc = check_user_keyval(o, o->kind, keyval, true, fn);
    if (rc)
        return rc;
    /* Replacing: the old value's delete callback runs first. */
    struct bm_mpi_attr **pa = attr_find(o->list, keyval);
    if (*pa && (rc = attr_remove(o, pa, fn)))
        return rc;
    return attr_add(o, keyval, value, fn);
}

int bm_mpi_attr_get(const struct bm_mpi_attr_owner *o, int keyval, void *value_out, int *flag,
                    const char *fn)
{
    int rc = check_user_keyval(o, o->kind, keyval, true, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr *a = *attr_find(o->list, keyval);
    *flag = a != NULL;
    if (a)
        memcpy(value_out, &a->value, sizeof(a->value));
    return MPI_SUCCESS;
}

int bm_mpi_attr_delete(const struct bm_mpi_attr_owner *o, int keyval, const char *fn)
{
    int rc = check_user_keyval(o, o->kind, keyval, true, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr **pa = attr_find(o->list, keyval);
    if (*pa == NULL)
        return owner_error(o, MPI_ERR_KEYVAL, fn, "no attribute with key %d is set on the %s",
                           keyval, kind_names[o->kind]);
    return attr_remove(o, pa, fn);
}

int bm_mpi_attr_copy_list(const struct bm_mpi_attr_owner *from, const struct bm_mpi_attr_owner *to,
                          const char *fn)
{
    /* A snapshot of the keys first: a copy callback may change the old
     * object's attributes. The references keep the keys alive meanwhile. */
    int n = 0, rc = MPI_SUCCESS;
    for (struct bm_mpi_attr *a = *from->list; a; a = a->next)
        n++;
    if (n == 0)
        return MPI_SUCCESS;
    int *keys = malloc(sizeof(int) * (size_t)n);
    if (!keys)
        return owner_error(from, MPI_ERR_NO_MEM, fn, "out of memory");
    n = 0;
    for (struct bm_mpi_attr *a = *from->list; a; a = a->next) {
        keys[n++] = a->keyval;
        keyval_retain(a->keyval);
    }
    /* Oldest first, so that the copies keep the original order. */
    for (int i = n - 1; i >= 0 && rc == MPI_SUCCESS; i--) {
        struct bm_mpi_keyval *k = keyval_get(keys[i]);
        struct bm_mpi_attr *a = *attr_find(from->list, keys[i]);
        void *out = NULL;
        int flag = 0;

        if (!a || !k->copy_fn)
            continue;
        rc = cb_status(from, attr_copy_cb(from, keys[i], k, a->value, &out, &flag), "copy", keys[i],
                       fn);
        if (rc == MPI_SUCCESS && flag)
            rc = attr_add(to, keys[i], out, fn);
    }
    for (int i = 0; i < n; i++)
        keyval_release(keys[i]);
    free(keys);
    return rc;
}

int bm_mpi_attr_delete_list(const struct bm_mpi_attr_owner *o, const char *fn)
{
    int rc;

    while (*o->list)
        if ((rc = attr_remove(o, o->list, fn)))
            return rc;
    return MPI_SUCCESS;
}

void bm_mpi_attr_drop_list(struct bm_mpi_attr **list)
{
    while (*list) {
        struct bm_mpi_attr *a = *list;
        *list = a->next;
        keyval_release(a->keyval);
        free(a);
    }
}

/* ---- communicators ------------------------------------------------------------- */

static struct bm_mpi_attr_owner comm_owner(MPI_Comm comm)
{
    return (struct bm_mpi_attr_owner){
        .kind = BM_MPI_ATTR_COMM, .obj = comm, .list = &comm->attrs, .error = NULL};
}

static bool comm_keyval_predefined(int keyval)
{
    return keyval >= MPI_TAG_UB && keyval <= MPI_LASTUSEDCODE;
}

int bm_mpi_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm, const char *fn)
{
    struct bm_mpi_attr_owner from = comm_owner(oldcomm), to = comm_owner(newcomm);
    return bm_mpi_attr_copy_list(&from, &to, fn);
}

int bm_mpi_attr_delete_all(MPI_Comm comm, const char *fn)
{
    struct bm_mpi_attr_owner o = comm_owner(comm);
    return bm_mpi_attr_delete_list(&o, fn);
}

static int get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag, const char *fn)
{
    /* Attribute values are returned as pointers to these. */
    static int tag_ub = BM_MPI_TAG_UB;
    static int host = MPI_PROC_NULL;
    static int io = MPI_ANY_SOURCE; /* every process can do I/O */
    static int wtime_is_global = 0; /* each node's monotonic clock is its own */
    static int universe_size;
    static int appnum = 0;
    static int lastusedcode;
    int *value;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (attribute_val == NULL || flag == NULL)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL output argument");
    switch (keyval) {
    case MPI_TAG_UB:
        value = &tag_ub;
        break;
    case MPI_HOST:
        value = &host;
        break;
    case MPI_IO:
        value = &io;
        break;
    case MPI_WTIME_IS_GLOBAL:
        value = &wtime_is_global;
        break;
    case MPI_UNIVERSE_SIZE:
        universe_size = MPI_COMM_WORLD->size;
        value = &universe_size;
        break;
    case MPI_APPNUM:
        appnum = bm_rte_self()->appnum; /* the launcher's program index (MPMD) */
        value = &appnum;
        break;
    case MPI_LASTUSEDCODE:
        lastusedcode = bm_mpi_error_lastused();
        value = &lastusedcode;
        break;
    default: {
        struct bm_mpi_attr_owner o = comm_owner(comm);
        return bm_mpi_attr_get(&o, keyval, attribute_val, flag, fn);
    }
    }
    memcpy(attribute_val, &value, sizeof(value));
    *flag = 1;
    return MPI_SUCCESS;
}

int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
BM_MPI_ALIAS(Comm_get_attr);

int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
BM_MPI_ALIAS(Attr_get);

void bm_mpi_attr_drop_all(MPI_Comm comm)
{
    bm_mpi_attr_drop_list(&comm->attrs);
}

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                            void *extra_state)
{
    return bm_mpi_keyval_create(BM_MPI_ATTR_COMM, (void (*)(void))comm_copy_attr_fn,
                                (void (*)(void))comm_delete_attr_fn, extra_state, comm_keyval,
                                "MPI_Comm_create_keyval");
}
BM_MPI_ALIAS(Comm_create_keyval);

int PMPI_Comm_free_keyval(int *comm_keyval)
{
    static const char fn[] = "MPI_Comm_free_keyval";
    if (comm_keyval && comm_keyval_predefined(*comm_keyval))
        return bm_mpi_error(NULL, MPI_ERR_KEYVAL, fn,
                            "attribute key %d is predefined and cannot be freed", *comm_keyval);
    return bm_mpi_keyval_free(BM_MPI_ATTR_COMM, comm_keyval, fn);
}
BM_MPI_ALIAS(Comm_free_keyval);

/* Checks shared by set and delete. */
static int comm_attr_check(MPI_Comm comm, int keyval, const char *fn)
{
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)))
        return rc;
    if (comm_keyval_predefined(keyval))
        return bm_mpi_error(comm, MPI_ERR_KEYVAL, fn,
                            "attribute key %d is predefined and read-only", keyval);
    return MPI_SUCCESS;
}

int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    static const char fn[] = "MPI_Comm_set_attr";
    int rc = comm_attr_check(comm, comm_keyval, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr_owner o = comm_owner(comm);
    return bm_mpi_attr_set(&o, comm_keyval, attribute_val, fn);
}
BM_MPI_ALIAS(Comm_set_attr);

int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    static const char fn[] = "MPI_Comm_delete_attr";
    int rc = comm_attr_check(comm, comm_keyval, fn);
    if (rc)
        return rc;
    struct bm_mpi_attr_owner o = comm_owner(comm);
    return bm_mpi_attr_delete(&o, comm_keyval, fn);
}
BM_MPI_ALIAS(Comm_delete_attr);

/* The MPI-1 names, still common in older programs. */
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                       void *extra_state)
{
    return PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
}
BM_MPI_ALIAS(Keyval_create);

int PMPI_Keyval_free(int *keyval)
{
    return PMPI_Comm_free_keyval(keyval);
}
BM_MPI_ALIAS(Keyval_free);

int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return PMPI_Comm_set_attr(comm, keyval, attribute_val);
}
BM_MPI_ALIAS(Attr_put);

int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return PMPI_Comm_delete_attr(comm, keyval);
}
BM_MPI_ALIAS(Attr_delete);
